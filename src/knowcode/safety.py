"""Checks on untrusted input from the servers: text arguments and paths confined to the indexed root.

Public: :func:`check_text` (bounded, printable, encodable text) and :func:`confine_path` (a path
argument that cannot leave the root: no ``..``, no absolute paths, no symlinks out).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath, PureWindowsPath

# Control characters other than tab, newline and carriage return: never part of a query or a name,
# and a NUL truncates strings in C libraries (SQLite, tree-sitter).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_text(value: str, what: str, max_chars: int) -> str:
    """Reject text an index lookup should never see.

    :param value: the text as received.
    :param what: its name in the error message ("query", "target", ...).
    :param max_chars: the longest text accepted.
    :return: the text, unchanged.
    :raises ValueError: longer than max_chars, holds a control character, or is not valid Unicode
        (a lone surrogate from a JSON ``\\ud800`` escape).
    """
    if len(value) > max_chars:
        raise ValueError(f"the {what} is {len(value)} characters long; the limit is {max_chars}")
    if _CONTROL.search(value):
        raise ValueError(f"the {what} holds a control character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"the {what} is not valid Unicode text") from None
    return value


def confine_path(root: Path, relative: str) -> Path:
    """The file a root-relative path names, refusing anything that could leave the root.

    :param root: the indexed root (resolved here, so a symlinked root works).
    :param relative: a ``/``-separated path relative to the root, as the index stores paths.
    :return: the resolved path, inside the root.
    :raises ValueError: an empty or absolute path, a ``..`` part, a NUL, a backslash or drive, or a
        path that resolves outside the root through a symlink or cannot be resolved (a loop).
    """
    if not relative or "\x00" in relative:
        raise ValueError("the path is empty or holds a NUL character")
    if "\\" in relative or PureWindowsPath(relative).drive or PurePosixPath(relative).is_absolute():
        raise ValueError(f"the path {relative!r} must be relative to the repository, with / separators")
    if ".." in PurePosixPath(relative).parts:
        raise ValueError(f"the path {relative!r} leaves the repository ('..' is not allowed)")
    base = root.resolve()
    try:
        resolved = (base / relative).resolve()
    except (RuntimeError, OSError):  # Python < 3.13 raises RuntimeError on a symlink loop
        raise ValueError(f"the path {relative!r} cannot be followed (a symlink loop)") from None
    if not resolved.is_relative_to(base):
        raise ValueError(f"the path {relative!r} resolves outside the repository (a symlink out)")
    return resolved
