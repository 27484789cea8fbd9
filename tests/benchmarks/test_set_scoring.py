"""Scoring of the span-level questions and the issue set, on hand-computed cases."""

from __future__ import annotations

import math

import pytest
import set_scoring
from set_scoring import (
    file_accuracy,
    function_ranks,
    is_non_code,
    macro_average,
    non_code_share,
    recall,
    reciprocal_rank,
    same_answer,
    score_issue,
)

from knowcode.evals.scoring import Hit, Target


def test_recall_and_reciprocal_rank() -> None:
    assert recall([1, None, 4, None]) == 0.5
    assert recall([]) == 0.0
    assert reciprocal_rank([None, 4, 2]) == 0.5
    assert reciprocal_rank([None, None]) == 0.0


def test_file_level_accuracy_counts_distinct_files_in_order() -> None:
    hits = [Hit("a.py", 1, 5), Hit("a.py", 9, 12), Hit("b.py", 1, 2), Hit("c.py", 1, 2), Hit("d.py", 1, 2),
            Hit("e.py", 1, 2), Hit("f.py", 1, 2)]
    score = score_issue([Target("f.py", 1, 1)], ["a.py", "f.py"], hits)
    assert score.file_ranks == (1, 6)  # a.py twice is one file: f.py is the sixth distinct file
    assert score.file_acc == {1: 0.0, 5: 0.0, 10: 1.0}
    assert score.file_recall10 == 1.0
    only_first = score_issue([Target("a.py", 1, 1)], ["a.py"], hits)
    assert only_first.file_acc == {1: 1.0, 5: 1.0, 10: 1.0}


def test_file_accuracy_over_a_longer_answer_counts_its_first_k_files() -> None:
    hits = [Hit(f"{name}.py", 1, 2) for name in "abcdefghijkl"]  # twelve files
    assert file_accuracy(["b.py", "j.py"], hits, 10) == 1.0
    assert file_accuracy(["b.py", "k.py"], hits, 10) == 0.0  # k.py is the eleventh file
    assert file_accuracy([], hits, 10) == 0.0


def test_issue_paths_must_be_equal_not_suffixes() -> None:
    hits = [Hit("src/pkg/a.py", 1, 10), Hit("pkg/a.py", 1, 10)]
    score = score_issue([Target("pkg/a.py", 3, 4)], ["pkg/a.py"], hits)
    assert score.fn_ranks == (2,) and score.file_ranks == (2,)
    missed = score_issue([Target("a.py", 3, 4)], ["a.py"], hits)
    assert missed.fn_ranks == (None,) and missed.file_acc[10] == 0.0


@pytest.mark.parametrize(("hit", "found"), [
    (Hit("m.py", 10, 20), True),  # the same span
    (Hit("m.py", 20, 30), True),  # one shared line is enough
    (Hit("m.py", 1, 9), False),  # ends just before
    (Hit("m.py", 21, 40), False),  # starts just after
    (Hit("n.py", 10, 20), False),  # another file
])
def test_function_target_needs_a_shared_line(hit: Hit, found: bool) -> None:
    assert function_ranks([Target("m.py", 10, 20)], [hit]) == [1 if found else None]


def test_function_metrics_recall_accuracy_mrr_ndcg() -> None:
    targets = [Target("m.py", 10, 20), Target("m.py", 40, 50)]
    hits = [Hit("x.py", 1, 5), Hit("m.py", 12, 14), Hit("y.py", 1, 1), Hit("m.py", 45, 45)]
    score = score_issue(targets, ["m.py"], hits)
    assert score.fn_ranks == (2, 4)
    assert score.fn_recall10 == 1.0 and score.fn_acc10 == 1.0 and score.fn_mrr10 == 0.5
    ideal = 1 + 1 / math.log2(3)
    assert score.fn_ndcg10 == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    half = score_issue(targets, ["m.py"], hits[:2])
    assert half.fn_recall10 == 0.5 and half.fn_acc10 == 0.0
    assert half.fn_ndcg10 == pytest.approx((1 / math.log2(3)) / ideal)


def test_ndcg_ideal_is_over_min_of_ten_and_the_targets() -> None:
    targets = [Target(f"f{i}.py", 1, 1) for i in range(12)]
    hits = [Hit(f"f{i}.py", 1, 1) for i in range(10)]
    assert score_issue(targets, [], hits).fn_ndcg10 == pytest.approx(1.0)  # 12 targets, 10 found: perfect
    assert score_issue(targets, [], hits).fn_recall10 == pytest.approx(10 / 12)


def test_one_hit_spanning_two_targets_counts_once() -> None:
    targets = [Target("m.py", 10, 20), Target("m.py", 30, 40)]
    score = score_issue(targets, ["m.py"], [Hit("m.py", 1, 100)])
    assert score.fn_ranks == (1, 1) and score.fn_recall10 == 1.0
    assert score.fn_ndcg10 == pytest.approx(1 / (1 + 1 / math.log2(3)))  # never above 1


def test_only_the_top_ten_count() -> None:
    hits = [Hit(f"f{i}.py", 1, 1) for i in range(10)] + [Hit("m.py", 1, 30)]
    score = score_issue([Target("m.py", 5, 6)], ["m.py"], hits)
    assert score.fn_ranks == (None,) and score.file_acc[10] == 0.0


def test_no_targets_scores_zero() -> None:
    score = score_issue([], [], [Hit("a.py", 1, 1)])
    assert score.fn_ndcg10 == 0.0 and score.fn_acc10 == 0.0 and score.file_acc[10] == 0.0


@pytest.mark.parametrize(("path", "non_code"), [
    ("README.rst", True), ("docs/intro.md", True), ("CONTRIBUTING", True), ("AUTHORS", True),
    ("django/conf/locale/fr/LC_MESSAGES/django.po", True), ("setup.cfg", True), ("tox.ini", True),
    ("pyproject.toml", True), (".github/ISSUE_TEMPLATE/bug.yml", True), ("templates/admin/base.html", True),
    ("requirements.txt", True), ("MANIFEST.in", True),
    ("django/db/models/query.py", False), ("sklearn/tree/_tree.pyx", False), ("lib/app.js", False),
    ("Makefile", False), ("bin/run", False), ("src/types.d.ts", False),
])
def test_non_code_files(path: str, non_code: bool) -> None:
    assert is_non_code(path) is non_code


def test_non_code_share_over_top_ten() -> None:
    lists = [[Hit("README.md", 1, 1), Hit("a.py", 1, 1)], [Hit("b.py", 1, 1)] * 10 + [Hit("x.md", 1, 1)]]
    assert non_code_share(lists) == pytest.approx(1 / 12)
    assert non_code_share([]) == 0.0
    assert ".po" in set_scoring.NON_CODE_SUFFIXES


def test_same_answer_compares_the_first_k() -> None:
    short = [Hit("a.py", 1, 2), Hit("b.py", 3, 4)]
    assert same_answer(short, [*short, Hit("c.py", 1, 1)], k=2)
    assert not same_answer(short, [short[1], short[0]], k=2)
    assert not same_answer(short, [Hit("a.py", 1, 3), short[1]], k=2)  # another span is another answer


def test_macro_average_repo_then_category_means() -> None:
    summary = macro_average({
        "r1": [("semantic", {"m": 1.0}), ("semantic", {"m": 0.0}), ("symbol", {"m": 1.0})],
        "r2": [("semantic", {"m": 0.5})],
        "empty": [],
    }, ["semantic", "architecture", "symbol"])
    assert summary.repos == {"r1": {"m": pytest.approx(2 / 3)}, "r2": {"m": 0.5}}
    assert summary.overall["m"] == pytest.approx((2 / 3 + 0.5) / 2)
    assert list(summary.categories) == ["semantic", "symbol"]
    assert summary.categories["semantic"]["m"] == pytest.approx(0.5)  # (0.5 in r1 + 0.5 in r2) / 2
    assert summary.categories["symbol"]["m"] == 1.0
