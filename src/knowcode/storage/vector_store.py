"""Dense vectors of chunks: float32 matrices (.npy), one per segment, and the chunk id of each row.

A search index keeps its vectors in segments as it keeps its postings (see
:mod:`knowcode.retrieval.segments`): an update appends a small matrix for the new chunks and marks the
rows of deleted ones, so a one-file edit never rewrites the whole matrix. A reader joins the live rows
of every segment into one matrix (memory-mapped while there is one segment and no deleted row). A large
segment may carry an approximate graph (:mod:`knowcode.storage.ann_index`) that proposes candidates
among its rows; the rows of the other segments are still scanned. The exact scan reads int8 codes of
the rows (:mod:`knowcode.storage.quantized`) and scores again only the rows they cannot rule out.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from knowcode.storage.ann_index import ANN_OVERSAMPLE, AnnIndex
from knowcode.storage.quantized import Quantized
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
    `approximate` covers some rows. `quantized`, the rows' int8 codes, is made on the first exact search
    when not given (a segment saves its codes, so only one written before them pays that).

    DESIGN.md: numpy brute force is ~2 ms/query at 20k x 256; the int8 codes cut that to ~0.6 ms;
    larger segments get a graph.
    """

    def __init__(self, chunk_ids: list[str], matrix: FloatMatrix, approximate: Approximate | None = None,
                 quantized: Quantized | None = None) -> None:
        if len(chunk_ids) != matrix.shape[0]:
            raise ValueError(f"{len(chunk_ids)} ids for {matrix.shape[0]} vectors")
        if quantized is not None and len(quantized.codes) != len(chunk_ids):
            raise ValueError(f"{len(quantized.codes)} codes for {len(chunk_ids)} vectors")
        self.chunk_ids = chunk_ids
        self.matrix = matrix
        self.approximate = approximate
        self._quantized = quantized
        self.row_of = {chunk_id: row for row, chunk_id in enumerate(chunk_ids)}

    @property
    def quantized(self) -> Quantized:
        """The rows' int8 codes (made from the matrix on first use)."""
        if self._quantized is None:
            self._quantized = Quantized.of(self.matrix)  # idempotent: a race only makes it twice
        return self._quantized

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
        """Open a saved store: the matrix memory-mapped (a query scans the int8 codes, read into memory,
        and gathers only the few hundred float32 rows they leave; reading a 21k x 256 matrix cost ~29
        ms a load, mapping it 0.3 ms).

        :param directory: the folder `save` wrote.
        :param chunk_ids: the ids of the rows, when they were saved elsewhere.
        :param vectors_file: the matrix's file name.
        :raises FileNotFoundError: a file is missing.
        """
        # a plain-ndarray view of the mapped memory: numpy.memmap's Python-level __getitem__ costs a call
        matrix: FloatMatrix = np.asarray(np.load(directory / vectors_file, mmap_mode="r"))
        ids = chunk_ids if chunk_ids is not None else json.loads((directory / IDS_FILE).read_text())
        return cls(ids, matrix, quantized=Quantized.load(directory, _stem(vectors_file), len(matrix)))

    def save_codes(self, directory: Path, *, vectors_file: str = VECTORS_FILE) -> None:
        """Write the rows' int8 codes beside the matrix `save` wrote as `vectors_file`, for `load`."""
        self.quantized.save(directory, _stem(vectors_file))

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
            return whole if approximate is None else cls(whole.chunk_ids, whole.matrix, approximate,
                                                         whole._quantized)
        ids: list[str] = []
        matrices = []
        codes: list[Quantized] | None = []  # None: a part has none, so they are made when needed
        for store, deleted in parts:
            coded = store._quantized
            if not deleted:
                ids.extend(store.chunk_ids)
                matrices.append(store.matrix)
            else:
                live = np.ones(len(store.chunk_ids), dtype=bool)
                live[list(deleted)] = False
                ids.extend(cid for cid, alive in zip(store.chunk_ids, live.tolist(), strict=True) if alive)
                matrices.append(store.matrix[live])
                coded = coded.rows(live) if coded is not None else None
            codes = [*codes, coded] if codes is not None and coded is not None else None
        width = parts[0][0].matrix.shape[1] if parts else 0
        matrix = np.concatenate(matrices) if matrices else np.zeros((0, width), dtype=np.float32)
        quantized = Quantized.concatenate(codes, width) if codes is not None else None
        return cls(ids, matrix, approximate, quantized)

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
            rows = self.quantized.candidates(query, min(limit, len(self.chunk_ids)))
            # scored in float64: exact to ~1e-16 whatever rows are gathered, where float32 sums come out
            # a unit in the last place apart by the row's position in the matrix (so a gathered subset
            # would not always agree with a whole scan, nor one layout of segments with another)
            exact = self.matrix[rows].astype(np.float64) @ query.astype(np.float64)
            if len(rows) > limit:  # only the rows that reach the cut get their ids looked up
                cut = np.partition(exact, len(exact) - limit)[len(exact) - limit]
                rows, exact = rows[exact >= cut], exact[exact >= cut]
            return top_by_score(exact, [self.chunk_ids[row] for row in rows.tolist()], limit)
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


def _stem(vectors_file: str) -> str:
    """The name a matrix file's companions start with: its name without ``.npy``."""
    return vectors_file.removesuffix(".npy")
