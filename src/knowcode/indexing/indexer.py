"""Incremental indexing: scan, parse what changed, resolve what a change can affect, commit once.

A file is re-read only when its size or modification time changed, and re-parsed only when its
content hash changed. References are re-resolved when they were written in a changed file, or when
they mention a name that a changed file defined before or defines now: no other resolution can change.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from multiprocessing import get_context
from pathlib import Path

from knowcode.indexing.file_parser import FileFailure, ParsedFile, parse_file
from knowcode.indexing.graph_builder import SymbolTable, lookup_names, resolve
from knowcode.indexing.scanner import ScannedFile, SkippedFile, scan
from knowcode.models import FileRecord, RelationKind
from knowcode.storage.store import Store

PARALLEL_MIN_FILES = 64  # below this, starting worker processes costs more than it saves
PARSE_CHUNKSIZE = 16  # files per task sent to a worker: amortises pickling without starving a core

ProgressCallback = Callable[[int, int], None]  # (files parsed so far, files to parse)


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


def _parse_all(root: Path, files: list[ScannedFile], workers: int,
               progress: ProgressCallback | None) -> Iterator[ParsedFile | FileFailure]:
    task = partial(parse_file, root)
    if workers <= 1 or len(files) < PARALLEL_MIN_FILES:
        results: Iterable[ParsedFile | FileFailure] = map(task, files)
        executor = None
    else:
        # forkserver: workers never inherit the caller's threads (a progress bar's, a server's).
        executor = ProcessPoolExecutor(workers, mp_context=get_context("forkserver"))
        results = executor.map(task, files, chunksize=PARSE_CHUNKSIZE)
    try:
        for done, result in enumerate(results, start=1):
            if progress is not None:
                progress(done, len(files))
            yield result
    finally:
        if executor is not None:
            executor.shutdown(cancel_futures=True)


def index_repository(root: Path, store: Store, *, max_file_bytes: int, workers: int = 0,
                     progress: ProgressCallback | None = None) -> IndexReport:
    """Bring the store up to date with the files under root, in one transaction.

    :param root: the repository root.
    :param store: the open store to update.
    :param max_file_bytes: larger files are skipped.
    :param workers: parser processes; 0 means one per core.
    :param progress: called after each parsed file.
    :return: what changed.
    """
    started = time.perf_counter()
    scanned = scan(root, max_file_bytes)
    old = store.file_records()
    current = {f.path: f for f in scanned.files}
    to_parse = [f for f in scanned.files
                if f.path not in old or (old[f.path].size, old[f.path].mtime) != (f.size, f.mtime)]
    outcomes = list(_parse_all(root, to_parse, workers or os.cpu_count() or 1, progress))
    parsed = [o for o in outcomes if isinstance(o, ParsedFile)]
    failed = {o.path: o.reason for o in outcomes if isinstance(o, FileFailure)}
    touched = [p.record for p in parsed if p.record.path in old
               and old[p.record.path].content_hash == p.record.content_hash]
    touched_paths = {r.path for r in touched}
    fresh = [p for p in parsed if p.record.path not in touched_paths]
    gone = sorted((set(old) - set(current)) | (set(failed) & set(old)))
    replaced = sorted({p.record.path for p in fresh} | set(gone))
    with store.transaction():
        names = {e.name for e in store.entities_in_files(replaced)}
        store.delete_files(replaced)
        store.touch_files(touched)
        store.insert((p.record for p in fresh), (e for p in fresh for e in p.entities),
                     (c for p in fresh for c in p.chunks))
        names.update(e.name for p in fresh for e in p.entities)
        _resolve_changes(store, fresh, names, set(replaced))
        store.replace_skipped({**{s.path: s.reason for s in scanned.skipped}, **failed})
        store.set_meta({"root": str(root.resolve()), "indexed_at": str(time.time())})
    return _report(old, fresh, gone, failed, scanned.skipped, len(current), started)


def _resolve_changes(store: Store, fresh: list[ParsedFile], names: set[str], replaced: set[str]) -> None:
    """Resolve the new files' references, and re-resolve old ones that mention a changed name."""
    new_refs = [r for p in fresh for r in p.references]
    affected = [r for r in store.references(outside=replaced) if lookup_names(r.target_name) & names]
    pending = [r for r in [*new_refs, *affected] if r.kind is not RelationKind.CONTAINS]
    table = SymbolTable()
    wanted = set().union(*(lookup_names(r.target_name) for r in pending)) if pending else set()
    table.add_entities(store.entities_named(wanted))
    missing = {r.source_id for r in pending}
    while missing:  # sources and their enclosing entities, for same-class resolution
        loaded = store.entities_by_id(missing)
        table.add_entities(loaded)
        missing = {e.parent_id for e in loaded if e.parent_id and e.parent_id not in table.by_id}
    table.add_bindings(store.imports_of_files({r.path for r in affected}))
    table.add_bindings(new_refs)
    resolved_new = resolve(new_refs, table)
    store.insert_relationships(resolved_new)
    store.replace_relationships(affected, resolve(affected, table))


def _report(old: dict[str, FileRecord], fresh: list[ParsedFile], gone: list[str], failed: dict[str, str],
            skipped: Iterable[SkippedFile], total: int, started: float) -> IndexReport:
    old_hashes = {path: record.content_hash for path, record in old.items()}
    added = sorted(p.record.path for p in fresh if p.record.path not in old)
    by_hash = {p.record.content_hash: p.record.path for p in fresh if p.record.path in added}
    renamed = sorted((path, by_hash[old_hashes[path]]) for path in gone if old_hashes[path] in by_hash)
    renamed_paths = {path for pair in renamed for path in pair}
    return IndexReport(
        added=tuple(p for p in added if p not in renamed_paths),
        changed=tuple(sorted(p.record.path for p in fresh if p.record.path in old)),
        deleted=tuple(p for p in gone if p not in renamed_paths),
        renamed=tuple(renamed),
        unchanged=total - len(fresh) - len(failed),
        failed=failed,
        skipped={s.path: s.reason for s in skipped},
        parsed_files=len(fresh),
        parsed_lines=sum(p.record.line_count for p in fresh),
        seconds=time.perf_counter() - started,
    )
