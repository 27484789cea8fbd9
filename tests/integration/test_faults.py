"""A failed, interrupted or killed index run leaves the previous index intact and readable."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from knowcode.indexing import file_parser, index_repository
from knowcode.indexing.scanner import ScannedFile
from knowcode.storage import Store
from tests.conftest import write_tree


def _counts(store_dir: Path) -> dict[str, object]:
    store = Store.open(store_dir, create=False)
    try:
        return store.counts()
    finally:
        store.close()


def _index(root: Path, store_dir: Path) -> None:
    store = Store.open(store_dir)
    try:
        index_repository(root, store, max_file_bytes=1 << 20, workers=1)
    finally:
        store.close()


def _grow(root: Path) -> None:
    write_tree(root, {f"extra/mod{i}.py": f"def f{i}():\n    return {i}\n" for i in range(20)})


def _index_then_grow(root: Path, store_dir: Path) -> dict[str, object]:
    """Index root, add 20 files to it, and return the counts of the index as it was."""
    _index(root, store_dir)
    before = _counts(store_dir)
    _grow(root)
    return before


def test_error_midway_keeps_previous_index(sample_repo: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    store_dir = tmp_path / "store"
    before = _index_then_grow(sample_repo, store_dir)
    parsed: list[str] = []
    parse = file_parser.parse_file

    def failing_parse(root: Path, scanned: ScannedFile) -> object:
        if len(parsed) == 5:
            raise KeyboardInterrupt  # what Ctrl-C raises between two files
        parsed.append(scanned.path)
        return parse(root, scanned)

    monkeypatch.setattr(file_parser, "parse_file", failing_parse)  # the indexer reads it when it parses
    with pytest.raises(KeyboardInterrupt):
        _index(sample_repo, store_dir)
    assert _counts(store_dir) == before


def test_reader_sees_last_committed_index_during_a_run(sample_repo: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    store_dir = tmp_path / "store"
    before = _index_then_grow(sample_repo, store_dir)
    seen: list[dict[str, object]] = []
    parse = file_parser.parse_file

    def observing_parse(root: Path, scanned: ScannedFile) -> object:
        seen.append(_counts(store_dir))  # another connection, mid-transaction
        return parse(root, scanned)

    monkeypatch.setattr(file_parser, "parse_file", observing_parse)
    _index(sample_repo, store_dir)
    assert seen and all(counts == before for counts in seen)
    assert _counts(store_dir)["files"] == before["files"] + 20  # type: ignore[operator]


def test_killed_process_keeps_previous_index(sample_repo: Path, tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    before = _index_then_grow(sample_repo, store_dir)
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from knowcode.indexing import file_parser, indexer
        from knowcode.storage import Store
        calls = []
        parse = file_parser.parse_file
        def dying_parse(root, scanned):
            calls.append(scanned)
            if len(calls) == 10:
                os.kill(os.getpid(), signal.SIGKILL)
            return parse(root, scanned)
        file_parser.parse_file = dying_parse
        indexer.index_repository(Path({str(sample_repo)!r}), Store.open(Path({str(store_dir)!r})),
                                 max_file_bytes=1 << 20, workers=1)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert result.returncode == -9, result.stderr.decode()
    assert _counts(store_dir) == before
    _index(sample_repo, store_dir)  # and the next run completes normally
    assert _counts(store_dir)["files"] == before["files"] + 20  # type: ignore[operator]
