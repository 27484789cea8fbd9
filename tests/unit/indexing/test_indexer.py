"""When the indexer parses in worker processes and when in its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowcode.indexing import index_repository, indexer
from knowcode.indexing.indexer import PARALLEL_MIN_BYTES, PARALLEL_MIN_FILES, _parallel
from knowcode.indexing.scanner import ScannedFile
from knowcode.storage import Store
from knowcode.storage.store import ChunkRow
from tests.conftest import write_tree


def _files(count: int, total_bytes: int) -> list[ScannedFile]:
    return [ScannedFile(f"m{i}.py", "python", total_bytes // count, 0.0, f"m{i}") for i in range(count)]


@pytest.fixture
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexer, "_usable_cpus", lambda: 2)


@pytest.mark.usefixtures("two_cpus")
def test_automatic_workers_start_only_for_enough_bytes() -> None:
    assert not _parallel(_files(PARALLEL_MIN_FILES, PARALLEL_MIN_BYTES - PARALLEL_MIN_FILES), 0)
    assert _parallel(_files(PARALLEL_MIN_FILES, PARALLEL_MIN_BYTES), 0)


@pytest.mark.usefixtures("two_cpus")
def test_explicit_workers_need_only_enough_files() -> None:
    assert _parallel(_files(PARALLEL_MIN_FILES, PARALLEL_MIN_FILES), 2)
    assert not _parallel(_files(PARALLEL_MIN_FILES - 1, 2 * PARALLEL_MIN_BYTES), 2)
    assert not _parallel(_files(PARALLEL_MIN_FILES, 2 * PARALLEL_MIN_BYTES), 1)


def test_one_cpu_parses_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexer, "_usable_cpus", lambda: 1)
    assert not _parallel(_files(PARALLEL_MIN_FILES, 2 * PARALLEL_MIN_BYTES), 0)


def _repo(root: Path, files: int) -> Path:
    return write_tree(root, {f"pkg/m{i}.py": f"def f{i}(x):\n    return x + {i}\n\n\nclass C{i}:\n    pass\n"
                             for i in range(files)})


def test_chunks_are_handed_over_as_stored_when_workers_parse(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", PARALLEL_MIN_FILES)
    handed: list[ChunkRow] = []
    store = Store.open(tmp_path / "store")
    try:
        index_repository(repo, store, max_file_bytes=1 << 20, workers=2, on_chunks=handed.extend)
        stored = store.connection.execute("SELECT * FROM chunks ORDER BY id").fetchall()
    finally:
        store.close()
    assert sorted(handed) == [tuple(row) for row in stored]  # each stored chunk once, as stored


def test_serial_parsing_hands_nothing_over(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", PARALLEL_MIN_FILES)
    handed: list[ChunkRow] = []
    store = Store.open(tmp_path / "store")
    try:
        index_repository(repo, store, max_file_bytes=1 << 20, workers=1, on_chunks=handed.extend)
        assert store.connection.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
    finally:
        store.close()
    assert handed == []
