"""`knowcode trace`, `knowcode impact` and `knowcode mcp`'s argument errors, through the real CLI."""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from knowcode.cli import EXIT_BAD_INPUT, EXIT_FAILURE, app
from tests.conftest import write_tree

REPO = {
    "app/core.py": (
        "class Base:\n    def start(self):\n        return 1\n\n\n"
        "class Engine(Base):\n    def run(self):\n        return self.start()\n\n\n"
        "def main():\n    return Engine().run()\n"
    ),
}


@pytest.fixture
def runner(tmp_path: Path) -> CliRunner:
    return CliRunner(env={"KNOWCODE_CACHE_DIR": str(tmp_path / "cache")})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", REPO)


def run(runner: CliRunner, *args: str | Path) -> Result:
    return runner.invoke(app, [str(arg) for arg in args])


def test_trace_json_lists_nodes_and_edges(runner: CliRunner, repo: Path, tmp_path: Path) -> None:
    result = run(runner, "trace", "app.core.Engine.run", "--repo", repo, "--store", tmp_path / "s",
                 "--direction", "both", "--depth", "2", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["direction"] == "both" and data["depth"] == 2 and data["truncated"] is False
    found = {node["qualified_name"]: node["via"] for node in data["nodes"]}
    assert found == {"app.core.Engine.run": "", "app.core.Base.start": "callee", "app.core.main": "caller"}
    assert all({"source_id", "target_id", "kind", "path", "line"} <= edge.keys() for edge in data["edges"])


def test_trace_text_shows_paths_and_lines(runner: CliRunner, repo: Path, tmp_path: Path) -> None:
    result = run(runner, "trace", "start", "--repo", repo, "--store", tmp_path / "s",
                 "--direction", "callers")
    assert result.exit_code == 0, result.output
    assert "method app.core.Engine.run  app/core.py:7-8 (caller)" in result.stdout


def test_impact_text_and_json(runner: CliRunner, repo: Path, tmp_path: Path) -> None:
    text = run(runner, "impact", "Base", "--repo", repo, "--store", tmp_path / "s")
    assert text.exit_code == 0, text.output
    assert "class app.core.Engine  app/core.py:6-8 (inherits)" in text.stdout
    assert "affected files (1):" in text.stdout
    data = json.loads(run(runner, "impact", "Base", "--repo", repo, "--store", tmp_path / "s", "--depth",
                          "1", "--json").stdout)
    assert [n["qualified_name"] for n in data["direct"]] == ["app.core.Engine", "app.core.Engine.run"]
    assert data["affected_files"] == ["app/core.py"]


@pytest.mark.parametrize("args", [
    ("trace", "main", "--depth", "6"),
    ("trace", "main", "--depth", "0"),
    ("impact", "main", "--depth", "9"),
    ("trace", "main", "--direction", "sideways"),
    ("trace", "nothing_like_this"),
    ("impact", "../../etc/passwd"),
])
def test_bad_arguments_exit_2_with_a_message(runner: CliRunner, repo: Path, tmp_path: Path,
                                             args: tuple[str, ...]) -> None:
    result = run(runner, *args, "--repo", repo, "--store", tmp_path / "s")
    assert result.exit_code == EXIT_BAD_INPUT
    assert "error:" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("args, message", [
    (("--transport", "carrier-pigeon"), "transport must be stdio or http"),
    (("--transport", "http", "--host", "0.0.0.0"), "loopback only"),
])
def test_mcp_refuses_bad_options(runner: CliRunner, repo: Path, args: tuple[str, ...], message: str) -> None:
    result = run(runner, "mcp", "--repo", repo, *args)
    assert result.exit_code == EXIT_BAD_INPUT
    assert message in result.output


def test_mcp_without_the_extra_prints_the_pip_command(runner: CliRunner, repo: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_mcp(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "mcp" or name.startswith("mcp."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mcp)
    result = run(runner, "mcp", "--repo", repo)
    assert result.exit_code == EXIT_FAILURE
    assert 'pip install "knowcode[mcp]"' in result.output and "Traceback" not in result.output
