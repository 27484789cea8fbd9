"""Dense vectors of chunks: float32 matrices (.npy), one per segment, and the chunk id of each row.

A search index keeps its vectors in segments as it keeps its postings (see
:mod:`knowcode.retrieval.segments`): an update appends a small matrix for the new chunks and marks the
rows of deleted ones, so a one-file edit never rewrites the whole matrix. A reader joins the live rows
of every segment into one resident matrix. A large segment may carry an approximate graph
(:mod:`knowcode.storage.ann_index`) that proposes candidates among its rows; the rows of the other
segments are still scanned.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from knowcode.storage.ann_index import ANN_OVERSAMPLE, AnnIndex
from knowcode.storage.topk import top_by_score

VECTORS_FILE = "vectors.npy"
IDS_FILE = "vector_ids.json"

FloatMatrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Approximate:
    """A graph over the first rows of a store: key k is row ``rows[k]`` (-1: deleted since), and the
    rows from `covered` on are not in it."""

    graph: AnnIndex
    rows: npt.NDArray[np.int64]
    covered: int


class VectorStore:
    """Rows of `matrix` are the vectors of `chunk_ids`, in order; search is exact (brute force) unless
    `approximate` covers some rows.

    DESIGN.md: numpy brute force is ~2 ms/query at 20k x 256; larger segments get a graph.
    """

    def __init__(self, chunk_ids: list[str], matrix: FloatMatrix,
                 approximate: Approximate | None = None) -> None:
        if len(chunk_ids) != matrix.shape[0]:
            raise ValueError(f"{len(chunk_ids)} ids for {matrix.shape[0]} vectors")
        self.chunk_ids = chunk_ids
        self.matrix = matrix
        self.approximate = approximate
        self.row_of = {chunk_id: row for row, chunk_id in enumerate(chunk_ids)}

    def save(self, directory: Path, *, vectors_file: str = VECTORS_FILE, with_ids: bool = True) -> None:
        """Write the matrix (and, unless the caller keeps them elsewhere, the ids) into a folder.

        :param directory: the folder (created if missing).
        :param vectors_file: the matrix's file name.
        :param with_ids: write the ids too, as IDS_FILE.
        """
        directory.mkdir(parents=True, exist_ok=True)
        np.save(directory / vectors_file, np.ascontiguousarray(self.matrix, dtype=np.float32))
        if with_ids:
            (directory / IDS_FILE).write_text(json.dumps(self.chunk_ids))

    @classmethod
    def load(cls, directory: Path, chunk_ids: list[str] | None = None, *,
             vectors_file: str = VECTORS_FILE) -> VectorStore:
        """Load a saved store into memory: every query reads every row, and a resident array is ~30%
        faster to scan than a memory map (20k x 256 floats: 0.7 ms against 1.0 ms).

        :param directory: the folder `save` wrote.
        :param chunk_ids: the ids of the rows, when they were saved elsewhere.
        :param vectors_file: the matrix's file name.
        :raises FileNotFoundError: a file is missing.
        """
        matrix = np.load(directory / vectors_file)
        ids = chunk_ids if chunk_ids is not None else json.loads((directory / IDS_FILE).read_text())
        return cls(ids, matrix)

    @classmethod
    def join(cls, parts: Sequence[tuple[VectorStore, Collection[int]]],
             graph: AnnIndex | None = None) -> VectorStore:
        """One store of the live rows of several, in order.

        :param parts: each store with the rows of it that were deleted.
        :param graph: a graph over the rows of the first part, kept for its surviving rows.
        :return: a store whose rows are the surviving rows of the parts, part by part.
        """
        approximate = None
        if graph is not None and parts:
            first, deleted = parts[0]
            live = np.ones(len(first.chunk_ids), dtype=bool)
            live[list(deleted)] = False
            rows = np.where(live, np.cumsum(live) - 1, -1).astype(np.int64)
            approximate = Approximate(graph, rows, int(live.sum()))
        if len(parts) == 1 and not parts[0][1]:
            whole = parts[0][0]
            return whole if approximate is None else cls(whole.chunk_ids, whole.matrix, approximate)
        ids: list[str] = []
        matrices = []
        for store, deleted in parts:
            if not deleted:
                ids.extend(store.chunk_ids)
                matrices.append(store.matrix)
                continue
            live = np.ones(len(store.chunk_ids), dtype=bool)
            live[list(deleted)] = False
            ids.extend(cid for cid, alive in zip(store.chunk_ids, live.tolist(), strict=True) if alive)
            matrices.append(store.matrix[live])
        width = parts[0][0].matrix.shape[1] if parts else 0
        matrix = np.concatenate(matrices) if matrices else np.zeros((0, width), dtype=np.float32)
        return cls(ids, matrix, approximate)

    def vectors_for(self, chunk_ids: Sequence[str]) -> dict[str, FloatMatrix]:
        """The stored vector of each known id (unknown ids are left out)."""
        return {cid: np.asarray(self.matrix[self.row_of[cid]]) for cid in chunk_ids if cid in self.row_of}

    def search(self, query: FloatMatrix, limit: int) -> list[tuple[str, float]]:
        """The `limit` rows most similar to the query vector (dot product), best first; ties by id, so the
        order does not depend on how rows are spread over segments."""
        if not self.chunk_ids or limit <= 0:
            return []
        query = query.astype(np.float32)
        if self.approximate is None:
            return top_by_score(self.matrix @ query, self.chunk_ids, limit)
        rows = self._candidates(self.approximate, query, min(limit, len(self.chunk_ids)))
        scores = self.matrix[rows] @ query  # exact scores of the proposed rows
        return top_by_score(scores, [self.chunk_ids[row] for row in rows.tolist()], limit)

    def _candidates(self, approximate: Approximate, query: FloatMatrix, wanted: int) -> npt.NDArray[np.int64]:
        """Rows to score: the graph's proposals that are still live, and every row it does not cover."""
        count = wanted * ANN_OVERSAMPLE
        while True:
            keys = approximate.graph.candidates(query, count)
            rows = approximate.rows[keys]
            rows = rows[rows >= 0]
            if len(rows) >= min(wanted, approximate.covered) or count >= approximate.graph.size:
                break
            count *= 4  # tombstones took the places: ask for more
        rest = np.arange(approximate.covered, len(self.chunk_ids), dtype=np.int64)
        return np.concatenate([rows, rest])
