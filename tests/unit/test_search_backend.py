"""search_backend.py: the repository's name in the backend, the token variable, the CLI's flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from knowcode.cli import EXIT_BAD_INPUT, EXIT_FAILURE, app
from knowcode.config import AppConfig, BackendConfig
from knowcode.search_backend import connect, repository_name
from knowcode.storage.milvus_backend import BackendError
from tests._milvus import release_lite_servers  # noqa: F401 - autouse: stops the test's servers
from tests.conftest import SAMPLE_REPO, write_tree


def test_the_repository_name_is_configured_or_the_folder_name(tmp_path: Path) -> None:
    assert repository_name(BackendConfig(), tmp_path / "api") == "api"
    assert repository_name(BackendConfig(repository=" acme/api "), tmp_path / "api") == "acme/api"


def test_an_unset_token_variable_is_named_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KC_TEST_MILVUS_TOKEN", raising=False)
    config = AppConfig(backend=BackendConfig(kind="milvus", uri="http://127.0.0.1:9",
                                             token_env="KC_TEST_MILVUS_TOKEN"))
    with pytest.raises(BackendError, match="KC_TEST_MILVUS_TOKEN, which is not set"):
        connect(config, 4)


def _two_repositories_in_one_backend(tmp_path: Path) -> tuple[CliRunner, Path, Path, Path]:
    """Index two repositories, "first" and "second", into one milvus-lite file through the CLI.

    :return: the runner, the config file and both roots.
    """
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    config = tmp_path / "org.toml"
    config.write_text(f'[backend]\nkind = "milvus"\nuri = "{tmp_path / "org.db"}"\n')
    first = write_tree(tmp_path / "first", SAMPLE_REPO)
    second = write_tree(tmp_path / "second",
                        {"app/engine.py": "class Engine:\n    def run(self):\n        pass\n"})
    runner = CliRunner(env={"KNOWCODE_CACHE_DIR": str(tmp_path / "cache")})
    for root in (first, second):
        assert runner.invoke(app, ["index", str(root), "--config", str(config)]).exit_code == 0
    return runner, config, first, second


def test_cli_searches_across_repositories_and_filters(tmp_path: Path) -> None:
    runner, config, first, _ = _two_repositories_in_one_backend(tmp_path)
    result = runner.invoke(app, ["search", "engine run", "--repo", str(first), "--config", str(config),
                                 "--all-repos", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {hit["repository"] for hit in data["hits"]} == {"first", "second"}
    assert data["mode"] == "hybrid"
    result = runner.invoke(app, ["search", "engine run", "--repo", str(first), "--config", str(config),
                                 "--repo-filter", "second"])
    assert result.exit_code == 0 and "second  app/engine.py" in result.stdout and "first" not in result.stdout


def test_cli_across_repositories_without_a_shared_backend_exits_2(tmp_path: Path) -> None:
    write_tree(tmp_path / "repo", SAMPLE_REPO)
    runner = CliRunner(env={"KNOWCODE_CACHE_DIR": str(tmp_path / "cache")})
    result = runner.invoke(app, ["search", "engine", "--repo", str(tmp_path / "repo"), "--all-repos"])
    assert result.exit_code == EXIT_BAD_INPUT and "[backend] kind" in result.stderr


def test_cli_across_repositories_with_the_server_down_exits_1(tmp_path: Path) -> None:
    pytest.importorskip("pymilvus")
    write_tree(tmp_path / "repo", SAMPLE_REPO)
    config = tmp_path / "down.toml"
    config.write_text('[backend]\nkind = "milvus"\nuri = "http://127.0.0.1:9"\ntimeout_seconds = 1\n')
    runner = CliRunner(env={"KNOWCODE_CACHE_DIR": str(tmp_path / "cache")})
    result = runner.invoke(app, ["search", "engine", "--repo", str(tmp_path / "repo"), "--config",
                                 str(config), "--all-repos"])
    assert result.exit_code == EXIT_FAILURE
    assert result.stderr.count("error:") == 1 and "127.0.0.1:9" in result.stderr


def test_cli_drops_a_repository_from_the_backend(tmp_path: Path) -> None:
    runner, config, first, second = _two_repositories_in_one_backend(tmp_path)
    base = ["--repo", str(first), "--config", str(config)]
    result = runner.invoke(app, ["drop-repo", "second", *base])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("dropped second from the backend: ") and " 0 chunks" not in result.stdout
    found = json.loads(runner.invoke(app, ["search", "engine run", *base, "--all-repos", "--json"]).stdout)
    assert {hit["repository"] for hit in found["hits"]} == {"first"}
    again = runner.invoke(app, ["drop-repo", "second", *base])
    assert again.exit_code == EXIT_BAD_INPUT
    assert "no repository 'second' (it holds: first)" in again.stderr and again.stderr.count("\n") == 1
    # Its own index is left alone: indexing it again puts it back.
    assert runner.invoke(app, ["index", str(second), "--config", str(config)]).exit_code == 0
    found = json.loads(runner.invoke(app, ["search", "engine run", *base, "--all-repos", "--json"]).stdout)
    assert {hit["repository"] for hit in found["hits"]} == {"first", "second"}


def test_cli_drop_repo_without_a_shared_backend_exits_2(tmp_path: Path) -> None:
    write_tree(tmp_path / "repo", SAMPLE_REPO)
    runner = CliRunner(env={"KNOWCODE_CACHE_DIR": str(tmp_path / "cache")})
    result = runner.invoke(app, ["drop-repo", "repo", "--repo", str(tmp_path / "repo")])
    assert result.exit_code == EXIT_BAD_INPUT and "[backend] kind" in result.stderr
