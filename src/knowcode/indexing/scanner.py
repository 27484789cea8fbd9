"""Walk a repository root and list the files worth indexing, with the reasons others were skipped."""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

import pathspec

from knowcode.indexing.entity_ids import module_name, modules_named_with_extension
from knowcode.indexing.languages import detect_language

DEFAULT_MAX_FILE_BYTES = 1024 * 1024  # issue #2: files over 1 MiB are generated or data, not code
BINARY_SNIFF_BYTES = 8192  # git's heuristic: a NUL byte in the first 8 KiB means binary
IGNORE_FILE_NAMES = (".gitignore", ".knowcodeignore")
VIRTUALENV_MARKER = "pyvenv.cfg"  # a virtualenv under any folder name
# Folders deeper than this are reported, not walked: no real project nests so deep, and os.walk
# recurses once per level before Python 3.12, so a hostile tree could exhaust the recursion limit.
MAX_FOLDER_DEPTH = 256
# Control characters in a name: such a path cannot be asked for (`safety.check_text` refuses it) and
# a newline in it would forge lines in every line-oriented output (`path:lines`, context bundles).
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")

# Folders that hold tools' state, dependencies or build output, never the project's own code.
PRUNED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj",
    ".venv", "venv", ".tox", ".nox", "__pypackages__", "site-packages",
    "node_modules", "bower_components", ".yarn", ".pnpm-store", "vendor",
    "build", "dist", "target", "_build", ".eggs", ".next", ".nuxt", ".svelte-kit",
    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".gradle", ".idea",
    ".vscode", ".terraform", ".dart_tool", ".stack-work", "zig-cache", ".zig-cache", "zig-out",
    "htmlcov", ".knowcode", ".semble",
})
# Secrets and machine-specific files: never indexed, so their text can never reach a prompt.
SECRET_PATTERNS = pathspec.GitIgnoreSpec.from_lines([
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "id_rsa*",
    "id_dsa*", "id_ecdsa*", "id_ed25519*", ".netrc", ".pgpass", "*.kdbx", "credentials.json",
])
# Lock files and minified bundles are large, generated and useless to read.
GENERATED_PATTERNS = pathspec.GitIgnoreSpec.from_lines([
    "*.lock", "package-lock.json", "pnpm-lock.yaml", "yarn.lock", "*.min.js", "*.min.css", "*.map",
])


@dataclass(frozen=True, slots=True)
class ScannedFile:
    """A file to index: root-relative `/` path, detected language, size, modification time, and the
    dotted module name its entities are qualified under (unique across the tree's languages)."""

    path: str
    language: str
    size: int
    mtime: float
    module: str


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file left out, and why (binary, too large, unreadable, symlink outside the root, ...)."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Everything a walk found, sorted by path."""

    files: tuple[ScannedFile, ...]
    skipped: tuple[SkippedFile, ...]


def _read_ignore_specs(directory: Path) -> pathspec.GitIgnoreSpec | None:
    lines: list[str] = []
    for name in IGNORE_FILE_NAMES:
        # Read without asking is_file() first: on Python < 3.12 that raises for a folder whose
        # entries cannot be looked up (EACCES), and a missing or unreadable file is simply no rules.
        try:
            lines.extend((directory / name).read_text(encoding="utf-8", errors="replace").splitlines())
        except OSError:
            continue
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def _ignored(rel_path: str, is_dir: bool, specs: list[tuple[str, pathspec.GitIgnoreSpec]]) -> bool:
    """Apply every ignore file from the root down; each matches paths relative to its own folder."""
    ignored = False
    for base, spec in specs:
        local = rel_path[len(base) + 1:] if base else rel_path
        candidate = local + "/" if is_dir else local
        result = spec.check_file(candidate)
        if result.include is not None:
            ignored = result.include
    return ignored


def _printable(rel_path: str) -> str:
    """A path as it can be stored and shown: bytes that are not UTF-8 and control characters escaped.

    ``"bad\\udcffname.py"`` (an undecodable byte, as os.walk hands it over) -> ``"bad\\xffname.py"``.
    """
    text = os.fsencode(rel_path).decode("utf-8", "backslashreplace")
    return _CONTROL_CHARS.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def _bad_name(name: str) -> str | None:
    """Why a file or folder cannot be indexed under its own name, or None when it can."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.walk decoded its bytes with surrogateescape: SQLite and JSON refuse them
        return "name is not valid UTF-8"
    return "name holds a control character" if _CONTROL_CHARS.search(name) else None


def _sniff(path: Path) -> tuple[bool, str]:
    """Return (is_binary, first line) from the head of a file."""
    with path.open("rb") as handle:
        head = handle.read(BINARY_SNIFF_BYTES)
    return b"\0" in head, head.split(b"\n", 1)[0].decode("utf-8", "replace")


def scan(root: Path, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> ScanResult:
    """List the indexable files under root, honouring ignore files and never leaving the root.

    Nothing in the tree makes it fail: symlink loops, links out of the root or to nothing,
    unreadable files and folders, very deep nesting and names that are not text are skipped and
    reported with their reason.

    :param root: the repository folder.
    :param max_file_bytes: files larger than this are skipped.
    :return: the files to index and the files skipped with their reasons.
    """
    root = root.resolve()
    files: list[ScannedFile] = []
    skipped: list[SkippedFile] = []
    specs_by_dir: dict[str, list[tuple[str, pathspec.GitIgnoreSpec]]] = {}

    def unlistable(err: OSError) -> None:
        # os.walk could not list a folder (no permission, a path too long): report it and walk on.
        rel = Path(err.filename).relative_to(root).as_posix() if err.filename else "."
        skipped.append(SkippedFile(_printable(rel), f"unreadable folder: {err.strerror or err}"))

    for current, dirnames, filenames in os.walk(root, onerror=unlistable, followlinks=False):
        current_path = Path(current)
        rel_dir = current_path.relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        inherited = specs_by_dir.get(str(current_path.parent), []) if rel_dir else []
        own = _read_ignore_specs(current_path)
        specs = [*inherited, (rel_dir, own)] if own is not None else inherited
        specs_by_dir[current] = specs
        child_depth = rel_dir.count("/") + 2 if rel_dir else 1  # the root's folders are depth 1
        kept_dirs = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name in PRUNED_DIRS or name.endswith(".egg-info") or _ignored(rel, True, specs):
                continue
            if os.path.exists(current_path / name / VIRTUALENV_MARKER):  # False, not an error, if unreadable
                continue
            if os.path.islink(current_path / name):
                reason: str | None = "symlinked folder (not followed)"
            elif child_depth > MAX_FOLDER_DEPTH:
                reason = f"nested deeper than {MAX_FOLDER_DEPTH} folders"
            else:
                reason = _bad_name(name)
            if reason is not None:
                skipped.append(SkippedFile(_printable(rel), reason))
                continue
            kept_dirs.append(name)
        dirnames[:] = kept_dirs
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name in IGNORE_FILE_NAMES or _ignored(rel, False, specs):
                continue
            if SECRET_PATTERNS.match_file(rel):
                skipped.append(SkippedFile(_printable(rel), "looks like a secret"))
                continue
            if GENERATED_PATTERNS.match_file(rel):
                continue
            bad_name = _bad_name(name)
            entry = (SkippedFile(_printable(rel), bad_name) if bad_name is not None
                     else _check_file(root, current_path / name, rel, max_file_bytes))
            if isinstance(entry, ScannedFile):
                files.append(entry)
            else:
                skipped.append(entry)
    with_extension = modules_named_with_extension((f.path, f.language) for f in files)
    files = [replace(f, module=module_name(f.path, with_extension=True)[1]) if f.path in with_extension else f
             for f in sorted(files, key=lambda f: f.path)]
    skipped.sort(key=lambda f: f.path)
    return ScanResult(tuple(files), tuple(skipped))


def _link_problem(root: Path, link: Path) -> str | None:
    """Why a symlinked file is left out, or None when it ends at a file the scan itself would index.

    :raises OSError: the link cannot be followed for another reason (permissions, a non-folder part).
    """
    try:
        target = Path(os.path.realpath(link, strict=True))  # strict: a loop or a dangling link raises
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "symlink loop"
        if err.errno == errno.ENOENT:
            return "broken symlink (its target does not exist)"
        raise
    if not target.is_relative_to(root):
        return "symlink outside the root"
    if is_ignored(root, target.relative_to(root).as_posix()):
        # An alias of a secret, a pruned folder's file or an ignored file would index it by the back door.
        return "symlink to a file that is left out"
    return None


def _check_file(root: Path, path: Path, rel: str, max_file_bytes: int) -> ScannedFile | SkippedFile:
    try:
        if path.is_symlink() and (problem := _link_problem(root, path)) is not None:
            return SkippedFile(rel, problem)
        stat = path.stat()
        if not path.is_file():
            return SkippedFile(rel, "not a regular file")
        if stat.st_size > max_file_bytes:
            return SkippedFile(rel, f"larger than {max_file_bytes} bytes")
        language = detect_language(rel)
        if language is None:  # only an unknown name needs the head: shebang and binary sniffing
            is_binary, first_line = _sniff(path)
            if is_binary:
                return SkippedFile(rel, "binary")
            language = detect_language(rel, first_line) or "text"
    except OSError as err:
        return SkippedFile(rel, f"unreadable: {err.strerror or err}")
    return ScannedFile(rel, language, stat.st_size, stat.st_mtime, module_name(rel)[1])


def is_ignored(root: Path, rel_path: str, is_dir: bool = False) -> bool:
    """Whether :func:`scan` leaves a path out by rule (pruned or ignored folder, ignore file, secret,
    generated file), without walking the tree: what a file watcher asks of each changed path.

    Size, binary content and symlinks are not checked (the path may be gone already).

    :param root: the repository folder (resolved).
    :param rel_path: the root-relative `/` path.
    :param is_dir: the path is a folder.
    :return: True when no change to this path can change the index.
    """
    parts = [part for part in rel_path.split("/") if part]
    if not parts:
        return False
    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    for depth, name in enumerate(parts):
        base = "/".join(parts[:depth])
        own = _read_ignore_specs(root / base if base else root)
        if own is not None:
            specs.append((base, own))
        rel = "/".join(parts[:depth + 1])
        last = depth == len(parts) - 1
        if not last or is_dir:
            if name in PRUNED_DIRS or name.endswith(".egg-info") or _ignored(rel, True, specs):
                return True
            if os.path.exists(root / rel / VIRTUALENV_MARKER):
                return True
    if is_dir:
        return False
    if parts[-1] in IGNORE_FILE_NAMES:
        return False  # the rules themselves changed: what is indexed may change
    return (_ignored(rel_path, False, specs) or bool(SECRET_PATTERNS.match_file(rel_path))
            or bool(GENERATED_PATTERNS.match_file(rel_path)))
