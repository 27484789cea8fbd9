"""The approximate graph: it proposes candidates, the vector store re-scores them exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from knowcode.storage.ann_index import AnnIndex
from knowcode.storage.vector_store import VectorStore

ROWS = 600


def _unit(rows: int, seed: int) -> npt.NDArray[np.float32]:
    matrix = np.random.default_rng(seed).standard_normal((rows, 16)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def matrix() -> npt.NDArray[np.float32]:
    return _unit(ROWS, 0)


@pytest.fixture(scope="module")
def graph(matrix: npt.NDArray[np.float32]) -> AnnIndex:
    return AnnIndex.build(matrix)


def _queries(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    noise = np.random.default_rng(1).standard_normal((40, matrix.shape[1])).astype(np.float32)
    return matrix[:40] + 0.3 * noise


def test_candidates_hold_the_nearest_rows(matrix: npt.NDArray[np.float32], graph: AnnIndex) -> None:
    assert graph.size == ROWS
    recalls = []
    for query in _queries(matrix):
        truth = set(np.argsort(-(matrix @ query))[:10].tolist())
        recalls.append(len(truth & set(graph.candidates(query, 20).tolist())) / 10)
    assert np.mean(recalls) >= 0.9  # a tiny set: the graph is close to exact


def test_a_saved_graph_loads_memory_mapped_with_the_same_answers(
        tmp_path: Path, matrix: npt.NDArray[np.float32], graph: AnnIndex) -> None:
    graph.save(tmp_path / "graph.usearch")
    loaded = AnnIndex.load(tmp_path / "graph.usearch")
    for query in _queries(matrix)[:5]:
        assert loaded.candidates(query, 10).tolist() == graph.candidates(query, 10).tolist()


def test_loading_a_missing_graph_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        AnnIndex.load(tmp_path / "gone.usearch")


def test_search_through_the_graph_returns_exact_scores_of_live_rows(
        matrix: npt.NDArray[np.float32], graph: AnnIndex) -> None:
    ids = [f"m{i:04}" for i in range(ROWS)]
    deleted = set(range(0, ROWS, 3))
    delta = _unit(5, 7)
    parts = [(VectorStore(ids, matrix), deleted), (VectorStore([f"d{i}" for i in range(5)], delta), set())]
    joined = VectorStore.join(parts, graph)
    exact = VectorStore(joined.chunk_ids, joined.matrix)
    assert joined.approximate is not None
    overlap = []
    for query in [*_queries(matrix), *delta]:
        hits = joined.search(query, 10)
        assert len(hits) == 10
        assert not {cid for cid, _ in hits} & {ids[row] for row in deleted}
        for cid, score in hits:  # the graph proposes, the float32 rows score
            assert score == pytest.approx(float(joined.matrix[joined.row_of[cid]] @ query), abs=1e-6)
        overlap.append(len({c for c, _ in hits} & {c for c, _ in exact.search(query, 10)}) / 10)
    assert np.mean(overlap) >= 0.9
    for i, query in enumerate(delta):  # rows outside the graph are scanned: a delta row finds itself
        assert joined.search(query, 1)[0][0] == f"d{i}"


def test_tombstones_near_the_query_make_it_ask_for_more(matrix: npt.NDArray[np.float32],
                                                        graph: AnnIndex) -> None:
    ids = [f"m{i:04}" for i in range(ROWS)]
    query = matrix[0]
    nearest = np.argsort(-(matrix @ query))[:30].tolist()  # every row the first ask would propose
    joined = VectorStore.join([(VectorStore(ids, matrix), set(nearest))], graph)
    hits = joined.search(query, 5)
    assert len(hits) == 5
    assert not {cid for cid, _ in hits} & {ids[row] for row in nearest}
