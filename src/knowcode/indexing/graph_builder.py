"""Resolve references to entities: same class, same file, imported names, then a global name index.

A reference whose target is missing or ambiguous at every step stays unresolved (``target_id`` None):
the graph never guesses. Resolution only ever looks at entities named by :func:`lookup_names` and at
the reference's own file, which is what lets the indexer re-resolve only the references a change can
affect.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath

from knowcode.indexing.entity_ids import module_name
from knowcode.indexing.languages import PACKAGE_FILES, spec_for
from knowcode.indexing.languages.base import LanguageSpec
from knowcode.models import Entity, EntityKind, RelationKind, Relationship
from knowcode.storage.store import RelationshipRow

SOURCE_FOLDER = "src"  # where a crate's code lives (Cargo's layout): see LanguageSpec.root_segment


@dataclass
class SymbolTable:
    """What resolution may look at: candidates by name, sources by id, import bindings by file."""

    by_name: dict[str, list[Entity]] = field(default_factory=dict)
    callables_by_name: dict[str, list[Entity]] = field(default_factory=dict)  # call targets
    types_by_name: dict[str, list[Entity]] = field(default_factory=dict)  # base-class targets
    # what a call's receiver may name (`Foo.create()`): types, and modules declared in a file
    # (Elixir's defmodule, C++ and C# namespaces), not files, whose names `os.path` would match
    owners_by_name: dict[str, list[Entity]] = field(default_factory=dict)
    # package files' modules (LanguageSpec.package_file) by the name of the folder they stand for
    packages_by_folder: dict[str, list[Entity]] = field(default_factory=dict)
    by_id: dict[str, Entity] = field(default_factory=dict)
    bindings: dict[str, dict[str, str]] = field(default_factory=dict)  # path -> alias -> target

    def add_entities(self, entities: Iterable[Entity]) -> None:
        """Index entities by name (candidates) and by id (sources)."""
        for entity in entities:
            if entity.id in self.by_id:
                continue
            self.by_id[entity.id] = entity
            self.by_name.setdefault(entity.name, []).append(entity)
            if entity.kind.is_callable:
                self.callables_by_name.setdefault(entity.name, []).append(entity)
            if entity.kind.is_class_like:
                self.types_by_name.setdefault(entity.name, []).append(entity)
            if entity.kind.is_class_like or (entity.kind is EntityKind.MODULE and entity.parent_id):
                self.owners_by_name.setdefault(entity.name, []).append(entity)
            if entity.kind is EntityKind.MODULE and not entity.parent_id and entity.name in PACKAGE_FILES:
                folder = _through_folder(entity.language, entity.path, entity.qualified_name)
                if folder is not None:
                    self.packages_by_folder.setdefault(folder.rpartition(".")[2], []).append(entity)

    def add_bindings(self, references: Iterable[Relationship]) -> None:
        """Record the local names that import references bind in their files."""
        for ref in references:
            if ref.kind is RelationKind.IMPORTS and ref.alias:
                self.bindings.setdefault(ref.path, {})[ref.alias] = ref.target_name

    def add_binding_rows(self, imports: Iterable[RelationshipRow]) -> None:
        """Record the local names that import references, given as relationship rows, bind."""
        for row in imports:
            if row[6]:  # the alias
                self.bindings.setdefault(row[4], {})[row[6]] = row[2]


def lookup_names(ref: Relationship) -> set[str]:
    """The entity names whose appearance or disappearance can change how `ref` resolves.

    References resolve among entities named like the last dotted part; an import may also resolve
    to the module named by the part before it, or to a package file (`index`, `init`, `mod`) standing
    for the folder it names, and a call through a receiver to a method of the class that part names.
    """
    names = target_lookup_names(ref.target_name)
    return names | PACKAGE_FILES if ref.kind is RelationKind.IMPORTS else names


def target_lookup_names(target_name: str) -> set[str]:
    """:func:`lookup_names` of a reference to `target_name`, but for the package files an import may
    also resolve to (PACKAGE_FILES)."""
    head, _, last = target_name.rpartition(".")
    if head:  # an import's module, or the class a call's receiver may name
        return {last, head.rpartition(".")[2]}
    return {last}


def _absolute(target: str, importer_path: str, spec: LanguageSpec | None) -> str:
    """Turn a relative dotted target (``..x.y``) into one rooted at the importer's folder, and one
    from the package root (LanguageSpec.root_segment: ``crate.x.y``) into one rooted at its crate."""
    first, _, rest = target.partition(".")
    if spec is not None and spec.parent_segment and first in (spec.self_segment, spec.parent_segment):
        target = _as_dots(target, importer_path, spec)
    if spec is not None and spec.root_segment and first == spec.root_segment:
        folders = PurePosixPath(importer_path).parent.parts
        below = folders[::-1].index(SOURCE_FOLDER) if SOURCE_FOLDER in folders else len(folders)
        return ".".join(part for part in (*folders[:len(folders) - below], rest) if part)
    if not target.startswith("."):
        return target
    rest = target.lstrip(".")
    ups = len(target) - len(rest) - 1
    folder = list(PurePosixPath(importer_path).parent.parts)
    base = folder[: len(folder) - ups] if ups else folder
    return ".".join([*base, rest] if rest else base)


def _as_dots(target: str, importer_path: str, spec: LanguageSpec) -> str:
    """A target starting with module-relative segments (LanguageSpec.parent_segment) written with
    leading dots: `super.float.X` is `.float.X` in `lexical/algorithm.rs` (a module inside its folder)
    and `..float.X` in `io/mod.rs` (the module of its folder); `self.x` is `.algorithm.x` and `.x`."""
    parts = target.split(".")
    if parts[0] == spec.self_segment:
        parts = parts[1:]
    ups = 0
    while parts and parts[0] == spec.parent_segment:
        ups, parts = ups + 1, parts[1:]
    stem = PurePosixPath(importer_path).stem
    if stem in spec.folder_module_stems:
        return "." * (ups + 1) + ".".join(parts)
    if not ups:
        parts.insert(0, stem)
    return "." * max(1, ups) + ".".join(parts)


def _dotted_match(qualified_name: str, target: str) -> bool:
    """Either name ends the other at a dot boundary (packages may be rooted differently)."""
    return (qualified_name == target or qualified_name.endswith("." + target)
            or target.endswith("." + qualified_name))


@lru_cache(maxsize=1 << 16)
def _through_folder(language: str, path: str, qualified_name: str) -> str | None:
    """The qualified name an entity of a package file (LanguageSpec.package_file) has through its
    folder: `src.utils.index.parse` is `src.utils.parse`; None for any other file."""
    spec = spec_for(language)
    if spec is None or not spec.package_file:
        return None
    dotted = module_name(path)[1]
    suffix = "." + spec.package_file
    within = qualified_name == dotted or qualified_name.startswith(dotted + ".")
    if not dotted.endswith(suffix) or not within:
        return None  # not a package file, or one named with its extension (`index.ts` beside `index.js`)
    return dotted[:-len(suffix)] + qualified_name[len(dotted):]


def _matches(entity: Entity, target: str) -> bool:
    """Whether the entity is the dotted target (see _dotted_match), by its qualified name or through
    its folder; through its folder only when that name ends with the whole target, of two parts or
    more (`lua.pkg.util` is `pkg.util`): a package file's short name would otherwise be every
    standard module of its name the repository imports (tokio's `task/mod.rs` every `std.task`, its
    `loom/std/mod.rs` every `std`, and the modules it declares inside every `std.sync`)."""
    if _dotted_match(entity.qualified_name, target):
        return True
    if entity.kind is EntityKind.MODULE and entity.parent_id:
        return False
    folder = _through_folder(entity.language, entity.path, entity.qualified_name)
    return folder is not None and (folder == target or ("." in target and folder.endswith("." + target)))


def _unique(candidates: list[Entity]) -> str | None:
    return candidates[0].id if len(candidates) == 1 else None


def _enclosing_type(entity: Entity | None, by_id: Mapping[str, Entity]) -> Entity | None:
    while entity is not None and not entity.kind.is_class_like:
        entity = by_id.get(entity.parent_id) if entity.parent_id else None
    return entity


def _resolve_import(target_name: str, path: str, table: SymbolTable,
                    spec: LanguageSpec | None) -> str | None:
    target = _absolute(target_name, path, spec)
    head, _, last = target.rpartition(".")
    named = [e for e in table.by_name.get(last, []) if _matches(e, target)]
    if not named:  # a folder (`import x from './utils'`): the package file standing for it
        named = _package_modules(target, table)
    found = _unique(named)
    if found is None and not named and head:
        # `from pkg.mod import CONSTANT`: the constant is no entity, so the module is the target.
        module = head.rpartition(".")[2]
        found = _unique([e for e in table.by_name.get(module, [])
                         if e.kind is EntityKind.MODULE and _matches(e, head)]
                        or _package_modules(head, table))
    return found


def _package_modules(folder: str, table: SymbolTable) -> list[Entity]:
    """The modules of the package files (LanguageSpec.package_file) standing for the dotted folder."""
    return [e for e in table.packages_by_folder.get(folder.rpartition(".")[2], []) if _matches(e, folder)]


def resolve_reference(ref: Relationship, table: SymbolTable) -> str | None:
    """Return the id of the one entity a reference means, or None if missing or ambiguous."""
    if ref.kind is RelationKind.CONTAINS:
        return ref.target_id
    return resolve_target(ref.kind, ref.target_name, ref.source_id, ref.path, table)


def resolve_target(kind: RelationKind, target_name: str, source_id: str, path: str,
                   table: SymbolTable) -> str | None:
    """:func:`resolve_reference` of a reference given by its fields (not `contains`), as an indexing run
    reads them back from the store: no :class:`Relationship` is built for each of its references.

    :param kind: the reference's kind: imports, calls or inherits.
    :param target_name: the name as written.
    :param source_id: the entity it is written in.
    :param path: the file it is written in.
    :param table: what resolution may look at.
    :return: the id of the one entity meant, or None if missing or ambiguous.
    """
    source = table.by_id.get(source_id)
    spec = spec_for(source.language) if source else None
    if kind is RelationKind.IMPORTS:
        return _resolve_import(target_name, path, table, spec)
    receiver, _, name = target_name.rpartition(".")
    by_name = table.callables_by_name if kind is RelationKind.CALLS else table.types_by_name
    candidates = by_name.get(name, [])
    if not candidates:
        return None
    on_self = not receiver or (spec is not None and receiver in spec.self_names)
    if on_self:
        owner = _enclosing_type(source, table.by_id)
        if owner is not None and (found := _unique([c for c in candidates if c.parent_id == owner.id])):
            return found
        in_file = [c for c in candidates if c.path == path]
        if in_file:
            return _unique(in_file)
    bound = table.bindings.get(path, {})
    first, _, rest = (receiver or name).partition(".")
    if receiver and spec is not None and spec.parent_segment and first == spec.parent_segment:
        # `super::helper()`: the function of that name in the parent module
        return _unique([c for c in candidates if _matches(c, _absolute(target_name, path, spec))])
    if first in bound:
        # Reached through an import: the imported module decides, even when it is outside the repo.
        full = _absolute(".".join(p for p in (bound[first], rest, name if receiver else "") if p), path, spec)
        return _unique([c for c in candidates if _matches(c, full)])
    if receiver and kind is RelationKind.CALLS and not on_self:
        # `Foo.create()` resolves among Foo's methods (or a declared module's functions: Elixir's
        # `Ecto.Changeset.cast`); `obj.get()` on a value of unknown type does not resolve at all (the
        # unique `get` in the repository would be a guess).
        owners = {c.id for c in table.owners_by_name.get(receiver.rpartition(".")[2], [])}
        return _unique([c for c in candidates if c.parent_id in owners]) if owners else None
    return _unique(candidates)


def resolve(references: Iterable[Relationship], table: SymbolTable) -> list[Relationship]:
    """Resolve each reference against the table; resolved or not, every reference is kept."""
    return [Relationship(ref.source_id, ref.kind, ref.target_name, resolve_reference(ref, table), ref.path,
                         ref.line, ref.alias) for ref in references]
