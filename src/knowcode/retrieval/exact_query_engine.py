"""Exact matching for quoted queries: entity names, then qualified names, then literal text."""

from __future__ import annotations

from knowcode.models import Chunk, Entity
from knowcode.storage.store import Store

_QUOTES = ('"', "'", "`")


def quoted_text(query: str) -> str | None:
    """The text inside a quoted query (``"exact name"``), or None when the query is not quoted."""
    stripped = query.strip()
    if len(stripped) > 2 and stripped[0] in _QUOTES and stripped[-1] == stripped[0]:
        inner = stripped[1:-1].strip()
        return inner or None
    return None


def exact_search(store: Store, text: str, limit: int) -> list[tuple[Chunk, Entity | None]]:
    """Chunks for an exact query, best first: definitions named `text`, then chunks containing it.

    :param store: the open store.
    :param text: the unquoted query text.
    :param limit: chunks wanted.
    :return: (chunk, the entity it was matched through, or None for a literal-text match).
    """
    # Every definition, even when several share one packed chunk (a Java class, its constructor and
    # the file's module are all `Circle`); a literal match only in a chunk no definition holds.
    found: list[tuple[Chunk, Entity | None]] = [
        (chunk, entity) for entity, chunk in definition_chunks(store, store.entities_named_like(text, limit))]
    seen = {chunk.id for chunk, _ in found}
    for chunk in store.chunks_containing(text, limit):
        if len(found) >= limit:
            break
        if chunk.id not in seen:
            seen.add(chunk.id)
            found.append((chunk, None))
    return found[:limit]


def definition_chunks(store: Store, entities: list[Entity]) -> list[tuple[Entity, Chunk]]:
    """Each entity with the chunk that holds its first line (its signature), in the given order."""
    found = []
    for entity in entities:
        chunk = next(iter(store.chunks_in_span(entity.path, entity.start_line, entity.start_line)), None)
        if chunk is not None:
            found.append((entity, chunk))
    return found
