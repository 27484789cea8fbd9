"""Targets given as file paths (``path`` or ``path:line``), confined to a repository root.

Interfaces accept a path where an entity is expected, the way compilers and agents cite code. An
absolute path is accepted when it lies inside the root; every path then goes through
:func:`knowcode.safety.confine_path` (no ``..``, nothing outside the root, no symbolic link out).
"""

from __future__ import annotations

import re
from pathlib import Path

from knowcode.safety import confine_path

_PATH_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+)$")  # `src/app.py:12`


def split_path_line(text: str) -> tuple[str, int | None]:
    """`path:line` into its parts; any other text is returned whole (stripped) with no line."""
    match = _PATH_LINE.match(text.strip())
    if match is None:
        return text.strip(), None
    return match.group("path"), int(match.group("line"))


def same_file(a: str, b: str) -> bool:
    """Whether two `/`-separated paths name one file: equal, or either ends with "/" followed by the
    other (a path cited with more or fewer leading folders; `app.py` is not `xapp.py`)."""
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def looks_like_path(text: str) -> bool:
    """True when a target reads as a file path (a separator, a leading `.` or `~`) rather than a name."""
    head = split_path_line(text)[0]
    return "/" in head or "\\" in head or head.startswith((".", "~"))


def confine_target(root: Path, target: str) -> str:
    """A target with its path part made root-relative and checked; names and ids pass unchanged.

    :param root: the repository root.
    :param target: an entity id, a name, or ``path[:line]`` (root-relative, or absolute inside the root).
    :return: the target, its path root-relative with `/` separators.
    :raises ValueError: the path leads outside the root (``..``, an absolute path elsewhere, a
        symbolic link out), cannot be resolved (a symlink loop) or is malformed.
    """
    if not looks_like_path(target):
        return target.strip()
    path, line = split_path_line(target)
    base = root.resolve()
    if Path(path).is_absolute():
        try:
            resolved = Path(path).resolve()
        except (RuntimeError, OSError):  # Python < 3.13 raises RuntimeError on a symlink loop
            raise ValueError(f"the path {path!r} cannot be followed (a symlink loop)") from None
        if not resolved.is_relative_to(base):
            raise ValueError(f"the path {path!r} is outside the repository {base}")
        path = resolved.relative_to(base).as_posix()
    relative = confine_path(base, path).relative_to(base).as_posix()
    return relative if line is None else f"{relative}:{line}"
