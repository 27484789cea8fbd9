"""A real uvicorn server on 127.0.0.1 (an ephemeral port) in a thread, for the HTTP API tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn

from knowcode.api import create_app
from knowcode.engine import KnowCode

START_TIMEOUT_SECONDS = 15.0


@dataclass(frozen=True)
class LiveServer:
    """A running server: its base URL (``http://127.0.0.1:<port>``) and the port."""

    base_url: str
    port: int


@contextmanager
def serve(engine: KnowCode, *, token: str | None = None, watch: bool = False) -> Iterator[LiveServer]:
    """Serve the API for `engine` on 127.0.0.1 until the block ends (`watch`: with the file watcher)."""
    config = uvicorn.Config(create_app(engine, token=token, watch=watch), host="127.0.0.1", port=0,
                            log_level="warning", access_log=False, lifespan="on" if watch else "off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="knowcode-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield LiveServer(f"http://127.0.0.1:{port}", port)
    finally:
        server.should_exit = True
        thread.join(timeout=START_TIMEOUT_SECONDS)
