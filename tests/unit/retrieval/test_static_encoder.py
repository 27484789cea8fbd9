"""The static encoder gives exactly the vectors model2vec itself gives, for the shipped model and others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from model2vec import StaticModel
from safetensors.numpy import save_file
from tokenizers import Tokenizer

from knowcode.retrieval.embeddings import STATIC_BATCH_SIZE, STATIC_MAX_TOKENS, STATIC_MODEL_DIR
from knowcode.retrieval.static_encoder import StaticEncoder, load_static_encoder

SOURCE_ROOT = Path(__file__).resolve().parents[3] / "src" / "knowcode"


def corpus() -> list[str]:
    """Texts of every shape an index embeds: real code heads and whole files, and the edge cases."""
    files = sorted(SOURCE_ROOT.rglob("*.py"))
    texts = [path.read_text(encoding="utf-8") for path in files]  # whole files: truncated to 512 tokens
    lines = [line for text in texts for line in text.splitlines()][:2500]  # > 2 batches of 1024
    # Long tokens first, others after: only model2vec's cut by characters (before the 512-token
    # truncation) keeps the second kind out of the mean.
    cut_matters = "information " * 300 + "banana split " * 300
    return [*texts, *lines, "", " ", "x", "x" * 5000, cut_matters, "naïve café — 日本語のコード 🚀",
            "\x00\x01", "[UNK]", "def add(a, b):\n    return a + b", "where are retries configured"]


def short_texts() -> list[str]:
    """Texts no longer than the token limit in characters, as queries and embedded chunk heads are."""
    return [text for text in corpus() if len(text) <= STATIC_MAX_TOKENS]


@pytest.fixture(scope="module")
def shipped() -> StaticEncoder:
    return load_static_encoder(STATIC_MODEL_DIR, STATIC_MAX_TOKENS)


@pytest.mark.parametrize("texts", [corpus(), short_texts()], ids=["all", "short"])
def test_shipped_model_vectors_equal_model2vec(shipped: StaticEncoder, texts: list[str]) -> None:
    reference = StaticModel.from_pretrained(STATIC_MODEL_DIR, normalize=True)
    theirs = reference.encode(texts, max_length=STATIC_MAX_TOKENS, batch_size=STATIC_BATCH_SIZE,
                              use_multiprocessing=False)
    ours = shipped.encode(texts, batch_size=STATIC_BATCH_SIZE)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)
    assert shipped.median_token_length == reference.median_token_length
    assert shipped.tokenizer.get_vocab_size(with_added_tokens=True) == len(reference.tokens)
    assert shipped.unk_token_id == reference.unk_token_id


def test_batches_do_not_change_vectors(shipped: StaticEncoder) -> None:
    texts = corpus()[:300]
    np.testing.assert_array_equal(shipped.encode(texts, batch_size=7), shipped.encode(texts, batch_size=1024))


def test_empty_text_is_a_zero_row(shipped: StaticEncoder) -> None:
    vectors = shipped.encode(["", "def f(): pass"], batch_size=STATIC_BATCH_SIZE)
    assert vectors.shape == (2, shipped.dim)
    assert not vectors[0].any()
    assert vectors[1].any()


@pytest.fixture(scope="module")
def quantised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vocabulary-quantised model (tokens share 50 rows, each token weighted), float32."""
    folder = tmp_path_factory.mktemp("quantised")
    tokenizer = Tokenizer.from_file(str(STATIC_MODEL_DIR / "tokenizer.json"))
    tokens = tokenizer.get_vocab_size()
    generator = np.random.default_rng(7)
    save_file({"embeddings": generator.standard_normal((50, 16)).astype(np.float32),
               "mapping": generator.integers(0, 50, tokens).astype(np.int64),
               "weights": generator.uniform(0.1, 2.0, tokens).astype(np.float32)},
              str(folder / "model.safetensors"))
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "config.json").write_text('{"model_type": "model2vec", "normalize": true}', encoding="utf-8")
    return folder


def test_quantised_model_vectors_equal_model2vec(quantised: Path) -> None:
    texts = corpus()[:400]
    reference = StaticModel.from_pretrained(quantised, normalize=True)
    theirs = reference.encode(texts, max_length=STATIC_MAX_TOKENS, use_multiprocessing=False)
    ours = load_static_encoder(quantised, STATIC_MAX_TOKENS).encode(texts, batch_size=STATIC_BATCH_SIZE)
    np.testing.assert_array_equal(ours, theirs)


def test_a_table_without_a_row_per_token_is_refused(tmp_path: Path) -> None:
    save_file({"embeddings": np.zeros((3, 4), dtype=np.float32)}, str(tmp_path / "model.safetensors"))
    Tokenizer.from_file(str(STATIC_MODEL_DIR / "tokenizer.json")).save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(ValueError, match="3 vectors"):
        load_static_encoder(tmp_path, STATIC_MAX_TOKENS)
