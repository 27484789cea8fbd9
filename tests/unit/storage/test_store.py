"""The store: schema versions, transactions, counts."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from knowcode.errors import SchemaVersionError, StoreError
from knowcode.models import Chunk, Entity, EntityKind, FileRecord, RelationKind, Relationship
from knowcode.storage import SCHEMA_VERSION, Store
from knowcode.storage.store import DATABASE_NAME, chunk_row, entity_row, relationship_of_row, relationship_row

RECORD = FileRecord("a.py", "python", "hash", 10, 1.0, 2)
MODULE = Entity("m", "a.py", EntityKind.MODULE, "a", "a", None, 1, 2, "", "", "python")


def _journal_mode(store: Store) -> str:
    return str(store.connection.execute("PRAGMA journal_mode").fetchone()[0])


def test_new_store_has_current_schema(tmp_path: Path) -> None:
    store = Store.open(tmp_path)
    version = store.connection.execute("PRAGMA user_version").fetchone()[0]
    store.close()
    assert version == SCHEMA_VERSION


def test_a_first_build_is_journaled_and_the_store_is_wal_once_it_closes(tmp_path: Path) -> None:
    first = Store.open(tmp_path)
    assert _journal_mode(first) == "delete"  # every page is new: written once, not to a log and then back
    first.close()
    reader = Store.open(tmp_path, create=False)
    assert _journal_mode(reader) == "wal"  # readers never wait for a writer from now on
    reader.close()
    connection = sqlite3.connect(tmp_path / DATABASE_NAME)
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # kept in the file itself
    connection.close()


def test_an_interrupted_first_build_rolls_back_and_the_next_run_uses_wal(tmp_path: Path) -> None:
    first = Store.open(tmp_path)
    with pytest.raises(KeyboardInterrupt), first.transaction():
        first.insert_rows([RECORD], [entity_row(MODULE)], [])
        raise KeyboardInterrupt
    first.connection.close()  # as if killed: its close never ran
    again = Store.open(tmp_path)
    assert (again.file_records(), _journal_mode(again)) == ({}, "wal")
    again.close()


def test_a_first_build_interrupted_in_a_read_closes_without_an_error(tmp_path: Path) -> None:
    # Ctrl-C while a query's rows are still being read (the search index streams the chunks' tokens)
    # leaves that statement open, and SQLite will not change the journal mode then: closing must not
    # replace the interrupt with that error. The next run's open sets WAL.
    first = Store.open(tmp_path)
    with first.transaction():
        first.insert_rows([RECORD], [entity_row(MODULE)], [])
    rows = first.connection.execute("SELECT name FROM sqlite_master")
    rows.fetchone()  # a read left open: the schema has more rows
    first.close()
    del rows  # the interrupted reader's frame is gone, as when the command exits
    again = Store.open(tmp_path)
    assert (list(again.file_records()), _journal_mode(again)) == ([RECORD.path], "wal")
    again.close()


def _synchronous(store: Store) -> int:
    return int(store.connection.execute("PRAGMA synchronous").fetchone()[0])


def test_only_the_run_that_creates_a_store_writes_without_fsync(tmp_path: Path) -> None:
    first = Store.open(tmp_path)
    assert _synchronous(first) == 0  # OFF: nothing committed yet to protect
    first.close()
    again = Store.open(tmp_path)
    assert _synchronous(again) == 1  # NORMAL: the next run updates an index readers rely on
    again.close()


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


def test_reader_never_makes_the_schema(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / DATABASE_NAME)  # a writer's database, schema not committed yet
    connection.execute("CREATE TABLE files (path TEXT)")
    connection.close()
    with pytest.raises(StoreError, match="run `knowcode index`"):
        Store.open(tmp_path, create=False)
    connection = sqlite3.connect(tmp_path / DATABASE_NAME)
    try:
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        assert (connection.execute("PRAGMA user_version").fetchone()[0], tables) == (0, [("files",)])
    finally:
        connection.close()


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


def test_callers_children_and_file_records_of_given_ids(tmp_path: Path) -> None:
    klass = Entity("k", "a.py", EntityKind.CLASS, "K", "a.K", "m", 1, 2, "class K", "", "python")
    first = Entity("f", "a.py", EntityKind.METHOD, "f", "a.K.f", "k", 3, 4, "def f(self)", "", "python")
    second = Entity("g", "a.py", EntityKind.METHOD, "g", "a.K.g", "k", 1, 2, "def g(self)", "", "python")
    calls = [Relationship("g", RelationKind.CALLS, "f", "f", "a.py", 2),
             Relationship("m", RelationKind.CALLS, "f", "f", "a.py", 1),
             Relationship("m", RelationKind.CALLS, "x", None, "a.py", 1)]
    store = Store.open(tmp_path)
    with store.transaction():
        store.insert([RECORD], [MODULE, klass, first, second], [])
        store.insert_relationships(calls)
    assert store.callers(["f"]) == [("f", "m"), ("f", "g")]  # by path and line
    assert store.callers(["g", "x"]) == []  # unresolved calls have no callee id
    assert [e.id for e in store.children(["k"])] == ["g", "f"]  # in file order
    assert [e.id for e in store.children(["m"])] == ["k"]
    assert store.file_records_in(["a.py", "missing.py"]) == {"a.py": RECORD}
    store.close()


def test_chunk_languages_are_their_entities(tmp_path: Path) -> None:
    notes = FileRecord("notes.md", "markdown", "hash", 10, 1.0, 2)
    section = Entity("s", "notes.md", EntityKind.MODULE, "notes", "notes", None, 1, 2, "", "", "markdown")
    chunks = [Chunk("c1", "a.py", "m", 1, 2, "x", "x"), Chunk("c2", "notes.md", "s", 1, 2, "y", "y")]
    store = Store.open(tmp_path)
    with store.transaction():
        store.insert([RECORD, notes], [MODULE, section], chunks)
    assert store.chunk_languages(["c1", "c2", "gone"]) == {"c1": "python", "c2": "markdown"}
    store.close()


def test_the_files_a_cited_path_names(tmp_path: Path) -> None:
    paths = ["pkg/sql/compiler.py", "pkg/mysql/compiler.py", "pkg/xcompiler.py", "compiler.py", "b.py"]
    store = Store.open(tmp_path)
    with store.transaction():
        store.insert([dataclasses.replace(RECORD, path=path) for path in paths], [], [])
    assert store.files_named("compiler.py", 5) == ["compiler.py", "pkg/mysql/compiler.py",
                                                   "pkg/sql/compiler.py"]
    assert store.files_named("compiler.py", 2) == ["compiler.py", "pkg/mysql/compiler.py"]
    # either path may hold more folders: cited with fewer than stored, or with more (a link's host and rev)
    assert store.files_named("sql/compiler.py", 5) == ["compiler.py", "pkg/sql/compiler.py"]
    assert store.files_named("github.com/o/r/blob/1a2b/pkg/sql/compiler.py", 5) == [
        "compiler.py", "pkg/sql/compiler.py"]
    assert store.files_named("piler.py", 5) == []
    store.close()


def test_chunk_tokens_are_what_bm25_indexed(tmp_path: Path) -> None:
    chunks = [Chunk("c1", "a.py", "m", 1, 2, "def f(): pass", "a.py f", "def f pass"),
              Chunk("c2", "a.py", "m", 3, 4, "x = 1", "a.py x", "x")]
    store = Store.open(tmp_path)
    with store.transaction():
        store.insert([RECORD], [MODULE], chunks)
    assert store.chunk_tokens(["c2", "c1", "gone"]) == {"c1": "def f pass", "c2": "x"}
    store.close()


def test_chunks_with_owners_read_what_ranking_needs(tmp_path: Path) -> None:
    chunk = Chunk("c1", "a.py", "m", 1, 2, "def f(): pass", "a.py\nf\ndef f(): pass", "def f pass")
    store = Store.open(tmp_path)
    with store.transaction():
        store.insert([RECORD], [MODULE], [chunk])
    rows = store.chunks_with_owners(["c1", "gone"])
    store.close()
    assert list(rows) == ["c1"]
    found, owner, mtime = rows["c1"]
    assert found == dataclasses.replace(chunk, index_text="")  # every field but the one ranking never reads
    assert (owner, mtime) == (MODULE, RECORD.mtime)
    store = Store.open(tmp_path)
    without = store.chunks_with_owners(["c1"], tokens=False)["c1"]  # when the ranking reads no tokens
    store.close()
    assert without == (dataclasses.replace(chunk, index_text="", tokens=""), MODULE, RECORD.mtime)


def test_rows_round_trip_through_the_tables(tmp_path: Path) -> None:
    chunk = Chunk("c", "a.py", "m", 1, 2, "text", "a.py\na\ntext", "text")
    call = Relationship("m", RelationKind.CALLS, "pkg.helper", None, "a.py", 2)
    assert relationship_of_row(relationship_row(call)) == call
    store = Store.open(tmp_path)
    with store.transaction():
        store.insert_rows([RECORD], [entity_row(MODULE)], [chunk_row(chunk)])
        store.insert_relationship_rows([relationship_row(call)])
    assert (store.entities(), store.chunks(), store.relationships()) == ([MODULE], [chunk], [call])
    name = store.connection.execute("SELECT name FROM relationships").fetchone()[0]
    store.close()
    assert name == "helper"


def test_deferred_indexes_are_rebuilt_and_restored_by_a_rollback(tmp_path: Path) -> None:
    store = Store.open(tmp_path)

    def indexes() -> list[tuple[str, str]]:
        return store.connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' "
                                        "AND tbl_name = 'relationships' ORDER BY name").fetchall()

    before = indexes()
    assert len(before) == 5  # path, source, target, name, callers
    with store.transaction(), store.indexes_deferred("relationships"):
        assert indexes() == []
        store.insert_relationships([Relationship("m", RelationKind.CALLS, "f", None, "a.py", 1)])
    assert indexes() == before
    plan = store.connection.execute("EXPLAIN QUERY PLAN SELECT * FROM relationships WHERE name = 'f'")
    assert "relationships_name" in str(plan.fetchall())
    with pytest.raises(RuntimeError), store.transaction(), store.indexes_deferred("relationships"):
        raise RuntimeError("interrupted")
    assert indexes() == before
    store.close()


def test_an_unmapped_store_reads_without_a_memory_map(tmp_path: Path) -> None:
    Store.open(tmp_path).close()
    mapped, unmapped = Store.open(tmp_path), Store.open(tmp_path, mapped=False)
    sizes = [s.connection.execute("PRAGMA mmap_size").fetchone()[0] for s in (mapped, unmapped)]
    mapped.close()
    unmapped.close()
    assert sizes[0] > 0 and sizes[1] == 0
