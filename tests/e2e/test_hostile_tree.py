"""Every CLI command, as a subprocess, on a hostile tree: symlink loops (a -> b -> a, x -> x), links
out of the root, a dangling link, an unreadable file and an unlistable folder (where the OS denies
reads: not as root), 200-level nesting and odd file names. Each command exits 0 and the index
reports each skipped path with its reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import reads_can_be_denied

COMMAND_TIMEOUT_SECONDS = 120  # one command on a tiny tree, first indexing included
NESTING_LEVELS = 200
DEEP_NEEDLE = "deeply_nested_needle"  # a name found only in the 200-level-deep file


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """The tree, and the skipped paths the index must report (path -> reason)."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "main.py").write_text("def main():\n    return helper()\n\n\ndef helper():\n    return 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("TOKEN = 'outside the root'\n")
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "x").symlink_to("x")
    (root / "out.py").symlink_to("../outside/secret.py")
    (root / "outdir").symlink_to(outside, target_is_directory=True)
    (root / "dangling.py").symlink_to("nowhere.py")
    deep = root.joinpath(*["d"] * NESTING_LEVELS)
    deep.mkdir(parents=True)
    (deep / "deep.py").write_text(f"def {DEEP_NEEDLE}():\n    return 0\n")
    (root / "odd\nname.py").write_text("w = 1\n")
    expected = {
        "a": "symlink loop", "b": "symlink loop", "x": "symlink loop",
        "out.py": "symlink outside the root", "outdir": "symlinked folder (not followed)",
        "dangling.py": "broken symlink (its target does not exist)",
        "odd\\x0aname.py": "name holds a control character",
    }
    try:
        Path(os.fsdecode(os.fsencode(root) + b"/bad\xffbyte.py")).write_text("w = 2\n")
        expected["bad\\xffbyte.py"] = "name is not valid UTF-8"
    except OSError:
        pass  # a filesystem that only takes UTF-8 names (macOS): nothing to skip
    (root / "unreadable.py").write_text("u = 1\n")
    (root / "locked").mkdir()
    (root / "locked" / "inside.py").write_text("v = 1\n")
    if reads_can_be_denied(tmp_path):
        (root / "unreadable.py").chmod(0)
        (root / "locked").chmod(0)
        expected["unreadable.py"] = "unreadable: Permission denied"
        expected["locked"] = "unreadable folder: Permission denied"
    try:
        yield root, expected
    finally:
        (root / "unreadable.py").chmod(0o600)  # so that pytest can remove tmp_path
        (root / "locked").chmod(0o700)


def knowcode(tmp_path: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run `python -m knowcode ARGS` with its store and cache under tmp_path."""
    env = {**os.environ, "KNOWCODE_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "knowcode", *map(str, args), "--store", str(tmp_path / "store")]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=COMMAND_TIMEOUT_SECONDS,
                          check=False)


def json_of(result: subprocess.CompletedProcess[str]) -> Any:
    """The command's JSON output, after checking that it succeeded without a traceback."""
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


def test_every_command_exits_0_and_the_skipped_paths_are_reported(
        tmp_path: Path, hostile: tuple[Path, dict[str, str]]) -> None:
    root, expected = hostile
    report = json_of(knowcode(tmp_path, "index", root, "--json"))
    assert {**report["skipped"], **report["failed"]} == expected
    deep_path = "/".join(["d"] * NESTING_LEVELS + ["deep.py"])
    assert deep_path in report["added"]
    # Each command re-scans the tree on first use (incremental indexing), so each one meets every entry.
    for command in (["stats"], ["search", DEEP_NEEDLE], ["context", "helper"], ["trace", "helper"],
                    ["impact", "helper"]):
        data = json_of(knowcode(tmp_path, *command, "--repo", root, "--json"))
        if command[0] == "search":
            assert data["hits"][0]["path"] == deep_path
        if command[0] in ("trace", "impact"):
            assert "main.helper" in json.dumps(data)
    stats = json_of(knowcode(tmp_path, "stats", "--repo", root, "--json"))
    assert stats["skipped"] == expected
    assert stats["skipped_files"] == len(expected)


@pytest.mark.parametrize(("command", "target"), [("trace", "./a"), ("impact", "./x:1")])
def test_a_looping_path_given_as_a_target_is_a_one_line_error(
        tmp_path: Path, hostile: tuple[Path, dict[str, str]], command: str, target: str) -> None:
    root, _ = hostile
    result = knowcode(tmp_path, command, target, "--repo", root)
    assert result.returncode == 2, result.stderr  # bad input, like any other bad path
    assert "Traceback" not in result.stderr
    assert "symlink loop" in result.stderr
