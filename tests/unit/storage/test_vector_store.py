"""Dense vectors: saved per segment, joined without their deleted rows, searched by brute force."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowcode.storage.vector_store import IDS_FILE, VectorStore


def _store(ids: list[str], seed: int = 0) -> VectorStore:
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((len(ids), 4)).astype(np.float32)
    return VectorStore(ids, matrix / np.linalg.norm(matrix, axis=1, keepdims=True))


def test_save_and_load_with_or_without_ids(tmp_path: Path) -> None:
    store = _store(["a", "b", "c"])
    store.save(tmp_path / "with")
    store.save(tmp_path / "without", with_ids=False)
    assert not (tmp_path / "without" / IDS_FILE).exists()
    ids = ["a", "b", "c"]
    for loaded in (VectorStore.load(tmp_path / "with"), VectorStore.load(tmp_path / "without", ids)):
        assert loaded.chunk_ids == ["a", "b", "c"]
        assert np.array_equal(loaded.matrix, store.matrix)


def test_ids_and_rows_must_agree() -> None:
    with pytest.raises(ValueError, match="2 ids for 3 vectors"):
        VectorStore(["a", "b"], np.zeros((3, 4), dtype=np.float32))


def test_join_keeps_the_live_rows_in_order() -> None:
    first, second = _store(["a", "b", "c"], 1), _store(["d", "e"], 2)
    joined = VectorStore.join([(first, {1}), (second, set())])
    assert joined.chunk_ids == ["a", "c", "d", "e"]
    assert np.array_equal(joined.matrix, np.vstack([first.matrix[[0, 2]], second.matrix]))
    assert joined.vectors_for(["b", "e"]).keys() == {"e"}


def test_join_of_one_whole_store_is_that_store() -> None:
    store = _store(["a"])
    assert VectorStore.join([(store, set())]) is store


def test_join_of_nothing_is_empty() -> None:
    empty = VectorStore.join([])
    assert empty.chunk_ids == []
    assert empty.search(np.ones(4, dtype=np.float32), 5) == []


def test_search_is_by_dot_product_best_first() -> None:
    store = VectorStore(["x", "y", "z"], np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32))
    hits = store.search(np.array([0.0, 1.0], dtype=np.float32), 2)
    assert [cid for cid, _ in hits] == ["y", "z"]
    assert [score for _, score in hits] == pytest.approx([1.0, 0.8])


def test_ties_are_broken_by_id_whatever_the_row_order() -> None:
    same = np.ones((4, 2), dtype=np.float32)
    query = np.array([1.0, 0.0], dtype=np.float32)
    for ids in (["d", "c", "b", "a"], ["b", "d", "a", "c"]):
        assert [cid for cid, _ in VectorStore(ids, same).search(query, 2)] == ["a", "b"]


@pytest.mark.parametrize("limit", [0, -1])
def test_non_positive_limit_gives_nothing(limit: int) -> None:
    assert _store(["a", "b"]).search(np.ones(4, dtype=np.float32), limit) == []


def test_exact_search_matches_a_float64_scan_on_many_rows() -> None:
    rng = np.random.default_rng(9)
    matrix = rng.standard_normal((4000, 32)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = [f"c{row:05d}" for row in range(4000)]
    store = VectorStore(ids, matrix)
    for query in matrix[:5] + 0.1 * rng.standard_normal((5, 32)).astype(np.float32):
        scores = matrix.astype(np.float64) @ query.astype(np.float32).astype(np.float64)
        expected = sorted(zip(-scores, ids, strict=True))[:50]
        assert store.search(query, 50) == [(cid, -negative) for negative, cid in expected]


def test_codes_are_saved_loaded_and_kept_by_join(tmp_path: Path) -> None:
    store = _store(["a", "b", "c"])
    store.save(tmp_path, with_ids=False)
    assert VectorStore.load(tmp_path, ["a", "b", "c"])._quantized is None  # none written: made on use
    store.save_codes(tmp_path)
    loaded = VectorStore.load(tmp_path, ["a", "b", "c"])
    assert loaded._quantized is not None
    assert np.array_equal(loaded.quantized.codes, store.quantized.codes)
    joined = VectorStore.join([(loaded, {1}), (_store(["d"], 3), set())])
    assert joined._quantized is None  # the second part has none yet
    coded = VectorStore.join([(loaded, {1})])
    assert coded._quantized is not None
    assert np.array_equal(coded.quantized.codes, loaded.quantized.codes[[0, 2]])
