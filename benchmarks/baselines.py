"""Plain BM25 baselines for benchmarks/quality.py: `bm25s` with its default tokenizer, no KnowCode ranking.

- `bm25-lines` (the headline baseline): each indexed file cut into line chunks, lines packed until
  `LINE_CHUNK_CHARS` characters. It shares nothing with KnowCode but the list of files, so it stays
  the same yardstick when KnowCode's chunking changes.
- `bm25-chunks`: the raw text of KnowCode's own chunks, to show what KnowCode adds on its own units.

Both index the files KnowCode indexed (its store's file records), and re-tokenize only files whose
content hash changed since the last `prepare`, so a work tree moved between commits stays cheap.
Units that score 0 (no query term) are not returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowcode import KnowCode
from knowcode.evals.scoring import Hit

LINE_CHUNK_CHARS = 1500  # DESIGN.md / bench/issues/README.md: the baseline's 1,500-character line chunks


@dataclass(frozen=True, slots=True)
class Unit:
    """One retrieval unit of a baseline: a root-relative path, a 1-based inclusive span and its text."""

    path: str
    start_line: int
    end_line: int
    text: str


def line_chunks(path: str, text: str, max_chars: int = LINE_CHUNK_CHARS) -> list[Unit]:
    """Cut a file into chunks of whole lines: lines (with their newline) are packed while the chunk
    stays within max_chars; a longer line is a chunk of its own. Blank-only chunks are dropped."""
    units: list[Unit] = []
    lines = text.splitlines(keepends=True)
    start, size = 1, 0
    parts: list[str] = []
    for number, line in enumerate(lines, start=1):
        if parts and size + len(line) > max_chars:
            units.append(Unit(path, start, number - 1, "".join(parts)))
            start, size, parts = number, 0, []
        parts.append(line)
        size += len(line)
    if parts:
        units.append(Unit(path, start, len(lines), "".join(parts)))
    return [unit for unit in units if unit.text.strip()]


def _tokenize(texts: Sequence[str]) -> list[list[str]]:
    import bm25s

    if not texts:
        return []
    tokens: list[list[str]] = bm25s.tokenize(list(texts), return_ids=False, show_progress=False)
    return tokens


@dataclass
class _RepoIndex:
    """One store's baseline: per-file units and tokens (keyed by content hash) and the built BM25."""

    files: dict[str, tuple[str, list[Unit], list[list[str]]]] = field(default_factory=dict)
    retriever: Any = None
    units: list[Unit] = field(default_factory=list)


class CachedBm25:
    """BM25 over units that a `units_of` function makes per changed file; one index per store."""

    def __init__(self, units_of: Callable[[KnowCode, list[str]], dict[str, list[Unit]]]) -> None:
        self._units_of = units_of
        self._repos: dict[Path, _RepoIndex] = {}

    def unavailable(self, kc: KnowCode) -> str | None:
        """A reason this method cannot run here, else None."""
        try:
            import bm25s  # noqa: F401
        except ImportError:
            return "the bm25s package is not installed (pip install bm25s)"
        return None

    def prepare(self, kc: KnowCode) -> None:
        """Bring the index up to date with kc's store: re-cut and re-tokenize only changed files."""
        import bm25s

        store = kc.open_store()
        try:
            hashes = {path: record.content_hash for path, record in store.file_records().items()}
        finally:
            store.close()
        repo = self._repos.setdefault(kc.store_dir, _RepoIndex())
        changed = sorted(p for p, h in hashes.items() if p not in repo.files or repo.files[p][0] != h)
        gone = [p for p in repo.files if p not in hashes]
        if not changed and not gone and repo.retriever is not None:
            return
        for path in gone:
            del repo.files[path]
        fresh = self._units_of(kc, changed)
        for path in changed:
            units = fresh.get(path, [])
            repo.files[path] = (hashes[path], units, _tokenize([u.text for u in units]))
        repo.units = [u for path in sorted(repo.files) for u in repo.files[path][1]]
        tokens = [t for path in sorted(repo.files) for t in repo.files[path][2]]
        repo.retriever = bm25s.BM25()
        if tokens:
            repo.retriever.index(tokens, show_progress=False)

    def release(self, kc: KnowCode) -> None:
        """Forget kc's index (its tokens can take hundreds of MB on a large repository)."""
        self._repos.pop(kc.store_dir, None)

    def __call__(self, kc: KnowCode, query: str, limit: int) -> list[Hit]:
        """The top `limit` units for the query, best first."""
        if kc.store_dir not in self._repos:
            self.prepare(kc)
        repo = self._repos[kc.store_dir]
        known = [t for t in _tokenize([query])[0] if t in repo.retriever.vocab_dict] if repo.units else []
        if not known:
            return []
        found, scores = repo.retriever.retrieve([known], k=min(limit, len(repo.units)), show_progress=False)
        return [Hit(repo.units[int(i)].path, repo.units[int(i)].start_line, repo.units[int(i)].end_line)
                for i, score in zip(found[0], scores[0], strict=True) if score > 0]


def file_line_units(kc: KnowCode, paths: list[str]) -> dict[str, list[Unit]]:
    """The line chunks of the given indexed files, read from kc's root (undecodable bytes replaced)."""
    units: dict[str, list[Unit]] = {}
    for path in paths:
        try:
            text = (kc.root / path).read_bytes().decode("utf-8", errors="replace")
        except OSError:
            continue
        units[path] = line_chunks(path, text)
    return units


def store_chunk_units(kc: KnowCode, paths: list[str]) -> dict[str, list[Unit]]:
    """KnowCode's own chunks of the given files (their raw text), in file order."""
    units: dict[str, list[Unit]] = {}
    store = kc.open_store()
    try:
        for path in paths:
            units[path] = [Unit(c.path, c.start_line, c.end_line, c.text)
                           for c in store.chunks_in_span(path, 1, 2**31 - 1)]
    finally:
        store.close()
    return units


def bm25_lines() -> CachedBm25:
    """The headline baseline: plain BM25 over 1,500-character line chunks of the indexed files."""
    return CachedBm25(file_line_units)


def bm25_chunks() -> CachedBm25:
    """Plain BM25 over the raw text of KnowCode's chunks."""
    return CachedBm25(store_chunk_units)
