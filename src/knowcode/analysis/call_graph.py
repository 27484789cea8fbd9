"""Call graph queries: who calls what (:func:`trace_calls`) and what depends on what (:func:`impact`).

Both walk resolved relationships breadth first and visit each entity once, so cycles end; they stop at a
depth of at most :data:`MAX_DEPTH`, keep at most :data:`MAX_NODES` entities and :data:`MAX_EDGES` edges,
and set ``truncated`` when a bound cut the walk short. A target is an entity id or a (qualified) name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from knowcode.models import (
    CallTrace,
    Entity,
    GraphEdge,
    GraphNode,
    ImpactReport,
    RelationKind,
    Relationship,
    TraceDirection,
)
from knowcode.paths import looks_like_path, split_path_line
from knowcode.storage.store import Store

MAX_DEPTH = 5  # deepest walk a caller may ask for (issue 6: "depth <= 5")
MAX_NODES = 200  # entities in one result, root included: keeps a reply readable and its cost bounded
MAX_EDGES = 1000  # edges in one result (a node can have many: every call site counts once per pair)
MAX_CANDIDATES = 10  # entities an ambiguous name lists in its error
# The relationships through which a change to an entity reaches another one.
IMPACT_KINDS = (RelationKind.CALLS, RelationKind.INHERITS, RelationKind.IMPORTS)

# One walk step: the frontier's relationships, each with the neighbour it leads to and how.
Step = Callable[[set[str]], list[tuple[Relationship, str, str]]]


class UnknownEntityError(LookupError, ValueError):
    """No entity matches a target. A LookupError (the HTTP API answers 404) and a ValueError (bad input)."""


def validate_depth(depth: int) -> int:
    """Check a walk depth (1..MAX_DEPTH).

    :param depth: the requested depth.
    :return: the depth.
    :raises ValueError: it is not an integer from 1 to MAX_DEPTH.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be an integer from 1 to {MAX_DEPTH}, got {depth!r}")
    return depth


def parse_direction(direction: TraceDirection | str) -> TraceDirection:
    """A trace direction from its name.

    :param direction: callers, callees or both.
    :return: the direction.
    :raises ValueError: an unknown name (the message lists the valid ones).
    """
    try:
        return TraceDirection(direction)
    except ValueError:
        choices = ", ".join(d.value for d in TraceDirection)
        raise ValueError(f"direction must be one of {choices}, got {direction!r}") from None


def _describe(entity: Entity) -> str:
    return f"{entity.id}  {entity.kind.value} {entity.qualified_name}  {entity.path}:{entity.start_line}"


def resolve_target(store: Store, target: str) -> Entity:
    """The one entity an id, a qualified name or a name designates.

    :param store: the open index.
    :param target: an entity id, a qualified name (``pkg.mod.Class.method``), a bare name, or an
        indexed file as ``path`` or ``path:line`` (the innermost entity there).
    :return: the entity.
    :raises UnknownEntityError: no entity matches (a ValueError too).
    :raises ValueError: an empty target, or several entities match (the message lists them).
    """
    text = target.strip()
    if not text:
        raise ValueError("the target is empty: pass an entity id or a (qualified) name")
    by_id = store.entities_by_id([text])
    if by_id:
        return by_id[0]
    path, line = split_path_line(text)
    if store.file_records_in([path]):
        at = store.entities_at(path, line)
        if not at:
            raise UnknownEntityError(f"no entity spans line {line} of {path}")
        return at[0] if line is not None else at[-1]  # the innermost one, or the whole file's
    if looks_like_path(text):
        raise UnknownEntityError(f"{path!r} is not an indexed file: pass a root-relative path such as "
                                 "src/app.py:12")
    found = store.entities_named_like(text, MAX_CANDIDATES + 1)
    if not found:
        raise UnknownEntityError(f"no entity named {text!r}: check the name with `knowcode search {text}`")
    exact = [e for e in found if e.qualified_name == text.replace("::", ".")]
    if len(exact) == 1 or len(found) == 1:
        return (exact or found)[0]
    listed = "\n".join(f"  {_describe(e)}" for e in found[:MAX_CANDIDATES])
    more = " (and more)" if len(found) > MAX_CANDIDATES else ""
    raise ValueError(f"{text!r} is ambiguous: {len(found)}{more} entities match; "
                     f"pass one of these ids or qualified names:\n{listed}")


def _node(entity: Entity, depth: int, via: str) -> GraphNode:
    return GraphNode(entity.id, entity.qualified_name, entity.kind.value, entity.path, entity.start_line,
                     entity.end_line, depth, via)


def _edge(rel: Relationship) -> GraphEdge:
    return GraphEdge(rel.source_id, rel.target_id or "", rel.kind.value, rel.path, rel.line)


@dataclass
class _Walk:
    """The state of one bounded breadth-first walk."""

    max_nodes: int
    nodes: dict[str, GraphNode] = field(default_factory=dict)
    edges: dict[tuple[str, str, str], GraphEdge] = field(default_factory=dict)
    truncated: bool = False

    def run(self, store: Store, start: Iterable[str], depth: int, step: Step,
            closed: frozenset[str] = frozenset()) -> None:
        """Walk from `start` up to `depth` edges; `closed` ids are never added as nodes."""
        frontier = set(start)
        known = set(closed) | frontier
        for level in range(1, depth + 1):
            if not frontier:
                return
            pending: dict[str, str] = {}
            for rel, neighbour, via in step(frontier):
                if neighbour not in known and neighbour not in pending:
                    if len(self.nodes) + len(pending) >= self.max_nodes:
                        self.truncated = True
                        continue
                    pending[neighbour] = via
                if neighbour in closed:
                    continue  # a relationship inside the walk's own scope
                self._add_edge(rel)
            loaded = store.entities_by_id(pending)
            for entity in loaded:
                self.nodes[entity.id] = _node(entity, level, pending[entity.id])
            frontier = {entity.id for entity in loaded}
            known |= frontier

    def _add_edge(self, rel: Relationship) -> None:
        key = (rel.source_id, rel.target_id or "", rel.kind.value)
        if key in self.edges:
            return
        if len(self.edges) >= MAX_EDGES:
            self.truncated = True
            return
        self.edges[key] = _edge(rel)


def _sorted(nodes: Iterable[GraphNode]) -> tuple[GraphNode, ...]:
    return tuple(sorted(nodes, key=lambda n: (n.depth, n.path, n.start_line, n.qualified_name, n.id)))


def _callers_step(store: Store) -> Step:
    return lambda ids: [(r, r.source_id, "caller")
                        for r in store.relationships_into(ids, [RelationKind.CALLS])]


def _callees_step(store: Store) -> Step:
    return lambda ids: [(r, r.target_id or "", "callee")
                        for r in store.relationships_from(ids, [RelationKind.CALLS])]


def trace_calls(store: Store, entity_id: str, direction: TraceDirection | str = TraceDirection.BOTH,
                depth: int = 2) -> CallTrace:
    """The call graph around an entity: its callers, its callees, or both, up to `depth` calls away.

    With both, the two walks run separately and merge: a node reached both ways (a recursion) has
    ``via="both"`` and the smaller depth.

    :param store: the open index.
    :param entity_id: the root: an entity id, a qualified name or a name.
    :param direction: callers, callees or both.
    :param depth: calls to follow from the root (1..MAX_DEPTH).
    :return: the root, the nodes (root first) and the call edges between them.
    :raises ValueError: a bad depth or direction, or a target that matches no entity or several.
    """
    validate_depth(depth)
    chosen = parse_direction(direction)
    root_entity = resolve_target(store, entity_id)
    root = _node(root_entity, 0, "")
    merged: dict[str, GraphNode] = {}
    edges: dict[tuple[str, str, str], GraphEdge] = {}
    truncated = False
    steps = {TraceDirection.CALLERS: [_callers_step(store)], TraceDirection.CALLEES: [_callees_step(store)],
             TraceDirection.BOTH: [_callers_step(store), _callees_step(store)]}[chosen]
    for step in steps:
        walk = _Walk(max_nodes=MAX_NODES - 1 - len(merged))
        walk.run(store, [root.id], depth, step)
        truncated = truncated or walk.truncated
        for node in walk.nodes.values():
            seen = merged.get(node.id)
            merged[node.id] = node if seen is None else _merge(seen, node)
        for key, edge in walk.edges.items():
            if key not in edges and len(edges) >= MAX_EDGES:
                truncated = True
                break
            edges.setdefault(key, edge)
    return CallTrace(root, chosen, depth, (root, *_sorted(merged.values())), tuple(edges.values()), truncated)


def _merge(first: GraphNode, second: GraphNode) -> GraphNode:
    """A node both walks reached: the smaller depth, ``via="both"``."""
    return GraphNode(first.id, first.qualified_name, first.kind, first.path, first.start_line, first.end_line,
                     min(first.depth, second.depth), "both")


def _scope(store: Store, root: Entity) -> tuple[set[str], bool]:
    """The root and everything nested in it (a module's classes, a class's methods), bounded."""
    scope = {root.id}
    frontier = [root.id]
    while frontier:
        children = [c for c in store.children(frontier) if c.id not in scope]
        if len(scope) + len(children) > MAX_NODES:
            return scope | {c.id for c in children[:MAX_NODES - len(scope)]}, True
        scope.update(c.id for c in children)
        frontier = [c.id for c in children]
    return scope, False


def impact(store: Store, entity_id: str, depth: int = 3) -> ImpactReport:
    """What a change to an entity can affect: who calls it, subclasses it or imports it, and so on.

    A change to a class or module reaches the dependents of everything inside it too, so those count
    as direct dependents (an edge's target may then be a member of the target).

    :param store: the open index.
    :param entity_id: the changed entity: an id, a qualified name or a name.
    :param depth: dependency steps to follow (1..MAX_DEPTH); depth 1 is the direct dependents.
    :return: direct and transitive dependents, their files and the edges that connect them.
    :raises ValueError: a bad depth, or a target that matches no entity or several.
    """
    validate_depth(depth)
    root_entity = resolve_target(store, entity_id)
    scope, scope_truncated = _scope(store, root_entity)

    def step(ids: set[str]) -> list[tuple[Relationship, str, str]]:
        return [(r, r.source_id, r.kind.value) for r in store.relationships_into(ids, IMPACT_KINDS)]

    walk = _Walk(max_nodes=MAX_NODES - 1)
    walk.run(store, scope, depth, step, closed=frozenset(scope))
    nodes = _sorted(walk.nodes.values())
    return ImpactReport(
        target=_node(root_entity, 0, ""), depth=depth,
        direct=tuple(n for n in nodes if n.depth == 1), transitive=tuple(n for n in nodes if n.depth > 1),
        affected_files=tuple(sorted({n.path for n in nodes})), edges=tuple(walk.edges.values()),
        truncated=walk.truncated or scope_truncated)
