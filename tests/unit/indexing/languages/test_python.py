"""Python: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.python import SPEC
from knowcode.indexing.parser import parse_source
from knowcode.models import RelationKind

SOURCE = b'''import os
from . import utils
from .models import Entity as E

class Base:
    """Base docs."""
    pass

@decorator
class Child(Base, mod.Mixin):
    def method(self, a: int) -> int:
        """Do it."""
        return self.helper(a) + os.path.join("a")

    def helper(self, a):
        def inner():
            return 1
        return inner()

def top():
    Child().method(1)
'''


def _parse():  # type: ignore[no-untyped-def]
    return parse_source("pkg/mod.py", "python", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    parsed = _parse()
    got = [(e.kind.value, e.qualified_name, e.start_line, e.end_line) for e in parsed.entities]
    assert got == [
        ("module", "pkg.mod", 1, 21),
        ("class", "pkg.mod.Base", 5, 7),
        ("class", "pkg.mod.Child", 9, 18),
        ("method", "pkg.mod.Child.method", 11, 13),
        ("method", "pkg.mod.Child.helper", 15, 18),
        ("function", "pkg.mod.Child.helper.inner", 16, 17),
        ("function", "pkg.mod.top", 20, 21),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = {e.qualified_name: e for e in _parse().entities}
    method = by_name["pkg.mod.Child.method"]
    assert method.signature == "def method(self, a: int) -> int"
    assert method.docstring == "Do it."
    assert method.parent_id == by_name["pkg.mod.Child"].id
    assert by_name["pkg.mod.Base"].docstring == "Base docs."


def test_references() -> None:
    parsed = _parse()
    by_id = {e.id: e.qualified_name for e in parsed.entities}
    refs = {(r.kind.value, by_id[r.source_id], r.target_name, r.line, r.alias)
            for r in parsed.references if r.kind is not RelationKind.CONTAINS}
    assert refs == {
        ("imports", "pkg.mod", "os", 1, "os"),
        ("imports", "pkg.mod", ".utils", 2, "utils"),
        ("imports", "pkg.mod", ".models.Entity", 3, "E"),
        ("inherits", "pkg.mod.Child", "Base", 10, ""),
        ("inherits", "pkg.mod.Child", "mod.Mixin", 10, ""),
        ("calls", "pkg.mod.Child.method", "self.helper", 13, ""),
        ("calls", "pkg.mod.Child.method", "os.path.join", 13, ""),
        ("calls", "pkg.mod.Child.helper", "inner", 18, ""),
        ("calls", "pkg.mod.top", "Child", 21, ""),
        ("calls", "pkg.mod.top", "method", 21, ""),
    }
