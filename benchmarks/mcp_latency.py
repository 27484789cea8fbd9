"""Per-call latency of `knowcode mcp` over stdio on a large tree: `search_codebase` as an agent calls it.

The tree (default: about `--files` Python files, the installed standard library first, then the
installed packages, copied into a temporary folder; `--corpus` serves another) is indexed once, then
each server configuration is started in turn, driven by the MCP SDK's own stdio client: this
checkout without `--watch` (the change tracker), this checkout with `--watch`, and, with
`--baseline-src`, another checkout's code (e.g. a worktree of main: its `src` folder) without
`--watch`, in the same run. After one untimed call (the first indexes, or finds the index current),
`--calls` calls cycle through the query list and each round trip is timed. `--rounds` repeats the
sequence, configurations interleaved; the medians of the rounds are reported. Writes
benchmarks/results/mcp_latency.json. Nothing leaves the machine.

    python benchmarks/mcp_latency.py [--files 5000] [--calls 100] [--rounds 2] [--baseline-src ../main/src]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from search_latency import QUERIES

RESULTS = Path(__file__).parent / "results"
SESSION_SECONDS = 900  # one configuration's session, its first call (a full walk) included
MAX_CALLS = 2000
MAX_ROUNDS = 5
SKIPPED = {"__pycache__", "idlelib", "lib2to3", "ensurepip", "tkinter", "turtledemo"}


@dataclass(frozen=True)
class Setup:
    """One server configuration: whose code (a `src` folder; None: this checkout), and --watch."""

    label: str
    src: Path | None
    watch: bool


def _tree(dest: Path, files: int) -> Path:
    """Copy up to `files` Python files: the standard library, then site-packages."""
    paths = sysconfig.get_paths()
    copied = 0
    for source_root, prefix in ((Path(paths["stdlib"]), "stdlib"), (Path(paths["purelib"]), "packages")):
        for source in sorted(source_root.rglob("*.py")):
            relative = source.relative_to(source_root)
            if SKIPPED & set(relative.parts) or (prefix == "stdlib" and relative.parts[0] == "site-packages"):
                continue
            target = dest / prefix / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            copied += 1
            if copied >= files:
                return dest
    return dest


def _summary(samples: list[float]) -> dict[str, float | int]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"calls": len(samples), "p50_ms": round(statistics.median(samples), 1),
            "p90_ms": round(cuts[89], 1), "p99_ms": round(cuts[98], 1)}


def _session(setup: Setup, root: Path, store: Path, calls: int, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "KNOWCODE_CACHE_DIR": str(cache)}
    if setup.src is not None:
        env["PYTHONPATH"] = str(setup.src)
    args = ["-m", "knowcode", "mcp", "--repo", str(root), "--store", str(store)]
    if setup.watch:
        args.append("--watch")
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    samples: list[float] = []
    first: list[float] = []

    async def main() -> None:
        with anyio.fail_after(SESSION_SECONDS):
            async with Client(params, mode="legacy", read_timeout_seconds=SESSION_SECONDS) as client:
                started = time.perf_counter()
                result = await client.call_tool("search_codebase", {"query": QUERIES[0]})
                first.append((time.perf_counter() - started) * 1000)
                assert not result.is_error, result
                for number in range(calls):
                    started = time.perf_counter()
                    result = await client.call_tool("search_codebase",
                                                    {"query": QUERIES[number % len(QUERIES)]})
                    samples.append((time.perf_counter() - started) * 1000)
                    assert not result.is_error, result

    anyio.run(main)
    return {"first_call_ms": round(first[0], 1), **_summary(samples)}


def main() -> None:
    """Index the tree once, time each configuration, print and record the medians."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="the tree to serve (default: ~--files Python files)")
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline-src", type=Path,
                        help="another checkout's src folder, served as a baseline")
    parser.add_argument("--out", type=Path, default=RESULTS / "mcp_latency.json")
    args = parser.parse_args()
    calls = min(max(args.calls, 10), MAX_CALLS)
    setups = [Setup("this checkout, no --watch", None, False), Setup("this checkout, --watch", None, True)]
    if args.baseline_src is not None:
        setups.insert(0, Setup(f"baseline ({args.baseline_src}), no --watch", args.baseline_src.resolve(),
                               False))
    with tempfile.TemporaryDirectory() as tmp:
        root = args.corpus.resolve() if args.corpus else _tree(Path(tmp) / "tree", args.files)
        store, cache = Path(tmp) / "store", Path(tmp) / "cache"
        env = {**os.environ, "KNOWCODE_CACHE_DIR": str(cache)}
        subprocess.run([sys.executable, "-m", "knowcode", "index", str(root), "--store", str(store)], env=env,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stats = json.loads(subprocess.run(
            [sys.executable, "-m", "knowcode", "stats", str(root), "--store", str(store), "--json"], env=env,
            check=True, capture_output=True, text=True).stdout)
        measured: dict[str, list[dict[str, Any]]] = {setup.label: [] for setup in setups}
        for round_number in range(min(max(args.rounds, 1), MAX_ROUNDS)):
            for setup in setups if round_number % 2 == 0 else setups[::-1]:
                result = _session(setup, root, store, calls, cache)
                measured[setup.label].append(result)
                print(f"round {round_number + 1} {setup.label}: {result}", file=sys.stderr)
    runs = {label: {key: statistics.median(r[key] for r in rounds) for key in rounds[0]} | {
        "rounds_p50_ms": [r["p50_ms"] for r in rounds]} for label, rounds in measured.items()}
    result = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(),
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "command": " ".join(["python", "benchmarks/mcp_latency.py", *sys.argv[1:]]),
        "tree": {"files": stats["files"], "lines": stats["lines"], "chunks": stats["chunks"]},
        "calls_per_round": calls, "runs": runs,
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
