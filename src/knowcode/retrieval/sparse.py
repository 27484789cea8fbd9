"""The sparse leg: BM25 over chunk tokens, scored at query time from term frequencies.

An index is a list of segments (:class:`Postings`, each over a fixed set of chunks, saved as plain
arrays and loaded memory-mapped) with tombstones: the rows a later update deleted. Nothing
collection-wide is baked into a segment, so the statistics BM25 needs (the number of documents N,
each term's document frequency, the average document length) are those of all live rows of all
segments, and an index updated by appending segments scores exactly as one built from scratch.

The scores are bm25s's "lucene" variant (Kamphuis et al., ECIR 2020), which this leg used before:
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` and
``tf / (tf + k1 * (1 - b + b * dl / avgdl))`` per term, summed over the query's tokens (a repeated
query token counts each time).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np
import numpy.typing as npt

from knowcode.indexing.tokenizer import tokenize
from knowcode.storage.topk import top_by_score

# BM25 saturation and length normalisation: the Lucene defaults, which code-search studies keep
# (config keys bm25_k1 / bm25_b override them).
BM25_K1 = 1.2
BM25_B = 0.75
# file name endings of a saved segment (after its stem)
_VOCABULARY_FILE = "vocabulary.json"
_INDPTR_FILE = "indptr.npy"
_DOCS_FILE = "docs.npy"
_TFS_FILE = "tfs.npy"
_LENGTHS_FILE = "lengths.npy"
# Documents split and counted at a time when building postings: splitting every chunk of a 1M-line tree
# at once held ~500 MB of token strings. Abseil's 15k chunks (1.73M tokens) at 4096 / 1024 / 512 / 256 a
# batch: peak +127 / +75 / +64 / +59 MB over the build, 437-447 / 408-429 / 413-425 / 413-417 ms; the
# smaller batches cost no time (np.unique sorts shorter arrays) and each batch's strings are one
# Python object a token, whose freed arenas the allocator keeps.
BUILD_BATCH_DOCUMENTS = 512

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float64]
# A query expansion: from the hits of a query (chunk id, score, best first), terms -> weights.
Expansion = Callable[[Sequence[tuple[str, float]]], Mapping[str, float]]


def bm25_idf(frequency: int, documents: int) -> float:
    """The lucene variant's idf of a term found in `frequency` of `documents` documents."""
    return math.log(1 + (documents - frequency + 0.5) / (frequency + 0.5))


@dataclass(frozen=True)
class Postings:
    """Term frequencies of one segment's documents, column by term (compressed sparse columns).

    The rows of term ``t`` (index ``vocabulary[t]``) are ``docs[indptr[t]:indptr[t + 1]]``, ascending,
    with their counts in ``tfs``; ``lengths`` holds each document's token count.
    """

    vocabulary: dict[str, int]
    indptr: IntArray
    docs: Int32Array
    tfs: Int32Array
    lengths: IntArray

    @property
    def rows(self) -> int:
        """The documents in the segment."""
        return len(self.lengths)

    def span(self, token: str) -> tuple[int, int] | None:
        """Where a term's rows lie in `docs` and `tfs` (start, end), or None when no document holds it."""
        column = self.vocabulary.get(token)
        if column is None:
            return None
        return int(self.indptr[column]), int(self.indptr[column + 1])

    @classmethod
    def build(cls, token_strings: Iterable[str]) -> Postings:
        """Count the terms of pre-tokenized documents (tokens joined by spaces, as the store keeps them;
        tokens hold no other whitespace).

        The documents are read and counted a batch at a time, so memory holds one batch's token
        strings and the counted (term, document) pairs, never every token of the collection.

        :param token_strings: one string per document, in row order (a stream is read once).
        :return: the segment's postings; terms are numbered by first occurrence.
        """
        vocabulary: dict[str, int] = {}
        lengths: list[IntArray] = []
        pairs: list[tuple[IntArray, IntArray, IntArray]] = []  # (term, row, count) of each batch
        stream = iter(token_strings)
        first_row = 0
        while batch := list(islice(stream, BUILD_BATCH_DOCUMENTS)):
            # One split of the joined batch, not a list per document (~35% less time splitting): the
            # store's tokens are joined by single spaces and never empty, so a document has one more
            # token than spaces. Extra spaces make the counts too many: then each document is split.
            tokens = " ".join(batch).split()
            counts = np.fromiter((text.count(" ") + 1 if text else 0 for text in batch), dtype=np.int64,
                                 count=len(batch))
            if int(counts.sum()) != len(tokens):
                counts = np.fromiter((len(text.split()) for text in batch), dtype=np.int64, count=len(batch))
            # dict.fromkeys then one lookup per token is ~20% faster than numbering with setdefault
            fresh = [token for token in dict.fromkeys(tokens) if token not in vocabulary]
            vocabulary.update(zip(fresh, range(len(vocabulary), len(vocabulary) + len(fresh)), strict=True))
            terms = np.fromiter(map(vocabulary.__getitem__, tokens), dtype=np.int64, count=len(tokens))
            rows = np.repeat(np.arange(len(batch), dtype=np.int64), counts)
            # One sort of (term, row) keys per batch counts each term once per document.
            keys, tfs = np.unique(terms * len(batch) + rows, return_counts=True)
            column, doc = np.divmod(keys, len(batch))
            pairs.append((column, doc + first_row, tfs))
            lengths.append(counts)
            first_row += len(batch)
        column, doc, tfs = (np.concatenate([p[i] for p in pairs]) if pairs else np.zeros(0, dtype=np.int64)
                            for i in range(3))
        # A stable sort by term keeps the batches in order, so each column's rows stay ascending.
        order = np.argsort(column, kind="stable")
        indptr = np.zeros(len(vocabulary) + 1, dtype=np.int64)
        np.cumsum(np.bincount(column, minlength=len(vocabulary)), out=indptr[1:])
        all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
        return cls(vocabulary, indptr, doc[order].astype(np.int32), tfs[order].astype(np.int32), all_lengths)

    def save(self, directory: Path, stem: str) -> None:
        """Write the arrays (.npy) and the vocabulary (a JSON list of terms by number) into an existing
        folder, as files named ``<stem>.<part>``."""
        terms = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        (directory / f"{stem}.{_VOCABULARY_FILE}").write_text(json.dumps(terms))
        for name, array in ((_INDPTR_FILE, self.indptr), (_DOCS_FILE, self.docs), (_TFS_FILE, self.tfs),
                            (_LENGTHS_FILE, self.lengths)):
            np.save(directory / f"{stem}.{name}", array)

    @classmethod
    def load(cls, directory: Path, stem: str) -> Postings:
        """Load a saved segment; the arrays are memory-mapped, not read.

        :raises FileNotFoundError: a file of the segment is missing.
        """
        terms = json.loads((directory / f"{stem}.{_VOCABULARY_FILE}").read_text())
        # Plain-ndarray views of the mapped memory: every slice of a numpy.memmap goes through its
        # Python-level __getitem__, which cost ~1.5 ms a query on 20k chunks.
        arrays = [np.asarray(np.load(directory / f"{stem}.{name}", mmap_mode="r"))
                  for name in (_INDPTR_FILE, _DOCS_FILE, _TFS_FILE, _LENGTHS_FILE)]
        return cls({term: number for number, term in enumerate(terms)}, *arrays)


@dataclass(frozen=True)
class SparseSegment:
    """A segment as an index reads it: its chunk ids (row order), postings and deleted rows."""

    chunk_ids: list[str]
    postings: Postings
    deleted: frozenset[int] = frozenset()


class SparseIndex:
    """BM25 over the live rows of several segments, with collection-wide statistics."""

    def __init__(self, segments: Sequence[SparseSegment], *, k1: float = BM25_K1, b: float = BM25_B) -> None:
        self.k1 = k1
        self.b = b
        self._segments = [s for s in segments if s.postings.rows]
        self._ids = [cid for s in self._segments for cid in s.chunk_ids]
        self._offsets = np.cumsum([0, *(s.postings.rows for s in self._segments)]).tolist()
        self._live: list[npt.NDArray[np.bool_] | None] = []
        for segment in self._segments:
            if segment.deleted:
                live = np.ones(segment.postings.rows, dtype=bool)
                live[sorted(segment.deleted)] = False
                self._live.append(live)
            else:
                self._live.append(None)
        lengths = [s.postings.lengths if live is None else np.where(live, s.postings.lengths, 0)
                   for s, live in zip(self._segments, self._live, strict=True)]
        all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
        self.documents = sum(s.postings.rows - len(s.deleted) for s in self._segments)
        # An exact integer total: the average, hence every score, comes out bit for bit the same
        # however the live rows are spread over segments.
        total = int(all_lengths.sum())
        average = total / self.documents if total else 1.0  # no tokens at all: nothing is ever scored
        self._norm: FloatArray = k1 * ((1 - b) + b * all_lengths.astype(np.float64) / average)

    @classmethod
    def build(cls, chunk_ids: Sequence[str], token_strings: Sequence[str], *, k1: float = BM25_K1,
              b: float = BM25_B) -> SparseIndex:
        """An index of one segment over pre-tokenized chunks (space-joined tokens, as the store keeps
        them)."""
        return cls([SparseSegment(list(chunk_ids), Postings.build(token_strings))], k1=k1, b=b)

    @property
    def chunk_ids(self) -> list[str]:
        """The live chunk ids, segment by segment."""
        return [cid for segment in self._segments for row, cid in enumerate(segment.chunk_ids)
                if row not in segment.deleted]

    def _columns(self, token: str) -> tuple[int, list[tuple[int, Int32Array, Int32Array]]]:
        """A term's live postings in each segment, as (segment, rows, counts), and its document frequency."""
        found = []
        frequency = 0
        for number, (segment, live) in enumerate(zip(self._segments, self._live, strict=True)):
            span = segment.postings.span(token)
            if span is None:
                continue
            start, end = span
            docs, tfs = segment.postings.docs[start:end], segment.postings.tfs[start:end]
            if live is not None:
                keep = live[docs]
                docs, tfs = docs[keep], tfs[keep]
            if len(docs):
                found.append((number, docs, tfs))
                frequency += len(docs)
        return frequency, found

    def document_frequency(self, token: str) -> int:
        """How many live rows hold the token."""
        frequency = 0
        for segment, live in zip(self._segments, self._live, strict=True):
            span = segment.postings.span(token)
            if span is None:
                continue
            start, end = span
            frequency += end - start if live is None else int(live[segment.postings.docs[start:end]].sum())
        return frequency

    def scores(self, tokens: Iterable[str], weights: Mapping[str, float] | None = None) -> FloatArray:
        """The BM25 score of every row (segment by segment, deleted rows 0) for query tokens, plus each
        of `weights`' terms' BM25 times its weight."""
        scores = np.zeros(len(self._ids), dtype=np.float64)
        documents = self.documents
        # A term the query repeats counts once per repeat, in one pass over its postings: issue reports
        # repeat their common terms (bench/issues' 100 hold 21,386 query tokens, 8,666 distinct ones).
        weighted: dict[str, float] = {}
        for term, weight in [*((token, 1.0) for token in tokens), *(weights or {}).items()]:
            weighted[term] = weighted.get(term, 0.0) + weight
        for token, weight in weighted.items():
            frequency, columns = self._columns(token)
            if not frequency:
                continue
            factor = weight * bm25_idf(frequency, documents)
            for number, docs, tfs in columns:
                start, end = self._offsets[number], self._offsets[number + 1]
                # rows are unique within a column, so a fancy-indexed += adds each once
                scores[start:end][docs] += factor * (tfs / (self._norm[start:end][docs] + tfs))
        return scores

    def search(self, query: str, limit: int,
               expand: Expansion | None = None) -> list[tuple[str, float]]:
        """The best `limit` chunks for a query, as (chunk id, BM25 score), best first; zeros left out.

        Ties are broken by chunk id, so the order does not depend on how rows are spread over segments.

        :param query: the query text (the index's tokenizer splits it).
        :param limit: how many chunks.
        :param expand: given the query's hits, further terms (index tokens) and the weight of each
            term's BM25 score in a second ranking (a query expansion); none by default.
        """
        if not self._ids or limit <= 0:
            return []
        scores = self.scores(tokenize(query))
        hits = top_by_score(scores, self._ids, limit, floor=0.0)
        extra = expand(hits) if expand is not None and hits else None
        if not extra:
            return hits
        return top_by_score(scores + self.scores((), extra), self._ids, limit, floor=0.0)
