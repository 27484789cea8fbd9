"""Accuracy, per-type precision and recall, confusion matrix and confidence curve of the query classifier.

The labelled sets (JSON Lines, one ``{"query": ..., "task_type": ...}`` a line; see
tests/data/classifier_README.md for how each was written and which were tuned on):

* ``classifier_queries.jsonl`` (174) and ``classifier_queries_holdout.jsonl`` (48): the first tuning set
  and its held-out questions, about KnowCode itself;
* ``classifier_queries_v2_tuning.jsonl`` (266) and ``classifier_queries_v2_holdout.jsonl`` (263): issue 13's
  set of developer questions about many codebases, split once before tuning; the cues were tuned on the
  first half only;
* ``classifier_queries_v3_tuning.jsonl`` (101) and ``classifier_queries_v3_holdout.jsonl`` (99): 200 long
  questions (symptoms and goals, few code names), split and tuned on the same way;
* ``classifier_queries_v4_tuning.jsonl`` (157) and ``classifier_queries_v4_holdout.jsonl`` (154): 311
  questions written to the shared questions' label conventions (symptom reports, curiosity "why"
  questions, bare identifiers, long whole-repository questions), split and tuned on the same way;
* ``classifier_queries_v5_tuning.jsonl`` (100) and ``classifier_queries_v5_holdout.jsonl`` (100): 200
  questions written fresh with more of the weak types (whole-repository, review, symptom-style debug
  questions), split and tuned on the same way;
* ``classifier_queries_v6_tuning.jsonl`` (50) and ``classifier_queries_v6_holdout.jsonl`` (50), and
  ``classifier_queries_v7_tuning.jsonl`` (41) and ``classifier_queries_v7_holdout.jsonl`` (41): 182 questions,
  mostly whole-repository, explain and review questions (the types the shared questions confuse), split and
  tuned on the same way;
* ``classifier_queries_v8_tuning.jsonl`` (117) and ``classifier_queries_v8_holdout.jsonl`` (113): 230
  questions by a new author, written before reading the earlier sets or the cues, split and tuned on the
  same way;
* ``classifier_queries_v9_tuning.jsonl`` (130) and ``classifier_queries_v9_holdout.jsonl`` (129): 259
  questions by another new author (v9), many of them whole-repository and review questions, written before
  reading the earlier sets or the cues, split and tuned on the same way;
* ``classifier_queries_v10_tuning.jsonl`` (154) and ``classifier_queries_v10_holdout.jsonl`` (152): 306
  questions by another new author (v10), written before reading the earlier sets or the cues, split and
  tuned on the same way;
* ``classifier_queries_v11_tuning.jsonl`` (60) and ``classifier_queries_v11_holdout.jsonl`` (60): the
  task labels of the 120 held-out span-level questions (benchmarks/data/questions_heldout), written in the
  shared questions' style by four new authors, split and tuned on the same way;
* ``classifier_queries_v12_tuning.jsonl`` (60) and ``classifier_queries_v12_holdout.jsonl`` (60): the
  labels of the 120 held-out questions in eight more languages (benchmarks/data/questions_langs), by four
  further authors, split and tuned on the same way;
* ``classifier_queries_v13_tuning.jsonl`` (60) and ``classifier_queries_v13_holdout.jsonl`` (60): the
  labels of the 120 held-out questions on eight whole Python and TypeScript repositories
  (benchmarks/data/questions_repos), by four further authors, split the same way;
* the shared span-level questions (``../shared/bench/questions/*.json``, 120 with a ``task`` label), a test
  set that is never tuned on; skipped with a note when the folder is absent.

Rows of the confusion matrix are the labels, columns the predictions. The shared questions' misses are
recorded as a count only: they are a test set, and their texts in the results would invite tuning on them.
Accuracy by confidence bin shows whether the confidence means something: a higher bin should be right more
often. With ``--baseline-src
DIR`` the classifier module of another checkout (``DIR/knowcode/llm/query_classifier.py``, e.g. a worktree
of main) is scored on the same sets in the same run, and recorded beside the current one.

    python benchmarks/classifier_accuracy.py [--queries FILE ...] [--shared-questions DIR] [--out FILE]
        [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from knowcode.llm.query_classifier import classify
from knowcode.models import TaskType

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DATA = ROOT / "tests" / "data"
DEFAULT_SETS = tuple(DATA / f"classifier_queries{name}.jsonl" for name in (
    "", "_holdout", "_v2_tuning", "_v2_holdout", "_v3_tuning", "_v3_holdout", "_v4_tuning", "_v4_holdout",
    "_v5_tuning", "_v5_holdout", "_v6_tuning", "_v6_holdout", "_v7_tuning", "_v7_holdout", "_v8_tuning",
    "_v8_holdout", "_v9_tuning", "_v9_holdout", "_v10_tuning", "_v10_holdout", "_v11_tuning", "_v11_holdout",
    "_v12_tuning", "_v12_holdout", "_v13_tuning", "_v13_holdout"))
# Where the shared span-level questions are looked for: the benchmark folder corpus_sets.py uses
# ($KNOWCODE_BENCH_DIR, else bench/ beside the repository, else ../shared/bench), its questions/ folder.
BENCH_DIR_ENV = "KNOWCODE_BENCH_DIR"
BENCH_CANDIDATES = (ROOT / "bench", ROOT.parent / "shared" / "bench")
SHARED_SET = "shared_questions"
# Confidence bins for the accuracy curve (issue 13: "report how accuracy varies with confidence"): quarters
# of [0, 1], the last one closed so a confidence of exactly 1.0 falls in it.
CONFIDENCE_BINS: tuple[tuple[float, float], ...] = ((0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0))

# Where a checkout's classifier module lies below its source folder (for --baseline-src).
CLASSIFIER_MODULE = Path("knowcode") / "llm" / "query_classifier.py"
BASELINE_MODULE_NAME = "knowcode_baseline_query_classifier"  # private: never shadows knowcode's own

Labelled = list[tuple[str, TaskType]]
# A classifier as this script uses it: a query in, the chosen type's value and the confidence out (a
# baseline module's TaskType is compared by value, so an older checkout's enum works too).
Classifier = Callable[[str], tuple[str, float]]


def current_classifier(query: str) -> tuple[str, float]:
    """The installed classifier's type value and confidence for a query."""
    result = classify(query)
    return result.task_type.value, result.confidence


def load_baseline_classifier(src: Path) -> Classifier:
    """The ``classify`` of another checkout's source folder, loaded under a private module name.

    :param src: a source folder holding ``knowcode/llm/query_classifier.py`` (e.g. ``../wt-base/src``).
    :return: a classifier returning the type's value and the confidence.
    :raises OSError: when the module file is missing.
    """
    path = src / CLASSIFIER_MODULE
    spec = importlib.util.spec_from_file_location(BASELINE_MODULE_NAME, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise FileNotFoundError(f"no classifier module at {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is being built
    spec.loader.exec_module(module)
    baseline_classify = module.classify

    def classify_with_baseline(query: str) -> tuple[str, float]:
        result = baseline_classify(query)
        return str(result.task_type.value), float(result.confidence)

    return classify_with_baseline


def load_queries(path: Path) -> Labelled:
    """Read ``(query, task_type)`` pairs from a JSON Lines file, skipping blank lines."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(row["query"], TaskType(row["task_type"])) for row in rows]


def load_shared_questions(folder: Path) -> Labelled:
    """Read ``(query, task)`` pairs from every ``*.json`` list in the shared questions folder, by file name.

    :param folder: the folder of JSON lists whose items carry ``query`` and ``task``.
    :return: the labelled questions; items without a ``task`` are skipped.
    """
    labelled: Labelled = []
    for path in sorted(folder.glob("*.json")):
        items = json.loads(path.read_text(encoding="utf-8"))
        labelled += [(item["query"], TaskType(item["task"])) for item in items if item.get("task")]
    return labelled


def default_shared_folder() -> Path | None:
    """The shared questions folder: ``questions/`` in $KNOWCODE_BENCH_DIR, else in the first known
    benchmark folder; None when there is none."""
    benches = [Path(os.environ[BENCH_DIR_ENV])] if os.environ.get(BENCH_DIR_ENV) else list(BENCH_CANDIDATES)
    for bench in benches:
        if (bench / "questions").is_dir():
            return bench / "questions"
    return None


def bin_label(low: float, high: float) -> str:
    """``[0.5,0.75)``, or ``[0.75,1.0]`` for the last bin, which includes 1.0."""
    closing = "]" if high >= CONFIDENCE_BINS[-1][1] else ")"
    return f"[{low},{high}{closing}"


def _bin_of(confidence: float) -> int:
    for index, (_, high) in enumerate(CONFIDENCE_BINS):
        if confidence < high:
            return index
    return len(CONFIDENCE_BINS) - 1


def evaluate(labelled: Iterable[tuple[str, TaskType]],
             classifier: Classifier = current_classifier) -> dict[str, Any]:
    """Classify every query and score the predictions.

    :param labelled: ``(query, expected type)`` pairs.
    :param classifier: what classifies a query; defaults to the installed classifier.
    :return: the count, correct count, accuracy, per-type precision (types never predicted left out) and
        recall (types never expected left out), the confusion matrix, accuracy by confidence bin and
        the misses.
    """
    matrix = {expected.value: {predicted.value: 0 for predicted in TaskType} for expected in TaskType}
    bins = [{"bin": bin_label(low, high), "queries": 0, "correct": 0} for low, high in CONFIDENCE_BINS]
    misses: list[dict[str, Any]] = []
    for query, expected in labelled:
        predicted, confidence = classifier(query)
        matrix[expected.value][predicted] += 1
        slot = bins[_bin_of(confidence)]
        slot["queries"] += 1
        slot["correct"] += predicted == expected.value
        if predicted != expected.value:
            misses.append({"query": query, "expected": expected.value, "predicted": predicted,
                           "confidence": round(confidence, 3)})
    labels = [task.value for task in TaskType]
    total = sum(sum(row.values()) for row in matrix.values())
    correct = sum(matrix[label][label] for label in labels)
    recall = {label: round(row[label] / sum(row.values()), 4)
              for label, row in matrix.items() if sum(row.values())}
    predicted_counts = {label: sum(matrix[expected][label] for expected in labels) for label in labels}
    precision = {label: round(matrix[label][label] / count, 4)
                 for label, count in predicted_counts.items() if count}
    for slot in bins:
        slot["accuracy"] = round(slot["correct"] / slot["queries"], 4) if slot["queries"] else None
    return {"queries": total, "correct": correct, "accuracy": round(correct / total, 4) if total else 0.0,
            "precision": precision, "recall": recall, "confusion": matrix, "by_confidence": bins,
            "misses": misses}


def without_test_texts(name: str, report: dict[str, Any]) -> dict[str, Any]:
    """The report to record: for the shared test set, the misses as a count instead of their texts.

    :param name: the set's name (:data:`SHARED_SET` for the shared questions).
    :param report: what :func:`evaluate` returned for the set.
    :return: the report itself for a labelled set; a copy with ``misses`` replaced by its length for the
        shared questions.
    """
    if name != SHARED_SET:
        return report
    return {**report, "misses": len(report["misses"])}


def format_matrix(matrix: dict[str, dict[str, int]]) -> str:
    """Render the confusion matrix as a fixed-width table (rows: label, columns: prediction)."""
    labels = [task.value for task in TaskType]
    lines = ["label \\ pred".ljust(13) + "".join(label[:7].rjust(8) for label in labels)]
    lines += [expected.ljust(13) + "".join(str(matrix[expected][p]).rjust(8) for p in labels)
              for expected in labels]
    return "\n".join(lines)


def format_report(name: str, report: dict[str, Any]) -> str:
    """Accuracy, per-type precision/recall, the matrix and the confidence curve of one set, as text."""
    def figure(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    labels = [task.value for task in TaskType]
    lines = [f"{name}: accuracy {report['accuracy']:.4f} ({report['correct']}/{report['queries']})",
             "type".ljust(13) + "".join(label[:7].rjust(8) for label in labels),
             *(kind.ljust(13) + "".join(figure(report[kind].get(label)).rjust(8) for label in labels)
               for kind in ("precision", "recall")),
             format_matrix(report["confusion"]),
             "confidence   " + "  ".join(f"{slot['bin']} {figure(slot['accuracy'])} (n={slot['queries']})"
                                         for slot in report["by_confidence"])]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Evaluate each query set, print the figures and record them as JSON; return the exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--queries", type=Path, nargs="+", default=list(DEFAULT_SETS),
                        help="JSON Lines files of {query, task_type} (default: the twenty-six sets in "
                             "tests/data)")
    parser.add_argument("--shared-questions", type=Path, default=None, metavar="DIR",
                        help="folder of the shared span-level questions (*.json with a task label; default: "
                             f"questions/ in ${BENCH_DIR_ENV} or ../shared/bench); skipped when absent")
    parser.add_argument("--no-shared", action="store_true", help="leave the shared questions out")
    parser.add_argument("--out", type=Path, default=RESULTS / "classifier_accuracy.json")
    parser.add_argument("--baseline-src", type=Path, default=None, metavar="DIR",
                        help="also score the classifier of this source folder (another checkout's src/)")
    args = parser.parse_args(argv)
    sets: dict[str, Labelled] = {}
    baseline: Classifier | None = None
    try:
        if args.baseline_src is not None:
            baseline = load_baseline_classifier(args.baseline_src)
        for path in args.queries:
            sets[path.name] = load_queries(path)
        shared = None if args.no_shared else (args.shared_questions or default_shared_folder())
        if shared is not None and shared.is_dir():
            sets[SHARED_SET] = load_shared_questions(shared)
        elif shared is not None:
            print(f"shared questions: {shared} is not a folder; skipped", file=sys.stderr)
    except (OSError, ValueError, KeyError) as error:  # a missing file, bad JSON, an unknown or absent label
        print(f"classifier_accuracy: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    result: dict[str, Any] = {"measured_at": time.strftime("%Y-%m-%d %H:%M"), "sets": {}}
    if baseline is not None:
        result["baseline"] = {"src": str(args.baseline_src), "sets": {}}
    for name, labelled in sets.items():
        report = evaluate(labelled)
        result["sets"][name] = without_test_texts(name, report)
        print(format_report(name, report), end="\n\n")
        if baseline is not None:
            before = evaluate(labelled, baseline)
            result["baseline"]["sets"][name] = without_test_texts(name, before)
            print(format_report(f"{name} (baseline)", before), end="\n\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
