"""Token ids for a BERT-style WordPiece tokenizer, one word at a time, cached by word.

Embedding an index's chunk heads was mostly the tokenizer's work (~100 us a 160-character head, 85% of
the dense leg's cost), and code repeats its words: a head is a path, a qualified name and a signature.
For an ASCII text, a tokenizer built of ``BertNormalizer`` (clean text, lower case), ``BertPreTokenizer``
and a ``WordPiece`` model gives the concatenation of its WordPiece model's ids for each word, where the
words are runs of letters and digits and every other visible character alone. This module splits the
words with one regular expression and asks the tokenizer's own WordPiece model (``model.tokenize``) for
each word once: the ids are the tokenizer's, ~6x faster. A text with other characters is cut at its
spaces, and each non-ASCII piece goes to the tokenizer itself (once per distinct piece). A text longer
than the truncation, an ASCII one holding an added token such as ``[UNK]``, and any other kind of
tokenizer are left to the tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Words remembered before the cache starts over: a repository's chunk heads hold ~4k distinct words
# (zod, 5.4k heads) to a few tens of thousands; 65k words of a few ids each stay under ~15 MB.
MAX_CACHED_WORDS = 1 << 16
# BertNormalizer's clean_text drops control characters (all of ASCII's but tab, newline and carriage
# return, which become spaces) before BertPreTokenizer splits at whitespace and isolates punctuation
# (every other visible ASCII character is punctuation to it).
_CONTROLS = dict.fromkeys([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_HAS_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9 \t\n\r]")
# The characters clean_text turns into spaces: every piece between them is tokenized on its own.
_SPACES = re.compile(r"[ \t\n\r]+")


class _Cached(dict[str, tuple[int, ...]]):
    """text -> its token ids, computed on first lookup; cleared when full."""

    def __init__(self, compute: Callable[[str], Sequence[int]]) -> None:
        super().__init__()
        self.compute = compute

    def __missing__(self, key: str) -> tuple[int, ...]:
        if len(self) >= MAX_CACHED_WORDS:
            self.clear()
        ids = self[key] = tuple(self.compute(key))
        return ids


class WordPieceWords:
    """The fast path for one tokenizer; see :func:`word_pieces_for`. Threads may share it (a word
    looked up by two at once is only computed twice)."""

    def __init__(self, tokenizer: Tokenizer, added: tuple[str, ...], max_tokens: int | None) -> None:
        model = tokenizer.model
        self._ids = _Cached(lambda word: [token.id for token in model.tokenize(word)])
        # A non-ASCII piece between spaces is tokenized whole by the tokenizer itself, once.
        self._pieces = _Cached(lambda piece: tokenizer.encode(piece, add_special_tokens=False).ids)
        self._added = added
        self._max_tokens = max_tokens

    def ids(self, text: str) -> list[int] | None:
        """The token ids the tokenizer gives `text` (no special tokens added), or None when only the
        tokenizer itself can tell.

        :param text: any text.
        :return: the ids, or None for a text this path does not cover.
        """
        if self._max_tokens is not None and len(text) > self._max_tokens:
            return None
        if text.isascii():  # a word yields at most one token per character, so a short text is never cut
            return self._ascii_ids(text)
        # The normalizer works character by character and the pre-tokenizer splits at every space,
        # so a text's ids are its pieces' ids one after the other.
        found: list[int] = []
        for piece in _SPACES.split(text):
            ascii_ids = self._ascii_ids(piece) if piece.isascii() else None
            found.extend(self._pieces[piece] if ascii_ids is None else ascii_ids)
        if self._max_tokens is not None and len(found) >= self._max_tokens:
            return None  # a character may have made several tokens (Hangul, some capitals): maybe cut
        return found

    def _ascii_ids(self, text: str) -> list[int] | None:
        if _HAS_CONTROL.search(text):
            text = text.translate(_CONTROLS)
        lowered = text.lower()
        if any(token in text or token in lowered for token in self._added):
            return None  # an added token is matched before normalising, as one token
        return list(chain.from_iterable(map(self._ids.__getitem__, _WORDS.findall(lowered))))


def word_pieces_for(tokenizer: Tokenizer) -> WordPieceWords | None:
    """The fast path for a tokenizer set up as BERT's uncased WordPiece tokenizers are, else None.

    The tokenizer must not be changed afterwards.

    :param tokenizer: the loaded tokenizer, truncation and padding as it will encode.
    :return: the word-by-word path, or None when the tokenizer is of another kind.
    """
    from tokenizers.models import WordPiece
    from tokenizers.normalizers import BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer

    normalizer, model = tokenizer.normalizer, tokenizer.model
    padding = tokenizer.padding
    if not (isinstance(normalizer, BertNormalizer) and normalizer.clean_text and normalizer.lowercase
            and isinstance(tokenizer.pre_tokenizer, BertPreTokenizer) and isinstance(model, WordPiece)
            and tokenizer.post_processor is None and (padding is None or padding["length"] == 0)):
        return None
    added = tuple(token.content for token in tokenizer.get_added_tokens_decoder().values())
    truncation = tokenizer.truncation
    return WordPieceWords(tokenizer, added, truncation["max_length"] if truncation is not None else None)
