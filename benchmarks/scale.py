"""Many repositories in one milvus-lite collection: ingest rate, memory, latency, quality.

Repositories: the public benchmark's corpus (each in the benchmark's code view, as quality.py indexes
it), every top-level package of the standard library and every top-level package of the installed
site-packages (all offline), largest first, up to --max-lines. Site packages that share a name with a
corpus repository are left out: a second copy of the same code would be a distractor no search can
tell apart. Each repository is indexed by KnowCode as usual (embedded, timed apart), then synced into
one collection (the ingest rate: lines of the repositories synced per second of sync).

Then, for the benchmark's 284 file-level queries: NDCG@10 per repository (the embedded backend: each
repository's own index, the README's figure), the Milvus backend filtered to the query's repository,
and the Milvus backend over all repositories (a hit in another repository counts as a miss); search
p50/p99 across all repositories and filtered to one; the resident memory of this process and of the
milvus-lite server.

    python benchmarks/scale.py --corpus /work/corpus --work /tmp/kc-scale [--max-lines 3200000]

Results: benchmarks/results/scale.json and scale.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus_sets import RESULTS, code_view, find_bench_dir, load_repos, log

import knowcode
from knowcode import AppConfig
from knowcode.config import BackendConfig
from knowcode.evals.scoring import Hit, score_query
from knowcode.search_backend import BackendSession, connect, open_cross_repo_search
from knowcode.storage.store import Store

SKIPPED_STDLIB = {"site-packages", "idlelib", "lib2to3", "ensurepip", "test", "__pycache__", "tkinter",
                  "turtledemo"}
MIN_REPO_LINES = 1_000  # smaller packages are a file or two: too small to be a "repository"
DEFAULT_MAX_LINES = 3_200_000  # the goal is 3M+ lines; sized to finish in ~15 min on 2 cores
LATENCY_QUERIES = 60  # queries timed per configuration (after one warm-up pass)
CODE_SUFFIXES = (".py", ".pyi", ".js", ".ts", ".tsx", ".mjs", ".cjs")


@dataclass
class Source:
    """A repository to index: its name, its folder, and its code lines (counted before indexing)."""

    name: str
    root: Path
    lines: int


def _lines(root: Path) -> int:
    total = 0
    for path in root.rglob("*"):
        if path.suffix in CODE_SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
            try:
                with path.open("rb") as handle:
                    total += sum(1 for _ in handle)
            except OSError:
                continue
    return total


def _packages(folder: Path, skipped: set[str], prefix: str) -> list[Source]:
    found = []
    for entry in sorted(folder.iterdir()):
        if (entry.name in skipped or not entry.is_dir() or entry.name.endswith((".dist-info", ".egg-info"))
                or entry.name.startswith((".", "_"))):
            continue
        lines = _lines(entry)
        if lines >= MIN_REPO_LINES:
            found.append(Source(f"{prefix}{entry.name}", entry, lines))
    return found


def gather(corpus_repos: list[Source], max_lines: int) -> list[Source]:
    """The corpus repositories, then stdlib and site-packages packages, largest first, up to max_lines."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    corpus_names = {s.name for s in corpus_repos}
    others = _packages(stdlib, SKIPPED_STDLIB, "stdlib-")
    site = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / (
        "site-packages")
    others += _packages(site, corpus_names | {"knowcode"}, "pypi-") if site.is_dir() else []
    venv = Path(sysconfig.get_paths()["purelib"])  # this environment's own packages (pymilvus, pandas...)
    if venv != site and venv.is_dir():
        seen = {s.name for s in others}
        others += [s for s in _packages(venv, corpus_names | {"knowcode"}, "pypi-") if s.name not in seen]
    chosen = list(corpus_repos)
    total = sum(s.lines for s in chosen)
    # Smallest first, so the line budget buys as many repositories as it can.
    for source in sorted(others, key=lambda s: s.lines):
        if total + source.lines > max_lines:
            continue
        chosen.append(source)
        total += source.lines
    return chosen


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _server_rss_mib() -> float:
    """Resident memory of the milvus-lite server processes started by this process."""
    total = 0.0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        if f"PPid:\t{os.getpid()}" in text and "milvus" in text.split("\n", 1)[0]:
            total += _rss_mib(int(status.parent.name))
    return total


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def markdown(result: dict[str, Any], command: str) -> str:
    """The results as a Markdown summary (scale.md)."""
    search, ndcg, rss = result["search_ms"], result["ndcg10"], result["peak_rss_mib"]
    reused = " (stores reused: the up-to-date check only)" if result["stores_reused"] else ""
    rows = [
        f"# Scale: many repositories in one milvus-lite collection (dense index {result['dense_index']})",
        "",
        f"`{command}`", "",
        "| figure | value |", "| --- | ---: |",
        f"| repositories | {result['repositories']} |",
        f"| lines indexed (all files KnowCode indexed) | {result['indexed_lines']:,} |",
        f"| code lines (.py/.pyi/.js/.ts) | {result['code_lines_counted']:,} |",
        f"| chunks in the collection | {result['chunks']:,} |",
        f"| ingest into Milvus (sync) | {result['ingest_seconds']} s: "
        f"{result['ingest_lines_per_second']:,} lines/s, {result['ingest_chunks_per_second']:,} chunks/s |",
        f"| KnowCode's own indexing, same run{reused} | {result['knowcode_index_seconds']} s: "
        f"{result['knowcode_index_lines_per_second']:,} lines/s |",
        f"| peak RSS: client / milvus-lite server | {rss['client']} / {rss['milvus_lite_server']} MiB |",
        f"| search p50 / p99, all repositories | {search['all_p50']} / {search['all_p99']} ms |",
        f"| search p50 / p99, one repository | {search['one_repo_p50']} / {search['one_repo_p99']} ms |",
        f"| NDCG@10, per repository (embedded backend, baseline) | {ndcg['per_repository_embedded']:.4f} |",
        f"| NDCG@10, Milvus filtered to the query's repository | "
        f"{ndcg['milvus_filtered_to_repository']:.4f} |",
        f"| NDCG@10, Milvus over all repositories | {ndcg['milvus_all_repositories']:.4f} |",
        f"| load average after ingest (2 cores) | {' '.join(result['load_average_after_ingest'])} |",
        "", "| repository | embedded | filtered | all |", "| --- | ---: | ---: | ---: |",
    ]
    rows += [f"| {name} | {v['embedded']:.4f} | {v['filtered']:.4f} | {v['all']:.4f} |"
             for name, v in result["ndcg10_by_repository"].items()]
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--bench", type=Path)
    parser.add_argument("--work", type=Path, required=True, help="stores, trees and the milvus-lite file")
    parser.add_argument("--max-lines", type=int, default=DEFAULT_MAX_LINES)
    parser.add_argument("--dense-index", default="FLAT", help="FLAT (exact, default) or IVF_FLAT")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds per Milvus request (a loaded machine stalls milvus-lite's inserts)")
    parser.add_argument("--out", type=Path, default=RESULTS / "scale.json")
    args = parser.parse_args()
    bench = find_bench_dir(args.bench)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    db = work / "milvus.db"
    reused = (work / "stores").is_dir()  # then "index" is the check that nothing changed, not a cold index
    for stale in work.glob("milvus.db*"):
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    repos = load_repos(bench, args.corpus, None)
    corpus_sources = []
    for repo in repos:
        tree = work / "trees" / repo.name
        code_view(repo.root, tree)
        corpus_sources.append(Source(repo.name, tree, _lines(tree)))
    sources = gather(corpus_sources, args.max_lines)
    log(f"[scale] {len(sources)} repositories, {sum(s.lines for s in sources):,} code lines")
    embedded = AppConfig()
    milvus = AppConfig(backend=BackendConfig(kind="milvus", uri=str(db), collection="scale",
                                             dense_index=args.dense_index, timeout_seconds=args.timeout))

    index_seconds = sync_seconds = 0.0
    synced_lines = chunks = 0
    peak_client = peak_server = 0.0
    embedder = None
    for number, source in enumerate(sources, 1):
        store_dir = work / "stores" / source.name
        kc = knowcode.open(source.root, store=store_dir, config=embedded)
        if embedder is not None:
            kc._embedder, kc._embedder_loaded = embedder, True  # one model load for the whole run
        started = time.perf_counter()
        kc.index()
        index_seconds += time.perf_counter() - started
        embedder = kc.embedder()
        session = BackendSession(milvus, source.root, store_dir)
        session.name = source.name
        store = Store.open(store_dir, create=False)
        try:
            started = time.perf_counter()
            report = session.sync(store, embedder)
            sync_seconds += time.perf_counter() - started
            lines = int(store.connection.execute(
                "SELECT COALESCE(SUM(line_count), 0) FROM files").fetchone()[0])
        finally:
            store.close()
            session.close()
            kc.close()
        if report is None:
            raise SystemExit(f"sync of {source.name} failed: {session.errors}")
        synced_lines += lines
        chunks += report.inserted
        peak_client = max(peak_client, _rss_mib(os.getpid()))
        peak_server = max(peak_server, _server_rss_mib())
        log(f"[scale] {number}/{len(sources)} {source.name}: {lines:,} lines, {report.inserted:,} chunks, "
            f"sync {report.seconds:.2f} s (total {synced_lines:,} lines, {chunks:,} chunks)")

    with open("/proc/loadavg") as handle:
        load = handle.read().split()[:3]
    search = open_cross_repo_search(milvus, embedder)
    queries = [(repo.name, q) for repo in repos for q in repo.queries]
    per_repo: dict[str, list[float]] = {}
    filtered: dict[str, list[float]] = {}
    across: dict[str, list[float]] = {}
    lat_all: list[float] = []
    lat_one: list[float] = []
    for _, query in queries:  # warm-up: loads every store the queries touch, and the collection
        search.search(query.text, 10)
    facades: dict[str, knowcode.KnowCode] = {}
    for name, query in queries:
        kc = facades.get(name)
        if kc is None:  # indexed above: no up-to-date check per query
            kc = facades[name] = knowcode.open(work / "trees" / name, store=work / "stores" / name,
                                               config=embedded)
            kc._fresh = True
            kc._embedder, kc._embedder_loaded = embedder, True
        own = [Hit(h.path, h.start_line, h.end_line) for h in kc.search(query.text, limit=10)]
        per_repo.setdefault(name, []).append(score_query(query, own).ndcg)
        started = time.perf_counter()
        one = search.search(query.text, 10, [name])
        lat_one.append(time.perf_counter() - started)
        filtered.setdefault(name, []).append(score_query(query, [
            Hit(r.hit.path, r.hit.start_line, r.hit.end_line) for r in one.hits]).ndcg)
        started = time.perf_counter()
        every = search.search(query.text, 10)
        lat_all.append(time.perf_counter() - started)
        # A hit in another repository is a miss: its path can match no target ("\0").
        across.setdefault(name, []).append(score_query(query, [
            Hit(r.hit.path if r.repository == name else "\0", r.hit.start_line, r.hit.end_line)
            for r in every.hits]).ndcg)
    search.close()
    for kc in facades.values():
        kc.close()

    def mean_of_repos(table: dict[str, list[float]]) -> float:
        return statistics.fmean(statistics.fmean(v) for v in table.values())

    count_store = connect(milvus, embedder.dimension if embedder is not None else 2)
    rows = count_store.count()
    count_store.close()
    result: dict[str, Any] = {
        "dense_index": args.dense_index, "repositories": len(sources),
        "code_lines_counted": sum(s.lines for s in sources),
        "indexed_lines": synced_lines, "chunks": rows,
        "stores_reused": reused, "knowcode_index_seconds": round(index_seconds, 1),
        "knowcode_index_lines_per_second": round(synced_lines / index_seconds),
        "ingest_seconds": round(sync_seconds, 1),
        "ingest_lines_per_second": round(synced_lines / sync_seconds),
        "ingest_chunks_per_second": round(rows / sync_seconds),
        "peak_rss_mib": {"client": round(peak_client), "milvus_lite_server": round(peak_server)},
        "search_ms": {"all_p50": round(1000 * statistics.median(lat_all), 1),
                      "all_p99": round(1000 * _pct(lat_all, 0.99), 1),
                      "one_repo_p50": round(1000 * statistics.median(lat_one), 1),
                      "one_repo_p99": round(1000 * _pct(lat_one, 0.99), 1), "queries": len(lat_all)},
        "ndcg10": {"per_repository_embedded": round(mean_of_repos(per_repo), 4),
                   "milvus_filtered_to_repository": round(mean_of_repos(filtered), 4),
                   "milvus_all_repositories": round(mean_of_repos(across), 4)},
        "ndcg10_by_repository": {
            name: {"embedded": round(statistics.fmean(per_repo[name]), 4),
                   "filtered": round(statistics.fmean(filtered[name]), 4),
                   "all": round(statistics.fmean(across[name]), 4)} for name in per_repo},
        "load_average_after_ingest": load,
        "sources": [{"name": s.name, "lines": s.lines} for s in sources],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    command = "python benchmarks/scale.py " + " ".join(sys.argv[1:])
    args.out.with_suffix(".md").write_text(markdown(result, command))
    log(json.dumps({k: v for k, v in result.items() if k not in ("sources", "ndcg10_by_repository")},
                   indent=2))


if __name__ == "__main__":
    main()
