"""An approximate nearest-neighbour graph (usearch HNSW) over the vectors of one large segment.

Brute force reads every row of the matrix for every query, which stops being cheap once a segment
holds tens of thousands of chunks (memory-bound: ~1.7 ms at 21k x 256 on this machine, growing
linearly). A segment of at least ANN_MIN_ROWS rows gets a graph, built once when the segment is
written and memory-mapped when it is read. The graph only proposes candidates: they are re-scored
exactly against the float32 rows, so every returned score is exact and only recall is approximate
(measured by ``benchmarks/ann_recall.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

# Segments below this many rows are searched by brute force: at 50k x 256 floats a scan costs ~4 ms
# (linear from the 1.7 ms measured at 21k), the issue-12 budget for a whole search at 100k is 5 ms,
# and building the graph (2-12 s per 15k rows here, by the load) is only worth it where scans are slow.
# The exact scan now reads int8 codes (storage/quantized.py: ~0.74 ms at 21k, so ~1.8 ms at 50k by the
# same line), still ~8x the graph's 0.21 ms, so the threshold stays.
ANN_MIN_ROWS = 50_000
# Half-precision copies in the graph, built with half usearch's default expansion (128): recall@10
# 0.994 against 0.996 for float32 at 128, built 4x faster (benchmarks/ann_recall.py: the standard
# library's 50,458 chunk vectors, 318 queries; on 14.5k of them 0.996 against 0.997, 3x faster).
ANN_DTYPE = "f16"
ANN_CONNECTIVITY = 16  # neighbours per node: usearch's (and hnswlib's) default M
ANN_EXPANSION_ADD = 64  # candidate list while building (see ANN_DTYPE)
ANN_EXPANSION_SEARCH = 64  # candidate list while searching: usearch's default
ANN_OVERSAMPLE = 2  # candidates asked per hit wanted, before exact re-scoring and tombstone filtering

IntArray = npt.NDArray[np.int64]


class AnnIndex:
    """An HNSW graph whose keys are the row numbers of one segment's matrix."""

    def __init__(self, index: Any) -> None:
        self._index = index

    @property
    def size(self) -> int:
        """The rows in the graph."""
        return int(self._index.size)

    @classmethod
    def build(cls, matrix: npt.NDArray[np.float32]) -> AnnIndex:
        """Build the graph of a matrix's rows (inner-product metric: the rows are unit vectors).

        :param matrix: one row per key, keys 0..n-1.
        :return: the graph, in memory.
        """
        from usearch.index import Index  # imported here: most indexes never need it

        index = Index(ndim=matrix.shape[1], metric="ip", dtype=ANN_DTYPE, connectivity=ANN_CONNECTIVITY,
                      expansion_add=ANN_EXPANSION_ADD, expansion_search=ANN_EXPANSION_SEARCH)
        index.add(np.arange(len(matrix), dtype=np.uint64), np.ascontiguousarray(matrix, dtype=np.float32))
        return cls(index)

    def save(self, path: Path) -> None:
        """Write the graph to a file."""
        self._index.save(str(path))

    @classmethod
    def load(cls, path: Path) -> AnnIndex:
        """Memory-map a saved graph.

        :raises FileNotFoundError: the file is missing.
        """
        from usearch.index import Index

        if not path.is_file():
            raise FileNotFoundError(path)
        index = Index.restore(str(path), view=True)
        if index is None:
            raise FileNotFoundError(path)
        return cls(index)

    def candidates(self, query: npt.NDArray[np.float32], count: int) -> IntArray:
        """The keys of up to `count` rows close to the query, closest first (approximately)."""
        matches = self._index.search(np.ascontiguousarray(query, dtype=np.float32), count, threads=1)
        return np.asarray(matches.keys, dtype=np.int64)
