"""Read-only facades for servers: queries answered side by side while one writer updates the index.

A :class:`ReaderPool` lends each query a read-only :class:`~knowcode.engine.KnowCode` (see
:meth:`KnowCode.reader`) of its own: its own SQLite connection and orchestrator, one search index
shared by the pool. The query runs inside the reader's snapshot, a read transaction: it sees one
committed state of the index from its first statement to its last, and a re-index that commits
meanwhile is seen by the next query. SQLite allows any number of such readers beside one writer
(WAL), so the pool's size is the only bound on parallel queries in a process.

The GIL still serialises the Python parts of a query (ranking, bundle assembly, JSON), so threads
overlap mostly the SQLite reads and numpy scans; several processes (``knowcode serve --workers``)
are what make the rest parallel: benchmarks/serve_load.py measures both.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from knowcode.engine import KnowCode

# Readers per process when [server] query_threads is 0: one per core, at least two so a slow query
# (a large bundle) does not stall the rest; more only add memory (one connection, one page cache each).
MIN_AUTO_READERS = 2


def auto_readers(setting: int) -> int:
    """The pool size for a ``[server] query_threads`` setting (0: one per core, at least two).

    :param setting: the configured value, >= 0.
    :return: readers per process, >= 1.
    """
    return setting if setting > 0 else max(MIN_AUTO_READERS, os.cpu_count() or 1)


class ReaderPool:
    """Up to `size` read-only facades of one repository, each lent to one thread at a time.

    Readers are made on first need and kept; a borrower waits while all are lent.
    """

    def __init__(self, engine: KnowCode, size: int) -> None:
        if size < 1:
            raise ValueError(f"a reader pool needs at least one reader, not {size}")
        self.engine = engine
        self.size = size
        self._idle: list[KnowCode] = []  # last in, first out: the warmest reader goes next
        self._made = 0
        self._closed = False
        self._available = threading.Condition()

    @contextmanager
    def borrow(self) -> Iterator[KnowCode]:
        """A reader for the block, inside its snapshot (one committed state of the index).

        :return: the reader; it goes back to the pool when the block ends.
        :raises StoreError: the index cannot be read (or was never built).
        """
        reader = self._take()
        try:
            with reader.snapshot():
                yield reader
        finally:
            self._give(reader)

    def _take(self) -> KnowCode:
        with self._available:
            while not self._idle and self._made >= self.size:
                self._available.wait()
            if self._idle:
                return self._idle.pop()
            self._made += 1
        try:
            return self.engine.reader()
        except BaseException:
            with self._available:
                self._made -= 1
                self._available.notify()
            raise

    def _give(self, reader: KnowCode) -> None:
        with self._available:
            if self._closed:
                reader.close()
                return
            self._idle.append(reader)
            self._available.notify()

    def close(self) -> None:
        """Close the idle readers; readers still lent are closed when they come back."""
        with self._available:
            self._closed = True
            idle, self._idle = self._idle, []
        for reader in idle:
            reader.close()
