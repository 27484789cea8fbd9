"""Warm in-process latency of `KnowCode.search` on whole issue reports (bench/issues) as queries.

The reports of one repository are searched in the store that `quality.py --sets issues --store-root DIR`
left for it (DIR/issues/<owner>+<name>/tree and .../index), at whichever base commit the tree is at:
latency only, not quality. Each report is searched once to warm up, then `--repeats` rounds over all of
them; the median per report, then the median and mean over reports are reported. Two codes are compared
by running this with each on PYTHONPATH in turn, alternated (the JSON records which code ran):

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=OTHER/src python benchmarks/report_latency.py \
        --tree DIR/issues/django+django/tree --store DIR/issues/django+django/index --repo django/django

(one BLAS thread, as the CLI, `serve` and `mcp` run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from corpus_sets import find_bench_dir
from report import print_json_line

import knowcode

ISSUES_FILE = Path("issues") / "swe_verified_dev.json"


def main() -> None:
    """Time every report of the repository and print (or append to --out) the medians as JSON."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, required=True, help="the repository's work tree")
    parser.add_argument("--store", type=Path, required=True, help="its index folder")
    parser.add_argument("--repo", required=True, help="owner/name of the reports to search")
    parser.add_argument("--bench", type=Path, help="the benchmark folder (default: as quality.py finds it)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, help="a JSON-lines file to append the result to")
    args = parser.parse_args()
    bench = find_bench_dir(args.bench)
    reports = [i["problem_statement"] for i in json.loads((bench / ISSUES_FILE).read_text())
               if i["repo"] == args.repo]
    if not reports:
        raise SystemExit(f"no reports of {args.repo} in the issue set")
    engine = knowcode.open(args.tree, store=args.store)
    for report in reports:
        engine.search(report, limit=10)
    rounds = []
    for _ in range(args.repeats):
        timings = []
        for report in reports:
            started = time.perf_counter()
            engine.search(report, limit=10)
            timings.append(1e3 * (time.perf_counter() - started))
        rounds.append(timings)
    engine.close()
    per_report = [statistics.median(column) for column in zip(*rounds, strict=True)]
    result = {"code": str(Path(knowcode.__file__).parent), "repo": args.repo, "reports": len(reports),
              "repeats": args.repeats, "p50_ms": round(statistics.median(per_report), 2),
              "mean_ms": round(statistics.fmean(per_report), 2), "max_ms": round(max(per_report), 2),
              "load_average": os.getloadavg()[0]}
    print_json_line(result, args.out)


if __name__ == "__main__":
    main()
