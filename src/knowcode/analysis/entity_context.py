"""One entity with its code and neighbours: what `get_entity_context` and `entities/{id}` answer."""

from __future__ import annotations

from pathlib import Path

from knowcode.analysis.call_graph import resolve_target
from knowcode.models import Entity, EntityContext, GraphNode, RelationKind
from knowcode.safety import confine_path
from knowcode.storage.store import Store

MAX_RELATED = 25  # entities per neighbour list (callers, callees, members, ...): keeps a reply small
MAX_SOURCE_LINES = 200  # of the entity's own code; a whole module is summarised by its members instead


def _node(entity: Entity, via: str) -> GraphNode:
    return GraphNode(entity.id, entity.qualified_name, entity.kind.value, entity.path, entity.start_line,
                     entity.end_line, 0 if not via else 1, via)


def _source(root: Path, entity: Entity) -> tuple[str, bool]:
    """The entity's lines from disk (the index is brought up to date before this runs)."""
    try:
        path = confine_path(root, entity.path)
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, ValueError) as err:
        return f"[source unavailable: {err}]", False
    span = lines[entity.start_line - 1:entity.end_line]
    return "\n".join(span[:MAX_SOURCE_LINES]), len(span) > MAX_SOURCE_LINES


def entity_context(store: Store, root: Path, target: str) -> EntityContext:
    """An entity's signature, docstring, code and 1-hop neighbours.

    :param store: the open index.
    :param root: the repository root the index was built from.
    :param target: an entity id, a qualified name, a unique name, or an indexed ``path[:line]``.
    :return: the entity and its neighbours, each list capped at MAX_RELATED.
    :raises ValueError: a target matching no entity or several.
    """
    entity = resolve_target(store, target)
    incoming = store.relationships_into([entity.id], [RelationKind.CALLS, RelationKind.INHERITS,
                                                      RelationKind.IMPORTS])
    outgoing = store.relationships_from([entity.id], [RelationKind.CALLS, RelationKind.INHERITS])
    members = store.children([entity.id])
    wanted = {r.source_id for r in incoming} | {r.target_id or "" for r in outgoing}
    if entity.parent_id:
        wanted.add(entity.parent_id)
    known = {e.id: e for e in store.entities_by_id(wanted)}
    truncated = False

    def listed(ids: list[str], via: str) -> tuple[GraphNode, ...]:
        nonlocal truncated
        unique = [known[i] for i in dict.fromkeys(ids) if i in known]
        truncated = truncated or len(unique) > MAX_RELATED
        return tuple(_node(e, via) for e in unique[:MAX_RELATED])

    def sources(kind: RelationKind) -> list[str]:
        return [r.source_id for r in incoming if r.kind is kind]

    def targets(kind: RelationKind) -> list[str]:
        return [r.target_id or "" for r in outgoing if r.kind is kind]

    known.update((m.id, m) for m in members)
    lists = {"members": listed([m.id for m in members], "member"),
             "callers": listed(sources(RelationKind.CALLS), "caller"),
             "callees": listed(targets(RelationKind.CALLS), "callee"),
             "bases": listed(targets(RelationKind.INHERITS), "base"),
             "subclasses": listed(sources(RelationKind.INHERITS), "subclass"),
             "importers": listed(sources(RelationKind.IMPORTS), "importer")}
    source, source_truncated = _source(root, entity)
    parent = known.get(entity.parent_id or "")
    return EntityContext(
        entity=_node(entity, ""), signature=entity.signature, docstring=entity.docstring,
        language=entity.language, parent=parent.qualified_name if parent else None, source=source,
        source_truncated=source_truncated, truncated=truncated, **lists)
