"""The `knowcode` run itself: --version, interrupts and SIGTERM as one line and an exit code, quiet pipes."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

import knowcode
from knowcode import cli
from knowcode.cli import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated, app
from knowcode.engine import KnowCode
from tests.conftest import write_tree


@pytest.fixture
def runner(tmp_path: Path) -> CliRunner:
    return CliRunner(env={"KNOWCODE_CACHE_DIR": str(tmp_path / "cache")})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", {"shapes.py": "def area(radius):\n    return 3 * radius\n"})


def test_version_prints_the_package_version(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"knowcode {knowcode.__version__}\n"


@pytest.mark.parametrize(("interrupt", "code", "line"), [
    (KeyboardInterrupt, EXIT_INTERRUPTED,
     "interrupted: stopped; the index is as the last complete run left it"),
    (Terminated, EXIT_TERMINATED,
     "terminated (SIGTERM): stopped; the index is as the last complete run left it"),
])
def test_an_interrupted_index_ends_with_one_line_and_its_exit_code(
        runner: CliRunner, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        interrupt: type[KeyboardInterrupt], code: int, line: str) -> None:
    def stopped(self: KnowCode, *args: object, **kwargs: object) -> None:
        raise interrupt

    monkeypatch.setattr(KnowCode, "index", stopped)
    result = runner.invoke(app, ["index", str(repo), "--store", str(tmp_path / "store")])
    assert result.exit_code == code
    assert result.stderr == line + "\n" and result.stdout == ""


def test_sigterm_is_raised_as_an_interrupt(monkeypatch: pytest.MonkeyPatch) -> None:
    installed: dict[int, object] = {}
    monkeypatch.setattr(signal, "signal", lambda signum, handler: installed.setdefault(signum, handler))
    monkeypatch.setattr(cli, "app", lambda **kwargs: None)
    cli.main()
    handler = installed[signal.SIGTERM]
    with pytest.raises(Terminated):
        handler(signal.SIGTERM, None)  # type: ignore[operator]
    assert issubclass(Terminated, KeyboardInterrupt)  # uvicorn.run absorbs it after a graceful stop


def test_a_piped_index_writes_nothing_to_stderr(runner: CliRunner, repo: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["index", str(repo), "--store", str(tmp_path / "store")])
    assert result.exit_code == 0, result.output
    assert result.stderr == "" and result.stdout.startswith("indexed in")
