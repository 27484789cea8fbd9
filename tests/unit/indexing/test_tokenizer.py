"""The tokenizer: the space-joined form chunks store is exactly the joined token list."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from knowcode.indexing import tokenizer
from knowcode.indexing.tokenizer import token_set, token_text, tokenize


def test_identifiers_are_split_stemmed_and_stop_words_dropped() -> None:
    assert tokenize("parseHTTPResponses is the x") == ["parsehttpresponses", "pars", "http", "respons"]


def test_token_text_of_code_joins_its_tokens() -> None:
    code = "def load_config(path):\n    return Config.from_file(path)  # the __init__ of $el\n"
    assert token_text(code) == " ".join(tokenize(code))
    assert token_text("a of x") == ""  # every identifier dropped: no stray separators


@given(st.text(alphabet=st.sampled_from("aZ_$9 .\n-xYzeTtHe"), max_size=80))
def test_token_text_equals_joined_tokens(text: str) -> None:
    assert token_text(text) == " ".join(tokenize(text))


@given(st.text(alphabet=st.sampled_from("aZ_$9 .\n-xYzeTtHe"), max_size=80))
def test_token_set_is_the_set_of_the_tokens(text: str) -> None:
    assert token_set(text) == set(tokenize(text))


def test_an_acronym_plural_is_one_part() -> None:
    assert tokenize("URLs") == tokenize("url") == ["url"]
    assert tokenize("getURLs IDsForUser") == ["geturls", "get", "url", "idsforuser", "id", "user"]
    assert tokenize("HTTPServer") == ["httpserver", "http", "server"]  # no plural: split as before


# The identifier pattern as first written: the plain alternation the faster pattern must match exactly.
_ALTERNATION = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*|\d+[A-Za-z_][A-Za-z0-9_]*")


@given(st.text(alphabet=st.sampled_from("aZ_$09 .\n-(xY\u0660\u0967\uff11\u00e9\u4e2d\u212a"), max_size=80))
@example("Y0\u0660Y")  # an identifier ending in an ASCII digit, then a non-ASCII digit run (CI found it)
def test_identifier_pattern_matches_as_the_plain_alternation(text: str) -> None:
    # Arabic-Indic, Devanagari and fullwidth digits are `\d` to `re`, never a letter of an identifier
    assert tokenizer._IDENTIFIER.findall(text) == _ALTERNATION.findall(text)


def test_identifier_pattern_on_digit_runs() -> None:
    text = "12abc 3 x9 \u0661\u0662_q 0x1F $el 9$ a$b"
    assert tokenizer._IDENTIFIER.findall(text) == _ALTERNATION.findall(text) == [
        "12abc", "x9", "\u0661\u0662_q", "0x1F", "$el", "$", "a$b"]


def test_token_text_unchanged_when_the_caches_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    code = "parseHTTPResponses load_config loadConfig parseHTTPResponses the Config"
    expected = token_text(code)
    monkeypatch.setattr(tokenizer, "MAX_CACHED_TEXTS", 2)
    monkeypatch.setattr(tokenizer, "MAX_CACHED_STEMS", 2)
    tokenizer._IDENTIFIER_TEXTS.clear()
    tokenizer._STEMS.clear()
    tokenizer._identifier_tokens.cache_clear()  # so that every part is stemmed again
    assert token_text(code) == expected
    assert len(tokenizer._IDENTIFIER_TEXTS) <= 2 and len(tokenizer._STEMS) <= 2
