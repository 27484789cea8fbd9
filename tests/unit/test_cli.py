"""The `knowcode` command line: help, index and stats on a tiny tree, and the exit codes of its errors."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from knowcode.cli import EXIT_BAD_INPUT, EXIT_FAILURE, app
from knowcode.models import IndexStats
from knowcode.storage import SCHEMA_VERSION
from knowcode.storage.store import DATABASE_NAME

SHAPES_PY = '''class Circle:
    def area(self) -> float:
        return 3.14
'''
README_MD = "# Shapes\n\nCircles and their areas.\n"


@pytest.fixture
def runner(tmp_path: Path) -> CliRunner:
    """A runner whose default store folder is under tmp_path, never the user's real cache."""
    return CliRunner(env={"KNOWCODE_CACHE_DIR": str(tmp_path / "cache")})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "shapes.py").write_text(SHAPES_PY, encoding="utf-8")
    (root / "README.md").write_text(README_MD, encoding="utf-8")
    return root


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


def run(runner: CliRunner, *args: str | Path) -> Result:
    return runner.invoke(app, [str(arg) for arg in args])


def run_json(runner: CliRunner, *args: str | Path) -> Any:
    result = run(runner, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# --- help -----------------------------------------------------------------------------------------


def test_app_help(runner: CliRunner) -> None:
    result = run(runner, "--help")
    assert result.exit_code == 0
    assert "index" in result.stdout
    assert "stats" in result.stdout


@pytest.mark.parametrize("command", ["index", "stats"])
def test_command_help(runner: CliRunner, command: str) -> None:
    result = run(runner, command, "--help")
    assert result.exit_code == 0
    assert "--store" in result.stdout
    assert "--json" in result.stdout
    assert "--config" in result.stdout


def test_no_arguments_shows_help(runner: CliRunner) -> None:
    result = run(runner)
    assert result.exit_code in (0, 2)  # Click >= 8.2 exits 2 for no_args_is_help
    assert "index" in result.output


# --- index ----------------------------------------------------------------------------------------


def test_index_json_lists_added_paths(runner: CliRunner, repo: Path, store: Path) -> None:
    report = run_json(runner, "index", repo, "--store", store, "--json")
    assert report["added"] == ["README.md", "shapes.py"]
    assert report["changed"] == []
    assert report["deleted"] == []
    assert report["renamed"] == []
    assert report["failed"] == {}
    assert report["skipped"] == {}
    assert report["unchanged"] == 0
    assert report["parsed_files"] == 2
    assert report["parsed_lines"] == SHAPES_PY.count("\n") + README_MD.count("\n")
    assert isinstance(report["seconds"], float)
    assert (store / DATABASE_NAME).is_file()
    assert not (Path(runner.env["KNOWCODE_CACHE_DIR"] or "") / "indexes").exists()


def test_index_takes_the_repository_as_repo_too(runner: CliRunner, repo: Path, store: Path) -> None:
    # as every other command does (`search --repo`, `stats --repo`)
    report = run_json(runner, "index", "--repo", repo, "--store", store, "--json")
    assert report["added"] == ["README.md", "shapes.py"]


def test_second_index_run_parses_nothing(runner: CliRunner, repo: Path, store: Path) -> None:
    run_json(runner, "index", repo, "--store", store, "--json")
    report = run_json(runner, "index", repo, "--store", store, "--json")
    assert report["parsed_files"] == 0
    assert report["parsed_lines"] == 0
    assert report["added"] == []
    assert report["changed"] == []
    assert report["unchanged"] == 2


def test_index_reports_a_changed_file(runner: CliRunner, repo: Path, store: Path) -> None:
    run_json(runner, "index", repo, "--store", store, "--json")
    (repo / "shapes.py").write_text(SHAPES_PY + "\n\ndef unit() -> Circle:\n    return Circle()\n")
    report = run_json(runner, "index", repo, "--store", store, "--json")
    assert report["changed"] == ["shapes.py"]
    assert report["parsed_files"] == 1
    assert report["unchanged"] == 1


def test_index_text_output(runner: CliRunner, repo: Path, store: Path) -> None:
    result = run(runner, "index", repo, "--store", store)
    assert result.exit_code == 0, result.output
    assert "2 files parsed" in result.stdout
    assert "added (2)" in result.stdout
    assert "shapes.py" in result.stdout


def test_index_without_store_uses_cache_env(runner: CliRunner, repo: Path, tmp_path: Path) -> None:
    result = run(runner, "index", repo)
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "cache" / "indexes").glob(f"repo-*/{DATABASE_NAME}"))


# --- stats ----------------------------------------------------------------------------------------


def test_stats_json_keys_types_and_counts(runner: CliRunner, repo: Path, store: Path) -> None:
    run_json(runner, "index", repo, "--store", store, "--json")
    data = run_json(runner, "stats", "--repo", repo, "--store", store, "--json")
    assert set(data) == {f.name for f in fields(IndexStats)}
    for key in ("files", "chunks", "unresolved_references", "lines", "skipped_files"):
        assert type(data[key]) is int, key
    for key in ("languages", "entities", "relationships"):
        assert type(data[key]) is dict, key
        assert all(type(k) is str and type(v) is int for k, v in data[key].items()), key
    assert data["root"] == str(repo.resolve())
    assert data["store"] == str(store.resolve())
    assert isinstance(data["indexed_at"], float)
    assert data["files"] == 2
    assert data["lines"] == 6
    assert data["skipped_files"] == 0
    assert data["languages"] == {"markdown": 1, "python": 1}
    # one module entity per file, the class, its method and the markdown heading's section
    assert data["entities"] == {"class": 1, "method": 1, "module": 2, "section": 1}
    # module contains class, class contains method, markdown module contains its section
    assert data["relationships"] == {"contains": 3}
    assert data["chunks"] == 2  # each small file is one chunk
    assert data["unresolved_references"] == 0


def test_stats_indexes_on_first_use(runner: CliRunner, repo: Path, store: Path) -> None:
    data = run_json(runner, "stats", "--repo", repo, "--store", store, "--json")
    assert data["files"] == 2


def test_stats_positional_path(runner: CliRunner, repo: Path, store: Path) -> None:
    data = run_json(runner, "stats", repo, "--store", store, "--json")
    assert data["root"] == str(repo.resolve())


def test_stats_counts_and_lists_skipped_files(runner: CliRunner, repo: Path, store: Path) -> None:
    (repo / ".env").write_text("TOKEN=x\n")
    (repo / "blob.bin").write_bytes(b"\x00\x01\x02")
    data = run_json(runner, "stats", "--repo", repo, "--store", store, "--json")
    assert data["files"] == 2
    assert data["skipped_files"] == 2
    assert data["skipped"] == {".env": "looks like a secret", "blob.bin": "binary"}  # what `index` points to


def test_stats_text_output(runner: CliRunner, repo: Path, store: Path) -> None:
    result = run(runner, "stats", "--repo", repo, "--store", store)
    assert result.exit_code == 0, result.output
    assert "files:" in result.stdout
    assert "python 1" in result.stdout


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["index", "stats"])
def test_missing_path_is_bad_input(runner: CliRunner, tmp_path: Path, store: Path, command: str) -> None:
    missing = tmp_path / "no-such-repo"
    result = run(runner, command, missing, "--store", store)
    assert result.exit_code == EXIT_BAD_INPUT == 2
    assert str(missing) in result.stderr
    assert "does not exist" in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.output
    assert not store.exists()


@pytest.mark.parametrize("command", ["index", "stats"])
def test_file_instead_of_folder_is_bad_input(
        runner: CliRunner, repo: Path, store: Path, command: str) -> None:
    result = run(runner, command, repo / "shapes.py", "--store", store)
    assert result.exit_code == EXIT_BAD_INPUT == 2
    assert "not a folder" in result.stderr
    assert str(repo / "shapes.py") in result.stderr


def test_missing_config_file_is_bad_input(runner: CliRunner, repo: Path, store: Path, tmp_path: Path) -> None:
    result = run(runner, "index", repo, "--store", store, "--config", tmp_path / "absent.toml")
    assert result.exit_code == EXIT_BAD_INPUT
    assert "absent.toml" in result.stderr


def test_invalid_config_is_bad_input(runner: CliRunner, repo: Path, store: Path) -> None:
    (repo / "knowcode.toml").write_text("no_such_setting = 1\n")
    result = run(runner, "index", repo, "--store", store)
    assert result.exit_code == EXIT_BAD_INPUT
    assert "no_such_setting" in result.stderr


@pytest.mark.parametrize("command", ["index", "stats"])
def test_store_that_is_a_regular_file_fails(
        runner: CliRunner, repo: Path, tmp_path: Path, command: str) -> None:
    store_file = tmp_path / "store-file"
    store_file.write_text("not a folder\n")
    result = run(runner, command, repo, "--store", store_file)
    assert result.exit_code == EXIT_FAILURE == 1
    assert "is not a folder" in result.stderr
    assert str(store_file) in result.stderr
    assert "Traceback" not in result.output
    assert store_file.read_text() == "not a folder\n"


def test_store_with_a_corrupt_database_fails(runner: CliRunner, repo: Path, store: Path) -> None:
    store.mkdir()
    (store / DATABASE_NAME).write_bytes(b"this is not an sqlite database" * 100)
    result = run(runner, "index", repo, "--store", store)
    assert result.exit_code == EXIT_FAILURE
    assert "cannot open the index store" in result.stderr


@pytest.mark.parametrize("command", ["index", "stats"])
def test_store_with_newer_schema_fails(runner: CliRunner, repo: Path, store: Path, command: str) -> None:
    store.mkdir()
    database = store / DATABASE_NAME
    connection = sqlite3.connect(database)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.close()
    result = run(runner, command, repo, "--store", store)
    assert result.exit_code == EXIT_FAILURE == 1
    assert "newer" in result.stderr
    assert "Traceback" not in result.output
    connection = sqlite3.connect(database)
    try:  # the newer index is left as it was, not reset to this version's schema
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
    finally:
        connection.close()


@pytest.mark.parametrize("command", ["index", "search"])
def test_store_of_another_repository_is_refused(
        runner: CliRunner, repo: Path, store: Path, tmp_path: Path, command: str) -> None:
    run_json(runner, "index", repo, "--store", store, "--json")
    other = tmp_path / "other"
    other.mkdir()
    (other / "other.py").write_text("def other() -> None:\n    pass\n", encoding="utf-8")
    args = [other] if command == "index" else ["area", "--repo", other]
    result = run(runner, command, *args, "--store", store)
    assert result.exit_code == EXIT_FAILURE
    assert f"holds the index of {repo.resolve()}" in result.stderr
    assert "Traceback" not in result.output
    stats = run_json(runner, "stats", repo, "--store", store, "--json")  # the index is left as it was
    assert stats["root"] == str(repo.resolve())
    assert stats["files"] == 2


def test_store_of_a_moved_repository_follows_it(runner: CliRunner, repo: Path, store: Path,
                                                tmp_path: Path) -> None:
    run_json(runner, "index", repo, "--store", store, "--json")
    moved = repo.rename(tmp_path / "moved")
    report = run_json(runner, "index", moved, "--store", store, "--json")
    assert report["added"] == [] and report["parsed_files"] == 0  # the same files: nothing parsed again
    assert run_json(runner, "stats", moved, "--store", store, "--json")["root"] == str(moved.resolve())


# --- search ---------------------------------------------------------------------------------------

SEARCH_HIT_KEYS = {"path", "start_line", "end_line", "score", "entity_id", "name", "qualified_name", "kind",
                   "source"}


def test_search_text_output(runner: CliRunner, repo: Path, store: Path) -> None:
    result = run(runner, "search", "area", "--repo", repo, "--store", store)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "shapes.py:2-3" in lines[0]  # path:start-end: the method, not its class line
    assert "shapes.Circle.area" in lines[0]  # the entity
    assert "method" in lines[0]
    assert any(line.strip() == "def area(self) -> float:" for line in lines)  # a snippet line
    assert lines[-1] == "mode: hybrid"


def test_search_text_output_without_results(runner: CliRunner, repo: Path, store: Path) -> None:
    result = run(runner, "search", '"no_such_name"', "--repo", repo, "--store", store)
    assert result.exit_code == 0, result.output
    assert "nothing matched" in result.stdout
    assert "no results" in result.stdout
    assert "mode: exact" in result.stdout


def test_search_json(runner: CliRunner, repo: Path, store: Path) -> None:
    data = run_json(runner, "search", "area", "--repo", repo, "--store", store, "--json")
    assert set(data) == {"query", "mode", "errors", "hits"}
    assert data["query"] == "area"
    assert data["mode"] == "hybrid"
    assert data["errors"] == []
    assert data["hits"]
    for hit in data["hits"]:
        assert set(hit) == SEARCH_HIT_KEYS  # no source text, signature or docstring
        assert type(hit["start_line"]) is int and type(hit["end_line"]) is int
        assert 1 <= hit["start_line"] <= hit["end_line"]
        assert isinstance(hit["score"], float)
    first = data["hits"][0]
    assert (first["path"], first["start_line"], first["end_line"]) == ("shapes.py", 2, 3)  # Circle.area
    assert (first["name"], first["qualified_name"], first["kind"]) == ("area", "shapes.Circle.area", "method")
    assert "return 3.14" not in json.dumps(data)


def test_search_json_exact_query_and_limit(runner: CliRunner, repo: Path, store: Path) -> None:
    data = run_json(runner, "search", '"Circle"', "--repo", repo, "--store", store, "--json", "--limit", "1")
    assert data["query"] == '"Circle"'
    assert data["mode"] == "exact"
    assert [(h["qualified_name"], h["kind"], h["source"]) for h in data["hits"]] == [
        ("shapes.Circle", "class", "exact")]


def test_search_json_nothing_matched(runner: CliRunner, repo: Path, store: Path) -> None:
    data = run_json(runner, "search", '"no_such_name"', "--repo", repo, "--store", store, "--json")
    assert data["hits"] == []
    assert len(data["errors"]) == 1 and "nothing matched" in data["errors"][0]


REPORT = ("Circle.area is wrong\n\nTraceback (most recent call last):\n"
          "  File \"/srv/shapes.py\", line 3, in area\n")


@pytest.mark.parametrize("command", ["search", "context"])
def test_a_query_of_dash_is_read_from_stdin(runner: CliRunner, repo: Path, store: Path, command: str) -> None:
    result = runner.invoke(app, [command, "-", "--repo", str(repo), "--store", str(store), "--json"],
                           input=REPORT.encode("utf-8") + b"\xff")  # a stray byte in a pasted log
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    if command == "search":
        assert data["query"].startswith("Circle.area is wrong\n") and data["query"].endswith("\ufffd")
        assert data["hits"][0]["qualified_name"] == "shapes.Circle.area"
    else:
        assert data["context_text"].startswith("## 1. `shapes.Circle.area`")


def test_an_empty_stdin_query_is_bad_input(runner: CliRunner, repo: Path, store: Path) -> None:
    result = runner.invoke(app, ["search", "-", "--repo", str(repo), "--store", str(store)], input="  \n")
    assert result.exit_code == EXIT_BAD_INPUT
    assert "query is empty" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("query", ["", "   "])
def test_search_empty_query_is_bad_input(runner: CliRunner, repo: Path, store: Path, query: str) -> None:
    result = run(runner, "search", query, "--repo", repo, "--store", store)
    assert result.exit_code == EXIT_BAD_INPUT == 2
    assert "query is empty" in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.output
    assert not store.exists()


@pytest.mark.parametrize("limit", ["0", "1001", "-1"])
def test_search_limit_out_of_range_is_bad_input(
        runner: CliRunner, repo: Path, store: Path, limit: str) -> None:
    result = run(runner, "search", "area", "--repo", repo, "--store", store, "--limit", limit)
    assert result.exit_code == EXIT_BAD_INPUT
    assert "limit must be between 1 and 1000" in result.stderr
    assert result.stdout == ""


def test_search_missing_repo_is_bad_input(runner: CliRunner, tmp_path: Path, store: Path) -> None:
    result = run(runner, "search", "area", "--repo", tmp_path / "no-such-repo", "--store", store)
    assert result.exit_code == EXIT_BAD_INPUT
    assert "does not exist" in result.stderr


def test_search_help(runner: CliRunner) -> None:
    result = run(runner, "search", "--help")
    assert result.exit_code == 0
    for option in ("--repo", "--limit", "--store", "--json", "--config"):
        assert option in result.stdout
    assert "search" in run(runner, "--help").stdout


# --- context --------------------------------------------------------------------------------------

CONTEXT_MINIMAL_KEYS = {"context_text", "sufficiency_score", "retrieval_confidence", "leg_agreement",
                        "files_changed_since_index", "total_tokens", "max_tokens", "baseline_tokens",
                        "reduction_factor", "reduction_summary", "errors"}
CONTEXT_STANDARD_KEYS = CONTEXT_MINIMAL_KEYS | {"query", "task_type", "task_confidence", "retrieval_mode",
                                               "source_included", "truncated", "truncation", "changed_files"}
CONTEXT_VERBOSE_KEYS = CONTEXT_STANDARD_KEYS | {"selected_entities", "evidence", "sections_present"}


def test_context_help(runner: CliRunner) -> None:
    result = run(runner, "context", "--help")
    assert result.exit_code == 0
    for option in ("--repo", "--store", "--config", "--max-tokens", "--limit", "--task", "--verbosity",
                   "--json"):
        assert option in result.stdout
    assert "context" in run(runner, "--help").stdout


def test_context_markdown_output(runner: CliRunner, repo: Path, store: Path) -> None:
    result = run(runner, "context", "area", "--repo", repo, "--store", store)
    assert result.exit_code == 0, result.output
    assert "`shapes.Circle.area` (method) — shapes.py:2-3" in result.stdout
    assert "def area(self) -> float" in result.stdout
    assert "return 3.14" not in result.stdout  # summary-first at minimal verbosity
    assert "\ntokens: " in result.stdout and "sufficiency: " in result.stdout
    assert "mode:" not in result.stdout


def test_context_markdown_standard_verbosity_adds_source_and_mode(runner: CliRunner, repo: Path,
                                                                  store: Path) -> None:
    result = run(runner, "context", "circle area", "--repo", repo, "--store", store,
                 "--verbosity", "standard")
    assert result.exit_code == 0, result.output
    assert "return 3.14" in result.stdout
    assert "mode: hybrid" in result.stdout


@pytest.mark.parametrize(("verbosity", "keys"), [
    ("minimal", CONTEXT_MINIMAL_KEYS),
    ("standard", CONTEXT_STANDARD_KEYS),
    ("verbose", CONTEXT_VERBOSE_KEYS),
    ("diagnostic", CONTEXT_VERBOSE_KEYS | {"verbosity", "token_encoding"}),
])
def test_context_json_fields_by_verbosity(runner: CliRunner, repo: Path, store: Path, verbosity: str,
                                          keys: set[str]) -> None:
    data = run_json(runner, "context", "circle area", "--repo", repo, "--store", store, "--json",
                    "--verbosity", verbosity, "--max-tokens", "500")
    assert set(data) == keys
    assert type(data["total_tokens"]) is int and data["total_tokens"] <= data["max_tokens"] == 500
    assert 0.0 <= data["sufficiency_score"] <= 1.0
    assert "shapes.py" in data["context_text"]
    if "evidence" in data:
        assert set(data["evidence"][0]) == {"rank", "chunk_id", "entity_id", "score", "source"}
        assert set(data["selected_entities"][0]) == {"id", "qualified_name", "kind", "path", "start_line",
                                                     "end_line", "source"}
    if "task_type" in data:
        assert data["retrieval_mode"] == "hybrid"
        assert data["task_type"] in {"explain", "debug", "extend", "review", "locate", "general"}


def test_context_task_option(runner: CliRunner, repo: Path, store: Path) -> None:
    data = run_json(runner, "context", "circle area", "--repo", repo, "--store", store, "--json",
                    "--task", "review", "--verbosity", "standard")
    assert (data["task_type"], data["task_confidence"]) == ("review", 1.0)


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--verbosity", "loud", "unknown verbosity 'loud'"),
    ("--task", "fix", "unknown task type 'fix'"),
    ("--max-tokens", "10", "max_tokens must be a whole number between 50 and 200000"),
    ("--limit", "0", "limit must be between 1 and 1000"),
])
def test_context_bad_options_are_bad_input(runner: CliRunner, repo: Path, store: Path, option: str,
                                           value: str, message: str) -> None:
    result = run(runner, "context", "circle area", "--repo", repo, "--store", store, option, value)
    assert result.exit_code == EXIT_BAD_INPUT == 2
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.output
    assert not store.exists()


def test_mcp_port_default_is_the_servers() -> None:
    from knowcode import cli, mcp_server

    assert cli.MCP_DEFAULT_HTTP_PORT == mcp_server.DEFAULT_HTTP_PORT
