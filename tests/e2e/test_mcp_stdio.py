"""`knowcode mcp` as a subprocess, driven over stdio by the MCP SDK's own client, and by a raw pipe that
checks every byte the server wrote to stdout is JSON-RPC."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest

from knowcode.indexing.indexer import PARALLEL_MIN_FILES
from knowcode.mcp_server import DESCRIPTIONS
from tests.conftest import SAMPLE_REPO, write_tree
from tests.unit.llm._chat_servers import serving

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
from mcp import Client, StdioServerParameters  # noqa: E402 - after the skip check
from mcp_types import CallToolResult  # noqa: E402

TOOLS = {"search_codebase", "retrieve_context_for_query", "get_entity_context", "trace_calls", "impact",
         "index_status", "ask_codebase"}
MAX_DESCRIPTION_CHARS = 300  # a tool description is paid for on every agent turn
MAX_TOOL_LIST_CHARS = 4000  # the whole tools/list answer: names, descriptions and input schemas
SESSION_SECONDS = 120  # a whole session, first indexing included
STOP_SECONDS = 30.0  # a stop takes well under a second; this bounds a hang
FRESH_WITHIN_SECONDS = 10.0  # the tracker sees a change in ~20 ms; this only bounds a hang on a slow CI
HANDSHAKE_VERSION = "2025-06-18"  # the initialize handshake most MCP clients speak today
KEY_ENV = "KNOWCODE_TEST_LLM_KEY"
SECRET = "sk-test-0123456789-mcp"


def server_command(*roots: Path, store: Path) -> list[str]:
    args = ["-m", "knowcode", "mcp", "--store", str(store)]
    for root in roots:
        args += ["--repo", str(root)]
    return [sys.executable, *args]


def server_env(tmp_path: Path) -> dict[str, str]:
    return {"KNOWCODE_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}


def run_session(command: list[str], env: dict[str, str], body: Callable[[Client], Awaitable[None]],
                mode: Literal["legacy", "auto"] = "legacy") -> None:
    """Start the server with the SDK's stdio client, connect (legacy: the initialize handshake; auto:
    discovery first), run `body`, shut the server down."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)

    async def main() -> None:
        with anyio.fail_after(SESSION_SECONDS):
            async with Client(params, mode=mode, read_timeout_seconds=SESSION_SECONDS) as client:
                await body(client)

    anyio.run(main)


def text_of(result: CallToolResult) -> str:
    assert result.content, "a tool answered with no content"
    return "".join(getattr(block, "text", "") for block in result.content)


def ok(result: CallToolResult) -> Any:
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", SAMPLE_REPO)


def test_every_tool_over_stdio(repo: Path, tmp_path: Path) -> None:
    checked: list[str] = []

    async def body(client: Client) -> None:
        assert client.server_info is not None and client.server_info.name == "knowcode"
        listed = (await client.list_tools()).tools
        assert {tool.name for tool in listed} == TOOLS
        for tool in listed:
            assert tool.description == DESCRIPTIONS[tool.name]
            assert 0 < len(tool.description) < MAX_DESCRIPTION_CHARS, tool.name
            assert "title" not in tool.input_schema  # pydantic's derived titles are dropped: tokens
        assert len(json.dumps([tool.model_dump(mode="json", exclude_none=True) for tool in listed])) \
            < MAX_TOOL_LIST_CHARS

        hits = ok(await client.call_tool("search_codebase", {"query": "helper", "limit": 3}))
        assert hits["hits"][0]["qualified_name"] == "pkg.util.helper"
        assert hits["hits"][0]["path"] == "pkg/util.py" and len(hits["hits"]) <= 3

        bundle = ok(await client.call_tool("retrieve_context_for_query", {
            "query": "how does Engine.run transform text", "max_tokens": 800, "verbosity": "standard"}))
        assert "Engine" in bundle["context_text"] and "pkg/core.py" in bundle["context_text"]
        assert 0 < bundle["total_tokens"] <= 800 and 0.0 <= bundle["sufficiency_score"] <= 1.0
        assert bundle["query"] == "how does Engine.run transform text"

        entity = ok(await client.call_tool("get_entity_context",
                                           {"entity_id_or_name": "pkg.core.Engine.run"}))
        assert entity["entity"]["path"] == "pkg/core.py" and "def run(self, text)" in entity["source"]
        assert {n["qualified_name"] for n in entity["callees"]} == {"pkg.core.Base.start", "pkg.util.helper",
                                                                    "pkg.util.slugify"}
        assert entity["parent"] == "pkg.core.Engine"
        by_line = ok(await client.call_tool("get_entity_context", {"entity_id_or_name": "pkg/util.py:6"}))
        assert by_line["entity"]["qualified_name"] == "pkg.util.slugify"

        trace = ok(await client.call_tool("trace_calls", {"target": "pkg.util.helper", "direction": "callers",
                                                          "depth": 2}))
        assert [n["qualified_name"] for n in trace["nodes"]] == ["pkg.util.helper", "pkg.core.Engine.run"]
        assert trace["edges"][0]["path"] == "pkg/core.py" and trace["truncated"] is False

        impact = ok(await client.call_tool("impact", {"target": "Base", "depth": 3}))
        assert {n["qualified_name"]: n["via"] for n in impact["direct"]} == {
            "pkg.core.Engine": "inherits", "pkg.core.Engine.run": "calls"}
        assert impact["affected_files"] == ["pkg/__init__.py", "pkg/core.py"]

        status = ok(await client.call_tool("index_status", {}))
        assert status["files"] == len(SAMPLE_REPO) and status["files_changed_since_index"] == 0
        assert status["languages"]["python"] == 4 and status["root"] == str(repo.resolve())
        assert status["last_update"]["added"] == len(SAMPLE_REPO)  # the first use indexed everything

        # no [llm] models: an honest non-answer that still hands over the code found, as a result
        answer = ok(await client.call_tool("ask_codebase", {"question": "how does Engine.run work"}))
        assert answer["route"] == "none" and answer["model"] is None
        assert "no models are configured" in answer["answer"] and "pkg/core.py" in answer["answer"]
        assert answer["indexed_at"] == status["indexed_at"] and answer["pending_changes"] == 0
        checked.append("tools")

        # the index follows the tree: a file written now is found by the calls made once the change
        # tracker saw it (milliseconds later), each of which answers from an index that holds it
        (repo / "pkg" / "fresh.py").write_text("def brand_new_function():\n    return 7\n", encoding="utf-8")
        with anyio.fail_after(FRESH_WITHIN_SECONDS):
            while True:
                hits = ok(await client.call_tool("search_codebase", {"query": "brand_new_function"}))
                if hits["hits"] and hits["hits"][0]["path"] == "pkg/fresh.py":
                    break
                await anyio.sleep(0.01)
        assert hits["pending_changes"] == 0
        status = ok(await client.call_tool("index_status", {}))
        assert status["files"] == len(SAMPLE_REPO) + 1 and status["last_update"]["added"] == 1
        checked.append("fresh")

        # failures come back as error text, and the server keeps answering
        errors = {
            ("trace_calls", "depth"): {"target": "helper", "depth": 9},
            ("impact", "leaves the repository"): {"target": "../../etc/passwd"},
            ("impact", "outside the repository"): {"target": "/etc/passwd:1"},
            ("get_entity_context", "ambiguous"): {"entity_id_or_name": "run"},
            ("search_codebase", "unknown repository"): {"query": "x", "repo": "elsewhere"},
            ("retrieve_context_for_query", "query"): {"query": "   "},
            ("ask_codebase", "empty"): {"question": "  "},
            ("ask_codebase", "task_type"): {"question": "why", "task_type": "dance"},
        }
        for (name, message), arguments in errors.items():
            result = await client.call_tool(name, arguments)
            assert result.is_error, (name, text_of(result))
            assert message in text_of(result), text_of(result)
            assert "Traceback" not in text_of(result)
        assert ok(await client.call_tool("index_status", {}))["files"] == len(SAMPLE_REPO) + 1
        checked.append("errors")

    run_session(server_command(repo, store=tmp_path / "store"), server_env(tmp_path), body)
    assert checked == ["tools", "fresh", "errors"]


def test_ask_codebase_answers_through_a_configured_model(repo: Path, tmp_path: Path) -> None:
    """A model on a local OpenAI-protocol server answers; while it takes its time, other tools answer."""
    seen: dict[str, Any] = {}
    finished: list[str] = []
    with serving("openai") as server:
        server.script(server.answer("Engine.run lower-cases the text, then passes it to helper.").later(1.0))
        (repo / "knowcode.toml").write_text(
            f'[llm]\nmodels = [{{ name = "local-model", provider = "openai", base_url = "{server.url}", '
            f'api_key_env = "{KEY_ENV}" }}]\n', encoding="utf-8")

        async def body(client: Client) -> None:
            await client.call_tool("index_status", {})  # index first: the ask then only waits for the model

            async def ask() -> None:
                seen["answer"] = ok(await client.call_tool("ask_codebase", {
                    "question": "how does Engine.run transform text", "task_type": "explain"}))
                finished.append("ask")

            async with anyio.create_task_group() as group:
                group.start_soon(ask)
                while not server.requests:  # the model call has begun
                    await anyio.sleep(0.01)
                seen["hits"] = ok(await client.call_tool("search_codebase", {"query": "slugify"}))
                finished.append("search")

        run_session(server_command(repo, store=tmp_path / "store"),
                    {**server_env(tmp_path), KEY_ENV: SECRET}, body)
        requests = list(server.requests)
    answer = seen["answer"]
    assert (answer["route"], answer["model"]) == ("llm", "local-model")
    assert answer["answer"] == "Engine.run lower-cases the text, then passes it to helper."
    assert answer["task_type"] == "explain" and answer["output_tokens"] == 7
    assert any(source["path"] == "pkg/core.py" for source in answer["sources"])
    assert [a["outcome"] for a in answer["attempts"]] == ["not_verified", "answered"]
    assert answer["indexed_at"] > 0 and answer["pending_changes"] == 0
    assert len(requests) == 1 and SECRET in requests[0].headers["authorization"]
    assert seen["hits"]["hits"][0]["name"] == "slugify"
    assert finished == ["search", "ask"]  # the repository's lock was free during the model call


def test_several_repositories_and_the_repo_argument(repo: Path, tmp_path: Path) -> None:
    other = write_tree(tmp_path / "other", {"lib/maths.py": "def add(a, b):\n    return a + b\n"})
    seen: dict[str, Any] = {}

    async def body(client: Client) -> None:
        seen["default"] = ok(await client.call_tool("index_status", {}))
        seen["by_name"] = ok(await client.call_tool("search_codebase", {"query": "add", "repo": "other"}))
        seen["by_path"] = ok(await client.call_tool("trace_calls", {"target": "pkg.util.helper",
                                                                    "repo": str(repo)}))

    run_session(server_command(repo, other, store=tmp_path / "store"), server_env(tmp_path), body,
                mode="auto")
    assert seen["default"]["repository"] == "repo" and seen["default"]["repositories"] == ["repo", "other"]
    assert seen["by_name"]["hits"][0]["qualified_name"] == "lib.maths.add"
    assert seen["by_path"]["root"]["qualified_name"] == "pkg.util.helper"
    stores = sorted(p.name.split("-")[0] for p in (tmp_path / "store").iterdir())
    assert stores == ["other", "repo"]  # one index folder per repository under --store


def rpc(ident: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if ident is not None:
        message["id"] = ident
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


def test_stdout_carries_nothing_but_json_rpc(repo: Path, tmp_path: Path) -> None:
    """A session over a raw pipe: every line on stdout is a JSON-RPC message; the logs went to stderr.

    The repository is large enough for the indexer to start its parser worker processes, which
    inherit the server's standard streams.
    """
    # workers set explicitly: these files are far below indexer.PARALLEL_MIN_BYTES
    write_tree(repo, {"knowcode.toml": "parse_workers = 2\n",
                      **{f"gen/module_{i}.py": f"def generated_{i}():\n    return {i}\n"
                         for i in range(PARALLEL_MIN_FILES)}})
    total_files = len(SAMPLE_REPO) + PARALLEL_MIN_FILES + 1
    env = {**os.environ, **server_env(tmp_path)}
    process = subprocess.Popen(server_command(repo, store=tmp_path / "store"), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None
    requests = [
        rpc(1, "initialize", {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {},
                              "clientInfo": {"name": "raw-test", "version": "0"}}),
        rpc(None, "notifications/initialized"),
        rpc(2, "tools/list"),
        rpc(3, "tools/call", {"name": "search_codebase", "arguments": {"query": "slugify"}}),
        rpc(4, "tools/call", {"name": "trace_calls", "arguments": {"target": "helper", "depth": 0}}),
        rpc(5, "tools/call", {"name": "index_status", "arguments": {}}),
    ]
    responses: dict[int, dict[str, Any]] = {}
    lines: list[bytes] = []
    try:
        for request in requests:
            process.stdin.write(request)
            process.stdin.flush()
            if b'"id"' not in request:
                continue
            while True:  # answers arrive in order here: each request waits for its own
                line = process.stdout.readline()
                assert line, f"the server closed stdout; stderr: {process.stderr.read()!r}"  # type: ignore[union-attr]
                lines.append(line)
                message = json.loads(line)
                if "id" in message:
                    responses[message["id"]] = message
                    break
        rest, stderr = process.communicate(timeout=SESSION_SECONDS)  # closes stdin: the session ends
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines += rest.splitlines(keepends=True)
    assert lines, "no output at all"
    for line in lines:
        assert line.endswith(b"\n") and line.strip(), line
        message = json.loads(line)  # raises on anything that is not JSON
        assert message.get("jsonrpc") == "2.0", line
        assert {"result", "error", "method"} & message.keys(), line
    assert responses[1]["result"]["serverInfo"]["name"] == "knowcode"
    assert {t["name"] for t in responses[2]["result"]["tools"]} == TOOLS
    assert responses[3]["result"].get("isError") is not True
    assert json.loads(responses[3]["result"]["content"][0]["text"])["hits"][0]["name"] == "slugify"
    assert responses[4]["result"]["isError"] is True
    assert json.loads(responses[5]["result"]["content"][0]["text"])["files"] == total_files
    log = stderr.decode("utf-8", "replace")
    assert "serving" in log and "indexed" in log  # the server's own logs, on stderr


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_server_exits_0_while_the_client_keeps_its_pipe_open(repo: Path, tmp_path: Path,
                                                                      stop: signal.Signals) -> None:
    process = subprocess.Popen(server_command(repo, store=tmp_path / "store"), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, **server_env(tmp_path)})
    try:
        assert process.stderr is not None
        for line in process.stderr:  # serving: the handlers are set
            if b"serving" in line:
                break
        process.send_signal(stop)
        assert process.wait(timeout=STOP_SECONDS) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
