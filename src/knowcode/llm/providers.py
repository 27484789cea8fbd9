"""Chat providers for the LLM leg (spec: LLM leg): one small adapter per API, built from a ``ModelConfig``.

``openai`` covers any OpenAI-compatible server (OpenAI, Ollama, vLLM, OpenRouter, LM Studio), ``anthropic``
the Messages API and ``gemini`` the Gemini API; each wraps the provider's official SDK from the ``llm`` extra,
imported only when a request is made. Every request is one attempt (SDK retries off: failing over to the
next model is the caller's job). ``timeout_seconds`` bounds connecting and each wait for reply bytes (the
HTTP libraries have no whole-request deadline); a reply is not streamed, so it bounds the wait for the
answer. Every failure is raised as a :class:`ProviderError` whose ``outcome`` says what happened:
``exhausted`` (429, quota, overloaded), ``timeout`` or ``error``.

The key is read from the environment variable named by ``api_key_env`` at each call and is never part of
an error message: server text quoted in one is scrubbed of it and capped at ``MAX_ERROR_CHARS``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from knowcode.config import ModelConfig
from knowcode.errors import KnowCodeError
from knowcode.llm.prompt_contract import MAX_ERROR_CHARS, truncate_field

INSTALL_HINT = "pip install 'knowcode[llm]'"

# Sent when api_key_env is empty (a local server such as Ollama ignores it). A key is always passed
# explicitly because each SDK otherwise falls back to its own variables and files (OPENAI_API_KEY,
# ANTHROPIC_API_KEY and credential profiles, GOOGLE_API_KEY), and could send a real key to a local server.
NO_KEY_PLACEHOLDER = "knowcode-no-key"

# An empty base_url means the public API. Passing it explicitly keeps the SDKs' own base-URL variables
# (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL) from sending the key elsewhere.
PUBLIC_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com/",
}

# Field accesses on a reply that lacks the expected fields, or a body that is not JSON, raise these.
_MALFORMED_REPLY = (ValueError, AttributeError, IndexError, KeyError, TypeError)


@dataclass(frozen=True, slots=True)
class Completion:
    """A model's answer and the token counts the provider reported (``None`` when it reported none)."""

    text: str
    input_tokens: int | None
    output_tokens: int | None


class ProviderError(KnowCodeError):
    """A chat request failed: bad reply, HTTP error, unreachable server, missing key or library."""

    outcome: ClassVar[str] = "error"


class ProviderExhausted(ProviderError):
    """The provider refused for now: HTTP 429, a spent quota, or (Anthropic) overloaded."""

    outcome = "exhausted"


class ProviderTimeout(ProviderError):
    """No reply within the model's ``timeout_seconds``."""

    outcome = "timeout"


class ChatProvider(Protocol):
    """Sends chat messages to one configured model."""

    model: str

    def complete(self, messages: Sequence[Mapping[str, str]]) -> Completion:
        """The model's answer to ``messages``: a system message, then a user message (else ValueError)."""
        ...


def create_chat_provider(model: ModelConfig) -> ChatProvider:
    """The chat provider for ``model``; the SDK is imported and the key read only when it is called.

    :param model: one entry of ``[llm] models``.
    :return: a provider whose ``complete`` raises only :class:`ProviderError` and its subclasses.
    :raises ValueError: ``model.provider`` is not one of openai, anthropic, gemini.
    """
    providers: dict[str, type[_OpenAIChat | _AnthropicChat | _GeminiChat]] = {
        "openai": _OpenAIChat, "anthropic": _AnthropicChat, "gemini": _GeminiChat,
    }
    if model.provider not in providers:
        raise ValueError(f"model {model.name!r}: unknown provider {model.provider!r}")
    return providers[model.provider](model)


# --- shared helpers -----------------------------------------------------------------------------------


def _failure(cls: type[ProviderError], config: ModelConfig, what: str, detail: str = "",
             key: str = "") -> ProviderError:
    """``cls`` with the standard message; ``detail`` (server text) is scrubbed of ``key`` and capped."""
    message = f"model {config.name!r} ({config.provider}): {what}"
    if detail:
        if key:
            detail = detail.replace(key, "[api key]")
        message += f": {truncate_field(detail, MAX_ERROR_CHARS)}"
    return cls(message)


def _missing_library(config: ModelConfig, package: str) -> ProviderError:
    return _failure(ProviderError, config, f"the {package} library is not installed; run {INSTALL_HINT}")


def _api_key(config: ModelConfig) -> str:
    """The key from ``config.api_key_env``, read now; the placeholder when no variable is configured."""
    if not config.api_key_env:
        if config.provider == "openai" or config.base_url:
            return NO_KEY_PLACEHOLDER
        raise _failure(ProviderError, config, "set api_key_env to the environment variable holding the "
                       "key (or base_url to a local gateway that needs none)")
    key = os.environ.get(config.api_key_env, "").strip()
    if not key:
        raise _failure(ProviderError, config, f"the environment variable {config.api_key_env} "
                       "(api_key_env) is not set or empty")
    # HTTP libraries quote an invalid header value in their exception text, escaped so that scrubbing
    # would miss it: refuse such a key before it reaches a header.
    if not (key.isascii() and key.isprintable()) or " " in key:
        raise _failure(ProviderError, config, f"the value of {config.api_key_env} (api_key_env) is not "
                       "a valid API key: it must be printable ASCII without spaces")
    return key


def _base_url(config: ModelConfig) -> str:
    return config.base_url or PUBLIC_BASE_URLS[config.provider]


def _split(messages: Sequence[Mapping[str, str]]) -> tuple[str, str]:
    """The system and user text of a ``build_messages`` list."""
    if [message.get("role") for message in messages] != ["system", "user"]:
        raise ValueError("messages must be a system message followed by a user message")
    return messages[0]["content"], messages[1]["content"]


def _tokens(usage: object, name: str) -> int | None:
    """A token count from a reply's usage block, ``None`` when the server did not report it."""
    value = getattr(usage, name, None)
    return value if isinstance(value, int) else None


def _completion(config: ModelConfig, text: object, usage: object, fields: tuple[str, str]) -> Completion:
    if not isinstance(text, str) or not text.strip():
        raise _failure(ProviderError, config, "the reply holds no answer text")
    return Completion(text, _tokens(usage, fields[0]), _tokens(usage, fields[1]))


def _status_failure(config: ModelConfig, key: str, status: int, body: str, exhausted: bool) -> ProviderError:
    if exhausted:
        what = f"rate limited, out of quota or overloaded (HTTP {status})"
        return _failure(ProviderExhausted, config, what, body, key)
    return _failure(ProviderError, config, f"the server answered HTTP {status}", body, key)


def _other_failure(config: ModelConfig, key: str, err: Exception) -> ProviderError:
    """Any failure without a status: a reply that is not JSON or lacks fields, or an SDK error."""
    what = "malformed reply" if isinstance(err, _MALFORMED_REPLY) else "the request failed"
    return _failure(ProviderError, config, what, f"{type(err).__name__}: {err}", key)


def _unreachable(config: ModelConfig, key: str, err: BaseException) -> ProviderError:
    cause = err.__cause__ or err
    return _failure(ProviderError, config, "could not reach the server", f"{type(cause).__name__}: {cause}",
                    key)


def _timed_out(config: ModelConfig) -> ProviderError:
    return _failure(ProviderTimeout, config, f"no reply within {config.timeout_seconds:g} s "
                    "(timeout_seconds)")


# --- one adapter per API ------------------------------------------------------------------------------
# Each re-raises ``from None``: an SDK exception can quote the server's text (which may echo the key) and
# holds the request with its auth header, so it must not travel on as the cause.


class _OpenAIChat:
    """Chat Completions on any OpenAI-compatible server."""

    def __init__(self, config: ModelConfig) -> None:
        self.model = config.name
        self._config = config

    def complete(self, messages: Sequence[Mapping[str, str]]) -> Completion:
        """The model's answer; see :func:`create_chat_provider`."""
        config = self._config
        system, user = _split(messages)
        try:
            import openai
        except ImportError:
            raise _missing_library(config, "openai") from None
        key = _api_key(config)
        try:
            with openai.OpenAI(api_key=key, base_url=_base_url(config), timeout=config.timeout_seconds,
                               max_retries=0) as client:
                reply = client.chat.completions.create(
                    model=config.name, max_tokens=config.max_output_tokens,
                    messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                )
                text, usage = reply.choices[0].message.content, getattr(reply, "usage", None)
        except openai.APITimeoutError:
            raise _timed_out(config) from None
        except openai.APIStatusError as err:
            exhausted = err.status_code == 429 or err.code == "insufficient_quota"
            raise _status_failure(config, key, err.status_code, err.response.text, exhausted) from None
        except openai.APIConnectionError as err:
            raise _unreachable(config, key, err) from None
        except Exception as err:
            raise _other_failure(config, key, err) from None
        return _completion(config, text, usage, ("prompt_tokens", "completion_tokens"))


class _AnthropicChat:
    """The Anthropic Messages API; the system message goes in the ``system`` parameter."""

    def __init__(self, config: ModelConfig) -> None:
        self.model = config.name
        self._config = config

    def complete(self, messages: Sequence[Mapping[str, str]]) -> Completion:
        """The model's answer; see :func:`create_chat_provider`."""
        config = self._config
        system, user = _split(messages)
        try:
            import anthropic
        except ImportError:
            raise _missing_library(config, "anthropic") from None
        key = _api_key(config)
        try:
            with anthropic.Anthropic(api_key=key, base_url=_base_url(config), timeout=config.timeout_seconds,
                                     max_retries=0) as client:
                reply = client.messages.create(
                    model=config.name, max_tokens=config.max_output_tokens, system=system,
                    messages=[{"role": "user", "content": user}],
                )
                text = "".join(block.text for block in reply.content if block.type == "text")
                usage = getattr(reply, "usage", None)
        except anthropic.APITimeoutError:
            raise _timed_out(config) from None
        except anthropic.APIStatusError as err:
            # 529 is Anthropic's "overloaded": like a 429, another model may well answer now
            exhausted = err.status_code in (429, 529)
            raise _status_failure(config, key, err.status_code, err.response.text, exhausted) from None
        except anthropic.APIConnectionError as err:
            raise _unreachable(config, key, err) from None
        except Exception as err:
            raise _other_failure(config, key, err) from None
        return _completion(config, text, usage, ("input_tokens", "output_tokens"))


class _GeminiChat:
    """Gemini ``generate_content``; the system message goes in ``system_instruction``."""

    def __init__(self, config: ModelConfig) -> None:
        self.model = config.name
        self._config = config

    def complete(self, messages: Sequence[Mapping[str, str]]) -> Completion:
        """The model's answer; see :func:`create_chat_provider`."""
        config = self._config
        system, user = _split(messages)
        try:
            import httpx2
            from google import genai
            from google.genai import errors, types
        except ImportError:
            raise _missing_library(config, "google-genai (Python 3.11+)") from None
        key = _api_key(config)
        # no tools are sent; turning automatic function calling off also skips its per-call INFO log line
        settings = types.GenerateContentConfig(
            system_instruction=system, max_output_tokens=config.max_output_tokens,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        try:
            # Our own httpx2 client pins the HTTP backend (GOOGLE_GENAI_HTTP_CLIENT could pick httpx, whose
            # timeout exceptions are other classes); the SDK takes its per-request timeout in milliseconds.
            with httpx2.Client() as http:
                options = types.HttpOptions(
                    base_url=_base_url(config), timeout=max(1, round(config.timeout_seconds * 1000)),
                    retry_options=types.HttpRetryOptions(attempts=1), httpx_client=http,
                )
                client = genai.Client(api_key=key, enterprise=False, http_options=options)
                reply = client.models.generate_content(model=config.name, contents=user, config=settings)
                text, usage = reply.text, getattr(reply, "usage_metadata", None)
        except httpx2.TimeoutException:
            raise _timed_out(config) from None
        except errors.APIError as err:
            exhausted = err.code == 429 or err.status == "RESOURCE_EXHAUSTED"
            raise _status_failure(config, key, err.code, json.dumps(err.details, default=str),
                                  exhausted) from None
        except httpx2.TransportError as err:
            raise _unreachable(config, key, err) from None
        except Exception as err:
            raise _other_failure(config, key, err) from None
        return _completion(config, text, usage, ("prompt_token_count", "candidates_token_count"))
