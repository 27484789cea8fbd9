"""`knowcode serve --workers 2 --watch` as a real process: two worker processes answer from one store,
the parent re-indexes changes (every worker sees them), POST /reload works from a worker, and SIGTERM
stops the parent and its workers with exit 0."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")
pytest.importorskip("uvicorn", reason="the server extra is not installed")
pytest.importorskip("watchfiles", reason="watchfiles (server extra) is not installed")
import httpx

from knowcode.api import API_PREFIX
from tests.conftest import SAMPLE_REPO, write_tree

START_SECONDS = 120.0  # indexing and two worker processes starting on a busy 2-core machine
VISIBLE_WITHIN_SECONDS = 20.0  # only bounds a hang
CLIENTS = 4
REQUESTS_PER_CLIENT = 10


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(child) for child in (task / "children").read_text().split()}
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs Linux /proc")
def test_two_workers_answer_follow_the_writer_and_stop_on_sigterm(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", SAMPLE_REPO)
    port = _free_port()
    env = {**{k: v for k, v in os.environ.items() if k != "KNOWCODE_API_TOKEN"},
           "KNOWCODE_CACHE_DIR": str(tmp_path / "cache")}
    server = subprocess.Popen([sys.executable, "-m", "knowcode", "serve", "--repo", str(root), "--store",
                               str(tmp_path / "store"), "--port", str(port), "--workers", "2", "--watch"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}{API_PREFIX}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
            try:
                if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        workers = _children(server.pid)
        assert len(workers) >= 2  # two workers (and multiprocessing's resource tracker, maybe)

        statuses: list[int] = []

        def client() -> None:
            with httpx.Client(base_url=base, timeout=60) as http:
                for _ in range(REQUESTS_PER_CLIENT):
                    statuses.append(http.get("/search", params={"q": "helper"}).status_code)

        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=START_SECONDS)
        assert statuses == [200] * CLIENTS * REQUESTS_PER_CLIENT

        (root / "pkg/util.py").write_text("def renamed_helper(value):\n    return value\n", encoding="utf-8")
        deadline = time.monotonic() + VISIBLE_WITHIN_SECONDS
        seen = 0
        while seen < 2 * CLIENTS:  # consecutive answers, over new connections: both workers follow
            hits = httpx.get(f"{base}/search", params={"q": "renamed_helper"}, timeout=30).json()["hits"]
            seen = seen + 1 if hits and hits[0]["name"] == "renamed_helper" else 0
            assert time.monotonic() < deadline, "a worker did not see the parent's re-index"
            time.sleep(0.02)

        write_tree(root, {"pkg/extra.py": "def reloaded_function():\n    return 1\n"})
        reload = httpx.post(f"{base}/reload", timeout=60)
        assert reload.status_code == 200, reload.text
        assert reload.json()["added"] in ([], ["pkg/extra.py"])  # the parent's watcher may have been first
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
    assert code == 0, server.stderr.read().decode() if server.stderr else ""
    time.sleep(0.5)
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
