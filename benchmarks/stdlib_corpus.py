"""A corpus every machine has offline: the installed standard library's Python files, in path order."""

from __future__ import annotations

import shutil
import sysconfig
from collections.abc import Set
from pathlib import Path

# Top-level folders left out: third-party packages, the GUI, deprecated modules, bundled wheels.
STDLIB_SKIPPED = frozenset({"site-packages", "idlelib", "lib2to3", "ensurepip"})


def copy_stdlib(dest: Path, lines_wanted: int, skipped: Set[str] = STDLIB_SKIPPED, *,
                lib: Path | None = None) -> Path:
    """Copy standard-library Python files, in path order, until about `lines_wanted` lines.

    :param dest: the folder to copy into (created as needed).
    :param lines_wanted: stop after the file that reaches this many lines.
    :param skipped: top-level folders of the library left out.
    :param lib: the folder to copy from instead of the standard library (e.g. its site-packages).
    :return: `dest`.
    """
    lib = lib if lib is not None else Path(sysconfig.get_paths()["stdlib"])
    lines = 0
    for source in sorted(lib.rglob("*.py")):
        relative = source.relative_to(lib)
        if relative.parts[0] in skipped or "__pycache__" in relative.parts:
            continue
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        lines += source.read_bytes().count(b"\n")
        if lines >= lines_wanted:
            break
    return dest
