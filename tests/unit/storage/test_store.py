"""The store: schema versions, transactions, counts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from knowcode.errors import SchemaVersionError, StoreError
from knowcode.models import Entity, EntityKind, FileRecord
from knowcode.storage import SCHEMA_VERSION, Store
from knowcode.storage.store import DATABASE_NAME

RECORD = FileRecord("a.py", "python", "hash", 10, 1.0, 2)
MODULE = Entity("m", "a.py", EntityKind.MODULE, "a", "a", None, 1, 2, "", "", "python")


def test_new_store_has_current_schema(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    version = store.connection.execute("PRAGMA user_version").fetchone()[0]
    mode = store.connection.execute("PRAGMA journal_mode").fetchone()[0]
    store.close()
    assert (version, mode) == (SCHEMA_VERSION, "wal")


def test_newer_schema_is_refused_with_a_next_step(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / DATABASE_NAME)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.close()
    with pytest.raises(SchemaVersionError, match="newer"):
        Store.open(tmp_path)


def test_older_schema_is_rebuilt_empty(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / DATABASE_NAME)
    connection.execute("CREATE TABLE files (path TEXT)")
    connection.execute("INSERT INTO files VALUES ('old.py')")
    connection.commit()
    connection.close()
    store = Store.open(tmp_path)
    assert store.file_records() == {}
    store.close()


def test_missing_store_without_create(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="knowcode index"):
        Store.open(tmp_path / "nothing", create=False)


def test_store_path_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="not a folder"):
        Store.open(tmp_path / "file")


def test_transaction_rolls_back_on_error(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    with pytest.raises(RuntimeError), store.transaction():
        store.insert([RECORD], [MODULE], [])
        raise RuntimeError("boom")
    assert store.file_records() == {}
    with store.transaction():
        store.insert([RECORD], [MODULE], [])
    assert store.file_records() == {"a.py": RECORD}
    assert store.counts()["entities"] == {"module": 1}
    store.close()


def test_delete_files_removes_everything_derived(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    with store.transaction():
        store.insert([RECORD], [MODULE], [])
    with store.transaction():
        store.delete_files(["a.py"])
    assert store.counts()["files"] == 0 and store.entities() == []
    store.close()
