"""HTTP plumbing shared by the remote providers (embeddings, cross-encoder reranking).

A lazily opened ``httpx`` client (the optional ``knowcode[remote]`` extra), the API key read from an
environment variable, and a JSON POST with timeouts and retries of transient failures (429, 5xx,
connection errors) that honours Retry-After. Failures raise the caller's `KnowCodeError` subclass, and
no message ever carries the key.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any

from knowcode.errors import KnowCodeError

if TYPE_CHECKING:
    import httpx

REMOTE_TIMEOUT_SECONDS = 60.0  # read timeout per request; a batch usually answers in seconds
REMOTE_CONNECT_TIMEOUT_SECONDS = 10.0  # an unreachable host fails fast
REMOTE_MAX_RETRIES = 2  # retries of 429, 5xx and connection errors, as the OpenAI SDK does by default
REMOTE_RETRY_BACKOFF_SECONDS = 1.0  # first wait; doubles per retry (a Retry-After header wins, capped)
REMOTE_MAX_RETRY_AFTER_SECONDS = 30.0  # never sleep longer than this on one Retry-After
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})  # transient, per the OpenAI SDK's rules
ERROR_BODY_CHARS = 300  # how much of an error reply a message quotes
REMOTE_INSTALL_HINT = "pip install 'knowcode[remote]'"


def api_key_headers(api_key_env: str | None, *, provider: str, setting: str,
                    error: type[KnowCodeError]) -> dict[str, str]:
    """Return the Bearer header for the key in `api_key_env` (no header when no variable is named).

    :param api_key_env: the environment variable holding the key, or None to send no key.
    :param provider: the provider's name, for the message.
    :param setting: the config key that names the variable, for the message.
    :param error: the exception type to raise.
    :raises error: when the variable is unset or blank.
    """
    if api_key_env is None:
        return {}
    key = os.environ.get(api_key_env, "").strip()
    if not key:
        raise error(f"environment variable {api_key_env} is not set: put the {provider} API key in it, "
                    f"or name another variable with the {setting} setting")
    return {"Authorization": f"Bearer {key}"}


class LazyHttpClient:
    """One ``httpx.Client`` per provider, opened on first use; safe to share between threads."""

    def __init__(self, feature: str, timeout: float) -> None:
        """Nothing is imported or opened yet.

        :param feature: what needs httpx, for the install hint (e.g. "the voyage reranker").
        :param timeout: read timeout per request, in seconds.
        """
        self.feature = feature
        self.timeout = timeout
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def get(self) -> httpx.Client:
        """The open client.

        :raises ImportError: when httpx is not installed (the message says how to install it).
        """
        with self._lock:
            if self._client is None:
                try:
                    import httpx
                except ImportError as err:
                    raise ImportError(f"{self.feature} needs httpx: {REMOTE_INSTALL_HINT}") from err
                timeout = httpx.Timeout(self.timeout, connect=REMOTE_CONNECT_TIMEOUT_SECONDS)
                self._client = httpx.Client(timeout=timeout)
            return self._client

    def close(self) -> None:
        """Close the connection pool (a later request opens a new one)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def retry_wait(reply: httpx.Response, attempt: int, backoff: float) -> float:
    """Seconds to wait before retrying a transient reply: its Retry-After (capped), else the backoff."""
    try:
        wait = float(reply.headers.get("retry-after", ""))
    except ValueError:
        return backoff * float(1 << attempt)
    return min(max(wait, 0.0), REMOTE_MAX_RETRY_AFTER_SECONDS)


def post_json(client: httpx.Client, url: str, body: Any, headers: dict[str, str], *, what: str,
              error: type[KnowCodeError], max_retries: int, retry_backoff: float) -> bytes:
    """POST a JSON body, retrying transient failures, and return the 200 reply's bytes.

    :param client: from :meth:`LazyHttpClient.get`.
    :param url: the endpoint.
    :param body: JSON-serialisable request body.
    :param headers: extra headers (the Authorization header is redacted from every message).
    :param what: names the request in messages (e.g. "voyage rerank").
    :param error: the exception type to raise.
    :param max_retries: retries after the first attempt.
    :param retry_backoff: first wait in seconds, doubled per retry (a Retry-After header wins).
    :raises error: on a connection error or a non-200 status once retries are spent.
    """
    import httpx  # installed: the client exists

    for attempt in range(max_retries + 1):
        last = attempt == max_retries
        try:
            reply = client.post(url, json=body, headers=headers)
        except httpx.HTTPError as err:
            if last:  # `from None`: the httpx error holds the request, and so the key, in its chain
                raise error(f"{what} request to {url} failed: {type(err).__name__}: {err}") from None
            time.sleep(retry_backoff * float(1 << attempt))
            continue
        if reply.status_code in RETRY_STATUSES and not last:
            time.sleep(retry_wait(reply, attempt, retry_backoff))
            continue
        if reply.status_code != 200:
            quoted = reply.text[:ERROR_BODY_CHARS]
            key = headers.get("Authorization", "").removeprefix("Bearer ")
            if key:  # a server may echo what it was sent: never let the key reach a message or log
                quoted = quoted.replace(key, "***")
            raise error(f"{what} request to {url} failed with HTTP {reply.status_code}: {quoted}")
        return reply.content
    raise AssertionError("unreachable: the last attempt returns or raises")
