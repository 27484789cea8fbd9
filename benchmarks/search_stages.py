"""Where a warm `search` spends its time: each stage of the hybrid path timed alone, serially, in process.

Opens an indexed corpus (`--corpus DIR --store DIR`, e.g. the standard-library copy of
search_latency.py) and runs the stages of `RetrievalOrchestrator.retrieve` one after another on the
latency queries (query embedding, dense scan, sparse leg, the rows read while the dense leg runs,
fusion, candidate rows, rerank, precise entities), after one untimed pass; medians per call. The stages
are the orchestrator's own methods (private API: this follows them). With ``--baseline-python`` (the
interpreter of another install, e.g. a worktree of main), that install times the same stages on the
same store in a subprocess, round by round in turn with this one, so both see the same load.

    python benchmarks/search_stages.py --corpus DIR --store DIR [--baseline-python PYTHON] [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from search_latency import QUERIES

import knowcode

try:
    from knowcode.retrieval.reranker import reads_tokens
except ImportError:  # an install from before it: every candidate's tokens are read
    def reads_tokens(query: str) -> bool:
        """Every query reads the candidates' tokens."""
        return True

RESULTS = Path(__file__).parent / "results"
PER_LEG = 150  # the legs' depth at the default limit: 10 x reranker_top_k_multiplier 5 x CANDIDATE_FACTOR 3
POOL = 50  # the first tier's candidates: limit 10 x reranker_top_k_multiplier 5


def stages(corpus: Path, store: Path, repeats: int) -> dict[str, list[float]]:
    """Each stage's times in ms over `repeats` passes of the queries."""
    kc = knowcode.open(corpus, store=store)
    orchestrator: Any = kc.orchestrator()
    dense, sparse = orchestrator.index.dense, orchestrator.index.sparse
    # legs on one thread (HybridIndex without a pool): no rows are read before the fusion, all after it
    parallel = getattr(orchestrator.hybrid, "_pool", True) is not None
    times: dict[str, list[float]] = {}

    def timed(name: str, run: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = run(*args, **kwargs)
        times.setdefault(name, []).append((time.perf_counter() - started) * 1000)
        return result

    for number in range(repeats + 1):  # the first pass warms the process (page faults, caches) untimed
        if number == 1:
            times.clear()
        for query in QUERIES:
            vector = timed("query embedding", orchestrator.embedder.embed, [query], query=True)[0]
            dense_ids = [c for c, _ in timed("dense scan", dense.search, vector, PER_LEG)]
            sparse_ids = [c for c, _ in timed("sparse leg", sparse.search, query, PER_LEG)]
            prepared = timed("rows while dense (50)", orchestrator._while_dense, query, sparse_ids,
                             lambda: parallel)
            fused = timed("fusion", orchestrator._tiered_fusion, sparse_ids, dense_ids, set(dense_ids), POOL)
            tokens = {"tokens": False} if not reads_tokens(query) else {}
            candidates = timed("candidate objects", orchestrator._candidates, fused[:POOL],
                               named=prepared.named, read=prepared.rows, **tokens)
            ranked = timed("rerank", orchestrator._rerank, query, candidates, [])
            sources = {c.chunk.id: source for c, source in candidates}
            timed("precise entities, hits", orchestrator._unique_hits, query, ranked, sources, 10, [])
            timed("whole search", kc.search, query, limit=10)
    kc.close()
    return times


def main() -> None:
    """Time the stages (beside the baseline's, round by round), print and record the medians."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="the indexed folder")
    parser.add_argument("--store", type=Path, required=True, help="its store")
    parser.add_argument("--rounds", type=int, default=4, help="turns of each install")
    parser.add_argument("--repeats", type=int, default=5, help="timed passes of the queries per round")
    parser.add_argument("--baseline-python", help="interpreter of the install to compare with")
    parser.add_argument("--out", type=Path, default=RESULTS / "search_stages.json")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(stages(args.corpus, args.store, args.repeats)))
        return
    installs = {"current": sys.executable}
    if args.baseline_python:
        installs["baseline"] = args.baseline_python
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in installs}
    for number in range(args.rounds):
        order = list(installs) if number % 2 == 0 else list(reversed(list(installs)))
        for name in order:
            output = subprocess.run([installs[name], __file__, "--worker", "--corpus", str(args.corpus),
                                     "--store", str(args.store), "--repeats", str(args.repeats)],
                                    check=True, capture_output=True, text=True).stdout
            for stage, values in json.loads(output).items():
                samples[name].setdefault(stage, []).extend(values)
    result = {"measured_at": time.strftime("%Y-%m-%d %H:%M"), "store": str(args.store), "installs": installs,
              "queries": len(QUERIES), "rounds": args.rounds, "repeats": args.repeats,
              "median_ms": {name: {stage: round(statistics.median(ms), 3) for stage, ms in times.items()}
                            for name, times in samples.items()}}
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
