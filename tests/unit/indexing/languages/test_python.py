"""Python: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.python import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

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


def _parse() -> ParsedSource:
    return parse_source("pkg/mod.py", "python", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "pkg.mod", 1, 21),
        ("class", "pkg.mod.Base", 5, 7),
        ("class", "pkg.mod.Child", 9, 18),
        ("method", "pkg.mod.Child.method", 11, 13),
        ("method", "pkg.mod.Child.helper", 15, 18),
        ("function", "pkg.mod.Child.helper.inner", 16, 17),
        ("function", "pkg.mod.top", 20, 21),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    method = by_name["pkg.mod.Child.method"]
    assert method.signature == "def method(self, a: int) -> int"
    assert method.docstring == "Do it."
    assert method.parent_id == by_name["pkg.mod.Child"].id
    assert by_name["pkg.mod.Base"].docstring == "Base docs."


def test_references() -> None:
    assert reference_rows(_parse()) == {
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


def test_a_module_docstring_is_the_modules_after_its_comments() -> None:
    source = b'''#!/usr/bin/env python
# Copyright notice.
"""Cut files into chunks."""

def f():
    # why, not what
    """Do f."""
'''
    by_name = by_qualified_name(parse_source("pkg/chunker.py", "python", source, SPEC))
    assert by_name["pkg.chunker"].docstring == "Cut files into chunks."
    assert by_name["pkg.chunker.f"].docstring == "Do f."
    late = parse_source("pkg/late.py", "python", b'import os\n"""Not a docstring."""\n', SPEC)
    assert by_qualified_name(late)["pkg.late"].docstring == ""
