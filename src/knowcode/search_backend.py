"""The ``[backend]`` table put to work: connect, sync a repository, hand its orchestrator backend legs.

The facade (engine.py) keeps one :class:`BackendSession` per repository when ``[backend] kind`` is not
``embedded``; :func:`open_cross_repo_search` searches every repository of the backend.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

from knowcode.config import AppConfig, BackendConfig
from knowcode.retrieval.backend import BackendLegs, SyncReport, backend_index, sync_repository
from knowcode.retrieval.cross_repo import CrossRepoSearch
from knowcode.retrieval.embeddings import EmbeddingProvider
from knowcode.retrieval.orchestrator import RetrievalResult
from knowcode.retrieval.reranker import CrossEncoder
from knowcode.retrieval.search_index import SearchIndex, load_search_index
from knowcode.storage.milvus_backend import BackendError, MilvusChunkStore, RepositoryRecord
from knowcode.storage.store import Store

logger = logging.getLogger(__name__)
# The collection is created for the configured model's vector length; with embedding_provider = "none"
# the dense field still needs one (Milvus requires a vector field): a placeholder of 2 zeros per chunk.
NO_VECTORS_DIMENSION = 2
MAX_NAMES_LISTED = 20  # repository names an "unknown repository" error lists (a cluster may hold thousands)


def vector_dimension(embedder: EmbeddingProvider | None) -> int:
    """The collection's vector length for an embedder (NO_VECTORS_DIMENSION without one)."""
    return embedder.dimension if embedder is not None else NO_VECTORS_DIMENSION


def repository_name(config: BackendConfig, root: Path) -> str:
    """The repository's name in the backend: ``[backend] repository``, else the folder's name."""
    return config.repository.strip() or root.name or "root"


def connect(config: AppConfig, dimension: int) -> MilvusChunkStore:
    """Connect to the configured Milvus deployment (creating its collections when missing).

    :raises BackendError: pymilvus is missing, the token variable is unset, or Milvus failed.
    """
    backend = config.backend
    token = ""
    if backend.token_env:
        token = os.environ.get(backend.token_env, "")
        if not token:
            raise BackendError(f"[backend] token_env names {backend.token_env}, which is not set")
    return MilvusChunkStore.connect(backend.uri, backend.collection, token=token, dimension=dimension,
                                    k1=config.bm25_k1, b=config.bm25_b, dense_index=backend.dense_index,
                                    timeout=backend.timeout_seconds)


class BackendSession:
    """One repository's view of the shared backend: its sync after each index run, its legs for queries."""

    def __init__(self, config: AppConfig, root: Path, store_dir: Path) -> None:
        self.config = config
        self.root = root
        self.store_dir = store_dir
        self.name = repository_name(config.backend, root)
        self._chunks: MilvusChunkStore | None = None
        self.legs: BackendLegs | None = None
        self.errors: list[str] = []  # sync failures not yet reported with a query
        self.last_sync: SyncReport | None = None

    def _connected(self, dimension: int) -> MilvusChunkStore:
        if self._chunks is None:
            self._chunks = connect(self.config, dimension)
        return self._chunks

    def sync(self, store: Store, embedder: EmbeddingProvider | None) -> SyncReport | None:
        """Write the repository's changed chunks to the backend; a failure is logged and kept, not raised
        (the embedded index is complete and answers meanwhile; the next run completes the sync).

        :return: the sync's report, or None when it failed.
        """
        dimension = vector_dimension(embedder)
        try:
            chunks = self._connected(dimension)
            self.last_sync = sync_repository(chunks, self.name, root=self.root, store_dir=self.store_dir,
                                             store=store, index=load_search_index(store, self.store_dir),
                                             dimension=dimension)
            return self.last_sync
        except BackendError as err:
            message = f"the search backend was not updated (the next index run retries): {err}"
            logger.warning("%s", message)
            self.errors.append(message)
            return None

    def index_for(self, embedded: SearchIndex, embedder: EmbeddingProvider | None) -> SearchIndex:
        """The search index a query uses: legs from the backend, the embedded index behind them."""
        dimension = vector_dimension(embedder)
        try:
            chunks = self._connected(dimension)
        except BackendError as err:
            self.errors.append(f"search backend unavailable, answering from the embedded index: {err}")
            return embedded
        self.legs = BackendLegs(chunks, [self.name], embedded)
        return backend_index(self.legs, embedded, dimension)

    def annotate(self, result: RetrievalResult) -> RetrievalResult:
        """The result with the backend's errors since the last query (a fallback is never silent)."""
        pending = self.errors + (self.legs.errors if self.legs is not None else [])
        self.errors = []
        if self.legs is not None:
            self.legs.errors.clear()
        if not pending:
            return result
        return dataclasses.replace(result, errors=(*pending, *result.errors))

    def close(self) -> None:
        """Close the connection (the next sync or query reconnects)."""
        if self._chunks is not None:
            self._chunks.close()
        self._chunks = None
        self.legs = None


def drop_repository(config: AppConfig, name: str, dimension: int) -> int:
    """Delete a repository from the shared backend: its chunks and its registry entry (its own store
    and embedded index are left alone; indexing it again with this backend adds it back).

    :param config: the configuration naming the backend.
    :param name: the repository's name in the backend.
    :param dimension: the collection's vector length (the embedding model's).
    :return: the chunks deleted.
    :raises ValueError: the backend is the embedded one, or holds no repository of that name.
    :raises BackendError: Milvus cannot be reached.
    """
    if config.backend.kind == "embedded":
        raise ValueError("dropping a repository needs a shared backend: set [backend] kind = \"milvus\" "
                         "and a uri in the config")
    chunks = connect(config, dimension)
    try:
        held = chunks.repositories()
        count = chunks.count([name])
        if name not in held and not count:
            listed = ", ".join(sorted(held)[:MAX_NAMES_LISTED]) or "none"
            more = f" and {len(held) - MAX_NAMES_LISTED} more" if len(held) > MAX_NAMES_LISTED else ""
            raise ValueError(f"the backend holds no repository {name!r} (it holds: {listed}{more})")
        chunks.drop_repository(name)
        chunks.flush()
        return count
    finally:
        chunks.close()


def _open_store(record: RepositoryRecord) -> Store | None:
    """A registered repository's store, when it is on this machine."""
    try:
        return Store.open(Path(record.store), create=False)
    except Exception:  # not on this machine, or unreadable: its hits come from the backend alone
        return None


def open_cross_repo_search(config: AppConfig, embedder: EmbeddingProvider | None,
                           cross_encoder: CrossEncoder | None = None) -> CrossRepoSearch:
    """A search over every repository of the configured backend.

    :raises ValueError: the config's backend is the embedded one (it holds one repository).
    :raises BackendError: Milvus cannot be reached.
    """
    if config.backend.kind == "embedded":
        raise ValueError("searching across repositories needs a shared backend: set [backend] kind = "
                         "\"milvus\" and a uri in the config")
    dimension = vector_dimension(embedder)
    return CrossRepoSearch(connect(config, dimension), embedder, alpha=config.hybrid_alpha,
                           top_k_multiplier=config.reranker_top_k_multiplier, signals=config.ranking,
                           cross_encoder=cross_encoder, open_store=_open_store,
                           title_repeats=config.report_title_repeats)
