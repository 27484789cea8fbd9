"""Sustained concurrent load on `knowcode serve`: search and context queries from N clients over loopback.

Starts `knowcode serve` on 127.0.0.1 over a corpus (by default the installed standard library trimmed to
about `--chunks` chunks, as in search_latency.py), waits for it to index and answer, warms every query
once, then runs `--clients` threads for `--seconds` seconds. Each client keeps one connection and
alternates `GET /api/v1/search` and `POST /api/v1/context/query` over the query list. Reports p50, p90
and p99 latency per kind, throughput and errors (any non-200 answer or failed request), and writes
benchmarks/results/serve_load.json. Traffic goes to 127.0.0.1 only; the run is bounded in time.

    python benchmarks/serve_load.py [--corpus DIR] [--chunks 20000] [--clients 8] [--seconds 30]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from search_latency import QUERIES, _corpus  # the same corpus and questions as the latency benchmark

RESULTS = Path(__file__).parent / "results"
HOST = "127.0.0.1"  # loopback only
MAX_SECONDS = 300  # a load run never lasts longer than this
MAX_CLIENTS = 64  # the server's connection limit (cli.MAX_CONNECTIONS)
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


def main() -> None:
    """Start the server, load it, print and record the numbers."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="repository to serve (default: a stdlib subset)")
    parser.add_argument("--chunks", type=int, default=20_000, help="approximate size of the stdlib subset")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "serve_load.json")
    args = parser.parse_args()
    seconds = min(max(args.seconds, 1.0), MAX_SECONDS)
    clients = min(max(args.clients, 1), MAX_CLIENTS)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.corpus.resolve() if args.corpus else _corpus(Path(tmp) / "corpus", args.chunks)
        port = _free_port()
        env = {k: v for k, v in os.environ.items() if k != "KNOWCODE_API_TOKEN"}
        command = [sys.executable, "-m", "knowcode", "serve", "--repo", str(root), "--store",
                   str(Path(tmp) / "store"), "--host", HOST, "--port", str(port)]
        started = time.perf_counter()
        server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
        base = f"http://{HOST}:{port}/api/v1"
        try:
            _wait_ready(base, server)
            ready_seconds = time.perf_counter() - started
            stats = httpx.get(f"{base}/stats", timeout=60).json()
            with httpx.Client(base_url=base, timeout=60) as warm:
                for query in QUERIES:
                    for kind in ("search", "context"):
                        _request(warm, kind, query).raise_for_status()
            load_started = time.monotonic()
            workers = [_Client(base, offset, load_started + seconds) for offset in range(clients)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(seconds + 120)
            elapsed = time.monotonic() - load_started
        finally:
            server.terminate()
            server.wait(30)
    by_kind = {kind: [s for w in workers for s in w.samples[kind]] for kind in ("search", "context")}
    everything = [*by_kind["search"], *by_kind["context"]]
    errors = [e for w in workers for e in w.errors]
    result = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(),
        "corpus": {"files": stats["files"], "lines": stats["lines"], "chunks": stats["chunks"]},
        "startup_seconds_with_indexing": round(ready_seconds, 1), "clients": clients,
        "seconds": round(elapsed, 1), "requests": len(everything) + len(errors), "errors": len(errors),
        "error_samples": errors[:5], "throughput_rps": round((len(everything) + len(errors)) / elapsed, 1),
        "context_max_tokens": CONTEXT_MAX_TOKENS,
        "latency": {"all": _summary(everything), **{kind: _summary(s) for kind, s in by_kind.items()}},
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
