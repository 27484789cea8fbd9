"""Reference resolution: same class, same file, imports, global index; ambiguity stays unresolved."""

from __future__ import annotations

import pytest

from knowcode.indexing.graph_builder import SymbolTable, lookup_names, resolve_reference
from knowcode.models import Entity, EntityKind, RelationKind, Relationship


def _entity(qualified: str, kind: EntityKind, path: str, parent: str | None = None,
            language: str = "python") -> Entity:
    name = qualified.rsplit(".", 1)[-1]
    return Entity(qualified, path, kind, name, qualified, parent, 1, 2, "", "", language)


ENTITIES = [
    _entity("a", EntityKind.MODULE, "a.py"),
    _entity("a.Shape", EntityKind.CLASS, "a.py", "a"),
    _entity("a.Shape.area", EntityKind.METHOD, "a.py", "a.Shape"),
    _entity("a.Shape.draw", EntityKind.METHOD, "a.py", "a.Shape"),
    _entity("a.helper", EntityKind.FUNCTION, "a.py", "a"),
    _entity("b", EntityKind.MODULE, "b.py"),
    _entity("b.area", EntityKind.FUNCTION, "b.py", "b"),
    _entity("b.helper", EntityKind.FUNCTION, "b.py", "b"),
    _entity("b.only_here", EntityKind.FUNCTION, "b.py", "b"),
    _entity("pkg.util", EntityKind.MODULE, "pkg/util.py"),
    _entity("pkg.util.tool", EntityKind.FUNCTION, "pkg/util.py", "pkg.util"),
    _entity("pkg.other", EntityKind.MODULE, "pkg/other.py"),
    _entity("pkg.other.tool", EntityKind.FUNCTION, "pkg/other.py", "pkg.other"),
    # a module declared in a file (Elixir's defmodule), and a file named like it
    _entity("lib.repo", EntityKind.MODULE, "lib/repo.ex", language="elixir"),
    _entity("lib.repo.Repo", EntityKind.MODULE, "lib/repo.ex", "lib.repo", "elixir"),
    _entity("lib.repo.Repo.insert", EntityKind.FUNCTION, "lib/repo.ex", "lib.repo.Repo", "elixir"),
    _entity("c.insert", EntityKind.FUNCTION, "c.py", "c"),
    _entity("path", EntityKind.MODULE, "path.py"),
    _entity("path.join", EntityKind.FUNCTION, "path.py", "path"),
    _entity("d.join", EntityKind.FUNCTION, "d.py", "d"),
    # package files standing for their folders: TypeScript's index, Lua's init
    _entity("src.utils.index", EntityKind.MODULE, "src/utils/index.ts", language="typescript"),
    _entity("src.utils.index.parse", EntityKind.FUNCTION, "src/utils/index.ts", "src.utils.index",
            "typescript"),
    _entity("lua.lpkg.tools.init", EntityKind.MODULE, "lua/lpkg/tools/init.lua", language="lua"),
    _entity("src.index", EntityKind.MODULE, "src/index.py"),  # Python has no package file but __init__
    # a Rust crate: `crate::` is its src/ folder
    _entity("src.de", EntityKind.MODULE, "src/de.rs", language="rust"),
    _entity("src.error", EntityKind.MODULE, "src/error.rs", language="rust"),
    _entity("src.error.Error", EntityKind.STRUCT, "src/error.rs", "src.error", "rust"),
    _entity("src.error.Error.new", EntityKind.METHOD, "src/error.rs", "src.error.Error", "rust"),
    # a folder module (`lexical/mod.rs`) and two modules inside it
    _entity("src.lexical.mod", EntityKind.MODULE, "src/lexical/mod.rs", language="rust"),
    _entity("src.lexical.mod.parse", EntityKind.FUNCTION, "src/lexical/mod.rs", "src.lexical.mod", "rust"),
    _entity("src.lexical.float", EntityKind.MODULE, "src/lexical/float.rs", language="rust"),
    _entity("src.lexical.float.Extended", EntityKind.STRUCT, "src/lexical/float.rs", "src.lexical.float",
            "rust"),
    _entity("src.lexical.float.round", EntityKind.FUNCTION, "src/lexical/float.rs", "src.lexical.float",
            "rust"),
    _entity("src.lexical.algorithm", EntityKind.MODULE, "src/lexical/algorithm.rs", language="rust"),
    _entity("src.lexical.algorithm.round", EntityKind.FUNCTION, "src/lexical/algorithm.rs",
            "src.lexical.algorithm", "rust"),
]
IMPORTS = [
    Relationship("a", RelationKind.IMPORTS, "pkg.util.tool", None, "a.py", 1, "tool"),
    Relationship("b", RelationKind.IMPORTS, "pkg.other", None, "b.py", 1, "other"),
    Relationship("pkg.other", RelationKind.IMPORTS, ".util", None, "pkg/other.py", 1, "util"),
]


@pytest.fixture
def table() -> SymbolTable:
    symbols = SymbolTable()
    symbols.add_entities(ENTITIES)
    symbols.add_bindings(IMPORTS)
    return symbols


@pytest.mark.parametrize(("source", "path", "kind", "target", "expected"), [
    ("src.de", "src/de.rs", RelationKind.IMPORTS, "crate.error.Error", "src.error.Error"),  # `use crate::...`
    ("src.de", "src/de.rs", RelationKind.IMPORTS, "crate.error", "src.error"),
    ("src.de", "src/de.rs", RelationKind.CALLS, "crate.error.Error.new", "src.error.Error.new"),
    ("b.helper", "b.py", RelationKind.IMPORTS, "crate.error.Error", None),  # `crate` roots nothing in Python
])
def test_a_rust_path_from_crate_is_rooted_at_the_crates_src_folder(
        source: str, path: str, kind: RelationKind, target: str, expected: str | None) -> None:
    symbols = SymbolTable()
    symbols.add_entities(ENTITIES)
    assert resolve_reference(Relationship(source, kind, target, None, path, 1), symbols) == expected


@pytest.mark.parametrize(("source", "path", "kind", "target", "expected"), [
    # `use super::float::Extended` in a module inside the folder: a sibling file
    ("src.lexical.algorithm", "src/lexical/algorithm.rs", RelationKind.IMPORTS, "super.float.Extended",
     "src.lexical.float.Extended"),
    ("src.lexical.algorithm", "src/lexical/algorithm.rs", RelationKind.IMPORTS, "super.parse",
     "src.lexical.mod.parse"),  # the folder's own module
    # `self::` in a module inside the folder is that file (a declared module's `super::` is written so)
    ("src.lexical.algorithm", "src/lexical/algorithm.rs", RelationKind.IMPORTS, "self.round",
     "src.lexical.algorithm.round"),
    # `use self::float::Extended` in the folder's module: a file inside it; `super::` is its parent
    ("src.lexical.mod", "src/lexical/mod.rs", RelationKind.IMPORTS, "self.float.Extended",
     "src.lexical.float.Extended"),
    ("src.lexical.mod", "src/lexical/mod.rs", RelationKind.IMPORTS, "super.error.Error", "src.error.Error"),
    ("src.lexical.float", "src/lexical/float.rs", RelationKind.IMPORTS, "super.super.error.Error",
     "src.error.Error"),
    # `super::round()` is the parent module's, not this file's nor a sibling's of the same name
    ("src.lexical.algorithm.round", "src/lexical/algorithm.rs", RelationKind.CALLS, "super.float.round",
     "src.lexical.float.round"),
    ("src.lexical.algorithm.round", "src/lexical/algorithm.rs", RelationKind.CALLS, "super.round", None),
    ("b.helper", "b.py", RelationKind.IMPORTS, "super.error.Error", None),  # nothing relative in Python
])
def test_a_rust_path_through_self_or_super_is_relative_to_the_importers_module(
        source: str, path: str, kind: RelationKind, target: str, expected: str | None) -> None:
    symbols = SymbolTable()
    symbols.add_entities(ENTITIES)
    assert resolve_reference(Relationship(source, kind, target, None, path, 1), symbols) == expected


@pytest.mark.parametrize(("path", "target", "expected"), [
    ("src/app.ts", ".utils", "src.utils.index"),  # `import * as u from './utils'`: its index file
    ("src/app.ts", ".utils.parse", "src.utils.index.parse"),  # a name from the folder
    ("src/app.ts", ".utils.index", "src.utils.index"),  # the index file by its own name
    ("src/app.ts", ".utils.index.CONSTANT", "src.utils.index"),
    ("lua/lpkg/app.lua", "lpkg.tools", "lua.lpkg.tools.init"),  # `require("lpkg.tools")`
    ("src/lib.ts", "utils", None),  # one part: a package file is no guess for every `utils`
    ("src/app.py", "src", None),  # a Python file named index stands for no folder
])
def test_imports_of_a_folder_reach_its_package_file(path: str, target: str, expected: str | None) -> None:
    symbols = SymbolTable()
    symbols.add_entities(ENTITIES)
    ref = Relationship("s", RelationKind.IMPORTS, target, None, path, 1)
    assert resolve_reference(ref, symbols) == expected


@pytest.mark.parametrize(("source", "path", "target", "expected"), [
    ("a.Shape.draw", "a.py", "self.area", "a.Shape.area"),  # same class beats the global index
    ("a.Shape.draw", "a.py", "area", "a.Shape.area"),
    ("a.helper", "a.py", "helper", "a.helper"),  # same file
    ("b.helper", "b.py", "helper", "b.helper"),
    ("a.helper", "a.py", "only_here", "b.only_here"),  # unique in the global index
    ("a.helper", "a.py", "tool", "pkg.util.tool"),  # imported name beats ambiguity
    ("b.helper", "b.py", "other.tool", "pkg.other.tool"),  # through an imported module alias
    ("b.helper", "b.py", "tool", None),  # two `tool`s, no import: ambiguous, not guessed
    ("b.helper", "b.py", "missing", None),
    ("b.helper", "b.py", "other.missing", None),
    ("a.helper", "a.py", "tool.x.area", None),  # an import that leads outside the repo decides
    ("b.helper", "b.py", "Shape.area", "a.Shape.area"),  # a receiver naming a class: its method
    ("b.helper", "b.py", "shape.area", None),  # a value of unknown type: the unique `area`'s a guess
    ("b.helper", "b.py", "obj.only_here", None),
    ("b.helper", "b.py", "MyApp.Repo.insert", "lib.repo.Repo.insert"),  # a declared module: its function
    ("b.helper", "b.py", "os.path.join", None),  # a file named like the receiver is no owner
])
def test_calls(table: SymbolTable, source: str, path: str, target: str, expected: str | None) -> None:
    ref = Relationship(source, RelationKind.CALLS, target, None, path, 3)
    assert resolve_reference(ref, table) == expected


def test_inherits_only_resolves_to_types(table: SymbolTable) -> None:
    ref = Relationship("b.helper", RelationKind.INHERITS, "Shape", None, "b.py", 1)
    assert resolve_reference(ref, table) == "a.Shape"
    ref = Relationship("b.helper", RelationKind.INHERITS, "helper", None, "b.py", 1)
    assert resolve_reference(ref, table) is None


@pytest.mark.parametrize(("ref", "expected"), [
    (IMPORTS[0], "pkg.util.tool"),  # an entity inside a module
    (IMPORTS[1], "pkg.other"),  # a module
    (IMPORTS[2], "pkg.util"),  # relative to the importer's folder
    (Relationship("a", RelationKind.IMPORTS, "pkg.util.CONSTANT", None, "a.py", 1, "C"), "pkg.util"),
    (Relationship("a", RelationKind.IMPORTS, "numpy", None, "a.py", 1, "numpy"), None),
])
def test_imports(table: SymbolTable, ref: Relationship, expected: str | None) -> None:
    assert resolve_reference(ref, table) == expected


def test_lookup_names_cover_what_resolution_reads() -> None:
    assert lookup_names(Relationship("s", RelationKind.CALLS, "self.x.run", None, "a.py", 1)) == {"run", "x"}
    assert lookup_names(Relationship("s", RelationKind.CALLS, "run", None, "a.py", 1)) == {"run"}
    # an import may also resolve to a package file standing for the folder it names
    assert lookup_names(IMPORTS[0]) == {"tool", "util", "index", "init", "mod"}
    assert lookup_names(IMPORTS[1]) == {"other", "pkg", "index", "init", "mod"}
