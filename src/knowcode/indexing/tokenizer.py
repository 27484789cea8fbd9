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
# An identifier ([A-Za-z_$][A-Za-z0-9_$]*) or a digit run glued to one (\d+[A-Za-z_][A-Za-z0-9_]*).
# Written with one character class first, then a lookbehind choosing the branch (the two first-character
# sets are disjoint, so it matches exactly what the plain alternation matches): `re` then skips every
# character that cannot start a token in C instead of trying both branches there, which cut the scan
# of abseil's chunks by ~25% (a test compares it with the alternation on random text). A digit branch
# starts only at a digit run's first digit (a later start fails wherever the first does): tried at every
# digit, a 20,000-digit run took 2.5 s, each start scanning the rest of the run for a letter. Or where a
# non-ASCII digit (`\d` to `re`: Arabic-Indic, fullwidth) follows an ASCII one, which may have ended the
# identifier before it (`Y0` then `\u0660Y`): such runs are tried at each such boundary, as before.
_IDENTIFIER = re.compile(r"[A-Za-z_$\d](?:(?<=[A-Za-z_$])[A-Za-z0-9_$]*"
                         r"|(?:(?<=\d)(?<!\d\d)|(?<=[0-9][^\x00-\x7f]))\d*[A-Za-z_][A-Za-z0-9_]*)")
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

# Words whose stems are kept before the cache starts again (the stemmer's own cache holds 10,000; a
# cold index of abseil stems ~20k distinct identifier parts).
MAX_CACHED_STEMS = 1 << 16


class _Stems(dict[str, str]):
    """Word -> its Snowball stem, filled on first lookup and emptied when full: a hit is one dict
    lookup instead of a call that finds the thread's stemmer and asks its cache."""

    def __missing__(self, word: str) -> str:
        stemmer = getattr(_local, "stemmer", None)
        if stemmer is None:
            stemmer = _local.stemmer = Stemmer.Stemmer("english")
        if len(self) >= MAX_CACHED_STEMS:
            self.clear()
        stem = self[word] = str(stemmer.stemWord(word))
        return stem


_STEMS = _Stems()  # shared by a process's threads: the stemmer is per thread, the dict's stores atomic


def _keep(token: str) -> bool:
    return MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS and token not in STOP_WORDS


@lru_cache(maxsize=1 << 16)
def _identifier_tokens(identifier: str) -> tuple[str, ...]:
    whole = identifier.strip("_$").lower()
    parts = _PARTS.findall(identifier)
    if len(parts) <= 1:
        return (_STEMS[whole],) if _keep(whole) else ()
    tokens = [whole] if _keep(whole) else []
    tokens.extend(_STEMS[part] for part in map(str.lower, parts) if _keep(part))
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


# Identifiers whose joined tokens are kept before the cache starts again: the size of the tokens'
# own lru_cache, which a large repository's distinct identifiers (abseil: 47k) stay within.
MAX_CACHED_TEXTS = 1 << 16


class _IdentifierTexts(dict[str, str]):
    """Identifier -> its tokens, space-joined, filled on first lookup and emptied when full.

    A dict rather than an lru_cache: ``map(texts.__getitem__, ...)`` costs a hash lookup per
    identifier, an lru_cache call ~4x as much, and a cold index looks up every identifier of every
    chunk (1.2M on abseil). Emptying it at the bound changes no output, only what is recomputed.
    """

    def __missing__(self, identifier: str) -> str:
        if len(self) >= MAX_CACHED_TEXTS:
            self.clear()
        text = self[identifier] = " ".join(_identifier_tokens(identifier))
        return text


# Shared by the threads of a process: a dict's lookups and stores are atomic, and two threads that
# miss on one identifier at once store the same text.
_IDENTIFIER_TEXTS = _IdentifierTexts()


def token_text(text: str) -> str:
    """``" ".join(tokenize(text))``, the form chunks store, built without a Python loop per identifier
    (it is most of the tokenizing cost of a cold index run).

    :param text: a chunk's index text.
    :return: its tokens, space-joined.
    """
    return " ".join(filter(None, map(_IDENTIFIER_TEXTS.__getitem__, _IDENTIFIER.findall(text))))
