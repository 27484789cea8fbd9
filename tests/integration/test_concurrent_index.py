"""Several `knowcode index` processes on one store at once: each waits for the store's writer lock, so all
succeed and the store ends as a scratch index of the same tree would (cold, then incremental)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from knowcode.config import CACHE_DIR_ENV
from knowcode.engine import KnowCode
from knowcode.retrieval.search_index import load_search_index
from knowcode.storage import Store
from knowcode.storage.lock import writer_lock
from tests.conftest import write_tree

PROCESSES = 3
MODULES = 150  # enough files that the runs overlap: each parses for a good part of a second
RUN_TIMEOUT_SECONDS = 300


def _module(i: int, version: int = 0) -> str:
    functions = "".join(f"def f{i}_{j}(x):\n    return helper_{j % 7}(x) + {j + version}\n\n\n"
                        for j in range(12))
    return f'"""Module {i}."""\n\nfrom pkg.helpers import *\n\n\n{functions}class C{i}:\n    pass\n'


def _tree(root: Path) -> Path:
    helpers = "".join(f"def helper_{j}(x):\n    return x * {j}\n\n\n" for j in range(7))
    return write_tree(root, {"pkg/__init__.py": "", "pkg/helpers.py": helpers,
                             **{f"pkg/m{i:03}.py": _module(i) for i in range(MODULES)}})


def _edit(root: Path) -> None:
    """Change, add and delete files, as a `git checkout` would between two runs."""
    write_tree(root, {f"pkg/m{i:03}.py": _module(i, version=1) for i in range(0, MODULES, 10)})
    write_tree(root, {f"pkg/new{i}.py": _module(1000 + i) for i in range(15)})
    for i in range(5, MODULES, 50):
        (root / f"pkg/m{i:03}.py").unlink()


def _environment(cache: Path) -> dict[str, str]:
    return {**os.environ, CACHE_DIR_ENV: str(cache), "PYTHONUNBUFFERED": "1"}


def _index_at_once(root: Path, store: Path, cache: Path) -> list[subprocess.CompletedProcess[str]]:
    """Start PROCESSES `python -m knowcode index` runs together and wait for all of them."""
    command = [sys.executable, "-m", "knowcode", "index", str(root), "--store", str(store), "--json"]
    running = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=_environment(cache)) for _ in range(PROCESSES)]
    finished = []
    for process in running:
        stdout, stderr = process.communicate(timeout=RUN_TIMEOUT_SECONDS)
        finished.append(subprocess.CompletedProcess(command, process.returncode, stdout, stderr))
    return finished


def _state(store_dir: Path) -> tuple[dict[str, object], list[tuple[str, str, int, int]], int]:
    """Counts, entities (path, qualified name, lines) and chunks in the search index of a store."""
    store = Store.open(store_dir, create=False)
    try:
        entities = [(e.path, e.qualified_name, e.start_line, e.end_line) for e in store.entities()]
        search = load_search_index(store, store_dir)
        assert str(search.generation) == store.meta()["content_generation"]  # built from this content
        return store.counts(), entities, len(search.sparse.chunk_ids)
    finally:
        store.close()


def _scratch(root: Path, store_dir: Path) -> tuple[dict[str, object], list[tuple[str, str, int, int]], int]:
    engine = KnowCode.from_path(root, store=store_dir)
    engine.index()
    engine.close()
    return _state(store_dir)


def _assert_all_succeeded(runs: list[subprocess.CompletedProcess[str]]) -> None:
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert "Traceback" not in run.stderr and "Error" not in run.stderr, run.stderr
        json.loads(run.stdout)  # a whole report


def test_concurrent_runs_all_succeed_cold_then_incremental(tmp_path: Path) -> None:
    root, store, cache = _tree(tmp_path / "repo"), tmp_path / "store", tmp_path / "cache"

    cold = _index_at_once(root, store, cache)
    _assert_all_succeeded(cold)
    parsed = sorted(json.loads(run.stdout)["parsed_files"] for run in cold)
    # one run did the work; the others waited for it and found nothing left to parse
    assert parsed == [0] * (PROCESSES - 1) + [MODULES + 2], parsed
    assert _state(store) == _scratch(root, tmp_path / "scratch-cold")

    _edit(root)
    incremental = _index_at_once(root, store, cache)
    _assert_all_succeeded(incremental)
    assert _state(store) == _scratch(root, tmp_path / "scratch-incremental")


def test_a_run_that_waits_too_long_says_so_in_one_line(tmp_path: Path) -> None:
    root, store = _tree(tmp_path / "repo"), tmp_path / "store"
    (root / "knowcode.toml").write_text("index_lock_timeout_seconds = 0.5\n", encoding="utf-8")
    with writer_lock(store, timeout_seconds=1.0):  # another run holds the store
        run = subprocess.run([sys.executable, "-m", "knowcode", "index", str(root), "--store", str(store)],
                             capture_output=True, text=True, env=_environment(tmp_path / "cache"),
                             timeout=RUN_TIMEOUT_SECONDS)
    assert run.returncode == 1, run.stderr
    lines = run.stderr.strip().splitlines()
    assert lines[-1].startswith("error: another indexing run holds the store"), run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""
    assert not (store / "index.db").exists()  # it never touched the store
