"""The word-by-word path gives exactly the shipped tokenizer's ids, or declines."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer
from tokenizers.pre_tokenizers import Whitespace

from knowcode.retrieval import word_pieces
from knowcode.retrieval.embeddings import STATIC_MAX_TOKENS, STATIC_MODEL_DIR
from knowcode.retrieval.word_pieces import WordPieceWords, word_pieces_for

SOURCE_ROOT = Path(__file__).resolve().parents[3] / "src" / "knowcode"


def _tokenizer() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(STATIC_MODEL_DIR / "tokenizer.json"))
    tokenizer.enable_truncation(STATIC_MAX_TOKENS)  # as load_static_encoder sets it up
    return tokenizer


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return _tokenizer()


@pytest.fixture(scope="module")
def fast(tokenizer: Tokenizer) -> WordPieceWords:
    found = word_pieces_for(tokenizer)
    assert found is not None
    return found


def _reference(tokenizer: Tokenizer, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False).ids)


def test_every_line_of_the_package_gets_the_tokenizers_ids(tokenizer: Tokenizer,
                                                           fast: WordPieceWords) -> None:
    lines = {line[:160] for path in sorted(SOURCE_ROOT.rglob("*.py"))
             for line in path.read_text(encoding="utf-8").splitlines()}
    covered = 0
    for line in sorted(lines):
        ids = fast.ids(line)
        if ids is not None:
            covered += 1
            assert ids == _reference(tokenizer, line), line
    assert covered > 0.95 * len(lines)


_ASCII = st.text(st.characters(max_codepoint=0x7F), max_size=200)
_MIXED = st.text(st.sampled_from([*"aZ1_. \t\n\r\x0b\x0c\x1c\u00a0\u0301éßİ日한🚀[UNK]"]), max_size=80)
_CODE_LIKE = st.text(st.sampled_from([*"abcXYZ019_$.:/()[]{}<>#'\"\\ \t\n\r\x00\x0b\x1f\x7f-+*=!?@^`~|,;&%"]),
                     max_size=200)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_ASCII, _CODE_LIKE, st.text(max_size=80), _MIXED))
def test_any_text_gets_the_tokenizers_ids_or_is_declined(text: str) -> None:
    tokenizer = _tokenizer()
    ids = word_pieces_for(tokenizer).ids(text)  # type: ignore[union-attr]
    if ids is not None:
        assert ids == _reference(tokenizer, text)


# "각" is three tokens (its jamo): 255 of them are cut at 512 tokens, so only the tokenizer can tell
@pytest.mark.parametrize("text", ["x [UNK] y", "[PAD]", "a" * 513, "각 " * 255])
def test_texts_only_the_tokenizer_can_tell_are_declined(fast: WordPieceWords, text: str) -> None:
    assert fast.ids(text) is None


@pytest.mark.parametrize("text", ["naïve café", "日本語のコード", "emoji 🚀 x", "Ünïcode [UNK] ﬁx",
                                  "İstanbul", "mixed\tß  ǅ\r\nend", "a\u00a0b c\u2003d", "e\u0301 ́x",
                                  "한국어 텍스트"])
def test_non_ascii_texts_get_the_tokenizers_ids(tokenizer: Tokenizer, fast: WordPieceWords,
                                                text: str) -> None:
    assert fast.ids(text) == _reference(tokenizer, text)


def test_controls_unknown_and_long_words_match(tokenizer: Tokenizer, fast: WordPieceWords) -> None:
    for text in ["", "   ", "a\x00b\x01c", "tab\there\r\nnext", "x" * 150, "~~~", "[unk]", "UPPER_case"]:
        assert fast.ids(text) == _reference(tokenizer, text), repr(text)


def test_other_tokenizers_get_no_fast_path(tokenizer: Tokenizer) -> None:
    other = Tokenizer.from_str(tokenizer.to_str())
    other.pre_tokenizer = Whitespace()  # splits differently: only the tokenizer knows how
    assert word_pieces_for(other) is None
    padded = Tokenizer.from_str(tokenizer.to_str())
    padded.enable_padding(length=8)  # a fixed length adds pad tokens the words do not have
    assert word_pieces_for(padded) is None


def test_the_word_cache_is_bounded(tokenizer: Tokenizer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(word_pieces, "MAX_CACHED_WORDS", 10)
    fast = word_pieces_for(tokenizer)
    assert fast is not None
    text = " ".join(f"word{n}" for n in range(50))
    assert fast.ids(text) == _reference(tokenizer, text)
    assert len(fast._ids) <= 10
