"""The live index (``--watch``): a background thread that re-indexes a repository when its files change.

Built on ``watchfiles`` (an extra of the server and MCP installs), imported only when a watcher starts.
Changed paths pass through the scanner's ignore rules (pruned folders, ignore files, secrets,
generated files) and the store folder is never watched, so indexing cannot wake the watcher. Changes
are batched (:data:`DEBOUNCE_MS`), then the callback re-indexes: the servers index with a second
facade and swap it in, so queries keep being answered from the last complete index meanwhile.
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
STOP_TIMEOUT_SECONDS = 10.0  # how long stop() waits for a re-index in progress to finish
WATCH_REQUIREMENT = "watchfiles>=1,<2"


class Watcher:
    """Watches one repository folder and calls `on_change` after each batch of relevant changes.

    `on_change` runs on the watcher's thread, one call at a time; changes made meanwhile form the next
    batch. Its errors are logged, and the watcher goes on.
    """

    def __init__(self, root: Path, store_dir: Path, on_change: Callable[[], object], *,
                 debounce_ms: int = DEBOUNCE_MS, name: str = "knowcode-watch") -> None:
        self.root = root.resolve()
        self.store_dir = store_dir.resolve()
        self._on_change = on_change
        self._debounce_ms = debounce_ms
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pending = 0
        self._pending_lock = threading.Lock()

    @property
    def pending(self) -> int:
        """Changed paths seen but not yet in the index (the batch being indexed now)."""
        with self._pending_lock:
            return self._pending

    def relevant(self, path: str | Path) -> bool:
        """Whether a change to `path` (absolute) can change the index."""
        candidate = Path(path)
        if candidate == self.store_dir or self.store_dir in candidate.parents:
            return False
        try:
            rel = candidate.relative_to(self.root).as_posix()
        except ValueError:
            return False
        if rel in ("", "."):
            return False
        try:
            is_dir = candidate.is_dir()
        except OSError:
            is_dir = False
        return not is_ignored(self.root, rel, is_dir)

    def start(self) -> None:
        """Start watching on a daemon thread.

        :raises ImportError: ``watchfiles`` is not installed.
        """
        import watchfiles  # noqa: F401 - fail here, in the caller's thread, when the extra is missing

        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
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
            for changes in watch(self.root, watch_filter=keep, debounce=self._debounce_ms, step=QUIET_MS,
                                 stop_event=self._stop, raise_interrupt=False, ignore_permission_denied=True):
                if self._stop.is_set():
                    break
                with self._pending_lock:
                    self._pending = len({path for _, path in changes})
                try:
                    self._on_change()
                except Exception:  # a failed run must not end the watch; the next change retries
                    logger.exception("re-indexing %s after a change failed", self.root)
                finally:
                    with self._pending_lock:
                        self._pending = 0
        except Exception:
            logger.exception("watching %s stopped", self.root)
