"""Embedding chunk heads in the parser workers of a first index run.

A cold build embeds every chunk, so nothing embedded early is wasted. When the files are parsed in
worker processes, each worker embeds the heads of the chunks it has just cut (with the shipped static
model, which every process can load offline) and sends their vectors back with the file's rows; the
search-index build then finds them ready instead of embedding after the graph is committed (on
abseil-cpp, ~1.5 s of a 10 s run with one core busy). An embedding thread in the main process was
tried first: it took the interpreter lock from the threads that feed the workers and read their
results, so the workers waited and parsing took ~1-1.5 s longer.

The vectors are those the search-index build would compute: the same model, the same heads
(``index_text[:DENSE_TEXT_CHARS]``, which is what SQLite's ``substr`` returns there), and a vector of
a text does not depend on the other texts of its batch. A file whose vectors are missing (its worker
failed to embed) is embedded by the build, as before. The vectors wait in an unnamed temporary file
beside the store, not in memory: held while the workers are alive they raised the peak of a
1.65M-line run by ~150 MB. The file is gone when closed, or when the process dies.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

from knowcode.retrieval.embeddings import StaticEmbeddingProvider
from knowcode.storage.store import ChunkRow

logger = logging.getLogger(__name__)
_FLOAT32 = np.dtype(np.float32)


@cache
def _provider(model_dir: Path) -> StaticEmbeddingProvider:
    """One provider (one loaded model) per worker process and model folder."""
    return StaticEmbeddingProvider(model_dir)


@dataclass(frozen=True)
class HeadVectors:
    """What a parser worker runs on each file's chunk rows: their heads' vectors, as float32 bytes.

    Pickled to the workers with each task, so it holds only the model's folder; the model loads once
    per worker, on its first file.
    """

    model_dir: Path
    head_chars: int

    def __call__(self, chunks: Sequence[ChunkRow]) -> bytes:
        """Embed the heads of one file's chunks.

        :param chunks: rows as the chunks table holds them (the id first, the index text seventh).
        :return: (len(chunks), dimension) float32 vectors, row-major.
        """
        if not chunks:
            return b""
        vectors = _provider(self.model_dir).embed([row[6][:self.head_chars] for row in chunks])
        return np.ascontiguousarray(vectors, dtype=_FLOAT32).tobytes()


class EarlyEmbedding:
    """The main process's side: the vectors the workers sent, in a temporary file, until the build.

    :param provider: the static provider the search-index build will use.
    :param head_chars: characters of a chunk's index text that are embedded.
    :param spill_dir: where the vectors wait (the store's folder: its disk, not a memory-backed /tmp).
    """

    def __init__(self, provider: StaticEmbeddingProvider, *, head_chars: int, spill_dir: Path) -> None:
        self.work = HeadVectors(provider.model_dir, head_chars)
        self._dimension = provider.dimension
        # closed by close(), which every caller reaches (the engine's finally)
        self._spill = tempfile.TemporaryFile(dir=spill_dir, prefix="early-vectors-")  # noqa: SIM115
        self._spilled: list[str] = []  # chunk ids, in the order of their vectors in the file

    def receive(self, chunks: Sequence[ChunkRow], vectors: object) -> None:
        """Keep the vectors a worker computed for one file's chunks (anything malformed is dropped:
        the build embeds those chunks itself).

        :param chunks: the file's chunk rows, as stored.
        :param vectors: what :class:`HeadVectors` returned for them.
        """
        size = len(chunks) * self._dimension * _FLOAT32.itemsize
        if not isinstance(vectors, bytes) or len(vectors) != size:
            if chunks:
                logger.debug("no early vectors for %d chunks of %s", len(chunks), chunks[0][1])
            return
        self._spill.write(vectors)
        self._spilled.extend(row[0] for row in chunks)

    def fill(self, rows: Mapping[str, int], matrix: npt.NDArray[np.float32], *, batch: int) -> set[int]:
        """Write the vectors of the chunks in `rows` into their rows of `matrix`.

        :param rows: the matrix row of each chunk id.
        :param matrix: (chunks, dimension) float32, written in place.
        :param batch: vectors read from the file at a time (bounds the memory beside the matrix).
        :return: the rows written.
        """
        filled: set[int] = set()
        if matrix.shape[1] != self._dimension:
            return filled
        self._spill.seek(0)
        for start in range(0, len(self._spilled), batch):
            ids = self._spilled[start:start + batch]
            block = np.frombuffer(self._spill.read(len(ids) * self._dimension * _FLOAT32.itemsize),
                                  dtype=_FLOAT32).reshape(len(ids), self._dimension)
            targets = [(rows[cid], i) for i, cid in enumerate(ids) if cid in rows]
            if targets:
                matrix[[row for row, _ in targets]] = block[[i for _, i in targets]]
                filled.update(row for row, _ in targets)
        return filled

    def close(self) -> None:
        """Delete the vectors' file."""
        self._spill.close()
