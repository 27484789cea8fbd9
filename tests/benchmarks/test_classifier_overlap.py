"""The near-duplicate check between a newer labelled set and the earlier ones."""

from __future__ import annotations

import json
from pathlib import Path

import classifier_overlap
import pytest


def test_jaccard_of_word_sets() -> None:
    left = classifier_overlap.words("Where is the parser?")
    right = classifier_overlap.words("where is THE lexer")
    assert classifier_overlap.jaccard(left, right) == pytest.approx(3 / 5)
    assert classifier_overlap.jaccard(frozenset(), frozenset()) == 0.0


def test_a_reworded_question_is_a_near_duplicate_and_a_new_one_is_not() -> None:
    earlier = ["Give me an overview of this repository", "how does the cache expire entries"]
    found = classifier_overlap.near_duplicates(
        ["give me an overview of this codebase", "is the retry loop safe under load"], earlier)
    assert found == {"give me an overview of this codebase": ("Give me an overview of this repository", 0.75)}


def _write(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"query": q, "task_type": t}) + "\n" for q, t in rows))
    return path


def test_main_scores_a_set_with_and_without_its_near_duplicates(tmp_path: Path) -> None:
    earlier = _write(tmp_path / "old.jsonl", [("give me an overview of the repository", "general")])
    new = _write(tmp_path / "new.jsonl", [("give me an overview of this repository", "general"),
                                          ("qwerty asdf zxcv", "review")])  # no cue: general, a miss
    out = tmp_path / "o.json"
    assert classifier_overlap.main(["--new", str(new), "--earlier", str(earlier), "--out", str(out)]) == 0
    recorded = json.loads(out.read_text())["sets"]["new.jsonl"]
    assert recorded["accuracy"] == 0.5
    assert [row["query"] for row in recorded["near_duplicates"]] == ["give me an overview of this repository"]
    assert recorded["without_near_duplicates"]["queries"] == 1
    assert recorded["without_near_duplicates"]["accuracy"] == 0.0


def test_a_missing_set_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = classifier_overlap.main(["--new", str(tmp_path / "absent.jsonl"), "--out", str(tmp_path / "o")])
    assert status == 2
    error = capsys.readouterr().err
    assert error.startswith("classifier_overlap: ") and error.count("\n") == 1
