"""When the indexer parses in worker processes and when in its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowcode.indexing import index_repository, indexer
from knowcode.indexing.indexer import PARALLEL_MIN_BYTES, PARALLEL_MIN_FILES, ChunkWork, _parallel
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


def test_chunk_work_runs_in_the_workers_and_comes_back_with_each_file(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", PARALLEL_MIN_FILES)
    received: list[tuple[tuple[ChunkRow, ...], object]] = []
    store = Store.open(tmp_path / "store")
    try:
        work = ChunkWork(len, lambda rows, result: received.append((tuple(rows), result)))  # len pickles
        index_repository(repo, store, max_file_bytes=1 << 20, workers=2, chunk_work=work)
        stored = store.connection.execute("SELECT * FROM chunks ORDER BY id").fetchall()
    finally:
        store.close()
    assert sorted(row for rows, _ in received for row in rows) == [tuple(row) for row in stored]
    assert all(result == len(rows) for rows, result in received)  # each file's own rows, worked on
    assert len(received) == PARALLEL_MIN_FILES


def test_serial_parsing_does_no_chunk_work(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", PARALLEL_MIN_FILES)
    received: list[object] = []
    store = Store.open(tmp_path / "store")
    try:
        work = ChunkWork(len, lambda rows, result: received.append(result))
        index_repository(repo, store, max_file_bytes=1 << 20, workers=1, chunk_work=work)
        assert store.connection.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
    finally:
        store.close()
    assert received == []
