"""The routing artifact: its JSON shape, the SHA-256 of the exact bytes, atomic writes, the pin lines."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from knowcode.evals import (
    RoutingEvalReport,
    TaskTypeQuality,
    artifact_data,
    pin_lines,
    write_routing_artifact,
)
from knowcode.evals.routing_eval import QueryOutcome
from knowcode.models import TaskType

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib


def quality(task: TaskType, queries: int = 0, eligible: int = 0, value: float = 0.0,
            meets: bool = False) -> TaskTypeQuality:
    return TaskTypeQuality(task, queries, eligible, value, 0.5 if queries else 0.0, 0.25 if queries else 0.0,
                           meets)


def report() -> RoutingEvalReport:
    rows = {TaskType.LOCATE: quality(TaskType.LOCATE, 6, 5, 0.8, True),
            TaskType.EXPLAIN: quality(TaskType.EXPLAIN, 2, 1, 1.0, False)}
    outcomes = (QueryOutcome("where is x", TaskType.LOCATE, 0, True, True, 1.0),) * 6 + (
        QueryOutcome("how does x work", TaskType.EXPLAIN, None, False, False, 0.0),) * 2
    return RoutingEvalReport(
        created_at="2025-01-01T00:00:00+00:00", knowcode_version="0.1.0", index_version="ab" * 32,
        index={"schema_version": 1}, query_set_path="knowcode-eval.json", query_set_sha256="cd" * 32,
        quality_floor=0.8, sufficiency_bar=0.8,
        task_types=tuple(rows.get(task, quality(task)) for task in TaskType), outcomes=outcomes, seconds=1.5)


def test_the_artifact_has_the_documented_shape() -> None:
    data = artifact_data(report())
    assert list(data) == ["format", "format_version", "created_at", "knowcode_version", "index_version",
                          "index", "query_set", "quality_floor", "sufficiency_bar", "task_types",
                          "passing_task_types"]
    assert (data["format"], data["format_version"]) == ("knowcode-routing-eval", 1)
    assert data["query_set"] == {"path": "knowcode-eval.json", "sha256": "cd" * 32, "queries": 8}
    assert list(data["task_types"]) == [task.value for task in TaskType]
    assert data["task_types"]["locate"] == {"queries": 6, "local_eligible": 5, "quality": 0.8,
                                            "bundle_recall": 0.5, "ndcg_at_10": 0.25, "meets_floor": True}
    assert data["task_types"]["debug"] == {"queries": 0, "local_eligible": 0, "quality": 0.0,
                                           "bundle_recall": 0.0, "ndcg_at_10": 0.0, "meets_floor": False}
    assert data["passing_task_types"] == ["locate"]


def test_write_returns_the_sha256_of_the_exact_bytes(tmp_path: Path) -> None:
    path = tmp_path / ".knowcode" / "routing-eval.json"  # the folder is created
    sha256 = write_routing_artifact(report(), path)
    assert sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert json.loads(path.read_text(encoding="utf-8")) == artifact_data(report())
    assert [p.name for p in path.parent.iterdir()] == ["routing-eval.json"]  # no temporary file left


def test_write_replaces_an_existing_artifact(tmp_path: Path) -> None:
    path = tmp_path / "routing-eval.json"
    path.write_text("old", encoding="utf-8")
    sha256 = write_routing_artifact(report(), path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "inside").write_text("x", encoding="utf-8")  # os.replace cannot replace a non-empty folder
    with pytest.raises(OSError):
        write_routing_artifact(report(), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_pin_lines_are_toml_for_the_llm_table() -> None:
    lines = pin_lines('odd "dir"\\routing.json', "ef" * 32)
    parsed = tomllib.loads("[llm]\n" + lines)["llm"]
    assert parsed == {"routing_artifact": 'odd "dir"\\routing.json', "routing_artifact_sha256": "ef" * 32}
