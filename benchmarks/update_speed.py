"""One file edited, `knowcode index` again: the whole command, and the search-index update inside it.

The corpus (the installed standard library, trimmed to about `--lines`, or `--corpus DIR`) is indexed
cold once per code version (each in its own copy of the tree); then each repetition appends a function
to one median-sized file and runs, in fresh processes, the whole `python -m knowcode index` command
(wall time, and the CPU time it used) and an in-process `KnowCode.index()` that times its phases from
the progress callback (parse, link, search index with the embedding of the new chunks). A no-op run
(nothing changed) is timed too. `--baseline-src DIR` (the `src` folder of another checkout, e.g. a
worktree of main) measures that code the same way in the same run, runs interleaved, so the two are
comparable on a shared machine.

    python benchmarks/update_speed.py --baseline-src ../wt-base/src [--lines 300000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stdlib_corpus import STDLIB_SKIPPED, copy_stdlib

RESULTS = Path(__file__).parent / "results"
SRC = Path(__file__).resolve().parent.parent / "src"
SKIPPED = STDLIB_SKIPPED | {"test"}  # the library without its own tests

_PHASES = r"""
import json, sys, time
from pathlib import Path
import knowcode
root, store = sys.argv[1:3]
marks = {}
def progress(phase, done, total):
    now = time.perf_counter()
    first, _ = marks.get(phase.name, (now, now))
    marks[phase.name] = (first, now)
started = time.perf_counter()
engine = knowcode.open(Path(root), store=Path(store), progress=progress)
report = engine.index()
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "parsed_files": report.parsed_files,
                  "phases": {name: last - first for name, (first, last) in marks.items()}}))
"""


def _median_file(root: Path) -> Path:
    files = sorted((p for p in root.rglob("*.py")), key=lambda p: p.stat().st_size)
    return files[len(files) // 2]


def _edit(path: Path, number: int) -> None:
    """Append a small function; the mtime moves on whatever the clock's resolution."""
    before = path.stat().st_mtime_ns
    path.write_text(path.read_text() + f"\n\ndef _bench_edit_{number}(value):\n    return value + {number}\n")
    os.utime(path, ns=(before + 10**9, before + 10**9))


def _environment(src: Path, cache: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src), "KNOWCODE_CACHE_DIR": str(cache)}


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _command(src: Path, root: Path, store: Path, cache: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, all threads) of one `knowcode index` in a fresh process:
    on a shared machine the CPU time moves less with the load than the wall time."""
    cpu, started = _cpu_of_children(), time.perf_counter()
    subprocess.run([sys.executable, "-m", "knowcode", "index", str(root), "--store", str(store), "--json"],
                   check=True, capture_output=True, env=_environment(src, cache))
    return time.perf_counter() - started, _cpu_of_children() - cpu


def _phases(src: Path, root: Path, store: Path, cache: Path) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _PHASES, str(root), str(store)], check=True,
                         capture_output=True, text=True, env=_environment(src, cache)).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def _summary(samples: list[float]) -> dict[str, float]:
    return {"median_ms": round(1000 * statistics.median(samples), 1),
            "min_ms": round(1000 * min(samples), 1), "max_ms": round(1000 * max(samples), 1)}


def main() -> None:
    """Index the corpus per code version, time the edits interleaved, print and record the medians."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lines", type=int, default=300_000, help="standard-library lines to copy")
    parser.add_argument("--corpus", type=Path, help="index this folder instead of the standard library")
    parser.add_argument("--baseline-src", type=Path, help="the src folder of the code to compare with")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS / "update_speed.json")
    args = parser.parse_args()
    versions = {"this code": SRC, **({"baseline": args.baseline_src.resolve()} if args.baseline_src else {})}
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "corpus"
        if args.corpus is not None:
            shutil.copytree(args.corpus, source)
        else:
            copy_stdlib(source, args.lines, SKIPPED)
        lines = sum(p.read_bytes().count(b"\n") for p in source.rglob("*") if p.is_file())
        edited = _median_file(source).relative_to(source)
        cache = Path(tmp) / "cache"
        # a tree per version: an edit made for one must not be a change the other finds
        roots = {name: shutil.copytree(source, Path(tmp) / f"tree-{number}", copy_function=shutil.copy2)
                 for number, name in enumerate(versions)}
        stores = {name: Path(tmp) / f"store-{number}" for number, name in enumerate(versions)}
        cold = {name: _command(src, roots[name], stores[name], cache)[0] for name, src in versions.items()}
        runs: dict[str, dict[str, list[float]]] = {name: {} for name in versions}
        edit_number = 0
        for _ in range(args.repeats):
            for name, src in versions.items():
                samples, root = runs[name], roots[name]
                for what in ("no-op command", "one-file edit, whole command"):
                    if what != "no-op command":
                        edit_number += 1
                        _edit(root / edited, edit_number)
                    wall, cpu = _command(src, root, stores[name], cache)
                    samples.setdefault(what, []).append(wall)
                    samples.setdefault(f"{what}, CPU", []).append(cpu)
                edit_number += 1
                _edit(root / edited, edit_number)
                measured = _phases(src, root, stores[name], cache)
                assert measured["parsed_files"] == 1, measured
                phases: dict[str, float] = measured["phases"]  # type: ignore[assignment]
                samples.setdefault("one-file edit, in process", []).append(float(measured["seconds"]))  # type: ignore[arg-type]
                update = phases.get("SEARCH_INDEX", 0.0)
                samples.setdefault("search index update", []).append(update)
                # the embedding phase of a one-file edit is the model's load (a few chunks embed in ~1 ms)
                samples.setdefault("search index update, model load excluded", []).append(
                    update - phases.get("EMBED", 0.0))
                for phase in ("SCAN", "PARSE", "RESOLVE", "EMBED"):
                    samples.setdefault(f"phase {phase.lower()}", []).append(phases.get(phase, 0.0))
        search_dirs = {name: sorted(p.name for p in stores[name].glob("search-*")) for name in versions}
    result = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"), "corpus": str(args.corpus or "stdlib subset"),
        "lines": lines, "edited_file": edited.as_posix(), "repeats": args.repeats,
        "cold_command_seconds": {name: round(seconds, 2) for name, seconds in cold.items()},
        "versions": {name: str(src) for name, src in versions.items()},
        "methods": {name: {what: _summary(samples) for what, samples in runs[name].items()}
                    for name in versions},
        "search_folders_after": search_dirs,
    }
    if "baseline" in versions:
        result["update_ratio_vs_baseline"] = round(
            statistics.median(runs["baseline"]["search index update"])
            / statistics.median(runs["this code"]["search index update"]), 1)
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
