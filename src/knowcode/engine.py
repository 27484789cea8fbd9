"""The KnowCode facade: one repository, its index store and its configuration."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from knowcode.analysis import call_graph
from knowcode.analysis.context_synthesizer import parse_verbosity, synthesize, validate_budget
from knowcode.analysis.entity_context import entity_context
from knowcode.analysis.token_counter import TokenCounter, default_counter
from knowcode.config import AppConfig, default_store_dir, load_config, rate_limit_path
from knowcode.indexing import IndexReport, index_repository, scan
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
from knowcode.retrieval.search_index import load_search_index, update_search_index
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
            store = Store.open(self.store_dir)
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

    def embedder(self) -> EmbeddingProvider | None:
        """The configured embedding provider (None when vectors are switched off), created once."""
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
        if not self._cross_encoder_loaded:
            config = self.config
            self._cross_encoder = create_cross_encoder(
                config.reranker_provider, model=config.reranker_model or None,
                base_url=config.reranker_base_url or None, api_key_env=config.reranker_api_key_env or None)
            self._cross_encoder_loaded = True
        return self._cross_encoder

    def orchestrator(self) -> RetrievalOrchestrator:
        """The retrieval orchestrator over the current index (indexing first if needed)."""
        self.ensure_indexed()
        if self._orchestrator is None:
            if self._reader is None:
                self._reader = Store.open(self.store_dir, create=False)
            config = self.config
            index = load_search_index(self._reader, self.store_dir)
            if self._backend is not None:
                index = self._backend.index_for(index, self.embedder())
            self._orchestrator = RetrievalOrchestrator(
                self._reader, index, self.embedder(),
                alpha=config.hybrid_alpha, top_k_multiplier=config.reranker_top_k_multiplier,
                signals=config.ranking, cross_encoder=self.cross_encoder())
        return self._orchestrator

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
        validate_budget(max_tokens)
        validate_query(query, limit_entities)
        chosen_verbosity = parse_verbosity(verbosity)
        chosen_task, confidence = _task_type(query, task_type)
        counter = self.token_counter()
        orchestrator = self.orchestrator()
        result = orchestrator.retrieve(query, limit_entities=limit_entities, max_tokens=max_tokens,
                                       expand_deps=expand_deps)
        return synthesize(result, orchestrator.store, self.root, max_tokens=max_tokens, task_type=chosen_task,
                          task_confidence=confidence, verbosity=chosen_verbosity, counter=counter)

    def ask(self, question: str, task_type: TaskType | str = "auto", *,
            query_lock: AbstractContextManager[object] | None = None) -> Answer:
        """Answer a question about the code (spec: Local-vs-LLM routing).

        The answer is the context bundle itself when the task type is verified for local answers (a
        pinned ``knowcode eval`` artifact) and a bundle on the escalation ladder is sufficient; otherwise
        the configured ``[llm] models`` answer from the bundle, in failover order. One telemetry event is
        written to the index folder unless ``[llm] telemetry = false``.

        :param question: the question.
        :param task_type: "auto" (classify the question) or a task type.
        :param query_lock: held while a bundle is built, released during model calls (a server that
            serialises its facade passes its lock, so a slow model does not stall other queries).
        :return: the answer with its route, model, sources, sufficiency and every attempt.
        :raises ValueError: an empty question or an unknown task type.
        :raises StoreError: the index cannot be read.
        """
        from knowcode.llm.agent import smart_answer  # the facade composes stages

        validate_query(question, 1)
        chosen, _ = _task_type(question, task_type)

        def build_bundle(rung: Rung) -> ContextBundle:
            with query_lock or nullcontext():
                return self.context(question, max_tokens=rung.max_tokens, limit_entities=rung.limit_entities,
                                    task_type=chosen, verbosity=rung.verbosity, expand_deps=rung.expand_deps)

        with query_lock or nullcontext():
            policy = self.routing_policy()  # loads the embedding model when nothing has yet
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
        """The up-to-date store, open for the block and closed after it."""
        store = self.open_store()
        try:
            yield store
        finally:
            store.close()

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

    def index_aside(self) -> IndexReport:
        """Index with a second facade, so queries on this one keep the last complete index meanwhile.

        Call :meth:`close` afterwards (under whatever serialises this facade's queries): the next
        query then loads the new index generation.

        It takes the store's writer lock as :meth:`index` does, so it waits for (and then skips the
        work of) any other run on the store, in this process or another.

        :return: what changed.
        :raises StoreError: the store cannot be opened or written.
        :raises StoreLockedError: another run held the store for longer than index_lock_timeout_seconds.
        """
        indexer = KnowCode(self.root, self.store_dir, self.config)
        # The same providers: loading the embedding model again would cost ~0.5 s per re-index.
        indexer._embedder, indexer._embedder_loaded = self.embedder(), True
        try:
            return indexer.index()
        finally:
            indexer.close()


def open(root: str | Path, store: str | Path | None = None,  # noqa: A001 - the documented API name
         config: AppConfig | str | Path | None = None, progress: ProgressCallback = no_progress) -> KnowCode:
    """Open a repository for indexing and queries; see :meth:`KnowCode.from_path`."""
    return KnowCode.from_path(root, store=store, config=config, progress=progress)
