"""A real HTTP server on 127.0.0.1 standing in for a remote JSON provider (embeddings, reranking)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

Reply = tuple[int, bytes, dict[str, str]]  # status, body, extra headers


@dataclass
class LocalApi:
    """What the local server saw, and what it answers next: `always`, else queued replies, else `answer`."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    always: Reply | None = None  # answer every request with this

    def answer(self, body: dict[str, Any]) -> Reply:
        """The provider's normal reply to a request body (subclasses mimic their provider)."""
        raise NotImplementedError

    def reply_to(self, body: dict[str, Any]) -> Reply:
        """The reply to send next: the fixed one, else the oldest queued one, else the normal one."""
        if self.always is not None:
            return self.always
        if self.replies:
            return self.replies.pop(0)
        return self.answer(body)


ApiT = TypeVar("ApiT", bound=LocalApi)


@contextmanager
def serving(api: ApiT) -> Iterator[ApiT]:
    """Serve `api` on a free 127.0.0.1 port for the block, with `api.url` set to its `/v1` base."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            api.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            status, payload, extra = api.reply_to(body)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    api.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
