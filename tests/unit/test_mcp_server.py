"""mcp_server.py in process: search_codebase across the shared backend, and the schemas it advertises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from knowcode.config import AppConfig, BackendConfig
from knowcode.mcp_server import Repositories, _nullable_as_type_list, build_server
from knowcode.safety import MAX_QUERY_CHARS
from tests._milvus import release_lite_servers  # noqa: F401 - autouse: stops the test's servers
from tests.conftest import SAMPLE_REPO, write_tree

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
from mcp import Client  # noqa: E402 - after the skip check


def _call(repos: Repositories, calls: list[dict[str, Any]]) -> list[Any]:
    """Each call's answer (parsed JSON, or the error text) over an in-memory MCP session."""
    answers: list[Any] = []

    async def main() -> None:
        async with Client(build_server(repos), mode="legacy") as client:
            for arguments in calls:
                result = await client.call_tool("search_codebase", arguments)
                text = "".join(getattr(block, "text", "") for block in result.content)
                answers.append(text if result.is_error else json.loads(text))

    anyio.run(main)
    return answers


def test_search_codebase_searches_the_shared_backend_when_asked(tmp_path: Path) -> None:
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    config = AppConfig(backend=BackendConfig(kind="milvus", uri=str(tmp_path / "org.db")))
    first = write_tree(tmp_path / "first", SAMPLE_REPO)
    second = write_tree(tmp_path / "second",
                        {"app/engine.py": "class Engine:\n    def run(self):\n        pass\n"})
    other = Repositories.open([second], tmp_path / "s2", config)
    other.items[0].engine.index()
    other.items[0].engine.close()
    repos = Repositories.open([first], tmp_path / "s1", config)
    try:
        own, every, only, unknown = _call(repos, [
            {"query": "engine run"}, {"query": "engine run", "across": []},
            {"query": "engine run", "across": ["second"]}, {"query": "engine run", "across": ["nobody"]}])
    finally:
        repos.items[0].engine.close()
    assert own["hits"] and all("repository" not in hit for hit in own["hits"])
    assert {hit["repository"] for hit in every["hits"]} == {"first", "second"}
    assert {hit["repository"] for hit in only["hits"]} == {"second"}
    assert unknown["hits"] == [] and unknown["errors"]


def test_search_codebase_across_without_a_shared_backend_is_a_tool_error(tmp_path: Path) -> None:
    repos = Repositories.open([write_tree(tmp_path / "repo", SAMPLE_REPO)], tmp_path / "s")
    try:
        [answer] = _call(repos, [{"query": "engine", "across": []}])
    finally:
        repos.items[0].engine.close()
    assert isinstance(answer, str) and "[backend] kind" in answer


def test_search_codebase_takes_a_whole_issue_report_and_refuses_a_longer_text(tmp_path: Path) -> None:
    frame = '  File "/srv/app/pkg/util.py", line 2, in helper\n    return slugify(name)\n'
    report = "helper() fails on empty names\n\nTraceback (most recent call last):\n" + frame * 120
    repos = Repositories.open([write_tree(tmp_path / "repo", SAMPLE_REPO)], tmp_path / "s")
    try:
        found, refused = _call(repos, [{"query": report, "limit": 3}, {"query": "x" * (MAX_QUERY_CHARS + 1)}])
    finally:
        repos.items[0].engine.close()
    assert len(report) > 8_000 and found["hits"][0]["qualified_name"] == "pkg.util.helper"
    assert isinstance(refused, str) and f"the limit is {MAX_QUERY_CHARS}" in refused


def test_nullable_parameters_are_advertised_as_type_lists() -> None:
    schema: dict[str, Any] = {"properties": {
        "repo": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "description": "d"},
        "across": {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
                   "default": None},
        "mixed": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "limit": {"type": "integer", "default": 10}}}
    _nullable_as_type_list(schema)
    assert schema["properties"] == {
        "repo": {"type": ["string", "null"], "default": None, "description": "d"},
        "across": {"items": {"type": "string"}, "type": ["array", "null"], "default": None},
        "mixed": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "limit": {"type": "integer", "default": 10}}
