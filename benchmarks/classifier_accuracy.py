"""Accuracy and confusion matrix of the query classifier on labelled query sets.

Each set is JSON Lines, one ``{"query": ..., "task_type": ...}`` per line. The default sets are
``tests/data/classifier_queries.jsonl`` (the tuning set: the cues were adjusted while looking at it) and
``tests/data/classifier_queries_holdout.jsonl`` (written after the cues were frozen and never tuned on;
its figure is the honest one). Rows of the matrix are the labels, columns the predictions.

    python benchmarks/classifier_accuracy.py [--queries FILE ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from knowcode.llm.query_classifier import classify
from knowcode.models import TaskType

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_SETS = (ROOT / "tests" / "data" / "classifier_queries.jsonl",
                ROOT / "tests" / "data" / "classifier_queries_holdout.jsonl")


def load_queries(path: Path) -> list[tuple[str, TaskType]]:
    """Read ``(query, task_type)`` pairs from a JSON Lines file, skipping blank lines."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(row["query"], TaskType(row["task_type"])) for row in rows]


def evaluate(labelled: Iterable[tuple[str, TaskType]]) -> dict[str, Any]:
    """Classify every query; return the count, accuracy, per-type recall and the confusion matrix."""
    matrix = {expected.value: {predicted.value: 0 for predicted in TaskType} for expected in TaskType}
    misses: list[dict[str, str]] = []
    for query, expected in labelled:
        predicted = classify(query).task_type
        matrix[expected.value][predicted.value] += 1
        if predicted is not expected:
            misses.append({"query": query, "expected": expected.value, "predicted": predicted.value})
    total = sum(sum(row.values()) for row in matrix.values())
    correct = sum(matrix[task.value][task.value] for task in TaskType)
    recall = {label: round(row[label] / sum(row.values()), 4)
              for label, row in matrix.items() if sum(row.values())}
    return {"queries": total, "correct": correct, "accuracy": round(correct / total, 4) if total else 0.0,
            "recall": recall, "confusion": matrix, "misses": misses}


def format_matrix(matrix: dict[str, dict[str, int]]) -> str:
    """Render the confusion matrix as a fixed-width table (rows: label, columns: prediction)."""
    labels = [task.value for task in TaskType]
    lines = ["label \\ pred".ljust(13) + "".join(label[:7].rjust(8) for label in labels)]
    lines += [expected.ljust(13) + "".join(str(matrix[expected][p]).rjust(8) for p in labels)
              for expected in labels]
    return "\n".join(lines)


def main() -> None:
    """Evaluate each query set, print accuracy and the matrix, and record the results as JSON."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--queries", type=Path, nargs="+", default=list(DEFAULT_SETS),
                        help="JSON Lines files of {query, task_type}")
    parser.add_argument("--out", type=Path, default=RESULTS / "classifier_accuracy.json")
    args = parser.parse_args()
    result: dict[str, Any] = {"measured_at": time.strftime("%Y-%m-%d %H:%M"), "sets": {}}
    for path in args.queries:
        report = evaluate(load_queries(path))
        result["sets"][path.name] = report
        print(f"{path.name}: accuracy {report['accuracy']:.4f} ({report['correct']}/{report['queries']})")
        print(format_matrix(report["confusion"]), end="\n\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
