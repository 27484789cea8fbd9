"""The derived search indexes: built once per store generation, swapped atomically, vectors reused."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from knowcode.errors import EmbeddingError, EmbeddingMismatchError, StoreError
from knowcode.indexing import index_repository
from knowcode.indexing.indexer import EXTRACTION_VERSION
from knowcode.retrieval import search_index
from knowcode.retrieval.embeddings import EmbeddingSpec, Vectors
from knowcode.retrieval.hybrid_index import reciprocal_rank_fusion
from knowcode.retrieval.search_index import (
    DENSE_TEXT_CHARS,
    SEARCH_DIR_KEY,
    SEARCH_GENERATION_KEY,
    SEARCH_PARAMS_KEY,
    load_search_index,
    update_search_index,
)
from knowcode.retrieval.segments import Manifest, MergePolicy, read_ids
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
    assert json.loads(meta[SEARCH_PARAMS_KEY]) == {"k1": 1.2, "b": 0.75, "dense_text_chars": DENSE_TEXT_CHARS,
                                                    "extraction_version": EXTRACTION_VERSION}
    [segment] = _manifest(store_dir).segments  # one segment: a scratch build
    names = {p.name for p in (store_dir / folder).iterdir()}
    assert {f"{segment.name}.ids.json", f"{segment.name}.vectors.npy", f"{segment.name}.docs.npy"} <= names
    assert {"manifest.json", "embedding.json"} <= names
    assert not any(p.is_dir() for p in (store_dir / folder).iterdir())  # one folder: one rmdir to delete


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
    assert index.dense.matrix.shape == (len(ids), CountingEmbedder.dimension)  # live rows only
    assert index.embedding == EmbeddingSpec("fake", "counting-v1", 8, True)
    assert index.sparse.search("alpha", 5)


def test_each_row_holds_the_vector_of_its_own_chunk_head(build: Build, repo: Path, store: Store,
                                                         store_dir: Path) -> None:
    embedder = CountingEmbedder()
    build(embedder)
    edit(repo / "beta.py", "class Beta:\n    def run(self):\n        return 'changed'\n")
    build(embedder, rebuild_vectors=False)
    index = load_search_index(store, store_dir)
    assert index.dense is not None
    texts = chunk_texts(store)
    for chunk_id, vector in zip(index.dense.chunk_ids, index.dense.matrix, strict=True):  # reused and new
        assert np.array_equal(vector, CountingEmbedder().embed([texts[chunk_id][:DENSE_TEXT_CHARS]])[0])


class ShortEmbedder(CountingEmbedder):
    """A provider that answers one vector short."""

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        return super().embed(texts[1:], query=query)


def test_a_provider_answering_the_wrong_number_of_vectors_is_an_embedding_error(build: Build) -> None:
    with pytest.raises(EmbeddingError, match="returned 3 vectors of 8 dimensions for 4 texts"):
        build(ShortEmbedder())


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
                                                            "dense_text_chars": DENSE_TEXT_CHARS,
                                                            "extraction_version": EXTRACTION_VERSION}
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


def test_a_new_shipped_static_model_re_embeds_on_its_own(build: Build, store: Store, store_dir: Path) -> None:
    """An upgrade that ships another static model must not leave every index refusing to load."""
    old = CountingEmbedder("distilled-v1")
    old.provider = "static"
    build(old)
    new = CountingEmbedder("distilled-v2")
    new.provider = "static"
    assert build(new) is True
    assert sorted(new.embedded) == sorted(chunk_texts(store).values())  # every chunk embedded again
    assert load_search_index(store, store_dir).embedding == EmbeddingSpec("static", "distilled-v2", 8, True)


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


# --- incremental updates rank exactly as a scratch build --------------------------------------------------

WORDS = ["parse", "config", "render", "page", "cache", "token", "stream", "socket", "header", "cookie",
         "thread", "pool", "queue", "worker", "retry", "timeout", "buffer", "decode", "encode", "path"]
# Never rebuilds, and merges the deltas every third update: every step below takes the incremental path.
DELTAS_ONLY = MergePolicy(rebuild_fraction=1e9, max_deltas=3)


def _module(seed: int, functions: int = 4) -> str:
    rng = random.Random(seed)
    parts = []
    for j in range(functions):
        words = rng.sample(WORDS, 3)
        body = " ".join(rng.choices(WORDS, k=rng.randint(1, 12)))
        parts.append(f"def {words[0]}_{words[1]}_{j}({words[2]}):\n    \"\"\"{body}.\"\"\"\n"
                     f"    return {words[2]}.{rng.choice(WORDS)}()\n\n\n")
    return "".join(parts)


def _steps(root: Path) -> Iterator[str]:
    """Edit the tree step by step (edits, same-line edits, adds, deletes, renames), naming each step."""
    edit(root / "m03.py", _module(1003, functions=6))
    yield "edit"
    write_tree(root, {f"new/n{i}.py": _module(2000 + i) for i in range(3)})
    yield "add"
    (root / "m05.py").unlink()
    (root / "new/n1.py").unlink()
    yield "delete"
    (root / "m07.py").rename(root / "moved_m07.py")
    yield "rename"
    text = (root / "m09.py").read_text()
    edit(root / "m09.py", text.replace("return", "return  ", 1))  # the same lines, new text
    yield "same-line edit"
    edit(root / "new/n0.py", _module(3000))
    write_tree(root, {"new/n9.py": _module(3001)})
    (root / "m11.py").unlink()
    yield "edit, add and delete"
    yield "nothing"
    edit(root / "m03.py", _module(3))  # back to its first content
    yield "revert"


def _queries() -> list[str]:
    rng = random.Random(5)
    return [*WORDS, *(" ".join(rng.sample(WORDS, rng.randint(2, 4))) for _ in range(40))]


def _assert_same_rankings(updated: search_index.SearchIndex, scratch: search_index.SearchIndex,
                          embedder: CountingEmbedder, step: str) -> None:
    assert sorted(updated.sparse.chunk_ids) == sorted(scratch.sparse.chunk_ids), step
    assert updated.dense is not None and scratch.dense is not None
    for query in _queries():
        expected, found = scratch.sparse.search(query, 30), updated.sparse.search(query, 30)
        assert [c for c, _ in found] == [c for c, _ in expected], (step, query)
        assert [s for _, s in found] == pytest.approx([s for _, s in expected], rel=1e-9), (step, query)
        vector = embedder.embed([query], query=True)[0]
        dense_expected, dense_found = scratch.dense.search(vector, 30), updated.dense.search(vector, 30)
        assert [c for c, _ in dense_found] == [c for c, _ in dense_expected], (step, query)
        # float32 dot products: BLAS may sum a row in another order when the matrix has another shape
        assert [s for _, s in dense_found] == pytest.approx([s for _, s in dense_expected], abs=1e-6)
        known = set(scratch.sparse.chunk_ids)
        fused = [reciprocal_rank_fusion([c for c, _ in sides[0]], [c for c, _ in sides[1]], alpha=0.2,
                                        known=known, limit=10)
                 for sides in ((found, dense_found), (expected, dense_expected))]
        assert fused[0] == fused[1], (step, query)


def test_incremental_updates_rank_exactly_as_a_scratch_build(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "tree", {f"m{i:02}.py": _module(i) for i in range(24)})
    embedder = CountingEmbedder()
    kept = Store.open(tmp_path / "kept")
    segment_counts = []
    try:
        index_repository(root, kept, max_file_bytes=1 << 20, workers=1)
        update_search_index(kept, tmp_path / "kept", embedder=embedder, k1=1.2, b=0.75)
        for number, step in enumerate(_steps(root)):
            index_repository(root, kept, max_file_bytes=1 << 20, workers=1)
            update_search_index(kept, tmp_path / "kept", embedder=embedder, k1=1.2, b=0.75,
                                policy=DELTAS_ONLY)
            segment_counts.append(len(_manifest(tmp_path / "kept").segments))
            scratch_dir = tmp_path / f"scratch{number}"
            scratch = Store.open(scratch_dir)
            try:
                index_repository(root, scratch, max_file_bytes=1 << 20, workers=1)
                update_search_index(scratch, scratch_dir, embedder=CountingEmbedder(), k1=1.2, b=0.75)
                _assert_same_rankings(load_search_index(kept, tmp_path / "kept"),
                                      load_search_index(scratch, scratch_dir), embedder, step)
            finally:
                scratch.close()
    finally:
        kept.close()
    assert max(segment_counts) == 1 + DELTAS_ONLY.max_deltas  # deltas were appended...
    assert 2 in segment_counts[segment_counts.index(max(segment_counts)):]  # ...and merged into one


# --- what an incremental update writes --------------------------------------------------------------------


def _manifest(store_dir: Path) -> Manifest:
    [folder] = search_folders(store_dir)
    manifest = Manifest.load(store_dir / folder)
    assert manifest is not None
    return manifest


def _files(folder: Path) -> dict[str, os.stat_result]:
    return {p.relative_to(folder).as_posix(): p.stat() for p in folder.rglob("*") if p.is_file()}


def test_a_one_file_edit_links_the_main_segment_and_adds_a_small_one(
        repo: Path, store: Store, store_dir: Path) -> None:
    write_tree(repo, {f"more/m{i}.py": _module(i) for i in range(30)})  # big enough for a delta
    index_repository(repo, store, max_file_bytes=1 << 20, workers=1)
    update_search_index(store, store_dir, embedder=CountingEmbedder(), k1=1.2, b=0.75)
    [before] = search_folders(store_dir)
    old_files = _files(store_dir / before)
    [main] = _manifest(store_dir).segments
    edit(repo / "more/m3.py", _module(103))
    index_repository(repo, store, max_file_bytes=1 << 20, workers=1)
    embedder = CountingEmbedder()
    assert update_search_index(store, store_dir, embedder=embedder, k1=1.2, b=0.75) is True
    [after] = search_folders(store_dir)
    kept, added = _manifest(store_dir).segments
    assert kept.name == main.name and kept.deleted  # the edited file's old chunks are tombstoned
    new_ids = set(chunk_texts(store)) - set(read_ids(store_dir / after, kept))
    assert added.rows == len(new_ids) == len(embedder.embedded)  # only the new chunks, embedded once
    for name, stat in _files(store_dir / after).items():
        if name.startswith(main.name):  # the same files (inodes), not copies: nothing rewritten
            assert (stat.st_ino, stat.st_mtime_ns) == (old_files[name].st_ino, old_files[name].st_mtime_ns)
    assert any(name.endswith("vectors.npy") for name in old_files if name.startswith(main.name))


def test_deltas_past_the_rebuild_fraction_build_one_segment(repo: Path, store: Store,
                                                            store_dir: Path) -> None:
    policy = MergePolicy(rebuild_fraction=0.5, max_deltas=10)
    build_all = lambda: update_search_index(store, store_dir, embedder=None, k1=1.2, b=0.75,  # noqa: E731
                                            policy=policy)
    write_tree(repo, {f"more/m{i}.py": _module(i) for i in range(10)})
    index_repository(repo, store, max_file_bytes=1 << 20, workers=1)
    build_all()
    rows = _manifest(store_dir).rows
    counts = []
    for i in range(6):
        edit(repo / f"more/m{i}.py", _module(100 + i))
        index_repository(repo, store, max_file_bytes=1 << 20, workers=1)
        build_all()
        manifest = _manifest(store_dir)
        counts.append(len(manifest.segments))
        changed = sum(s.rows for s in manifest.segments[1:]) + sum(len(s.deleted) for s in manifest.segments)
        assert changed <= 0.5 * manifest.segments[0].rows
    assert counts[0] == 2 and 1 in counts  # a delta first, a rebuild once they grew past half the main one
    assert rows > 0


def test_a_change_that_keeps_every_chunk_keeps_the_folder(build: Build, repo: Path, store: Store,
                                                          store_dir: Path) -> None:
    build(None)
    [folder] = search_folders(store_dir)
    generation = store.meta()[SEARCH_GENERATION_KEY]
    edit(repo / "alpha.py", REPO["alpha.py"] + "\n\n\n")  # new content, the same chunks
    assert build(None) is True
    assert store.meta()[SEARCH_GENERATION_KEY] == str(int(generation) + 1)
    assert search_folders(store_dir) == [folder]
    assert load_search_index(store, store_dir).generation == int(generation) + 1


def test_a_reader_of_the_old_generation_keeps_working_after_the_swap(
        build: Build, repo: Path, store: Store, store_dir: Path) -> None:
    build(CountingEmbedder())
    old = load_search_index(store, store_dir)
    before = old.sparse.search("alpha beta", 10)
    edit(repo / "alpha.py", "def alpha(value):\n    return beta(value)\n")
    build(CountingEmbedder())
    assert old.sparse.search("alpha beta", 10) == before  # its mapped files outlive their folder
    assert load_search_index(store, store_dir).sparse.search("alpha beta", 10) != before


def test_loading_retries_when_the_folder_is_swapped_out_midway(
        build: Build, store: Store, store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build(None)
    real = search_index.load_generation
    calls: list[Path] = []

    def swapped_once(folder: Path, manifest: Manifest) -> object:
        calls.append(folder)
        if len(calls) == 1:
            raise FileNotFoundError(folder / "seg-gone")
        return real(folder, manifest)

    monkeypatch.setattr(search_index, "load_generation", swapped_once)
    assert load_search_index(store, store_dir).sparse.search("alpha", 5)
    assert len(calls) == 2


def test_a_failed_update_keeps_the_previous_generation(
        build: Build, repo: Path, store: Store, store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build(None)
    meta = store.meta()
    before = load_search_index(store, store_dir).sparse.search("alpha", 5)

    def dying(self: object, folder: Path, **options: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(search_index.Segment, "save", dying)
    edit(repo / "alpha.py", REPO["alpha.py"] + "\n\ndef omega():\n    return 'zebra'\n")
    with pytest.raises(KeyboardInterrupt):
        build(None)
    assert {k: store.meta()[k] for k in (SEARCH_DIR_KEY, SEARCH_GENERATION_KEY)} == {
        k: meta[k] for k in (SEARCH_DIR_KEY, SEARCH_GENERATION_KEY)}
    assert load_search_index(store, store_dir).sparse.search("alpha", 5) == before
    monkeypatch.undo()
    assert build(None) is True
    assert len(search_folders(store_dir)) == 1  # the dead run's folder is gone
    assert load_search_index(store, store_dir).sparse.search("zebra", 5)


def test_a_folder_written_before_segments_is_rebuilt_reusing_its_vectors(
        build: Build, store: Store, store_dir: Path) -> None:
    build(CountingEmbedder())
    [folder] = search_folders(store_dir)
    current = load_search_index(store, store_dir)
    assert current.dense is not None
    legacy = store_dir / "search-1-0ld0ld00"
    current.dense.save(legacy / "dense")  # the old layout: dense/ and sparse/, no manifest
    (legacy / "sparse").mkdir()
    shutil.copy(store_dir / folder / "embedding.json", legacy / "embedding.json")
    with store.transaction():
        store.set_meta({SEARCH_DIR_KEY: legacy.name})
    shutil.rmtree(store_dir / folder)
    with pytest.raises(StoreError):
        load_search_index(store, store_dir)  # not readable as it is ...
    embedder = CountingEmbedder()
    assert build(embedder) is True  # ... so the next run builds it again
    assert embedder.embedded == []  # with the vectors it had
    assert sorted(load_search_index(store, store_dir).sparse.chunk_ids) == sorted(chunk_texts(store))
