"""Incremental indexing: scan, parse what changed, resolve what a change can affect, commit once.

A file is re-read only when its size or modification time changed, and re-parsed only when its
content hash changed. References are re-resolved when they were written in a changed file, or when
they mention a name that a changed file defined before or defines now: no other resolution can change.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from knowcode.errors import StoreRootError
from knowcode.indexing.entity_ids import module_name
from knowcode.indexing.graph_builder import (
    SymbolTable,
    lookup_names,
    resolve,
    resolve_target,
    target_lookup_names,
)
from knowcode.indexing.languages import PACKAGE_FILES
from knowcode.indexing.scanner import ScannedFile, SkippedFile, scan
from knowcode.indexing.tokenizer import TOKENIZER_VERSION
from knowcode.models import EntityKind, FileRecord, RelationKind
from knowcode.progress import Phase, ProgressCallback, no_progress
from knowcode.storage.store import EntityKey, EntityRow, RelationshipRow, Store

if TYPE_CHECKING:
    from knowcode.indexing.file_parser import FileFailure, ParsedFile

logger = logging.getLogger(__name__)

PARALLEL_MIN_FILES = 64  # below this, starting worker processes costs more than it saves
# With the worker count left automatic, files totalling less than this are parsed in this process: a
# pool costs 0.55-0.95 s of wall before its first result (the forkserver's imports, each worker's
# grammar and query set-up) and serial parsing runs at 1.1-2.5 MB/s of CPU, so two workers only win
# past 2 x rate x start-up = 2.1-3.1 MB (measured on aiohttp, click, trpc and zod, 2 cores, load 9).
PARALLEL_MIN_BYTES = 2 * 1024 * 1024
PARSE_CHUNKSIZE = 4  # files per task sent to a worker: amortises pickling, keeps the cores evenly busy

# What a run extracts from a file (entities, chunks, tokens): bump PARSER_OUTPUT_VERSION whenever a
# language query, the parser or the chunker changes its output; the tokenizer has its own version.
PARSER_OUTPUT_VERSION = 23
EXTRACTION_VERSION = f"{PARSER_OUTPUT_VERSION}.{TOKENIZER_VERSION}"
EXTRACTION_VERSION_KEY = "extraction_version"
# Meta key counting committed runs that changed chunks: derived indexes (BM25, vectors) record the
# generation they were built from, so a reader can tell whether they are current.
CONTENT_GENERATION_KEY = "content_generation"
# Meta key: "<content generation>:<digest of every scanned path and module name>" as the last run of
# this code wrote it. When the generation is still the store's and the digest this scan's, no unchanged
# file can have been renamed (see _renamed_modules); a run of older code that changed anything bumped
# the generation, so its changes are never skipped.
MODULE_NAMES_KEY = "module_names_digest"
ROOT_KEY = "root"  # the repository folder the store indexes (resolved)
_CONTAINS = RelationKind.CONTAINS.value
_IMPORTS = RelationKind.IMPORTS.value
_MODULE = EntityKind.MODULE.value
# References read back per query when resolving: bounds the memory of resolution, not its speed.
RESOLVE_BATCH = 20_000


@dataclass(frozen=True)
class IndexReport:
    """What one indexing run did, file paths sorted."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()  # (old path, new path) with identical content
    unchanged: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # unreadable or undecodable, with reason
    skipped: dict[str, str] = field(default_factory=dict)  # left out by the scanner, with reason
    parsed_files: int = 0
    parsed_lines: int = 0
    seconds: float = 0.0


def _parallel(files: Sequence[ScannedFile], workers: int) -> bool:
    """Whether to parse in worker processes: `workers` > 1 set explicitly, or left automatic (0) and
    the files large enough to repay the pool's start-up; either way, enough files to share out."""
    if len(files) < PARALLEL_MIN_FILES:
        return False
    if workers == 0:
        return _usable_cpus() > 1 and sum(f.size for f in files) >= PARALLEL_MIN_BYTES
    return workers > 1


def _parse_all(root: Path, files: list[ScannedFile], workers: int,
               progress: ProgressCallback) -> Iterator[ParsedFile | FileFailure]:
    if not files:
        return
    # The parser stack (tree-sitter, every grammar, the chunker) loads only for a run that parses: a
    # run that finds the tree unchanged, as every query's freshness check does, never needs it.
    from knowcode.indexing import file_parser

    task = partial(file_parser.parse_file, root)
    done = 0
    progress(Phase.PARSE, 0, len(files))
    if _parallel(files, workers):
        workers = workers or _usable_cpus()
        from concurrent.futures.process import BrokenProcessPool  # multiprocessing: only to start workers

        from knowcode.indexing.workers import worker_pool

        # Workers re-import the caller's main module (as with any spawned process), so a script
        # without an `if __name__ == "__main__":` guard breaks the pool: finish serially then.
        with worker_pool(workers, preload=[file_parser.__name__]) as executor:
            try:
                for result in executor.map(task, files, chunksize=PARSE_CHUNKSIZE):
                    done += 1
                    progress(Phase.PARSE, done, len(files))
                    yield result
                return
            except BrokenProcessPool as err:
                logger.warning("parser workers failed (%s); parsing the remaining files in this process", err)
    for scanned in files[done:]:
        result = task(scanned)
        done += 1
        progress(Phase.PARSE, done, len(files))
        yield result


def _usable_cpus() -> int:
    """CPUs this process may run on (a container's affinity, not the host's core count)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


def index_repository(root: Path, store: Store, *, max_file_bytes: int, workers: int = 0,
                     progress: ProgressCallback = no_progress) -> IndexReport:
    """Bring the store up to date with the files under root, in one transaction.

    Parsed files are written as they arrive from the workers, so storage overlaps parsing.

    :param root: the repository root.
    :param store: the open store to update.
    :param max_file_bytes: larger files are skipped.
    :param workers: parser processes; 0 means one per core once the files to parse reach
        PARALLEL_MIN_BYTES, else this process alone.
    :param progress: told of the scan, each parsed file and the linking of references.
    :return: what changed.
    :raises StoreRootError: the store indexes another folder that still exists.
    """
    started = time.perf_counter()
    check_root(store, root)
    progress(Phase.SCAN, 0, None)
    scanned = scan(root, max_file_bytes)
    progress(Phase.SCAN, len(scanned.files), len(scanned.files))
    old = store.file_records()
    stale: list[str] = []
    if old and store.meta().get(EXTRACTION_VERSION_KEY) != EXTRACTION_VERSION:
        stale, old = sorted(old), {}  # entities, chunks or tokens come out differently now: redo all
    current = {f.path: f for f in scanned.files}
    to_parse = [f for f in scanned.files
                if f.path not in old or (old[f.path].size, old[f.path].mtime) != (f.size, f.mtime)]
    meta = store.meta()
    modules_digest = _module_names_digest(scanned.files)
    last_generation = meta.get(CONTENT_GENERATION_KEY, "0")
    renamed_modules = (set() if meta.get(MODULE_NAMES_KEY) == f"{last_generation}:{modules_digest}"
                       else _renamed_modules(store, scanned.files, old, to_parse))
    to_parse.extend(f for f in scanned.files if f.path in renamed_modules)
    gone = sorted(set(old) - set(current))
    fresh: list[FileRecord] = []  # records only: a file's rows are in the store once it arrives
    failed: dict[str, str] = {}
    with store.transaction(), ExitStack() as deferred:
        old_keys = store.entity_keys_by_file([*gone, *(f.path for f in to_parse if f.path in old)])
        changed_keys = {key for path in gone for key in old_keys.get(path, ())}  # entities that changed
        store.delete_files([*stale, *gone])
        loading = ExitStack()
        if not old:  # nothing kept: each index is built once over the loaded rows, not row by row
            deferred.enter_context(store.indexes_deferred("relationships"))  # after resolution
            for table in ("entities", "chunks"):  # before it: resolution looks entities up by name
                loading.enter_context(store.indexes_deferred(table))
        references = _NewReferences()
        if to_parse:
            from knowcode.indexing.file_parser import FileFailure  # see _parse_all
        for outcome in _parse_all(root, to_parse, workers, progress):
            path = outcome.path
            if path in old:
                store.delete_files([path])
            if isinstance(outcome, FileFailure):
                failed[path] = outcome.reason
                changed_keys.update(old_keys.get(path, ()))
                continue
            store.insert_rows([outcome.record], outcome.entities, outcome.chunks)
            references.write(store, outcome.references)
            content_changed = path not in old or old[path].content_hash != outcome.record.content_hash
            if content_changed:
                fresh.append(outcome.record)
            if content_changed or path in renamed_modules:  # what referred to a changed entity re-resolves
                changed_keys.update(_changed_keys(old_keys.get(path, set()), outcome.entities))
        loading.close()
        replaced = {*gone, *(f.path for f in to_parse)}
        if replaced:
            progress(Phase.RESOLVE, 0, None)
        linked = _resolve_changes(store, references, changed_keys, replaced, bool(current.keys() - replaced))
        deferred.close()
        skipped = {**{s.path: s.reason for s in scanned.skipped}, **failed}
        wrote = bool(replaced or stale)
        if skipped != store.skipped():
            store.replace_skipped(skipped)
            wrote = True
        changed = bool(fresh or gone or stale or renamed_modules or failed.keys() & old.keys())
        generation = int(last_generation) + (1 if changed else 0)
        facts = {ROOT_KEY: str(root.resolve()), EXTRACTION_VERSION_KEY: EXTRACTION_VERSION,
                 CONTENT_GENERATION_KEY: str(generation), MODULE_NAMES_KEY: f"{generation}:{modules_digest}"}
        updates = {key: value for key, value in facts.items() if meta.get(key) != value}
        # A run that finds the store current writes nothing: its first write would sync a new WAL
        # file's header and closing would checkpoint it, two fsyncs that cost a busy disk up to
        # half a second each, on every `knowcode index` and every query that checks freshness first.
        if wrote or updates.keys() - {MODULE_NAMES_KEY}:
            updates["indexed_at"] = str(time.time())  # when the index last changed
        if updates:
            store.set_meta(updates)
    if replaced:  # the commit is part of the phase: it can take a while on a big first run
        progress(Phase.RESOLVE, linked, linked)
    gone = sorted({*gone, *(path for path in failed if path in old)})
    return _report(old, fresh, gone, failed, scanned.skipped, len(current), started)


def check_root(store: Store, root: Path) -> None:
    """Refuse to index root into a store that holds the index of another folder.

    Indexing would re-root it: every file of the other repository deleted, this one parsed from
    scratch (a `--store` reused from another folder, or a mistyped `--repo`). A store whose folder no
    longer exists follows the new root: the repository was moved or renamed.

    :raises StoreRootError: the store's recorded root is another existing folder.
    """
    recorded = store.meta().get(ROOT_KEY)
    if recorded and recorded != str(root.resolve()) and Path(recorded).is_dir():
        raise StoreRootError(f"{store.path.parent} holds the index of {recorded}, not {root.resolve()}: "
                             f"pass --repo {recorded}, or another --store for this folder")


def _module_names_digest(files: Iterable[ScannedFile]) -> str:
    """A digest of every scanned file's path and module name.

    After a committed run every stored file's entities are named under the module name its scan gave
    (parsed files take it from the scan; :func:`_renamed_modules` re-parses unchanged files whose
    name moved), so when the next scan gives the same digest, no unchanged file was renamed.
    """
    digest = hashlib.blake2b(digest_size=16)
    for f in files:
        digest.update(f"{f.path}\0{f.module}\n".encode())
    return digest.hexdigest()


def _changed_keys(before: set[EntityKey], rows: Sequence[EntityRow]) -> set[EntityKey]:
    """The entities a re-parsed file lost or gained, as resolution sees them (an entity that changed
    is lost under its old key and gained under its new one).

    A reference elsewhere resolves among the entities of its lookup names (:func:`lookup_names`); an
    entity that kept its id, kind, qualified name and parent resolves it as before, so only the names
    of the entities that differ need their references re-resolved.
    """
    # EntityKey: what resolution (graph_builder) reads of an entity; its path is the file's own, its
    # lines are never read
    after = {(row[3], row[0], row[2], row[4], row[5]) for row in rows}
    return before ^ after


def _renamed_modules(store: Store, files: Iterable[ScannedFile], old: dict[str, FileRecord],
                     to_parse: list[ScannedFile]) -> set[str]:
    """Unchanged files whose module name is no longer the one their entities were stored under.

    A module name keeps its extension only while a file of another language shares it, so adding,
    deleting or re-typing one file can rename a sibling of the same stem without touching it (and an
    index built before names were made unique is renamed the same way). Only files with such a
    sibling, in this tree or at the last run, are looked up. The caller skips this when the scan's
    module-name digest is the one recorded at the store's current generation (MODULE_NAMES_KEY).
    """
    parsing = {f.path for f in to_parse}
    plain_names = Counter(module_name(path)[1] for path in {*(f.path for f in files), *old, *store.skipped()})
    candidates = [f for f in files
                  if f.path in old and f.path not in parsing and plain_names[module_name(f.path)[1]] > 1]
    stored = store.module_names(f.path for f in candidates)
    return {f.path for f in candidates if stored.get(f.path, f.module) != f.module}


@dataclass
class _NewReferences:
    """What resolution needs to know of the references written by this run, gathered as they are
    written: the rows themselves stay in the store, so memory holds names, not every reference."""

    after_rowid: int | None = None  # the run's rows are those above it (None: it wrote none)
    wanted: set[str] = field(default_factory=set)  # entity names they may resolve to
    sources: set[str] = field(default_factory=set)  # entities they start from
    imports: list[RelationshipRow] = field(default_factory=list)  # their imports, for the bindings
    count: int = 0  # those to resolve (not `contains`)

    def write(self, store: Store, rows: Sequence[RelationshipRow]) -> None:
        """Write one file's relationships unresolved (resolution updates them) and note what they need."""
        if rows and self.after_rowid is None:
            # The run's first rows: the table's rows are all older ones, at or below its highest rowid,
            # and new rows go above the highest, which stays a new row's from now on (old rows
            # deleted later, when their file comes in, lie below it).
            self.after_rowid = store.last_relationship_rowid()
        store.insert_relationship_rows(rows)
        pending = [row for row in rows if row[1] != _CONTAINS]
        # A file names the same callee many times (abseil: 105k references, 3.7 per distinct target
        # and file): each distinct target's lookup names are worked out once.
        self.wanted.update(*map(target_lookup_names, {row[2] for row in pending}))
        if any(row[1] == _IMPORTS for row in pending):
            self.wanted.update(PACKAGE_FILES)  # an import may resolve to a folder's package file
        self.sources.update(row[0] for row in pending)
        self.count += len(pending)
        self.imports.extend(row for row in pending if row[1] == _IMPORTS and row[6])


def _resolve_changes(store: Store, new: _NewReferences, changed: set[EntityKey], replaced: set[str],
                     has_unchanged: bool) -> int:
    """Resolve the re-parsed files' references, and re-resolve old ones that mention a changed name.

    :param new: the re-parsed files' references, written to the store unresolved.
    :param changed: the entities removed or added (:func:`_changed_keys`).
    :return: the references resolved.
    """
    names = {key[0] for key in changed}
    # An import resolves through the part before its last only to a module (graph_builder), so only
    # modules' names make the store look past the imports' last parts.
    modules = {key[0] for key in changed if key[2] == _MODULE}
    # A package file (`utils/index.ts`) appearing or going may change what any import of a folder means.
    candidates = (store.references_to_names(names, modules, every_import=bool(modules & PACKAGE_FILES))
                  if has_unchanged and names else [])
    referring = [(rowid, r) for rowid, r in candidates
                 if r.path not in replaced and lookup_names(r) & names]
    affected = [r for _, r in referring]
    pending_affected = [r for r in affected if r.kind is not RelationKind.CONTAINS]
    table = SymbolTable()
    wanted = new.wanted.union(*map(lookup_names, pending_affected))
    table.add_entities(store.entities_named(wanted, brief=True))
    missing = new.sources.union(r.source_id for r in pending_affected)
    while missing:  # sources and their enclosing entities, for same-class resolution
        loaded = store.entities_by_id(missing - table.by_id.keys(), brief=True)
        table.add_entities(loaded)
        missing = {e.parent_id for e in loaded if e.parent_id and e.parent_id not in table.by_id}
    table.add_bindings(store.imports_of_files({r.path for r in affected}))
    table.add_binding_rows(new.imports)
    after = new.after_rowid
    while after is not None and (batch := store.unresolved_references_after(after, RESOLVE_BATCH)):
        after = batch[-1][0]
        # An entity names one target many times (abseil: 105k references, 54k distinct by kind,
        # target, source and file; a batch holds whole runs of one file's rows): each is resolved
        # once a batch. Resolution reads only the table, which stays as it is for the whole loop.
        resolved: dict[tuple[RelationKind, str, str, str], str | None] = {}
        targets: list[tuple[str, int]] = []
        for rowid, source, kind, target, path in batch:
            key = (kind, target, source, path)
            found = resolved[key] if key in resolved else resolved.setdefault(
                key, resolve_target(kind, target, source, path, table))
            if found is not None:
                targets.append((found, rowid))
        store.set_relationship_targets(targets)
    store.replace_relationships(referring, resolve(affected, table))
    return new.count + len(pending_affected)


def _report(old: dict[str, FileRecord], fresh: list[FileRecord], gone: list[str], failed: dict[str, str],
            skipped: Iterable[SkippedFile], total: int, started: float) -> IndexReport:
    old_hashes = {path: record.content_hash for path, record in old.items()}
    added = sorted(r.path for r in fresh if r.path not in old)
    by_hash = {r.content_hash: r.path for r in fresh if r.path in added}
    renamed = sorted((path, by_hash[old_hashes[path]]) for path in gone if old_hashes[path] in by_hash)
    renamed_paths = {path for pair in renamed for path in pair}
    return IndexReport(
        added=tuple(p for p in added if p not in renamed_paths),
        changed=tuple(sorted(r.path for r in fresh if r.path in old)),
        deleted=tuple(p for p in gone if p not in renamed_paths),
        renamed=tuple(renamed),
        unchanged=total - len(fresh) - len(failed),
        failed=failed,
        skipped={s.path: s.reason for s in skipped},
        parsed_files=len(fresh),
        parsed_lines=sum(r.line_count for r in fresh),
        seconds=time.perf_counter() - started,
    )
