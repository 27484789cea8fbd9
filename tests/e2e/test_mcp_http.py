"""`knowcode mcp --transport http`: a real server on 127.0.0.1, driven by the SDK's streamable HTTP client."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.conftest import SAMPLE_REPO, write_tree

pytest.importorskip("mcp", reason="the mcp extra is not installed")
from mcp import Client

STARTUP_SECONDS = 30.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    # a LAN name the server may be reached by, as the HTTP API reads it
    repo = write_tree(tmp_path / "repo", {**SAMPLE_REPO,
                                          "knowcode.toml": '[server]\nallowed_hosts = ["devbox.lan"]\n'})
    port = free_port()
    command = [sys.executable, "-m", "knowcode", "mcp", "--repo", str(repo), "--store",
               str(tmp_path / "store"), "--transport", "http", "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "KNOWCODE_CACHE_DIR": str(tmp_path / "cache")}
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    _, err = process.communicate(timeout=5)
                    pytest.fail(f"the MCP HTTP server did not start: {err.decode(errors='replace')}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_tools_over_streamable_http(server_url: str) -> None:
    async def main() -> None:
        async with Client(server_url, read_timeout_seconds=60) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"search_codebase", "trace_calls", "impact", "index_status"} <= names
            result = await client.call_tool("trace_calls", {"target": "pkg.util.slugify",
                                                            "direction": "callers"})
            assert not result.is_error
            trace = json.loads(result.content[0].text)  # type: ignore[union-attr]
            found = [n["qualified_name"] for n in trace["nodes"]]
            assert found == ["pkg.util.slugify", "pkg.core.Engine.run"]
            bad = await client.call_tool("impact", {"target": "helper", "depth": 6})
            assert bad.is_error

    anyio.run(main)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}}


def test_host_checks_follow_the_allowed_hosts_setting(server_url: str) -> None:
    import httpx

    port = server_url.split(":")[2].split("/")[0]
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def status(host: str, origin: str | None = None) -> int:
        extra = {"Host": host, **({"Origin": origin} if origin else {})}
        return httpx.post(server_url, json=INITIALIZE, headers={**headers, **extra}, timeout=30).status_code

    assert status(f"127.0.0.1:{port}") == 200
    assert status(f"devbox.lan:{port}") == 200  # configured: any port
    assert status(f"devbox.lan:{port}", origin=f"http://devbox.lan:{port}") == 200
    assert status(f"evil.example:{port}") == 421  # DNS rebinding: refused
    assert status(f"127.0.0.1:{port}", origin="http://evil.example") == 403
