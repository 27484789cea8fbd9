"""Whole-command latency of the CLI, as an agent calling `knowcode` per question pays it.

Each command runs in a fresh process, repeated; medians are reported. The baseline, measured in the
same run, is a bare Python start (`python -c pass`) and `knowcode --help` (the imports of the CLI
alone), so the remainder is what opening the index, loading the embedding model and the query cost.
The repository is indexed once before timing; every timed command finds it up to date.

    python benchmarks/cli_latency.py [--repo PATH] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
QUESTION = "where are chunks cut from a file"  # a locate question this repository's own eval verified


def knowcode_command() -> list[str]:
    """The installed `knowcode` console script next to this Python."""
    script = Path(sys.executable).parent / "knowcode"
    return [str(script)] if script.exists() else [sys.executable, "-m", "knowcode"]


def median_seconds(command: list[str], env: dict[str, str], repeats: int) -> float:
    """Median wall time of ``command`` over ``repeats`` fresh runs (it must exit 0)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    """Run the benchmark and write benchmarks/results/cli_latency.json."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS / "cli_latency.json")
    args = parser.parse_args()
    cache = Path(tempfile.mkdtemp(prefix="knowcode-cli-latency-"))
    env = {**os.environ, "KNOWCODE_CACHE_DIR": str(cache)}
    kc = knowcode_command()
    repo = ["--repo", str(args.repo)]
    try:
        subprocess.run([*kc, "index", str(args.repo)], env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        commands = {
            "python -c pass (baseline)": [sys.executable, "-c", "pass"],
            "knowcode --help (baseline)": [*kc, "--help"],
            "knowcode search": [*kc, "search", "chunk_file", *repo],
            "knowcode context": [*kc, "context", QUESTION, *repo],
            "knowcode ask (local route)": [*kc, "ask", QUESTION, *repo],
        }
        medians = {name: round(median_seconds(cmd, env, args.repeats), 3) for name, cmd in commands.items()}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    result = {"measured_at": time.strftime("%Y-%m-%d %H:%M"), "repeats": args.repeats,
              "median_seconds": medians}
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
