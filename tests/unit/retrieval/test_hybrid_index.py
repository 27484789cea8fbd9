"""Hybrid fusion: the spec's constants and RRF arithmetic, exactly."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from knowcode.retrieval.hybrid_index import (
    CANDIDATE_FACTOR,
    DEFAULT_HYBRID_ALPHA,
    RRF_K,
    HybridIndex,
    dedupe_by_best_rank,
    reciprocal_rank_fusion,
)


def test_spec_constants() -> None:
    assert (CANDIDATE_FACTOR, RRF_K, DEFAULT_HYBRID_ALPHA) == (3, 60, 0.2)


def test_rrf_scores_follow_the_formula() -> None:
    fused = reciprocal_rank_fusion(["a", "b"], ["b", "c"], alpha=0.2, known={"a", "b", "c"}, limit=10)
    scores = {f.chunk_id: f.score for f in fused}
    assert scores["a"] == pytest.approx(0.8 / 61)
    assert scores["b"] == pytest.approx(0.8 / 62 + 0.2 / 61)
    assert scores["c"] == pytest.approx(0.2 / 62)
    assert [f.chunk_id for f in fused] == ["b", "a", "c"]
    assert [(f.sparse_rank, f.dense_rank) for f in fused] == [(1, 0), (0, None), (None, 1)]


def test_alpha_is_used_as_passed() -> None:
    fused = reciprocal_rank_fusion(["a"], ["b"], alpha=0.9, known={"a", "b"}, limit=10)
    assert [f.chunk_id for f in fused] == ["b", "a"]
    assert fused[0].score == pytest.approx(0.9 / 61)


def test_duplicates_keep_their_best_rank() -> None:
    assert dedupe_by_best_rank(["x", "y", "x", "z", "y"]) == ["x", "y", "z"]
    fused = reciprocal_rank_fusion(["x", "y", "x"], [], alpha=0.2, known=set(), limit=10)
    assert {f.chunk_id: f.score for f in fused} == pytest.approx({"x": 0.8 / 61, "y": 0.8 / 62})


def test_unresolvable_dense_id_is_skipped_without_taking_a_slot() -> None:
    fused = reciprocal_rank_fusion([], ["ghost", "b", "c"], alpha=0.2, known={"b", "c"}, limit=2)
    assert [f.chunk_id for f in fused] == ["b", "c"]  # two slots, both filled by real chunks
    assert fused[0].score == pytest.approx(0.2 / 62)  # ranks stay those of the dense leg


def test_excluded_ids_leave_both_legs_and_the_others_keep_their_ranks() -> None:
    fused = reciprocal_rank_fusion(["doc", "a", "b"], ["doc", "b"], alpha=0.2, known={"doc", "b"}, limit=3,
                                   excluded={"doc"})
    assert {f.chunk_id: f.score for f in fused} == pytest.approx({"a": 0.8 / 62, "b": 0.8 / 63 + 0.2 / 62})


def test_limit_and_ties() -> None:
    fused = reciprocal_rank_fusion(["a", "b", "c"], [], alpha=0.2, known=set(), limit=2)
    assert [f.chunk_id for f in fused] == ["a", "b"]


def test_each_leg_is_asked_for_limit_times_the_candidate_factor() -> None:
    asked: list[tuple[str, int]] = []

    def leg(name: str) -> object:
        def run(query: str, limit: int) -> list[tuple[str, float]]:
            asked.append((name, limit))
            return [(f"{name}{i}", 1.0) for i in range(limit)]
        return run

    index = HybridIndex(leg("s"), leg("d"), alpha=0.2)  # type: ignore[arg-type]
    fused = index.search("q", 4, known={f"d{i}" for i in range(12)})
    assert sorted(asked) == [("d", 12), ("s", 12)]
    assert len(fused) == 4


def test_leg_errors_propagate() -> None:
    def broken(query: str, limit: int) -> list[tuple[str, float]]:
        raise RuntimeError("model missing")

    with pytest.raises(RuntimeError, match="model missing"):
        HybridIndex(lambda q, k: [], broken).search("q", 3, known=set())


def test_work_meanwhile_gets_the_sparse_ids_while_the_dense_leg_runs() -> None:
    dense_started, release = threading.Event(), threading.Event()

    def dense(query: str, limit: int) -> list[tuple[str, float]]:
        dense_started.set()
        assert release.wait(10)  # held until the work meanwhile has run
        return [("d1", 0.9)]

    def meanwhile(sparse_ids: list[str], dense_pending: Callable[[], bool]) -> str:
        assert dense_started.wait(10)  # the dense leg is running now, not done
        assert dense_pending()
        release.set()
        return "+".join(sparse_ids)

    index = HybridIndex(lambda q, k: [("s1", 2.0), ("s2", 1.0)], dense)
    assert index.legs_and("q", 3, meanwhile) == (["s1", "s2"], ["d1"], "s1+s2")
    index.close()


def test_an_error_meanwhile_propagates_after_the_dense_leg_ends() -> None:
    finished: list[str] = []

    def dense(query: str, limit: int) -> list[tuple[str, float]]:
        finished.append("dense")
        return []

    def meanwhile(sparse_ids: list[str], dense_pending: Callable[[], bool]) -> None:
        raise RuntimeError("store gone")

    index = HybridIndex(lambda q, k: [], dense)
    with pytest.raises(RuntimeError, match="store gone"):
        index.legs_and("q", 3, meanwhile)
    assert finished == ["dense"]  # waited for: no leg left running behind the error
    index.close()


def test_without_parallel_the_legs_run_on_the_callers_thread_one_after_the_other() -> None:
    threads: list[tuple[str, int]] = []

    def leg(name: str, ids: list[str]) -> object:
        def run(query: str, limit: int) -> list[tuple[str, float]]:
            threads.append((name, threading.get_ident()))
            return [(cid, 1.0) for cid in ids]
        return run

    def meanwhile(sparse_ids: list[str], dense_pending: Callable[[], bool]) -> str:
        threads.append(("meanwhile", threading.get_ident()))
        assert not dense_pending()  # done already: the caller reads everything after the fusion
        return "+".join(sparse_ids)

    index = HybridIndex(leg("sparse", ["s1", "s2"]), leg("dense", ["d1"]), parallel=False)  # type: ignore[arg-type]
    assert index.legs_and("q", 3, meanwhile) == (["s1", "s2"], ["d1"], "s1+s2")
    assert threads == [(name, threading.get_ident()) for name in ("dense", "sparse", "meanwhile")]
    index.close()


def test_without_parallel_the_dense_legs_error_comes_first_as_in_parallel() -> None:
    def broken(name: str) -> object:
        def run(query: str, limit: int) -> list[tuple[str, float]]:
            raise RuntimeError(f"{name} failed")
        return run

    for parallel in (True, False):
        index = HybridIndex(broken("sparse"), broken("dense"), parallel=parallel)  # type: ignore[arg-type]
        with pytest.raises(RuntimeError, match="dense failed"):
            index.legs("q", 3)
        index.close()
