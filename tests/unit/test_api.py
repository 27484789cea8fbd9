"""The HTTP API in process: error mapping, the bind and token policy, the request guard, `knowcode serve`'s
refusals, and `POST /ask` leaving the facade free while a model answers. The routes themselves are tested
against a real server in tests/e2e/test_http_api.py."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from knowcode.analysis.call_graph import UnknownEntityError
from knowcode.api_guard import (
    MIN_TOKEN_CHARS,
    HostPolicy,
    RequestGuard,
    is_loopback,
    server_token,
    token_matches,
)
from knowcode.cli import EXIT_BAD_INPUT, EXIT_FAILURE, app
from knowcode.config import CACHE_DIR_ENV, AppConfig, LLMConfig, load_config
from knowcode.engine import KnowCode
from knowcode.errors import EmbeddingError, KnowCodeError, SchemaVersionError, StoreError
from knowcode.models import Answer
from tests.conftest import SAMPLE_REPO, write_tree
from tests.unit.llm._chat_servers import serving

pytest.importorskip("fastapi", reason="the server extra is not installed")
from fastapi.testclient import TestClient

from knowcode.api import API_PREFIX, ApiError, ErrorCode, _translate, create_app

TOKEN = "x" * MIN_TOKEN_CHARS


@pytest.mark.parametrize(("error", "code", "status"), [
    (ValueError("bad"), ErrorCode.BAD_REQUEST, 400),
    (LookupError("none"), ErrorCode.NOT_FOUND, 404),
    (UnknownEntityError("no entity named 'x'"), ErrorCode.NOT_FOUND, 404),
    (StoreError("no index"), ErrorCode.UNAVAILABLE, 503),
    (SchemaVersionError("newer"), ErrorCode.UNAVAILABLE, 503),
    (EmbeddingError("model"), ErrorCode.INTERNAL, 500),
    (KnowCodeError("ours"), ErrorCode.INTERNAL, 500),
    (RuntimeError("secret detail"), ErrorCode.INTERNAL, 500),
])
def test_errors_map_to_stable_codes(error: Exception, code: ErrorCode, status: int) -> None:
    translated = _translate(error)
    assert translated.code is code and code.status == status
    if isinstance(error, RuntimeError):
        assert "secret detail" not in translated.message  # unexpected errors are logged, not echoed


@pytest.mark.parametrize(("host", "token", "expected"), [
    ("127.0.0.1", None, None), ("localhost", None, None), ("::1", None, None), ("[::1]", None, None),
    ("127.0.0.2", "", None), ("127.0.0.1", TOKEN, TOKEN), ("0.0.0.0", TOKEN, TOKEN),
    ("0.0.0.0", None, ValueError), ("192.168.1.5", None, ValueError), ("::", None, ValueError),
    ("example.org", None, ValueError), ("0.0.0.0", "short", ValueError), ("127.0.0.1", "short", ValueError),
])
def test_bind_policy(host: str, token: str | None, expected: Any) -> None:
    if expected is ValueError:
        with pytest.raises(ValueError, match="KNOWCODE_API_TOKEN"):
            server_token(host, token)
    else:
        assert server_token(host, token) == expected


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.9.10", True), ("LOCALHOST", True), ("::1", True), ("0.0.0.0", False),
    ("10.0.0.1", False), ("", False), ("not a host", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(("header", "ok"), [
    (f"Bearer {TOKEN}".encode(), True), (f"bearer {TOKEN}".encode(), True),
    (f"Bearer  {TOKEN} ".encode(), True), (None, False), (b"", False), (TOKEN.encode(), False),
    (f"Basic {TOKEN}".encode(), False), (f"Bearer {TOKEN[:-1]}".encode(), False),
    (f"Bearer {TOKEN}0".encode(), False), (b"Bearer \xff\xfe", False),
])
def test_token_matches(header: bytes | None, ok: bool) -> None:
    assert token_matches(header, TOKEN) is ok


def _run_guard(headers: list[tuple[bytes, bytes]], body_parts: list[bytes], limit: int) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []
    reached: list[bytes] = []
    parts = list(body_parts)

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        reached.append(message["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def receive() -> dict[str, Any]:
        body = parts.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(parts)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"), *headers]
    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers, "scheme": "http",
             "server": ("127.0.0.1", 8000)}
    asyncio.run(RequestGuard(inner, token=None, max_body_bytes=limit)(scope, receive, send))
    return sent[0]["status"], b"".join(reached)


def test_guard_counts_a_body_without_length_while_reading() -> None:
    assert _run_guard([], [b"a" * 6, b"b" * 6], limit=10)[0] == 413
    assert _run_guard([], [b"a" * 5, b"b" * 5], limit=10) == (200, b"a" * 5 + b"b" * 5)


def test_guard_checks_content_length_before_reading() -> None:
    assert _run_guard([(b"content-length", b"11")], [b"x" * 11], limit=10)[0] == 413
    assert _run_guard([(b"content-length", b"ten")], [b"x"], limit=10)[0] == 400
    assert _run_guard([(b"content-length", b"-1")], [b"x"], limit=10)[0] == 400


POLICY = HostPolicy.of(["devbox.lan", "proxy.example:443", "10.0.0.7"])
LOOPBACK = ("127.0.0.1", 8000)


@pytest.mark.parametrize(("host", "server", "allowed"), [
    ("127.0.0.1:8000", LOOPBACK, True), ("localhost:8000", LOOPBACK, True),
    ("LOCALHOST:8000", LOOPBACK, True), ("[::1]:8000", LOOPBACK, True),
    ("[0:0:0:0:0:0:0:1]:8000", LOOPBACK, True), ("127.0.0.9:8000", LOOPBACK, True),
    ("localhost", ("127.0.0.1", 80), True),  # no port: the scheme's
    ("localhost:8001", LOOPBACK, False), ("localhost", LOOPBACK, False),  # another port: another server
    ("evil.example:8000", LOOPBACK, False), ("localhost.evil.example:8000", LOOPBACK, False),
    ("127.0.0.1.nip.io:8000", LOOPBACK, False), ("user@127.0.0.1:8000", LOOPBACK, False),
    ("127.0.0.1:8000/", LOOPBACK, False), ("", LOOPBACK, False), ("[::1", LOOPBACK, False),
    # bound to a LAN address (with a token): the address a client connected to, and the configured names
    ("192.168.1.5:8000", ("192.168.1.5", 8000), True), ("192.168.1.6:8000", ("192.168.1.5", 8000), False),
    ("devbox.lan:8000", ("192.168.1.5", 8000), True), ("devbox.lan", ("192.168.1.5", 8000), True),
    ("devbox.lan.evil.example:8000", ("192.168.1.5", 8000), False),
    ("proxy.example", ("127.0.0.1", 8000), False), ("proxy.example:443", ("127.0.0.1", 8000), True),
    ("10.0.0.7:9", ("10.0.0.8", 8000), True),
    ("testserver", ("testserver", 80), True),  # Starlette's test client
    ("localhost:5", None, True),  # a server that reports no address (a Unix socket): any port
])
def test_host_policy(host: str, server: tuple[str, int] | None, allowed: bool) -> None:
    assert POLICY.allows(host, "http", server) is allowed


@pytest.mark.parametrize(("origin", "allowed"), [
    ("http://127.0.0.1:8000", True), ("http://localhost:8000", True), ("HTTP://LOCALHOST:8000", True),
    ("https://proxy.example", True), ("http://devbox.lan:3000", True),
    ("http://localhost:3000", False), ("http://localhost", False), ("https://localhost", False),
    ("http://evil.example", False), ("null", False), ("file://", False), ("chrome-extension://abc", False),
    ("http://127.0.0.1:8000/path", False), ("", False),
])
def test_origin_policy(origin: str, allowed: bool) -> None:
    assert POLICY.allows_origin(origin, LOOPBACK) is allowed


def test_host_policy_refuses_malformed_entries() -> None:
    with pytest.raises(ValueError, match="host"):
        HostPolicy.of(["http://devbox.lan"])


@pytest.mark.parametrize(("entries", "message"), [
    ('["http://devbox.lan"]', "no scheme"), ('["devbox.lan/x"]', "no scheme or path"), ('"devbox"', "array"),
    ("[1]", "str"), ('["devbox.lan:99999"]', "devbox.lan:99999"),
])
def test_allowed_hosts_setting_is_checked(tmp_path: Path, entries: str, message: str) -> None:
    (tmp_path / "knowcode.toml").write_text(f"[server]\nallowed_hosts = {entries}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_config(tmp_path)


def test_allowed_hosts_setting_is_read(tmp_path: Path) -> None:
    (tmp_path / "knowcode.toml").write_text('[server]\nallowed_hosts = ["devbox.lan"]\n', encoding="utf-8")
    assert load_config(tmp_path).server.allowed_hosts == ("devbox.lan",)


def test_guard_checks_host_then_origin_then_token() -> None:
    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    def status(headers: list[tuple[bytes, bytes]], method: str = "GET") -> int:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        scope = {"type": "http", "method": method, "path": "/", "headers": headers, "scheme": "http",
                 "server": LOOPBACK}
        asyncio.run(RequestGuard(inner, token=TOKEN, hosts=POLICY)(scope, receive, send))
        return int(sent[0]["status"])

    evil_host, evil_origin = (b"host", b"evil.example"), (b"origin", b"http://evil.example")
    good_host, auth = (b"host", b"127.0.0.1:8000"), (b"authorization", f"Bearer {TOKEN}".encode())
    assert status([evil_host, evil_origin]) == 421
    assert status([good_host, evil_origin]) == 403
    assert status([good_host]) == 401
    assert status([good_host, auth, (b"content-type", b"text/plain")], "POST") == 415
    assert status([good_host, auth, (b"content-type", b"text/plain")], "GET") == 200  # changes nothing
    assert status([good_host, auth, (b"content-type", b"application/json")], "POST") == 200


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[KnowCode]:
    root = write_tree(tmp_path / "repo", SAMPLE_REPO)
    facade = KnowCode.from_path(root, store=tmp_path / "store")
    facade.index()
    yield facade
    facade.close()


def test_store_failure_is_503_and_internal_error_is_500(engine: KnowCode,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    client = TestClient(create_app(engine, token=None), raise_server_exceptions=False)

    def unavailable(*_: Any, **__: Any) -> Any:
        raise StoreError("cannot open the index store at /x: locked")

    def crash(*_: Any, **__: Any) -> Any:
        raise ZeroDivisionError("division by zero in /secret/path")

    # on the class: queries run on the facade's readers, not on the facade itself
    monkeypatch.setattr(KnowCode, "search", unavailable)
    response = client.get(f"{API_PREFIX}/search", params={"q": "x"})
    assert response.status_code == 503 and response.json()["error"]["code"] == "unavailable"
    monkeypatch.setattr(KnowCode, "search", crash)
    response = client.get(f"{API_PREFIX}/search", params={"q": "x"})
    assert response.status_code == 500 and response.json()["error"]["code"] == "internal"
    assert "/secret/path" not in response.text


def test_api_error_carries_its_code() -> None:
    error = ApiError(ErrorCode.NOT_FOUND, "gone")
    assert _translate(error) is error and str(error) == "gone"


def test_openapi_lists_every_route(engine: KnowCode) -> None:
    paths = set(TestClient(create_app(engine, token=None)).get("/openapi.json").json()["paths"])
    assert paths == {f"{API_PREFIX}/{name}" for name in (
        "health", "search", "context/query", "ask", "entities/{entity_id}", "callers/{entity_id}",
        "callees/{entity_id}", "trace_calls", "impact", "stats", "reload")}


def test_ask_leaves_the_facade_free_while_the_model_answers(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))  # the rate limiters' request log
    root = write_tree(tmp_path / "repo", SAMPLE_REPO)
    done: list[str] = []  # in the order the calls finished
    with serving("openai") as chat:
        chat.script(chat.answer("late").later(1.0))
        config = AppConfig(llm=LLMConfig(models=(chat.model_config(),)))
        facade = KnowCode.from_path(root, store=tmp_path / "store", config=config)
        facade.index()
        asked = facade.ask

        def ask_and_stamp(*args: Any, **kwargs: Any) -> Answer:
            answer = asked(*args, **kwargs)
            # inside the route's call: had the route held the lock over all of it, the search came later
            done.append("ask")
            return answer

        monkeypatch.setattr(facade, "ask", ask_and_stamp)
        client = TestClient(create_app(facade, token=None, readers=1))  # one reader: the search needs it
        replies: dict[str, Any] = {}
        asking = threading.Thread(target=lambda: replies.update(
            ask=client.post(f"{API_PREFIX}/ask", json={"question": "how does Engine run text"})))
        asking.start()
        _wait_for(lambda: bool(chat.requests) or not asking.is_alive())  # the model call has begun
        search = client.get(f"{API_PREFIX}/search", params={"q": "helper"})
        done.append("search")
        asking.join()
    facade.close()
    assert search.status_code == 200 and search.json()["hits"]
    assert replies["ask"].status_code == 200 and replies["ask"].json()["answer"] == "late"
    assert done == ["search", "ask"]


def _wait_for(condition: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds  # only a bound on a hang, never a speed check
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


@pytest.fixture
def runner(tmp_path: Path) -> CliRunner:
    return CliRunner(env={"KNOWCODE_CACHE_DIR": str(tmp_path / "cache"), "KNOWCODE_API_TOKEN": None})


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--host", "0.0.0.0"], {}, "KNOWCODE_API_TOKEN"),
    (["--host", "192.168.0.10"], {}, "KNOWCODE_API_TOKEN"),
    (["--host", "0.0.0.0"], {"KNOWCODE_API_TOKEN": "short"}, "at least"),
    (["--port", "0"], {}, "Usage"),
])
def test_serve_refuses(runner: CliRunner, tmp_path: Path, args: list[str], env: dict[str, str],
                       message: str) -> None:
    result = runner.invoke(app, ["serve", "--repo", str(tmp_path), *args], env=env)
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert message in result.output
    assert not (tmp_path / "cache").exists()  # refused before anything was indexed


def test_serve_without_the_server_extra_prints_the_pip_command(runner: CliRunner, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # `import uvicorn` now raises ImportError
    result = runner.invoke(app, ["serve", "--repo", str(tmp_path)])
    assert result.exit_code == EXIT_FAILURE
    assert "pip install 'knowcode[server]'" in result.output


def test_worker_spec_round_trips_through_the_environment() -> None:
    from knowcode.api import WorkerSpec

    spec = WorkerSpec("/repo", "/store", None, auth=True)
    assert WorkerSpec.from_env(spec.to_env()) == spec
    with pytest.raises(ValueError, match="--workers"):
        WorkerSpec.from_env(None)
    with pytest.raises(ValueError, match="not a worker spec"):
        WorkerSpec.from_env('{"root": "/repo"}')


def test_a_worker_app_serves_the_store_its_parent_indexed(engine: KnowCode,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from knowcode.api import WORKER_SPEC_ENV, WorkerSpec, create_worker_app

    spec = WorkerSpec(str(engine.root), str(engine.store_dir), None, auth=False)
    monkeypatch.setenv(WORKER_SPEC_ENV, spec.to_env())
    monkeypatch.setattr(KnowCode, "index", lambda *_: pytest.fail("a worker indexed on its own"))
    client = TestClient(create_worker_app())
    response = client.get(f"{API_PREFIX}/search", params={"q": "helper"})
    assert response.status_code == 200 and response.json()["hits"][0]["name"] == "helper"
