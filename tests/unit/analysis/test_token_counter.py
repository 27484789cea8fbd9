"""The offline cl100k token counter: known counts, no network, and the encoding setting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from knowcode.analysis.token_counter import (
    DEFAULT_ENCODING,
    OFFLINE_ENCODINGS,
    RecentCounts,
    TiktokenCounter,
    TokenCounter,
    default_counter,
)


@pytest.mark.parametrize(("text", "tokens"), [
    ("", 0),
    ("tiktoken is great!", 6),  # OpenAI's cookbook example for cl100k_base
    ("hello world", 2),  # ids 15339, 1917
    ("def foo(bar):\n    return bar * 2\n", 11),
    ("antidisestablishmentarianism", 6),
    ("    \n\n", 1),
])
def test_known_cl100k_counts(text: str, tokens: int) -> None:
    assert default_counter().count(text) == tokens


def test_the_encoding_is_cl100k() -> None:
    counter = TiktokenCounter()
    assert counter.name == DEFAULT_ENCODING == "cl100k"
    assert counter._encoding.encode("hello world") == [15339, 1917]
    assert counter._encoding.n_vocab == 100277


def test_special_token_text_in_code_is_counted_as_ordinary_text() -> None:
    assert default_counter().count("<|endoftext|>") == 7  # not the single special token, and no error


def test_default_counter_is_shared_and_follows_the_protocol() -> None:
    counter: TokenCounter = default_counter()
    assert default_counter() is counter
    assert default_counter("cl100k") is counter


class _Calls:
    """One token per character, recording each text it is asked to count."""

    name = "fake"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return len(text)


def test_recent_counts_are_the_wrapped_counts_and_counted_once() -> None:
    calls = _Calls()
    counter = RecentCounts(calls, max_chars=100, max_text_chars=50)
    assert [counter.count(t) for t in ("ab", "abc", "ab", "abc")] == [2, 3, 2, 3]
    assert calls.texts == ["ab", "abc"]
    assert counter.kept_chars == 5
    assert counter.name == "fake"


def test_recent_counts_drop_the_least_recently_used_past_the_character_budget() -> None:
    calls = _Calls()
    counter = RecentCounts(calls, max_chars=10, max_text_chars=10)
    counter.count("aaaa")
    counter.count("bbbb")
    counter.count("aaaa")  # used again: "bbbb" is now the oldest
    counter.count("cccc")  # 12 characters: "bbbb" goes
    assert counter.kept_chars == 8
    counter.count("aaaa")
    counter.count("bbbb")
    assert calls.texts == ["aaaa", "bbbb", "cccc", "bbbb"]


def test_recent_counts_do_not_keep_a_text_longer_than_the_limit() -> None:
    calls = _Calls()
    counter = RecentCounts(calls, max_chars=100, max_text_chars=3)
    assert counter.count("abcd") == counter.count("abcd") == 4
    assert calls.texts == ["abcd", "abcd"]
    assert counter.kept_chars == 0


def test_the_shared_counter_keeps_exact_counts() -> None:
    counter = default_counter()
    assert isinstance(counter, RecentCounts)
    text = "def keep(counts):\n    return counts  # a text counted twice\n"
    assert counter.count(text) == counter.count(text) == TiktokenCounter().count(text)


def test_unknown_encoding_names_the_setting_and_the_choices() -> None:
    with pytest.raises(ValueError, match=r"token_encoding.*cl100k"):
        TiktokenCounter("o200k")
    assert set(OFFLINE_ENCODINGS) == {"cl100k"}


def test_counts_offline_with_no_cache_and_no_network(tmp_path: Path) -> None:
    script = ("from knowcode.analysis.token_counter import default_counter; "
              "print(default_counter().count('tiktoken is great!'))")
    env = {**os.environ, "HOME": str(tmp_path), "TIKTOKEN_CACHE_DIR": str(tmp_path),
           "XDG_CACHE_HOME": str(tmp_path), "NO_PROXY": "",
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}  # any download fails
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "6"
