"""Top-k by score, ties by id."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from knowcode.storage.topk import top_by_score


def test_every_row_tied_at_the_cut_is_considered() -> None:
    scores = np.array([1.0, 2.0, 2.0, 2.0, 0.0])
    ids = ["e", "d", "b", "c", "a"]
    assert top_by_score(scores, ids, 2) == [("b", 2.0), ("c", 2.0)]
    assert top_by_score(scores, ids, 10, floor=0.0) == [("b", 2.0), ("c", 2.0), ("d", 2.0), ("e", 1.0)]


def test_non_positive_limit_gives_nothing() -> None:
    assert top_by_score(np.array([1.0]), ["a"], 0) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=-3, max_value=3), min_size=0, max_size=40), st.integers(1, 45),
       st.booleans(), st.randoms(use_true_random=False))
def test_same_as_sorting_every_score_and_id_pair(values: list[int], limit: int, floored: bool,
                                                 rng: random.Random) -> None:
    # few distinct values: ties at every place, ids in no particular order
    ids = [f"id{n:02d}" for n in range(len(values))]
    rng.shuffle(ids)
    scores = np.array(values, dtype=np.float64) / 2
    floor = 0.0 if floored else None
    pairs = zip(scores.tolist(), ids, strict=True)
    expected = sorted((-s, i) for s, i in pairs if floor is None or s > floor)
    assert top_by_score(scores, ids, limit, floor=floor) == [(i, -s) for s, i in expected[:limit]]
