"""The HTTP API's gate, run before any route: bearer-token check and a bounded request body.

A plain ASGI middleware, so it sees every request (the OpenAPI document and unknown paths too) and
can refuse one before its body is read.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

MAX_BODY_BYTES = 64 * 1024  # the largest request body read: a context query is well under 4 KiB
TOKEN_ENV = "KNOWCODE_API_TOKEN"  # the bearer token; required to bind anything but loopback
MIN_TOKEN_CHARS = 16  # a shorter token is guessable: refuse it rather than serve with it
_UNAUTHORIZED = "missing or wrong bearer token: send 'Authorization: Bearer <KNOWCODE_API_TOKEN>'"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach: localhost, 127.0.0.0/8, ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def server_token(host: str, token: str | None) -> str | None:
    """The bearer token a server bound to `host` must require, checking the binding policy.

    :param host: the address to bind.
    :param token: the value of KNOWCODE_API_TOKEN (None or empty: unset).
    :return: the token (None: no auth, loopback only).
    :raises ValueError: a non-loopback host without a token, or a token shorter than MIN_TOKEN_CHARS.
    """
    if not token:
        if not is_loopback(host):
            raise ValueError(f"binding {host} exposes the index beyond this machine: set {TOKEN_ENV} "
                             f"(at least {MIN_TOKEN_CHARS} characters, e.g. `export {TOKEN_ENV}=$(openssl "
                             "rand -hex 32)`) and send 'Authorization: Bearer <token>', or bind 127.0.0.1")
        return None
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"{TOKEN_ENV} is {len(token)} characters long; use at least {MIN_TOKEN_CHARS}")
    return token


def error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    """The JSON body of every error response."""
    return {"error": {"code": code, "message": message}}


async def _send_error(send: Send, status: int, code: str, message: str,
                      extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps(error_body(code, message)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def token_matches(header: bytes | None, token: str) -> bool:
    """True when an Authorization header holds ``Bearer <token>``; compared in constant time."""
    if header is None:
        return False
    scheme, _, value = header.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), token.encode("utf-8"))


class RequestGuard:
    """Refuses requests without the bearer token (401) or with a body over the limit (413).

    The body limit is checked on Content-Length first, then while the body is read (a chunked body
    has no length); a body within the limit is handed on to the application unchanged.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.token = token
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one request, then pass it on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if self.token is not None and not token_matches(headers.get(b"authorization"), self.token):
            await _send_error(send, 401, "unauthorized", _UNAUTHORIZED, [(b"www-authenticate", b"Bearer")])
            return
        length = headers.get(b"content-length")
        if length is not None:
            if not length.isdigit():
                await _send_error(send, 400, "bad_request", "Content-Length is not a number")
                return
            if int(length) > self.max_body_bytes:
                await self._too_large(send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        pending = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send) -> None:
        await _send_error(send, 413, "payload_too_large",
                          f"the request body is over the limit of {self.max_body_bytes} bytes")
