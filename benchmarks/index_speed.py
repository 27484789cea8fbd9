"""Indexing speed: cold and one-file-changed runs, files/s, lines/s and peak memory.

Every measurement runs in a fresh subprocess (peak RSS is per process) on a private copy of the
corpus, repeated; medians are reported. The baseline, measured in the same run, is tree-sitter
parsing alone (no queries, chunks, resolution or storage), so the ratio shows what the rest costs.

    python benchmarks/index_speed.py                      # the installed standard library subset
    python benchmarks/index_speed.py --corpus DIR ...     # any folders, e.g. the bench corpus

Besides the entity graph and chunks (`cold`), it times the whole `knowcode index` (BM25 and vectors
too) with the default static embedding model and with vectors off, to show what the dense leg costs.
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


def main() -> None:
    """Run the benchmark and write benchmarks/results/index_speed.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, nargs="*", default=[], help="extra corpus folders")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "index_speed.json")
    args = parser.parse_args()
    rows = [measure("stdlib-subset", None, args.repeats)]
    rows += [measure(_name(folder), folder, args.repeats) for folder in args.corpus]
    header = ("corpus", "files", "lines", "cold_seconds", "cold_lines_per_s", "cold_files_per_s",
              "cold_peak_mib", "incremental_ms", "baseline_parse_only_seconds", "cold_vs_parse_only",
              "with_search_seconds", "no_dense_seconds", "dense_overhead")
    print(" | ".join(header))
    for row in rows:
        print(" | ".join(str(row[h]) for h in header))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%d"), "machine_cores": 2,
                                    "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
