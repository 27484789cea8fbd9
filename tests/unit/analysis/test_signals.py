"""changed_files: the recorded files whose size or mtime on disk moved, or that are gone."""

from __future__ import annotations

import os
from pathlib import Path

from knowcode.analysis.signals import changed_files
from knowcode.models import FileRecord


def record(root: Path, path: str) -> FileRecord:
    stat = os.stat(root / path)
    return FileRecord(path, "python", "hash", stat.st_size, stat.st_mtime, 1)


def test_changed_files_reports_edits_and_deletions_by_path(tmp_path: Path) -> None:
    for name in ("b.py", "a.py", "sub/c.py", "gone.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    records = {path: record(tmp_path, path) for path in ("b.py", "a.py", "sub/c.py", "gone.py")}
    assert changed_files(tmp_path, records) == ()
    (tmp_path / "sub/c.py").write_text("x = 22\n")  # size differs
    stamp = records["b.py"].mtime + 5
    os.utime(tmp_path / "b.py", (stamp, stamp))  # same size, later mtime
    (tmp_path / "gone.py").unlink()
    assert changed_files(tmp_path, records) == ("b.py", "gone.py", "sub/c.py")
