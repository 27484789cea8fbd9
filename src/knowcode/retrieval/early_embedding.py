"""Embedding chunk heads while a first index run is still parsing.

A cold build embeds every chunk, so nothing it embeds early is wasted. When the files are parsed in
worker processes, the heads are handed over file by file as the parsed rows are stored, and embedded
on a thread of this process while the workers use the cores: the search-index build then finds their
vectors ready instead of embedding after the graph is committed (on abseil-cpp, ~1.5 s of a 10 s run
with one core busy). A run that parses in its own process hands nothing over (tree-sitter holds the
interpreter lock while it parses, so the thread would only take turns with it) and embeds as before.

The vectors are those the search-index build would compute: the same provider, the same heads
(``index_text[:DENSE_TEXT_CHARS]``, which is what SQLite's ``substr`` returns there), and a provider's
vector of a text does not depend on the other texts of its batch. A failure here costs nothing but
the early work: the build embeds what is missing itself and reports any error where it always did.

The vectors wait in an unnamed temporary file beside the store, not in memory: held while the parser
workers are alive they raised the peak of a 1.65M-line run by ~150 MB (its ~100k vectors, then copied
into the build's matrix). The file is gone when closed, or when the process dies.
"""

from __future__ import annotations

import logging
import queue
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from knowcode.progress import Phase, ProgressCallback
from knowcode.retrieval.embeddings import EmbeddingProvider
from knowcode.storage.store import ChunkRow

logger = logging.getLogger(__name__)
_FLOAT32 = np.dtype(np.float32)


class EarlyEmbedding:
    """A thread embedding the heads it is given in batches; their vectors wait in a temporary file.

    :param provider: the embedding provider the search-index build will use.
    :param head_chars: characters of a chunk's index text that are embedded.
    :param batch: heads per provider call.
    :param spill_dir: where the vectors wait (the store's folder: its disk, not a memory-backed /tmp).
    """

    def __init__(self, provider: EmbeddingProvider, *, head_chars: int, batch: int, spill_dir: Path) -> None:
        self._provider = provider
        self._head_chars = head_chars
        self._batch = batch
        # closed by close(), which every caller reaches (the engine's finally)
        self._spill = tempfile.TemporaryFile(dir=spill_dir, prefix="early-vectors-")  # noqa: SIM115
        self._spilled: list[str] = []  # chunk ids, in the order of their vectors in the file
        self._inbox: queue.SimpleQueue[list[tuple[str, str]] | None] = queue.SimpleQueue()
        self._stopped = threading.Event()
        self._changed = threading.Condition()
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
            # a ChunkRow (knowcode.storage.store.chunk_row): the id first, the index text seventh
            self._inbox.put([(row[0], row[6][:self._head_chars]) for row in chunks])

    def fill(self, rows: Mapping[str, int], matrix: npt.NDArray[np.float32],
             progress: ProgressCallback) -> set[int]:
        """Wait for every queued head (telling `progress` of the embedding as batches finish), then write
        the vectors of the chunks in `rows` into their rows of `matrix`.

        :param rows: the matrix row of each chunk id.
        :param matrix: (chunks, provider dimension) float32, written in place.
        :param progress: told of Phase.EMBED (chunks embedded of those queued).
        :return: the rows written; none when the provider failed.
        """
        self._close_input()
        total = self._added
        if total:
            progress(Phase.EMBED, 0, total)
        with self._changed:
            while not self._finished:
                self._changed.wait()
                if self._spilled:
                    progress(Phase.EMBED, min(len(self._spilled), total), total)
        if self._stopped.is_set():
            return set()
        if self._failed is not None:
            logger.debug("early embedding failed (%s); the search-index build embeds instead", self._failed)
            return set()
        filled: set[int] = set()
        dimension = matrix.shape[1]
        self._spill.seek(0)
        for start in range(0, len(self._spilled), self._batch):  # one batch in memory at a time
            ids = self._spilled[start:start + self._batch]
            block = np.frombuffer(self._spill.read(len(ids) * dimension * _FLOAT32.itemsize), dtype=_FLOAT32)
            block = block.reshape(len(ids), dimension)
            targets = [(rows[cid], i) for i, cid in enumerate(ids) if cid in rows]
            if targets:
                matrix[[row for row, _ in targets]] = block[[i for _, i in targets]]
                filled.update(row for row, _ in targets)
        return filled

    def close(self) -> None:
        """Stop: queued heads are dropped, the vectors' file is deleted; a provider call under way is
        left to finish on its own (its vectors are dropped)."""
        self._stopped.set()
        self._close_input()
        with self._changed:  # not while the thread writes a batch
            self._spill.close()

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
            if self._stopped.is_set():
                return
            self._spill.write(np.ascontiguousarray(embedded, dtype=_FLOAT32).tobytes())
            self._spilled.extend(cid for cid, _ in batch)
            self._changed.notify_all()
