"""Path targets (`path`, `path:line`) confined to the repository root."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowcode.paths import confine_target, looks_like_path, split_path_line


@pytest.mark.parametrize("text, expected", [
    ("src/app.py:12", ("src/app.py", 12)),
    ("src/app.py", ("src/app.py", None)),
    ("pkg.mod.func", ("pkg.mod.func", None)),
    ("ns::func", ("ns::func", None)),  # a C++ name is not a path:line
    ("  a.py:3 ", ("a.py", 3)),
])
def test_split_path_line(text: str, expected: tuple[str, int | None]) -> None:
    assert split_path_line(text) == expected


@pytest.mark.parametrize("text, is_path", [
    ("src/app.py:3", True), ("./app.py", True), ("..\\x.py", True), ("~/x.py", True),
    ("app.py", False),  # a bare file name reads as a (qualified) name; the store still finds the file
    ("pkg.core.Engine", False), ("3f491d237ba95f75", False),
])
def test_looks_like_path(text: str, is_path: bool) -> None:
    assert looks_like_path(text) is is_path


def test_names_pass_and_paths_become_root_relative(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("x = 1\n", encoding="utf-8")
    assert confine_target(root, " pkg.core.Engine ") == "pkg.core.Engine"
    assert confine_target(root, "src/app.py:1") == "src/app.py:1"
    assert confine_target(root, "./src/app.py") == "src/app.py"
    assert confine_target(root, f"{root / 'src' / 'app.py'}:1") == "src/app.py:1"  # absolute, inside


@pytest.mark.parametrize("target", ["../secret.py", "src/../../secret.py:1", "/etc/passwd", "/etc/passwd:1",
                                    "link/secret.py:1", "..\\secret.py"])
def test_paths_out_of_the_root_are_refused(tmp_path: Path, target: str) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("KEY = 1\n", encoding="utf-8")
    (root / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match=r"repository|relative"):
        confine_target(root, target)


@pytest.mark.parametrize("target", ["./a", "b/c.py:3", "./self.py", "ABSOLUTE/a:1"])
def test_symlink_loops_are_refused_as_bad_input(tmp_path: Path, target: str) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "self.py").symlink_to("self.py")
    with pytest.raises(ValueError, match="symlink loop"):  # a ValueError, not pathlib's RuntimeError
        confine_target(root, target.replace("ABSOLUTE", str(root)))
