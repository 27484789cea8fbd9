"""Chunk heads embedded while a first run parses: the same vectors the search-index build computes."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from knowcode.errors import EmbeddingError
from knowcode.indexing import index_repository, indexer
from knowcode.progress import Phase, ProgressCallback, no_progress
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


def _early(provider: CountingEmbedder | StaticEmbeddingProvider, batch: int,
           tmp_path: Path) -> EarlyEmbedding:
    return EarlyEmbedding(provider, head_chars=DENSE_TEXT_CHARS, batch=batch, spill_dir=tmp_path)


def _vectors(early: EarlyEmbedding, ids: Sequence[str], dimension: int,
             progress: ProgressCallback = no_progress) -> dict[str, np.ndarray]:
    """What `fill` wrote, by chunk id (rows it left alone are not in the answer)."""
    matrix = np.full((len(ids), dimension), np.nan, dtype=np.float32)
    filled = early.fill({cid: row for row, cid in enumerate(ids)}, matrix, progress)
    return {ids[row]: matrix[row] for row in filled}


TEXTS = ["def alpha(value): return value + 1", "class Beta:\n    def run(self)", "", "x" * 400,
         "naïve façade — 日本語 ünïcode", "gamma " * 40, "a.b.c(d, e)"]


def test_vectors_are_the_providers_own_for_each_head(tmp_path: Path) -> None:
    provider = StaticEmbeddingProvider()
    early = _early(provider, 3, tmp_path)  # batches cut across files
    rows = [_row(f"c{i}", text) for i, text in enumerate(TEXTS)]
    early.add(rows[:2])
    early.add(rows[2:])
    ids = [f"c{i}" for i in reversed(range(len(TEXTS)))] + ["unknown"]  # another order, one never added
    vectors = _vectors(early, ids, provider.dimension)
    early.close()
    expected = provider.embed([text[:DENSE_TEXT_CHARS] for text in TEXTS])  # one batch of every head
    assert sorted(vectors) == sorted(f"c{i}" for i in range(len(TEXTS)))
    for i in range(len(TEXTS)):
        assert np.array_equal(vectors[f"c{i}"], expected[i]), TEXTS[i]
    assert not list(tmp_path.iterdir())  # the vectors' file has no name


def test_progress_ends_with_every_queued_chunk(tmp_path: Path) -> None:
    early = _early(CountingEmbedder(), 2, tmp_path)
    early.add([_row(f"c{i}", f"text {i}") for i in range(5)])
    calls: list[tuple[Phase, int, int | None]] = []
    _vectors(early, [f"c{i}" for i in range(5)], CountingEmbedder.dimension,
             lambda phase, done, total: calls.append((phase, done, total)))
    assert calls[0] == (Phase.EMBED, 0, 5)
    assert calls[-1] == (Phase.EMBED, 5, 5)
    assert all(phase is Phase.EMBED for phase, _, _ in calls)


class FailingEmbedder(CountingEmbedder):
    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        raise EmbeddingError("provider down")


def test_a_failing_provider_leaves_no_vectors(tmp_path: Path) -> None:
    early = _early(FailingEmbedder(), 2, tmp_path)
    early.add([_row("c0", "text")])
    assert _vectors(early, ["c0"], CountingEmbedder.dimension) == {}


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


def test_closing_drops_what_is_queued(tmp_path: Path) -> None:
    provider = BlockingEmbedder()
    early = _early(provider, 1, tmp_path)
    ids = [f"c{i}" for i in range(20)]
    early.add([_row(cid, f"text {cid}") for cid in ids])
    early.close()
    provider.release.set()
    assert _vectors(early, ids, provider.dimension) == {}  # the batch under way when it closed is dropped
    assert provider.calls <= 1
    early.add([_row("late", "text")])  # after closing: ignored, never raises
    assert _vectors(early, ["late"], provider.dimension) == {}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", REPO)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / "store")
    yield opened
    opened.close()


@pytest.fixture
def parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parser workers even for the four files of REPO (early embedding runs only beside workers)."""
    monkeypatch.setattr(indexer, "PARALLEL_MIN_FILES", 1)


@pytest.mark.usefixtures("parallel")
def test_a_first_build_embeds_early_and_stores_what_a_plain_build_stores(repo: Path, store: Store,
                                                                         tmp_path: Path) -> None:
    provider = CountingEmbedder()
    early = start_early_embedding(store, tmp_path / "store", provider)
    assert early is not None
    index_repository(repo, store, max_file_bytes=1 << 20, workers=2, on_chunks=early.add)
    at_build = CountingEmbedder()  # the same model: the build may take the early vectors
    update_search_index(store, tmp_path / "store", embedder=at_build, k1=1.2, b=0.75, early=early)
    early.close()
    chunks = store.connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert len(provider.embedded) == chunks  # each head once, all of them by the early thread
    assert at_build.embedded == []
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


@pytest.mark.usefixtures("parallel")
def test_a_failed_early_embedding_is_reported_by_the_build(repo: Path, store: Store, tmp_path: Path) -> None:
    early = start_early_embedding(store, tmp_path / "store", FailingEmbedder())
    assert early is not None
    index_repository(repo, store, max_file_bytes=1 << 20, workers=2, on_chunks=early.add)
    with pytest.raises(EmbeddingError, match="provider down"):
        update_search_index(store, tmp_path / "store", embedder=FailingEmbedder(), k1=1.2, b=0.75,
                            early=early)
    early.close()


def test_only_a_store_without_search_index_embeds_early(repo: Path, store: Store, tmp_path: Path) -> None:
    assert start_early_embedding(store, tmp_path / "store", None) is None  # vectors off
    index_repository(repo, store, max_file_bytes=1 << 20, workers=1)
    update_search_index(store, tmp_path / "store", embedder=CountingEmbedder(), k1=1.2, b=0.75)
    later = start_early_embedding(store, tmp_path / "store", CountingEmbedder())
    assert later is None  # later runs reuse the vectors
    rebuilding = start_early_embedding(store, tmp_path / "store", CountingEmbedder(), rebuild_vectors=True)
    assert rebuilding is not None  # every chunk is embedded again anyway
    rebuilding.close()
