"""Sustained concurrent load on `knowcode serve`: search and context queries from N clients over loopback.

Serves one index (by default the installed standard library trimmed to about `--chunks` chunks, as in
search_latency.py; `--corpus` and `--store` serve a larger one, indexed once) with each server
configuration in turn: this checkout with 1 and 2 worker processes (`--workers`), and, with
`--baseline-src`, another checkout's code (e.g. a worktree of main: its `src` folder) in the same run.
Each server is started, warmed (every query once), then loaded at each client level (`--levels`) for
`--seconds` seconds: every client keeps one connection and alternates `GET /api/v1/search` and
`POST /api/v1/context/query` over the query list. `--rounds` repeats the whole sequence, configurations
interleaved, and the median of the rounds is reported (a shared machine is noisy). Per level:
throughput, p50/p90/p99 latency and errors (any non-200 answer or failed request), and the CPU
seconds the server's processes spent per request. Writes benchmarks/results/serve_load.json. Traffic
goes to 127.0.0.1 only; every run is bounded in time.

The clients are Python threads by default (`--generator python`): they share the machine's cores with
the server, and on 2 cores they take a good part of one, which caps what a second worker can show.
`--generator wrk` sends the same requests from wrk (a C load generator, Debian's `wrk` package; one
thread per core, the clients as its connections), whose own CPU is a fraction of theirs; its latencies
are over all requests (no per-kind split).

    python benchmarks/serve_load.py [--corpus DIR --store DIR] [--chunks 20000] [--levels 1,2,4,8,16]
        [--workers 1,2] [--baseline-src ../main/src [--baseline-python ../main/.venv/bin/python]
        [--baseline-workers 1,2] [--baseline-store DIR]]
        [--seconds 10] [--rounds 2] [--generator wrk]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from search_latency import QUERIES, _corpus  # the same corpus and questions as the latency benchmark

RESULTS = Path(__file__).parent / "results"
HOST = "127.0.0.1"  # loopback only
MAX_SECONDS = 300  # a load run never lasts longer than this
MAX_CLIENTS = 64  # the server's connection limit (cli.MAX_CONNECTIONS)
MAX_ROUNDS = 5
START_TIMEOUT_SECONDS = 600  # indexing the default corpus takes ~20-60 s on 2 cores
CONTEXT_MAX_TOKENS = 2000


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _wait_ready(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"knowcode serve exited with {server.returncode} before answering")
        try:
            if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"knowcode serve did not answer within {START_TIMEOUT_SECONDS} s")


def _request(client: httpx.Client, kind: str, query: str) -> httpx.Response:
    if kind == "search":
        return client.get("/search", params={"q": query, "limit": 10})
    return client.post("/context/query", json={"query": query, "max_tokens": CONTEXT_MAX_TOKENS})


class _Client(threading.Thread):
    """One client: one connection, search and context queries in turn until the deadline."""

    def __init__(self, base: str, offset: int, deadline: float) -> None:
        super().__init__(daemon=True)
        self.base, self.offset, self.deadline = base, offset, deadline
        self.samples: dict[str, list[float]] = {"search": [], "context": []}
        self.errors: list[str] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as client:
            step = self.offset
            while time.monotonic() < self.deadline:
                kind = ("search", "context")[step % 2]
                query = QUERIES[(step // 2) % len(QUERIES)]
                step += 1
                started = time.perf_counter()
                try:
                    response = _request(client, kind, query)
                except httpx.HTTPError as err:
                    self.errors.append(f"{kind} {query!r}: {err!r}")
                    continue
                elapsed = (time.perf_counter() - started) * 1000
                if response.status_code != 200:
                    self.errors.append(f"{kind} {query!r}: {response.status_code} {response.text[:200]}")
                    continue
                self.samples[kind].append(elapsed)


def _summary(samples: list[float]) -> dict[str, float | int]:
    if len(samples) < 2:
        return {"requests": len(samples)}
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"requests": len(samples), "p50_ms": round(statistics.median(samples), 2),
            "p90_ms": round(cuts[89], 2), "p99_ms": round(cuts[98], 2), "max_ms": round(max(samples), 2)}


@dataclass(frozen=True)
class ServerSetup:
    """One server configuration: whose code (a `src` folder, None: this checkout) and how many workers."""

    label: str
    src: Path | None
    workers: int
    python: str = sys.executable  # the interpreter (a baseline checkout's own venv has its own packages)
    store: Path | None = None  # its own index folder (None: the run's --store)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its children so far (Linux /proc; 0 elsewhere)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for one in _server_pids(pid):
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def _server_pids(pid: int) -> list[int]:
    pids = [pid]
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            pids += [int(child) for child in (task / "children").read_text().split()]
    except OSError:
        return pids
    return pids


def _rss_mb(pid: int) -> float | None:
    """Resident memory of a process and its children, MB (Linux /proc; shared pages count in each)."""
    total = 0
    for one in _server_pids(pid):
        try:
            status = Path(f"/proc/{one}/status").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return round(total / 1024, 1) if total else None


def _warm(base: str) -> None:
    with httpx.Client(base_url=base, timeout=120) as warm:
        for query in QUERIES:
            for kind in ("search", "context"):
                _request(warm, kind, query).raise_for_status()


def _load(base: str, clients: int, seconds: float) -> tuple[list[_Client], float]:
    load_started = time.monotonic()
    workers = [_Client(base, offset, load_started + seconds) for offset in range(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(seconds + 120)
    return workers, time.monotonic() - load_started


# wrk's script: each thread cycles through the same requests as a Python client, from its own offset,
# and prints its summary as one JSON line when the run is done.
_WRK_SCRIPT = r"""
local requests, counter, threads = {}, 0, {}
function setup(thread) thread:set("offset", #threads); table.insert(threads, thread) end
function init(args)
  for i = 1, #args, 2 do
    if args[i] == "GET" then table.insert(requests, wrk.format("GET", args[i + 1]))
    else table.insert(requests, wrk.format("POST", "/api/v1/context/query",
                                           {["Content-Type"] = "application/json"}, args[i + 1])) end
  end
  counter = offset or 0
end
function request() counter = counter + 1; return requests[(counter % #requests) + 1] end
function done(summary, latency, _)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "errors": %d, ' ..
    '"p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
"""


def _wrk_arguments() -> list[str]:
    """The requests a Python client sends, in its order, as the wrk script's arguments."""
    arguments = []
    for query in QUERIES:
        arguments += ["GET", str(httpx.URL("/api/v1/search", params={"q": query, "limit": 10}))]
        arguments += ["POST", json.dumps({"query": query, "max_tokens": CONTEXT_MAX_TOKENS})]
    return arguments


def _wrk_level(base: str, clients: int, seconds: float, cpu_before: float, pid: int) -> dict[str, Any]:
    """One load level driven by wrk: the same figures as `_level`, latencies over all requests."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(_WRK_SCRIPT)
        script.flush()
        threads = max(1, min(clients, os.cpu_count() or 1))
        command = ["wrk", "-t", str(threads), "-c", str(clients), "-d", f"{seconds:g}s", "--timeout", "60s",
                   "-s", script.name, base.removesuffix("/api/v1"), "--", *_wrk_arguments()]
        out = subprocess.run(command, check=True, capture_output=True, text=True,
                             timeout=seconds + 120).stdout
    cpu = _cpu_seconds(pid) - cpu_before
    run = json.loads(out.strip().splitlines()[-1])
    elapsed = run["duration_us"] / 1e6
    requests = run["requests"]
    latency = {"requests": requests - run["errors"], **{f"{key}_ms": round(run[f"{key}_us"] / 1000, 2)
                                                         for key in ("p50", "p90", "p99", "max")}}
    return {"seconds": round(elapsed, 1), "requests": requests, "errors": run["errors"], "error_samples": [],
            "throughput_rps": round(requests / elapsed, 1),
            "server_cpu_ms_per_request": round(cpu * 1000 / requests, 1) if requests else None,
            "latency": {"all": latency, "search": {}, "context": {}}}


def _level(workers: list[_Client], elapsed: float, cpu: float) -> dict[str, Any]:
    by_kind = {kind: [s for w in workers for s in w.samples[kind]] for kind in ("search", "context")}
    everything = [*by_kind["search"], *by_kind["context"]]
    errors = [e for w in workers for e in w.errors]
    requests = len(everything) + len(errors)
    return {"seconds": round(elapsed, 1), "requests": requests, "errors": len(errors),
            "error_samples": errors[:3], "throughput_rps": round(requests / elapsed, 1),
            "server_cpu_ms_per_request": round(cpu * 1000 / requests, 1) if requests else None,
            "latency": {"all": _summary(everything), **{kind: _summary(s) for kind, s in by_kind.items()}}}


def _serve(setup: ServerSetup, root: Path, store: Path, levels: list[int], seconds: float,
           generator: str = "python") -> tuple[dict[int, dict[str, Any]], dict[str, Any], float]:
    """Start one server configuration, load it at every level, stop it."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "KNOWCODE_API_TOKEN"}
    if setup.src is not None:
        env["PYTHONPATH"] = str(setup.src)
    command = [setup.python, "-m", "knowcode", "serve", "--repo", str(root), "--store", str(store),
               "--host", HOST, "--port", str(port)]
    if setup.workers > 1:
        command += ["--workers", str(setup.workers)]
    started = time.perf_counter()
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    base = f"http://{HOST}:{port}/api/v1"
    try:
        _wait_ready(base, server)
        ready_seconds = time.perf_counter() - started
        stats = httpx.get(f"{base}/stats", timeout=60).json()
        # Each worker process loads its index on first use: warm over several connections at once,
        # which the kernel spreads over the workers.
        warmers = [threading.Thread(target=_warm, args=(base,)) for _ in range(2 * setup.workers)]
        for warmer in warmers:
            warmer.start()
        for warmer in warmers:
            warmer.join(START_TIMEOUT_SECONDS)
        results: dict[int, dict[str, Any]] = {}
        rss = _rss_mb(server.pid)
        for clients in levels:
            cpu_before = _cpu_seconds(server.pid)
            if generator == "wrk":
                level = _wrk_level(base, clients, seconds, cpu_before, server.pid)
            else:
                workers, elapsed = _load(base, clients, seconds)
                level = _level(workers, elapsed, _cpu_seconds(server.pid) - cpu_before)
            results[clients] = {**level, "server_rss_mb_after_warmup": rss}
    finally:
        server.terminate()
        server.wait(60)
    return results, stats, ready_seconds


def _median_level(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the median throughput, with every round's throughput and p99 beside it."""
    ranked = sorted(rounds, key=lambda r: r["throughput_rps"])
    chosen = dict(ranked[(len(ranked) - 1) // 2])
    chosen["rounds_throughput_rps"] = [r["throughput_rps"] for r in rounds]
    chosen["rounds_p99_ms"] = [r["latency"]["all"].get("p99_ms") for r in rounds]
    return chosen


def main() -> None:
    """Start each server configuration, load it, print and record the numbers."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="repository to serve (default: a stdlib subset)")
    parser.add_argument("--store", type=Path, help="its index folder, kept between runs (default: temporary)")
    parser.add_argument("--chunks", type=int, default=20_000, help="approximate size of the stdlib subset")
    parser.add_argument("--levels", default="1,2,4,8,16", help="client counts, comma-separated")
    parser.add_argument("--workers", default="1,2", help="worker processes of this checkout, comma-separated")
    parser.add_argument("--baseline-src", type=Path,
                        help="another checkout's src folder, served as a baseline")
    parser.add_argument("--baseline-workers", default="1",
                        help="worker processes of the baseline, comma-separated")
    parser.add_argument("--baseline-store", type=Path,
                        help="the baseline's own index folder (default: --store), e.g. when this checkout "
                             "adds indexes to a store that the baseline's queries would also use")
    parser.add_argument("--baseline-python", default=sys.executable,
                        help="the baseline's interpreter, e.g. its .venv/bin/python (default: this one)")
    parser.add_argument("--seconds", type=float, default=10.0, help="per level")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--generator", choices=("python", "wrk"), default="python",
                        help="the load generator: Python client threads, or wrk (see above)")
    parser.add_argument("--out", type=Path, default=RESULTS / "serve_load.json")
    args = parser.parse_args()
    if args.generator == "wrk" and shutil.which("wrk") is None:
        parser.error("--generator wrk needs wrk on the PATH (Debian: apt-get install wrk)")
    seconds = min(max(args.seconds, 1.0), MAX_SECONDS)
    levels = sorted({min(max(int(n), 1), MAX_CLIENTS) for n in args.levels.split(",")})
    setups = [ServerSetup(f"this checkout, {n} worker{'s' if int(n) > 1 else ''}", None, int(n))
              for n in args.workers.split(",")]
    if args.baseline_src is not None:
        baseline_store = args.baseline_store.resolve() if args.baseline_store else None
        setups[:0] = [ServerSetup(f"baseline ({args.baseline_src}), {n} process{'es' if int(n) > 1 else ''}",
                                  args.baseline_src.resolve(), int(n), args.baseline_python, baseline_store)
                      for n in args.baseline_workers.split(",")]
    rounds = min(max(args.rounds, 1), MAX_ROUNDS)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.corpus.resolve() if args.corpus else _corpus(Path(tmp) / "corpus", args.chunks)
        store = args.store.resolve() if args.store else Path(tmp) / "store"
        measured: dict[str, list[dict[int, dict[str, Any]]]] = {setup.label: [] for setup in setups}
        stats: dict[str, Any] = {}
        startup: dict[str, float] = {}
        for round_number in range(rounds):
            order = setups if round_number % 2 == 0 else setups[::-1]  # interleaved: no setup always first
            for setup in order:
                results, stats, ready = _serve(setup, root, setup.store or store, levels, seconds,
                                               args.generator)
                measured[setup.label].append(results)
                startup.setdefault(setup.label, round(ready, 1))
                print(f"round {round_number + 1} {setup.label}: " + ", ".join(
                    f"{n} clients {r['throughput_rps']} req/s p99 {r['latency']['all'].get('p99_ms')} ms"
                    for n, r in results.items()), file=sys.stderr)
    runs = {label: {str(n): _median_level([r[n] for r in per_round]) for n in levels}
            for label, per_round in measured.items()}
    result = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(),
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "command": " ".join(["python", "benchmarks/serve_load.py", *sys.argv[1:]]),
        "corpus": {"files": stats["files"], "lines": stats["lines"], "chunks": stats["chunks"]},
        "seconds_per_level": seconds, "rounds": rounds, "context_max_tokens": CONTEXT_MAX_TOKENS,
        "generator": args.generator,
        "startup_seconds": startup, "runs": runs,
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
