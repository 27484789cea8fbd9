"""When the indexer parses in worker processes and when in its own."""

from __future__ import annotations

import pytest

from knowcode.indexing import indexer
from knowcode.indexing.indexer import PARALLEL_MIN_BYTES, PARALLEL_MIN_FILES, _parallel
from knowcode.indexing.scanner import ScannedFile


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
