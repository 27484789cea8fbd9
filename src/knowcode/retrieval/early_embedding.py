"""Embedding chunk heads while a first index run is still parsing.

A cold build embeds every chunk, so nothing it embeds early is wasted. The heads are handed over file
by file as the parsed rows are stored, and embedded on a thread of this process while the parser
workers use the cores: the search-index build then finds their vectors ready instead of embedding
after the graph is committed (on abseil-cpp, 1.5 s of a 10 s run spent with one core busy).

The vectors are those the search-index build would compute: the same provider, the same heads
(``index_text[:DENSE_TEXT_CHARS]``, which is what SQLite's ``substr`` returns there), and a provider's
vector of a text does not depend on the other texts of its batch. A failure here costs nothing but
the early work: the build embeds what is missing itself and reports any error where it always did.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence

import numpy as np

from knowcode.progress import Phase, ProgressCallback
from knowcode.retrieval.embeddings import EmbeddingProvider
from knowcode.storage.store import ChunkRow

logger = logging.getLogger(__name__)

_ID, _INDEX_TEXT = 0, 6  # fields of a ChunkRow (knowcode.storage.store.chunk_row)


class EarlyEmbedding:
    """A thread embedding the heads it is given in batches, keeping their vectors by chunk id.

    :param provider: the embedding provider the search-index build will use.
    :param head_chars: characters of a chunk's index text that are embedded.
    :param batch: heads per provider call.
    """

    def __init__(self, provider: EmbeddingProvider, *, head_chars: int, batch: int) -> None:
        self._provider = provider
        self._head_chars = head_chars
        self._batch = batch
        self._inbox: queue.SimpleQueue[list[tuple[str, str]] | None] = queue.SimpleQueue()
        self._stopped = threading.Event()
        self._changed = threading.Condition()
        self._vectors: dict[str, np.ndarray] = {}
        self._added = 0
        self._failed: Exception | None = None
        self._finished = False
        self._input_closed = False
        # daemon: an interrupted run must be able to exit while a provider call is still under way
        self._thread = threading.Thread(target=self._run, name="knowcode-early-embed", daemon=True)
        self._thread.start()

    def add(self, chunks: Sequence[ChunkRow]) -> None:
        """Queue the heads of stored chunks (returns at once).

        :param chunks: rows as the chunks table holds them.
        """
        if chunks and not self._input_closed:
            self._added += len(chunks)
            self._inbox.put([(row[_ID], row[_INDEX_TEXT][:self._head_chars]) for row in chunks])

    def vectors(self, progress: ProgressCallback) -> dict[str, np.ndarray]:
        """Wait for every queued head, telling `progress` of the embedding as batches finish.

        :param progress: told of Phase.EMBED (chunks embedded of those queued).
        :return: each embedded chunk's vector by id; empty when the provider failed.
        """
        self._close_input()
        total = self._added
        if total:
            progress(Phase.EMBED, 0, total)
        with self._changed:
            while not self._finished:
                self._changed.wait()
                if self._vectors:
                    progress(Phase.EMBED, min(len(self._vectors), total), total)
        if self._failed is not None:
            logger.debug("early embedding failed (%s); the search-index build embeds instead", self._failed)
            return {}
        return self._vectors

    def close(self) -> None:
        """Stop: queued heads are dropped; a provider call under way is left to finish on its own."""
        self._stopped.set()
        self._close_input()

    def _close_input(self) -> None:
        if not self._input_closed:
            self._input_closed = True
            self._inbox.put(None)

    def _run(self) -> None:
        pending: list[tuple[str, str]] = []
        try:
            while not self._stopped.is_set():
                item = self._inbox.get()
                if item is not None:
                    pending.extend(item)
                while len(pending) >= self._batch or (item is None and pending):
                    if self._stopped.is_set():
                        return
                    self._embed(pending[:self._batch])
                    del pending[:self._batch]
                if item is None:
                    return
        except Exception as err:  # the build falls back to embedding (and reports the error) itself
            self._failed = err
        finally:
            with self._changed:
                self._finished = True
                self._changed.notify_all()

    def _embed(self, batch: list[tuple[str, str]]) -> None:
        embedded = self._provider.embed([head for _, head in batch])
        if embedded.shape != (len(batch), self._provider.dimension):
            raise ValueError(f"the provider returned shape {embedded.shape} for {len(batch)} texts")
        with self._changed:
            self._vectors.update(zip((cid for cid, _ in batch), embedded, strict=True))
            self._changed.notify_all()
