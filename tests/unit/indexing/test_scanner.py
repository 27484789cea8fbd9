"""Scanner: ignore files, pruned folders, symlinks, binaries, size limit, secrets, language detection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from knowcode.indexing.languages import GRAMMARS
from knowcode.indexing.scanner import ScanResult, scan


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write {relative path: text or bytes} under root and return root."""
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def paths(result: ScanResult) -> list[str]:
    return [f.path for f in result.files]


def skipped(result: ScanResult) -> dict[str, str]:
    return {s.path: s.reason for s in result.skipped}


def languages(result: ScanResult) -> dict[str, str]:
    return {f.path: f.language for f in result.files}


# --- ignore files ---------------------------------------------------------------------------------


def test_nested_gitignore_applies_only_under_its_folder(tmp_path: Path) -> None:
    write(tmp_path, {
        "sub/.gitignore": "*.txt\n",
        "sub/a.txt": "ignored\n",
        "sub/deeper/b.txt": "ignored too: the pattern applies below sub\n",
        "sub/keep.py": "x = 1\n",
        "top.txt": "kept: sub's .gitignore does not reach the root\n",
        "other/c.txt": "kept: a sibling folder\n",
    })
    assert paths(scan(tmp_path)) == ["other/c.txt", "sub/keep.py", "top.txt"]


def test_nested_gitignore_anchored_pattern_is_relative_to_its_folder(tmp_path: Path) -> None:
    write(tmp_path, {
        "sub/.gitignore": "/gen.py\n",
        "sub/gen.py": "x = 1\n",
        "sub/inner/gen.py": "x = 2\n",
        "gen.py": "x = 3\n",
    })
    assert paths(scan(tmp_path)) == ["gen.py", "sub/inner/gen.py"]


def test_negation_re_includes_a_file(tmp_path: Path) -> None:
    write(tmp_path, {
        ".gitignore": "*.log\n!keep.log\n",
        "debug.log": "x\n",
        "keep.log": "x\n",
        "logs/keep.log": "x\n",
        "logs/other.log": "x\n",
    })
    assert paths(scan(tmp_path)) == ["keep.log", "logs/keep.log"]


def test_negation_in_a_subfolder_overrides_the_parent(tmp_path: Path) -> None:
    write(tmp_path, {
        ".gitignore": "*.log\n",
        "sub/.gitignore": "!keep.log\n",
        "keep.log": "x\n",
        "sub/keep.log": "x\n",
        "sub/drop.log": "x\n",
    })
    assert paths(scan(tmp_path)) == ["sub/keep.log"]


def test_directory_pattern_ignores_folders_not_files(tmp_path: Path) -> None:
    write(tmp_path, {
        ".gitignore": "tmp/\n",
        "tmp/a.py": "x = 1\n",
        "src/tmp/b.py": "x = 2\n",
        "src/tmp.py": "x = 3\n",
        "other/tmp": "a file named tmp is not a folder\n",
    })
    assert paths(scan(tmp_path)) == ["other/tmp", "src/tmp.py"]


def test_knowcodeignore_at_root(tmp_path: Path) -> None:
    write(tmp_path, {
        ".knowcodeignore": "fixtures/\n*.snap\n",
        "fixtures/data.py": "x = 1\n",
        "tests/out.snap": "x\n",
        "tests/test_a.py": "x = 1\n",
    })
    result = scan(tmp_path)
    assert paths(result) == ["tests/test_a.py"]
    assert skipped(result) == {}  # ignored files are dropped silently, not reported


def test_knowcodeignore_and_gitignore_combine(tmp_path: Path) -> None:
    write(tmp_path, {
        ".gitignore": "a.py\n",
        ".knowcodeignore": "b.py\n",
        "a.py": "", "b.py": "", "c.py": "",
    })
    assert paths(scan(tmp_path)) == ["c.py"]


def test_ignore_files_themselves_are_not_indexed(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "*.log\n", ".knowcodeignore": "*.tmp\n", "sub/.gitignore": "x\n",
                     "a.py": ""})
    assert paths(scan(tmp_path)) == ["a.py"]


# --- pruned folders -------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", [".git", "node_modules", "__pycache__", "build", ".venv", "dist",
                                    "pkg.egg-info"])
def test_pruned_folders(tmp_path: Path, folder: str) -> None:
    write(tmp_path, {f"{folder}/inside.py": "x = 1\n", f"nested/{folder}/deep.py": "x = 2\n",
                     "main.py": "x = 3\n"})
    result = scan(tmp_path)
    assert paths(result) == ["main.py"]
    assert skipped(result) == {}


def test_folder_with_pyvenv_cfg_is_pruned_whatever_its_name(tmp_path: Path) -> None:
    write(tmp_path, {
        "my-env/pyvenv.cfg": "home = /usr/bin\n",
        "my-env/lib/site.py": "x = 1\n",
        "tools/py311/pyvenv.cfg": "home = /usr/bin\n",
        "tools/py311/bin/activate.py": "x = 2\n",
        "tools/run.py": "x = 3\n",
    })
    assert paths(scan(tmp_path)) == ["tools/run.py"]


# --- symlinks -------------------------------------------------------------------------------------


def test_symlink_to_file_outside_root_is_skipped(tmp_path: Path) -> None:
    outside = write(tmp_path / "outside", {"secret.py": "TOKEN = 'x'\n"})
    root = write(tmp_path / "repo", {"main.py": "x = 1\n"})
    (root / "link.py").symlink_to(outside / "secret.py")
    result = scan(root)
    assert paths(result) == ["main.py"]
    assert skipped(result) == {"link.py": "symlink outside the root"}


def test_symlink_to_file_inside_root_is_indexed(tmp_path: Path) -> None:
    root = write(tmp_path / "repo", {"real.py": "x = 1\n"})
    (root / "alias.py").symlink_to(root / "real.py")
    result = scan(root)
    assert paths(result) == ["alias.py", "real.py"]
    assert skipped(result) == {}


def test_symlinked_folder_is_not_followed(tmp_path: Path) -> None:
    target = write(tmp_path / "elsewhere", {"lib.py": "x = 1\n"})
    root = write(tmp_path / "repo", {"main.py": "x = 1\n", "pkg/mod.py": "y = 2\n"})
    (root / "linked").symlink_to(target, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)  # would recurse forever if followed
    result = scan(root)
    assert paths(result) == ["main.py", "pkg/mod.py"]
    assert skipped(result) == {
        "linked": "symlinked folder (not followed)",
        "loop": "symlinked folder (not followed)",
    }


def test_root_given_through_a_symlink_is_resolved(tmp_path: Path) -> None:
    real = write(tmp_path / "real", {"a.py": "x = 1\n"})
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert paths(scan(link)) == ["a.py"]


# --- binary, size, secrets, generated -------------------------------------------------------------


def test_binary_file_with_unknown_extension_is_skipped(tmp_path: Path) -> None:
    write(tmp_path, {"blob.dat": b"\x89PNG\x00\x01\x02\xff", "plain.dat": b"just text\n"})
    result = scan(tmp_path)
    assert skipped(result) == {"blob.dat": "binary"}
    assert languages(result) == {"plain.dat": "text"}


def test_binary_without_extension_is_skipped(tmp_path: Path) -> None:
    write(tmp_path, {"tool": b"\x7fELF\x02\x01\x01\x00\x00\x00"})
    assert skipped(scan(tmp_path)) == {"tool": "binary"}


def test_file_above_max_file_bytes_is_skipped(tmp_path: Path) -> None:
    write(tmp_path, {"big.py": "x" * 101, "edge.py": "x" * 100, "small.py": "x = 1\n"})
    result = scan(tmp_path, max_file_bytes=100)
    assert paths(result) == ["edge.py", "small.py"]  # exactly the limit is still indexed
    assert skipped(result) == {"big.py": "larger than 100 bytes"}


@pytest.mark.parametrize("name", [".env", ".env.production", "id_rsa", "id_ed25519.pub", "server.pem",
                                  "deploy.key", "config/credentials.json", "nested/dir/.netrc"])
def test_secrets_are_skipped_with_reason(tmp_path: Path, name: str) -> None:
    write(tmp_path, {name: "SECRET=1\n", "main.py": "x = 1\n"})
    result = scan(tmp_path)
    assert paths(result) == ["main.py"]
    assert skipped(result) == {name: "looks like a secret"}


@pytest.mark.parametrize("name", ["yarn.lock", "package-lock.json", "pnpm-lock.yaml", "Cargo.lock",
                                  "web/vendor.min.js", "web/app.js.map"])
def test_lock_files_and_bundles_are_left_out(tmp_path: Path, name: str) -> None:
    write(tmp_path, {name: "{}\n", "main.py": "x = 1\n"})
    result = scan(tmp_path)
    assert paths(result) == ["main.py"]
    assert skipped(result) == {}


def test_empty_file_is_indexed(tmp_path: Path) -> None:
    write(tmp_path, {"__init__.py": "", "EMPTY": ""})
    assert languages(scan(tmp_path)) == {"EMPTY": "text", "__init__.py": "python"}


# --- language detection ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "content", "language"), [
    ("a.py", "x = 1\n", "python"),
    ("a.ts", "let x = 1;\n", "typescript"),
    ("a.tsx", "const A = () => <div/>;\n", "tsx"),
    ("lib.rs", "fn main() {}\n", "rust"),
    ("a.js", "var x;\n", "javascript"),
    ("a.go", "package a\n", "go"),
    ("a.md", "# T\n", "markdown"),
    ("Makefile", "all:\n\techo\n", "make"),
    ("Dockerfile", "FROM python\n", "dockerfile"),
    ("Gemfile", "source 'x'\n", "ruby"),
    ("CMakeLists.txt", "project(x)\n", "cmake"),
    ("query.sql", "select 1;\n", "sql"),
    ("notes.weird", "some text\n", "text"),
    ("README", "no extension, no shebang\n", "text"),
    ("run", "#!/usr/bin/env python3\nprint(1)\n", "python"),
    ("serve", "#!/usr/bin/env node\nconsole.log(1)\n", "javascript"),
])
def test_language_detection(tmp_path: Path, name: str, content: str, language: str) -> None:
    write(tmp_path, {name: content})
    assert languages(scan(tmp_path)) == {name: language}


def test_bash_shebang(tmp_path: Path) -> None:
    write(tmp_path, {"deploy": "#!/bin/bash\necho hi\n"})
    expected = "bash" if "bash" in GRAMMARS else "text"
    assert languages(scan(tmp_path)) == {"deploy": expected}


def test_extension_wins_over_shebang(tmp_path: Path) -> None:
    write(tmp_path, {"tool.rb": "#!/usr/bin/env python3\nputs 1\n"})
    assert languages(scan(tmp_path)) == {"tool.rb": "ruby"}


# --- result shape ---------------------------------------------------------------------------------


def test_results_sorted_by_path_with_slash_separators(tmp_path: Path) -> None:
    write(tmp_path, {
        "z.py": "", "a/b/c.py": "", "a/z.py": "", "A.py": "", "m/.env": "X=1\n", "b/.env": "X=1\n",
        "a/b/x.dat": b"\x00",
    })
    result = scan(tmp_path)
    assert paths(result) == ["A.py", "a/b/c.py", "a/z.py", "z.py"]
    assert [s.path for s in result.skipped] == ["a/b/x.dat", "b/.env", "m/.env"]
    assert all("\\" not in p and not p.startswith("/") for p in paths(result))


def test_scanned_file_records_size_and_mtime(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "x = 1\n"})
    os.utime(tmp_path / "a.py", (1_000_000, 1_000_000))
    (entry,) = scan(tmp_path).files
    assert (entry.path, entry.language, entry.size, entry.mtime) == ("a.py", "python", 6, 1_000_000)


def test_empty_root(tmp_path: Path) -> None:
    assert scan(tmp_path) == ScanResult((), ())
