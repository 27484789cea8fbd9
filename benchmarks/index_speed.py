"""Indexing speed: cold and one-file-changed runs, files/s, lines/s and peak memory.

Every measurement runs in a fresh subprocess (peak RSS is per process) on a private copy of the
corpus, repeated; medians are reported. The baseline, measured in the same run, is tree-sitter
parsing alone (no queries, chunks, resolution or storage), so the ratio shows what the rest costs.

    python benchmarks/index_speed.py                      # the installed standard library subset
    python benchmarks/index_speed.py --corpus DIR ...     # any folders, e.g. the bench corpus

Besides the entity graph and chunks (`cold`), it times the whole `knowcode index` (BM25 and vectors
too) with the default static embedding model and with vectors off, to show what the dense leg costs.
`--timeline TREE` times each phase of a whole cold `engine.index()` (wall, and CPU of the main process
and of the parser workers), to show which phases run on one core. `--worker-cpu TREE ...` measures the
CPU of the parser workers' job alone (`parse_file` on every file, no store), alternated with
`--baseline-python`: the steadiest figure for a change to the parsers on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from knowcode.indexing.scanner import ScannedFile, scan

# Pure-Python standard-library packages: real, varied code that every machine has offline.
STDLIB_PACKAGES = ("asyncio", "email", "http", "json", "logging", "xml", "concurrent", "importlib",
                   "unittest", "multiprocessing", "urllib", "sqlite3", "tomllib", "zipfile", "pydoc_data",
                   "collections", "ctypes", "dataclasses.py", "typing.py", "argparse.py", "inspect.py",
                   "pathlib.py", "subprocess.py", "tarfile.py", "shutil.py", "enum.py", "functools.py")
RESULTS = Path(__file__).parent / "results"

_MEASURE = r"""
import json, resource, sys, time
from pathlib import Path
mode, root, store_dir, changed = sys.argv[1:5]
if mode == "parse-only":
    from knowcode.indexing.scanner import scan
    from knowcode.indexing.languages import spec_for
    from tree_sitter import Language, Parser
    started = time.perf_counter()
    parsers = {}
    lines = 0
    for f in scan(Path(root)).files:
        spec = spec_for(f.language)
        if spec is None:
            continue
        parser = parsers.get(spec.name) or parsers.setdefault(spec.name, Parser(Language(spec.grammar())))
        data = (Path(root) / f.path).read_bytes()
        parser.parse(data)
        lines += data.count(b"\n")
    seconds = time.perf_counter() - started
    files = None
elif mode in ("search", "search-no-dense"):
    from dataclasses import replace
    import knowcode
    config = knowcode.AppConfig()
    if mode == "search-no-dense":
        config = replace(config, embedding_provider="none")
    engine = knowcode.open(Path(root), store=Path(store_dir), config=config)
    started = time.perf_counter()
    report = engine.index()
    seconds = time.perf_counter() - started
    lines, files = report.parsed_lines, report.parsed_files
else:
    from knowcode.indexing import index_repository
    from knowcode.storage import Store
    store = Store.open(Path(store_dir))
    if mode == "incremental":
        path = Path(root) / changed
        edit = "\n\ndef _bench_added():\n    return None\n" if path.suffix == ".py" else "\n// edited\n"
        path.write_text(path.read_text() + edit)
    started = time.perf_counter()
    report = index_repository(Path(root), store, max_file_bytes=1 << 20)
    seconds = time.perf_counter() - started
    lines, files = report.parsed_lines, report.parsed_files
peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "lines": lines, "files": files, "peak_mib": peak_mib}))
"""


def _run(mode: str, root: Path, store: Path, changed: str = "") -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _MEASURE, mode, str(root), str(store), changed],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def _stdlib_corpus(dest: Path) -> Path:
    lib = Path(sysconfig.get_paths()["stdlib"])
    for name in STDLIB_PACKAGES:
        source = lib / name
        if source.is_dir():
            skip = shutil.ignore_patterns("test", "tests", "__pycache__")
            shutil.copytree(source, dest / name, ignore=skip)
        elif source.is_file():
            shutil.copy2(source, dest / name)
    return dest


def _median_code_file(root: Path) -> str:
    """A median-sized code file of the corpus: the one the incremental run edits."""
    code = [p for p in root.rglob("*") if p.suffix in {".py", ".ts", ".js"}]
    files = sorted(code, key=lambda p: p.stat().st_size)
    return files[len(files) // 2].relative_to(root).as_posix()


def measure(name: str, source: Path | None, repeats: int) -> dict[str, object]:
    """Measure one corpus; returns the medians."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        if source is None:
            _stdlib_corpus(root)
        else:
            shutil.copytree(source, root)
        changed = _median_code_file(root)
        cold, incremental, parse_only, search, search_no_dense = [], [], [], [], []
        for i in range(repeats):
            store = Path(tmp) / f"store{i}"
            cold.append(_run("cold", root, store))
            incremental.append(_run("incremental", root, store, changed))
            parse_only.append(_run("parse-only", root, store))
            search.append(_run("search", root, Path(tmp) / f"search{i}"))
            search_no_dense.append(_run("search-no-dense", root, Path(tmp) / f"plain{i}"))
    cold_s = statistics.median(r["seconds"] for r in cold)
    lines = cold[0]["lines"]
    parse_s = statistics.median(r["seconds"] for r in parse_only)
    return {
        "corpus": name, "files": cold[0]["files"], "lines": lines, "repeats": repeats,
        "cold_seconds": round(cold_s, 3),
        "cold_files_per_s": round(cold[0]["files"] / cold_s, 1),
        "cold_lines_per_s": round(lines / cold_s),
        "cold_peak_mib": round(statistics.median(r["peak_mib"] for r in cold), 1),
        "incremental_ms": round(1000 * statistics.median(r["seconds"] for r in incremental), 1),
        "baseline_parse_only_seconds": round(parse_s, 3),
        "cold_vs_parse_only": round(cold_s / parse_s, 2),
        # the whole `knowcode index` (graph, chunks, BM25 and vectors) with and without the dense leg
        "with_search_seconds": round(statistics.median(r["seconds"] for r in search), 3),
        "no_dense_seconds": round(no_dense_s := statistics.median(r["seconds"] for r in search_no_dense), 3),
        "dense_overhead": round(statistics.median(r["seconds"] for r in search) / no_dense_s - 1, 3),
    }


def _name(folder: Path) -> str:
    """A readable corpus name: the folder, or its nearest ancestor not named like a source root."""
    generic = {"src", "lib", "package", "corpus"}
    named = next((p.name for p in (folder, *folder.parents) if p.name and p.name not in generic), folder.name)
    return named


# Plain BM25 over line chunks, as benchmarks/baselines.py builds it for the quality benchmarks: the
# files KnowCode would index (its scanner's list), read, cut into line chunks, tokenized and indexed
# by bm25s with its defaults. Everything from the walk to the built index is timed.
_BM25_LINES = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import bm25s
from baselines import line_chunks
from knowcode.indexing.scanner import scan
started = time.perf_counter()  # after the imports, as the KnowCode runs are timed
root = Path(sys.argv[1])
texts = []
for f in scan(root).files:
    text = (root / f.path).read_bytes().decode("utf-8", errors="replace")
    texts.extend(unit.text for unit in line_chunks(f.path, text))
retriever = bm25s.BM25()
retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
print(json.dumps({"seconds": time.perf_counter() - started, "units": len(texts)}))
"""

# `python -m knowcode index` from process start to exit, with the peak memory of its whole process
# tree (the parser workers and the forkserver included), sampled from /proc.
# The parser pool lives for seconds, so 50 ms catches its peak; reading smaps_rollup costs ~1 ms a
# process, so sampling more often would slow the run it measures.
TREE_SAMPLE_SECONDS = 0.05


def _tree(pid: int) -> list[int]:
    """The process and all its descendants (Linux /proc; threads' children included)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo.extend(int(child) for child in (task / "children").read_text().split())
            except OSError:
                continue
    return found


def _memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB; PSS splits shared pages (the forked workers') fairly."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0, 0
    values = {line.split(":")[0]: int(line.split()[1])
              for line in text.splitlines()[1:] if line.endswith("kB")}
    return values.get("Rss", 0), values.get("Pss", 0)


def command_run(python: str, root: Path, store: Path, *, dense: bool) -> dict[str, float]:
    """Run `python -m knowcode index` once; its wall time, printed time and tree peak memory."""
    config = store.parent / f"{store.name}.toml"
    config.write_text("" if dense else 'embedding_provider = "none"\n')
    command = [python, "-m", "knowcode", "index", str(root), "--store", str(store), "--config", str(config),
               "--json"]
    # Output goes to files: a pipe nobody reads while the run lasts would fill and stall it.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        peak_rss = peak_pss = 0
        while process.poll() is None:
            sizes = [_memory_kib(pid) for pid in _tree(process.pid)]
            peak_rss = max(peak_rss, sum(s[0] for s in sizes))
            peak_pss = max(peak_pss, sum(s[1] for s in sizes))
            time.sleep(TREE_SAMPLE_SECONDS)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {err.read().strip()}")
        printed = json.loads(out.read())["seconds"]
    return {"wall_seconds": wall, "printed_seconds": printed, "peak_tree_rss_mib": peak_rss / 1024,
            "peak_tree_pss_mib": peak_pss / 1024}


def _median(runs: list[dict[str, float]], key: str, digits: int = 3) -> float:
    return round(statistics.median(r[key] for r in runs), digits)


def _trees(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(label, python) of the code measured: this tree, then the baseline's when given."""
    trees = [("this", sys.executable)]
    if args.baseline_python:
        trees.append(("baseline", str(args.baseline_python)))
    return trees


def corpora_mean(folders: list[Path], trees: list[tuple[str, str]], repeats: int) -> dict[str, object]:
    """Cold index of each corpus (graph + chunks, and the whole in-process `engine.index()`), beside plain
    BM25 over line chunks, interleaved run by run; per-corpus medians and their means."""
    rows = []
    benchmarks = Path(__file__).parent
    for folder in folders:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "corpus"
            shutil.copytree(folder, root)
            runs: dict[str, list[dict[str, float]]] = {}
            for i in range(repeats):
                for label, python in trees:
                    for mode in ("cold", "search"):
                        store = f"{tmp}/{label}{mode}{i}"
                        out = subprocess.run([python, "-c", _MEASURE, mode, str(root), store, ""],
                                             check=True, capture_output=True, text=True).stdout
                        runs.setdefault(f"{label}-{mode}", []).append(json.loads(out))
                out = subprocess.run([sys.executable, "-c", _BM25_LINES, str(root), str(benchmarks)],
                                     check=True, capture_output=True, text=True).stdout
                runs.setdefault("bm25", []).append(json.loads(out))
        row: dict[str, object] = {"corpus": folder.name, "lines": runs["this-cold"][0]["lines"],
                                  "bm25_lines_ms": round(1000 * _median(runs["bm25"], "seconds"), 1)}
        for label, _ in trees:
            row[f"{label}_graph_ms"] = round(1000 * _median(runs[f"{label}-cold"], "seconds"), 1)
            row[f"{label}_whole_ms"] = round(1000 * _median(runs[f"{label}-search"], "seconds"), 1)
        print(json.dumps(row), flush=True)
        rows.append(row)
    def mean(key: str) -> float:
        return round(statistics.mean(float(r[key]) for r in rows), 1)  # type: ignore[arg-type]

    summary: dict[str, object] = {"corpora": len(rows), "repeats": repeats,
                                  "bm25_lines_mean_ms": mean("bm25_lines_ms")}
    for label, _ in trees:
        for kind in ("graph", "whole"):
            summary[f"{label}_{kind}_mean_ms"] = mean(f"{label}_{kind}_ms")
    return {"summary": summary, "rows": rows}


def command_runs(name: str, folder: Path, trees: list[tuple[str, str]], repeats: int,
                 dense_modes: tuple[bool, ...] = (True, False)) -> dict[str, object]:
    """The whole `knowcode index` command on one large tree, with and without the dense leg, interleaved."""
    lines = sum((folder / f.path).read_bytes().count(b"\n") for f in _scanned(folder))
    row: dict[str, object] = {"corpus": name, "lines": lines, "repeats": repeats}
    with tempfile.TemporaryDirectory() as tmp:
        runs: dict[str, list[dict[str, float]]] = {}
        for i in range(repeats):
            for label, python in trees:
                for dense in dense_modes:
                    key = f"{label}_{'dense' if dense else 'no_dense'}"
                    store = Path(tmp) / f"{key}{i}"
                    runs.setdefault(key, []).append(command_run(python, folder, store, dense=dense))
                    shutil.rmtree(store, ignore_errors=True)
                    print(key, json.dumps(runs[key][-1]), flush=True)
    for key, measured in runs.items():
        row[key] = {name: _median(measured, name, 1 if name.endswith("mib") else 3) for name in measured[0]}
    return row


def _scanned(folder: Path) -> list[ScannedFile]:
    return list(scan(folder).files)


# A digest of everything a cold run stores (files, entities, relationships in table order and sorted,
# chunks, skipped files), to check that a faster indexer stores exactly what the baseline stores.
_DIGEST = r"""
import hashlib, json, sys
from pathlib import Path
from knowcode.indexing import index_repository
from knowcode.storage import Store
root, store_dir = Path(sys.argv[1]), Path(sys.argv[2])
store = Store.open(store_dir)
index_repository(root, store, max_file_bytes=1 << 20)
query = store.connection.execute
tables = {
    "files": query("SELECT path, language, content_hash, size, line_count FROM files ORDER BY path")
    .fetchall(),
    "entities": query("SELECT * FROM entities ORDER BY id").fetchall(),
    "chunks": query("SELECT * FROM chunks ORDER BY id").fetchall(),
    "relationships_sorted": sorted(map(repr, query("SELECT * FROM relationships").fetchall())),
    "relationships_table_order": query("SELECT * FROM relationships ORDER BY rowid").fetchall(),
    "skipped": query("SELECT * FROM skipped ORDER BY path").fetchall(),
}
print(json.dumps({name: [len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()[:16]]
                  for name, rows in tables.items()}))
"""


def content_check(folders: list[Path], trees: list[tuple[str, str]]) -> list[dict[str, object]]:
    """Index each folder cold with every tree; per table, whether their stored rows are identical."""
    rows = []
    for folder in folders:
        digests = {}
        with tempfile.TemporaryDirectory() as tmp:
            for label, python in trees:
                out = subprocess.run([python, "-c", _DIGEST, str(folder), f"{tmp}/{label}"], check=True,
                                     capture_output=True, text=True).stdout
                digests[label] = json.loads(out)
        first = digests[trees[0][0]]
        row: dict[str, object] = {"corpus": folder.name, "rows": {name: first[name][0] for name in first}}
        row["identical"] = {name: all(d[name] == first[name] for d in digests.values()) for name in first}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


# A digest of the search index a whole cold `engine.index()` writes (BM25 arrays, vocabulary, chunk ids,
# vectors, manifest; segment names are random, so they are left out) and the top 10 of a few queries,
# to check that a faster build stores and ranks exactly as the baseline does.
_SEARCH_DIGEST = r"""
import hashlib, json, re, sys
from pathlib import Path
import knowcode
QUERIES = ("parse the request body", "validation error message", "retry on timeout", "router middleware",
           "how are types inferred", "serialize to json")
def main():
    root, store = Path(sys.argv[1]), Path(sys.argv[2])
    engine = knowcode.open(root, store=store, config=knowcode.AppConfig())
    engine.index()
    folder = next(store.glob("search-*"))
    files = {}
    for path in sorted(folder.iterdir()):
        data = path.read_bytes()
        data = re.sub(rb"seg-[0-9a-f]+", b"seg", data) if path.suffix == ".json" else data
        files[re.sub(r"^seg-[0-9a-f]+", "seg", path.name)] = hashlib.sha256(data).hexdigest()[:16]
    tops = {q: [(h.path, h.start_line, h.score) for h in engine.search(q, limit=10)] for q in QUERIES}
    print(json.dumps({"files": files, "tops": hashlib.sha256(repr(tops).encode()).hexdigest()[:16]}))
if __name__ == "__main__":  # the parser pool re-imports this module
    main()
"""


def search_check(folders: list[Path], trees: list[tuple[str, str]]) -> list[dict[str, object]]:
    """Index each folder cold, search index included, with every tree; whether the search index files
    and the top 10 of a few queries are identical."""
    rows = []
    for folder in folders:
        digests = {}
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "search_digest.py"
            script.write_text(_SEARCH_DIGEST)
            for label, python in trees:
                out = subprocess.run([python, str(script), str(folder), f"{tmp}/{label}"], check=True,
                                     capture_output=True, text=True).stdout
                digests[label] = json.loads(out.strip().splitlines()[-1])
        first = digests[trees[0][0]]
        same = {key: all(d[key] == first[key] for d in digests.values()) for key in ("files", "tops")}
        row: dict[str, object] = {"corpus": _name(folder), "files": len(first["files"]),
                                  "files_identical": same["files"], "top10_identical": same["tops"]}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


# CPU seconds of a cold `index_repository` with one parser in the process itself: the whole work
# of the run in one figure that a busy machine disturbs far less than wall time.
_CPU = r"""
import json, sys, time
from pathlib import Path
from knowcode.indexing import index_repository
from knowcode.storage import Store
store = Store.open(Path(sys.argv[2]))
started = time.process_time()
index_repository(Path(sys.argv[1]), store, max_file_bytes=1 << 20, workers=1)
print(json.dumps({"cpu_seconds": time.process_time() - started}))
"""


def cpu_runs(folders: list[Path], trees: list[tuple[str, str]], repeats: int) -> list[dict[str, object]]:
    """Serial cold-index CPU seconds of each tree on each folder, interleaved; medians and ratio."""
    rows = []
    for folder in folders:
        measured: dict[str, list[float]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(repeats):
                for label, python in trees:
                    out = subprocess.run([python, "-c", _CPU, str(folder), f"{tmp}/{label}{i}"], check=True,
                                         capture_output=True, text=True).stdout
                    measured.setdefault(label, []).append(json.loads(out)["cpu_seconds"])
        row: dict[str, object] = {"corpus": _name(folder), "repeats": repeats}
        row.update({f"{label}_cpu_seconds": round(statistics.median(v), 3) for label, v in measured.items()})
        if "baseline" in measured:
            row["this_vs_baseline"] = round(statistics.median(measured["this"])
                                            / statistics.median(measured["baseline"]), 3)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


# CPU seconds of the parser workers' own job: `parse_file` (read, parse, query, entities, references,
# chunks, tokens) on every scanned file in one process, no store. The first files are parsed once
# before the clock starts, so the grammars' query compiles (a fixed cost per worker) are left out.
_WORKER_CPU = r"""
import json, sys, time
from pathlib import Path
from knowcode.indexing.file_parser import parse_file
from knowcode.indexing.scanner import scan
root = Path(sys.argv[1])
files = list(scan(root).files)
for scanned in files[:WARM_FILES]:
    parse_file(root, scanned)
started = time.process_time()
for scanned in files:
    parse_file(root, scanned)
print(json.dumps({"cpu_seconds": time.process_time() - started}))
""".replace("WARM_FILES", "50")


def worker_cpu_runs(folders: list[Path], trees: list[tuple[str, str]],
                    repeats: int) -> list[dict[str, object]]:
    """CPU seconds of `parse_file` over each folder's files for each code, alternated run by run; the
    median and the minimum of each (on a shared machine the minimum is the least disturbed run)."""
    rows = []
    for folder in folders:
        measured: dict[str, list[float]] = {}
        for _ in range(repeats):
            for label, python in trees:
                out = subprocess.run([python, "-c", _WORKER_CPU, str(folder)], check=True,
                                     capture_output=True, text=True).stdout
                measured.setdefault(label, []).append(json.loads(out)["cpu_seconds"])
        row: dict[str, object] = {"corpus": _name(folder), "repeats": repeats}
        for label, values in measured.items():
            row[f"{label}_median_s"] = round(statistics.median(values), 3)
            row[f"{label}_min_s"] = round(min(values), 3)
            row[f"{label}_all_s"] = [round(v, 3) for v in values]
        if "baseline" in measured:
            this, baseline = measured["this"], measured["baseline"]
            row["median_ratio"] = round(statistics.median(this) / statistics.median(baseline), 3)
            row["min_ratio"] = round(min(this) / min(baseline), 3)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


# The phases of one whole cold `engine.index()` in time: when each starts (the first progress call of
# its kind), its wall time, and the CPU seconds spent in it by this process (every thread) and by its
# child processes (the parser workers and their forkserver), sampled from /proc every 0.1 s.
_TIMELINE = r"""
import json, os, sys, threading, time
from pathlib import Path
STARTED = time.perf_counter()
CLOCK = os.sysconf("SC_CLK_TCK")
def cpu(pid):
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK
def descendants(pid):
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found
def main():
    import knowcode
    me = os.getpid()
    samples, events, stop, seen = [], [], threading.Event(), {}
    def sample():
        while not stop.is_set():
            for pid in descendants(me):
                value = cpu(pid)
                if value is not None:
                    seen[pid] = max(seen.get(pid, 0.0), value)  # a worker's last sample stays counted
            samples.append((time.perf_counter() - STARTED, cpu(me), sum(seen.values())))
            time.sleep(0.1)
    def progress(phase, done, total):
        if not events or events[-1][0] != phase.name:
            events.append([phase.name, time.perf_counter() - STARTED])
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    engine = knowcode.open(Path(sys.argv[1]), store=Path(sys.argv[2]), config=knowcode.AppConfig())
    opened = time.perf_counter() - STARTED
    engine.index(progress=progress)
    ended = time.perf_counter() - STARTED
    time.sleep(0.15)
    stop.set()
    sampler.join()
    def at(moment):
        return max((s for s in samples if s[0] <= moment), key=lambda s: s[0], default=(0.0, 0.0, 0.0))
    # "start": importing knowcode and opening the engine (until opened_s), then the store, up to the scan
    bounds = [("start", 0.0), *[(name, start) for name, start in events], ("end", ended)]
    rows = []
    for (name, start), (_, end) in zip(bounds, bounds[1:]):
        first, last = at(start), at(end)
        rows.append({"phase": name, "start_s": round(start, 2), "wall_s": round(end - start, 2),
                     "main_process_cpu_s": round(last[1] - first[1], 2),
                     "workers_cpu_s": round(last[2] - first[2], 2)})
    print(json.dumps({"whole_s": round(ended, 2), "opened_s": round(opened, 2), "rows": rows}))
if __name__ == "__main__":  # the parser pool re-imports this module
    main()
"""


def timelines(folder: Path, trees: list[tuple[str, str]], repeats: int) -> dict[str, object]:
    """The phase timeline of a whole cold `engine.index()` on one tree, for each code, interleaved;
    the run of median whole time of each."""
    runs: dict[str, list[dict[str, object]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "timeline.py"
        script.write_text(_TIMELINE)
        for i in range(repeats):
            for label, python in trees:
                out = subprocess.run([python, str(script), str(folder), f"{tmp}/{label}{i}"], check=True,
                                     capture_output=True, text=True).stdout
                runs.setdefault(label, []).append(json.loads(out.strip().splitlines()[-1]))
                shutil.rmtree(f"{tmp}/{label}{i}", ignore_errors=True)
                print(label, out.strip().splitlines()[-1], flush=True)
    result: dict[str, object] = {"corpus": _name(folder), "repeats": repeats}
    for label, measured in runs.items():
        ordered = sorted(measured, key=lambda run: float(run["whole_s"]))  # type: ignore[arg-type]
        result[label] = {"whole_s_all": [run["whole_s"] for run in measured], **ordered[len(ordered) // 2]}
    return result


_QUERY_COMPILE = r"""
import json, time
from tree_sitter import Language, Query
from knowcode.indexing.languages import GRAMMARS
times = {}
for spec in GRAMMARS.values():
    language = Language(spec.grammar())
    started = time.perf_counter()
    Query(language, spec.query)
    times[spec.name] = time.perf_counter() - started
print(json.dumps(times))
"""


def query_compile(trees: list[tuple[str, str]], repeats: int) -> dict[str, dict[str, float]]:
    """Milliseconds to compile each language's tree-sitter query, the median over fresh processes
    (every parser process compiles the queries of the languages it meets), per code, interleaved."""
    runs: dict[str, list[dict[str, float]]] = {}
    for _ in range(repeats):
        for label, python in trees:
            out = subprocess.run([python, "-c", _QUERY_COMPILE], check=True, capture_output=True,
                                 text=True).stdout
            runs.setdefault(label, []).append(json.loads(out))
    return {label: {name: round(1000 * statistics.median(run[name] for run in label_runs), 1)
                    for name in label_runs[0]}
            for label, label_runs in runs.items()}


def profile(folder: Path, top: int) -> list[dict[str, object]]:
    """The top of a cProfile of one cold `index_repository` run in one process (one parser, so the
    profile sees parsing and everything after it), by own time."""
    import cProfile
    import pstats

    from knowcode.indexing import index_repository
    from knowcode.storage import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "store")
        profiler = cProfile.Profile()
        profiler.enable()
        index_repository(folder, store, max_file_bytes=1 << 20, workers=1)
        profiler.disable()
        store.close()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (file, line, function), (_, calls, own, cumulative, _) in sorted(
            stats.stats.items(), key=lambda item: -item[1][2])[:top]:  # type: ignore[attr-defined]
        where = f"{Path(file).name}:{line}({function})" if line else function
        rows.append({"function": where, "calls": calls, "own_s": round(own, 3),
                     "cumulative_s": round(cumulative, 3), "own_share": round(own / total, 3)})
    return rows


def main() -> None:
    """Run the benchmark and write benchmarks/results/index_speed.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, nargs="*", default=[], help="extra corpus folders")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "index_speed.json")
    parser.add_argument("--corpora", type=Path,
                        help="a folder of repositories: the cold-index mean over them beside plain BM25")
    parser.add_argument("--big", type=Path, nargs="*", default=[],
                        help="large trees: the whole `knowcode index` command, wall time, tree peak memory")
    parser.add_argument("--dense-only", action="store_true",
                        help="--big runs with the default embedding model only (not also without vectors)")
    parser.add_argument("--profile", type=Path, help="a tree to profile one cold index_repository run on")
    parser.add_argument("--query-compile", action="store_true",
                        help="time compiling each language's tree-sitter query (fresh processes)")
    parser.add_argument("--timeline", type=Path,
                        help="a tree to time each phase of a whole cold engine.index() on (wall and CPU)")
    parser.add_argument("--cpu", type=Path, nargs="*", default=[],
                        help="trees to measure the CPU seconds of a serial cold index_repository on")
    parser.add_argument("--worker-cpu", type=Path, nargs="*", default=[],
                        help="trees to measure the CPU seconds of the parser workers' job (parse_file) on")
    parser.add_argument("--check-content", type=Path, nargs="*", default=[],
                        help="trees whose stored index must be identical for this tree and the baseline")
    parser.add_argument("--check-search", type=Path, nargs="*", default=[],
                        help="trees whose search index files and top-10 rankings must be identical for "
                             "this tree and the baseline")
    parser.add_argument("--baseline-python", type=Path,
                        help="the Python of another checkout (e.g. main's venv) measured in the same run")
    args = parser.parse_args()
    results = json.loads(args.out.read_text()) if args.out.is_file() else {}
    results["machine_cores"] = 2
    today = time.strftime("%Y-%m-%d")  # each section says when it was measured: a run may redo only some
    trees = _trees(args)
    if args.corpus or not (args.corpora or args.big or args.profile or args.check_content or args.cpu
                           or args.check_search or args.timeline or args.worker_cpu or args.query_compile):
        rows = [measure("stdlib-subset", None, args.repeats)]
        rows += [measure(_name(folder), folder, args.repeats) for folder in args.corpus]
        header = ("corpus", "files", "lines", "cold_seconds", "cold_lines_per_s", "cold_files_per_s",
                  "cold_peak_mib", "incremental_ms", "baseline_parse_only_seconds", "cold_vs_parse_only",
                  "with_search_seconds", "no_dense_seconds", "dense_overhead")
        print(" | ".join(header))
        for row in rows:
            print(" | ".join(str(row[h]) for h in header))
        results["rows"] = rows
        results["measured_at"] = today
    if args.corpora:
        folders = sorted(p for p in args.corpora.iterdir() if p.is_dir())
        results["corpora_mean"] = {"measured_at": today, **corpora_mean(folders, trees, args.repeats)}
        print(json.dumps(results["corpora_mean"]["summary"]))
    if args.big:
        modes = (True,) if args.dense_only else (True, False)
        runs = {str(row["corpus"]): row for row in results.get("command_runs", [])}
        runs.update((_name(folder), {"measured_at": today,
                                     **command_runs(_name(folder), folder, trees, args.repeats, modes)})
                    for folder in args.big)
        results["command_runs"] = list(runs.values())
    if args.timeline:
        results["timeline"] = {"measured_at": today, **timelines(args.timeline, trees, args.repeats)}
    if args.cpu:
        results["cpu_runs"] = {"measured_at": today, "rows": cpu_runs(args.cpu, trees, args.repeats)}
    if args.worker_cpu:
        results["worker_cpu_runs"] = {"measured_at": today,
                                      "rows": worker_cpu_runs(args.worker_cpu, trees, args.repeats)}
    if args.check_content:
        results["content_check"] = {"measured_at": today, "rows": content_check(args.check_content, trees)}
    if args.check_search:
        results["search_check"] = {"measured_at": today, "rows": search_check(args.check_search, trees)}
    if args.query_compile:
        results["query_compile_ms"] = {"measured_at": today, **query_compile(trees, args.repeats)}
        print(json.dumps(results["query_compile_ms"]))
    if args.profile:
        results["profile"] = {"measured_at": today, "corpus": _name(args.profile),
                              "top_by_own_time": profile(args.profile, 25)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
