"""Checks on untrusted input from the servers: text arguments and paths confined to the indexed root.

Public: :func:`check_text` (bounded, printable, encodable text) and :func:`text_pattern` (its rule as
a JSON Schema pattern), :func:`confine_path` (a path argument that cannot leave the root: no ``..``,
no absolute paths, no symlinks out), :func:`split_host` (a Host header, an origin's host or an
``allowed_hosts`` entry into name and port).
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path, PurePosixPath, PureWindowsPath

# The longest query or question the servers take: an issue report with its traceback, which agents paste
# whole (bench/issues: 31 of 100 reports are over 2,000 characters, the longest 9,424; issue 11 asks for
# reports of up to 3,000 words, about 20,000 characters). A whole file pasted by mistake is refused.
MAX_QUERY_CHARS = 20_000
# Control characters other than tab, newline and carriage return: never part of a query or a name,
# and a NUL truncates strings in C libraries (SQLite, tree-sitter).
_CONTROL_CHARS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f"
_CONTROL = re.compile(f"[{_CONTROL_CHARS}]")
# A host name (letters, digits, '-', '_', '.') or an IP address ([...] for IPv6), then an optional
# port: what a Host header, the host part of an Origin, or an allowed_hosts entry may hold.
_HOST = re.compile(r"(?P<name>\[[0-9a-f:.]+\]|[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?)(?::(?P<port>\d{1,5}))?")


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


def text_pattern(forbidden: str = "") -> str:
    """The rule of :func:`check_text` as a JSON Schema ``pattern``, for the servers' published schemas.

    :param forbidden: more characters to refuse, escaped for a regex character class.
    :return: a pattern refusing control characters (and `forbidden`) and text that is only whitespace.
    """
    chars = _CONTROL_CHARS + forbidden
    return rf"^[^{chars}]*[^\s{chars}][^{chars}]*$"


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


def split_host(value: str) -> tuple[str, int | None] | None:
    """The name and port of ``host[:port]`` (IPv6 in brackets), normalised for comparison.

    :param value: a Host header, the host part of an Origin, or an allowed_hosts entry.
    :return: (name, port): the name lowercased, an IP address in its compressed form without brackets,
        the port None when absent; None when the text is not a host (a scheme, a path, a user name,
        a port over 65535, ...).
    """
    match = _HOST.fullmatch(value.lower())
    if match is None or (match["port"] is not None and int(match["port"]) > 65535):
        return None
    name = match["name"]
    try:
        name = ipaddress.ip_address(name.strip("[]")).compressed
    except ValueError:
        if name.startswith("["):
            return None  # brackets hold an IPv6 address or nothing
    return name, int(match["port"]) if match["port"] is not None else None
