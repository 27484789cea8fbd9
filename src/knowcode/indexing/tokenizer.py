"""The code-aware tokenizer shared by indexing and querying (it is part of the index format).

Identifiers are kept whole and also split into their camelCase / snake_case / kebab-case parts, all
lower-cased, and words are reduced to their Snowball stems, so "serialization" meets ``serialize``:
``parseHTTPResponses`` -> ``parsehttpresponses pars http respons``. A compound identifier is kept
whole unstemmed, so an exact symbol still matches best. Stop words are dropped from both sides, so
natural-language questions match code on their content words.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from itertools import chain

import Stemmer

# Bump when the output changes for any input: indexes built with another version are rebuilt.
TOKENIZER_VERSION = 3
MIN_TOKEN_CHARS = 2  # single letters (loop variables, `x`) match everything and rank nothing
MAX_TOKEN_CHARS = 64  # longer runs are hashes, base64 or minified noise
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*|\d+[A-Za-z_][A-Za-z0-9_]*")
# An acronym's plural (`URLs`, `IDs`) is one part, not `UR` + `Ls`: questions write "URLs" and code
# `getURLs`, and both mean what `url` means.
_PARTS = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# English function words common in questions; code keywords stay (`return`, `class` carry meaning).
STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "do", "does", "did", "for", "from",
    "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our",
    "should", "so", "than", "that", "the", "their", "them", "then", "there", "these", "this", "those",
    "to", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would",
    "you", "your",
})


_local = threading.local()  # PyStemmer objects are not thread-safe: one per thread


def _stem(word: str) -> str:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return str(stemmer.stemWord(word))


def _keep(token: str) -> bool:
    return MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS and token not in STOP_WORDS


@lru_cache(maxsize=1 << 16)
def _identifier_tokens(identifier: str) -> tuple[str, ...]:
    whole = identifier.strip("_$").lower()
    parts = [p.lower() for p in _PARTS.findall(identifier)]
    if len(parts) <= 1:
        return (_stem(whole),) if _keep(whole) else ()
    tokens = [whole] if _keep(whole) else []
    tokens.extend(_stem(part) for part in parts if _keep(part))
    return tuple(tokens)


def tokenize(text: str) -> list[str]:
    """Split text into lower-cased identifier tokens and identifier parts, in order.

    :param text: code, a path or a natural-language query.
    :return: tokens; repeated tokens are kept (BM25 counts them).
    """
    return list(chain.from_iterable(map(_identifier_tokens, _IDENTIFIER.findall(text))))


def token_set(text: str) -> set[str]:
    """``set(tokenize(text))``, built without the token list and tokenizing each identifier once.

    :param text: code or words.
    :return: its distinct tokens.
    """
    return set(chain.from_iterable(map(_identifier_tokens, set(_IDENTIFIER.findall(text)))))


@lru_cache(maxsize=1 << 16)
def _identifier_text(identifier: str) -> str:
    return " ".join(_identifier_tokens(identifier))


def token_text(text: str) -> str:
    """``" ".join(tokenize(text))``, the form chunks store, built without a Python loop per identifier
    (it is most of the tokenizing cost of a cold index run).

    :param text: a chunk's index text.
    :return: its tokens, space-joined.
    """
    return " ".join(filter(None, map(_identifier_text, _IDENTIFIER.findall(text))))
