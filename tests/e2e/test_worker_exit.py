"""`kill -9` of `knowcode index` in the middle of a parallel parse leaves no process behind: not the
parser workers, not the forkserver they fork from, not the resource tracker.

Processes are followed through /proc (Linux only): the descendants of the main process are listed
while the workers parse, the main process is killed, and each descendant, identified by its pid and
start time (a pid can be reused), must be gone or a zombie (a finished process waiting to be reaped
by whatever adopted it) a few seconds later.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowcode.indexing.indexer import PARALLEL_MIN_FILES

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs Linux /proc")

WORKERS = 2
FILES = 4 * PARALLEL_MIN_FILES  # enough for the pool, and for a parse that lasts past the kill
FUNCTIONS_PER_FILE = 80
START_SECONDS = 60.0  # until the workers are up: interpreter start, scan and forkserver on a busy machine
EXIT_SECONDS = 5.0  # "a few seconds" for the orphans to notice and exit
POLL_SECONDS = 0.02

Process = tuple[int, int]  # (pid, start time in clock ticks since boot): one process, even if pids are reused


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of a live process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # the command name before ")" may hold spaces
    return int(fields[1]), fields[0], int(fields[19])


def _descendants(root: int) -> dict[Process, int]:
    """Every live descendant of `root`, with its depth (1: a child, 2: a grandchild, ...)."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            children.setdefault(stat[0], []).append((int(entry.name), stat[2]))
    found: dict[Process, int] = {}
    frontier, depth = [root], 1
    while frontier:
        level = [child for pid in frontier for child in children.get(pid, [])]
        found.update({child: depth for child in level})
        frontier, depth = [pid for pid, _ in level], depth + 1
    return found


def _running(process: Process) -> bool:
    stat = _stat(process[0])
    return stat is not None and stat[2] == process[1] and stat[1] != "Z"


def _write_repo(root: Path) -> None:
    body = "".join(f"def function_{i}(value, other=None):\n    \"\"\"Step {i}.\"\"\"\n"
                   f"    result = helper_{i % 7}(value) + {i}\n"
                   "    return other(result) if other else result\n\n\n" for i in range(FUNCTIONS_PER_FILE))
    root.mkdir()
    for n in range(FILES):
        (root / f"module_{n}.py").write_text(body)


def test_kill_9_mid_parse_leaves_no_worker(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _write_repo(repo)
    config = tmp_path / "knowcode.toml"
    config.write_text(f"parse_workers = {WORKERS}\n")
    env = {**os.environ, "KNOWCODE_CACHE_DIR": str(tmp_path / "cache")}
    main = subprocess.Popen([sys.executable, "-m", "knowcode", "index", str(repo), "--store",
                             str(tmp_path / "store"), "--config", str(config)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    left: list[Process] = []
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:  # the workers are the forkserver's children: the main process's grandchildren
            family = _descendants(main.pid)
            if sum(1 for depth in family.values() if depth >= 2) >= WORKERS:
                break
            if main.poll() is not None:
                stderr = main.stderr.read().decode() if main.stderr is not None else ""
                pytest.fail(f"the index run ended before {WORKERS} workers were seen: {stderr}")
            assert time.monotonic() < deadline, f"no {WORKERS} parser workers after {START_SECONDS}s"
            time.sleep(POLL_SECONDS)
        family = _descendants(main.pid)  # everything started so far, just before the kill
        main.send_signal(signal.SIGKILL)
        main.wait()
        deadline = time.monotonic() + EXIT_SECONDS
        left = [process for process in family if _running(process)]
        while left and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            left = [process for process in left if _running(process)]
        assert not left, f"still running {EXIT_SECONDS}s after the kill: {_commands(left)}"
    finally:
        for pid, _ in left:  # do not leak what a failing run left behind
            os.kill(pid, signal.SIGKILL)
        if main.poll() is None:
            main.kill()
            main.wait()
        if main.stderr is not None:
            main.stderr.close()


def _commands(processes: list[Process]) -> list[str]:
    found = []
    for pid, _ in processes:
        try:
            found.append(f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            found.append(f"{pid}: (gone)")
    return found
