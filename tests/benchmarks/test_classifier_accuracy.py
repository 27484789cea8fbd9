"""The classifier accuracy benchmark: evaluation, the confusion matrix and the recorded JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import classifier_accuracy
import pytest

from knowcode.models import TaskType


def test_evaluate_counts_hits_misses_and_the_matrix() -> None:
    report = classifier_accuracy.evaluate([
        ("where is the parser defined", TaskType.LOCATE),
        ("Traceback: boom", TaskType.DEBUG),
        ("qwerty", TaskType.REVIEW),  # no cue: predicted general, a miss
    ])
    assert (report["queries"], report["correct"]) == (3, 2)
    assert report["accuracy"] == pytest.approx(0.6667)
    assert report["confusion"]["review"]["general"] == 1
    assert report["misses"] == [{"query": "qwerty", "expected": "review", "predicted": "general"}]
    assert report["recall"] == {"debug": 1.0, "review": 0.0, "locate": 1.0}


def test_main_writes_each_set_to_the_results_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "explain how it works", "task_type": "explain"}) + "\n\n")
    out = tmp_path / "result.json"
    monkeypatch.setattr(sys, "argv", ["classifier_accuracy", "--queries", str(queries), "--out", str(out)])
    classifier_accuracy.main()
    assert "q.jsonl: accuracy 1.0000 (1/1)" in capsys.readouterr().out
    assert json.loads(out.read_text())["sets"]["q.jsonl"]["accuracy"] == 1.0
