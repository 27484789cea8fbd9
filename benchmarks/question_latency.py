"""Warm in-process latency of `KnowCode.search` on the span-level questions, beside a variant config.

Both configurations search the same index (one store per repository), query by query in turn: each
question is run once by each to warm up, then `--repeats` times alternately, so both see the machine's
load of the same moments. Medians per question, then the median over questions and the median of the
per-question ratios (variant / default) are reported. The default variant switches relevance feedback
off, which only long questions use (`benchmarks/search_latency.py` times short queries).

    OPENBLAS_NUM_THREADS=1 python benchmarks/question_latency.py --corpus DIR --store-root DIR \
        [--variant '{"query_feedback": 0.0}']

(one BLAS thread, as the CLI, `serve` and `mcp` run: numpy reads it when it is first imported).
"""

from __future__ import annotations

import json
import os
import statistics
import time

from corpus_sets import (
    QUESTION_SET,
    RESULTS,
    corpus_parser,
    find_bench_dir,
    load_repos,
    open_repo,
    store_folder,
)
from issue_snapshots import parse_variant

import knowcode
from knowcode import KnowCode


def _timed(engine: KnowCode, query: str) -> float:
    started = time.perf_counter()
    engine.search(query, limit=10)
    return time.perf_counter() - started


def main() -> None:
    """Time both configurations on every question and write the medians as JSON."""
    parser = corpus_parser(__doc__, RESULTS / "question_latency.json")
    parser.add_argument("--variant", default='{"query_feedback": 0.0}',
                        help="AppConfig or RankingSignals fields of the configuration timed beside the "
                             "default (JSON)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    _, variant = parse_variant(f"variant={args.variant}")
    default_ms: list[float] = []
    variant_ms: list[float] = []
    with store_folder(args.store_root) as store_root:
        for repo in load_repos(find_bench_dir(args.bench), args.corpus, args.only, (QUESTION_SET,)):
            engine = open_repo(repo, store_root)
            engine.index()
            other = knowcode.open(engine.root, store=engine.store_dir, config=variant)
            for query in repo.of_set(QUESTION_SET):
                _timed(engine, query.text)  # warm-up, once each
                _timed(other, query.text)
                pairs = [(_timed(engine, query.text), _timed(other, query.text)) for _ in range(args.repeats)]
                default_ms.append(1e3 * statistics.median(a for a, _ in pairs))
                variant_ms.append(1e3 * statistics.median(b for _, b in pairs))
            other.close()
            engine.close()
    result = {"questions": len(default_ms), "repeats": args.repeats, "variant": json.loads(args.variant),
              "default_p50_ms": round(statistics.median(default_ms), 3),
              "variant_p50_ms": round(statistics.median(variant_ms), 3),
              "ratio_default_over_variant": round(statistics.median(
                  a / b for a, b in zip(default_ms, variant_ms, strict=True)), 3),
              "load_average": os.getloadavg()[0]}
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
