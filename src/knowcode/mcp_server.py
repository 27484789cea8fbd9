"""`knowcode mcp`: KnowCode's tools for AI coding agents, over the Model Context Protocol.

Built on the official ``mcp`` SDK, major version 2 (``mcp.server.mcpserver.MCPServer``), imported only
when the server starts, so the rest of KnowCode works without the ``mcp`` extra. Over stdio the SDK
serves the protocol from a private copy of stdout and points the process's own stdout at stderr, so
nothing but protocol can reach the client; logs go to stderr. Streamable HTTP binds loopback only.

Each repository has one writing :class:`~knowcode.engine.KnowCode` facade and a
:class:`~knowcode.readers.ReaderPool`: tool calls run side by side, each on a read-only facade of its
own, reading one committed state of the index (``ask_codebase`` borrows one only while it builds a
bundle, not while a model answers). The index is built on first use, and every call first brings it
up to date (only changed files are parsed); a change tracker (:class:`~knowcode.watcher.Watcher`
without a callback) records which files change, so an unchanged tree costs a call nothing, and
without a working tracker the tree is walked at most every ``[server] recheck_interval_seconds``.
With ``--watch`` each repository is indexed at start and then re-indexed in the background as files
change, while calls go on reading the last complete index. Every tool's result carries
``indexed_at`` (when the index it was answered from was built, epoch seconds) and
``pending_changes`` (changed paths seen that are not in that index: with ``--watch``, the batch being
indexed now).
Tool failures reach the agent as error text, never as a crash of the server.
"""

# No `from __future__ import annotations` here: the SDK reads the tools' parameter annotations at run
# time, and they name types imported lazily inside build_server.

import dataclasses
import hashlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from knowcode import render
from knowcode.analysis.call_graph import MAX_DEPTH
from knowcode.config import AppConfig
from knowcode.engine import KnowCode
from knowcode.errors import KnowCodeError
from knowcode.indexing import IndexReport
from knowcode.readers import ReaderPool, auto_readers
from knowcode.safety import MAX_QUERY_CHARS, check_text, split_host

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    from knowcode.watcher import Watcher

logger = logging.getLogger(__name__)

MCP_REQUIREMENT = "mcp>=2.3,<3"  # the SDK major version this module is written against (pyproject: mcp extra)
INSTALL_HINT = 'pip install "knowcode[mcp]"'
SERVER_NAME = "knowcode"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})  # streamable HTTP has no auth: loopback only
DEFAULT_HTTP_PORT = 8765
MAX_TARGET_CHARS = 1000  # an entity id, qualified name or path[:line]
MAX_LISTED = 20  # paths per list in index_status (changed, skipped, failed): the counts are complete
# The first call waits at most this long for the change tracker's watches to be set up (a few ms on a
# 5k-file tree), so no change between its walk and the watch goes unseen; past it the call goes on
# and the tracker's changes are taken as they come.
TRACKER_READY_SECONDS = 5.0

T = TypeVar("T")

# Tool descriptions: the agent pays for them on every turn, so each says what it returns in one line.
DESCRIPTIONS = {
    "search_codebase": "Ranked code for a query (words, identifier, \"exact name\" or a whole bug "
                       "report): path, lines, entity, score per hit; no source text; `across` searches "
                       "the shared [backend] instead.",
    "retrieve_context_for_query": "Token-budgeted Markdown context for a question: the relevant code, "
                                  "signatures and relations, with a sufficiency score.",
    "get_entity_context": "One entity's source, signature, docstring, members, callers, callees, bases, "
                          "subclasses, importers.",
    "trace_calls": "Call graph around an entity: nodes with path:lines, and call edges.",
    "impact": "What a change to an entity affects: direct and transitive dependents (callers, "
              "subclasses, importers) and affected files.",
    "index_status": "Index freshness and totals: files changed since indexing, last update, languages, "
                    "counts, skipped and failed files.",
    "ask_codebase": "An answer with sources, from the index when verified, else the user's configured "
                    "LLM (none configured: no model is called; route \"none\" and the code found).",
}


class MissingExtraError(KnowCodeError):
    """The ``mcp`` SDK is not installed."""


@dataclass
class Repository:
    """One served repository: its writing facade, the readers its calls run on, how it notices changes."""

    name: str
    engine: KnowCode  # the writer: indexing runs here, under `write_lock`
    readers: ReaderPool  # every tool call runs on one of these, side by side
    write_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    last_update: IndexReport | None = None
    last_update_at: float | None = None
    watcher: "Watcher | None" = None  # --watch: re-indexes in the background
    tracker: "Watcher | None" = None  # the default: records changes; the next call re-indexes them
    checked_at: float | None = None  # no running tracker: when the tree was last walked (monotonic)


def _store_for(root: Path, store: Path | None, several: bool) -> Path | None:
    """One store folder per repository: `store` itself for one, a subfolder per root for several."""
    if store is None or not several:
        return store
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    return store / f"{root.name or 'root'}-{digest}"


class Repositories:
    """The repositories one server answers for; the first is the default."""

    def __init__(self, repositories: list[Repository]) -> None:
        if not repositories:
            raise ValueError("no repository to serve: pass --repo PATH")
        self.items = repositories

    @classmethod
    def open(cls, roots: list[Path], store: Path | None = None,
             config: AppConfig | Path | None = None) -> "Repositories":
        """Open each root (nothing is indexed until a tool asks).

        :param roots: repository folders, the default first; duplicates are dropped.
        :param store: the index folder (a subfolder per repository when there are several).
        :param config: settings, or a config file; default: each repository's own.
        :return: the repositories.
        :raises FileNotFoundError: a root or the config file does not exist.
        :raises NotADirectoryError: a root is not a folder.
        :raises ValueError: no root, or an invalid config file.
        """
        unique = list(dict.fromkeys(Path(root).expanduser().resolve() for root in roots))
        engines = [KnowCode.from_path(root, store=_store_for(root, store, len(unique) > 1), config=config)
                   for root in unique]
        names = [engine.root.name or str(engine.root) for engine in engines]
        clashes = {name for name in names if names.count(name) > 1}
        return cls([Repository(str(engine.root) if name in clashes else name, engine,
                               ReaderPool(engine, auto_readers(engine.config.server.query_threads)))
                    for name, engine in zip(names, engines, strict=True)])

    def select(self, repo: str | None) -> Repository:
        """The repository a tool's `repo` argument names (by name or path); the first when None.

        :raises ValueError: the argument names none of the served repositories.
        """
        if repo is None or not repo.strip():
            return self.items[0]
        text = check_text(repo.strip(), "repo", MAX_TARGET_CHARS)
        for item in self.items:
            if text in (item.name, str(item.engine.root)):
                return item
        try:
            resolved = Path(text).expanduser().resolve()
        except (OSError, RuntimeError):
            resolved = None
        for item in self.items:
            if resolved == item.engine.root:
                return item
        served = ", ".join(f"{item.name} ({item.engine.root})" for item in self.items)
        raise ValueError(f"unknown repository {repo!r}: this server answers for {served}")

    def call(self, repo: str | None, work: Callable[[KnowCode], T]) -> tuple[T, dict[str, Any]]:
        """Bring the chosen repository's index up to date, then run `work` on a reader of its own.

        :return: what `work` returned, and the freshness of the index state it read (`indexed_at`,
            `pending_changes`).
        """
        item = self.select(repo)
        self._refresh(item)
        with item.readers.borrow() as reader:
            result = work(reader)
            indexed_at = reader.indexed_at()
        return result, self._freshness(item, indexed_at)

    def ask(self, repo: str | None, question: str, task_type: str) -> str:
        """Answer a question about the chosen repository; the `ask` document as compact JSON, with the
        index's freshness added.

        A reader is borrowed while each bundle is built, not during model calls: a model may take a
        minute, and the other tools keep answering meanwhile.

        :raises ValueError: an unknown repository, an empty question or an unknown task type.
        :raises StoreError: the index cannot be read.
        """
        item = self.select(repo)
        self._refresh(item)
        answer = item.engine.ask(question, task_type, lend=item.readers.borrow)
        with item.readers.borrow() as reader:
            indexed_at = reader.indexed_at()
        return render.compact_json({**render.answer_data(answer), **self._freshness(item, indexed_at)})

    def _refresh(self, item: Repository) -> None:
        """Bring the index up to date before a call (a watched repository is left to its watcher).

        The tracker says whether anything changed, so an unchanged tree costs no walk. The first call
        indexes (a no-op run on a current index); without a running tracker the tree is walked at
        most every ``[server] recheck_interval_seconds``.
        """
        if item.watcher is not None:
            return
        with item.write_lock:
            tracker = item.tracker
            if tracker is not None and item.last_update is not None and tracker.healthy:
                paths = tracker.take()
                if paths:
                    try:
                        self._record(item, item.engine.index())
                    except BaseException:
                        tracker.restore(paths)  # still pending: the next call tries again
                        raise
                return
            if tracker is not None and item.last_update is None:
                # Every change after this is seen: the walk below covers the ones before it.
                tracker.wait_ready(TRACKER_READY_SECONDS)
                tracker.take()
            now = time.monotonic()
            interval = item.engine.config.server.recheck_interval_seconds
            if item.last_update is None:
                self._record(item, item.engine.index())
            elif item.checked_at is None or now - item.checked_at >= interval:
                report = item.engine.refresh()
                if report is not None:
                    self._record(item, report)
            else:
                return
            item.checked_at = now

    def answer(self, repo: str | None, work: Callable[[KnowCode], Any]) -> str:
        """Run `work` as :meth:`call` does; its document (a dict or a dataclass) as compact JSON, with
        the index's freshness (`indexed_at`, `pending_changes`) added."""
        data, freshness = self.call(repo, work)
        value = dataclasses.asdict(data) if dataclasses.is_dataclass(data) and not isinstance(data, type) \
            else data
        return render.compact_json({**value, **freshness})

    @staticmethod
    def _freshness(item: Repository, indexed_at: float | None) -> dict[str, Any]:
        """How current an answer is: when its index was built, and how many changed paths it lacks."""
        watching = item.watcher if item.watcher is not None else item.tracker
        pending = watching.pending if watching is not None and watching.healthy else 0
        return {"indexed_at": indexed_at, "pending_changes": pending}

    def reindex(self, item: Repository) -> None:
        """Index a watched repository; calls read the new state once it commits (the watcher's callback)."""
        with item.write_lock:
            self._record(item, item.engine.index())

    def _record(self, item: Repository, report: IndexReport) -> None:
        item.last_update, item.last_update_at = report, time.time()
        logger.info("%s: indexed %d files (%d unchanged) in %.2fs", item.name, report.parsed_files,
                    report.unchanged, report.seconds)

    def start_watching(self) -> None:
        """Index every repository now, then re-index each in the background whenever its files change.

        :raises ImportError: ``watchfiles`` is not installed.
        """
        from knowcode.watcher import Watcher

        for item in self.items:
            with item.write_lock:
                self._record(item, item.engine.index())

            def on_change(item: Repository = item) -> None:
                self.reindex(item)

            item.watcher = Watcher(item.engine.root, item.engine.store_dir, on_change,
                                   name=f"knowcode-watch-{item.name}")
            item.watcher.start()
            if item.engine.changed_since_index():  # changed while the first run indexed
                self.reindex(item)

    def start_tracking(self) -> None:
        """Record each repository's changes as they happen, so a call re-indexes only after one (the
        default without ``--watch``). Without ``watchfiles`` the tree is walked at most every
        ``[server] recheck_interval_seconds`` instead, as it is when a watch cannot be set up."""
        try:
            import watchfiles  # noqa: F401 - only checks that it is installed

            from knowcode.watcher import Watcher
        except ImportError:
            logger.warning("watchfiles is not installed: changes are looked for by walking the tree, at "
                           "most every [server] recheck_interval_seconds (%s)", INSTALL_HINT)
            return
        for item in self.items:
            item.tracker = Watcher(item.engine.root, item.engine.store_dir, None,
                                   name=f"knowcode-track-{item.name}")
            item.tracker.start()

    def stop_watching(self) -> None:
        """Stop every watcher and tracker (waiting for a re-index in progress), then close the readers."""
        for item in self.items:
            for watching in (item.watcher, item.tracker):
                if watching is not None:
                    watching.stop()
            item.readers.close()

    def status(self, repo: str | None) -> str:
        """The `index_status` document of one repository, as compact JSON."""
        item = self.select(repo)

        def gather(engine: KnowCode) -> dict[str, Any]:
            stats = engine.stats()
            changed = engine.changed_since_index()
            update = item.last_update
            now = time.time()
            return {
                "repository": item.name, "root": stats.root, "store": stats.store,
                "repositories": [i.name for i in self.items],
                "indexed_at": stats.indexed_at, "watching": item.watcher is not None,
                "index_age_seconds": round(now - stats.indexed_at, 1) if stats.indexed_at else None,
                "files_changed_since_index": len(changed), "changed_files": list(changed[:MAX_LISTED]),
                "last_update": None if update is None else {
                    "seconds_ago": round(now - (item.last_update_at or now), 1),
                    "added": len(update.added), "changed": len(update.changed),
                    "deleted": len(update.deleted), "renamed": len(update.renamed),
                    "parsed_files": update.parsed_files, "seconds": round(update.seconds, 3)},
                "files": stats.files, "lines": stats.lines, "languages": stats.languages,
                "entities": stats.entities, "relationships": stats.relationships, "chunks": stats.chunks,
                "unresolved_references": stats.unresolved_references, "skipped_files": stats.skipped_files,
                "skipped": dict(list((update.skipped if update else {}).items())[:MAX_LISTED]),
                "errors": dict(list((update.failed if update else {}).items())[:MAX_LISTED]),
            }

        return self.answer(repo, gather)


def _require_sdk() -> None:
    try:
        import mcp.server.mcpserver  # noqa: F401 - only checks that the extra is installed
    except ImportError as err:
        raise MissingExtraError(f"the MCP server needs the `mcp` extra ({MCP_REQUIREMENT}): "
                                f"{INSTALL_HINT}") from err


def build_server(repos: Repositories) -> "MCPServer":
    """The MCP server with KnowCode's seven tools, answering for `repos`.

    :param repos: the served repositories.
    :return: the server, not yet running.
    :raises MissingExtraError: the ``mcp`` SDK is not installed.
    """
    _require_sdk()
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool
    from pydantic import Field

    from knowcode import __version__

    tools: list[Tool] = []

    def answer(work: Callable[[], str]) -> str:
        """Run a tool body; expected failures reach the agent as their message."""
        try:
            return work()
        except (ValueError, LookupError, OSError, KnowCodeError) as err:
            raise ToolError(str(err)) from err

    def tool(fn: Callable[..., str]) -> Callable[..., str]:
        made = Tool.from_function(fn, description=DESCRIPTIONS[fn.__name__], structured_output=False)
        _drop_titles(made.parameters)
        _nullable_as_type_list(made.parameters)
        tools.append(made)
        return fn

    Repo = Annotated[str | None, Field(description="Repository name or path; default: the first.")]
    Depth = Annotated[int, Field(ge=1, le=MAX_DEPTH)]
    Target = Annotated[str, Field(description="Entity id, qualified name, name, or path:line.")]
    Task = Literal["auto", "explain", "debug", "extend", "review", "locate", "general"]

    def query_text(query: str) -> str:
        return check_text(query, "query", MAX_QUERY_CHARS)

    def target_text(target: str) -> str:
        return check_text(target, "target", MAX_TARGET_CHARS)

    Across = Annotated[list[str] | None, Field(description="Its repositories to search; []: all.")]

    @tool
    def search_codebase(query: str, limit: Annotated[int, Field(ge=1, le=100)] = 10,
                        repo: Repo = None, across: Across = None) -> str:
        def run(kc: KnowCode) -> dict[str, Any]:
            text = query_text(query)
            if across is None:
                return render.search_data(query, kc.search(text, limit=limit))
            names = [check_text(name, "across", MAX_TARGET_CHARS) for name in across]
            return render.cross_repo_data(kc.search_repositories(text, limit, names or None))

        return answer(lambda: repos.answer(repo, run))

    @tool
    def retrieve_context_for_query(
        query: str,
        max_tokens: Annotated[int, Field(ge=50, le=200_000)] = 6000,
        task_type: Task = "auto",
        limit_entities: Annotated[int, Field(ge=1, le=50)] = 3,
        expand_deps: bool = True,
        verbosity: Literal["minimal", "standard", "verbose"] = "minimal",
        repo: Repo = None,
    ) -> str:
        def run(kc: KnowCode) -> dict[str, Any]:
            bundle = kc.context(query_text(query), max_tokens=max_tokens, limit_entities=limit_entities,
                                task_type=task_type, verbosity=verbosity, expand_deps=expand_deps)
            return render.context_data(bundle, bundle.verbosity)

        return answer(lambda: repos.answer(repo, run))

    @tool
    def get_entity_context(entity_id_or_name: Target, repo: Repo = None) -> str:
        return answer(lambda: repos.answer(
            repo, lambda kc: kc.entity_context(target_text(entity_id_or_name))))

    @tool
    def trace_calls(target: Target, direction: Literal["callers", "callees", "both"] = "both",
                    depth: Depth = 2, repo: Repo = None) -> str:
        return answer(lambda: repos.answer(
            repo, lambda kc: kc.trace_calls(target_text(target), direction=direction, depth=depth)))

    @tool
    def impact(target: Target, depth: Depth = 3, repo: Repo = None) -> str:
        return answer(lambda: repos.answer(repo, lambda kc: kc.impact(target_text(target), depth=depth)))

    @tool
    def index_status(repo: Repo = None) -> str:
        return answer(lambda: repos.status(repo))

    @tool
    def ask_codebase(question: str, task_type: Task = "auto", repo: Repo = None) -> str:
        return answer(lambda: repos.ask(repo, check_text(question, "question", MAX_QUERY_CHARS), task_type))

    return MCPServer(SERVER_NAME, version=__version__, log_level="WARNING", tools=tools,
                     instructions="Code search, context, call graphs, impact and answers for the "
                                  "indexed repositories; indexes are kept up to date automatically.")


def _drop_titles(schema: dict[str, Any]) -> None:
    """Remove the titles pydantic derives from parameter names: the agent pays for every schema token."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


def _nullable_as_type_list(schema: dict[str, Any]) -> None:
    """Write pydantic's ``anyOf: [{type: T, ...}, {type: null}]`` as the equivalent, shorter JSON Schema
    ``type: [T, "null"]`` (the agent pays for every schema token; the server validates by the signature)."""
    for name, prop in schema.get("properties", {}).items():
        options = prop.get("anyOf")
        if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
            continue
        other = next(o for o in options if o != {"type": "null"})
        if not isinstance(other.get("type"), str):
            continue
        rest = {k: v for k, v in prop.items() if k != "anyOf"}
        schema["properties"][name] = {**other, "type": [other["type"], "null"], **rest}


def _configure_logging() -> None:
    """Logs to stderr only (stdout carries the protocol)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("knowcode").setLevel(logging.INFO)


def transport_security(allowed_hosts: Sequence[str]) -> "TransportSecuritySettings":
    """The SDK's Host and Origin checks (DNS rebinding): loopback on any port, as the SDK allows by
    default, plus ``[server] allowed_hosts`` (the first repository's) as the HTTP API reads them: a name
    on any port, or ``name:port`` on that port only.

    :param allowed_hosts: the configured entries (checked by the config loader).
    :return: the settings for the streamable HTTP transport.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    for entry in allowed_hosts:
        parsed = split_host(entry)
        if parsed is None:
            continue
        name, port = parsed
        name = f"[{name}]" if ":" in name else name  # an IPv6 address, as a Host header writes it
        hosts += [f"{name}:{port}"] if port is not None else [name, f"{name}:*"]
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def serve(roots: list[Path], store: Path | None = None, config: Path | None = None,
          transport: str = "stdio", host: str = "127.0.0.1", port: int = DEFAULT_HTTP_PORT,
          watch: bool = False) -> None:
    """Run the MCP server until the client disconnects (stdio) or the process is stopped (HTTP).

    :param roots: repository folders; the first is the default of the tools' `repo` argument.
    :param store: the index folder (a subfolder per repository when there are several).
    :param config: a config file; default: each repository's own.
    :param transport: stdio or http (streamable HTTP at ``/mcp``).
    :param host: the HTTP address, loopback only.
    :param port: the HTTP port.
    :param watch: index every repository now, then re-index it in the background as files change.
    :raises MissingExtraError: the ``mcp`` SDK (or, with `watch`, ``watchfiles``) is not installed.
    :raises ValueError: an unknown transport, a non-loopback host, or a bad port.
    :raises FileNotFoundError: a root does not exist.
    """
    if transport not in ("stdio", "http"):
        raise ValueError(f"transport must be stdio or http, got {transport!r}")
    if transport == "http" and host not in LOOPBACK_HOSTS:
        raise ValueError(f"the MCP HTTP transport has no authentication, so it binds loopback only "
                         f"({', '.join(sorted(LOOPBACK_HOSTS))}), not {host!r}")
    if not 0 < port < 65536:
        raise ValueError(f"port must be 1-65535, got {port}")
    _require_sdk()
    _configure_logging()
    if watch:
        try:
            import watchfiles  # noqa: F401 - only checks that the extra is installed
        except ImportError as err:
            raise MissingExtraError(f"--watch needs watchfiles: {INSTALL_HINT}") from err
    repos = Repositories.open(roots or [Path()], store, config)
    server = build_server(repos)
    stopped = False
    if transport == "stdio" and threading.current_thread() is threading.main_thread():
        # asyncio's own Ctrl-C handler only cancels the main task, which then waits forever for the
        # SDK's stdin reader; a plain KeyboardInterrupt stops the server as SIGTERM does.
        signal.signal(signal.SIGINT, _interrupt)
    try:
        logger.info("serving %s over %s", ", ".join(str(r.engine.root) for r in repos.items), transport)
        if watch:
            repos.start_watching()
        else:
            repos.start_tracking()
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port,
                       transport_security=transport_security(repos.items[0].engine.config.server.allowed_hosts))
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (the CLI raises it alike): a requested stop, exit 0
        logger.info("stopped")
        stopped = True
    finally:
        repos.stop_watching()
        for item in repos.items:
            item.engine.close()
    if stopped and transport == "stdio":
        # The SDK reads stdin on a worker thread that no signal interrupts, and the interpreter would
        # wait for it at exit until the client closed the pipe: everything is closed, so leave now.
        logging.shutdown()
        sys.stderr.flush()
        os._exit(0)
