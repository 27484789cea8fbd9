"""Dependency expansion (spec: "Retrieval routing" step 5): 1-hop callees of the selected entities.

Callees are labelled ``source="dependency"`` with score 0.0, so they complete the picture without
polluting the evidence ranking.
"""

from __future__ import annotations

from collections.abc import Sequence

from knowcode.models import Chunk, Entity, HitSource, SearchHit
from knowcode.storage.store import Store

MAX_DEPENDENCIES = 10  # issue #4 caps callee lists at 10; more is noise for a bundle
MAX_DEPENDENCY_CHUNKS = 3  # a callee is shown through its first chunks, not a whole large class


def hit_for(entity: Entity, chunks: Sequence[Chunk], score: float, source: HitSource) -> SearchHit:
    """A hit on one entity through the given chunks (consecutive, in line order).

    The lines are the entity's own where the chunks hold its first line (a chunk may also carry the
    lines before it: a class header, a neighbour packed with it), else the chunks' window.
    """
    start = min((c.start_line for c in chunks), default=entity.start_line)
    end = max((c.end_line for c in chunks), default=entity.end_line)
    lines = "\n".join(c.text for c in chunks).split("\n")
    if chunks and start <= entity.start_line <= end:
        lines = lines[entity.start_line - start:min(end, entity.end_line) - start + 1]
        start, end = entity.start_line, min(end, entity.end_line)
    text = "\n".join(lines)
    return SearchHit(entity.path, start, end, score, entity.id, entity.name, entity.qualified_name,
                     entity.kind.value, source.value, chunks[0].id if chunks else "", text,
                     entity.signature, entity.docstring)


def expand_dependencies(store: Store, hits: Sequence[SearchHit]) -> list[SearchHit]:
    """The resolved callees of the hits' entities that are not hits themselves, in call order.

    :param store: the open store.
    :param hits: the ranked hits.
    :return: at most MAX_DEPENDENCIES dependency hits.
    """
    selected = {hit.entity_id for hit in hits}
    order = {hit.entity_id: rank for rank, hit in enumerate(hits)}
    edges = sorted(store.callees(selected), key=lambda edge: order[edge[0]])
    callee_ids = [callee for _, callee in edges if callee not in selected]
    callee_ids = list(dict.fromkeys(callee_ids))[:MAX_DEPENDENCIES]
    entities = {e.id: e for e in store.entities_by_id(callee_ids)}
    chunks: dict[str, list[Chunk]] = {}
    for chunk in store.chunks_of_entities(entities.values()):
        chunks.setdefault(chunk.entity_id, []).append(chunk)
    found = []
    for callee in callee_ids:
        entity = entities.get(callee)
        if entity is None:
            continue
        own = chunks.get(callee) or store.chunks_in_span(entity.path, entity.start_line, entity.end_line)
        found.append(hit_for(entity, own[:MAX_DEPENDENCY_CHUNKS], 0.0, HitSource.DEPENDENCY))
    return found
