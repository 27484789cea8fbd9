"""The one-off stratified split of a labelled query set into tuning and held-out halves."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import classifier_split
import pytest

from knowcode.models import TaskType


def _rows(counts: dict[str, int]) -> list[dict[str, str]]:
    return [{"query": f"{task} question {index}", "task_type": task}
            for task, count in counts.items() for index in range(count)]


def test_each_type_is_halved_the_tuning_half_taking_the_odd_one() -> None:
    rows = _rows({"debug": 7, "locate": 4, "general": 1})
    tuning, holdout = classifier_split.split_halves(rows)
    assert Counter(r["task_type"] for r in tuning) == {"debug": 4, "locate": 2, "general": 1}
    assert Counter(r["task_type"] for r in holdout) == {"debug": 3, "locate": 2}
    assert sorted(map(str, tuning + holdout)) == sorted(map(str, rows))  # a partition


def test_the_split_is_reproducible_keeps_file_order_and_depends_on_the_seed() -> None:
    rows = _rows({task.value: 10 for task in TaskType})
    first = classifier_split.split_halves(rows)
    assert classifier_split.split_halves(rows) == first
    for half in first:
        assert half == sorted(half, key=rows.index)
    assert classifier_split.split_halves(rows, seed=classifier_split.SPLIT_SEED + 1) != first


def test_main_writes_both_halves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "all.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in _rows({"explain": 3, "review": 2})) + "\n")
    tuning, holdout = tmp_path / "t.jsonl", tmp_path / "h.jsonl"
    assert classifier_split.main([str(source), "--tuning", str(tuning), "--holdout", str(holdout)]) == 0
    assert "5 rows: 3 tuning" in capsys.readouterr().out
    assert len(classifier_split.read_rows(tuning)) == 3 and len(classifier_split.read_rows(holdout)) == 2


@pytest.mark.parametrize("content", ['{"query": "x", "task_type": "fix"}\n',
                                     '{"query": " ", "task_type": "debug"}\n', "{not json\n"])
def test_bad_input_is_a_one_line_error(tmp_path: Path, content: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(content)
    status = classifier_split.main([str(source), "--tuning", str(tmp_path / "t"),
                                    "--holdout", str(tmp_path / "h")])
    assert status == 2
    assert capsys.readouterr().err.startswith("classifier_split: ")
    assert not (tmp_path / "t").exists()
