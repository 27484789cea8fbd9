"""Token ids of ASCII texts for a BERT-style WordPiece tokenizer, one word at a time, cached by word.

Embedding an index's chunk heads was mostly the tokenizer's work (~100 us a 160-character head, 85% of
the dense leg's cost), and code repeats its words: a head is a path, a qualified name and a signature.
For an ASCII text, a tokenizer built of ``BertNormalizer`` (clean text, lower case), ``BertPreTokenizer``
and a ``WordPiece`` model gives the concatenation of its WordPiece model's ids for each word, where the
words are runs of letters and digits and every other visible character alone. This module splits the
words with one regular expression and asks the tokenizer's own WordPiece model (``model.tokenize``) for
each word once: the ids are the tokenizer's, ~6x faster. Any other text (non-ASCII, longer than the
truncation, holding an added token such as ``[UNK]``) and any other tokenizer go to the tokenizer itself.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer
    from tokenizers.models import WordPiece

# Words remembered before the cache starts over: a repository's chunk heads hold ~4k distinct words
# (zod, 5.4k heads) to a few tens of thousands; 65k words of a few ids each stay under ~15 MB.
MAX_CACHED_WORDS = 1 << 16
# BertNormalizer's clean_text drops control characters (all of ASCII's but tab, newline and carriage
# return, which become spaces) before BertPreTokenizer splits at whitespace and isolates punctuation
# (every other visible ASCII character is punctuation to it).
_CONTROLS = dict.fromkeys([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_HAS_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9 \t\n\r]")


class _WordIds(dict[str, tuple[int, ...]]):
    """word -> its WordPiece ids, computed on first lookup by the tokenizer's own model."""

    def __init__(self, model: WordPiece) -> None:
        super().__init__()
        self.model = model

    def __missing__(self, word: str) -> tuple[int, ...]:
        if len(self) >= MAX_CACHED_WORDS:
            self.clear()
        ids = self[word] = tuple(token.id for token in self.model.tokenize(word))
        return ids


class WordPieceWords:
    """The fast path for one tokenizer; see :func:`word_pieces_for`. Threads may share it (a word
    looked up by two at once is only computed twice)."""

    def __init__(self, model: WordPiece, added: tuple[str, ...], max_chars: int | None) -> None:
        self._ids = _WordIds(model)
        self._added = added
        self._max_chars = max_chars

    def ids(self, text: str) -> list[int] | None:
        """The token ids the tokenizer gives `text` (no special tokens added), or None when only the
        tokenizer itself can tell.

        :param text: any text.
        :return: the ids, or None for a text this path does not cover.
        """
        if not text.isascii() or (self._max_chars is not None and len(text) > self._max_chars):
            return None  # a word yields at most one token per character, so a short text is never cut
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
    return WordPieceWords(model, added, truncation["max_length"] if truncation is not None else None)
