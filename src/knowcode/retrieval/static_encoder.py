"""A model2vec static model read and applied directly: a token -> vector table and its tokenizer.

A static model embeds a text as the mean of its tokens' vectors. This module reads a model2vec folder
(``model.safetensors`` and ``tokenizer.json``; ``config.json`` holds nothing the encoding needs) with
a memory map of its tensors (:mod:`knowcode.retrieval.tensor_file`) and ``tokenizers`` alone, and
encodes as ``model2vec.StaticModel.encode`` does, step for step (a test compares the vectors for
equality). Importing model2vec itself costs ~0.15 s (joblib,
its hub and training code) and its constructor deep-copies the tokenizer (~0.02 s): a warm
``knowcode search`` paid both for one query.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from knowcode.retrieval.tensor_file import map_tensors
from knowcode.retrieval.word_pieces import WordPieceWords, word_pieces_for

if TYPE_CHECKING:
    from tokenizers import Tokenizer

NORM_EPSILON = 1e-32  # model2vec adds it to every norm before dividing (an empty text stays a zero row)


@dataclass(slots=True, eq=False)
class StaticEncoder:
    """A loaded static model; see :func:`load_static_encoder`. Not changed after loading, but for the
    median token length it reads once, on first need (two threads would compute the same value), and
    the word cache of its tokenizer's fast path."""

    embedding: npt.NDArray[Any]  # (rows, dim): one row per token, or per cluster with a token mapping
    tokenizer: Tokenizer
    unk_token_id: int | None  # dropped from every text (word-level vocabularies emit it for unknown words)
    max_tokens: int  # tokens kept per text (its head); the tokenizer truncates to it
    weights: npt.NDArray[Any] | None = None  # per-token weights of a vocabulary-quantised model
    token_mapping: npt.NDArray[Any] | None = None  # token id -> embedding row, same kind of model
    # Token ids word by word for the texts it covers (ASCII, BERT-style tokenizers): the tokenizer's ids
    word_pieces: WordPieceWords | None = None
    # The median vocabulary token length, in characters, filled on first need: reading the vocabulary
    # costs ~0.01 s, and short texts (queries, the chunk heads an index embeds) never need it.
    _median_token_length: int | None = field(default=None, repr=False)

    @property
    def dim(self) -> int:
        """Length of every vector."""
        return int(self.embedding.shape[1])

    @property
    def median_token_length(self) -> int:
        """Characters of the median vocabulary token: texts are cut to max_tokens such tokens."""
        if self._median_token_length is None:
            import statistics  # with fractions and decimal: only texts longer than max_tokens need it

            lengths = (len(token) for token in self.tokenizer.get_vocab())
            self._median_token_length = int(statistics.median(lengths))
        return self._median_token_length

    def encode(self, texts: Sequence[str], *, batch_size: int) -> npt.NDArray[Any]:
        """Embed texts: the mean of their token vectors, L2-normalised, in the table's dtype.

        :param texts: the texts (at least one).
        :param batch_size: texts per tokenizer call.
        :return: array (len(texts), dim); an empty text gives a zero row.
        """
        # As model2vec, texts are first cut to max_tokens median tokens' worth of characters (it bounds the
        # tokenizer's work). A token is at least a character long, so a text of at most max_tokens
        # characters is never cut, whatever the median.
        heads = list(texts)
        if any(len(text) > self.max_tokens for text in heads):
            cut = self.max_tokens * self.median_token_length
            heads = [text[:cut] for text in heads]
        batches = [self._encode_batch(heads[start:start + batch_size])
                   for start in range(0, len(heads), batch_size)]
        return np.concatenate(batches, axis=0)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids each text is embedded from (no special tokens, the unknown token dropped)."""
        fast = self.word_pieces
        found: list[list[int] | None] = ([fast.ids(text) for text in texts] if fast is not None
                                         else [None] * len(texts))
        rest = [row for row, row_ids in enumerate(found) if row_ids is None]
        if rest:
            others = [texts[row] for row in rest]
            encodings = self.tokenizer.encode_batch_fast(others, add_special_tokens=False)
            for row, encoding in zip(rest, encodings, strict=True):
                found[row] = encoding.ids
        ids = cast("list[list[int]]", found)  # every None was filled just above
        if self.unk_token_id is not None:
            ids = [[token for token in row if token != self.unk_token_id] for row in ids]
        return ids

    def _encode_batch(self, texts: Sequence[str]) -> npt.NDArray[Any]:
        ids = self.token_ids(texts)
        dtype = np.dtype(np.float32) if self.embedding.dtype == np.int8 else self.embedding.dtype
        out = np.zeros((len(ids), self.dim), dtype=dtype)
        if self.token_mapping is None and self.weights is None and self.embedding.dtype in _FLOAT_TABLES:
            rows = [row for row, tokens in enumerate(ids) if tokens]
            if rows:
                out[rows] = _float_means(self.embedding, [ids[row] for row in rows])
        elif self.token_mapping is None and self.weights is None:
            # Texts of one token count are averaged in one gather: the same arithmetic, row by row.
            by_length: defaultdict[int, list[int]] = defaultdict(list)
            for row, tokens in enumerate(ids):
                if tokens:
                    by_length[len(tokens)].append(row)
            for rows in by_length.values():
                out[rows] = self.embedding[np.array([ids[row] for row in rows], dtype=np.int64)].mean(axis=1)
        else:
            for row, tokens in enumerate(ids):
                if tokens:
                    table_rows = tokens if self.token_mapping is None else self.token_mapping[tokens]
                    vectors = self.embedding[table_rows]
                    if self.weights is not None:
                        vectors = vectors * self.weights[tokens][:, None]
                    out[row] = vectors.mean(axis=0)
        wide = out.astype(np.float32)
        unit: npt.NDArray[Any] = (wide / (np.linalg.norm(wide, axis=1, keepdims=True) + NORM_EPSILON)).astype(
            out.dtype)
        return unit


# Tables whose mean numpy sums in float32, token after token (float16 with a float32 accumulator):
# :func:`_float_means` does the same additions in the same order without gathering every token's vector
# (5.4k chunk heads of ~46 tokens: 127 MB), which cost more than tokenizing once tokens came word by word.
_FLOAT_TABLES = (np.dtype(np.float16), np.dtype(np.float32))


def _float_means(table: npt.NDArray[Any], ids: list[list[int]]) -> npt.NDArray[Any]:
    """``table[row].mean(axis=0)`` of each row of token ids (none empty) of a float16 or float32 table, bit
    for bit (a test holds it to model2vec's vectors): a float32 sum over the tokens in order, divided by
    their count, in the table's dtype.

    Only the table rows the texts use are widened, once; the sum goes one token position at a time over
    the texts that long (longest first, so those are a prefix), a few hundred numpy calls a batch.
    """
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    used, inverse = np.unique(np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum())),
                              return_inverse=True)
    wide = table[used].astype(np.float32)
    positions = np.zeros((len(ids), int(lengths.max())), dtype=np.int64)
    positions[np.arange(positions.shape[1]) < lengths[:, None]] = inverse  # row-major: each text in order
    order = np.argsort(-lengths, kind="stable")
    positions = positions[order]
    longer = np.searchsorted(-lengths[order], -np.arange(positions.shape[1]), side="left")  # texts > j long
    total = wide[positions[:, 0]]
    for column in range(1, positions.shape[1]):
        count = int(longer[column])
        total[:count] += wide[positions[:count, column]]
    total /= lengths[order, None].astype(np.float32)
    means = np.empty_like(total, dtype=table.dtype)
    means[order] = total
    return means


def _unk_token_id(tokenizer: Tokenizer) -> int | None:
    """The unknown token's id (WordPiece, BPE and word-level models name it; unigram ones number it)."""
    model = tokenizer.model
    if hasattr(model, "unk_token"):
        token = model.unk_token
        return None if token is None else tokenizer.token_to_id(token)
    unk_id = json.loads(tokenizer.to_str())["model"].get("unk_id")
    return None if unk_id is None else int(unk_id)


def load_static_encoder(folder: Path, max_tokens: int) -> StaticEncoder:
    """Read a model2vec folder as ``StaticModel.from_pretrained(folder, normalize=True)`` would.

    The tokenizer is set up once here (truncation, no padding) and never changed afterwards, so
    threads may share the encoder.

    :param folder: holds model.safetensors (``embeddings``, optionally ``weights`` and ``mapping``) and
        tokenizer.json.
    :param max_tokens: tokens kept per text (model2vec's ``max_length``).
    :return: the encoder.
    :raises ValueError: the table has neither one row per token nor a token mapping, or
        model.safetensors is malformed.
    :raises OSError: a file cannot be read.
    """
    from tokenizers import Tokenizer

    tensors = map_tensors(folder / "model.safetensors")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokens = tokenizer.get_vocab_size(with_added_tokens=True)
    embedding, mapping = tensors["embeddings"], tensors.get("mapping")
    if mapping is None and len(embedding) != tokens:
        raise ValueError(f"static model in {folder}: {tokens} tokens but {len(embedding)} vectors and no "
                         "token mapping")
    padding = tokenizer.padding
    if padding is not None:  # as model2vec: no padding, the pad token kept
        tokenizer.enable_padding(pad_id=padding["pad_id"], pad_token=padding["pad_token"],
                                 pad_type_id=padding["pad_type_id"], length=0)
    tokenizer.enable_truncation(max_tokens)
    return StaticEncoder(embedding=embedding, tokenizer=tokenizer, unk_token_id=_unk_token_id(tokenizer),
                         max_tokens=max_tokens, weights=tensors.get("weights"), token_mapping=mapping,
                         word_pieces=word_pieces_for(tokenizer))
