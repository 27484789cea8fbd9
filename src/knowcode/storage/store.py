"""The index store: one SQLite database (WAL) holding files, entities, relationships and chunks.

Every update runs in one transaction, so an interrupted or failed run leaves the previous index
intact, and readers on other connections keep seeing the last committed index while it runs.
Writers hold the store's writer lock (:mod:`knowcode.storage.lock`); SQLite's errors come out as
:class:`~knowcode.errors.StoreError` (:mod:`knowcode.storage.connection`).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from knowcode.errors import SchemaVersionError, StoreError
from knowcode.models import Chunk, Entity, EntityKind, FileRecord, RelationKind, Relationship
from knowcode.storage.connection import connect

# Schema history (one line per bump; see DESIGN.md "Index format"):
#   1: files, entities, relationships (resolved or not), chunks, skipped, meta.
SCHEMA_VERSION = 1
DATABASE_NAME = "index.db"
MMAP_BYTES = 256 * 1024 * 1024  # a 20k-chunk index is ~150 MB; mapped reads cut candidate fetches ~3x
CACHE_KIB = 32 * 1024  # SQLite's page cache per connection (its default is 2 MiB)
# The first build of a store commits without fsync (SQLite's synchronous=OFF; later runs use NORMAL).
# An interrupted run is as safe as with NORMAL (the OS keeps what was written); only an OS crash or a
# power cut in the seconds before the OS writes the pages back can damage the new file, which then
# says to delete it and index again. The fsyncs it saves (WAL switch, checkpoints, close) took 0.01 s
# on an idle disk but up to 8 s each on this shared machine under I/O pressure (PSI io "full" 60%).
FIRST_BUILD_SYNC = "OFF"
# ... and through a rollback journal, switched to WAL when its connection closes: WAL writes every page
# twice, into the log at commit and into the database at the checkpoint, and a first build's pages are
# all new (abseil: an 87 MB database; the whole `knowcode index` 5.55 -> 5.16 s, median of 5 alternated
# runs, benchmarks/results/index_speed_first_build_journal.json). Nobody reads a store during its first
# build: a reader waits for the writer's lock before it opens the store (one that opens it anyway waits
# at most BUSY_TIMEOUT_SECONDS for the commit). The journal still rolls an interrupted run back.
FIRST_BUILD_JOURNAL = "DELETE"
BUSY_TIMEOUT_SECONDS = 30.0  # a reader waits this long for a writer's checkpoint before failing
T = TypeVar("T")
_BATCH = 500  # keeps `IN (...)` lists under SQLite's host-parameter limit
# Module names up to which references_to_names lets SQLite pick the imports naming one of them (one
# `instr` per name and import row); past it every import is read. A run that adds or deletes a few
# files changes a few module names; the cut bounds the statement (each term costs ~2 ms per 5k imports).
FEW_NAMES = 32

_SCHEMA = """
CREATE TABLE files (
    path TEXT PRIMARY KEY, language TEXT NOT NULL, content_hash TEXT NOT NULL,
    size INTEGER NOT NULL, mtime REAL NOT NULL, line_count INTEGER NOT NULL);
CREATE TABLE entities (
    id TEXT PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
    qualified_name TEXT NOT NULL, parent_id TEXT, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, signature TEXT NOT NULL, docstring TEXT NOT NULL,
    language TEXT NOT NULL);
CREATE INDEX entities_path ON entities(path);
CREATE INDEX entities_name ON entities(name);
CREATE INDEX entities_parent ON entities(parent_id);
CREATE INDEX entities_names ON entities(id, qualified_name);
CREATE TABLE relationships (
    source_id TEXT NOT NULL, kind TEXT NOT NULL, target_name TEXT NOT NULL, target_id TEXT,
    path TEXT NOT NULL, line INTEGER NOT NULL, alias TEXT NOT NULL,
    name TEXT NOT NULL);  -- last dotted part of target_name: what incremental re-resolution looks up
CREATE INDEX relationships_path ON relationships(path);
CREATE INDEX relationships_source ON relationships(source_id);
CREATE INDEX relationships_target ON relationships(target_id);
CREATE INDEX relationships_name ON relationships(name);
CREATE INDEX relationships_callers ON relationships(target_id, kind, path, line, source_id)
    WHERE kind = 'calls' AND target_id IS NOT NULL;
CREATE TABLE chunks (
    id TEXT PRIMARY KEY, path TEXT NOT NULL, entity_id TEXT NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, text TEXT NOT NULL, index_text TEXT NOT NULL, tokens TEXT NOT NULL);
CREATE INDEX chunks_path ON chunks(path);
CREATE TABLE skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
# Indexes added to schema 1 after stores were written without them: an index changes no row and
# older code reads a store that has it, so they are created in place when a writer opens an older
# store (never by a reader) instead of bumping SCHEMA_VERSION, which would rebuild every index and
# date every routing artifact. What each is for:
# - relationships_callers: a bundle's callers in (path, line, source) order straight from the index,
#   the first ten names read without sorting all of a popular function's ~6k call rows, which cost
#   ~10 ms of a ~25 ms context request on a 59k-chunk index (partial: ~123k of 530k rows, 10 MB);
# - entities_names: the callers' qualified names without a table lookup per row (8.5 MB there).
NAMES_INDEX = "entities_names"
_ADDED_INDEXES = {name: statement.strip() for name in ("relationships_callers", NAMES_INDEX)
                  for statement in _SCHEMA.split(";") if f"CREATE INDEX {name} " in statement}
_ENTITY_COLUMNS = ("id, path, kind, name, qualified_name, parent_id, start_line, end_line, signature, "
                   "docstring, language")
_BRIEF_ENTITY_COLUMNS = _ENTITY_COLUMNS.replace("signature, docstring", "'', ''")
_MEMBER_COLUMNS = ", ".join(f"m.{column.strip()}" for column in _ENTITY_COLUMNS.split(","))  # members_within
_RELATIONSHIP_COLUMNS = "source_id, kind, target_name, target_id, path, line, alias"
_CHUNK_COLUMNS = "id, path, entity_id, start_line, end_line, text, index_text, tokens"
# What chunks_with_owners reads: a chunk (its index_text never: ranking does not read it) and its
# owner's entity columns but the id, which is the chunk's entity_id (row[2]).
_OWNED_CHUNK_COLUMNS = "c.id, c.path, c.entity_id, c.start_line, c.end_line, c.text, '', c.tokens"
_OWNED_CHUNK_COLUMNS_NO_TOKENS = _OWNED_CHUNK_COLUMNS.replace("c.tokens", "''")
_OWNER_COLUMNS = ", ".join(f"e.{name.strip()}" for name in _ENTITY_COLUMNS.split(",")[1:])


# Rows in the column order of the tables, as parser workers send them: plain tuples cross a process
# boundary ~10x faster than the dataclasses (measured: pickling and unpickling 400 parsed files of
# abseil took 0.44 s as dataclasses, 0.045 s as tuples) and go to executemany as they are.
EntityRow = tuple[str, str, str, str, str, str | None, int, int, str, str, str]
RelationshipRow = tuple[str, str, str, str | None, str, int, str, str]  # ..., alias, name
ChunkRow = tuple[str, str, str, int, int, str, str, str]
EntityKey = tuple[str, str, str, str, str | None]  # name, id, kind, qualified name, parent id
UnresolvedReference = tuple[int, str, RelationKind, str, str]  # rowid, source id, kind, target name, path


def entity_row(e: Entity) -> EntityRow:
    """An entity as a row of the entities table."""
    return (e.id, e.path, e.kind.value, e.name, e.qualified_name, e.parent_id, e.start_line, e.end_line,
            e.signature, e.docstring, e.language)


def relationship_row(r: Relationship) -> RelationshipRow:
    """A relationship as a row of the relationships table (its `name` column derived)."""
    return (r.source_id, r.kind.value, r.target_name, r.target_id, r.path, r.line, r.alias,
            r.target_name.rpartition(".")[2])


# Enum members by value: a dict lookup takes 0.05 us, calling the enum (RelationKind("calls")) 1.2 us,
# and a cold run turns every reference and entity back into objects once.
_RELATION_KINDS = {kind.value: kind for kind in RelationKind}
_ENTITY_KINDS = {kind.value: kind for kind in EntityKind}


def relationship_of_row(row: Sequence[Any]) -> Relationship:
    """The relationship a row of the relationships table holds (its first seven columns)."""
    return Relationship(row[0], _RELATION_KINDS[row[1]], row[2], row[3], row[4], row[5], row[6])


def chunk_row(c: Chunk) -> ChunkRow:
    """A chunk as a row of the chunks table."""
    return (c.id, c.path, c.entity_id, c.start_line, c.end_line, c.text, c.index_text, c.tokens)


def _entity(row: Sequence[Any]) -> Entity:
    return Entity(row[0], row[1], _ENTITY_KINDS[row[2]], row[3], row[4], row[5], row[6], row[7], row[8],
                  row[9], row[10])


def _same(row: T) -> T:
    return row


def _batches(values: Iterable[str]) -> Iterator[list[str]]:
    items = sorted(set(values))
    for start in range(0, len(items), _BATCH):
        yield items[start:start + _BATCH]


class Store:
    """A connection to one index database; use :meth:`open` to create or check it."""

    def __init__(self, connection: sqlite3.Connection, path: Path, *, first_build: bool = False) -> None:
        self.connection = connection
        self.path = path
        self._first_build = first_build  # journaled as FIRST_BUILD_JOURNAL until closed
        self._names_indexed: bool | None = None  # whether entities_names exists; read on first need

    @classmethod
    def open(cls, directory: Path, *, create: bool = True, mapped: bool = True) -> Store:
        """Open (and with `create`, make) the store in a folder, checking its schema version.

        :param directory: the store folder.
        :param create: make the folder and an empty schema when they do not exist.
        :param mapped: read the database through a memory map (queries that fetch scattered rows);
            an indexing run, which reads each row at most once, opens it without: the pages it maps
            count in its resident memory (160 MB of a 1M-line run's peak).
        :return: an open store.
        :raises StoreError: the folder or database cannot be created or read, or is not an index.
        :raises SchemaVersionError: the database was written by a newer KnowCode.
        """
        path = directory / DATABASE_NAME
        if not create and not path.is_file():
            raise StoreError(f"no index at {directory}: run `knowcode index` first")
        if directory.exists() and not directory.is_dir():
            raise StoreError(f"the store path {directory} is not a folder: pass another --store")
        try:
            directory.mkdir(parents=True, exist_ok=True)
            connection = connect(path, timeout=BUSY_TIMEOUT_SECONDS)
        except (OSError, sqlite3.Error) as err:
            raise StoreError(f"cannot open the index store at {path}: {err}") from err
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            # A database this connection is about to create (or rebuild from an older schema) holds no
            # index to protect, so its first build does without fsync; see FIRST_BUILD_SYNC.
            first_build = create and version < SCHEMA_VERSION
            if version <= SCHEMA_VERSION:  # never touch a newer KnowCode's database
                connection.execute(f"PRAGMA synchronous={FIRST_BUILD_SYNC if first_build else 'NORMAL'}")
                connection.execute(f"PRAGMA journal_mode={FIRST_BUILD_JOURNAL if first_build else 'WAL'}")
                # Queries read scattered rows of a large file: map it instead of a read() per page.
                connection.execute(f"PRAGMA mmap_size={MMAP_BYTES if mapped else 0}")
                connection.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        except StoreError as err:  # not a database, unreadable, ...
            connection.close()
            raise StoreError(f"cannot open the index store at {path}: {err.__cause__}") from err.__cause__
        if version > SCHEMA_VERSION:
            connection.close()
            raise SchemaVersionError(
                f"the index at {path} has schema {version}, newer than this KnowCode's "
                f"{SCHEMA_VERSION}: upgrade knowcode, or delete {directory} and re-index")
        if version < SCHEMA_VERSION and not create:
            # Readers never write: an empty or older schema is made or rebuilt by an indexing run,
            # under the writer lock, never by a reader racing it.
            connection.close()
            raise StoreError(f"no complete index at {directory}: run `knowcode index` first")
        store = cls(connection, path, first_build=first_build)
        if version < SCHEMA_VERSION:
            store._reset_schema()
        elif create:
            store._add_indexes()
        return store

    def _add_indexes(self) -> None:
        """Create the indexes of :data:`_ADDED_INDEXES` a store written before them lacks (a no-op, and
        no write, when it has them)."""
        present = {row[0] for row in self.connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index'")}
        missing = [sql for name, sql in _ADDED_INDEXES.items() if name not in present]
        if missing:
            with self.transaction():
                for sql in missing:
                    self.connection.execute(sql)

    def _reset_schema(self) -> None:
        """Create the schema; an older schema is dropped, since every table is derived data."""
        with self.transaction():
            tables = [row[0] for row in self.connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                self.connection.execute(f'DROP TABLE "{table}"')
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self.connection.execute(statement)
            self.connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        """Close the connection (a first build's store goes over to WAL, in which readers never wait)."""
        try:
            if self._first_build and not self.connection.in_transaction:
                self.connection.execute("PRAGMA journal_mode=WAL")
        except StoreError:
            # A read left open (Ctrl-C while a query's rows streamed) keeps SQLite from changing the
            # journal mode: the next writer's open sets WAL, and the interrupt must not turn into this.
            pass
        finally:
            self.connection.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run a block as one write transaction: all of it commits, or none of it."""
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self.connection.in_transaction:  # SQLite ends it itself on some errors (disk full, I/O)
                self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    # Reads

    def file_records(self) -> dict[str, FileRecord]:
        """Every indexed file by path."""
        rows = self.connection.execute(
            "SELECT path, language, content_hash, size, mtime, line_count FROM files")
        return {row[0]: FileRecord(*row) for row in rows}

    def files_named(self, cited: str, limit: int) -> list[str]:
        """Up to `limit` indexed files a cited path names, in path order: the path itself, or either
        holding more leading folders (the rule of paths.same_file)."""
        rows = self.connection.execute(
            "SELECT path FROM files WHERE path = ?1 OR substr(path, -length(?2)) = ?2 "
            "OR substr(?1, -length(path) - 1) = '/' || path ORDER BY path LIMIT ?3",
            (cited, "/" + cited, limit))
        return [row[0] for row in rows]

    def entity_keys_by_file(self, paths: Iterable[str]) -> dict[str, set[EntityKey]]:
        """What reference resolution reads of the entities each of the given files defines."""
        found: dict[str, set[EntityKey]] = {}
        sql = "SELECT path, name, id, kind, qualified_name, parent_id FROM entities WHERE path IN"
        for row in self._select_in(sql, paths, tuple):
            found.setdefault(row[0], set()).add(row[1:])
        return found

    def module_names(self, paths: Iterable[str]) -> dict[str, str]:
        """The qualified name each of the given files' module entity is stored under."""
        rows = self._select_in("SELECT path, qualified_name FROM entities WHERE kind = 'module' AND path IN",
                               paths, tuple)
        return dict(rows)

    def entities_named(self, names: Iterable[str], *, brief: bool = False) -> list[Entity]:
        """The entities whose short name is one of `names`.

        :param brief: leave signature and docstring empty (reference resolution reads neither, and
            they are most of an entity's size: a cold run loads nearly every entity of the tree).
        """
        columns = _BRIEF_ENTITY_COLUMNS if brief else _ENTITY_COLUMNS
        return self._select_in(f"SELECT {columns} FROM entities WHERE name IN", names, _entity)

    def entities_by_id(self, ids: Iterable[str], *, brief: bool = False) -> list[Entity]:
        """The entities with the given ids (missing ids are left out).

        :param brief: leave signature and docstring empty, as :meth:`entities_named` does.
        """
        columns = _BRIEF_ENTITY_COLUMNS if brief else _ENTITY_COLUMNS
        return self._select_in(f"SELECT {columns} FROM entities WHERE id IN", ids, _entity)

    def references_to_names(self, names: Iterable[str], modules: Iterable[str] = (), *,
                            every_import: bool = False) -> list[tuple[int, Relationship]]:
        """Relationships (not `contains`) whose target's last dotted part is one of `names`, and the
        imports that may also resolve through the part before the last, to a module: those with one
        of `modules` as a dotted part (a superset: the caller filters them by their lookup names).

        :param names: entity names that changed.
        :param modules: the module names among them.
        :param every_import: every import too (a package file changed: any import of a folder may
            resolve to it).
        :return: (rowid, relationship) of each: :meth:`replace_relationships` updates them by rowid.
        """
        def with_rowid(row: Sequence[Any]) -> tuple[int, Relationship]:
            return int(row[0]), relationship_of_row(row[1:])

        found = self._select_in(f"SELECT rowid, {_RELATIONSHIP_COLUMNS} FROM relationships "
                                "WHERE kind != 'contains' AND name IN", names, with_rowid)
        wanted = sorted(set(modules))
        if every_import or len(wanted) > FEW_NAMES:
            rows = self.connection.execute(
                f"SELECT rowid, {_RELATIONSHIP_COLUMNS} FROM relationships WHERE kind = 'imports'").fetchall()
        elif wanted:  # SQLite's scan picks them: turning every import into an object costs ~20 ms per 5k
            parts = " OR ".join(["instr('.' || target_name || '.', ?) > 0"] * len(wanted))
            rows = self.connection.execute(
                f"SELECT rowid, {_RELATIONSHIP_COLUMNS} FROM relationships "
                f"WHERE kind = 'imports' AND ({parts})",
                [f".{name}." for name in wanted]).fetchall()
        else:
            return found
        seen = {rowid for rowid, _ in found}
        return [*found, *(with_rowid(row) for row in rows if row[0] not in seen)]

    def imports_of_files(self, paths: Iterable[str]) -> list[Relationship]:
        """The import relationships written in the given files."""
        return self._select_in(f"SELECT {_RELATIONSHIP_COLUMNS} FROM relationships "
                               "WHERE kind = 'imports' AND path IN", paths, relationship_of_row)

    def relationships(self) -> list[Relationship]:
        """Every relationship, in a stable order."""
        rows = self.connection.execute(f"SELECT {_RELATIONSHIP_COLUMNS} FROM relationships "
                                       "ORDER BY path, line, source_id, kind, target_name")
        return [relationship_of_row(row) for row in rows]

    def entities(self) -> list[Entity]:
        """Every entity, ordered by path and position."""
        rows = self.connection.execute(f"SELECT {_ENTITY_COLUMNS} FROM entities "
                                       "ORDER BY path, start_line, end_line DESC, id")
        return [_entity(row) for row in rows]

    def chunks(self) -> list[Chunk]:
        """Every chunk, ordered by path and position."""
        rows = self.connection.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks ORDER BY path, start_line")
        return [Chunk(*row) for row in rows]

    def chunks_with_owners(self, ids: Iterable[str], *,
                           tokens: bool = True) -> dict[str, tuple[Chunk, Entity, float]]:
        """For each chunk id: the chunk, the entity that owns it and its file's mtime, in one query
        (the ranking stage reads all three for every candidate). The chunks' ``index_text`` is left
        empty: ranking reads their text and tokens, and decoding a third text a row cost a third of
        the query (~0.2 of 0.6 ms for 50 candidates).

        :param ids: chunk ids (ids not in the store are left out).
        :param tokens: read the chunks' tokens; without, they are left empty (a chunk's tokens are as
            long as its text: decoding them was ~0.25 of 0.58 ms of SQL for 50 candidates).
        :return: (chunk, owner, mtime) by chunk id.
        """
        sql = (f"SELECT {_OWNED_CHUNK_COLUMNS if tokens else _OWNED_CHUNK_COLUMNS_NO_TOKENS}, "
               f"{_OWNER_COLUMNS}, f.mtime FROM chunks c "
               "JOIN entities e ON e.id = c.entity_id JOIN files f ON f.path = c.path WHERE c.id IN")
        owners: dict[str, Entity] = {}  # chunks of one entity share its object: built once
        found = {}
        kinds = _ENTITY_KINDS
        # fields by position, not slices of the row: a slice is a new tuple per row (~1/6 of the build)
        for row in self._select_in(sql, ids, _same):
            owner = owners.get(row[2])
            if owner is None:
                owner = owners[row[2]] = Entity(row[2], row[8], kinds[row[9]], row[10], row[11], row[12],
                                                row[13], row[14], row[15], row[16], row[17])
            chunk = Chunk(row[0], row[1], row[2], row[3], row[4], row[5], "", row[7])
            found[row[0]] = (chunk, owner, row[18])
        return found

    def chunk_tokens(self, ids: Iterable[str]) -> dict[str, str]:
        """The index tokens (space-joined) of each given chunk (ids not in the store are left out)."""
        return dict(self._select_in("SELECT id, tokens FROM chunks WHERE id IN", ids,
                                    lambda row: (str(row[0]), str(row[1]))))

    def chunk_languages(self, ids: Iterable[str]) -> dict[str, str]:
        """The language of each given chunk's entity (ids not in the store are left out)."""
        sql = "SELECT c.id, e.language FROM chunks c JOIN entities e ON e.id = c.entity_id WHERE c.id IN"
        return dict(self._select_in(sql, ids, lambda row: (str(row[0]), str(row[1]))))

    def existing_chunk_ids(self, ids: Iterable[str]) -> set[str]:
        """The given chunk ids that exist in the store."""
        return set(self._select_in("SELECT id FROM chunks WHERE id IN", ids, lambda row: str(row[0])))

    def chunks_of_entities(self, entities: Iterable[Entity]) -> list[Chunk]:
        """The chunks owned by the given entities, in file order.

        Found through their files (a chunk lies in its entity's file): chunks are indexed by path, not
        by entity, and a scan of every chunk cost ~20 ms a context request at 59k chunks.
        """
        unique = list({entity.id: entity for entity in entities}.values())
        found: list[Chunk] = []
        for start in range(0, len(unique), _BATCH // 2):  # a path and an id an entity
            batch = unique[start:start + _BATCH // 2]
            paths, ids = sorted({e.path for e in batch}), [e.id for e in batch]
            sql = (f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE path IN ({','.join('?' * len(paths))}) "
                   f"AND entity_id IN ({','.join('?' * len(ids))})")
            found.extend(Chunk(*row) for row in self.connection.execute(sql, [*paths, *ids]).fetchall())
        return sorted(found, key=lambda c: (c.path, c.start_line))

    def chunks_in_span(self, path: str, start_line: int, end_line: int) -> list[Chunk]:
        """The chunks of a file that overlap a line span, in order."""
        rows = self.connection.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE path = ? AND start_line <= ? AND end_line >= ? "
            "ORDER BY start_line", (path, end_line, start_line))
        return [Chunk(*row) for row in rows]

    def entities_named_like(self, text: str, limit: int) -> list[Entity]:
        """Entities whose name or qualified name is `text`, or whose qualified name ends in `.text`;
        exact qualified names first, then exact names, a module (a file named like its class) after
        the other definitions, then by path."""
        last = text.replace("::", ".").rsplit(".", 1)[-1]
        dotted = text.replace("::", ".")
        rows = self.connection.execute(f"SELECT {_ENTITY_COLUMNS} FROM entities WHERE name = ?", (last,))
        found = [e for e in map(_entity, rows) if e.name == text or e.qualified_name == dotted
                 or e.qualified_name.endswith("." + dotted)]
        found.sort(key=lambda e: (e.qualified_name != dotted, e.name != text, e.kind is EntityKind.MODULE,
                                  e.path, e.start_line))
        return found[:limit]

    def chunks_containing(self, text: str, limit: int) -> list[Chunk]:
        """Chunks whose text contains `text` verbatim (case-sensitive), most occurrences first."""
        rows = self.connection.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE instr(text, ?) > 0 "
            "ORDER BY (length(text) - length(replace(text, ?, ''))) / length(?) DESC, path, start_line "
            "LIMIT ?", (text, text, text, limit))
        return [Chunk(*row) for row in rows]

    def callees(self, entity_ids: Iterable[str]) -> list[tuple[str, str]]:
        """Resolved (caller id, callee id) call edges out of the given entities, in source order."""
        rows = self._select_in("SELECT source_id, target_id, line FROM relationships WHERE kind = 'calls' "
                               "AND target_id IS NOT NULL AND source_id IN", entity_ids, tuple)
        return [(row[0], row[1]) for row in sorted(rows, key=lambda row: (row[0], row[2]))]

    def callers(self, entity_ids: Iterable[str]) -> list[tuple[str, str]]:
        """Resolved (callee id, caller id) call edges into the given entities, by path and line."""
        rows = self._select_in("SELECT target_id, source_id, path, line FROM relationships "
                               "WHERE kind = 'calls' AND target_id IN", entity_ids, tuple)
        return [(row[0], row[1]) for row in sorted(rows, key=lambda row: (row[0], row[2], row[3], row[1]))]

    def caller_names(self, entity_ids: Iterable[str], limit: int,
                     counted: MutableMapping[str, int] | None = None) -> dict[str, tuple[list[str], int]]:
        """For each entity with resolved callers: the first `limit` of their qualified names, each once,
        ordered by the path and line of its first call, and how many distinct names there are.

        What :meth:`callers` gives, named and de-duplicated. A popular function has thousands of call
        rows and a bundle shows ten names: each entity's rows are read in order from the
        relationships_callers index until `limit` names are found, and only an entity with that many
        has its distinct names counted, in SQLite, without its rows becoming Python objects.

        :param entity_ids: the entities.
        :param limit: names kept per entity.
        :param counted: totals counted before on this same state of the index, by entity id; totals
            counted now are added to it (counting a popular function's ~6k call rows is most of
            this method's cost). The caller keeps it for one state only.
        :return: (first names, total) by entity id, for the entities that have callers.
        """
        join = f"JOIN entities AS e {self._names_hint()} ON e.id = r.source_id"
        first = (f"SELECT e.qualified_name FROM relationships AS r {join} WHERE r.target_id = ? "
                 "AND r.kind = 'calls' ORDER BY r.path, r.line, r.source_id")
        enough = max(limit, 1)  # a limit of 0 still needs one name to know the entity has callers
        found: dict[str, tuple[list[str], int]] = {}
        for target in sorted(set(entity_ids)):
            names: dict[str, None] = {}  # a dict keeps each name's first place
            rows = self.connection.execute(first, (target,))
            for (name,) in rows:
                names[name] = None
                if len(names) >= enough:
                    break
            rows.close()
            if names:
                found[target] = (list(islice(names, limit)), len(names))
        known = counted if counted is not None else {}
        for target, (names_found, seen) in found.items():
            if seen >= enough and target in known:
                found[target] = (names_found, known[target])
        uncounted = [target for target, (_, seen) in found.items() if seen >= enough and target not in known]
        count = (f"SELECT r.target_id, COUNT(DISTINCT e.qualified_name) FROM relationships AS r {join} "
                 "WHERE r.kind = 'calls' AND r.target_id IN ({marks}) GROUP BY r.target_id")
        for batch in _batches(uncounted):
            marks = ",".join("?" * len(batch))
            for target, total in self.connection.execute(count.format(marks=marks), batch):
                found[target] = (found[target][0], total)
                if counted is not None:
                    counted[target] = total
        return found

    def _names_hint(self) -> str:
        """``INDEXED BY entities_names`` when the store has it: SQLite's planner takes the primary key's
        index for ``e.id = ...``, which then reads each caller's table row for its name (~1 ms of a
        bundle's reads); a store written before the index was added is read without it."""
        if self._names_indexed is None:
            self._names_indexed = self.connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?",
                (NAMES_INDEX,)).fetchone() is not None
        return f"INDEXED BY {NAMES_INDEX}" if self._names_indexed else ""

    def callee_names(self, entity_ids: Iterable[str], limit: int) -> dict[str, tuple[list[str], int]]:
        """For each entity with resolved callees: the first `limit` of their qualified names, each once,
        in the order of the first call (calls on one line in the order :meth:`callees` reads them),
        and how many distinct names there are."""
        return self._first_names(
            "SELECT r.source_id, e.qualified_name FROM relationships AS r JOIN entities AS e "
            "ON e.id = r.target_id WHERE r.kind = 'calls' AND r.target_id IS NOT NULL "
            "AND r.source_id IN ({marks}) ORDER BY r.source_id, r.line, r.rowid", entity_ids, limit)

    def _first_names(self, sql: str, owners: Iterable[str], limit: int) -> dict[str, tuple[list[str], int]]:
        names: dict[str, dict[str, None]] = {}
        for batch in _batches(owners):
            rows = self.connection.execute(sql.format(marks=",".join("?" * len(batch))), batch).fetchall()
            for owner, name in rows:
                names.setdefault(owner, {})[name] = None  # a dict keeps each name's first place
        return {owner: (list(islice(found, limit)), len(found)) for owner, found in names.items()}

    def relationships_into(self, target_ids: Iterable[str],
                           kinds: Iterable[RelationKind]) -> list[Relationship]:
        """Resolved relationships of the given kinds that point at the given entities, by path and line."""
        wanted = {kind.value for kind in kinds}
        found = self._select_in(f"SELECT {_RELATIONSHIP_COLUMNS} FROM relationships WHERE target_id IN",
                                target_ids, relationship_of_row)
        return sorted((r for r in found if r.kind.value in wanted),
                      key=lambda r: (r.path, r.line, r.source_id, r.target_name))

    def relationships_from(self, source_ids: Iterable[str],
                           kinds: Iterable[RelationKind]) -> list[Relationship]:
        """Resolved relationships of the given kinds out of the given entities, by path and line."""
        wanted = {kind.value for kind in kinds}
        found = self._select_in(f"SELECT {_RELATIONSHIP_COLUMNS} FROM relationships "
                                "WHERE target_id IS NOT NULL AND source_id IN", source_ids,
                                relationship_of_row)
        return sorted((r for r in found if r.kind.value in wanted),
                      key=lambda r: (r.path, r.line, r.source_id, r.target_name))

    def entities_at(self, path: str, line: int | None = None) -> list[Entity]:
        """The entities of a file whose span holds a line (every one without a line), innermost first."""
        sql = f"SELECT {_ENTITY_COLUMNS} FROM entities WHERE path = ?"
        args: tuple[object, ...] = (path,)
        if line is not None:
            sql, args = sql + " AND start_line <= ? AND end_line >= ?", (path, line, line)
        rows = self.connection.execute(sql + " ORDER BY end_line - start_line, start_line, id", args)
        return [_entity(row) for row in rows]

    def children(self, entity_ids: Iterable[str]) -> list[Entity]:
        """The entities directly inside the given ones (a class's methods, a module's top level), in
        file order."""
        found = self._select_in(f"SELECT {_ENTITY_COLUMNS} FROM entities WHERE parent_id IN", entity_ids,
                                _entity)
        return sorted(found, key=lambda e: (e.path, e.start_line, e.id))

    def first_children(self, entity_ids: Iterable[str], limit: int) -> dict[str, tuple[list[Entity], int]]:
        """For each entity with members: the first `limit` of its direct children in file order (as
        :meth:`children` sorts them) and how many it has."""
        sql = (f"SELECT {_ENTITY_COLUMNS}, total FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY parent_id "
               "ORDER BY path, start_line, id) AS place, COUNT(*) OVER (PARTITION BY parent_id) AS total "
               "FROM entities WHERE parent_id IN ({marks})) WHERE place <= ? ORDER BY parent_id, place")
        found: dict[str, tuple[list[Entity], int]] = {}
        for batch in _batches(entity_ids):
            rows = self.connection.execute(sql.format(marks=",".join("?" * len(batch))), [*batch, limit])
            for row in rows.fetchall():
                found.setdefault(row[5], ([], row[11]))[0].append(_entity(row))
        return found

    def members_within(self, spans: Iterable[tuple[str, int, int, bool]]) -> dict[str, list[Entity]]:
        """For each (entity id, first line, last line, beside): the members a chunk of the entity packs,
        in file order: its direct children that lie wholly inside those lines, and, when `beside`, the
        entities declared there for one of those children from outside it (a Go method beside its
        struct, a Rust `impl` or a Swift `extension` beside its type), which are that child's children.

        :return: the members by entity id (entities without any are left out).
        """
        unique = list(dict.fromkeys(spans))
        found: dict[str, list[Entity]] = {}
        direct = "JOIN entities m ON m.parent_id = owner AND m.start_line >= first AND m.end_line <= last"
        # asked only for languages that declare methods beside their type: no other search pays for it
        beside = ("JOIN entities p ON p.parent_id = owner JOIN entities m ON m.parent_id = p.id "
                  "AND m.start_line >= first AND m.end_line <= last "
                  "AND (m.start_line > p.end_line OR m.end_line < p.start_line)")
        for join, asked in ((direct, unique), (beside, [span for span in unique if span[3]])):
            for start in range(0, len(asked), _BATCH // 3):  # three parameters a span
                batch = asked[start:start + _BATCH // 3]
                values = ",".join("(?, ?, ?)" for _ in batch)
                sql = (f"WITH span(owner, first, last) AS (VALUES {values}) "
                       f"SELECT owner, {_MEMBER_COLUMNS} FROM span {join}")
                parameters = [value for owner, first, last, _ in batch for value in (owner, first, last)]
                for row in self.connection.execute(sql, parameters).fetchall():
                    found.setdefault(row[0], []).append(_entity(row[1:]))
        return {owner: sorted(members, key=lambda e: (e.start_line, e.id))
                for owner, members in found.items()}

    def file_records_in(self, paths: Iterable[str]) -> dict[str, FileRecord]:
        """The indexed records of the given files (missing paths are left out)."""
        found = self._select_in("SELECT path, language, content_hash, size, mtime, line_count FROM files "
                                "WHERE path IN", paths, lambda row: FileRecord(*row))
        return {record.path: record for record in found}

    def skipped(self) -> dict[str, str]:
        """Files the last run left out, with the reason."""
        return dict(self.connection.execute("SELECT path, reason FROM skipped ORDER BY path"))

    def meta(self) -> dict[str, str]:
        """Free-form facts about the index (root, times, versions)."""
        return dict(self.connection.execute("SELECT key, value FROM meta"))

    def counts(self) -> dict[str, object]:
        """Totals by language, entity kind and relationship kind, as `knowcode stats` reports them."""
        query = self.connection.execute
        languages = Counter(dict(query("SELECT language, COUNT(*) FROM files GROUP BY language")))
        kinds = Counter(dict(query("SELECT kind, COUNT(*) FROM entities GROUP BY kind")))
        relations = Counter(dict(query(
            "SELECT kind, COUNT(*) FROM relationships WHERE target_id IS NOT NULL GROUP BY kind")))
        return {
            "files": sum(languages.values()),
            "lines": query("SELECT COALESCE(SUM(line_count), 0) FROM files").fetchone()[0],
            "languages": dict(sorted(languages.items())),
            "entities": dict(sorted(kinds.items())),
            "relationships": dict(sorted(relations.items())),
            "chunks": query("SELECT COUNT(*) FROM chunks").fetchone()[0],
            "unresolved_references": query(
                "SELECT COUNT(*) FROM relationships WHERE target_id IS NULL").fetchone()[0],
            "skipped_files": query("SELECT COUNT(*) FROM skipped").fetchone()[0],
        }

    def _select_in(self, sql: str, values: Iterable[str], make: Callable[[Any], T]) -> list[T]:
        found: list[T] = []
        for batch in _batches(values):
            marks = ",".join("?" * len(batch))
            # fetchall: the rows come out in C, not through the error-wrapping cursor's __next__ one by one
            found.extend(map(make, self.connection.execute(f"{sql} ({marks})", batch).fetchall()))
        return found

    # Writes (call inside `transaction()`)

    def delete_files(self, paths: Sequence[str]) -> None:
        """Remove files with everything derived from them (relationships written in them included)."""
        for table in ("files", "entities", "relationships", "chunks"):
            for batch in _batches(paths):
                marks = ",".join("?" * len(batch))
                self.connection.execute(f"DELETE FROM {table} WHERE path IN ({marks})", batch)

    def insert(self, files: Iterable[FileRecord], entities: Iterable[Entity],
               chunks: Iterable[Chunk]) -> None:
        """Add files, their entities and their chunks."""
        self.insert_rows(files, map(entity_row, entities), map(chunk_row, chunks))

    def insert_rows(self, files: Iterable[FileRecord], entities: Iterable[EntityRow],
                    chunks: Iterable[ChunkRow]) -> None:
        """Add files, and their entities and chunks given as rows (:func:`entity_row`, :func:`chunk_row`)."""
        execute = self.connection.executemany
        execute("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)",
                ((f.path, f.language, f.content_hash, f.size, f.mtime, f.line_count) for f in files))
        execute(f"INSERT INTO entities ({_ENTITY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                entities)
        execute(f"INSERT INTO chunks ({_CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", chunks)

    @contextmanager
    def indexes_deferred(self, table: str) -> Iterator[None]:
        """Drop a table's secondary indexes for the block and build them again after it: building an
        index over loaded rows sorts once, where keeping it inserts into it row by row (writing the
        118k relationships of abseil took 0.6-0.68 s of CPU with its four indexes kept, 0.35-0.38 s so).

        Call inside :meth:`transaction`: readers keep seeing the committed indexes, and when the block
        raises, the transaction's rollback restores them.

        :param table: a table of the schema.
        """
        indexes = self.connection.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name = ?",
            (table,)).fetchall()
        for name, _ in indexes:
            self.connection.execute(f'DROP INDEX "{name}"')
        yield
        for _, sql in indexes:
            self.connection.execute(sql)

    def insert_relationships(self, relationships: Iterable[Relationship]) -> None:
        """Add relationships (resolved or not)."""
        self.insert_relationship_rows(map(relationship_row, relationships))

    def insert_relationship_rows(self, rows: Iterable[RelationshipRow]) -> None:
        """Add relationships given as rows (:func:`relationship_row`)."""
        self.connection.executemany(
            f"INSERT INTO relationships ({_RELATIONSHIP_COLUMNS}, name) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows)

    def last_relationship_rowid(self) -> int:
        """The highest rowid of the relationships table (0 when empty): rows inserted later lie above it."""
        return int(self.connection.execute("SELECT COALESCE(MAX(rowid), 0) FROM relationships").fetchone()[0])

    def unresolved_references_after(self, rowid: int, limit: int) -> list[UnresolvedReference]:
        """Up to `limit` unresolved references (not `contains`) above a rowid, in rowid order: what an
        indexing run wrote unresolved, read back a batch at a time, as the fields resolution reads (no
        :class:`Relationship` built for each: a cold run of abseil reads back ~105k).

        :param rowid: the rowid they lie above.
        :param limit: how many at most.
        :return: (rowid, source id, kind, target name, path) of each.
        """
        rows = self.connection.execute(
            "SELECT rowid, source_id, kind, target_name, path FROM relationships WHERE rowid > ? "
            "AND target_id IS NULL AND kind != 'contains' ORDER BY rowid LIMIT ?", (rowid, limit))
        kinds = _RELATION_KINDS
        return [(row[0], row[1], kinds[row[2]], row[3], row[4]) for row in rows]

    def set_relationship_targets(self, targets: Iterable[tuple[str, int]]) -> None:
        """Resolve relationships: (target id, rowid) pairs."""
        self.connection.executemany("UPDATE relationships SET target_id = ? WHERE rowid = ?", targets)

    def replace_relationships(self, old: Sequence[tuple[int, Relationship]],
                              new: Sequence[Relationship]) -> None:
        """Swap existing relationships ((rowid, relationship), as :meth:`references_to_names` read them) for
        their re-resolved versions. By rowid: matched by their columns, each update scanned every row of its
        source, and one sympy module is the source of 26k references (an update ran for minutes)."""
        self.connection.executemany(
            "UPDATE relationships SET target_id = ? WHERE rowid = ?",
            ((n.target_id, rowid) for (rowid, o), n in zip(old, new, strict=True)
             if o.target_id != n.target_id))

    def replace_skipped(self, skipped: dict[str, str]) -> None:
        """Replace the list of files the run left out."""
        self.connection.execute("DELETE FROM skipped")
        self.connection.executemany("INSERT INTO skipped VALUES (?, ?)", sorted(skipped.items()))

    def set_meta(self, values: dict[str, str]) -> None:
        """Set free-form facts about the index."""
        self.connection.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values.items())
