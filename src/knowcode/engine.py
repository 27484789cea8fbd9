"""The KnowCode facade: one repository, its index store and its configuration."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from knowcode.analysis import call_graph
from knowcode.analysis.entity_context import entity_context
from knowcode.analysis.token_counter import TokenCounter, default_counter
from knowcode.config import AppConfig, default_store_dir, load_config, rate_limit_path
from knowcode.errors import StoreError, StoreLockedError
from knowcode.indexing import IndexReport, index_repository, scan
from knowcode.indexing.indexer import CONTENT_GENERATION_KEY
from knowcode.models import (
    Answer,
    CallTrace,
    ContextBundle,
    EntityContext,
    ImpactReport,
    IndexStats,
    SearchResults,
    TaskType,
    TraceDirection,
    Verbosity,
)
from knowcode.paths import confine_target
from knowcode.progress import ProgressCallback, no_progress
from knowcode.retrieval.cross_encoders import create_cross_encoder
from knowcode.retrieval.embeddings import EmbeddingProvider, create_embedding_provider
from knowcode.retrieval.orchestrator import RetrievalOrchestrator, RetrievalResult, validate_query
from knowcode.retrieval.reranker import CrossEncoder
from knowcode.retrieval.search_index import (
    SEARCH_GENERATION_KEY,
    SearchIndex,
    load_search_index,
    update_search_index,
)
from knowcode.storage import Store
from knowcode.storage.lock import writer_lock
from knowcode.telemetry import TELEMETRY_FILE_NAME, TelemetryLog

if TYPE_CHECKING:
    from knowcode.evals.routing_eval import RoutingEvalReport
    from knowcode.llm.agent import Rung
    from knowcode.llm.routing_policy import RoutingPolicy
    from knowcode.retrieval.cross_repo import CrossRepoResults, CrossRepoSearch
    from knowcode.search_backend import BackendSession


def _check_root(root: Path) -> Path:
    if not root.exists():
        raise FileNotFoundError(f"repository path does not exist: {root}")
    if not root.is_dir():
        raise NotADirectoryError(f"repository path is not a folder: {root}")
    return root.resolve()


def _task_type(query: str, task_type: TaskType | str) -> tuple[TaskType, float]:
    """The task type the caller named, with confidence 1.0; for "auto", the classifier's choice.

    :raises ValueError: an unknown task type.
    """
    from knowcode.llm.query_classifier import classify, parse_task_type  # the facade composes stages

    chosen = task_type if isinstance(task_type, TaskType) else parse_task_type(task_type)
    if chosen is not None:
        return chosen, 1.0
    classification = classify(query)
    return classification.task_type, classification.confidence


# Meta rows a run rewrites when it changed anything, even what no search index reads (the list of
# skipped files, a touched file's mtime): a reader that reloaded its search index whenever they changed
# would reload for nothing.
_VOLATILE_META = frozenset({"indexed_at"})


def _index_key(meta: dict[str, str]) -> frozenset[tuple[str, str]]:
    """What identifies one state of the index: every meta row but the volatile ones (the search folder,
    the content generation, the search parameters... whatever the indexer records)."""
    return frozenset((key, value) for key, value in meta.items() if key not in _VOLATILE_META)


# A reader that finds a run between its two commits (rows, then search index) waits this long at most
# for the search index: a BM25 rebuild of 60k chunks takes a few seconds on 2 busy cores (index_speed).
# Past it the query goes on, ranking with the previous search index (rows of changed files may miss).
PUBLISH_WAIT_SECONDS = 10.0
# Caller totals a read-only facade keeps (see KnowCode.context): only entities with ten or more
# caller names are counted (1,090 of the 102k entities of a 59k-chunk index); ~1 MB when full.
CALLER_COUNTS_KEPT = 8192
PUBLISH_POLL_SECONDS = 0.01  # how often it looks again meanwhile


def _publishing(meta: dict[str, str]) -> bool:
    """Whether a run committed its rows but not yet the search index built from them."""
    search = meta.get(SEARCH_GENERATION_KEY)
    return search is not None and search != meta.get(CONTENT_GENERATION_KEY, "0")


def _writer_running(store_dir: Path) -> bool:
    """Whether an indexing run holds the store now (a state between its commits is then temporary; a
    run that died there left it for the next run to finish, and nobody should wait for it)."""
    try:
        with writer_lock(store_dir, 0):
            return False
    except StoreLockedError:
        return True
    except StoreError:  # no lock file can be made (a read-only store): no run can be writing
        return False


# Index states whose search index stays loaded for the read-only facades: the newest, and the one
# before it for a reader whose read transaction began just before a re-index committed.
SHARED_STATES = 2


class _SharedSearchIndex:
    """The search indexes of the newest states read, each loaded once and shared by the read-only
    facades of one process (a search index is only read: BM25 and vector scans keep no state), so N
    readers hold one copy."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[frozenset[tuple[str, str]], SearchIndex] = {}

    def get(self, store: Store, store_dir: Path, key: frozenset[tuple[str, str]]) -> SearchIndex:
        """The search index of the state `key`, which `store` (inside a read transaction) shows.

        :raises StoreError: no search index has been built yet.
        :raises OSError: its folder was deleted (a newer state replaced it): read again.
        """
        with self._lock:
            index = self._loaded.get(key)
            if index is None:
                index = load_search_index(store, store_dir)
                self._loaded[key] = index
                while len(self._loaded) > SHARED_STATES:
                    del self._loaded[next(iter(self._loaded))]  # the oldest state
            return index


class KnowCode:
    """A repository and its index; the index is built or brought up to date on first use."""

    def __init__(self, root: Path, store_dir: Path, config: AppConfig,
                 progress: ProgressCallback = no_progress) -> None:
        self.root = root
        self.store_dir = store_dir
        self.config = config
        self.progress = progress  # told of indexing and evaluation, however they were started
        self._fresh = False
        self._embedder: EmbeddingProvider | None = None
        self._embedder_loaded = False
        self._cross_encoder: CrossEncoder | None = None
        self._cross_encoder_loaded = False
        self._reader: Store | None = None
        self._orchestrator: RetrievalOrchestrator | None = None
        # Read-only facades (see reader()): the index state their orchestrator was built for, the
        # search index they share with their siblings, and whether a read transaction is open.
        self._providers_lock = threading.Lock()  # readers made on several threads share the providers
        self._shared: _SharedSearchIndex | None = None
        self._readers_share: _SharedSearchIndex | None = None  # what this facade's readers share
        self._loaded_key: frozenset[tuple[str, str]] | None = None
        self._in_snapshot = False
        # A read-only facade's caller totals of popular entities, counted on the state its orchestrator
        # was built for and dropped with it (counting ~6k call rows cost ~4 ms of a ~15 ms bundle).
        self._caller_counts: dict[str, int] = {}
        self._backend: BackendSession | None = None  # [backend] kind = "milvus": the shared backend
        self._cross_repo: CrossRepoSearch | None = None
        if config.backend.kind != "embedded":
            from knowcode.search_backend import BackendSession  # pymilvus only when configured

            self._backend = BackendSession(config, root, store_dir)

    @classmethod
    def from_path(cls, root: str | Path, store: str | Path | None = None,
                  config: AppConfig | str | Path | None = None,
                  progress: ProgressCallback = no_progress) -> KnowCode:
        """Open a repository.

        :param root: the repository folder.
        :param store: the index folder; default: a per-user cache folder keyed by the root's path.
        :param config: settings, or a config file to read them from; default: the repository's own.
        :param progress: told of long work (indexing, also when a query starts it; evaluation), by
            phase; see :mod:`knowcode.progress`.
        :return: the facade; nothing is read or indexed until first use.
        :raises FileNotFoundError: the root or the config file does not exist.
        :raises NotADirectoryError: the root is not a folder.
        :raises ValueError: the config file is invalid.
        """
        resolved = _check_root(Path(root))
        if not isinstance(config, AppConfig):
            config = load_config(resolved, Path(config) if config is not None else None)
        store_dir = Path(store).resolve() if store is not None else default_store_dir(resolved)
        return cls(resolved, store_dir, config, progress)

    def index(self, progress: ProgressCallback | None = None, *,
              rebuild_vectors: bool = False) -> IndexReport:
        """Index the repository, parsing only files that changed since the last run.

        The search indexes (BM25, vectors) are rebuilt when anything changed; only new chunks are
        embedded. The whole run holds the store's writer lock: a second run on the same store waits
        for the first, then finds its work done.

        :param progress: told of each phase (scan, parse, link, search index, embeddings); default: the
            facade's own.
        :param rebuild_vectors: embed every chunk again (after changing the embedding model).
        :return: what changed; its `seconds` cover the whole run, search indexes included.
        :raises StoreError: the store cannot be opened or written.
        :raises StoreLockedError: another run held the store for longer than index_lock_timeout_seconds.
        :raises EmbeddingMismatchError: the index holds vectors of another model.
        """
        started = time.perf_counter()  # the whole run, waiting for another run's lock included
        progress = progress if progress is not None else self.progress
        # The lock comes before the store is even opened, so this run reads the state the previous
        # holder committed (it may have made the schema, or indexed these very files).
        with writer_lock(self.store_dir, self.config.index_lock_timeout_seconds):
            store = Store.open(self.store_dir, mapped=False)
            try:
                report = index_repository(self.root, store, max_file_bytes=self.config.max_file_bytes,
                                          workers=self.config.parse_workers, progress=progress)
                update_search_index(store, self.store_dir, embedder=self.embedder(),
                                    k1=self.config.bm25_k1, b=self.config.bm25_b,
                                    rebuild_vectors=rebuild_vectors, progress=progress)
                if self._backend is not None:
                    self._backend.sync(store, self.embedder())
            finally:
                store.close()
        self._fresh = True
        self._drop_orchestrator()  # the next query loads the new generation
        return dataclasses.replace(report, seconds=time.perf_counter() - started)

    def _drop_orchestrator(self) -> None:
        if self._orchestrator is not None:
            self._orchestrator.close()
        self._orchestrator = None
        self._caller_counts = {}

    def embedder(self) -> EmbeddingProvider | None:
        """The configured embedding provider (None when vectors are switched off), created once."""
        with self._providers_lock:
            return self._embedder_once()

    def _embedder_once(self) -> EmbeddingProvider | None:
        if not self._embedder_loaded:
            config = self.config
            self._embedder = create_embedding_provider(
                config.embedding_provider, model=config.embedding_model or None,
                base_url=config.embedding_base_url or None, api_key_env=config.embedding_api_key_env or None,
                dimension=config.embedding_dimension or None)
            self._embedder_loaded = True
        return self._embedder

    def cross_encoder(self) -> CrossEncoder | None:
        """The configured reranking provider (None: signal scoring only), created once."""
        with self._providers_lock:
            return self._cross_encoder_once()

    def _cross_encoder_once(self) -> CrossEncoder | None:
        if not self._cross_encoder_loaded:
            config = self.config
            self._cross_encoder = create_cross_encoder(
                config.reranker_provider, model=config.reranker_model or None,
                base_url=config.reranker_base_url or None, api_key_env=config.reranker_api_key_env or None)
            self._cross_encoder_loaded = True
        return self._cross_encoder

    def orchestrator(self) -> RetrievalOrchestrator:
        """The retrieval orchestrator over the current index (indexing first if needed; a read-only
        facade follows the index instead: see :meth:`reader`)."""
        self.ensure_indexed()
        if self._shared is not None and not self._in_snapshot:  # a snapshot followed when it began
            self._follow()
        if self._orchestrator is None:
            if self._reader is None:
                self._reader = Store.open(self.store_dir, create=False)
            index = (self._shared.get(self._reader, self.store_dir, self._loaded_key)
                     if self._shared is not None and self._loaded_key is not None
                     else load_search_index(self._reader, self.store_dir))
            config = self.config
            if self._backend is not None:
                index = self._backend.index_for(index, self.embedder())
            self._orchestrator = RetrievalOrchestrator(
                self._reader, index, self.embedder(),
                alpha=config.hybrid_alpha, top_k_multiplier=config.reranker_top_k_multiplier,
                signals=config.ranking, cross_encoder=self.cross_encoder(), feedback=config.query_feedback,
                title_repeats=config.report_title_repeats,
                parallel_legs=True if self._backend is not None else None)  # its legs wait on the backend
        return self._orchestrator

    @property
    def read_only(self) -> bool:
        """Whether this facade only reads (made by :meth:`reader`): it never indexes."""
        return self._shared is not None

    def reader(self) -> KnowCode:
        """A read-only facade over the same store, for one thread at a time; make one per thread.

        It never indexes: before each query it reads which state of the index the store holds and, when
        another facade or process has indexed since, loads the new search index (shared with every
        reader made from this facade, so N readers hold one copy). Queries inside :meth:`snapshot`
        read one committed state from start to end, however many statements they run. It shares this
        facade's embedding and reranking providers (both are safe to call from several threads).

        :return: the reader; :meth:`close` it when done.
        """
        reader = KnowCode(self.root, self.store_dir, self.config)
        with self._providers_lock:
            if self._readers_share is None:
                self._readers_share = _SharedSearchIndex()
            reader._shared = self._readers_share
        reader._fresh = True  # never index: the writer (watcher, reload, `knowcode index`) does
        reader._embedder, reader._embedder_loaded = self.embedder(), True
        reader._cross_encoder, reader._cross_encoder_loaded = self.cross_encoder(), True
        return reader

    def _follow(self) -> None:
        """A read-only facade: drop the orchestrator when the store holds another state of the index."""
        key = _index_key(self._reader_store().meta())
        if key != self._loaded_key:
            self._drop_orchestrator()
            self._loaded_key = key

    @contextmanager
    def snapshot(self) -> Iterator[KnowCode]:
        """Run the block's queries on one committed state of the index (a read-only facade only).

        SQLite's WAL gives a read transaction the database as of its first statement, so a re-index
        that commits meanwhile (its rows, then the meta row naming its search index) is seen by the
        next block, never half by this one. The search index is the one that state names.

        :return: this facade, for the block.
        :raises ValueError: this facade is not read-only (one that indexes cannot hold a read
            transaction open).
        :raises StoreError: the index cannot be read.
        """
        if self._shared is None:
            raise ValueError("snapshot() needs a read-only facade: use KnowCode.reader()")
        if self._in_snapshot:  # nested: already on one state
            yield self
            return
        connection = self._reader_store().connection
        connection.execute("BEGIN")
        self._in_snapshot = True
        try:
            self._load_current(connection)
            yield self
        finally:
            self._in_snapshot = False
            connection.execute("COMMIT")  # reads only: ends the read transaction

    def _load_current(self, connection: sqlite3.Connection) -> None:
        """Follow the snapshot's state and load its search index now.

        A run commits the store's rows first and its search index after them: a state in between
        (:func:`_publishing`) would rank with the previous search index over the new rows, so while
        the run holds the store the snapshot is taken again until the search index is published, for
        at most PUBLISH_WAIT_SECONDS (a run that died in between is not waited for). A state read just
        before a re-index committed may name a search folder that re-index has since deleted: then it
        is read again, once.
        """
        deadline = time.monotonic() + PUBLISH_WAIT_SECONDS
        if _publishing(self._reader_store().meta()) and _writer_running(self.store_dir):
            while _publishing(self._reader_store().meta()) and time.monotonic() < deadline:
                connection.execute("COMMIT")
                time.sleep(PUBLISH_POLL_SECONDS)
                connection.execute("BEGIN")
        try:
            self._follow()
            self.orchestrator()
        except (StoreError, OSError):
            connection.execute("COMMIT")
            connection.execute("BEGIN")
            self._follow()
            self.orchestrator()

    def _reader_store(self) -> Store:
        if self._reader is None:
            self._reader = Store.open(self.store_dir, create=False)
        return self._reader

    def retrieve(self, query: str, *, limit_entities: int = 3, max_tokens: int = 6000,
                 expand_deps: bool = True) -> RetrievalResult:
        """Run the spec's retrieval routing; see :meth:`RetrievalOrchestrator.retrieve`."""
        validate_query(query, limit_entities)
        result = self.orchestrator().retrieve(query, limit_entities=limit_entities, max_tokens=max_tokens,
                                              expand_deps=expand_deps)
        return self._backend.annotate(result) if self._backend is not None else result

    def search_repositories(self, query: str, limit: int = 10,
                            repositories: list[str] | tuple[str, ...] | None = None) -> CrossRepoResults:
        """Ranked code across every repository of the shared backend (``[backend] kind = "milvus"``).

        This repository is indexed (and synced to the backend) first, as for :meth:`search`.

        :param query: words, an identifier, or a "quoted" exact name.
        :param limit: hits wanted (1..1000).
        :param repositories: names to search (``[backend] repository`` or the folder names); None: all.
        :return: hits tagged with their repository, best first.
        :raises ValueError: an empty query, a limit out of range, or an embedded backend.
        :raises BackendError: the backend cannot be reached.
        """
        from knowcode.search_backend import open_cross_repo_search

        validate_query(query, limit)
        self.ensure_indexed()
        if self._cross_repo is None:
            self._cross_repo = open_cross_repo_search(self.config, self.embedder(), self.cross_encoder())
        return self._cross_repo.search(query, limit, list(repositories) if repositories else None)

    def search(self, query: str, limit: int = 10) -> SearchResults:
        """Ranked code for a query: one hit per entity, best first.

        :param query: words, an identifier, or a "quoted" exact name.
        :param limit: hits wanted (1..1000).
        :return: the hits, with `.mode` (exact, hybrid, lexical) and `.errors`.
        :raises ValueError: an empty query or a limit out of range.
        """
        result = self.retrieve(query, limit_entities=limit, expand_deps=False)
        return SearchResults(result.hits, result.mode, result.errors)

    def token_counter(self) -> TokenCounter:
        """The counter context budgets are measured with (setting token_encoding)."""
        return default_counter(self.config.token_encoding)

    def context(self, query: str, max_tokens: int = 6000, limit_entities: int = 3,
                task_type: TaskType | str = "auto", verbosity: Verbosity | str = "minimal",
                expand_deps: bool = True) -> ContextBundle:
        """The smallest bundle of code and relationships that answers a query, within a token budget.

        :param query: the question, words, an identifier, or a "quoted" exact name.
        :param max_tokens: the budget; the bundle's text never counts more tokens (50..200000).
        :param limit_entities: ranked entities wanted (1..1000); their 1-hop callees may follow.
        :param task_type: "auto" (classify the query) or a task type: explain, debug, extend, review,
            locate, general.
        :param verbosity: minimal, standard, verbose or diagnostic; standard and up include raw source
            (as do the debug and review task types).
        :param expand_deps: add the entities' 1-hop callees after them.
        :return: the bundle, with its sufficiency score and side signals.
        :raises ValueError: an empty query, or a budget, limit, task type or verbosity out of range.
        :raises StoreError: the index cannot be read.
        """
        from knowcode.analysis.context_synthesizer import (  # only context needs it: not loaded for search
            parse_verbosity,
            synthesize,
            validate_budget,
        )

        validate_budget(max_tokens)
        validate_query(query, limit_entities)
        chosen_verbosity = parse_verbosity(verbosity)
        chosen_task, confidence = _task_type(query, task_type)
        counter = self.token_counter()
        orchestrator = self.orchestrator()
        result = orchestrator.retrieve(query, limit_entities=limit_entities, max_tokens=max_tokens,
                                       expand_deps=expand_deps)
        # Only a read-only facade knows when the index changes (it follows it before each query); one
        # that indexes may be reading a store another process re-indexed meanwhile.
        if len(self._caller_counts) >= CALLER_COUNTS_KEPT:
            self._caller_counts = {}
        counts = self._caller_counts if self.read_only else None
        return synthesize(result, orchestrator.store, self.root, max_tokens=max_tokens, task_type=chosen_task,
                          task_confidence=confidence, verbosity=chosen_verbosity, counter=counter,
                          caller_counts=counts)

    def ask(self, question: str, task_type: TaskType | str = "auto", *,
            lend: Callable[[], AbstractContextManager[KnowCode]] | None = None) -> Answer:
        """Answer a question about the code (spec: Local-vs-LLM routing).

        The answer is the context bundle itself when the task type is verified for local answers (a
        pinned ``knowcode eval`` artifact) and a bundle on the escalation ladder is sufficient; otherwise
        the configured ``[llm] models`` answer from the bundle, in failover order. One telemetry event is
        written to the index folder unless ``[llm] telemetry = false``.

        :param question: the question.
        :param task_type: "auto" (classify the question) or a task type.
        :param lend: lends the facade each bundle is built with, for that bundle only (a server passes
            its reader pool's borrow, so a model call holds no reader); default: this facade.
        :return: the answer with its route, model, sources, sufficiency and every attempt.
        :raises ValueError: an empty question or an unknown task type.
        :raises StoreError: the index cannot be read.
        """
        from knowcode.llm.agent import smart_answer  # the facade composes stages

        validate_query(question, 1)
        chosen, _ = _task_type(question, task_type)

        def build_bundle(rung: Rung) -> ContextBundle:
            with lend() if lend is not None else nullcontext(self) as kc:
                return kc.context(question, max_tokens=rung.max_tokens, limit_entities=rung.limit_entities,
                                  task_type=chosen, verbosity=rung.verbosity, expand_deps=rung.expand_deps)

        policy = self.routing_policy()  # reads the artifact and the settings, not the index
        llm = self.config.llm
        telemetry = TelemetryLog(self.store_dir / TELEMETRY_FILE_NAME) if llm.telemetry else None
        return smart_answer(question, task_type=chosen, build_bundle=build_bundle, policy=policy, llm=llm,
                            limiter_path=rate_limit_path(), telemetry=telemetry)

    def evaluate(self, query_set: Path) -> RoutingEvalReport:
        """Measure local answering per task type on an annotated query set (``knowcode eval``).

        :param query_set: a JSON list of ``{query, category, relevant, secondary}`` (the public benchmark's
            annotation format).
        :return: the report; :func:`knowcode.evals.write_routing_artifact` turns it into the artifact
            that ``[llm] routing_artifact`` pins.
        :raises FileNotFoundError: the query set does not exist.
        :raises ValueError: the query set is unreadable, not JSON, not a list of valid entries, or empty.
        :raises StoreError: the index cannot be read or written.
        """
        from knowcode import __version__  # knowcode/__init__ imports this module: read at call time
        from knowcode.evals.routing_eval import load_query_set, run_routing_eval

        return run_routing_eval(self, load_query_set(query_set), code_version=__version__,
                                progress=self.progress)

    def routing_policy(self) -> RoutingPolicy:
        """The task types answered locally: only those the pinned, current routing artifact verified.

        :return: the policy and its reason (local answers are off when the artifact is missing, edited
            or stale).
        """
        from knowcode import __version__
        from knowcode.evals.index_version import index_version
        from knowcode.llm.routing_policy import load_routing_policy

        return load_routing_policy(self.config.llm, self.root, index_version=index_version(self),
                                   code_version=__version__)

    def close(self) -> None:
        """Release the read connection (the facade reopens it on the next query)."""
        self._drop_orchestrator()
        self._loaded_key = None
        if self._cross_repo is not None:
            self._cross_repo.close()
        self._cross_repo = None
        if self._backend is not None:
            self._backend.close()  # reconnects on the next query or index run
        if self._reader is not None:
            self._reader.close()
        self._reader = None

    def ensure_indexed(self) -> None:
        """Index once per facade, so the first query sees the current tree."""
        if not self._fresh:
            self.index()

    def open_store(self) -> Store:
        """Open the up-to-date store for reading (the caller closes it)."""
        self.ensure_indexed()
        return Store.open(self.store_dir, create=False)

    @contextmanager
    def _reading(self) -> Iterator[Store]:
        """The up-to-date store, open for the block and closed after it (a read-only facade inside
        :meth:`snapshot`: its own connection, on the snapshot's state)."""
        if self._in_snapshot and self._reader is not None:
            yield self._reader
            return
        store = self.open_store()
        try:
            yield store
        finally:
            store.close()

    def indexed_at(self) -> float | None:
        """When the index this facade reads was built (epoch seconds; inside :meth:`snapshot`, the
        snapshot's), or None before the first run."""
        with self._reading() as store:
            stamp = store.meta().get("indexed_at")
        return float(stamp) if stamp else None

    def stats(self) -> IndexStats:
        """Totals of the index (files, languages, entities, relationships, chunks), and what was left out."""
        with self._reading() as store:
            counts = store.counts()
            meta = store.meta()
            skipped = store.skipped()
        indexed_at = meta.get("indexed_at")
        return IndexStats(root=str(self.root), store=str(self.store_dir),
                          indexed_at=float(indexed_at) if indexed_at else None, skipped=skipped,
                          **counts)  # type: ignore[arg-type]

    def trace_calls(self, target: str, direction: TraceDirection | str = "both", depth: int = 2) -> CallTrace:
        """The call graph around an entity: its callers, its callees, or both.

        :param target: an entity id, a qualified name (``pkg.mod.Class.method``), a unique name, or
            an indexed ``path[:line]`` inside the repository.
        :param direction: callers, callees or both.
        :param depth: calls to follow (1..5); cycles are visited once and results are bounded.
        :return: the root, the nodes reached (root first) and the call edges, with `truncated`.
        :raises ValueError: a bad depth or direction, a target matching no entity or several, or a
            path outside the repository.
        :raises StoreError: the index cannot be read.
        """
        call_graph.validate_depth(depth)
        call_graph.parse_direction(direction)
        target = confine_target(self.root, target)
        with self._reading() as store:
            return call_graph.trace_calls(store, target, direction, depth)

    def impact(self, target: str, depth: int = 3) -> ImpactReport:
        """What a change to an entity can affect: callers, subclasses, importers, transitively.

        :param target: an entity id, a qualified name, a unique name, or an indexed ``path[:line]``.
        :param depth: dependency steps to follow (1..5); 1 gives the direct dependents only.
        :return: direct and transitive dependents, affected files and edges, with `truncated`.
        :raises ValueError: a bad depth, a target matching no entity or several, or a path outside
            the repository.
        :raises StoreError: the index cannot be read.
        """
        call_graph.validate_depth(depth)
        target = confine_target(self.root, target)
        with self._reading() as store:
            return call_graph.impact(store, target, depth)

    def entity_context(self, target: str) -> EntityContext:
        """One entity with its signature, docstring, code and 1-hop neighbours.

        :param target: an entity id, a qualified name, a unique name, or an indexed ``path[:line]``.
        :return: the entity, its source lines (bounded) and its callers, callees, members, bases,
            subclasses and importers (each list bounded).
        :raises ValueError: a target matching no entity or several, or a path outside the repository.
        :raises StoreError: the index cannot be read.
        """
        target = confine_target(self.root, target)
        with self._reading() as store:
            return entity_context(store, self.root, target)

    def changed_since_index(self) -> tuple[str, ...]:
        """Files added, changed or deleted on disk since the last indexing run, sorted.

        Files the last run could not parse count only once they change again (they are retried
        with the next run anyway).

        :return: root-relative paths.
        :raises StoreError: the index cannot be read.
        """
        scanned = {f.path: (f.size, f.mtime) for f in scan(self.root, self.config.max_file_bytes).files}
        with self._reading() as store:
            indexed = {path: (r.size, r.mtime) for path, r in store.file_records().items()}
            failed = set(store.skipped())
        return tuple(sorted(path for path in scanned.keys() | indexed.keys()
                            if scanned.get(path) != indexed.get(path)
                            and not (path in failed and path not in indexed)))

    def refresh(self) -> IndexReport | None:
        """Index on first use, and again whenever files changed since the last run.

        :return: what the run changed, or None when the index was already up to date.
        :raises StoreError: the store cannot be read or written.
        """
        if not self._fresh:
            return self.index()
        return self.index() if self.changed_since_index() else None


def open(root: str | Path, store: str | Path | None = None,  # noqa: A001 - the documented API name
         config: AppConfig | str | Path | None = None, progress: ProgressCallback = no_progress) -> KnowCode:
    """Open a repository for indexing and queries; see :meth:`KnowCode.from_path`."""
    return KnowCode.from_path(root, store=store, config=config, progress=progress)
