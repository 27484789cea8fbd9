"""Whole-command latency of the CLI, as an agent calling `knowcode` per question pays it.

Each command runs in a fresh process, repeated; medians are reported. The baselines, measured in the
same run, are a bare Python start (`python -c pass`) and `knowcode --help` (the CLI's start alone), so
the remainder is what opening the index, loading the embedding model and the query cost. The repository
is indexed once before timing; every timed command finds it up to date.

With ``--baseline-python`` (the interpreter of another install, e.g. a worktree of main with its own
venv) every command also runs under that install, interleaved with this one's runs (the order flips
every repeat), so both sets of medians share the machine's load of the moment. Beside wall time, the
CPU time each process used (user + system, all its threads) is reported: on a shared machine it moves
less with the load than the wall time does.

    python benchmarks/cli_latency.py [--repo PATH] [--repeats N] [--baseline-python PYTHON]
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

RESULTS = Path(__file__).parent / "results"
# An explain question: the task type this repository's routing artifact verifies for local answers (its
# locate questions fell below the quality floor), so `ask` answers from the index, as timed here.
QUESTION = "how are chunks cut from a file"
DEFAULT_REPEATS = 9  # fresh processes per command and install: a median of 9 steadies a shared machine


def knowcode_command(python: Path) -> list[str]:
    """The `knowcode` console script installed next to ``python``."""
    script = python.parent / "knowcode"
    return [str(script)] if script.exists() else [str(python), "-m", "knowcode"]


def commands(python: Path, repo: Path) -> dict[str, list[str]]:
    """The timed commands of one install."""
    kc, where = knowcode_command(python), ["--repo", str(repo)]
    return {
        "python -c pass (baseline)": [str(python), "-c", "pass"],
        "knowcode --help (baseline)": [*kc, "--help"],
        "knowcode search": [*kc, "search", "chunk_file", *where],
        "knowcode context": [*kc, "context", QUESTION, *where],
        "knowcode ask (local route)": [*kc, "ask", QUESTION, *where],
    }


def cpu_of_children() -> float:
    """CPU seconds (user + system) used so far by this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def seconds(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU time of one fresh run of ``command`` (it must exit 0)."""
    cpu, started = cpu_of_children(), time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, cpu_of_children() - cpu


def ask_route(python: Path, repo: Path, env: dict[str, str]) -> str:
    """The route `ask` takes for QUESTION under one install; the benchmark times the local one only."""
    reply = subprocess.run([*knowcode_command(python), "ask", QUESTION, "--repo", str(repo), "--json"],
                           env=env, capture_output=True, text=True, check=False)
    return str(json.loads(reply.stdout)["route"])


def main() -> None:
    """Run the benchmark and write benchmarks/results/cli_latency.json."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--baseline-python", type=Path, default=None,
                        help="interpreter of the install to compare with, run interleaved")
    parser.add_argument("--baseline-label", default="baseline", help="what the baseline install is")
    parser.add_argument("--out", type=Path, default=RESULTS / "cli_latency.json")
    args = parser.parse_args()
    installs = {"current": Path(sys.executable)}
    if args.baseline_python is not None:
        installs[args.baseline_label] = args.baseline_python
    caches = {name: Path(tempfile.mkdtemp(prefix=f"knowcode-cli-latency-{name}-")) for name in installs}
    envs = {name: {**os.environ, "KNOWCODE_CACHE_DIR": str(cache)} for name, cache in caches.items()}
    timed = {name: commands(python, args.repo) for name, python in installs.items()}
    times: dict[str, dict[str, list[tuple[float, float]]]] = {
        name: {command: [] for command in timed[name]} for name in installs}
    try:
        for name, python in installs.items():  # each install indexes into its own cache, untimed
            subprocess.run([*knowcode_command(python), "index", str(args.repo)], env=envs[name], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            route = ask_route(python, args.repo, envs[name])
            if route != "local":
                raise SystemExit(f"{name}: `ask {QUESTION!r}` took the {route!r} route, not the local one: "
                                 "is the repository's routing artifact current (`knowcode eval`)?")
        order = list(installs)
        for repeat in range(args.repeats):
            for command in timed["current"]:
                for name in order if repeat % 2 == 0 else reversed(order):
                    times[name][command].append(seconds(timed[name][command], envs[name]))
    finally:
        for cache in caches.values():
            shutil.rmtree(cache, ignore_errors=True)
    medians = {name: {command: round(statistics.median(wall for wall, _ in runs), 3)
                      for command, runs in by_command.items()} for name, by_command in times.items()}
    cpu = {name: {command: round(statistics.median(used for _, used in runs), 3)
                  for command, runs in by_command.items()} for name, by_command in times.items()}
    result: dict[str, object] = {"measured_at": time.strftime("%Y-%m-%d %H:%M"), "repeats": args.repeats,
                                 "load_average_1min": round(os.getloadavg()[0], 1),
                                 "median_seconds": medians["current"], "median_cpu_seconds": cpu["current"]}
    if args.baseline_python is not None:
        label = args.baseline_label
        result["baseline"] = {"label": label, "median_seconds": medians[label],
                              "median_cpu_seconds": cpu[label]}
        result["speedup"] = {command: round(medians[label][command] / medians["current"][command], 2)
                             for command in medians[label]}
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
