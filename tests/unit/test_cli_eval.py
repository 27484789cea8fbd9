"""`knowcode eval`: writes the routing artifact, prints the SHA-256 to pin, and rejects bad query sets."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import knowcode
from knowcode.cli import EXIT_BAD_INPUT, app
from tests.conftest import write_tree

QUERIES = [
    {"query": "where is slugify defined", "category": "symbol", "relevant": ["pkg/util.py"], "secondary": []},
    {"query": "Engine", "category": "symbol",
     "relevant": [{"path": "pkg/core.py", "start_line": 9, "end_line": 14}], "secondary": ["pkg/base.py"]},
]
ARTIFACT = ".knowcode/routing-eval.json"


@pytest.fixture
def runner(tmp_path: Path) -> CliRunner:
    """A runner whose default store folder is under tmp_path, never the user's real cache."""
    return CliRunner(env={"KNOWCODE_CACHE_DIR": str(tmp_path / "cache")})


@pytest.fixture
def repo(sample_repo: Path) -> Path:
    """The sample repository with the default query set in its root."""
    return write_tree(sample_repo, {"knowcode-eval.json": json.dumps(QUERIES)})


def run(runner: CliRunner, *args: str | Path) -> Result:
    return runner.invoke(app, ["eval", *(str(arg) for arg in args)])


def test_eval_writes_the_default_artifact_and_prints_its_pin(runner: CliRunner, repo: Path) -> None:
    result = run(runner, "--repo", repo)
    assert result.exit_code == 0, result.output
    artifact = repo / ARTIFACT
    sha256 = hashlib.sha256(artifact.read_bytes()).hexdigest()
    assert f'routing_artifact = "{ARTIFACT}"' in result.stdout
    assert f'routing_artifact_sha256 = "{sha256}"' in result.stdout
    for task in ("explain", "debug", "extend", "review", "locate", "general"):
        assert re.search(rf"│ {task} +│", result.stdout)  # one table row per task type
    assert "2 queries in" in result.stdout and "local answers would be on for: none" in result.stdout
    data = json.loads(artifact.read_text(encoding="utf-8"))
    assert data["query_set"]["path"] == "knowcode-eval.json" and data["query_set"]["queries"] == 2
    assert data["knowcode_version"] == knowcode.__version__


def test_the_printed_pin_is_accepted_by_the_policy(runner: CliRunner, repo: Path, tmp_path: Path) -> None:
    result = run(runner, "--repo", repo, "--store", tmp_path / "store")
    assert result.exit_code == 0, result.output
    pin = result.stdout[result.stdout.index("routing_artifact = "):]
    (repo / "knowcode.toml").write_text(f"[llm]\n{pin}", encoding="utf-8")
    policy = knowcode.open(repo, store=tmp_path / "store").routing_policy()
    assert policy.reason.startswith(f"local answers are off for every task type (verified by {ARTIFACT}")


def test_eval_json_with_a_set_and_an_out(runner: CliRunner, sample_repo: Path, tmp_path: Path) -> None:
    query_set = write_tree(tmp_path / "sets", {"mine.json": json.dumps(QUERIES)}) / "mine.json"
    out = tmp_path / "out" / "artifact.json"
    result = run(runner, "--repo", sample_repo, "--set", query_set, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    printed: dict[str, Any] = json.loads(result.stdout)
    assert printed["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert printed["artifact"] == str(out) and printed["routing_artifact"] == str(out.resolve())
    assert printed["report"] == json.loads(out.read_text(encoding="utf-8"))
    assert printed["report"]["query_set"]["path"] == str(query_set.resolve())
    assert [q["query"] for q in printed["queries"]] == ["where is slugify defined", "Engine"]
    assert set(printed["queries"][0]) == {"query", "task_type", "local_rung", "local_hit", "bundle_hit",
                                          "ndcg_at_10"}


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not UTF-8 JSON"),
    ('{"queries": []}', "expected a JSON list"),
    ('[{"query": "where is x"}]', "needs string `query` and `category`"),
    ("[]", "holds no queries"),
])
def test_a_bad_query_set_exits_2(runner: CliRunner, sample_repo: Path, tmp_path: Path, content: str,
                                 message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    result = run(runner, "--repo", sample_repo, "--set", path)
    assert result.exit_code == EXIT_BAD_INPUT
    assert message in result.stderr and "Traceback" not in result.output
    assert not (sample_repo / ARTIFACT).exists()


def test_a_missing_default_set_says_what_to_do(runner: CliRunner, sample_repo: Path) -> None:
    result = run(runner, "--repo", sample_repo)
    assert result.exit_code == EXIT_BAD_INPUT
    assert "pass --set FILE" in result.stderr and "knowcode-eval.json" in result.stderr


def test_a_missing_set_file_exits_2(runner: CliRunner, sample_repo: Path, tmp_path: Path) -> None:
    result = run(runner, "--repo", sample_repo, "--set", tmp_path / "nope.json")
    assert result.exit_code == EXIT_BAD_INPUT
    assert "query set not found" in result.stderr


def test_an_unwritable_out_exits_2(runner: CliRunner, repo: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a folder", encoding="utf-8")
    result = run(runner, "--repo", repo, "--out", blocked / "artifact.json")
    assert result.exit_code == EXIT_BAD_INPUT
    assert "cannot write the routing artifact" in result.stderr
