"""The derived search indexes: built once per store generation, swapped atomically, vectors reused."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from knowcode.errors import EmbeddingMismatchError, StoreError
from knowcode.indexing import index_repository
from knowcode.retrieval import search_index
from knowcode.retrieval.embeddings import EmbeddingSpec, Vectors
from knowcode.retrieval.search_index import (
    DENSE_TEXT_CHARS,
    SEARCH_DIR_KEY,
    SEARCH_GENERATION_KEY,
    SEARCH_PARAMS_KEY,
    load_search_index,
    update_search_index,
)
from knowcode.storage import Store
from tests.conftest import write_tree

REPO = {
    "alpha.py": "def alpha(value):\n    return value + 1\n",
    "beta.py": "class Beta:\n    def run(self):\n        return 'beta'\n",
    "gamma.js": "export function gamma(x) {\n  return x * 2;\n}\n",
    "notes.md": "# Notes\n\nAlpha, beta and gamma.\n",
}


class CountingEmbedder:
    """A deterministic fake provider that records every text it embeds."""

    provider = "fake"
    dimension = 8
    normalized = True

    def __init__(self, model: str = "counting-v1") -> None:
        self.model = model
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        if not query:
            self.embedded.extend(texts)
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            row = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return np.array(rows, dtype=np.float32).reshape(len(texts), self.dimension)


Build = Callable[..., bool]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", REPO)


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def store(store_dir: Path) -> Iterator[Store]:
    opened = Store.open(store_dir)
    yield opened
    opened.close()


@pytest.fixture
def build(repo: Path, store: Store, store_dir: Path) -> Build:
    """Re-index the repository into the store, then update its search indexes."""

    def run(embedder: CountingEmbedder | None, *, k1: float = 1.2, b: float = 0.75,
            rebuild_vectors: bool = False) -> bool:
        index_repository(repo, store, max_file_bytes=1 << 20, workers=1)
        return update_search_index(store, store_dir, embedder=embedder, k1=k1, b=b,
                                   rebuild_vectors=rebuild_vectors)

    return run


def edit(path: Path, text: str) -> None:
    """Rewrite a file and move its mtime, so the indexer sees the change whatever the clock's resolution."""
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 10**9, before + 10**9))


def search_folders(store_dir: Path) -> list[str]:
    return sorted(p.name for p in store_dir.glob("search-*"))


def chunk_texts(store: Store) -> dict[str, str]:
    return dict(store.connection.execute("SELECT id, index_text FROM chunks"))


# --- building and freshness ---------------------------------------------------------------------------


def test_first_build_writes_one_folder_and_records_it(build: Build, store: Store, store_dir: Path) -> None:
    assert build(CountingEmbedder()) is True
    meta = store.meta()
    [folder] = search_folders(store_dir)
    assert meta[SEARCH_DIR_KEY] == folder
    assert folder.startswith(f"search-{meta['content_generation']}-")
    assert meta[SEARCH_GENERATION_KEY] == meta["content_generation"]
    assert json.loads(meta[SEARCH_PARAMS_KEY]) == {"k1": 1.2, "b": 0.75, "dense_text_chars": DENSE_TEXT_CHARS}
    assert (store_dir / folder / "sparse").is_dir()
    assert (store_dir / folder / "dense").is_dir()


def test_nothing_changed_means_no_rebuild(build: Build, store: Store, store_dir: Path) -> None:
    embedder = CountingEmbedder()
    assert build(embedder) is True
    folders = search_folders(store_dir)
    embedded = len(embedder.embedded)
    assert build(embedder) is False
    assert build(embedder) is False
    assert search_folders(store_dir) == folders
    assert len(embedder.embedded) == embedded  # nothing embedded again


def test_loaded_index_matches_the_store(build: Build, store: Store, store_dir: Path) -> None:
    build(CountingEmbedder())
    index = load_search_index(store, store_dir)
    ids = sorted(chunk_texts(store))
    assert index.generation == int(store.meta()["content_generation"])
    assert sorted(index.sparse.chunk_ids) == ids
    assert index.dense is not None
    assert sorted(index.dense.chunk_ids) == ids
    assert index.dense.matrix.shape == (len(ids), CountingEmbedder.dimension)
    assert index.embedding == EmbeddingSpec("fake", "counting-v1", 8, True)
    assert index.sparse.search("alpha", 5)


def test_edit_writes_a_new_generation_and_deletes_the_old(
        build: Build, repo: Path, store: Store, store_dir: Path) -> None:
    embedder = CountingEmbedder()
    build(embedder)
    [old] = search_folders(store_dir)
    old_generation = store.meta()[SEARCH_GENERATION_KEY]
    edit(repo / "alpha.py", REPO["alpha.py"] + "\n\ndef omega():\n    return 'zebra'\n")
    assert build(embedder) is True
    [new] = search_folders(store_dir)
    assert new != old
    assert not (store_dir / old).exists()
    assert store.meta()[SEARCH_DIR_KEY] == new
    assert int(store.meta()[SEARCH_GENERATION_KEY]) == int(old_generation) + 1
    assert new.startswith(f"search-{int(old_generation) + 1}-")
    index = load_search_index(store, store_dir)
    assert index.sparse.search("zebra", 5)  # the new text is searchable


def test_stray_folder_of_a_dead_run_is_deleted_by_the_next_build(
        build: Build, repo: Path, store_dir: Path) -> None:
    build(None)
    stray = store_dir / "search-99-deadbeef"
    (stray / "sparse").mkdir(parents=True)
    edit(repo / "beta.py", REPO["beta.py"] + "\n# more\n")
    assert build(None) is True
    assert not stray.exists()
    assert len(search_folders(store_dir)) == 1


@pytest.mark.parametrize(("k1", "b"), [(2.0, 0.75), (1.2, 0.3), (0.5, 1.0)])
def test_changing_bm25_parameters_rebuilds(build: Build, store: Store, store_dir: Path,
                                           k1: float, b: float) -> None:
    embedder = CountingEmbedder()
    build(embedder)
    [old] = search_folders(store_dir)
    embedded = len(embedder.embedded)
    assert build(embedder, k1=k1, b=b) is True
    [new] = search_folders(store_dir)
    assert new != old
    assert json.loads(store.meta()[SEARCH_PARAMS_KEY]) == {"k1": k1, "b": b,
                                                            "dense_text_chars": DENSE_TEXT_CHARS}
    assert build(embedder, k1=k1, b=b) is False
    assert len(embedder.embedded) == embedded  # the vectors did not change: all reused


def test_a_new_embedded_text_length_re_embeds_everything(build: Build, store_dir: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = CountingEmbedder()
    build(embedder)
    first = list(embedder.embedded)
    monkeypatch.setattr(search_index, "DENSE_TEXT_CHARS", DENSE_TEXT_CHARS // 2)
    assert build(embedder) is True  # nothing else changed, yet the vectors are stale
    again = embedder.embedded[len(first):]
    assert len(again) == len(first)
    assert all(len(text) <= DENSE_TEXT_CHARS // 2 for text in again)


def test_bm25_parameters_change_the_scores(build: Build, store: Store, store_dir: Path) -> None:
    build(None)
    before = load_search_index(store, store_dir).sparse.search("alpha beta", 10)
    build(None, k1=3.0, b=0.0)
    after = load_search_index(store, store_dir).sparse.search("alpha beta", 10)
    assert [score for _, score in before] != pytest.approx([score for _, score in after])


# --- embedding model changes ----------------------------------------------------------------------------


def test_another_embedding_model_is_refused(build: Build, store: Store, store_dir: Path) -> None:
    build(CountingEmbedder("counting-v1"))
    [current] = search_folders(store_dir)
    with pytest.raises(EmbeddingMismatchError, match="rebuild-vectors"):
        build(CountingEmbedder("counting-v2"))
    assert store.meta()[SEARCH_DIR_KEY] == current  # the working index is kept
    index = load_search_index(store, store_dir)
    assert index.embedding is not None and index.embedding.model == "counting-v1"


def test_rebuild_vectors_switches_the_model(build: Build, store: Store, store_dir: Path) -> None:
    build(CountingEmbedder("counting-v1"))
    with pytest.raises(EmbeddingMismatchError):
        build(CountingEmbedder("counting-v2"))
    other = CountingEmbedder("counting-v2")
    assert build(other, rebuild_vectors=True) is True
    assert sorted(other.embedded) == sorted(chunk_texts(store).values())  # every chunk embedded again
    index = load_search_index(store, store_dir)
    assert index.embedding == EmbeddingSpec("fake", "counting-v2", 8, True)
    assert len(search_folders(store_dir)) == 1  # the stray folder of the refused build is gone
    assert build(other) is False  # and the new model is now the current one


def test_rebuild_vectors_always_rebuilds(build: Build, store: Store) -> None:
    embedder = CountingEmbedder()
    build(embedder)
    embedder.embedded.clear()
    assert build(embedder, rebuild_vectors=True) is True
    assert sorted(embedder.embedded) == sorted(chunk_texts(store).values())


def test_vectors_switched_off_then_on(build: Build, store: Store, store_dir: Path) -> None:
    build(None)
    assert load_search_index(store, store_dir).dense is None
    assert load_search_index(store, store_dir).embedding is None
    embedder = CountingEmbedder()
    assert build(embedder) is True  # same content, but vectors are wanted now
    assert sorted(embedder.embedded) == sorted(chunk_texts(store).values())
    assert load_search_index(store, store_dir).dense is not None
    assert build(None) is True  # and switched off again
    assert load_search_index(store, store_dir).dense is None


# --- vector reuse ---------------------------------------------------------------------------------------


def test_first_build_embeds_every_chunk_once(build: Build, store: Store) -> None:
    embedder = CountingEmbedder()
    build(embedder)
    assert sorted(embedder.embedded) == sorted(chunk_texts(store).values())


def test_only_new_chunks_are_embedded_after_an_edit(build: Build, repo: Path, store: Store,
                                                    store_dir: Path) -> None:
    embedder = CountingEmbedder()
    build(embedder)
    before = chunk_texts(store)
    embedder.embedded.clear()
    edit(repo / "alpha.py", "import os\n\n\n" + REPO["alpha.py"])  # its lines move: new chunk ids
    assert build(embedder) is True
    after = chunk_texts(store)
    new_ids = set(after) - set(before)
    assert new_ids and all(cid in after for cid in new_ids)
    assert sorted(embedder.embedded) == sorted(after[cid] for cid in new_ids)
    assert all("alpha.py" in text for text in embedder.embedded)  # nothing from the untouched files
    index = load_search_index(store, store_dir)
    assert index.dense is not None
    fresh = CountingEmbedder()
    for cid, text in after.items():  # every row, reused or new, is the vector of its chunk's text
        assert np.allclose(index.dense.vectors_for([cid])[cid], fresh.embed([text])[0])


def test_an_added_file_embeds_only_its_chunks(build: Build, repo: Path, store: Store) -> None:
    embedder = CountingEmbedder()
    build(embedder)
    embedder.embedded.clear()
    write_tree(repo, {"delta.py": "def delta():\n    return 'delta'\n"})
    assert build(embedder) is True
    assert len(embedder.embedded) == 1
    assert embedder.embedded[0].startswith("delta.py\n")


def test_a_deleted_file_embeds_nothing(build: Build, repo: Path, store: Store, store_dir: Path) -> None:
    embedder = CountingEmbedder()
    build(embedder)
    embedder.embedded.clear()
    (repo / "gamma.js").unlink()
    assert build(embedder) is True
    assert embedder.embedded == []
    index = load_search_index(store, store_dir)
    assert index.dense is not None
    assert sorted(index.dense.chunk_ids) == sorted(chunk_texts(store))


def test_an_edit_within_the_same_lines_is_embedded_again(build: Build, repo: Path, store: Store,
                                                         store_dir: Path) -> None:
    embedder = CountingEmbedder()
    build(embedder)
    embedder.embedded.clear()
    edit(repo / "alpha.py", "def alpha(value):\n    return banana_split(value)\n")  # same two lines
    assert build(embedder) is True
    [changed] = [text for text in chunk_texts(store).values() if "banana_split" in text]
    index = load_search_index(store, store_dir)
    assert index.sparse.search("banana_split", 5)  # BM25 sees the new text ...
    assert embedder.embedded == [changed]  # ... and so should the dense leg


# --- loading --------------------------------------------------------------------------------------------


def test_loading_before_any_build_is_a_store_error(store: Store, store_dir: Path) -> None:
    with pytest.raises(StoreError, match="knowcode index"):
        load_search_index(store, store_dir)


def test_loading_after_indexing_without_search_index_is_a_store_error(
        repo: Path, store: Store, store_dir: Path) -> None:
    index_repository(repo, store, max_file_bytes=1 << 20, workers=1)
    with pytest.raises(StoreError):
        load_search_index(store, store_dir)


def test_loading_a_recorded_but_missing_folder_is_a_store_error(
        build: Build, store: Store, store_dir: Path) -> None:
    build(None)
    [folder] = search_folders(store_dir)
    shutil.rmtree(store_dir / folder)
    with pytest.raises(StoreError):
        load_search_index(store, store_dir)


def test_missing_folder_is_rebuilt_even_if_nothing_changed(build: Build, store_dir: Path) -> None:
    build(None)
    [folder] = search_folders(store_dir)
    shutil.rmtree(store_dir / folder)
    assert build(None) is True
    assert len(search_folders(store_dir)) == 1
