"""The issue set's corpus: a git dir per repository, and one work tree moved from commit to commit.

Finding the repositories (`find_git_dir`): under the folder given by `--issue-repos` (or
$KNOWCODE_ISSUE_REPOS), repository `owner/name` is the first of these that exists:

    DIR/<owner>+<name>/repo                    a snapshot mirror, as on the benchmark machines
    DIR/swe-bench+<owner>__<name>/repo         the SWE-bench project's mirror, same layout
    DIR/<owner>__<name>  DIR/<owner>__<name>.git  DIR/<owner>/<name>  DIR/<name>   a clone (bare or not)

On a fresh machine, clone the repositories listed in bench/issues/README.md (bare clones suffice):

    mkdir -p DIR && cd DIR
    for r in sympy/sympy sphinx-doc/sphinx astropy/astropy pydata/xarray pytest-dev/pytest \\
             pylint-dev/pylint psf/requests; do git clone --bare https://github.com/$r ${r/\\//__}; done
    # the SWE-bench mirrors of the three large ones are smaller and hold every base commit
    for r in django__django matplotlib__matplotlib scikit-learn__scikit-learn; do
        git clone --bare https://github.com/swe-bench/$r $r; done

Moving a work tree (`WorkTree.move_to`): `git ls-tree -r -z --full-tree` of the target commit is
compared with the tree's manifest (path -> blob id, mode, size; a JSON file next to the tree), then
files the commit lacks are deleted, and only files whose blob differs are written, through one
`git cat-file --batch` process. Unchanged files keep their modification time, so KnowCode's
incremental index re-reads only what changed. A written file's mtime is the commit's committer time
(not "now"), so the spec's "modified in the last 7 days" signal never fires on the files that
happened to change between two base commits (they correlate with where fixes go). Symlinks and
submodules are left out; blobs missing from a snapshot (files of 4 MiB or more) are skipped.
The manifest lists the paths a move is about to touch before it starts, so a move that dies half-way
is repaired by the next one; files on disk that the manifest does not know are deleted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

ISSUE_REPOS_ENV = "KNOWCODE_ISSUE_REPOS"
MANIFEST_VERSION = 1  # bump when the manifest's layout changes (an old one then means: rebuild the tree)
_SYMLINK_MODE, _SUBMODULE_MODE = "120000", "160000"
_EXECUTABLE_MODE = "100755"


def _git(git_dir: Path, *args: str) -> list[str]:
    return ["git", "-c", "safe.directory=*", "--git-dir", str(git_dir), *args]


def _is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


def git_dir_candidates(root: Path, repo: str) -> list[Path]:
    """The places `find_git_dir` looks for `owner/name`, in order."""
    owner, name = repo.split("/", 1)
    slug = f"{owner}__{name}"
    return [root / f"{owner}+{name}" / "repo", root / f"swe-bench+{slug}" / "repo", root / slug,
            root / f"{slug}.git", root / owner / name, root / name]


def find_git_dir(root: Path, repo: str) -> Path:
    """The git dir of repository `owner/name` under root (see the module docstring for the rule).

    :raises FileNotFoundError: none of the candidate folders is a git repository.
    """
    for candidate in git_dir_candidates(root, repo):
        if _is_git_dir(candidate / ".git"):
            return candidate / ".git"
        if _is_git_dir(candidate):
            return candidate
    raise FileNotFoundError(
        f"no git repository for {repo} under {root} (looked for "
        f"{', '.join(str(c.relative_to(root)) for c in git_dir_candidates(root, repo))}): "
        f"git clone --bare https://github.com/{repo} {root / repo.replace('/', '__')}")


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One file of a commit: its blob id, git mode and (once written) size in bytes."""

    blob: str
    mode: str
    size: int = -1


def list_tree(git_dir: Path, commit: str) -> dict[str, TreeEntry]:
    """The regular files of a commit (symlinks and submodules left out), path -> entry."""
    out = subprocess.run(_git(git_dir, "ls-tree", "-r", "-z", "--full-tree", commit),
                         capture_output=True, check=True).stdout
    entries: dict[str, TreeEntry] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, blob = meta.decode().split(" ")
        if kind != "blob" or mode in (_SYMLINK_MODE, _SUBMODULE_MODE):
            continue
        entries[_safe_path(raw_path.decode("utf-8", errors="surrogateescape"))] = TreeEntry(blob, mode)
    return entries


def commit_time(git_dir: Path, commit: str) -> int:
    """The committer time of a commit, in seconds since the epoch."""
    out = subprocess.run(_git(git_dir, "show", "-s", "--format=%ct", commit),
                         capture_output=True, text=True, check=True).stdout
    return int(out.strip())


def _safe_path(path: str) -> str:
    parts = path.split("/")
    if path.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"refusing to write the git path {path!r} outside the work tree")
    return path


class BlobReader:
    """One `git cat-file --batch` process: blob id in, bytes out (None when the snapshot lacks it)."""

    def __init__(self, git_dir: Path) -> None:
        self._process = subprocess.Popen(_git(git_dir, "cat-file", "--batch"), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE)

    def read(self, blob: str) -> bytes | None:
        """The content of one blob."""
        stdin, stdout = self._pipes()
        stdin.write(blob.encode() + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            return None
        data = stdout.read(int(header[2]))
        stdout.read(1)  # the newline after each object
        return data

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        assert self._process.stdin is not None and self._process.stdout is not None
        return self._process.stdin, self._process.stdout

    def close(self) -> None:
        """End the git process."""
        stdin, _ = self._pipes()
        stdin.close()
        self._process.wait()


@dataclass(frozen=True, slots=True)
class MoveReport:
    """What one move did: files written, deleted and missing from the snapshot, and its time."""

    commit: str
    written: int
    deleted: int
    missing: int
    seconds: float


class WorkTree:
    """A folder that holds exactly one commit's files of a repository, moved between commits."""

    def __init__(self, git_dir: Path, tree: Path, manifest: Path) -> None:
        self.git_dir, self.tree, self.manifest = git_dir, tree, manifest

    def _load(self) -> tuple[str | None, dict[str, TreeEntry]]:
        """The commit the tree holds and its files, minus anything the manifest cannot vouch for."""
        try:
            data: dict[str, Any] = json.loads(self.manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None, {}
        if data.get("version") != MANIFEST_VERSION:
            return None, {}
        files = {p: TreeEntry(*e) for p, e in data["files"].items()}
        for path in data.get("pending", []):  # a move died while touching these: trust nothing there
            files.pop(path, None)
        return (None if data.get("pending") else data.get("commit")), files

    def _save(self, commit: str | None, files: Mapping[str, TreeEntry], pending: list[str]) -> None:
        self.manifest.parent.mkdir(parents=True, exist_ok=True)
        temp = self.manifest.with_suffix(".tmp")
        temp.write_text(json.dumps({
            "version": MANIFEST_VERSION, "git_dir": str(self.git_dir), "commit": commit, "pending": pending,
            "files": {p: [e.blob, e.mode, e.size] for p, e in sorted(files.items())}}), encoding="utf-8")
        os.replace(temp, self.manifest)

    def current(self) -> str | None:
        """The commit the tree holds, or None (empty or unknown)."""
        return self._load()[0]

    def _verified(self, files: dict[str, TreeEntry]) -> dict[str, TreeEntry]:
        """The manifest's files that are on disk with their recorded size; strangers are deleted."""
        kept: dict[str, TreeEntry] = {}
        for current, dirnames, filenames in os.walk(self.tree):
            dirnames.sort()
            for name in filenames:
                path = Path(current) / name
                rel = path.relative_to(self.tree).as_posix()
                entry = files.get(rel)
                if entry is not None and not path.is_symlink() and path.stat().st_size == entry.size:
                    kept[rel] = entry
                else:
                    path.unlink()
        return kept

    def move_to(self, commit: str) -> MoveReport:
        """Make the tree hold `commit`'s files, writing only what differs."""
        started = time.perf_counter()
        _, files = self._load()
        self.tree.mkdir(parents=True, exist_ok=True)
        files = self._verified(files)
        target = list_tree(self.git_dir, commit)
        doomed = sorted(p for p in files if p not in target)
        to_write = sorted(p for p, e in target.items() if p not in files or files[p].blob != e.blob)
        self._save(None, files, [*doomed, *to_write])
        for path in doomed:
            (self.tree / path).unlink(missing_ok=True)
            del files[path]
            self._prune_parents(self.tree / path)
        for path, entry in target.items():  # a mode change alone: chmod, the content stays
            if path in files and path not in to_write and files[path].mode != entry.mode:
                self._chmod(self.tree / path, entry.mode)
                files[path] = TreeEntry(entry.blob, entry.mode, files[path].size)
        stamp = commit_time(self.git_dir, commit) * 1_000_000_000
        missing = 0
        reader = BlobReader(self.git_dir)
        try:
            for path in to_write:
                entry = target[path]
                data = reader.read(entry.blob)
                destination = self.tree / path
                if data is None:
                    missing += 1
                    destination.unlink(missing_ok=True)
                    files.pop(path, None)
                    continue
                files[path] = TreeEntry(entry.blob, entry.mode, len(data))
                self._write(destination, data, entry.mode, stamp)
        finally:
            reader.close()
        self._save(commit, files, [])
        if missing:
            print(f"[worktree] {commit[:10]}: {missing} file(s) missing from the snapshot, skipped",
                  file=sys.stderr, flush=True)
        return MoveReport(commit, len(to_write) - missing, len(doomed), missing,
                          time.perf_counter() - started)

    def _write(self, destination: Path, data: bytes, mode: str, stamp_ns: int) -> None:
        """Write a file with the commit's time as its mtime (one second later if that equals the old
        mtime, so a changed file of the same size can never look unchanged to the indexer)."""
        old_mtime = destination.stat().st_mtime_ns if destination.is_file() else None
        if destination.is_dir():
            raise IsADirectoryError(f"{destination} is a folder, but the commit has a file there")
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(data)
        self._chmod(destination, mode)
        mtime = stamp_ns + 1_000_000_000 if old_mtime == stamp_ns else stamp_ns
        os.utime(destination, ns=(mtime, mtime))

    @staticmethod
    def _chmod(path: Path, mode: str) -> None:
        path.chmod(0o755 if mode == _EXECUTABLE_MODE else 0o644)

    def _prune_parents(self, path: Path) -> None:
        """Remove the folders above a deleted file that became empty, up to the tree root."""
        parent = path.parent
        while parent != self.tree and self.tree in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                return
            parent = parent.parent
