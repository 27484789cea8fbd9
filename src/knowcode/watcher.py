"""The live index: a background thread that watches a repository's files for changes.

Built on ``watchfiles`` (an extra of the server and MCP installs), imported only when a watcher starts.
Changed paths pass through the scanner's ignore rules (pruned folders, ignore files, secrets,
generated files) and the store folder is never watched, so indexing cannot wake the watcher.

Two uses. With a callback (``--watch``), changes are batched (:data:`DEBOUNCE_MS`), then the callback
re-indexes while queries go on from the last complete index. Without one (``knowcode mcp``'s
default), the watcher only records which paths changed (:meth:`Watcher.take`), batched for at most
:data:`TRACK_DEBOUNCE_MS`, so a server learns whether anything changed without walking the tree.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from knowcode.indexing.scanner import is_ignored

logger = logging.getLogger(__name__)

DEBOUNCE_MS = 200  # the longest a burst of changes is collected before re-indexing
QUIET_MS = 50  # a batch ends early once nothing changed for this long
# Tracking only: a change is recorded within about two quiet steps of its event (a saved file is one
# or two events; nothing is re-indexed per batch, so short batches cost only a wake-up). The watch
# thread wakes every quiet step: 5 ms is 200 short wake-ups a second, far below a query's cost.
TRACK_DEBOUNCE_MS = 20
TRACK_QUIET_MS = 5
# The watch thread wakes this often when nothing changes; its first wake-up says the watches are set
# up (watchfiles sets them all up before it first waits).
IDLE_WAKE_MS = 100
STOP_TIMEOUT_SECONDS = 10.0  # how long stop() waits for a re-index in progress to finish
WATCH_REQUIREMENT = "watchfiles>=1,<2"


class Watcher:
    """Watches one repository folder for relevant changes.

    With `on_change`, calls it after each batch, on the watcher's thread, one call at a time; changes
    made meanwhile form the next batch, and its errors are logged while the watcher goes on. Without
    it, records the changed paths until :meth:`take` collects them.
    """

    def __init__(self, root: Path, store_dir: Path, on_change: Callable[[], object] | None, *,
                 debounce_ms: int | None = None, name: str = "knowcode-watch") -> None:
        self.root = root.resolve()
        self.store_dir = store_dir.resolve()
        self._on_change = on_change
        tracking = on_change is None
        self._debounce_ms = debounce_ms if debounce_ms is not None else (
            TRACK_DEBOUNCE_MS if tracking else DEBOUNCE_MS)
        self._quiet_ms = min(TRACK_QUIET_MS if tracking else QUIET_MS, self._debounce_ms)
        self._name = name
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._ended = threading.Event()  # the watch stopped, by stop() or by an error
        self._thread: threading.Thread | None = None
        self._changed: set[str] = set()  # relevant paths seen, not yet in the index (or taken)
        self._changed_lock = threading.Lock()

    @property
    def pending(self) -> int:
        """Changed paths seen but not yet in the index (with a callback: the batch being indexed now;
        without one: those not taken yet)."""
        with self._changed_lock:
            return len(self._changed)

    @property
    def healthy(self) -> bool:
        """Whether the watch is set up and running (so every change from now on is seen)."""
        return self._ready.is_set() and not self._ended.is_set()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the watches are set up, or the watch failed, or `timeout` seconds passed.

        :return: whether the watch is set up and running.
        """
        self._ready.wait(timeout)
        return self.healthy

    def take(self) -> set[str]:
        """The changed paths recorded since the last take (root-relative), forgotten here.

        :return: the paths; empty when nothing relevant changed.
        """
        with self._changed_lock:
            taken, self._changed = self._changed, set()
        return taken

    def restore(self, paths: set[str]) -> None:
        """Record taken paths again (their re-index failed, so they are still pending)."""
        with self._changed_lock:
            self._changed |= paths

    def relevant(self, path: str | Path) -> bool:
        """Whether a change to `path` (absolute) can change the index."""
        return self._relative(path) is not None

    def _relative(self, path: str | Path) -> str | None:
        """`path` relative to the root when a change to it can change the index, else None."""
        candidate = Path(path)
        if candidate == self.store_dir or self.store_dir in candidate.parents:
            return None
        try:
            rel = candidate.relative_to(self.root).as_posix()
        except ValueError:
            return None
        if rel in ("", "."):
            return None
        try:
            is_dir = candidate.is_dir()
        except OSError:
            is_dir = False
        return None if is_ignored(self.root, rel, is_dir) else rel

    def start(self) -> None:
        """Start watching on a daemon thread.

        :raises ImportError: ``watchfiles`` is not installed.
        """
        import watchfiles  # noqa: F401 - fail here, in the caller's thread, when the extra is missing

        if self._thread is not None:
            return
        self._stop.clear()
        self._ready.clear()
        self._ended.clear()
        thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        # Kept only once started: a Ctrl-C inside start() (it waits for the thread to run) must leave
        # nothing for stop() to join, which raises on a thread that never started.
        thread.start()
        self._thread = thread
        logger.info("watching %s for changes", self.root)

    def stop(self) -> None:
        """Stop watching; waits for a re-index in progress to finish."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=STOP_TIMEOUT_SECONDS)

    def _run(self) -> None:
        from watchfiles import watch

        def keep(_change: object, path: str) -> bool:
            return self.relevant(path)

        try:
            for changes in watch(self.root, watch_filter=keep, debounce=self._debounce_ms,
                                 step=self._quiet_ms, stop_event=self._stop, raise_interrupt=False,
                                 ignore_permission_denied=True, rust_timeout=IDLE_WAKE_MS,
                                 yield_on_timeout=True):
                self._ready.set()
                if self._stop.is_set():
                    break
                if not changes:
                    continue
                paths = {rel for _, path in changes if (rel := self._relative(path)) is not None}
                with self._changed_lock:
                    self._changed |= paths
                if self._on_change is not None:
                    self._changed_batch()
        except Exception:
            logger.exception("watching %s stopped", self.root)
        finally:
            self._ended.set()
            self._ready.set()  # a waiter learns that the watch ended

    def _changed_batch(self) -> None:
        assert self._on_change is not None
        try:
            self._on_change()
        except Exception:  # a failed run must not end the watch; the next change retries
            logger.exception("re-indexing %s after a change failed", self.root)
        finally:
            with self._changed_lock:
                self._changed.clear()
