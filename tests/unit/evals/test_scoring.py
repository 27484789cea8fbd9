"""The benchmark's scoring rules (bench/README.md), on hand-computed cases with exact numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from knowcode.evals.scoring import (
    Hit,
    Query,
    ScoredQuery,
    Target,
    dcg,
    hit_matches,
    load_annotations,
    mean_lines_per_hit,
    ndcg_from_ranks,
    parse_target,
    path_matches,
    score_query,
    summarize,
    target_ranks,
)

EXACT = 1e-12


def hits(*paths: str) -> list[Hit]:
    """Hits of one line each, at line 1 of the given files."""
    return [Hit(path, 1, 1) for path in paths]


# Path match


def test_equal_paths_match() -> None:
    assert path_matches("src/flask/app.py", "src/flask/app.py")


def test_target_ending_with_result_matches() -> None:
    assert path_matches("src/flask/app.py", "app.py")
    assert path_matches("src/flask/app.py", "flask/app.py")


def test_result_ending_with_target_matches() -> None:
    assert path_matches("app.py", "src/flask/app.py")
    assert path_matches("flask/app.py", "repo/src/flask/app.py")


def test_suffix_must_start_at_a_separator() -> None:
    assert not path_matches("xapp.py", "app.py")
    assert not path_matches("app.py", "xapp.py")
    assert not path_matches("src/flask/xapp.py", "app.py")
    assert not path_matches("src/myflask/app.py", "flask/app.py")


def test_same_name_in_other_folders_does_not_match() -> None:
    assert not path_matches("a/app.py", "b/app.py")
    assert not path_matches("src/flask/app.py", "src/flask/sansio/app.py")


def test_a_top_level_result_matches_a_nested_target_of_that_name() -> None:
    # The lenient rule as written: `app.py` is a suffix of `src/flask/sansio/app.py`.
    assert path_matches("src/flask/sansio/app.py", "app.py")


def test_backslashes_are_separators() -> None:
    assert path_matches("src\\flask\\app.py", "flask/app.py")
    assert path_matches("flask/app.py", "src\\flask\\app.py")


# Line check


SPAN = Target("lib/response.js", 10, 20)


def test_span_overlapping_by_one_line_matches_on_either_edge() -> None:
    assert hit_matches(SPAN, Hit("lib/response.js", 20, 30))
    assert hit_matches(SPAN, Hit("lib/response.js", 1, 10))


def test_span_adjacent_but_not_overlapping_does_not_match() -> None:
    assert not hit_matches(SPAN, Hit("lib/response.js", 21, 30))
    assert not hit_matches(SPAN, Hit("lib/response.js", 1, 9))


def test_span_containing_or_inside_the_hit_matches() -> None:
    assert hit_matches(SPAN, Hit("lib/response.js", 5, 25))
    assert hit_matches(SPAN, Hit("lib/response.js", 12, 13))


def test_span_needs_the_path_too() -> None:
    assert not hit_matches(SPAN, Hit("lib/request.js", 10, 20))
    assert hit_matches(SPAN, Hit("response.js", 15, 15))


def test_whole_file_target_matches_any_chunk_of_the_file() -> None:
    assert hit_matches(Target("src/flask/app.py"), Hit("app.py", 900, 950))
    assert not hit_matches(Target("src/flask/app.py"), Hit("ctx.py", 1, 10))


# Ranks


def test_rank_is_the_first_matching_position() -> None:
    targets = [Target("a.py"), Target("b.py")]
    assert target_ranks(targets, hits("x.py", "b.py", "a.py", "b.py")) == [3, 2]


def test_a_target_past_the_cutoff_is_not_found() -> None:
    ranked = hits(*[f"n{i}.py" for i in range(10)], "a.py")
    assert target_ranks([Target("a.py")], ranked) == [None]
    assert target_ranks([Target("a.py")], ranked, k=11) == [11]


def test_one_hit_can_serve_several_targets() -> None:
    targets = [Target("a.py"), Target("a.py", 1, 3)]
    assert target_ranks(targets, [Hit("a.py", 2, 2)]) == [1, 1]


# NDCG@10


def test_dcg_discounts_by_log2_of_position_plus_two() -> None:
    assert dcg([1.0, 1.0, 0.0, 1.0]) == pytest.approx(1 + 1 / math.log2(3) + 1 / math.log2(5), abs=EXACT)


def test_single_target_at_rank_one_scores_one() -> None:
    assert score_query(Query("q", "semantic", (Target("a.py"),)), hits("a.py")).ndcg == 1.0


def test_single_target_at_rank_three_scores_one_half() -> None:
    scored = score_query(Query("q", "semantic", (Target("a.py"),)), hits("x.py", "y.py", "a.py"))
    assert scored.ranks == (3,)
    assert scored.ndcg == pytest.approx(0.5, abs=EXACT)


def test_two_targets_sharing_a_rank_count_once() -> None:
    # rel = [1, 0, ...]: DCG 1; IDCG over 2 targets = 1 + 1/log2(3).
    query = Query("q", "symbol", (Target("a.py"), Target("a.py", 1, 10)))
    scored = score_query(query, [Hit("a.py", 1, 5), Hit("z.py", 1, 5)])
    assert scored.ranks == (1, 1)
    assert scored.ndcg == pytest.approx(0.6131471927654584, abs=EXACT)


def test_unfound_target_still_counts_in_the_ideal() -> None:
    # a.py at rank 2, b.py missing: (1/log2(3)) / (1 + 1/log2(3)).
    query = Query("q", "architecture", (Target("a.py"), Target("b.py")))
    scored = score_query(query, hits("x.py", "a.py"))
    assert scored.ranks == (2, None)
    assert scored.ndcg == pytest.approx(0.38685280723454163, abs=EXACT)


def test_three_targets_two_found() -> None:
    # ranks 1 and 3 of 3 targets: (1 + 1/2) / (1 + 1/log2(3) + 1/2).
    assert ndcg_from_ranks([1, None, 3], 3) == pytest.approx(0.7039180890341347, abs=EXACT)


def test_ideal_is_capped_at_ten_targets() -> None:
    # 12 targets, one found at rank 1: 1 / sum_{i<10} 1/log2(i + 2).
    assert ndcg_from_ranks([1] + [None] * 11, 12) == pytest.approx(0.22009176629808017, abs=EXACT)


def test_query_without_targets_scores_zero() -> None:
    assert score_query(Query("q", "semantic", ()), hits("a.py")).ndcg == 0.0


def test_no_hits_scores_zero() -> None:
    assert score_query(Query("q", "semantic", (Target("a.py"),)), []).ndcg == 0.0


# Averaging


def test_repo_headline_and_category_averages() -> None:
    per_repo = {
        "a": [ScoredQuery("semantic", 1.0, ()), ScoredQuery("semantic", 0.0, ()),
              ScoredQuery("semantic", 0.0, ()), ScoredQuery("symbol", 0.5, ())],
        "b": [ScoredQuery("semantic", 1.0, ()), ScoredQuery("architecture", 1.0, ())],
    }
    summary = summarize(per_repo)
    assert summary.repos == {"a": pytest.approx(0.375, abs=EXACT), "b": 1.0}
    assert summary.overall == pytest.approx(0.6875, abs=EXACT)  # not the pooled 3.5 / 6
    # semantic: mean(a's 1/3, b's 1) = 2/3, not the pooled 2/4; a category counts only repos having it.
    assert summary.categories == {"semantic": pytest.approx(2 / 3, abs=EXACT), "architecture": 1.0,
                                  "symbol": 0.5}
    assert list(summary.categories) == ["semantic", "architecture", "symbol"]
    assert summary.repo_categories["a"] == {"semantic": pytest.approx(1 / 3, abs=EXACT), "symbol": 0.5}


def test_summary_of_nothing_is_zero() -> None:
    assert summarize({}).overall == 0.0


def test_mean_lines_per_hit() -> None:
    assert mean_lines_per_hit([Hit("a.py", 1, 10), Hit("b.py", 5, 5)]) == 5.5
    assert mean_lines_per_hit([]) == 0.0


# Annotations


def test_load_annotations_reads_the_upstream_format(tmp_path: Path) -> None:
    path = tmp_path / "repo.json"
    path.write_text(json.dumps([
        {"query": "Depends", "category": "symbol",
         "relevant": [{"path": "fastapi/params.py", "start_line": 746, "end_line": 749}],
         "secondary": ["fastapi/param_functions.py"],
         "seed": {"path": "fastapi/params.py", "line": 746},
         "related": [{"path": "fastapi/params.py", "start_line": 434, "end_line": 468}]},
        {"query": "session management", "category": "semantic", "relevant": ["src/flask/sessions.py"],
         "secondary": []},
    ]))
    queries = load_annotations(path)
    assert queries == [
        Query("Depends", "symbol",
              (Target("fastapi/params.py", 746, 749), Target("fastapi/param_functions.py"))),
        Query("session management", "semantic", (Target("src/flask/sessions.py"),)),
    ]
    assert queries[0].targets[0].is_span and not queries[0].targets[1].is_span


def test_bad_targets_are_rejected() -> None:
    with pytest.raises(ValueError, match="line span"):
        parse_target({"path": "a.py", "start_line": 5, "end_line": 4})
    with pytest.raises(ValueError, match="a target must be"):
        parse_target(42)


def test_annotation_file_must_be_a_list(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"queries": []}')
    with pytest.raises(ValueError, match="expected a JSON list"):
        load_annotations(path)


def test_every_shipped_annotation_file_loads() -> None:
    folder = Path(__file__).resolve().parents[4] / "shared" / "bench" / "annotations"
    if not folder.is_dir():
        pytest.skip("the benchmark annotations are not next to this checkout")
    counts = {p.stem: len(load_annotations(p)) for p in sorted(folder.glob("*.json"))}
    assert sum(counts.values()) == 284 and len(counts) == 14
