"""The tokenizer: the space-joined form chunks store is exactly the joined token list."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

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
