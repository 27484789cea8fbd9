"""Scanner: ignore files, pruned folders, symlinks, binaries, size limit, secrets, language detection,
and hostile trees (symlink loops, dangling links, unreadable files and folders, deep nesting, odd names)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from knowcode.indexing import scanner
from knowcode.indexing.languages import GRAMMARS
from knowcode.indexing.scanner import ScanResult, scan
from tests.conftest import reads_can_be_denied


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


def test_symlink_loops_are_skipped_not_fatal(tmp_path: Path) -> None:
    root = write(tmp_path / "repo", {"main.py": "x = 1\n"})
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "self").symlink_to("self")
    (root / "sub").mkdir()
    (root / "sub" / "loop.py").symlink_to("loop.py")
    result = scan(root)
    assert paths(result) == ["main.py"]
    assert skipped(result) == {"a": "symlink loop", "b": "symlink loop", "self": "symlink loop",
                               "sub/loop.py": "symlink loop"}


def test_dangling_symlink_is_skipped(tmp_path: Path) -> None:
    root = write(tmp_path / "repo", {"main.py": "x = 1\n"})
    (root / "gone.py").symlink_to("missing.py")
    (root / "far.py").symlink_to(tmp_path / "nowhere" / "x.py")
    assert skipped(scan(root)) == {"far.py": "broken symlink (its target does not exist)",
                                   "gone.py": "broken symlink (its target does not exist)"}


def test_chain_of_links_leaving_the_root_is_skipped(tmp_path: Path) -> None:
    outside = write(tmp_path / "outside", {"secret.py": "TOKEN = 'x'\n"})
    root = write(tmp_path / "repo", {"main.py": "x = 1\n"})
    (root / "hop.py").symlink_to(outside / "secret.py")
    (root / "first.py").symlink_to("hop.py")  # inside the root, but the chain ends outside
    (root / "up.py").symlink_to("../outside/secret.py")
    result = scan(root)
    assert paths(result) == ["main.py"]
    assert skipped(result) == {"first.py": "symlink outside the root", "hop.py": "symlink outside the root",
                               "up.py": "symlink outside the root"}


@pytest.mark.parametrize("target", [".env", "node_modules/lib.js", "ignored.py", "conf/id_rsa"])
def test_symlink_to_a_file_the_scan_leaves_out_is_skipped(tmp_path: Path, target: str) -> None:
    root = write(tmp_path / "repo", {".gitignore": "ignored.py\n", target: "SECRET = 1\n", "main.py": ""})
    (root / "alias.py").symlink_to(root / target)
    result = scan(root)
    assert "alias.py" not in paths(result)
    assert skipped(result)["alias.py"] == "symlink to a file that is left out"


@pytest.fixture
def restore_modes(tmp_path: Path) -> Iterator[list[Path]]:
    """Paths a test made unreadable; their modes are restored so tmp_path can be removed."""
    locked: list[Path] = []
    yield locked
    for path in locked:
        path.chmod(0o700)


def test_unreadable_file_and_folders_with_real_permissions(tmp_path: Path, restore_modes: list[Path]) -> None:
    if not reads_can_be_denied(tmp_path):
        pytest.skip("chmod does not deny reads here (running as root?); the simulated tests cover it")
    root = write(tmp_path / "repo", {"main.py": "x = 1\n", "blob.dat": "data\n", "locked/in.py": "y = 1\n",
                                     "nolookup/.gitignore": "*.log\n", "nolookup/in.py": "z = 1\n"})
    for name, mode in (("blob.dat", 0), ("locked", 0), ("nolookup", 0o600)):  # 600: list, no lookup
        (root / name).chmod(mode)
        restore_modes.append(root / name)
    result = scan(root)
    assert paths(result) == ["main.py"]
    assert skipped(result) == {"blob.dat": "unreadable: Permission denied",
                               "locked": "unreadable folder: Permission denied",
                               "nolookup/in.py": "unreadable: Permission denied"}


def test_folder_that_cannot_be_listed_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write(tmp_path / "repo", {"main.py": "x = 1\n", "locked/in.py": "y = 1\n"}).resolve()
    real_scandir = os.scandir

    def scandir(path: str) -> object:  # what os.walk meets in a folder without read permission
        if Path(path) == root / "locked":
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = scan(root)
    assert paths(result) == ["main.py"]
    assert skipped(result) == {"locked": "unreadable folder: Permission denied"}


def test_file_that_cannot_be_read_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"main.py": "x = 1\n", "blob.dat": "data\n"})

    def sniff(path: Path) -> tuple[bool, str]:  # only a file of unknown type is opened by the scan
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(scanner, "_sniff", sniff)
    result = scan(tmp_path)
    assert paths(result) == ["main.py"]
    assert skipped(result) == {"blob.dat": "unreadable: Permission denied"}


# --- deep nesting and odd names -------------------------------------------------------------------


def test_200_level_nesting_is_indexed(tmp_path: Path) -> None:
    deep = "/".join(["d"] * 200)
    write(tmp_path, {f"{deep}/leaf.py": "x = 1\n", "top.py": ""})
    assert paths(scan(tmp_path)) == [f"{deep}/leaf.py", "top.py"]


def test_folders_beyond_the_depth_limit_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanner, "MAX_FOLDER_DEPTH", 3)
    write(tmp_path, {"a/b/c/ok.py": "", "a/b/c/d/too_deep.py": ""})
    result = scan(tmp_path)
    assert paths(result) == ["a/b/c/ok.py"]
    assert skipped(result) == {"a/b/c/d": "nested deeper than 3 folders"}


def test_names_with_control_characters_are_skipped_and_shown_escaped(tmp_path: Path) -> None:
    write(tmp_path, {"odd\nname.py": "x = 1\n", "tab\there.py": "", "new\nline/in.py": "", "ok.py": ""})
    result = scan(tmp_path)
    assert paths(result) == ["ok.py"]
    assert skipped(result) == {"new\\x0aline": "name holds a control character",
                               "odd\\x0aname.py": "name holds a control character",
                               "tab\\x09here.py": "name holds a control character"}


def test_names_that_are_not_utf8_are_skipped_and_shown_escaped(tmp_path: Path) -> None:
    base = os.fsencode(tmp_path)
    try:
        (Path(os.fsdecode(base + b"/bad\xffname.py"))).write_text("x = 1\n")
        os.mkdir(base + b"/dir\xfe")
    except OSError:
        pytest.skip("this filesystem refuses names that are not UTF-8 (macOS)")
    write(tmp_path, {"dir\udcfe/in.py": "", "caf\u00e9.py": "", "\u65e5\u672c.py": ""})
    result = scan(tmp_path)
    assert paths(result) == ["caf\u00e9.py", "\u65e5\u672c.py"]  # any valid UTF-8 name is fine
    assert skipped(result) == {"bad\\xffname.py": "name is not valid UTF-8",
                               "dir\\xfe": "name is not valid UTF-8"}


def test_every_hostile_entry_at_once(tmp_path: Path) -> None:
    """The kinds of bad entries together: the scan completes and reports each one."""
    root = write(tmp_path / "repo", {"main.py": "x = 1\n", "odd\nname.py": ""})
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "x").symlink_to("x")
    (root / "dangling.py").symlink_to("nowhere.py")
    (root / "out").symlink_to(tmp_path, target_is_directory=True)
    (root / "out.py").symlink_to(tmp_path / "repo" / ".." / "elsewhere.py")
    (tmp_path / "elsewhere.py").write_text("y = 2\n")
    result = scan(root)
    assert paths(result) == ["main.py"]
    assert set(skipped(result)) == {"a", "b", "x", "dangling.py", "out", "out.py", "odd\\x0aname.py"}


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


# --- module names ---------------------------------------------------------------------------------


def test_module_names_keep_the_extension_only_when_languages_collide(tmp_path: Path) -> None:
    write(tmp_path, {"bad.py": "", "bad.lua": "", "pkg/mod.py": "", "util.h": "", "util.cpp": ""})
    assert {f.path: f.module for f in scan(tmp_path).files} == {
        "bad.lua": "bad_lua", "bad.py": "bad_py", "pkg/mod.py": "pkg.mod",
        "util.cpp": "util", "util.h": "util"}


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
