"""How much a newer labelled set repeats the earlier ones, and its accuracy without the repeats.

Questions written in separate rounds by the same rules converge on common phrasings ("give me an overview
of this codebase"), so a held-out half can hold near copies of questions the cues were tuned on, which
flatters its accuracy. A question is a near duplicate when the Jaccard similarity of its word set and an
earlier question's is at least :data:`NEAR_DUPLICATE_JACCARD`. For each newer set the script lists its near
duplicates and scores the set with and without them.

    python benchmarks/classifier_overlap.py [--new FILE ...] [--earlier FILE ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from classifier_accuracy import DATA, RESULTS, evaluate, load_queries

# Chosen by reading the v5 set's pairs beside the earlier sets': from 0.6 up the pairs are mostly the same
# question reworded ("add a `--json` flag to the status command" / "Add a `--json` output flag to the
# `status` command"; one of 14 is not: "How is this project structured?" / "How big is this project?");
# below it they share a topic but ask differently.
NEAR_DUPLICATE_JACCARD = 0.6
WORD = re.compile(r"\w+")
DEFAULT_NEW = (DATA / "classifier_queries_v5_holdout.jsonl", DATA / "classifier_queries_v5_tuning.jsonl")
DEFAULT_EARLIER = tuple(DATA / f"classifier_queries{name}.jsonl"
                        for name in ("", "_holdout", "_v2", "_v3", "_v4"))


def words(query: str) -> frozenset[str]:
    """The query's lower-cased words."""
    return frozenset(WORD.findall(query.lower()))


def jaccard(left: frozenset[str], right: frozenset[str]) -> float:
    """|left & right| / |left | right|, 0 for two empty sets."""
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def near_duplicates(new: Sequence[str], earlier: Sequence[str],
                    threshold: float = NEAR_DUPLICATE_JACCARD) -> dict[str, tuple[str, float]]:
    """Each new question with an earlier one at least ``threshold`` similar: its closest earlier question.

    :param new: the newer set's questions.
    :param earlier: every question of the earlier sets.
    :param threshold: the smallest Jaccard similarity that counts as a near duplicate.
    :return: new question -> (closest earlier question, similarity), only for near duplicates.
    """
    earlier_words = [(query, words(query)) for query in earlier]
    found: dict[str, tuple[str, float]] = {}
    for query in new:
        mine = words(query)
        best = max(((other, jaccard(mine, theirs)) for other, theirs in earlier_words),
                   key=lambda pair: pair[1], default=("", 0.0))
        if best[1] >= threshold:
            found[query] = (best[0], round(best[1], 3))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Score every newer set with and without its near duplicates; print and record the figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--new", type=Path, nargs="+", default=list(DEFAULT_NEW))
    parser.add_argument("--earlier", type=Path, nargs="+", default=list(DEFAULT_EARLIER))
    parser.add_argument("--out", type=Path, default=RESULTS / "classifier_overlap.json")
    args = parser.parse_args(argv)
    try:
        earlier = [query for path in args.earlier for query, _ in load_queries(path)]
        sets = {path.name: load_queries(path) for path in args.new}
    except (OSError, ValueError, KeyError) as error:
        print(f"classifier_overlap: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    result: dict[str, Any] = {"threshold": NEAR_DUPLICATE_JACCARD, "sets": {}}
    for name, labelled in sets.items():
        duplicates = near_duplicates([query for query, _ in labelled], earlier)
        fresh = [(query, task) for query, task in labelled if query not in duplicates]
        whole, rest = evaluate(labelled), evaluate(fresh)
        result["sets"][name] = {
            "queries": whole["queries"], "accuracy": whole["accuracy"],
            "near_duplicates": [{"query": query, "earlier": other, "jaccard": score}
                                for query, (other, score) in duplicates.items()],
            "without_near_duplicates": {key: rest[key]
                                        for key in ("queries", "correct", "accuracy", "recall")}}
        print(f"{name}: {len(duplicates)} of {whole['queries']} near duplicates; "
              f"accuracy {whole['accuracy']:.4f}, without them {rest['accuracy']:.4f} "
              f"({rest['correct']}/{rest['queries']})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
