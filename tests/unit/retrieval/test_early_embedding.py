"""Chunk heads embedded while a first run parses: the same vectors the search-index build computes."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from knowcode.errors import EmbeddingError
from knowcode.indexing import index_repository
from knowcode.progress import Phase
from knowcode.retrieval.early_embedding import EarlyEmbedding
from knowcode.retrieval.embeddings import StaticEmbeddingProvider, Vectors
from knowcode.retrieval.search_index import (
    DENSE_TEXT_CHARS,
    load_search_index,
    start_early_embedding,
    update_search_index,
)
from knowcode.storage import Store
from knowcode.storage.store import ChunkRow
from tests.conftest import write_tree
from tests.unit.retrieval.test_search_index import REPO, CountingEmbedder


def _row(chunk_id: str, index_text: str) -> ChunkRow:
    return (chunk_id, "a.py", "e", 1, 1, index_text, index_text, "")


TEXTS = ["def alpha(value): return value + 1", "class Beta:\n    def run(self)", "", "x" * 400,
         "naïve façade — 日本語 ünïcode", "gamma " * 40, "a.b.c(d, e)"]


def test_vectors_are_the_providers_own_for_each_head() -> None:
    provider = StaticEmbeddingProvider()
    early = EarlyEmbedding(provider, head_chars=DENSE_TEXT_CHARS, batch=3)  # batches cut across files
    rows = [_row(f"c{i}", text) for i, text in enumerate(TEXTS)]
    early.add(rows[:2])
    early.add(rows[2:])
    vectors = early.vectors(lambda *_: None)
    expected = provider.embed([text[:DENSE_TEXT_CHARS] for text in TEXTS])  # one batch of every head
    assert sorted(vectors) == sorted(f"c{i}" for i in range(len(TEXTS)))
    for i in range(len(TEXTS)):
        assert np.array_equal(vectors[f"c{i}"], expected[i]), TEXTS[i]


def test_progress_ends_with_every_queued_chunk() -> None:
    early = EarlyEmbedding(CountingEmbedder(), head_chars=DENSE_TEXT_CHARS, batch=2)
    early.add([_row(f"c{i}", f"text {i}") for i in range(5)])
    calls: list[tuple[Phase, int, int | None]] = []
    early.vectors(lambda phase, done, total: calls.append((phase, done, total)))
    assert calls[0] == (Phase.EMBED, 0, 5)
    assert calls[-1] == (Phase.EMBED, 5, 5)
    assert all(phase is Phase.EMBED for phase, _, _ in calls)


class FailingEmbedder(CountingEmbedder):
    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        raise EmbeddingError("provider down")


def test_a_failing_provider_leaves_no_vectors() -> None:
    early = EarlyEmbedding(FailingEmbedder(), head_chars=DENSE_TEXT_CHARS, batch=2)
    early.add([_row("c0", "text")])
    assert early.vectors(lambda *_: None) == {}


class BlockingEmbedder(CountingEmbedder):
    """Embeds only once released, counting its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.calls = 0

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        self.calls += 1
        self.release.wait(10)
        return super().embed(texts, query=query)


def test_closing_drops_what_is_queued() -> None:
    provider = BlockingEmbedder()
    early = EarlyEmbedding(provider, head_chars=DENSE_TEXT_CHARS, batch=1)
    early.add([_row(f"c{i}", f"text {i}") for i in range(20)])
    early.close()
    provider.release.set()
    assert len(early.vectors(lambda *_: None)) <= 1  # at most the batch under way when it closed
    assert provider.calls <= 1
    early.add([_row("late", "text")])  # after closing: ignored, never raises
    assert "late" not in early.vectors(lambda *_: None)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", REPO)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / "store")
    yield opened
    opened.close()


def test_a_first_build_embeds_early_and_stores_what_a_plain_build_stores(repo: Path, store: Store,
                                                                         tmp_path: Path) -> None:
    provider = CountingEmbedder()
    early = start_early_embedding(store, provider)
    assert early is not None
    index_repository(repo, store, max_file_bytes=1 << 20, workers=1, on_chunks=early.add)
    update_search_index(store, tmp_path / "store", embedder=provider, k1=1.2, b=0.75, early=early)
    chunks = store.connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert len(provider.embedded) == chunks  # each head once, all of them by the early thread
    plain_dir = tmp_path / "plain"
    plain = Store.open(plain_dir)
    try:
        index_repository(repo, plain, max_file_bytes=1 << 20, workers=1)
        update_search_index(plain, plain_dir, embedder=CountingEmbedder(), k1=1.2, b=0.75)
        ours, theirs = load_search_index(store, tmp_path / "store"), load_search_index(plain, plain_dir)
    finally:
        plain.close()
    assert ours.dense is not None and theirs.dense is not None
    assert ours.dense.chunk_ids == theirs.dense.chunk_ids
    assert np.array_equal(ours.dense.matrix, theirs.dense.matrix)


def test_a_failed_early_embedding_is_reported_by_the_build(repo: Path, store: Store, tmp_path: Path) -> None:
    early = start_early_embedding(store, FailingEmbedder())
    assert early is not None
    index_repository(repo, store, max_file_bytes=1 << 20, workers=1, on_chunks=early.add)
    with pytest.raises(EmbeddingError, match="provider down"):
        update_search_index(store, tmp_path / "store", embedder=FailingEmbedder(), k1=1.2, b=0.75, early=early)


def test_only_a_store_without_search_index_embeds_early(repo: Path, store: Store, tmp_path: Path) -> None:
    assert start_early_embedding(store, None) is None  # vectors off
    index_repository(repo, store, max_file_bytes=1 << 20, workers=1)
    update_search_index(store, tmp_path / "store", embedder=CountingEmbedder(), k1=1.2, b=0.75)
    assert start_early_embedding(store, CountingEmbedder()) is None  # later runs reuse the vectors
    rebuilding = start_early_embedding(store, CountingEmbedder(), rebuild_vectors=True)
    assert rebuilding is not None  # every chunk is embedded again anyway
    rebuilding.close()
