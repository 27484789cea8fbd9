"""What the top-10 hits of a quality.py run are: a breakdown per set and method, read from quality.json.

Each hit of the first 10 falls in the first of these classes that fits: `target` (it matches a target:
exact paths for issues, the lenient rule for the corpus sets), `target file` (a target's file, other
lines), `test`, `non-code` (set_scoring.NON_CODE_SUFFIXES / NON_CODE_NAMES), `docs/examples`, or
`other code`. Also where the first target was found (rank 1, 2-3, 4-10, 11-50 when the run kept a
limit-50 answer, or not at all) and the mean lines of target hits against the others.

    python benchmarks/hit_analysis.py [benchmarks/results/quality.json] [--methods bm25-lines knowcode]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from set_scoring import is_non_code

from knowcode.evals.scoring import Hit, Target, hit_matches

CLASSES = ("target", "target file", "test", "non-code", "docs/examples", "other code")
TEST_PATH = re.compile(r"(^|/)(tests?|testing)(/|$)|(^|/)test_[^/]*$|_tests?\.[a-z]+$"
                       r"|\.(test|spec)\.[jt]sx?$")
DOCS_PATH = re.compile(r"(^|/)(docs?|examples?|samples?|benchmarks?|tutorials?)(/|$)")
RANK_BUCKETS = ("1", "2-3", "4-10", "11-50", "none")


def _targets(raw: list[Any]) -> list[Target]:
    return [Target(t) if isinstance(t, str) else Target(t[0], t[1], t[2]) for t in raw]


def classify(hit: Hit, targets: list[Target], exact: bool) -> str:
    """The class of one hit (see the module docstring)."""
    def same_file(target: Target) -> bool:
        return hit.path == target.path if exact else hit_matches(Target(target.path), hit)

    def overlaps(target: Target) -> bool:
        if not same_file(target):
            return False
        return not target.is_span or (hit.start_line <= (target.end_line or 0)
                                      and hit.end_line >= (target.start_line or 0))

    if any(overlaps(t) for t in targets):
        return "target"
    if any(same_file(t) for t in targets):
        return "target file"
    if TEST_PATH.search(hit.path):
        return "test"
    if is_non_code(hit.path):
        return "non-code"
    return "docs/examples" if DOCS_PATH.search(hit.path) else "other code"


def _bucket(rank: int | None) -> str:
    if rank is None:
        return "none"
    return "1" if rank == 1 else "2-3" if rank <= 3 else "4-10" if rank <= 10 else "11-50"


def analyse(set_name: str, data: dict[str, Any], method: str) -> dict[str, Any]:
    """The breakdown of one method's hits on one set."""
    exact = set_name == "issues"
    targets = {q["id"]: _targets(q["targets"]) for q in data["queries"]}
    classes: Counter[str] = Counter()
    first: Counter[str] = Counter()
    sizes: dict[bool, list[int]] = {True: [], False: []}
    for query in data["methods"][method]["queries"]:
        wanted = targets[query["id"]]
        hits = [Hit(*h) for h in query["hits"][:10]]
        kinds = [classify(hit, wanted, exact) for hit in hits]
        classes.update(kinds)
        for hit, kind in zip(hits, kinds, strict=True):
            sizes[kind == "target"].append(hit.end_line - hit.start_line + 1)
        ranked = [Hit(*h) for h in query.get("hits_long") or query["hits"]]
        found = [n for n, hit in enumerate(ranked, start=1) if classify(hit, wanted, exact) == "target"]
        first[_bucket(found[0] if found else None)] += 1
    total = sum(classes.values()) or 1
    queries = sum(first.values()) or 1
    return {"classes": {c: round(classes[c] / total, 3) for c in CLASSES},
            "first_target": {b: round(first[b] / queries, 3) for b in RANK_BUCKETS},
            "lines_target_hits": round(statistics.fmean(sizes[True]), 1) if sizes[True] else None,
            "lines_other_hits": round(statistics.fmean(sizes[False]), 1) if sizes[False] else None}


def main() -> None:
    """Print one markdown table per set: each method's hit classes and first-target ranks."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("result", type=Path, nargs="?",
                        default=Path(__file__).resolve().parent / "results" / "quality.json")
    parser.add_argument("--methods", nargs="+", default=["bm25-lines", "knowcode"])
    args = parser.parse_args()
    result = json.loads(args.result.read_text(encoding="utf-8"))
    for set_name, data in result["sets"].items():
        print(f"\n## {set_name}: top-10 hits by class (share of hits); "
              "first target's rank (share of queries)\n")
        header = ["method", *CLASSES, *(f"first@{b}" for b in RANK_BUCKETS), "lines target/other"]
        print("| " + " | ".join(header) + " |\n| --- |" + " ---: |" * (len(header) - 1))
        for method in args.methods:
            if data["methods"].get(method, {}).get("status") != "ok":
                continue
            found = analyse(set_name, data, method)
            cells = [*(f"{found['classes'][c]:.3f}" for c in CLASSES),
                     *(f"{found['first_target'][b]:.3f}" for b in RANK_BUCKETS),
                     f"{found['lines_target_hits']} / {found['lines_other_hits']}"]
            print(f"| {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
