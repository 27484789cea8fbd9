"""The HTTP API's gate, run before any route: the Host and Origin a request comes with, the bearer token,
the Content-Type of what it posts and a bounded request body.

A plain ASGI middleware, so it sees every request (the OpenAPI document and unknown paths too) and
can refuse one before its body is read. The Host and Origin checks keep web pages out: a page on
another site can send requests to a loopback server (a cross-origin "simple" request, or its own name
resolved to 127.0.0.1 by DNS rebinding) but cannot choose the Host and Origin the browser sends, nor
send JSON without a Content-Type the server then checks. The MCP SDK's HTTP transport refuses a
foreign Host and Origin with the same statuses (421, 403).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from knowcode.safety import split_host

# The largest request body read: any body the schema admits fits, its longest query (MAX_QUERY_CHARS) written
# with JSON escapes of up to 12 bytes a character (a surrogate pair) and the other fields beside it.
MAX_BODY_BYTES = 256 * 1024
TOKEN_ENV = "KNOWCODE_API_TOKEN"  # the bearer token; required to bind anything but loopback
MIN_TOKEN_CHARS = 16  # a shorter token is guessable: refuse it rather than serve with it
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})  # change nothing: their Content-Type is not checked
DEFAULT_PORTS = {"http": 80, "https": 443}  # the port a Host or Origin without one means, by scheme
_UNAUTHORIZED = "missing or wrong bearer token: send 'Authorization: Bearer <KNOWCODE_API_TOKEN>'"
_NOT_JSON = "send the request body as JSON, with 'Content-Type: application/json'"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
# (status, error code, message[, extra headers]): a request refused on its headers alone
_Refusal = tuple[int, str, str] | tuple[int, str, str, list[tuple[bytes, bytes]]]


@dataclass(frozen=True)
class HostPolicy:
    """The hosts a server answers for: this machine's, plus the configured ones.

    Always allowed, on the port the request arrived at: ``localhost``, any loopback address, and the
    address the connection was made to (what a client of a LAN-bound server types). Configured
    entries allow a name (or an address) on any port, or ``name:port`` on that port only.
    """

    allowed: tuple[tuple[str, int | None], ...] = ()

    @classmethod
    def of(cls, allowed_hosts: Iterable[str]) -> HostPolicy:
        """The policy with extra hosts (``[server] allowed_hosts``).

        :raises ValueError: an entry that is not ``host[:port]``.
        """
        allowed = []
        for entry in allowed_hosts:
            parsed = split_host(entry)
            if parsed is None:
                raise ValueError(f"allowed host {entry!r} is not host[:port]")
            allowed.append(parsed)
        return cls(tuple(allowed))

    def allows(self, host: str, scheme: str, server: tuple[str, int | None] | None) -> bool:
        """Whether a request may name `host` (``name[:port]``), for a server listening at `server`."""
        parsed = split_host(host)
        if parsed is None:
            return False
        name, port = parsed
        port = port if port is not None else DEFAULT_PORTS.get(scheme)
        if any(name == allowed and allowed_port in (None, port) for allowed, allowed_port in self.allowed):
            return True
        address, listening = server if server is not None else ("", None)
        local = is_loopback(name) or name == _normalised(address)
        return local and (listening is None or port == listening)

    def allows_origin(self, origin: str, server: tuple[str, int | None] | None) -> bool:
        """Whether a page at `origin` (``scheme://host[:port]``) may send requests; "null" may not."""
        scheme, separator, host = origin.partition("://")
        scheme = scheme.lower()
        return bool(separator) and scheme in DEFAULT_PORTS and self.allows(host, scheme, server)


def _normalised(address: str) -> str:
    try:
        return ipaddress.ip_address(address).compressed
    except ValueError:
        return address.lower()


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


def _is_json(content_type: bytes) -> bool:
    media_type = content_type.split(b";", 1)[0].strip().lower()
    return media_type == b"application/json" or (media_type.startswith(b"application/")
                                                 and media_type.endswith(b"+json"))


class RequestGuard:
    """Refuses a request for a foreign Host (421), from a foreign Origin (403), without the bearer
    token (401), posting anything but JSON (415) or with a body over the limit (413).

    The body limit is checked on Content-Length first, then while the body is read (a chunked body
    has no length); a body within the limit is handed on to the application unchanged.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, hosts: HostPolicy | None = None,
                 max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts if hosts is not None else HostPolicy()
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one request, then pass it on."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _send_error(send, *refusal)
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
        if size and b"content-type" not in headers and scope["method"] not in SAFE_METHODS:
            # a browser sends a body without a type (a Blob) cross-origin without asking first
            await _send_error(send, 415, "unsupported_media_type", _NOT_JSON)
            return
        pending = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay() -> Message:
            return pending.pop() if pending else await receive()

        await self.app(scope, replay, send)

    def _refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> _Refusal | None:
        """Why the headers alone refuse the request, or None."""
        server = scope.get("server")
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.hosts.allows(host, scope.get("scheme", "http"), server):
            return (421, "misdirected_request",
                    f"this server does not answer for the host {host!r}: use localhost or its address, "
                    "or add the name to allowed_hosts in the [server] table of knowcode.toml")
        origin = headers.get(b"origin")
        if origin is not None and not self.hosts.allows_origin(origin.decode("latin-1"), server):
            return (403, "forbidden", f"requests from the web page at {origin.decode('latin-1')!r} are "
                    "refused: only this server's own origin and allowed_hosts may send them")
        if self.token is not None and not token_matches(headers.get(b"authorization"), self.token):
            return 401, "unauthorized", _UNAUTHORIZED, [(b"www-authenticate", b"Bearer")]
        content_type = headers.get(b"content-type")
        if scope["method"] not in SAFE_METHODS and content_type is not None and not _is_json(content_type):
            return 415, "unsupported_media_type", _NOT_JSON
        return None

    async def _too_large(self, send: Send) -> None:
        await _send_error(send, 413, "payload_too_large",
                          f"the request body is over the limit of {self.max_body_bytes} bytes")
