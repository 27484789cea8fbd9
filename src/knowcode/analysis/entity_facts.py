"""What the synthesizer knows about each retrieved entity: the hit, its relations and its members.

One batch of store reads per relation kind, so a bundle costs a handful of queries whatever its size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knowcode.models import Entity, HitSource, SearchHit
from knowcode.storage.store import Store


@dataclass(frozen=True, slots=True)
class EntityFacts:
    """A hit with the names around it; lists are complete here and capped when rendered."""

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


def gather_facts(store: Store, hits: Sequence[SearchHit]) -> list[EntityFacts]:
    """Callers, callees and members of each hit's entity, read from the store.

    :param store: the open store.
    :param hits: ranked hits, then dependency hits.
    :return: one EntityFacts per hit, in the same order.
    """
    ids = [hit.entity_id for hit in hits]
    callers: dict[str, list[str]] = {}
    for callee, caller in store.callers(ids):
        callers.setdefault(callee, []).append(caller)
    callees: dict[str, list[str]] = {}
    for caller, callee in store.callees(ids):
        callees.setdefault(caller, []).append(callee)
    children: dict[str, list[Entity]] = {}
    for child in store.children(ids):
        if child.parent_id is not None:
            children.setdefault(child.parent_id, []).append(child)
    related = {i for group in (*callers.values(), *callees.values()) for i in group} | set(ids)
    entities = {e.id: e for e in store.entities_by_id(related)}

    def names(found: list[str]) -> tuple[str, ...]:
        known = [entities[i].qualified_name for i in found if i in entities]
        return tuple(dict.fromkeys(known))  # a function called twice is listed once

    facts = []
    for hit in hits:
        owner = entities.get(hit.entity_id)
        start, end = (owner.start_line, owner.end_line) if owner else (hit.start_line, hit.end_line)
        source, source_start, source_end = _trimmed(hit, start, end)
        facts.append(EntityFacts(
            hit, owner.language if owner else "", start, end, source, source_start, source_end,
            names(callers.get(hit.entity_id, [])), names(callees.get(hit.entity_id, [])),
            tuple(_member_line(c) for c in children.get(hit.entity_id, []))))
    return facts
