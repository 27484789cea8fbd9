"""Parser worker pool: tasks run, workers end normally at shutdown, and a worker whose liveness pipe
closes (its indexing process died) exits by itself. A real kill -9 is in tests/e2e/test_worker_exit.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

from knowcode.indexing.workers import (
    _MAIN_SCRIPT,
    PARENT_GONE_EXIT_CODE,
    _worker_context,
    exit_with_parent,
    worker_pool,
)

EXIT_SECONDS = 10.0  # a spawned interpreter on a busy machine


def _watch_then_wait(alive: Connection) -> None:
    """A process body that only waits, so only the watcher can end it."""
    exit_with_parent(alive)
    time.sleep(EXIT_SECONDS * 2)


def test_pool_runs_tasks_and_its_workers_exit_normally() -> None:
    with worker_pool(2, preload=[]) as pool:
        assert list(pool.map(abs, [-1, -2, 3])) == [1, 2, 3]
        assert pool.submit(os.getpid).result() != os.getpid()
        workers = list(pool._processes.values())  # the executor's own record of its processes
    assert workers
    assert [worker.exitcode for worker in workers] == [0] * len(workers)  # shut down, not killed by the watch


def test_a_worker_exits_when_its_liveness_pipe_closes() -> None:
    context = _worker_context([])
    alive_r, alive_w = context.Pipe(duplex=False)
    worker = context.Process(target=_watch_then_wait, args=(alive_r,))
    worker.start()
    try:
        time.sleep(0.2)
        assert worker.is_alive()
        alive_w.close()  # what the death of the indexing process does
        worker.join(EXIT_SECONDS)
        assert worker.exitcode == PARENT_GONE_EXIT_CODE
    finally:
        if worker.is_alive():
            worker.kill()
            worker.join()
        alive_r.close()


STDIN_SCRIPT = """
import os, __main__
from knowcode.indexing.workers import worker_pool
with worker_pool(1, preload=[]) as pool:
    print(pool.submit(os.getpid).result() != os.getpid())
print(__main__.__file__)
"""


def test_a_script_read_from_stdin_gets_working_workers_and_its_name_back() -> None:
    # `python - <<EOF`, as agents run Python: every worker used to die running `<stdin>` as a file
    done = subprocess.run([sys.executable, "-"], input=STDIN_SCRIPT, capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout.split(), done.stderr) == (0, ["True", "<stdin>"], "")


def test_a_script_without_a_main_guard_is_not_run_again_by_the_workers(tmp_path: Path) -> None:
    # workers used to run the parent's script first: its top level again, and without an
    # `if __name__ == "__main__":` guard, a pool started during the import of the main module
    script = tmp_path / "index_it.py"
    script.write_text(STDIN_SCRIPT, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert (done.returncode, done.stdout.split(), done.stderr) == (0, ["True", str(script)], "")


def test_overlapping_pools_hide_the_main_script_until_the_last_one_ends() -> None:
    # a server indexing two repositories at once: the first pool to end must not put it back early
    main = sys.modules["__main__"]
    before = (main.__spec__, getattr(main, "__file__", None))
    first, second = _MAIN_SCRIPT.hidden(), _MAIN_SCRIPT.hidden()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert (main.__spec__, getattr(main, "__file__", None)) == (None, None)
    second.__exit__(None, None, None)
    assert (main.__spec__, getattr(main, "__file__", None)) == before
