"""The HTTP API's published contract: request bodies and parameters, error codes, the error responses
each route declares, and an OpenAPI document that lists only what the server sends.

Every rule a client can check before sending (lengths, ranges, patterns, strict JSON types) is in the
document, so a request the document calls valid is refused only for what no schema can say: a path
that leads outside the repository, or a name several entities share (400).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from fastapi import FastAPI, Path, Query
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, StrictBool

from knowcode.analysis.call_graph import MAX_DEPTH
from knowcode.analysis.context_synthesizer import MAX_MAX_TOKENS, MIN_MAX_TOKENS
from knowcode.models import TaskType, Verbosity
from knowcode.safety import MAX_QUERY_CHARS, text_pattern

# GET /search's `q`: what a URL carries everywhere. An encoded character takes up to 12 bytes, and clients
# and servers refuse long URLs (httpx over 64 KiB, uvicorn's parser over 80 KiB, before the app answers);
# a longer query, such as an issue report, goes in POST /search's body, up to MAX_QUERY_CHARS.
MAX_URL_QUERY_CHARS = 2_000
MAX_TARGET_CHARS = 512  # an entity id, a qualified name or a path:line
MAX_HTTP_LIMIT = 100  # hits or entities per request over HTTP (the Python API allows 1000)
TASK_TYPE_CHOICES = ("auto", *(task.value for task in TaskType))  # `task_type` values; auto: classify
# The rules of text arguments as published in the OpenAPI document. The code that enforces them says
# what is wrong (check_text, validate_query, confine_target), so they are not also pydantic patterns.
# validate_query: a query of only quotes ("", '', ``) is as empty as a blank one.
QUERY_PATTERN = r"""^(?!\s*(["'`])\s*\1\s*$)""" + text_pattern().removeprefix("^")
# Entity ids and qualified names hold no backslash, and a path must use / (confine_path).
TARGET_PATTERN = text_pattern(forbidden=r"\\")
_QUERY_RULE: dict[str, Any] = {"pattern": QUERY_PATTERN}
_TARGET_RULE: dict[str, Any] = {"pattern": TARGET_PATTERN}


class ErrorCode(str, Enum):
    """The stable `error.code` values, each with its HTTP status."""

    BAD_REQUEST = "bad_request"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"  # a web page of another origin
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"  # a POST body that is not JSON
    MISDIRECTED_REQUEST = "misdirected_request"  # a Host this server does not answer for
    INTERNAL = "internal"
    UNAVAILABLE = "unavailable"  # the index cannot be read (missing, newer schema, locked)

    @property
    def status(self) -> int:
        """The HTTP status sent with this code."""
        return _STATUS[self]


_STATUS = {ErrorCode.BAD_REQUEST: 400, ErrorCode.UNAUTHORIZED: 401, ErrorCode.FORBIDDEN: 403,
           ErrorCode.NOT_FOUND: 404, ErrorCode.METHOD_NOT_ALLOWED: 405, ErrorCode.PAYLOAD_TOO_LARGE: 413,
           ErrorCode.UNSUPPORTED_MEDIA_TYPE: 415, ErrorCode.MISDIRECTED_REQUEST: 421,
           ErrorCode.INTERNAL: 500, ErrorCode.UNAVAILABLE: 503}
CODE_OF_STATUS = {status: code for code, status in _STATUS.items()}


def _whole_number(value: object) -> object:
    """2.0 as 2: JSON Schema counts a number with no fraction as an integer (strict pydantic would not)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# Request bodies are JSON: "5", true and 2.5 are not integers, nor 0 and "yes" booleans, though
# pydantic's lax mode would convert them.
JsonInt = Annotated[int, BeforeValidator(_whole_number), Strict()]


class ContextQuery(BaseModel):
    """The body of ``POST /context/query``: the facade's `context` arguments."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, json_schema_extra=_QUERY_RULE,
                       description='The question, words, an identifier or a "quoted exact name".')
    max_tokens: JsonInt = Field(6000, ge=MIN_MAX_TOKENS, le=MAX_MAX_TOKENS, description="Token budget.")
    task_type: str = Field("auto", description="auto (classify the query) or a task type.",
                           json_schema_extra={"enum": [*TASK_TYPE_CHOICES]})
    verbosity: Verbosity = Field(Verbosity.MINIMAL, description="Which fields the bundle carries.")
    limit_entities: JsonInt = Field(3, ge=1, le=MAX_HTTP_LIMIT, description="Ranked entities wanted.")
    expand_deps: StrictBool = Field(True, description="Add the entities' 1-hop callees after them.")


class SearchQuery(BaseModel):
    """The body of ``POST /search``: the arguments of ``GET /search``, for a query too long for a URL (an
    issue report with its traceback)."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, json_schema_extra=_QUERY_RULE,
                       description='Words, an identifier, a "quoted exact name", or a whole issue report.')
    limit: JsonInt = Field(10, ge=1, le=MAX_HTTP_LIMIT, description="Hits wanted.")
    repo: list[str] | None = Field(None, max_length=100,
                                   description="Search these repositories of the shared [backend].")
    all_repos: StrictBool = Field(False, description="Search every repository of the shared [backend].")


class AskQuery(BaseModel):
    """The body of ``POST /ask``: the facade's `ask` arguments."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, json_schema_extra=_QUERY_RULE,
                          description="The question.")
    task_type: str = Field("auto", description="auto (classify the question) or a task type.",
                           json_schema_extra={"enum": [*TASK_TYPE_CHOICES]})


class ErrorDetail(BaseModel):
    """What went wrong."""

    code: ErrorCode
    message: str


class ErrorResponse(BaseModel):
    """Every error response."""

    error: ErrorDetail


_ERROR_DESCRIPTIONS = {
    400: "Bad input: out of range, malformed, ambiguous, or a path outside the repository.",
    401: "No or a wrong bearer token (only when the server has one).",
    403: "Sent by a web page of another origin.",
    404: "No such entity or route.",
    413: "A request body over the limit.",
    415: "A request body that is not JSON (POST routes need Content-Type: application/json).",
    421: "A Host this server does not answer for (not this machine, not in allowed_hosts).",
    500: "An internal error; the server log has the details.",
    503: "The index cannot be read: missing, newer schema, locked.",
}


def _responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorResponse, "description": description}
            for status, description in _ERROR_DESCRIPTIONS.items() if status in statuses}


# What any route may answer besides 200 (the request guard runs before every route); POST adds 415.
GET_ERRORS = _responses(400, 401, 403, 404, 413, 421, 500, 503)
POST_ERRORS = _responses(*_ERROR_DESCRIPTIONS)
_TARGET_HELP = "An entity id, a qualified name, a unique name, or an indexed path[:line] inside the root."
EntityRef = Annotated[str, Path(min_length=1, max_length=MAX_TARGET_CHARS, description=_TARGET_HELP,
                                json_schema_extra=_TARGET_RULE)]
Target = Annotated[str, Query(min_length=1, max_length=MAX_TARGET_CHARS, description=_TARGET_HELP,
                              json_schema_extra=_TARGET_RULE)]
Depth = Annotated[int, Query(ge=1, le=MAX_DEPTH, description="Edges to follow.")]
SearchText = Annotated[str, Query(min_length=1, max_length=MAX_URL_QUERY_CHARS, json_schema_extra=_QUERY_RULE,
                                  description='Words, an identifier or a "quoted exact name" (longer text: '
                                              'POST /search).')]
Limit = Annotated[int, Query(ge=1, le=MAX_HTTP_LIMIT, description="Hits wanted.")]


def publish_only_sent_errors(app: FastAPI) -> None:
    """Drop FastAPI's own 422 ("Validation Error") from the OpenAPI document: invalid requests get
    400 bad_request here, so a client reading the document must not expect a 422."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            for path in schema["paths"].values():
                for operation in path.values():
                    operation["responses"].pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
        return app.openapi_schema or build()

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to change the document
