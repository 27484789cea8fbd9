"""The classifier accuracy benchmark: scoring, the confidence curve, the sets it reads, the recorded JSON."""

from __future__ import annotations

import json
from pathlib import Path

import classifier_accuracy
import pytest

from knowcode.llm.query_classifier import classify
from knowcode.models import TaskType

NO_CUE = "qwerty asdf zxcv"  # matches no cue: predicted explain (the fallback) with confidence 0


def test_evaluate_counts_hits_misses_precision_recall_and_the_matrix() -> None:
    report = classifier_accuracy.evaluate([
        ("where is the parser defined", TaskType.LOCATE),
        ("Traceback (most recent call last): boom", TaskType.DEBUG),
        (NO_CUE, TaskType.REVIEW),  # a miss: predicted explain
        ("give me an overview of the repository", TaskType.GENERAL),
    ])
    assert (report["queries"], report["correct"]) == (4, 3)
    assert report["accuracy"] == 0.75
    assert report["confusion"]["review"]["explain"] == 1
    assert report["misses"] == [
        {"query": NO_CUE, "expected": "review", "predicted": "explain", "confidence": 0.0}]
    assert report["recall"] == {"debug": 1.0, "review": 0.0, "locate": 1.0, "general": 1.0}
    # explain was predicted once, wrongly; review was never predicted, so it has no precision
    assert report["precision"] == {"debug": 1.0, "locate": 1.0, "general": 1.0, "explain": 0.0}


def test_accuracy_by_confidence_bin_counts_every_query_once() -> None:
    labelled = [("where is the parser defined", TaskType.LOCATE), (NO_CUE, TaskType.REVIEW),
                ("explain how the cache works", TaskType.EXPLAIN)]
    bins = classifier_accuracy.evaluate(labelled)["by_confidence"]
    assert [slot["bin"] for slot in bins] == ["[0.0,0.25)", "[0.25,0.5)", "[0.5,0.75)", "[0.75,1.0]"]
    assert sum(slot["queries"] for slot in bins) == 3
    first = bins[0]  # the no-cue query has confidence 0 and is wrong
    assert first["queries"] >= 1 and first["correct"] <= first["queries"] - 1
    for slot in bins:
        expected = round(slot["correct"] / slot["queries"], 4) if slot["queries"] else None
        assert slot["accuracy"] == expected


@pytest.mark.parametrize(("confidence", "index"), [(0.0, 0), (0.2499, 0), (0.25, 1), (0.74, 2), (0.75, 3),
                                                   (1.0, 3)])
def test_a_confidence_falls_in_its_bin_and_one_is_in_the_last(confidence: float, index: int) -> None:
    assert classifier_accuracy._bin_of(confidence) == index


def test_shared_questions_are_read_from_every_json_list_with_a_task(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([
        {"query": "Context.forward", "category": "symbol", "task": "locate", "relevant": []},
        {"query": "no label here", "category": "semantic", "relevant": []},
    ]))
    (tmp_path / "b.json").write_text(json.dumps([{"query": "why does it crash", "task": "debug"}]))
    (tmp_path / "README.md").write_text("not a question file")
    assert classifier_accuracy.load_shared_questions(tmp_path) == [
        ("Context.forward", TaskType.LOCATE), ("why does it crash", TaskType.DEBUG)]


def _tiny_set(tmp_path: Path) -> Path:
    queries = tmp_path / "q.jsonl"
    rows = [{"query": "explain how it works", "task_type": "explain"},
            {"query": "parse_args", "task_type": "locate"}]
    queries.write_text("".join(json.dumps(row) + "\n" for row in rows) + "\n")
    return queries


def test_main_runs_on_a_tiny_set_and_writes_every_figure(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "result.json"
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "x.json").write_text(json.dumps([{"query": "where is the router", "task": "locate"}]))
    status = classifier_accuracy.main(["--queries", str(_tiny_set(tmp_path)),
                                       "--shared-questions", str(shared), "--out", str(out)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "q.jsonl: accuracy 1.0000 (2/2)" in printed
    assert "shared_questions: accuracy 1.0000 (1/1)" in printed
    sets = json.loads(out.read_text())["sets"]
    assert set(sets) == {"q.jsonl", "shared_questions"}
    assert set(sets["q.jsonl"]) >= {"accuracy", "precision", "recall", "confusion", "by_confidence", "misses"}


def test_the_shared_test_sets_misses_are_recorded_as_a_count_without_their_texts(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "x.json").write_text(json.dumps([{"query": NO_CUE, "task": "review"},
                                               {"query": "where is the router", "task": "locate"}]))
    assert classifier_accuracy.main(["--queries", str(_tiny_set(tmp_path)), "--shared-questions", str(shared),
                                     "--out", str(out)]) == 0
    text = out.read_text()
    sets = json.loads(text)["sets"]
    assert sets["shared_questions"]["misses"] == 1
    assert NO_CUE not in text
    assert sets["q.jsonl"]["misses"] == []  # a labelled set keeps its misses' texts (here: none)


def test_main_still_runs_when_the_shared_folder_is_absent(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "result.json"
    status = classifier_accuracy.main(["--queries", str(_tiny_set(tmp_path)),
                                       "--shared-questions", str(tmp_path / "absent"), "--out", str(out)])
    assert status == 0
    assert "is not a folder; skipped" in capsys.readouterr().err
    assert list(json.loads(out.read_text())["sets"]) == ["q.jsonl"]


def test_main_leaves_the_shared_questions_out_on_request(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    queries = _tiny_set(tmp_path)
    assert classifier_accuracy.main(["--queries", str(queries), "--no-shared", "--out", str(out)]) == 0
    assert list(json.loads(out.read_text())["sets"]) == ["q.jsonl"]


@pytest.mark.parametrize("content", ['{"query": "x", "task_type": "fix"}\n', "not json\n",
                                     '{"task_type": "debug"}\n'])
def test_bad_input_is_a_one_line_error_and_exit_status_2(tmp_path: Path, content: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "bad.jsonl"
    queries.write_text(content)
    out = tmp_path / "o.json"
    status = classifier_accuracy.main(["--queries", str(queries), "--no-shared", "--out", str(out)])
    assert status == 2
    error = capsys.readouterr().err
    assert error.startswith("classifier_accuracy: ") and error.count("\n") == 1
    assert not out.exists()


def test_the_recorded_results_match_the_classifier_on_the_committed_sets() -> None:
    # The README table is copied from this file: it must describe the cues as they are now.
    results = classifier_accuracy.RESULTS / "classifier_accuracy.json"
    recorded = json.loads(results.read_text(encoding="utf-8"))
    for path in classifier_accuracy.DEFAULT_SETS:
        labelled = classifier_accuracy.load_queries(path)
        correct = sum(classify(query).task_type is task for query, task in labelled)
        assert recorded["sets"][path.name]["correct"] == correct, path.name


def test_a_baseline_checkout_is_scored_beside_the_current_classifier(tmp_path: Path) -> None:
    src = Path(classifier_accuracy.__file__).resolve().parents[1] / "src"  # this checkout as its own baseline
    out = tmp_path / "result.json"
    status = classifier_accuracy.main(["--queries", str(_tiny_set(tmp_path)), "--no-shared",
                                       "--out", str(out), "--baseline-src", str(src)])
    assert status == 0
    recorded = json.loads(out.read_text())
    assert recorded["baseline"]["src"] == str(src)
    assert recorded["baseline"]["sets"]["q.jsonl"]["accuracy"] == recorded["sets"]["q.jsonl"]["accuracy"]


def test_a_baseline_folder_without_the_classifier_is_a_one_line_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = classifier_accuracy.main(["--queries", str(_tiny_set(tmp_path)), "--no-shared",
                                       "--out", str(tmp_path / "o.json"), "--baseline-src", str(tmp_path)])
    assert status == 2
    error = capsys.readouterr().err
    assert error.startswith("classifier_accuracy: FileNotFoundError: no classifier module at ")
    assert error.count("\n") == 1
