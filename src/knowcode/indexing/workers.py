"""Parser worker processes that never outlive the process that started them.

When the indexing process is killed (SIGKILL, an OOM kill), nothing in multiprocessing tells its
workers: each worker holds the write ends of the pool's own queues, so its read never sees EOF, and
it also holds the forkserver's liveness pipe and the resource tracker's pipe, so those two wait for
the workers in turn. Every worker therefore watches a pipe of its own whose only write end stays in
the indexing process, and exits when that pipe closes. The forkserver and the resource tracker then
see their last holder go and exit too. A pipe works wherever multiprocessing does (Linux, macOS,
Windows); PR_SET_PDEATHSIG would not help, since a forkserver worker's parent is the forkserver.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager, suppress
from importlib.machinery import ModuleSpec
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext

# Exit status of a worker that found its indexing process gone (EX_SOFTWARE: nobody reads it, the
# parent is dead; it only tells such an exit apart in a debugger or a process accounting log).
PARENT_GONE_EXIT_CODE = 70


def _worker_context(preload: list[str]) -> BaseContext:
    """A forkserver that has imported the parsers once; workers fork from it, not from us.

    Forking this process would copy the state of its threads (a progress bar's, a server's, the
    Rust thread pool of the embedding tokenizer) into the workers and can hang or kill them.
    """
    if "forkserver" not in get_all_start_methods():
        return get_context("spawn")
    context = get_context("forkserver")
    context.set_forkserver_preload([*preload, __name__, f"{__package__}.forkserver_signals"])
    return context


def exit_with_parent(alive: Connection) -> None:
    """Worker initializer: ignore Ctrl-C, and exit as soon as the pipe from the indexing process closes.

    :param alive: the read end of a pipe nothing is ever written to; it reaches EOF only when the
        indexing process has closed the write end (after the pool is shut down) or has died.
    """
    # Leave Ctrl-C to the parent: a terminal sends SIGINT to the whole process group, and the parent
    # stops the pool and rolls back; a worker's own KeyboardInterrupt would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        with suppress(EOFError, OSError):  # EOF: every write end is closed
            alive.recv_bytes()
        os._exit(PARENT_GONE_EXIT_CODE)  # at once, even in the middle of a parse: nobody wants the result

    threading.Thread(target=watch, name="knowcode-parent-watch", daemon=True).start()


class _HiddenMainScript:
    """The main script hidden from the workers while any pool of this process lives.

    A new worker runs the parent's main script or module first (``__main__.__file__``, or its
    ``__spec__`` under ``python -m``), so that functions defined there unpickle. The workers only run
    KnowCode's own functions, so that costs each of them the imports of its parent's program (the CLI's
    ~70 ms) and runs a script's top level again; a script read from stdin (``python - <<EOF``, as agents
    run Python) is named ``<stdin>``, which is no file, and every worker died of it. ``__main__`` is the
    process's own, and a server may index two repositories at once: the first pool hides the script,
    the last one to end puts it back.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pools = 0
        self.saved: tuple[ModuleSpec | None, str | None] = (None, None)  # __spec__, __file__ while hidden

    @contextmanager
    def hidden(self) -> Iterator[None]:
        """Hide the main script while the block lasts."""
        main = sys.modules.get("__main__")
        if main is None:
            yield
            return
        with self.lock:
            if not self.pools:
                self.saved = (getattr(main, "__spec__", None), getattr(main, "__file__", None))
                main.__spec__ = None  # multiprocessing reads the attribute itself: it must stay
                if self.saved[1] is not None:
                    del main.__file__
            self.pools += 1
        try:
            yield
        finally:
            with self.lock:
                self.pools -= 1
                if not self.pools:
                    spec, path = self.saved
                    main.__spec__ = spec
                    if path is not None:
                        main.__file__ = path


_MAIN_SCRIPT = _HiddenMainScript()


@contextmanager
def worker_pool(workers: int, preload: list[str]) -> Iterator[ProcessPoolExecutor]:
    """A process pool whose workers exit when this process dies, even by SIGKILL.

    :param workers: worker processes.
    :param preload: modules the forkserver imports once, before it forks any worker.
    :return: the pool, shut down (pending work cancelled) when the block ends.
    """
    context = _worker_context(preload)
    alive_r, alive_w = context.Pipe(duplex=False)  # workers get alive_r; alive_w never leaves this process
    with _MAIN_SCRIPT.hidden():  # workers start on demand, so for the pool's whole life
        executor = ProcessPoolExecutor(workers, mp_context=context, initializer=exit_with_parent,
                                       initargs=(alive_r,))
        try:
            yield executor
        finally:
            executor.shutdown(cancel_futures=True)  # waits for the workers, so closing alive_w kills none
            alive_w.close()
            alive_r.close()
