"""The CLI as a person runs it: in a real pseudo-terminal, and stopped by Ctrl-C or SIGTERM.

Every other CLI test pipes stderr, so progress is never drawn there; here `knowcode` runs with a pty
as its terminal (``pty.fork``: the child is a session leader with the pty as its controlling
terminal, so a typed Ctrl-C is a real SIGINT to its process group, parser workers included). Each
test asserts the exit code and what the terminal showed: the progress rows of the commands that
index first, the server's clean stop on SIGTERM, one line and no traceback when an index is stopped.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowcode.cli import EXIT_INTERRUPTED, EXIT_TERMINATED
from tests.conftest import write_tree

# One command on a loaded 2-core machine; a run normally takes 1-3 s (interpreter start, imports).
TIMEOUT_SECONDS = 60.0
ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-B])")  # CSI, OSC, charset
INTERRUPTED = "interrupted: stopped; the index is as the last complete run left it"
TERMINATED = "terminated (SIGTERM): stopped; the index is as the last complete run left it"

REPO = {
    "shop/pricing.py": "def apply_discount(price, rate):\n    \"\"\"Apply a discount.\"\"\"\n"
                       "    return price * (1 - rate)\n\n\ndef add_tax(price):\n    return price * 1.2\n",
    "shop/cart.py": "from .pricing import add_tax\n\n\nclass Cart:\n    def total(self, prices):\n"
                    "        return sum(add_tax(p) for p in prices)\n",
    "web/view.js": "export function render(cart) {\n  return String(cart.total([]));\n}\n",
    "README.md": "# Shop\n\nPrices, taxes and carts.\n",
}
# Enough files for the parser workers to start (indexer.PARALLEL_MIN_FILES; workers set explicitly,
# since these files are far below PARALLEL_MIN_BYTES), for the interrupt tests.
MANY_FILES = {"knowcode.toml": "parse_workers = 2\n",
              **{f"pkg/module_{i:03}.py": f"def function_{i}(value):\n    return value + {i}\n"
                 for i in range(80)}}
# Runs the real CLI with the store holding still after the first parsed file, so that a signal
# arrives mid-index, inside the transaction, with the parser workers busy. It holds in short naps, as
# real work returns to Python often: the kernel may hand a process's SIGINT to any of its threads (the
# progress bar's, the pool's), and then one long sleep in the main thread is never interrupted; the
# main thread takes the KeyboardInterrupt at its next bytecode (seen: 1 run in ~100 under load hung).
HOLD_MID_INDEX = """
import sys, time
from knowcode.storage.store import Store
insert = Store.insert_rows
def held(self, *args, **kwargs):
    insert(self, *args, **kwargs)
    print("held mid-index", file=sys.stderr, flush=True)
    for _ in range(6000):
        time.sleep(0.1)
Store.insert_rows = held
from knowcode.cli import main
main()
"""


class Terminal:
    """One command running in a pseudo-terminal: what it has shown, keys typed at it, signals sent."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: exec at once (nothing of the test process runs here)
            try:
                os.chdir(cwd)
                # A shell starts a command with Ctrl-C at its default; an ignored SIGINT would be
                # inherited through exec from whatever the test process ignores at the moment.
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.raw = b""
        self.exit_code: int | None = None

    @property
    def shown(self) -> str:
        """The text the terminal showed, without escape sequences or carriage returns."""
        return ANSI.sub("", self.raw.decode("utf-8", "replace")).replace("\r", "")

    def _read(self, deadline: float) -> bool:
        """Read what is there before the deadline; False once the child closed the terminal."""
        ready, _, _ = select.select([self.fd], [], [], max(0.0, min(0.2, deadline - time.monotonic())))
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child is gone and the pty is closed
            return False
        self.raw += data
        return bool(data)

    def read_until(self, text: str) -> None:
        """Wait until the terminal shows `text`."""
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while text not in self.shown:
            if time.monotonic() > deadline or not self._read(deadline):
                raise AssertionError(f"the terminal never showed {text!r}; it showed:\n{self.shown}")

    def wait(self) -> int:
        """Read to the end and reap the child; its exit code (negative: killed by that signal)."""
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while time.monotonic() < deadline and self._read(deadline):
            pass
        waited, status = os.waitpid(self.pid, 0 if time.monotonic() < deadline else os.WNOHANG)
        if waited == 0:
            raise AssertionError(f"the command did not end in {TIMEOUT_SECONDS} s; it showed:\n{self.shown}")
        self.exit_code = os.waitstatus_to_exitcode(status)
        os.close(self.fd)
        return self.exit_code

    def stop(self) -> None:
        """Kill the child if a failed test left it running."""
        if self.exit_code is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                os.close(self.fd)
            except OSError:
                pass


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A plain interactive terminal of a known size; the default store folder under tmp_path."""
    base = {key: value for key, value in os.environ.items()
            if key not in {"FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CI"}}
    return {**base, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40",
            "KNOWCODE_CACHE_DIR": str(tmp_path / "cache")}


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    started: list[Terminal] = []
    yield started
    for terminal in started:
        terminal.stop()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", REPO)


def knowcode(terminals: list[Terminal], env: dict[str, str], cwd: Path, *args: str | Path) -> Terminal:
    terminal = Terminal([sys.executable, "-m", "knowcode", *map(str, args)], cwd, env)
    terminals.append(terminal)
    return terminal


def test_index_draws_each_phase_and_prints_the_summary(terminals: list[Terminal], env: dict[str, str],
                                                        repo: Path, tmp_path: Path) -> None:
    terminal = knowcode(terminals, env, repo, "index", ".", "--store", tmp_path / "store")
    assert terminal.wait() == 0, terminal.shown
    for phase in ("scanning files", "parsing files", "linking references", "building the search index",
                  "embedding chunks"):
        assert phase in terminal.shown
    assert "indexed in" in terminal.shown and "4 files parsed" in terminal.shown
    assert "Traceback" not in terminal.shown


def test_search_on_a_fresh_store_shows_the_indexing_then_the_hits(
        terminals: list[Terminal], env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    terminal = knowcode(terminals, env, repo, "search", "apply discount", "--store", tmp_path / "store")
    assert terminal.wait() == 0, terminal.shown
    assert "parsing files" in terminal.shown and "building the search index" in terminal.shown
    assert "shop/pricing.py:" in terminal.shown and "def apply_discount" in terminal.shown


def test_context_on_a_fresh_store_shows_the_indexing_then_the_bundle(
        terminals: list[Terminal], env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    terminal = knowcode(terminals, env, repo, "context", "how is the cart total computed",
                        "--store", tmp_path / "store")
    assert terminal.wait() == 0, terminal.shown
    assert "parsing files" in terminal.shown and "sufficiency:" in terminal.shown


def test_eval_shows_the_indexing_and_the_queries(terminals: list[Terminal], env: dict[str, str],
                                                  repo: Path, tmp_path: Path) -> None:
    queries = [{"query": "where is the discount applied", "category": "semantic",
                "relevant": ["shop/pricing.py"], "secondary": []},
               {"query": "Cart", "category": "symbol", "relevant": ["shop/cart.py"], "secondary": []}]
    (repo / "knowcode-eval.json").write_text(json.dumps(queries), encoding="utf-8")
    terminal = knowcode(terminals, env, repo, "eval", "--store", tmp_path / "store")
    assert terminal.wait() == 0, terminal.shown
    assert "parsing files" in terminal.shown and "evaluating queries" in terminal.shown
    assert "2 queries in" in terminal.shown and (repo / ".knowcode" / "routing-eval.json").is_file()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get_when_up(url: str) -> tuple[int, str]:
    deadline = time.monotonic() + TIMEOUT_SECONDS
    while True:
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:
                return response.status, response.read().decode()
        except urllib.error.URLError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_serve_indexes_serves_and_stops_cleanly_on_sigterm(terminals: list[Terminal], env: dict[str, str],
                                                          repo: Path, tmp_path: Path) -> None:
    port = _free_port()
    terminal = knowcode(terminals, env, repo, "serve", "--store", tmp_path / "store", "--port", str(port))
    terminal.read_until("serving")  # printed just before uvicorn binds the port
    assert "parsing files" in terminal.shown
    status, body = _get_when_up(f"http://127.0.0.1:{port}/api/v1/search?q=discount")
    assert status == 200 and "shop/pricing.py" in body
    os.kill(terminal.pid, signal.SIGTERM)  # what a service manager sends to stop it
    assert terminal.wait() == 0, terminal.shown
    assert "Traceback" not in terminal.shown


def _held_index(terminals: list[Terminal], env: dict[str, str], tmp_path: Path) -> Terminal:
    repo = write_tree(tmp_path / "many", MANY_FILES)
    terminal = Terminal([sys.executable, "-c", HOLD_MID_INDEX, "index", str(repo),
                         "--store", str(tmp_path / "store")], repo, env)
    terminals.append(terminal)
    terminal.read_until("held mid-index")
    return terminal


def _last_line(text: str) -> str:
    return [line for line in text.splitlines() if line.strip()][-1].strip()


def test_ctrl_c_during_index_ends_with_one_line(terminals: list[Terminal], env: dict[str, str],
                                                tmp_path: Path) -> None:
    terminal = _held_index(terminals, env, tmp_path)
    os.write(terminal.fd, b"\x03")  # Ctrl-C, typed: SIGINT to the whole foreground process group
    assert terminal.wait() == EXIT_INTERRUPTED, terminal.shown
    assert _last_line(terminal.shown) == INTERRUPTED
    assert "Traceback" not in terminal.shown and "KeyboardInterrupt" not in terminal.shown


def test_sigterm_during_index_ends_with_one_line(terminals: list[Terminal], env: dict[str, str],
                                                 tmp_path: Path) -> None:
    terminal = _held_index(terminals, env, tmp_path)
    os.kill(terminal.pid, signal.SIGTERM)
    assert terminal.wait() == EXIT_TERMINATED, terminal.shown
    assert _last_line(terminal.shown) == TERMINATED
    assert "Traceback" not in terminal.shown


def test_a_piped_run_prints_the_result_only(env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "knowcode", "index", str(repo), "--store",
                           str(tmp_path / "store")], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_SECONDS, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout.startswith("indexed in")
