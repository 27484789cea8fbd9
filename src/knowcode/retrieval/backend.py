"""The search-backend boundary: where the chunks' searchable form lives, and the legs read from it.

The embedded backend (the default) is the per-repository
:class:`~knowcode.retrieval.search_index.SearchIndex`: its BM25 and vector files answer the two legs. A
shared backend (Milvus, :mod:`knowcode.storage.milvus_backend`) holds the chunks of many repositories;
:func:`sync_repository` writes one repository's chunks to it (only what changed, by chunk id), and
:func:`backend_index` gives a repository's orchestrator the same two legs, ``(query, limit) -> [(chunk
id, score)]``, read from the backend and filtered to that repository.
Fusion stays client-side (the spec's RRF in hybrid_index.py). The graph stays in the repository's
SQLite store.

When the backend fails or times out, a leg answers from the embedded index instead, says why in
:attr:`BackendLegs.errors`, and leaves the backend alone for ``BACKEND_RETRY_SECONDS``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from knowcode.indexing.indexer import CONTENT_GENERATION_KEY
from knowcode.indexing.tokenizer import tokenize
from knowcode.retrieval.search_index import SearchIndex
from knowcode.retrieval.sparse import Expansion, SparseIndex
from knowcode.storage.milvus_backend import (
    MAX_TEXT_BYTES,
    BackendError,
    BackendHit,
    ChunkRow,
    RepositoryRecord,
    now,
)
from knowcode.storage.store import Store
from knowcode.storage.vector_store import FloatMatrix, VectorStore

logger = logging.getLogger(__name__)

# After a failed or timed-out backend call, the legs answer from the embedded index for this long before
# trying the backend again: a down server must not cost every query its timeout.
BACKEND_RETRY_SECONDS = 30.0
_READ_BATCH = 2_000  # chunk rows read from SQLite at a time while syncing (bounds memory)


class SearchBackend(Protocol):
    """A shared search backend: both legs over many repositories, and per-repository writes.

    :class:`~knowcode.storage.milvus_backend.MilvusChunkStore` is the implementation; tests pass fakes.
    """

    def search_sparse(self, tokens: Sequence[str], limit: int,
                      repositories: Sequence[str] | None = None) -> list[BackendHit]:
        """BM25 with statistics global over the backend, best first."""

    def search_dense(self, vector: Sequence[float], limit: int,
                     repositories: Sequence[str] | None = None) -> list[BackendHit]:
        """Nearest chunks by inner product, best first."""

    def chunk_ids(self, repository: str) -> set[str]:
        """The chunk ids a repository has in the backend."""

    def insert(self, repository: str, commit: str, generation: int, rows: Sequence[ChunkRow]) -> int:
        """Write chunks of one repository (overwriting any with the same id)."""

    def delete(self, repository: str, chunk_ids: Sequence[str]) -> int:
        """Delete chunks of one repository by id."""

    def drop_repository(self, repository: str) -> None:
        """Delete a repository's chunks and its registry entry."""

    def record(self, entry: RepositoryRecord) -> None:
        """Write a repository's registry entry."""

    def repositories(self) -> dict[str, RepositoryRecord]:
        """The registry: every repository, by name."""

    def flush(self) -> None:
        """Make what was written durable and visible to every client."""


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What one sync of a repository into the backend did."""

    repository: str
    inserted: int
    deleted: int
    unchanged: int
    seconds: float
    # chunks whose tokens were cut to Milvus' 64 KiB VARCHAR limit (one-line data files: minified JSON,
    # a tokenizer vocabulary): their BM25 length and counts differ from the embedded index's
    truncated: int = 0


def git_commit(root: Path) -> str:
    """The commit checked out in `root` (read from .git, no subprocess), or "" when there is none."""
    git = root / ".git"
    try:
        if git.is_file():  # a worktree or submodule: "gitdir: <path>"
            git = (root / git.read_text().split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head
        ref = head.split(":", 1)[1].strip()
        if (git / ref).is_file():
            return (git / ref).read_text().strip()
        common = git / "commondir"
        base = (git / common.read_text().strip()).resolve() if common.is_file() else git
        if (base / ref).is_file():
            return (base / ref).read_text().strip()
        packed = base / "packed-refs"
        for line in packed.read_text().splitlines() if packed.is_file() else ():
            if line.endswith(" " + ref):
                return line.split(" ", 1)[0]
    except (OSError, IndexError):
        pass
    return ""


def _rows(store: Store, ids: Sequence[str], vectors: VectorStore | None,
          dimension: int) -> Iterator[list[ChunkRow]]:
    """The searchable form of the given chunks, a batch at a time."""
    zero = np.zeros(dimension, dtype=np.float32)
    for start in range(0, len(ids), _READ_BATCH):
        batch = ids[start:start + _READ_BATCH]
        marks = ",".join("?" * len(batch))
        found = store.connection.execute(
            "SELECT c.id, c.path, c.start_line, c.end_line, c.entity_id, e.kind, c.text, c.tokens "
            f"FROM chunks c JOIN entities e ON e.id = c.entity_id WHERE c.id IN ({marks})", batch).fetchall()
        dense = vectors.vectors_for([row[0] for row in found]) if vectors is not None else {}
        yield [ChunkRow(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7],
                        dense.get(row[0], zero).tolist()) for row in found]


def sync_repository(backend: SearchBackend, name: str, *, root: Path, store_dir: Path, store: Store,
                    index: SearchIndex, dimension: int) -> SyncReport:
    """Bring a repository's chunks in the backend up to date with its store (only what changed).

    Chunk ids are content hashes, so a changed file means new ids: the chunks the backend lacks are
    written first, then the ones the store no longer has are deleted, so a query meanwhile finds the
    repository's old or new chunks (the orchestrator skips ids its store does not hold), never none.
    Other repositories' rows are never touched.

    :param backend: the shared backend.
    :param name: the repository's name in the backend.
    :param root: the repository folder (recorded in the registry).
    :param store_dir: its store folder (recorded, so a cross-repository search can rank its hits).
    :param store: the open, up-to-date store.
    :param index: its current search index; its vectors are written, not recomputed.
    :param dimension: the vectors' length (zeros are written when the index has no vectors).
    :return: what was written and deleted.
    :raises BackendError: the backend failed; the repository's rows are then partly updated, and the
        next sync completes them.
    """
    started = time.perf_counter()
    generation = int(store.meta().get(CONTENT_GENERATION_KEY, "0"))
    wanted = [row[0] for row in store.connection.execute("SELECT id FROM chunks ORDER BY id")]
    present = backend.chunk_ids(name)
    missing = [cid for cid in wanted if cid not in present]
    gone = sorted(present.difference(wanted))
    commit = git_commit(root)
    inserted = truncated = 0
    for rows in _rows(store, missing, index.dense, dimension):
        truncated += sum(1 for row in rows if len(row.tokens.encode("utf-8")) > MAX_TEXT_BYTES)
        inserted += backend.insert(name, commit, generation, rows)
    deleted = backend.delete(name, gone) if gone else 0
    lines = int(store.connection.execute("SELECT COALESCE(SUM(line_count), 0) FROM files").fetchone()[0])
    backend.record(RepositoryRecord(name, str(root), str(store_dir), commit, generation, len(wanted), lines,
                                    now()))
    if inserted or deleted:
        backend.flush()
    return SyncReport(name, inserted, deleted, len(wanted) - len(missing), time.perf_counter() - started,
                      truncated)


class BackendLegs:
    """Both legs of one repository (or several) read from the backend, with the embedded index behind them.

    A leg that fails answers from `fallback` (the repository's own index) and records why; the
    backend is then skipped for BACKEND_RETRY_SECONDS. Thread-safe: the dense leg runs on its own thread.
    """

    def __init__(self, backend: SearchBackend, repositories: Sequence[str] | None,
                 fallback: SearchIndex | None) -> None:
        self.backend = backend
        self.repositories = list(repositories) if repositories else None
        self.fallback = fallback
        self.errors: list[str] = []  # one line per failure since the caller last cleared it
        self._down_until = 0.0
        self._lock = threading.Lock()

    def _failed(self, err: BackendError) -> None:
        with self._lock:
            self._down_until = time.monotonic() + BACKEND_RETRY_SECONDS
            message = f"search backend unavailable, answering from the embedded index: {err}"
            if message not in self.errors:
                self.errors.append(message)
        logger.warning("%s", err)

    def _up(self) -> bool:
        with self._lock:
            return time.monotonic() >= self._down_until

    def sparse(self, query: str, limit: int) -> list[tuple[str, float]]:
        """BM25 from the backend: (chunk id, score), best first."""
        if self._up():
            try:
                hits = self.backend.search_sparse(tokenize(query), limit, self.repositories)
                return [(h.chunk_id, h.score) for h in hits]
            except BackendError as err:
                self._failed(err)
        if self.fallback is None:
            raise BackendError("the search backend is unavailable and there is no embedded index")
        return self.fallback.sparse.search(query, limit)

    def dense(self, vector: FloatMatrix, limit: int) -> list[tuple[str, float]]:
        """Nearest chunks from the backend: (chunk id, score), best first."""
        if self._up():
            try:
                hits = self.backend.search_dense(vector.tolist(), limit, self.repositories)
                return [(h.chunk_id, h.score) for h in hits]
            except BackendError as err:
                self._failed(err)
        if self.fallback is None or self.fallback.dense is None:
            raise BackendError("the search backend is unavailable and there is no embedded vector index")
        return self.fallback.dense.search(vector, limit)


class _SparseLeg(SparseIndex):
    """The sparse leg's interface (SparseIndex.search) answered by BackendLegs."""

    def __init__(self, legs: BackendLegs) -> None:
        super().__init__([])
        self.legs = legs

    def search(self, query: str, limit: int,
               expand: Expansion | None = None) -> list[tuple[str, float]]:
        """The best `limit` chunks for a query from the backend.

        :raises ValueError: with an expansion: the backend scores the query's text alone (this leg holds
            no term statistics, so relevance feedback never asks it to).
        """
        if expand is not None:
            raise ValueError("the search backend's sparse leg takes no query expansion")
        return self.legs.sparse(query, limit)


class _DenseLeg(VectorStore):
    """The dense leg's interface (VectorStore.search) answered by BackendLegs."""

    def __init__(self, legs: BackendLegs, dimension: int) -> None:
        super().__init__([], np.zeros((0, dimension), dtype=np.float32))
        self.legs = legs

    def search(self, query: FloatMatrix, limit: int) -> list[tuple[str, float]]:
        """The `limit` nearest chunks from the backend."""
        return self.legs.dense(query, limit)


def backend_index(legs: BackendLegs, embedded: SearchIndex, dimension: int) -> SearchIndex:
    """A search index whose two legs read from the backend (the orchestrator takes it as it is).

    :param legs: the backend legs, filtered to the repository.
    :param embedded: the repository's own index: its generation and embedding spec, and the fallback.
    :param dimension: the vectors' length.
    :return: the index to hand to :class:`~knowcode.retrieval.orchestrator.RetrievalOrchestrator`.
    """
    dense = _DenseLeg(legs, dimension) if embedded.dense is not None else None
    return SearchIndex(embedded.generation, _SparseLeg(legs), dense, embedded.embedding)


__all__ = ["BACKEND_RETRY_SECONDS", "BackendError", "BackendLegs", "SearchBackend", "SyncReport",
           "backend_index", "git_commit", "sync_repository"]
