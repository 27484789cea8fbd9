"""Warm query latency of `KnowCode.search` on a large index (~20,000 chunks), beside plain BM25.

The corpus is the installed standard library (offline on every machine), trimmed to about the
target chunk count. Each query runs once to warm up, then `--repeats` times; medians and p95 are
reported. The baseline, measured in the same run on the same chunks, is bm25s alone (its own
tokenizer, no fusion or ranking), so the ratio shows what hybrid retrieval and reranking cost.

With ``--baseline-python`` (the interpreter of another install, e.g. a worktree of main with its own
venv), both installs also answer the same queries in two worker processes, each over its own index of
the same corpus, query by query in turn (the first to run alternates); each query's repeats run back
to back in one worker, as in the in-process timing, so both see the machine's load of the same
moments. Their medians and the median of the per-query ratios are recorded under ``paired``.

    python benchmarks/search_latency.py [--chunks 20000] [--repeats 20] [--baseline-python PYTHON]
    python benchmarks/search_latency.py --chunks 100000 --site-packages  # past the library's ~50k chunks
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import bm25s
from stdlib_corpus import copy_stdlib

import knowcode

RESULTS = Path(__file__).parent / "results"
# Questions and symbols about the standard library: words, identifiers and dotted names.
QUERIES = (
    "how are http cookies parsed", "JSONDecoder", "thread pool executor shutdown",
    "parse command line arguments", "email header encoding", "how does asyncio schedule callbacks",
    "ZipFile", "tarfile extraction filter",
    "logging handler that rotates files", "urllib.parse.urlsplit", "xml element tree iteration",
    "csv dialect sniffing", "how is a subprocess pipe read without deadlock", "dataclass field defaults",
    "Path.glob", "socket timeout handling", "sqlite3 row factory", "decimal rounding modes",
    "unittest test discovery", "how are import hooks found", "shutil copytree ignore patterns",
    "OrderedDict move_to_end", "ssl context certificate verification", "gzip stream decompression",
    "inspect signature of a callable", "multiprocessing queue feeder thread", "configparser interpolation",
    "textwrap fill paragraph", "datetime timezone conversion", "random sample without replacement",
)


def _corpus(dest: Path, chunk_target: int, *, site_packages: bool = False) -> Path:
    """Copy standard-library Python files, in path order, until ~chunk_target chunks (~1 per 21 lines);
    with `site_packages`, then the library's installed packages, under ``installed/`` (indexing skips
    folders named site-packages), until the target."""
    wanted = chunk_target * 21  # measured: ~21 lines per chunk on this corpus
    copy_stdlib(dest, wanted)
    if site_packages:
        copied = sum(path.read_bytes().count(b"\n") for path in dest.rglob("*.py"))
        packages = Path(sysconfig.get_paths()["stdlib"]) / "site-packages"
        if copied < wanted:
            copy_stdlib(dest / "installed", wanted - copied, frozenset(), lib=packages)
    return dest


def _timed(run: object, repeats: int) -> list[float]:
    samples = []
    for query in QUERIES:
        run(query)  # type: ignore[operator]
        for _ in range(repeats):
            started = time.perf_counter()
            run(query)  # type: ignore[operator]
            samples.append((time.perf_counter() - started) * 1000)
    return samples


def worker(root: Path, store: Path) -> None:
    """Answer timing requests on stdin ("repeats<TAB>query" lines) with the repeats' times in ms."""
    kc = knowcode.open(root, store=store)
    kc.index()
    for query in QUERIES:
        kc.search(query, limit=10)  # warm: every query once
    print("ready", flush=True)
    for line in sys.stdin:
        repeats, query = line.rstrip("\n").split("\t", 1)
        samples = []
        for _ in range(int(repeats)):
            started = time.perf_counter()
            kc.search(query, limit=10)
            samples.append((time.perf_counter() - started) * 1000)
        print(" ".join(f"{ms:.4f}" for ms in samples), flush=True)


def paired(root: Path, stores: Path, pythons: dict[str, str], repeats: int) -> dict[str, object]:
    """Both installs' warm searches over the same corpus, query by query in turn (see the docstring)."""
    workers = {name: subprocess.Popen([python, __file__, "--worker", str(root), str(stores / name)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for name, python in pythons.items()}
    samples: dict[str, list[float]] = {name: [] for name in workers}
    ratios = []
    try:
        for name, process in workers.items():
            assert process.stdout is not None and process.stdout.readline().strip() == "ready", name
        for number, query in enumerate(QUERIES):
            order = list(workers) if number % 2 == 0 else list(reversed(list(workers)))
            per_query = {}
            for name in order:
                process = workers[name]
                assert process.stdin is not None and process.stdout is not None
                process.stdin.write(f"{repeats}\t{query}\n")
                process.stdin.flush()
                per_query[name] = [float(ms) for ms in process.stdout.readline().split()]
                samples[name] += per_query[name]
            current, baseline = (statistics.median(per_query[name]) for name in pythons)
            ratios.append(baseline / current)
    finally:
        for process in workers.values():
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=60)
    names = list(pythons)
    return {"installs": pythons,
            "p50_ms": {name: round(statistics.median(samples[name]), 2) for name in names},
            "p95_ms": {name: round(statistics.quantiles(samples[name], n=20)[-1], 2) for name in names},
            "median_query_ratio_baseline_over_current": round(statistics.median(ratios), 3)}


def main() -> None:
    """Index the corpus, time both methods, print and record the medians."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000, help="approximate index size")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--baseline-python", help="interpreter of the install to compare with, paired")
    parser.add_argument("--baseline-label", default="baseline", help="what the baseline install is")
    parser.add_argument("--site-packages", action="store_true",
                        help="copy the interpreter's site-packages too (past the library's ~50k chunks)")
    parser.add_argument("--out", type=Path, default=RESULTS / "search_latency.json")
    parser.add_argument("--worker", nargs=2, type=Path, metavar=("CORPUS", "STORE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = _corpus(Path(tmp) / "corpus", args.chunks, site_packages=args.site_packages)
        kc = knowcode.open(root, store=Path(tmp) / "store")
        started = time.perf_counter()
        kc.index()
        index_seconds = time.perf_counter() - started
        stats = kc.stats()
        store = kc.open_store()
        chunks = store.chunks()
        store.close()
        retriever = bm25s.BM25()
        retriever.index(bm25s.tokenize([c.text for c in chunks], show_progress=False), show_progress=False)

        def baseline(query: str) -> None:
            tokens = [t for t in bm25s.tokenize(query, return_ids=False, show_progress=False)[0]
                      if t in retriever.vocab_dict]
            if tokens:
                retriever.retrieve([tokens], k=10, show_progress=False)

        rows = {"knowcode search": _timed(lambda q: kc.search(q, limit=10), args.repeats),
                "bm25s baseline": _timed(baseline, args.repeats)}
        kc.close()
        pairs = (paired(root, Path(tmp) / "stores", {"current": sys.executable,
                                                     args.baseline_label: args.baseline_python}, args.repeats)
                 if args.baseline_python else None)
    result = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"), "files": stats.files, "lines": stats.lines,
        "chunks": stats.chunks, "index_seconds": round(index_seconds, 2), "queries": len(QUERIES),
        "repeats": args.repeats,
        "methods": {name: {"p50_ms": round(statistics.median(samples), 2),
                           "p95_ms": round(statistics.quantiles(samples, n=20)[-1], 2)}
                    for name, samples in rows.items()},
    }
    knowcode_p50 = result["methods"]["knowcode search"]["p50_ms"]  # type: ignore[index]
    baseline_p50 = result["methods"]["bm25s baseline"]["p50_ms"]  # type: ignore[index]
    result["p50_ratio_vs_baseline"] = round(knowcode_p50 / baseline_p50, 2)
    if pairs is not None:
        result["paired"] = pairs
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
