"""Segments and manifests: immutable folders linked into each generation, tombstones in the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from knowcode.retrieval.segments import (
    MANIFEST_FILE,
    Manifest,
    MergePolicy,
    Segment,
    SegmentEntry,
    link_segment,
    load_generation,
    read_ids,
)
from knowcode.retrieval.sparse import Postings
from knowcode.storage import ann_index
from knowcode.storage.vector_store import VectorStore


def _segment(ids: list[str], texts: list[str], dense: bool = True) -> Segment:
    vectors = VectorStore(ids, np.eye(len(ids), 4, dtype=np.float32)) if dense else None
    return Segment(ids, Postings.build(texts), vectors)


def test_policy_defaults_are_named() -> None:
    assert MergePolicy() == MergePolicy(rebuild_fraction=0.2, max_deltas=10)


def test_manifest_round_trip(tmp_path: Path) -> None:
    manifest = Manifest((SegmentEntry("seg-a", 3, (0, 2)), SegmentEntry("seg-b", 1)), 1.2, 0.75, True)
    manifest.save(tmp_path)
    assert Manifest.load(tmp_path) == manifest
    assert manifest.rows == 4


def test_a_folder_without_a_manifest_or_of_another_format_has_none(tmp_path: Path) -> None:
    assert Manifest.load(tmp_path) is None
    (tmp_path / MANIFEST_FILE).write_text(json.dumps({"format": 999, "segments": []}))
    assert Manifest.load(tmp_path) is None


def test_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Manifest.load(tmp_path / "gone")


def test_segments_get_distinct_names() -> None:
    assert _segment(["a"], ["xx"]).name != _segment(["a"], ["xx"]).name


def test_saved_segments_load_as_one_index_without_deleted_rows(tmp_path: Path) -> None:
    first = _segment(["a", "b", "c"], ["config", "render", "config page"])
    second = _segment(["d"], ["config"])
    entries = (SegmentEntry(first.name, 3, (1,)), second.save(tmp_path))
    first.save(tmp_path)
    assert read_ids(tmp_path, entries[0]) == ["a", "b", "c"]
    sparse, dense = load_generation(tmp_path, Manifest(entries, 1.2, 0.75, True))
    assert sorted(sparse.chunk_ids) == ["a", "c", "d"]
    assert {cid for cid, _ in sparse.search("config render", 10)} == {"a", "c", "d"}
    assert dense is not None and dense.chunk_ids == ["a", "c", "d"]
    assert dense._quantized is not None  # the segments' saved codes, joined: none is made at load
    assert np.array_equal(dense.quantized.codes, np.eye(4, 4, dtype=np.int8)[[0, 2, 0]] * 127)


def test_without_vectors_there_is_no_dense_index(tmp_path: Path) -> None:
    segment = _segment(["a"], ["config"], dense=False)
    sparse, dense = load_generation(tmp_path, Manifest((segment.save(tmp_path),), 1.2, 0.75, False))
    assert dense is None and sparse.chunk_ids == ["a"]


def test_linking_shares_the_files(tmp_path: Path) -> None:
    segment = _segment(["a", "b"], ["config", "render"])
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    entry = segment.save(tmp_path / "old")
    link_segment(tmp_path / "old", tmp_path / "new", entry)
    old_files = sorted((tmp_path / "old").glob(f"{entry.name}.*"))
    assert len(old_files) == 9  # ids, vectors and their two code files, the vocabulary, four postings arrays
    assert {p.name for p in (tmp_path / "new").iterdir()} == {p.name for p in old_files}
    for path in old_files:
        assert (tmp_path / "new" / path.name).stat().st_ino == path.stat().st_ino  # a hard link: no copy


def test_linking_copies_where_links_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "old").mkdir()
    entry = _segment(["a"], ["config"]).save(tmp_path / "old")

    def no_links(source: str, target: str) -> None:
        raise OSError("links not supported")

    monkeypatch.setattr("os.link", no_links)
    (tmp_path / "new").mkdir()
    link_segment(tmp_path / "old", tmp_path / "new", entry)
    assert read_ids(tmp_path / "new", entry) == ["a"]
    name = f"{entry.name}.ids.json"
    assert (tmp_path / "new" / name).stat().st_ino != (tmp_path / "old" / name).stat().st_ino


def test_a_segment_past_the_threshold_gets_a_graph_that_searches_use(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann_index, "ANN_MIN_ROWS", 3)
    big, small = _segment(["a", "b", "c"], ["config", "render", "page"]), _segment(["d"], ["config"])
    entries = (big.save(tmp_path), small.save(tmp_path))
    assert (tmp_path / f"{big.name}.graph.usearch").is_file()
    assert not (tmp_path / f"{small.name}.graph.usearch").exists()
    assert not list(tmp_path.glob(f"{big.name}.*codes*"))  # searched through its graph, not its codes
    assert list(tmp_path.glob(f"{small.name}.*codes*"))
    delta = _segment(["e", "f", "g"], ["config", "render", "page"])
    delta.save(tmp_path, main=False)  # a delta's graph would never be searched: none is built
    assert not (tmp_path / f"{delta.name}.graph.usearch").exists()
    _, dense = load_generation(tmp_path, Manifest(entries, 1.2, 0.75, True))
    assert dense is not None and dense.approximate is not None
    assert dense.search(np.array([0, 1, 0, 0], dtype=np.float32), 1) == [("b", 1.0)]
    assert dense.search(np.array([1, 0, 0, 0], dtype=np.float32), 2) == [("a", 1.0), ("d", 1.0)]


def test_below_the_threshold_there_is_no_graph(tmp_path: Path) -> None:
    entry = _segment(["a", "b"], ["config", "render"]).save(tmp_path)
    assert not list(tmp_path.glob("*.usearch"))
    _, dense = load_generation(tmp_path, Manifest((entry,), 1.2, 0.75, True))
    assert dense is not None and dense.approximate is None
