"""The store's writer lock: one indexing run at a time per store folder, across processes and threads.

An OS file lock on ``write.lock`` in the store folder (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on
Windows), taken on a file descriptor of its own, so two runs in one process exclude each other too.
The OS drops it when its holder exits or is killed, so a dead run never leaves the store locked and
there is no stale lock file to clean up. Readers never take it: SQLite's WAL shows them the last
committed index while a run writes the next one.

The standard library does this in a few lines, so no dependency (``filelock``) is needed for it.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from knowcode.errors import StoreError, StoreLockedError

logger = logging.getLogger(__name__)

LOCK_FILE_NAME = "write.lock"
# How long a run waits for another to finish before giving up: a cold index of a 1M-line repository
# takes under a minute here, so this covers a few such runs queued on one store (setting
# index_lock_timeout_seconds).
DEFAULT_LOCK_TIMEOUT_SECONDS = 300.0
PID_WIDTH = 20  # the holder's pid, padded: Linux pids have at most 7 digits, any 64-bit number 20
POLL_SECONDS = 0.1  # how often a waiting run tries the lock again: a short wait, a negligible cost

if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # the first byte stands for the whole file
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _holder(path: Path) -> str:
    """The process id the holder wrote into the lock file, as " (pid N)", or "" when unreadable."""
    try:
        pid = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):  # Windows refuses to read a locked byte
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


@contextmanager
def writer_lock(store_dir: Path, timeout_seconds: float = DEFAULT_LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """Hold the store's writer lock for the block, waiting for another holder to release it.

    :param store_dir: the store folder (made if missing).
    :param timeout_seconds: the longest wait for another run; 0 tries once.
    :raises StoreLockedError: another run held the lock for longer than `timeout_seconds`.
    :raises StoreError: the store path is not a folder, or it or the lock file cannot be created.
    """
    path = store_dir / LOCK_FILE_NAME
    if store_dir.exists() and not store_dir.is_dir():
        raise StoreError(f"the store path {store_dir} is not a folder: pass another --store")
    try:
        store_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise StoreError(f"cannot create the lock file {path}: {err.strerror or err}") from err
    try:
        deadline = time.monotonic() + timeout_seconds
        waiting = False
        while not _try_lock(fd):
            if time.monotonic() >= deadline:
                raise StoreLockedError(
                    f"another indexing run holds the store {store_dir}{_holder(path)} and did not finish "
                    f"within {timeout_seconds:g} s: retry when it is done, or raise "
                    "index_lock_timeout_seconds")
            if not waiting:
                waiting = True
                logger.warning("another indexing run holds the store %s%s; waiting up to %g s for it",
                               store_dir, _holder(path), timeout_seconds)
            time.sleep(POLL_SECONDS)
        try:
            # Tells a waiting run who it waits for. Overwritten in place, padded to a width no pid
            # exceeds, never truncated: on ext4 a truncate waits for the previous holder's write to
            # reach the disk, up to half a second on a busy one, before every run.
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, str(os.getpid()).ljust(PID_WIDTH).encode("ascii"))
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)
