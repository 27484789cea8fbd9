"""Context bundles on the public benchmark: bundle recall by token budget, against grep-and-read.

For each query and each budget (500, 1,000, 2,000, 4,000 tokens) it asks `KnowCode.context` for a
bundle (task type auto, verbosity minimal, dependencies expanded) and checks whether the bundle
holds an annotated target: one of its entities lies in a target file, overlapping a target span
(bench/README.md's path and line rules). The baseline, measured in the same run, is what an agent
without an index does: grep the query's words, then read whole files, most matching first, until it
has read a target file; its cost is the tokens of every file read. Both are counted with the same
offline tokenizer.

    python benchmarks/tokens.py --corpus DIR [--only flask ...]
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path
from typing import Any

from corpus_sets import RESULTS, corpus_parser, find_bench_dir, load_repos, log, open_repo, store_folder

from knowcode import KnowCode
from knowcode.evals.routing_eval import bundle_holds_target
from knowcode.evals.scoring import Hit, Query, Target, hit_matches
from knowcode.indexing.tokenizer import STOP_WORDS

BUDGETS = (500, 1000, 2000, 4000)  # issue #4: the budgets to report
GREP_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")  # words an agent would grep for (3+ characters)


def grep_and_read_tokens(kc: KnowCode, root: Path, query: Query) -> int | None:
    """Tokens read by grepping the query's words and reading whole files until a target file is read.

    Files are ordered by how many of the query's words they contain (ties: more occurrences, then
    path). None when no file with any of the words is a target.
    """
    words = {w.lower() for w in GREP_WORD.findall(query.text) if w.lower() not in STOP_WORDS}
    scored: list[tuple[int, int, str, str]] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        lowered = text.lower()
        present = [w for w in words if w in lowered]
        if present:
            occurrences = sum(lowered.count(w) for w in present)
            scored.append((-len(present), -occurrences, path.relative_to(root).as_posix(), text))
    spent = 0
    counter = kc.token_counter()
    for _, _, relative, text in sorted(scored):
        spent += counter.count(text)
        if any(hit_matches(Target(t.path), Hit(relative, 1, 1)) for t in query.targets):
            return spent
    return None


def main() -> None:
    """Run the benchmark and write benchmarks/results/tokens.json."""
    args = corpus_parser(__doc__, RESULTS / "tokens.json").parse_args()
    repos = load_repos(find_bench_dir(args.bench), args.corpus, args.only)
    rows: list[dict[str, Any]] = []
    latencies: list[float] = []
    with store_folder(args.store_root) as store_root:
        for repo in repos:
            kc = open_repo(repo, store_root)
            kc.index()
            for query in repo.queries:
                row: dict[str, Any] = {"repo": repo.name, "query": query.text}
                for budget in BUDGETS:
                    started = time.perf_counter()
                    bundle = kc.context(query.text, max_tokens=budget)
                    latencies.append((time.perf_counter() - started) * 1000)
                    row[f"found_{budget}"] = bundle_holds_target(bundle, query)
                    row[f"tokens_{budget}"] = bundle.total_tokens
                row["grep_tokens"] = grep_and_read_tokens(kc, kc.root, query)
                rows.append(row)
            log(f"[{repo.name}] recall@2000 "
                f"{statistics.fmean(r['found_2000'] for r in rows if r['repo'] == repo.name):.2f}")
    recall = {budget: round(statistics.fmean(r[f"found_{budget}"] for r in rows), 3) for budget in BUDGETS}
    # Cost of reaching the target, on the queries where both reach it: the bundle at the 2,000-token
    # budget, and the cheapest bundle (smallest budget) that holds the target, against grep-and-read.
    both = [r for r in rows if r["found_2000"] and r["grep_tokens"] is not None]
    ratios = [r["grep_tokens"] / max(1, r["tokens_2000"]) for r in both]
    cheapest = [min(r[f"tokens_{b}"] for b in BUDGETS if r[f"found_{b}"]) for r in both]
    cheapest_ratios = [r["grep_tokens"] / max(1, tokens) for r, tokens in zip(both, cheapest, strict=True)]
    result = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"), "queries": len(rows), "budgets": list(BUDGETS),
        "bundle_recall": recall,
        "median_bundle_tokens_2000": statistics.median(r["tokens_2000"] for r in both) if both else None,
        "median_grep_tokens": statistics.median(r["grep_tokens"] for r in both) if both else None,
        "median_token_ratio": round(statistics.median(ratios), 1) if ratios else None,
        "median_cheapest_bundle_tokens": statistics.median(cheapest) if cheapest else None,
        "median_cheapest_token_ratio": (round(statistics.median(cheapest_ratios), 1)
                                        if cheapest_ratios else None),
        "grep_reaches_target": round(statistics.fmean(r["grep_tokens"] is not None for r in rows), 3),
        "context_p50_ms": round(statistics.median(latencies), 2),
        "rows": rows,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
