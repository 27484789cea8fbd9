"""The issue set's work-tree mover and git-dir lookup, on a tiny git repository made in tmp_path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from issue_corpus import WorkTree, commit_time, find_git_dir, list_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")

T1, T2 = 1_500_000_000, 1_600_000_000  # the two commits' committer times
SENTINEL_NS = 1_234_567_890_000_000_000  # an mtime no commit has: survives only if a file is not touched


def git(repo: Path, *args: str, when: int = T1) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": f"{when} +0000",
           "GIT_COMMITTER_DATE": f"{when} +0000"}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env=env).stdout.strip()


def commit(repo: Path, files: dict[str, str | None], when: int) -> str:
    """Write (str) or delete (None) files, commit them all and return the commit id."""
    for relative, text in files.items():
        path = repo / relative
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"at {when}", when=when)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with two commits: (its .git dir, first commit, second commit)."""
    repo = tmp_path / "origin"
    repo.mkdir()
    git(repo, "init", "-q")
    first = commit(repo, {"a.py": "a = 1\n", "b.py": "b = 1\n", "docs/x.md": "# x\n",
                          "sub/dir/c.py": "c = 1\n", "tool.sh": "echo hi\n", "node": "a file\n"}, T1)
    (repo / "tool.sh").chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "chmod", when=T1)
    first = git(repo, "rev-parse", "HEAD")
    second = commit(repo, {"a.py": "a = 2\n", "sub/dir/c.py": None, "d.py": "d = 1\n", "node": None,
                           "node/inner.py": "i = 1\n"}, T2)
    return repo / ".git", first, second


def files_of(tree: Path) -> dict[str, str]:
    return {p.relative_to(tree).as_posix(): p.read_text() for p in sorted(tree.rglob("*")) if p.is_file()}


def test_list_tree_and_commit_time(history: tuple[Path, str, str]) -> None:
    git_dir, first, second = history
    entries = list_tree(git_dir, first)
    assert sorted(entries) == ["a.py", "b.py", "docs/x.md", "node", "sub/dir/c.py", "tool.sh"]
    assert entries["tool.sh"].mode == "100755" and entries["a.py"].mode == "100644"
    assert commit_time(git_dir, second) == T2


def test_first_move_writes_the_whole_commit_with_its_time(history: tuple[Path, str, str],
                                                          tmp_path: Path) -> None:
    git_dir, first, _ = history
    tree = WorkTree(git_dir, tmp_path / "tree", tmp_path / "worktree.json")
    assert tree.current() is None
    report = tree.move_to(first)
    assert (report.written, report.deleted, report.missing) == (6, 0, 0)
    assert files_of(tree.tree) == {"a.py": "a = 1\n", "b.py": "b = 1\n", "docs/x.md": "# x\n",
                                   "node": "a file\n", "sub/dir/c.py": "c = 1\n", "tool.sh": "echo hi\n"}
    assert (tree.tree / "a.py").stat().st_mtime_ns == T1 * 10**9
    assert os.access(tree.tree / "tool.sh", os.X_OK) and not os.access(tree.tree / "a.py", os.X_OK)
    assert tree.current() == first


def test_move_rewrites_only_changed_files_and_removes_deleted_ones(history: tuple[Path, str, str],
                                                                   tmp_path: Path) -> None:
    git_dir, first, second = history
    tree = WorkTree(git_dir, tmp_path / "tree", tmp_path / "worktree.json")
    tree.move_to(first)
    for name in ("a.py", "b.py", "docs/x.md"):
        os.utime(tree.tree / name, ns=(SENTINEL_NS, SENTINEL_NS))
    report = tree.move_to(second)
    assert (report.written, report.deleted) == (3, 2)  # a.py, d.py, node/inner.py; sub/dir/c.py, node
    assert files_of(tree.tree) == {"a.py": "a = 2\n", "b.py": "b = 1\n", "d.py": "d = 1\n",
                                   "docs/x.md": "# x\n", "node/inner.py": "i = 1\n", "tool.sh": "echo hi\n"}
    assert (tree.tree / "b.py").stat().st_mtime_ns == SENTINEL_NS  # unchanged: not touched
    assert (tree.tree / "docs/x.md").stat().st_mtime_ns == SENTINEL_NS
    assert (tree.tree / "a.py").stat().st_mtime_ns == T2 * 10**9  # changed: the commit's time
    assert not (tree.tree / "sub").exists()  # emptied folders are pruned
    back = tree.move_to(first)
    assert (back.written, back.deleted) == (3, 2)
    assert files_of(tree.tree)["node"] == "a file\n" and files_of(tree.tree)["a.py"] == "a = 1\n"
    assert tree.move_to(first).written == 0


def test_same_commit_time_still_changes_the_mtime(history: tuple[Path, str, str], tmp_path: Path) -> None:
    git_dir, first, second = history
    tree = WorkTree(git_dir, tmp_path / "tree", tmp_path / "worktree.json")
    tree.move_to(first)
    os.utime(tree.tree / "a.py", ns=(T2 * 10**9, T2 * 10**9))  # as if written at the next commit's time
    tree.move_to(second)
    assert (tree.tree / "a.py").stat().st_mtime_ns == (T2 + 1) * 10**9


def test_strangers_edits_and_an_interrupted_move_are_repaired(history: tuple[Path, str, str],
                                                              tmp_path: Path) -> None:
    git_dir, first, second = history
    tree = WorkTree(git_dir, tmp_path / "tree", tmp_path / "worktree.json")
    tree.move_to(first)
    (tree.tree / "stranger.py").write_text("x = 1\n")
    (tree.tree / "b.py").write_text("edited by hand, longer\n")
    manifest = json.loads(tree.manifest.read_text())
    manifest["pending"] = ["a.py"]  # a move died while writing a.py
    (tree.tree / "a.py").write_text("a = 9\n")  # same size as "a = 1\n": only `pending` reveals it
    tree.manifest.write_text(json.dumps(manifest))
    assert tree.current() is None
    tree.move_to(first)
    assert files_of(tree.tree) == {"a.py": "a = 1\n", "b.py": "b = 1\n", "docs/x.md": "# x\n",
                                   "node": "a file\n", "sub/dir/c.py": "c = 1\n", "tool.sh": "echo hi\n"}
    tree.move_to(second)
    assert "stranger.py" not in files_of(tree.tree)


def test_blobs_missing_from_the_snapshot_are_skipped(history: tuple[Path, str, str], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    git_dir, first, _ = history
    blob = list_tree(git_dir, first)["docs/x.md"].blob
    (git_dir / "objects" / blob[:2] / blob[2:]).unlink()  # a snapshot without that (large) file
    tree = WorkTree(git_dir, tmp_path / "tree", tmp_path / "worktree.json")
    report = tree.move_to(first)
    assert report.missing == 1 and report.written == 5
    assert not (tree.tree / "docs/x.md").exists()
    assert "missing from the snapshot" in capsys.readouterr().err


def test_find_git_dir_naming_rules(history: tuple[Path, str, str], tmp_path: Path) -> None:
    git_dir, _, _ = history
    root = tmp_path / "repos"
    mirror = root / "pydata+xarray" / "repo"
    shutil.copytree(git_dir, mirror)
    assert find_git_dir(root, "pydata/xarray") == mirror
    swe = root / "swe-bench+django__django" / "repo"
    shutil.copytree(git_dir, swe)
    assert find_git_dir(root, "django/django") == swe
    bare = root / "psf__requests"
    subprocess.run(["git", "clone", "-q", "--bare", str(git_dir), str(bare)], check=True)
    assert find_git_dir(root, "psf/requests") == bare
    plain = root / "pytest"
    subprocess.run(["git", "clone", "-q", str(git_dir), str(plain)], check=True)
    assert find_git_dir(root, "pytest-dev/pytest") == plain / ".git"
    with pytest.raises(FileNotFoundError, match=r"git clone --bare https://github\.com/sympy/sympy"):
        find_git_dir(root, "sympy/sympy")


def test_paths_outside_the_tree_are_refused() -> None:
    from issue_corpus import _safe_path

    for bad in ("../x.py", "a/../../x.py", "/etc/passwd", "a//b"):
        with pytest.raises(ValueError, match="outside the work tree"):
            _safe_path(bad)
    assert _safe_path("a/b.py") == "a/b.py"
