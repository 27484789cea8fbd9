"""Real HTTP servers on 127.0.0.1 that speak the OpenAI, Anthropic and Gemini chat protocols.

Use it from any test (unit, failover, or a ``knowcode ask`` subprocess pointed at the server)::

    with serving("anthropic") as server:             # kind: "openai" | "anthropic" | "gemini"
        model = server.model_config(api_key_env="MY_KEY", timeout_seconds=0.5)   # base_url = server.url
        server.script(server.rate_limited(), server.answer("hi", input_tokens=3, output_tokens=1))
        ...                                          # 1st request gets a 429, 2nd the answer
        server.requests[0].headers["authorization"]  # every request, in order (a SeenRequest: method,
                                                     # path, lower-cased headers, parsed JSON body)

Replies, all frozen :class:`Reply` values (status, body bytes, delay before answering):

- ``server.answer(text, input_tokens=11, output_tokens=7)``: a normal reply in the protocol's shape.
- ``server.rate_limited()``: HTTP 429 in the provider's real error shape (OpenAI ``rate_limit_exceeded``,
  Anthropic ``rate_limit_error``, Gemini ``RESOURCE_EXHAUSTED``).
- ``server.quota_exceeded()``: HTTP 429 for a spent quota (OpenAI ``insufficient_quota``, Gemini
  ``RESOURCE_EXHAUSTED`` quota message, Anthropic ``rate_limit_error``).
- ``server.error(status, message, code=...)``: any status in the provider's error shape (500, Anthropic 529
  ``overloaded_error``); ``code`` replaces the error type (OpenAI ``type``/``code``, Anthropic
  ``error.type``, Gemini ``status``).
- ``server.answer(...).later(seconds)``: the same reply after a pause, to trip a client timeout; the pause
  ends early when the ``serving`` block exits, so a timed-out test does not wait for it.
- :data:`MALFORMED_JSON` (``{"choices": [``) and :data:`NOT_JSON`: a 200 whose body is not JSON.
- ``Reply(status, body)``: anything else.

Each request takes the oldest scripted reply (``server.script(...)``, a FIFO queue), else
``server.default`` (``server.answer(DEFAULT_ANSWER)`` unless replaced). A request to a path the
protocol does not use gets a 404, so a client building the wrong URL fails loudly.

``server.url`` is the ``base_url`` a client of that kind needs: ``http://127.0.0.1:PORT/v1`` for OpenAI
(the SDK appends ``/chat/completions``), ``http://127.0.0.1:PORT`` for Anthropic (the SDK appends
``/v1/messages``) and for Gemini (the SDK appends ``/{api_version}/models/{model}:generateContent``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from knowcode.config import ModelConfig

KINDS = ("openai", "anthropic", "gemini")
DEFAULT_ANSWER = "The answer is in src/app.py:1-3."
SERVED_MODEL = "served-model"  # the model name the servers put into their answers

# the request path each protocol posts to
_PATHS = {
    "openai": re.compile(r"/v1/chat/completions$"),
    "anthropic": re.compile(r"/v1/messages$"),
    "gemini": re.compile(r"/v1(beta)?/models/[^/:]+:generateContent$"),
}


@dataclass(frozen=True)
class Reply:
    """One HTTP reply: status, JSON (or deliberately broken) body, and a pause before it is sent."""

    status: int
    body: bytes
    delay: float = 0.0

    def later(self, seconds: float) -> Reply:
        """The same reply, sent after ``seconds``."""
        return replace(self, delay=seconds)


MALFORMED_JSON = Reply(200, b'{"choices": [')
NOT_JSON = Reply(200, b"not json")


@dataclass(frozen=True)
class SeenRequest:
    """A request as the server received it; header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON body, or the raw text if it was not JSON


def _json(status: int, payload: object) -> Reply:
    return Reply(status, json.dumps(payload).encode())


@dataclass
class ChatServer:
    """A scriptable chat API of one ``kind``; see the module docstring."""

    kind: str
    url: str = ""
    requests: list[SeenRequest] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    default: Reply = field(init=False)  # server.answer(DEFAULT_ANSWER) until replaced
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _closing: threading.Event = field(default_factory=threading.Event, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {self.kind!r}")
        self.default = self.answer(DEFAULT_ANSWER)

    def model_config(self, name: str = "test-model", **settings: Any) -> ModelConfig:
        """A :class:`ModelConfig` for this server (``provider`` and ``base_url`` filled in)."""
        return ModelConfig(name=name, provider=self.kind, **{"base_url": self.url, **settings})

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self.replies.extend(replies)

    def answer(self, text: str, input_tokens: int = 11, output_tokens: int = 7) -> Reply:
        """A successful reply carrying ``text`` and the token counts in the protocol's usage fields."""
        if self.kind == "openai":
            return _json(200, {
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": SERVED_MODEL,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                          "total_tokens": input_tokens + output_tokens},
            })
        if self.kind == "anthropic":
            return _json(200, {
                "id": "msg_1", "type": "message", "role": "assistant", "model": SERVED_MODEL,
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            })
        return _json(200, {
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": input_tokens, "candidatesTokenCount": output_tokens,
                              "totalTokenCount": input_tokens + output_tokens},
            "modelVersion": SERVED_MODEL,
        })

    def error(self, status: int, message: str = "something went wrong", *, code: str = "") -> Reply:
        """An error reply in the provider's shape; ``code`` overrides the error type/code/status field."""
        if self.kind == "openai":
            return _json(status, {"error": {"message": message, "type": code or "server_error",
                                            "param": None, "code": code or None}})
        if self.kind == "anthropic":
            kinds = {429: "rate_limit_error", 529: "overloaded_error", 500: "api_error"}
            return _json(status, {"type": "error",
                                  "error": {"type": code or kinds.get(status, "invalid_request_error"),
                                            "message": message}})
        statuses = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
        return _json(status, {"error": {"code": status, "message": message,
                                        "status": code or statuses.get(status, "INVALID_ARGUMENT")}})

    def rate_limited(self) -> Reply:
        """HTTP 429 for too many requests."""
        code = {"openai": "rate_limit_exceeded", "anthropic": "rate_limit_error",
                "gemini": "RESOURCE_EXHAUSTED"}
        return self.error(429, "Rate limit reached for requests; please retry later.", code=code[self.kind])

    def quota_exceeded(self) -> Reply:
        """HTTP 429 for a spent quota or budget."""
        code = {"openai": "insufficient_quota", "anthropic": "rate_limit_error",
                "gemini": "RESOURCE_EXHAUSTED"}
        return self.error(429, "You exceeded your current quota, please check your plan and billing details.",
                          code=code[self.kind])

    def _next_reply(self, path: str) -> Reply:
        if not _PATHS[self.kind].search(path):
            return self.error(404, f"no such endpoint: {path}")
        with self._lock:
            return self.replies.pop(0) if self.replies else self.default

    def _record(self, request: SeenRequest) -> None:
        with self._lock:
            self.requests.append(request)


@contextmanager
def serving(kind: str) -> Iterator[ChatServer]:
    """Serve a :class:`ChatServer` of ``kind`` on a free 127.0.0.1 port for the duration of the block."""
    server_state = ChatServer(kind)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8", "replace")
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw
            headers = {name.lower(): value for name, value in self.headers.items()}
            server_state._record(SeenRequest("POST", self.path, headers, body))
            reply = server_state._next_reply(self.path)
            if reply.delay and server_state._closing.wait(reply.delay):
                return  # the block ended while we waited: the client is gone
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except OSError:
                pass  # the client gave up (timed out) before the reply was ready

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    root = f"http://127.0.0.1:{httpd.server_address[1]}"
    server_state.url = f"{root}/v1" if kind == "openai" else root
    try:
        yield server_state
    finally:
        server_state._closing.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()
