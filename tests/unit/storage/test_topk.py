"""Top-k by score, ties by id."""

from __future__ import annotations

import numpy as np

from knowcode.storage.topk import top_by_score


def test_every_row_tied_at_the_cut_is_considered() -> None:
    scores = np.array([1.0, 2.0, 2.0, 2.0, 0.0])
    ids = ["e", "d", "b", "c", "a"]
    assert top_by_score(scores, ids, 2) == [("b", 2.0), ("c", 2.0)]
    assert top_by_score(scores, ids, 10, floor=0.0) == [("b", 2.0), ("c", 2.0), ("d", 2.0), ("e", 1.0)]


def test_non_positive_limit_gives_nothing() -> None:
    assert top_by_score(np.array([1.0]), ["a"], 0) == []
