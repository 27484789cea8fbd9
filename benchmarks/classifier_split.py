"""Split a labelled query set once into a tuning half and a held-out half, stratified by task type.

The split is reproducible: within each task type the rows (in file order) are shuffled by a
``random.Random`` seeded with ``SPLIT_SEED`` and the type's name, the first half goes to tuning and the
rest to held-out; each half keeps the source file's order. ``tests/data/classifier_queries_v2.jsonl``
was split this way once, before any cue was tuned on it; a unit test checks the two halves still equal
this split, so they cannot drift apart from the source.

    python benchmarks/classifier_split.py tests/data/classifier_queries_v2.jsonl \\
        --tuning tests/data/classifier_queries_v2_tuning.jsonl \\
        --holdout tests/data/classifier_queries_v2_holdout.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from knowcode.models import TaskType

# Fixed once, for issue 13 (the issue that asked for the split); changing it would be a re-split, which
# the issue rules out after results have been seen.
SPLIT_SEED = 13

Row = dict[str, str]


def read_rows(path: Path) -> list[Row]:
    """Read ``{"query", "task_type"}`` rows from a JSON Lines file, skipping blank lines.

    :param path: the JSON Lines file.
    :return: the rows in file order.
    :raises ValueError: when a row lacks a query or names an unknown task type.
    """
    rows: list[Row] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not str(row.get("query", "")).strip():
            raise ValueError(f"{path}:{number}: a row without a query")
        TaskType(row.get("task_type"))  # raises ValueError on an unknown type
        rows.append({"query": row["query"], "task_type": row["task_type"]})
    return rows


def split_halves(rows: Sequence[Row], seed: int = SPLIT_SEED) -> tuple[list[Row], list[Row]]:
    """Split rows into (tuning, held-out), half of each task type in each, reproducibly.

    :param rows: the labelled rows, in file order.
    :param seed: the shuffle seed; the same rows and seed always give the same halves.
    :return: the tuning half (the larger one when a type has an odd count) and the held-out half, each in
        the input order.
    """
    tuning_ids: set[int] = set()
    for task in TaskType:
        ids = [index for index, row in enumerate(rows) if row["task_type"] == task.value]
        random.Random(f"{seed}:{task.value}").shuffle(ids)
        tuning_ids.update(ids[:(len(ids) + 1) // 2])
    tuning = [row for index, row in enumerate(rows) if index in tuning_ids]
    holdout = [row for index, row in enumerate(rows) if index not in tuning_ids]
    return tuning, holdout


def write_rows(path: Path, rows: Sequence[Row]) -> None:
    """Write rows as JSON Lines (UTF-8, one object a line)."""
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Split SOURCE into the two files named by --tuning and --holdout; return the exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("source", type=Path, help="JSON Lines file of {query, task_type}")
    parser.add_argument("--tuning", type=Path, required=True, help="where the tuning half goes")
    parser.add_argument("--holdout", type=Path, required=True, help="where the held-out half goes")
    parser.add_argument("--seed", type=int, default=SPLIT_SEED, help=f"shuffle seed (default {SPLIT_SEED})")
    args = parser.parse_args(argv)
    try:
        rows = read_rows(args.source)
    except (OSError, ValueError) as error:  # json.JSONDecodeError is a ValueError
        print(f"classifier_split: {error}", file=sys.stderr)
        return 2
    tuning, holdout = split_halves(rows, args.seed)
    write_rows(args.tuning, tuning)
    write_rows(args.holdout, holdout)
    print(f"{len(rows)} rows: {len(tuning)} tuning -> {args.tuning}, "
          f"{len(holdout)} held-out -> {args.holdout}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
