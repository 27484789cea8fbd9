"""Chunk heads embedded by the parser workers of a first run: the vectors the search-index build computes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from knowcode.indexing import index_repository, indexer
from knowcode.indexing.file_parser import ParsedFile, parse_file
from knowcode.indexing.indexer import ChunkWork
from knowcode.indexing.scanner import scan
from knowcode.retrieval.early_embedding import EarlyEmbedding, HeadVectors
from knowcode.retrieval.embeddings import STATIC_MODEL_DIR, StaticEmbeddingProvider, Vectors
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

TEXTS = ["def alpha(value): return value + 1", "class Beta:\n    def run(self)", "", "x" * 400,
         "naïve façade — 日本語 ünïcode", "gamma " * 40, "a.b.c(d, e)"]


def _row(chunk_id: str, index_text: str) -> ChunkRow:
    return (chunk_id, "a.py", "e", 1, 1, index_text, index_text, "")


def test_a_workers_vectors_are_the_providers_own_for_each_head() -> None:
    provider = StaticEmbeddingProvider()
    rows = [_row(f"c{i}", text) for i, text in enumerate(TEXTS)]
    work = HeadVectors(STATIC_MODEL_DIR, DENSE_TEXT_CHARS)
    by_file = work(rows[:2]) + work(rows[2:])  # two files: batches unlike the build's
    expected = provider.embed([text[:DENSE_TEXT_CHARS] for text in TEXTS])  # one batch of every head
    assert by_file == np.ascontiguousarray(expected, dtype=np.float32).tobytes()
    assert work([]) == b""


def test_received_vectors_fill_their_rows_in_any_order(tmp_path: Path) -> None:
    provider = StaticEmbeddingProvider()
    early = EarlyEmbedding(provider, head_chars=DENSE_TEXT_CHARS, spill_dir=tmp_path)
    rows = [_row(f"c{i}", text) for i, text in enumerate(TEXTS)]
    early.receive(rows[:3], early.work(rows[:3]))
    early.receive(rows[3:], early.work(rows[3:]))
    early.receive([_row("bad", "text")], b"short")  # malformed: dropped, the build embeds it
    early.receive([_row("none", "text")], None)
    ids = ["unknown", *reversed([f"c{i}" for i in range(len(TEXTS))]), "bad", "none"]
    matrix = np.full((len(ids), provider.dimension), np.nan, dtype=np.float32)
    filled = early.fill({cid: row for row, cid in enumerate(ids)}, matrix, batch=2)
    early.close()
    expected = provider.embed([text[:DENSE_TEXT_CHARS] for text in TEXTS])
    assert filled == set(range(1, len(TEXTS) + 1))
    for row in filled:
        assert np.array_equal(matrix[row], expected[int(ids[row][1:])])
    assert np.isnan(matrix[[0, len(ids) - 2, len(ids) - 1]]).all()
    assert not list(tmp_path.iterdir())  # the vectors' file has no name


def test_failed_chunk_work_leaves_the_file_parsed(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", REPO)
    scanned = next(f for f in scan(repo).files if f.path == "alpha.py")
    parsed = parse_file(repo, scanned, chunk_work=HeadVectors(tmp_path / "no-model", DENSE_TEXT_CHARS))
    assert isinstance(parsed, ParsedFile)
    assert parsed.chunks and parsed.chunk_work is None
    assert parse_file(repo, scanned) == parsed


class CountingStatic(StaticEmbeddingProvider):
    """The static model, counting what this process embeds (the workers load their own)."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        self.embedded.extend(texts)
        return super().embed(texts, query=query)


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
    """Parser workers even for the four files of REPO (they embed only when workers parse)."""
    monkeypatch.setattr(indexer, "PARALLEL_MIN_FILES", 1)


@pytest.mark.usefixtures("parallel")
def test_a_first_build_takes_the_workers_vectors_and_stores_what_a_plain_build_stores(
        repo: Path, store: Store, tmp_path: Path) -> None:
    provider = CountingStatic()
    early = start_early_embedding(store, tmp_path / "store", provider)
    assert early is not None
    index_repository(repo, store, max_file_bytes=1 << 20, workers=2,
                     chunk_work=ChunkWork(early.work, early.receive))
    update_search_index(store, tmp_path / "store", embedder=provider, k1=1.2, b=0.75, early=early)
    early.close()
    assert provider.embedded == []  # every head came from the workers
    plain_dir = tmp_path / "plain"
    plain = Store.open(plain_dir)
    try:
        index_repository(repo, plain, max_file_bytes=1 << 20, workers=1)
        update_search_index(plain, plain_dir, embedder=StaticEmbeddingProvider(), k1=1.2, b=0.75)
        ours, theirs = load_search_index(store, tmp_path / "store"), load_search_index(plain, plain_dir)
    finally:
        plain.close()
    assert ours.dense is not None and theirs.dense is not None
    assert ours.dense.chunk_ids == theirs.dense.chunk_ids
    assert np.array_equal(ours.dense.matrix, theirs.dense.matrix)


def test_chunks_without_early_vectors_are_embedded_by_the_build(repo: Path, store: Store,
                                                                tmp_path: Path) -> None:
    provider = CountingStatic()
    early = start_early_embedding(store, tmp_path / "store", provider)
    assert early is not None
    index_repository(repo, store, max_file_bytes=1 << 20, workers=1,  # serial: no worker embeds
                     chunk_work=ChunkWork(early.work, early.receive))
    update_search_index(store, tmp_path / "store", embedder=provider, k1=1.2, b=0.75, early=early)
    early.close()
    chunks = store.connection.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert len(provider.embedded) == chunks


def test_only_a_first_build_with_the_static_model_embeds_early(repo: Path, store: Store,
                                                               tmp_path: Path) -> None:
    assert start_early_embedding(store, tmp_path / "store", None) is None  # vectors off
    assert start_early_embedding(store, tmp_path / "store", CountingEmbedder()) is None  # no worker model
    index_repository(repo, store, max_file_bytes=1 << 20, workers=1)
    update_search_index(store, tmp_path / "store", embedder=StaticEmbeddingProvider(), k1=1.2, b=0.75)
    later = start_early_embedding(store, tmp_path / "store", StaticEmbeddingProvider())
    assert later is None  # later runs reuse the stored vectors
    rebuilding = start_early_embedding(store, tmp_path / "store", StaticEmbeddingProvider(),
                                       rebuild_vectors=True)
    assert rebuilding is not None  # every chunk is embedded again anyway
    rebuilding.close()
