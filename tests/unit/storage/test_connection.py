"""SQLite's errors come out of the store as one-line StoreErrors, from statements and from row reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from knowcode.cli import EXIT_FAILURE, app
from knowcode.engine import KnowCode
from knowcode.errors import StoreError
from knowcode.models import FileRecord
from knowcode.storage import Store
from knowcode.storage.connection import connect
from knowcode.storage.store import DATABASE_NAME

RECORD = FileRecord("a.py", "python", "hash", 10, 1.0, 2)


def test_a_failed_statement_is_a_store_error_naming_the_store(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    try:
        with store.transaction():
            store.insert([RECORD], [], [])
        with pytest.raises(StoreError, match="UNIQUE constraint failed") as caught, store.transaction():
            store.insert([RECORD], [], [])
        assert str(tmp_path / DATABASE_NAME) in str(caught.value) and "knowcode index" in str(caught.value)
        assert isinstance(caught.value.__cause__, sqlite3.IntegrityError)
        assert store.file_records() == {"a.py": RECORD}  # rolled back
    finally:
        store.close()


def test_a_failed_row_read_is_a_store_error(tmp_path: Path) -> None:
    connection = connect(tmp_path / "x.db", timeout=1.0)
    try:
        # abs() of the smallest integer overflows: only on the third row
        rows = connection.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) "
            "SELECT CASE WHEN i < 3 THEN i ELSE abs(-9223372036854775807 - 1) END FROM n")
        assert next(rows) == (1,)
        with pytest.raises(StoreError, match="integer overflow"):
            rows.fetchall()  # the third row fails while it is read, not when the statement starts
    finally:
        connection.close()


def _damage(database: Path) -> None:
    """Overwrite every third page after the first two with garbage (a failing disk, a bad copy)."""
    connection = sqlite3.connect(database)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    data = bytearray(database.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for offset in range(2 * page, len(data), 3 * page):
        data[offset:offset + page] = b"\xff" * page
    database.write_bytes(bytes(data))


@pytest.mark.parametrize("command", ["index", "stats", "search"])
def test_a_damaged_database_is_one_line_not_a_traceback(tmp_path: Path, command: str) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    for i in range(200):  # enough pages that the damage hits tables and indexes
        (root / "pkg" / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n", encoding="utf-8")
    engine = KnowCode.from_path(root, store=tmp_path / "store")
    engine.index()
    engine.close()
    _damage(tmp_path / "store" / DATABASE_NAME)
    args = {"index": [str(root)], "stats": [str(root)], "search": ["f1", "--repo", str(root)]}[command]
    result = CliRunner().invoke(app, [command, *args, "--store", str(tmp_path / "store")])
    assert result.exit_code == EXIT_FAILURE, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "malformed" in result.stderr and "Traceback" not in result.output
