"""SQLite connections whose errors come out as :class:`StoreError`: one line naming the store and what to
do, never a traceback, wherever in KnowCode a statement runs or a row is read.

A database error can surface when a statement runs and also while its rows are read (a damaged page,
a full disk during a spill), so both the statements and the row reads of the cursors are wrapped.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any, final

from knowcode.errors import StoreError


def _store_error(connection: sqlite3.Connection, err: sqlite3.Error) -> StoreError:
    path = getattr(connection, "database_path", None)
    where = f"the index store {path}" if path is not None else "the index store"
    folder = f" delete {path.parent} and" if isinstance(path, Path) else ""
    return StoreError(f"{where} failed: {err} (check free disk space and permissions; if it persists,"
                      f"{folder} run `knowcode index` again)")


# Called unbound, not through super(): that lookup on every row doubled the cost of reading rows.
_next_row = sqlite3.Cursor.__next__


@final
class _Cursor(sqlite3.Cursor):
    """A cursor that raises StoreError instead of sqlite3.Error."""

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        try:
            super().execute(sql, parameters)
        except sqlite3.Error as err:
            raise _store_error(self.connection, err) from err
        return self

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> _Cursor:
        try:
            super().executemany(sql, seq_of_parameters)
        except sqlite3.Error as err:
            raise _store_error(self.connection, err) from err
        return self

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as err:
            raise _store_error(self.connection, err) from err

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as err:
            raise _store_error(self.connection, err) from err

    def __next__(self) -> Any:
        try:
            return _next_row(self)
        except sqlite3.Error as err:
            raise _store_error(self.connection, err) from err


class _Connection(sqlite3.Connection):
    """A connection whose statements run on :class:`_Cursor` (the built-in shortcuts bypass `cursor()`)."""

    database_path: Path

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return self.cursor(_Cursor).execute(sql, parameters)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        return self.cursor(_Cursor).executemany(sql, parameters)


def connect(path: Path, *, timeout: float) -> sqlite3.Connection:
    """Open a database in autocommit mode, usable from any thread, whose errors are StoreErrors.

    :param path: the database file (created if missing).
    :param timeout: how long a statement waits for another connection's lock.
    :return: the connection.
    :raises sqlite3.Error: the file cannot be opened (the caller names what it was opening).
    """
    connection = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False,
                                 factory=_Connection)
    assert isinstance(connection, _Connection)
    connection.database_path = path
    return connection
