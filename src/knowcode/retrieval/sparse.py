"""The sparse leg: BM25 (bm25s) over chunk tokens, saved as plain files and loaded memory-mapped."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np

from knowcode.indexing.tokenizer import tokenize

# BM25 saturation and length normalisation: the Lucene defaults, which code-search studies keep
# (config keys bm25_k1 / bm25_b override them).
BM25_K1 = 1.2
BM25_B = 0.75
_IDS_FILE = "chunk_ids.json"


class SparseIndex:
    """BM25 scores for a fixed list of chunk ids."""

    def __init__(self, retriever: bm25s.BM25 | None, chunk_ids: list[str]) -> None:
        self.retriever = retriever
        self.chunk_ids = chunk_ids
        self.vocabulary: dict[str, int] = dict(retriever.vocab_dict) if retriever is not None else {}

    @classmethod
    def build(cls, chunk_ids: Sequence[str], token_strings: Sequence[str], *, k1: float = BM25_K1,
              b: float = BM25_B) -> SparseIndex:
        """Index pre-tokenized chunks (space-joined tokens, as the store keeps them)."""
        if not chunk_ids:
            return cls(None, [])
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index([tokens.split() for tokens in token_strings], show_progress=False)
        return cls(retriever, list(chunk_ids))

    def save(self, directory: Path) -> None:
        """Write the index as plain files (numpy arrays, JSON vocabulary and parameters, ids)."""
        directory.mkdir(parents=True, exist_ok=True)
        if self.retriever is not None:
            self.retriever.save(str(directory), show_progress=False)
        (directory / _IDS_FILE).write_text(json.dumps(self.chunk_ids))

    @classmethod
    def load(cls, directory: Path) -> SparseIndex:
        """Load a saved index; the score matrix is memory-mapped, not read."""
        chunk_ids = json.loads((directory / _IDS_FILE).read_text())
        if not chunk_ids:
            return cls(None, [])
        retriever = bm25s.BM25.load(str(directory), mmap=True, show_progress=False, verbosity=0)
        # Plain-ndarray views of the same mapped memory: every slice of a numpy.memmap goes through
        # its Python-level __getitem__, which cost ~1.5 ms a query on 20k chunks.
        retriever.scores = {key: np.asarray(value) if isinstance(value, np.memmap) else value
                            for key, value in retriever.scores.items()}
        return cls(retriever, chunk_ids)

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        """The best `limit` chunks for a query, as (chunk id, BM25 score), best first; zeros left out."""
        tokens = [t for t in tokenize(query) if t in self.vocabulary]
        if self.retriever is None or not tokens or limit <= 0:
            return []
        scores = self.retriever.get_scores(tokens)
        top = np.argpartition(-scores, min(limit, len(scores) - 1))[:limit]
        top = top[scores[top] > 0]
        ranked = top[np.lexsort((top, -scores[top]))]  # by score, ties by row: deterministic
        return [(self.chunk_ids[i], float(scores[i])) for i in ranked.tolist()]
