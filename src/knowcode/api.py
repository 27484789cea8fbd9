"""The HTTP API (`knowcode serve`): the facade's operations under ``/api/v1`` as JSON.

Routes only check input, call the facade and render through :mod:`knowcode.render`, so the CLI's
``--json``, this API and the MCP server print the same documents. Queries run side by side, each on a
read-only facade of its own lent by a :class:`~knowcode.readers.ReaderPool` (``[server]
query_threads`` of them), inside a read transaction: each sees one committed state of the index.
``POST /ask`` borrows a reader only while it builds a bundle, not while a model answers. ``POST
/reload`` (or the watcher) indexes with the writing facade while queries go on; the next query reads
the new state. With ``knowcode serve --workers N`` each of N processes builds this application over
the same store (:func:`create_worker_app`), and the parent process is the only writer.

Freshness: every response that reads the index carries ``X-KnowCode-Indexed-At`` (when the last
complete indexing run finished, RFC 3339 UTC) and ``X-KnowCode-Files-Changed`` (indexed files whose
size or mtime on disk differ from the index, or that are gone; new files are not counted), checked at
most every :data:`FRESHNESS_TTL_SECONDS`, in the background: no request waits for the files to be
stat'ed, except the first one and the first after a reload.

Every request first passes :class:`~knowcode.api_guard.RequestGuard` (Host, Origin, bearer token,
JSON Content-Type, body size). Errors are ``{"error": {"code": ..., "message": ...}}`` with a code from
:class:`ErrorCode`; each route's OpenAPI entry declares the ones it can send.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, TypeVar

from fastapi import Depends, FastAPI, Query
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request

from knowcode import __version__, render
from knowcode.analysis.signals import changed_files
from knowcode.api_guard import MAX_BODY_BYTES, HostPolicy, RequestGuard, error_body
from knowcode.api_schema import (
    CODE_OF_STATUS,
    GET_ERRORS,
    MAX_TARGET_CHARS,
    MAX_URL_QUERY_CHARS,
    POST_ERRORS,
    AskQuery,
    ContextQuery,
    Depth,
    EntityRef,
    ErrorCode,
    Limit,
    SearchQuery,
    SearchText,
    Target,
    publish_only_sent_errors,
)
from knowcode.engine import KnowCode
from knowcode.errors import KnowCodeError, StoreError
from knowcode.models import Answer, FileRecord, TraceDirection
from knowcode.readers import ReaderPool, auto_readers
from knowcode.safety import MAX_QUERY_CHARS, check_text
from knowcode.storage import Store

API_PREFIX = "/api/v1"
FRESHNESS_TTL_SECONDS = 1.0  # how long a files-changed count is reused before the files are stat'ed again
INDEXED_AT_HEADER = "X-KnowCode-Indexed-At"
FILES_CHANGED_HEADER = "X-KnowCode-Files-Changed"
logger = logging.getLogger(__name__)
T = TypeVar("T")


class ApiError(Exception):
    """An error the API reports as ``{"error": {"code", "message"}}``."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# Cross-repository search (a shared [backend]): repository names to search, or all of them.
RepoFilter = Annotated[list[str] | None, Query(max_length=100, description=(
    "Search these repositories of the shared [backend] (repeatable)."))]
AllRepos = Annotated[bool, Query(description="Search every repository of the shared [backend].")]


def _translate(err: Exception) -> ApiError:
    """Map an error from the facade to its API code (LookupError: an unknown entity)."""
    if isinstance(err, ApiError):
        return err
    if isinstance(err, LookupError):
        return ApiError(ErrorCode.NOT_FOUND, str(err).strip("'\""))
    if isinstance(err, ValueError):
        return ApiError(ErrorCode.BAD_REQUEST, str(err))
    if isinstance(err, StoreError):
        return ApiError(ErrorCode.UNAVAILABLE, str(err))
    if isinstance(err, KnowCodeError):
        return ApiError(ErrorCode.INTERNAL, str(err))
    logger.exception("internal error")
    return ApiError(ErrorCode.INTERNAL, f"internal error ({type(err).__name__}); see the server log")


@dataclasses.dataclass(frozen=True, slots=True)
class Freshness:
    """How current the index is: when it was built, and how many indexed files changed since."""

    indexed_at: float | None
    files_changed: int
    checked_at: float

    def headers(self) -> dict[str, str]:
        """The freshness headers of a response."""
        stamp = "" if self.indexed_at is None else datetime.fromtimestamp(
            self.indexed_at, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return {INDEXED_AT_HEADER: stamp, FILES_CHANGED_HEADER: str(self.files_changed)}


class Service:
    """The facade behind every request: queries on lent readers, freshness cached, one re-index at a time."""

    def __init__(self, engine: KnowCode, *, readers: int, index_on_first_use: bool = True) -> None:
        self.engine = engine  # the writing facade: first indexing, reloads, the routing policy of `ask`
        self.readers = ReaderPool(engine, readers)
        self._write_lock = threading.Lock()  # one re-index at a time
        self._indexed = threading.Event()
        if not index_on_first_use:
            self._indexed.set()
        self._freshness_lock = threading.Lock()
        self._freshness: Freshness | None = None
        self._checking = False  # a background freshness check is running
        # The file records the last check read, with the meta they were read under: only the files are
        # stat'ed again while the index is unchanged (re-reading 3k records cost ~15 ms a check).
        self._records: tuple[dict[str, str], dict[str, FileRecord]] | None = None

    def _ensure_indexed(self) -> None:
        if not self._indexed.is_set():
            with self._write_lock:
                self.engine.ensure_indexed()
                self._indexed.set()

    def call(self, work: Callable[[KnowCode], T]) -> tuple[T, Freshness]:
        """Run `work` on a reader, then read freshness; errors come out as :class:`ApiError`."""
        try:
            self._ensure_indexed()
            with self.readers.borrow() as reader:
                result = work(reader)
            return result, self.freshness()
        except Exception as err:
            raise _translate(err) from err

    def ask(self, question: str, task_type: str) -> tuple[Answer, Freshness]:
        """Answer a question, then read freshness; errors come out as :class:`ApiError`.

        A reader is borrowed only while a bundle is built: a model call may take a minute, and the
        other queries go on meanwhile.
        """
        try:
            self._ensure_indexed()
            answer = self.engine.ask(question, task_type, lend=self.readers.borrow)
            return answer, self.freshness()
        except Exception as err:
            raise _translate(err) from err

    def freshness(self) -> Freshness:
        """The index's freshness, cached for FRESHNESS_TTL_SECONDS; an older value is returned while a
        background thread checks again, so only the first request (and the first after a reload) waits.

        :raises StoreError: the index cannot be read.
        """
        with self._freshness_lock:
            cached = self._freshness
            if cached is None:
                self._freshness = cached = self._check()
            elif time.monotonic() - cached.checked_at >= FRESHNESS_TTL_SECONDS and not self._checking:
                self._checking = True
                threading.Thread(target=self._check_in_background, name="knowcode-freshness",
                                 daemon=True).start()
            return cached

    def _check(self) -> Freshness:
        now = time.monotonic()
        store = Store.open(self.engine.store_dir, create=False)
        try:
            meta = store.meta()
            known = self._records
            if known is None or known[0] != meta:  # every indexing run that commits rewrites its meta
                self._records = known = (meta, store.file_records())
        finally:
            store.close()
        stamp = meta.get("indexed_at")
        changed = changed_files(self.engine.root, known[1])
        return Freshness(float(stamp) if stamp else None, len(changed), now)

    def _check_in_background(self) -> None:
        try:
            checked: Freshness | None = self._check()
        except Exception:  # the next request retries; its own reads report a broken store
            logger.exception("checking the index's freshness failed")
            checked = None
        with self._freshness_lock:
            self._checking = False
            if checked is not None and self._freshness is not None:  # None: a reload reset it meanwhile
                self._freshness = checked

    def reload(self) -> str:
        """Re-index now while queries go on (they read the new state once it commits); the report as JSON."""
        with self._write_lock:
            try:
                report = self.engine.index()
            except Exception as err:
                raise _translate(err) from err
            self._indexed.set()
            with self._freshness_lock:
                self._freshness = None
        return render.index_report_json(report)

    def close(self) -> None:
        """Close the readers and the writing facade's connection."""
        self.readers.close()
        self.engine.close()


def _json(body: str | dict[str, Any], freshness: Freshness | None = None) -> Response:
    text = body if isinstance(body, str) else json.dumps(body, indent=2, default=str)
    return Response(text, media_type="application/json",
                    headers=freshness.headers() if freshness is not None else None)


def _text(value: str, what: str, max_chars: int) -> str:
    try:
        return check_text(value, what, max_chars)
    except ValueError as err:
        raise ApiError(ErrorCode.BAD_REQUEST, str(err)) from None


def _entity_ref(value: str) -> str:
    """An entity id, a (qualified) name or ``path[:line]``; the facade confines paths to the root."""
    text = _text(value, "entity", MAX_TARGET_CHARS).strip()
    if not text:
        raise ApiError(ErrorCode.BAD_REQUEST, "the entity is empty: pass an id, a qualified name or a path")
    return text


def create_app(engine: KnowCode, *, token: str | None, max_body_bytes: int = MAX_BODY_BYTES,
               watch: bool = False, readers: int | None = None, index_on_first_use: bool = True) -> FastAPI:
    """The HTTP API over one repository.

    :param engine: the writing facade; it is indexed on first use if it was not already.
    :param token: when set, every request needs ``Authorization: Bearer <token>``.
    :param max_body_bytes: the largest request body accepted (413 above it).
    :param watch: re-index (as ``POST /reload`` does) whenever files change, from the application's
        startup to its shutdown (the ASGI lifespan must be on).
    :param readers: queries answered at once (read-only facades); default: ``[server] query_threads``.
    :param index_on_first_use: index before the first query unless the facade already did; a worker
        process passes False (its parent indexed, and is the writer).
    :return: the ASGI application.
    """
    size = readers if readers is not None else auto_readers(engine.config.server.query_threads)
    service = Service(engine, readers=size, index_on_first_use=index_on_first_use)
    security = [Depends(HTTPBearer(auto_error=False))] if token else []  # documents it; the guard checks

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        from knowcode.watcher import Watcher

        watcher = Watcher(engine.root, engine.store_dir, service.reload) if watch else None
        if watcher is not None:
            watcher.start()
        try:
            yield
        finally:
            if watcher is not None:
                watcher.stop()
            service.close()

    app = FastAPI(title="KnowCode", version=__version__, dependencies=security, lifespan=lifespan,
                  description="Ranked code, context bundles and call graphs for one repository.")
    app.add_middleware(RequestGuard, token=token, hosts=HostPolicy.of(engine.config.server.allowed_hosts),
                       max_body_bytes=max_body_bytes)
    _add_error_handlers(app)
    publish_only_sent_errors(app)

    def run(work: Callable[[KnowCode], str | dict[str, Any]]) -> Response:
        body, freshness = service.call(work)
        return _json(body, freshness)

    @app.get(f"{API_PREFIX}/health", responses=GET_ERRORS)
    def health() -> Response:
        """Liveness and index freshness."""
        def work(kc: KnowCode) -> dict[str, Any]:
            kc.ensure_indexed()
            return {"status": "ok", "version": __version__, "root": str(kc.root)}

        body, freshness = service.call(work)
        return _json({**body, "indexed_at": freshness.indexed_at,
                      "files_changed_since_index": freshness.files_changed}, freshness)

    def searched(query: str, limit: int, repo: list[str] | None, all_repos: bool) -> Response:
        if repo or all_repos:
            return run(lambda kc: render.cross_repo_data(kc.search_repositories(query, limit, repo)))
        return run(lambda kc: render.search_json(query, kc.search(query, limit=limit)))

    @app.get(f"{API_PREFIX}/search", responses=GET_ERRORS)
    def search(q: SearchText, limit: Limit = 10, repo: RepoFilter = None,
               all_repos: AllRepos = False) -> Response:
        """Ranked code: one hit per entity, best first (as `knowcode search --json`); with `repo` or
        `all_repos`, across the repositories of the shared [backend] (as `--repo-filter` / `--all-repos`)."""
        return searched(_text(q, "query", MAX_URL_QUERY_CHARS), limit, repo, all_repos)

    @app.post(f"{API_PREFIX}/search", responses=POST_ERRORS)
    def search_body(request: SearchQuery) -> Response:
        """As ``GET /search``, the query in a JSON body: for one too long for a URL (an issue report)."""
        return searched(_text(request.query, "query", MAX_QUERY_CHARS), request.limit, request.repo,
                        request.all_repos)

    @app.post(f"{API_PREFIX}/context/query", responses=POST_ERRORS)
    def context_query(request: ContextQuery) -> Response:
        """A token-budgeted context bundle (as `knowcode context --json`)."""
        query = _text(request.query, "query", MAX_QUERY_CHARS)

        def work(kc: KnowCode) -> str:
            bundle = kc.context(query, max_tokens=request.max_tokens, limit_entities=request.limit_entities,
                                task_type=request.task_type, verbosity=request.verbosity,
                                expand_deps=request.expand_deps)
            return render.context_json(bundle, bundle.verbosity)

        return run(work)

    @app.post(f"{API_PREFIX}/ask", responses=POST_ERRORS)
    def ask(request: AskQuery) -> Response:
        """An answer with its route and sources (as `knowcode ask --json`): local from the index when
        verified, else from the configured models; route "none" (still 200) says why neither answered."""
        question = _text(request.question, "question", MAX_QUERY_CHARS)
        answer, freshness = service.ask(question, request.task_type)
        return _json(render.to_json(render.answer_data(answer)), freshness)

    @app.get(API_PREFIX + "/entities/{entity_id:path}", responses=GET_ERRORS)
    def entity(entity_id: EntityRef) -> Response:
        """One entity: signature, docstring, source lines and 1-hop neighbours (each list bounded)."""
        ref = _entity_ref(entity_id)
        return run(lambda kc: render.to_json(kc.entity_context(ref)))

    def trace(ref: str, direction: TraceDirection, depth: int) -> Response:
        return run(lambda kc: render.to_json(kc.trace_calls(ref, direction, depth)))

    @app.get(API_PREFIX + "/callers/{entity_id:path}", responses=GET_ERRORS)
    def callers(entity_id: EntityRef, depth: Depth = 1) -> Response:
        """Who calls an entity, then who calls them, up to `depth`."""
        return trace(_entity_ref(entity_id), TraceDirection.CALLERS, depth)

    @app.get(API_PREFIX + "/callees/{entity_id:path}", responses=GET_ERRORS)
    def callees(entity_id: EntityRef, depth: Depth = 1) -> Response:
        """What an entity calls, then what those call, up to `depth`."""
        return trace(_entity_ref(entity_id), TraceDirection.CALLEES, depth)

    @app.get(f"{API_PREFIX}/trace_calls", responses=GET_ERRORS)
    def trace_calls(target: Target, direction: TraceDirection = TraceDirection.BOTH,
                    depth: Depth = 2) -> Response:
        """The call graph around an entity: callers, callees or both; cycles visited once, bounded."""
        return trace(_entity_ref(target), direction, depth)

    @app.get(f"{API_PREFIX}/impact", responses=GET_ERRORS)
    def impact(target: Target, depth: Depth = 3) -> Response:
        """What a change to an entity can affect: direct and transitive dependents, affected files."""
        ref = _entity_ref(target)
        return run(lambda kc: render.to_json(kc.impact(ref, depth)))

    @app.get(f"{API_PREFIX}/stats", responses=GET_ERRORS)
    def stats() -> Response:
        """Index totals (as `knowcode stats --json`)."""
        return run(lambda kc: render.to_json(kc.stats()))

    @app.post(f"{API_PREFIX}/reload", responses=POST_ERRORS)
    def reload() -> Response:
        """Re-index now (only changed files are parsed); queries go on meanwhile. The index report."""
        report = service.reload()
        return _json(report, service.call(lambda _: None)[1])

    return app


def _error(code: ErrorCode, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(code.value, message), status_code=code.status, headers=headers)


def _add_error_handlers(app: FastAPI) -> None:
    async def api_error(_: Request, err: Exception) -> Response:
        assert isinstance(err, ApiError)
        return _error(err.code, err.message)

    async def validation_error(_: Request, err: Exception) -> Response:
        assert isinstance(err, RequestValidationError)
        problems = []
        for item in err.errors()[:5]:
            where = ".".join(str(part) for part in item.get("loc", ()) if part != "body") or "request"
            problems.append(f"{where}: {item.get('msg', 'invalid')}")
        return _error(ErrorCode.BAD_REQUEST, "; ".join(problems) or "invalid request")

    async def http_error(_: Request, err: Exception) -> Response:
        assert isinstance(err, StarletteHTTPException)
        fallback = ErrorCode.BAD_REQUEST if err.status_code < 500 else ErrorCode.INTERNAL
        code = CODE_OF_STATUS.get(err.status_code, fallback)
        response = _error(code, str(err.detail), headers=dict(err.headers or {}))
        response.status_code = err.status_code
        return response

    async def unexpected(_: Request, err: Exception) -> Response:
        translated = _translate(err)
        return _error(translated.code, translated.message)

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)


WORKER_SPEC_ENV = "KNOWCODE_SERVE_WORKER"  # how `serve --workers` tells its worker processes what to serve


@dataclasses.dataclass(frozen=True)
class WorkerSpec:
    """What a worker process serves: the repository, its store and config, and whether auth is on (the
    token itself stays in the environment variable it came from)."""

    root: str
    store: str
    config: str | None
    auth: bool

    def to_env(self) -> str:
        """The spec as the value of :data:`WORKER_SPEC_ENV`."""
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_env(cls, value: str | None) -> WorkerSpec:
        """Read the spec a parent process wrote.

        :raises ValueError: the variable is missing or not a spec.
        """
        if not value:
            raise ValueError(f"{WORKER_SPEC_ENV} is not set: worker processes are started by "
                             "`knowcode serve --workers N`")
        try:
            return cls(**json.loads(value))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{WORKER_SPEC_ENV} is not a worker spec: {err}") from None


def create_worker_app() -> FastAPI:
    """The application of one worker process of ``knowcode serve --workers N`` (a uvicorn factory).

    Each worker opens the repository read-only: the parent process indexed it before starting the
    workers, and it alone re-indexes (``--watch``); a worker's ``POST /reload`` indexes too, under the
    store's writer lock, so one run writes at a time. Every worker sees each new state once it commits.

    :return: the ASGI application.
    :raises ValueError: the worker spec is missing or invalid.
    """
    from knowcode.api_guard import TOKEN_ENV

    spec = WorkerSpec.from_env(os.environ.get(WORKER_SPEC_ENV))
    engine = KnowCode.from_path(spec.root, store=spec.store, config=spec.config)
    token = os.environ.get(TOKEN_ENV) if spec.auth else None
    return create_app(engine, token=token, index_on_first_use=False)


def run(engine: KnowCode, *, token: str | None, host: str, port: int, watch: bool, workers: int,
        config_file: Path | None, limit_concurrency: int) -> None:
    """Serve the API until SIGTERM or Ctrl-C: in this process (`workers` 1), or in `workers` processes
    sharing one socket while this one watches and indexes (the only writer).

    :param engine: the writing facade, already indexed.
    :param token: the bearer token (None: no auth, loopback only).
    :param host: the address to bind.
    :param port: the TCP port.
    :param watch: re-index as files change.
    :param workers: server processes (>= 1).
    :param config_file: the explicit config file, for the workers to read as this process did.
    :param limit_concurrency: connections each process accepts (503 beyond them).
    :raises ValueError: workers < 1.
    """
    import uvicorn

    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    options: dict[str, Any] = {"host": host, "port": port, "log_level": "warning", "access_log": False,
                               "limit_concurrency": limit_concurrency, "server_header": False}
    if workers == 1:
        uvicorn.run(create_app(engine, token=token, watch=watch), **options)
        return
    from knowcode.watcher import Watcher

    spec = WorkerSpec(str(engine.root), str(engine.store_dir),
                      str(config_file.resolve()) if config_file is not None else None, token is not None)
    os.environ[WORKER_SPEC_ENV] = spec.to_env()  # the spawned workers inherit it
    watcher = Watcher(engine.root, engine.store_dir, engine.index) if watch else None
    if watcher is not None:
        watcher.start()
    try:
        uvicorn.run("knowcode.api:create_worker_app", factory=True, workers=workers, **options)
    finally:
        if watcher is not None:
            watcher.stop()
        engine.close()
