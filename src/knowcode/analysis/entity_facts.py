"""What the synthesizer knows about each retrieved entity: the hit, its relations and its members.

One batch of store reads per relation kind, so a bundle costs a handful of queries whatever its size.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass

from knowcode.models import Entity, HitSource, SearchHit
from knowcode.storage.store import Store


@dataclass(frozen=True, slots=True)
class EntityFacts:
    """A hit with the names around it: each list holds at least the items a bundle shows (it may be
    cut there), and its count says how many there are in all."""

    hit: SearchHit
    language: str
    entity_start: int  # the whole entity's span
    entity_end: int
    source: str  # the retrieved code, trimmed to the entity's lines when the chunk held more
    source_start: int
    source_end: int
    callers: tuple[str, ...]  # qualified names of resolved callers, by path and line
    callees: tuple[str, ...]  # qualified names of resolved callees, in call order
    children: tuple[str, ...]  # one line per direct member: its signature, or its kind and name
    caller_count: int  # distinct caller names in all (the list may hold only the first)
    callee_count: int  # distinct callee names in all
    child_count: int  # direct members in all

    @property
    def is_dependency(self) -> bool:
        """True for a 1-hop callee pulled in for completeness."""
        return self.hit.source == HitSource.DEPENDENCY.value


def _member_line(entity: Entity) -> str:
    signature = " ".join(entity.signature.split())
    return signature or f"{entity.kind.value} {entity.name}"


def _trimmed(hit: SearchHit, start: int, end: int) -> tuple[str, int, int]:
    """The hit's code within the entity's lines (a small file is one chunk holding several entities)."""
    lines = hit.text.splitlines()
    if len(lines) != hit.end_line - hit.start_line + 1 or (start <= hit.start_line and hit.end_line <= end):
        return hit.text, hit.start_line, hit.end_line  # lines do not map one to one: keep it whole
    first, last = max(start, hit.start_line), min(end, hit.end_line)
    if first > last:
        return hit.text, hit.start_line, hit.end_line
    return "\n".join(lines[first - hit.start_line:last - hit.start_line + 1]), first, last


def gather_facts(store: Store, hits: Sequence[SearchHit], *, max_callers: int, max_callees: int,
                 max_children: int,
                 caller_counts: MutableMapping[str, int] | None = None) -> list[EntityFacts]:
    """Callers, callees and members of each hit's entity, read from the store: the first of each list
    (as many as a bundle shows) and their totals, counted by the store rather than read in full.

    :param store: the open store.
    :param hits: ranked hits, then dependency hits.
    :param max_callers: caller names kept per entity (the rendered cap).
    :param max_callees: callee names kept per entity.
    :param max_children: members kept per entity.
    :param caller_counts: caller totals already counted on this state of the index (see
        :meth:`Store.caller_names`); None: count every one.
    :return: one EntityFacts per hit, in the same order.
    """
    ids = [hit.entity_id for hit in hits]
    callers = store.caller_names(ids, max_callers, caller_counts)
    callees = store.callee_names(ids, max_callees)
    children = store.first_children(ids, max_children)
    owners = {e.id: e for e in store.entities_by_id(ids, brief=True)}  # spans and language only
    nothing: tuple[list[str], int] = ([], 0)
    no_members: tuple[list[Entity], int] = ([], 0)
    facts = []
    for hit in hits:
        owner = owners.get(hit.entity_id)
        start, end = (owner.start_line, owner.end_line) if owner else (hit.start_line, hit.end_line)
        source, source_start, source_end = _trimmed(hit, start, end)
        caller_names, caller_count = callers.get(hit.entity_id, nothing)
        callee_names, callee_count = callees.get(hit.entity_id, nothing)
        members, member_count = children.get(hit.entity_id, no_members)
        facts.append(EntityFacts(
            hit, owner.language if owner else "", start, end, source, source_start, source_end,
            tuple(caller_names), tuple(callee_names), tuple(_member_line(c) for c in members),
            caller_count, callee_count, member_count))
    return facts
