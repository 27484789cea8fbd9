"""Search across the repositories of a shared backend: one pair of legs, one fusion, per-repository ranking.

1. Both legs run once against the backend (all repositories, or the ones asked for), each for
   ``pool x CANDIDATE_FACTOR`` chunks, with BM25 statistics global over the backend.
2. The spec's RRF fuses them (hybrid_index.reciprocal_rank_fusion), over all repositories at once.
3. Each repository with a candidate in the fused pool ranks its own candidates with its own store
   (signals, precise entities, definitions a query names): its orchestrator is handed the *global*
   leg lists, with other repositories' chunks in place as keys its store does not hold, so every
   candidate keeps its global rank, and so its fused score, and the orchestrator skips the others.
4. The repositories' hits are merged by score, those of a repository the query names (a whole word
   equal to its name) scaled by NAME_PRIOR. A repository whose store is not on this machine answers
   with its chunks as the backend holds them (path, lines, entity), ranked by fused score.

Why the hits of other repositories still outrank the repository a question was written for, and what
was tried against it: benchmarks/results/scale.md ("Why all repositories lose").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from knowcode.indexing.indexer import CONTENT_GENERATION_KEY
from knowcode.indexing.tokenizer import tokenize
from knowcode.models import RetrievalMode, SearchHit
from knowcode.retrieval.backend import SearchBackend
from knowcode.retrieval.embeddings import EmbeddingProvider, EmbeddingSpec, Vectors
from knowcode.retrieval.hybrid_index import (
    CANDIDATE_FACTOR,
    FusedCandidate,
    HybridIndex,
    reciprocal_rank_fusion,
)
from knowcode.retrieval.orchestrator import (
    FIRST_TIER_LIMIT,
    SOURCE_OF_LEGS,
    RetrievalOrchestrator,
    validate_query,
)
from knowcode.retrieval.report_query import TITLE_REPEATS, weighted_report
from knowcode.retrieval.reranker import CrossEncoder, RankingSignals
from knowcode.retrieval.search_index import SearchIndex
from knowcode.retrieval.sparse import Expansion, SparseIndex
from knowcode.storage.milvus_backend import BackendHit, RepositoryRecord, primary_key
from knowcode.storage.store import Store
from knowcode.storage.vector_store import FloatMatrix, VectorStore

# A hit of a repository the query names ("how does flask register blueprints") has its score scaled by
# this. Measured on benchmarks/scale.py's collections (benchmarks/results/scale.md, "What was tried"):
# 1.5 and 2.0 gained +0.001-0.002 NDCG@10 over all repositories (4 queries that name their repository up,
# 1 down: "HTTP requests" names the repository requests); it stays mild because a name can be a word.
NAME_PRIOR = 1.5
_NAME_WORD = re.compile(r"[\w-]+")
_DOTTED_WORD = re.compile(r"[\w.-]+")


@dataclass(frozen=True, slots=True)
class RepositoryHit:
    """A hit and the repository it is in."""

    repository: str
    hit: SearchHit


@dataclass(frozen=True)
class CrossRepoResults:
    """Hits from several repositories, best first, with how they were found."""

    query: str
    mode: RetrievalMode
    hits: tuple[RepositoryHit, ...]
    errors: tuple[str, ...] = ()
    repositories: tuple[str, ...] = ()  # those that had candidates, in the order of their best one
    legs: dict[str, int] = field(default_factory=dict)
    pool: tuple[tuple[str, str], ...] = ()  # the fused candidates' (repository, path), best first


class _Preset:
    """The legs one query's global results give a repository: its chunk ids, others' keys in place."""

    def __init__(self) -> None:
        self.sparse: list[tuple[str, float]] = []
        self.dense: list[tuple[str, float]] = []


class _PresetSparse(SparseIndex):
    def __init__(self, preset: _Preset) -> None:
        super().__init__([])
        self.preset = preset

    def search(self, query: str, limit: int,
               expand: Expansion | None = None) -> list[tuple[str, float]]:
        if expand is not None:  # it holds no term statistics, so relevance feedback never expands its queries
            raise ValueError("the global results take no query expansion")
        return self.preset.sparse[:limit]


class _PresetDense(VectorStore):
    def __init__(self, preset: _Preset, dimension: int) -> None:
        super().__init__([], np.zeros((0, dimension), dtype=np.float32))
        self.preset = preset

    def search(self, query: FloatMatrix, limit: int) -> list[tuple[str, float]]:
        return self.preset.dense[:limit]


class _QueryVector:
    """The embedder with the last query's vector kept: every repository's orchestrator asks for it."""

    def __init__(self, embedder: EmbeddingProvider) -> None:
        self.embedder = embedder
        self._last: tuple[str, Vectors] | None = None

    @property
    def provider(self) -> str:
        return self.embedder.provider

    @property
    def model(self) -> str:
        return self.embedder.model

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    @property
    def normalized(self) -> bool:
        return self.embedder.normalized

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        if not (query and len(texts) == 1):
            return self.embedder.embed(texts, query=query)
        if self._last is None or self._last[0] != texts[0]:
            self._last = (texts[0], self.embedder.embed(texts, query=True))
        return self._last[1]


@dataclass
class _Ranker:
    orchestrator: RetrievalOrchestrator
    preset: _Preset
    store: Store


def _placeholder(hit: BackendHit, repository: str) -> str:
    """The id a repository's orchestrator sees for a hit: its chunk id, or a key no store holds."""
    return hit.chunk_id if hit.repository == repository else primary_key(hit.repository, hit.chunk_id)


class CrossRepoSearch:
    """Searches every repository of a backend, ranking each repository's candidates with its own store."""

    def __init__(self, backend: SearchBackend, embedder: EmbeddingProvider | None, *, alpha: float,
                 top_k_multiplier: int, signals: RankingSignals, cross_encoder: CrossEncoder | None = None,
                 open_store: Callable[[RepositoryRecord], Store | None],
                 title_repeats: int = TITLE_REPEATS) -> None:
        self.backend = backend
        self.embedder = _QueryVector(embedder) if embedder is not None else None
        self.alpha = alpha
        self.top_k_multiplier = top_k_multiplier
        self.signals = signals
        self.cross_encoder = cross_encoder
        self.open_store = open_store
        self.title_repeats = title_repeats
        self._records: dict[str, RepositoryRecord] = {}
        self._names: tuple[object, dict[str, frozenset[str]]] = (None, {})  # (of which records, index)
        self._rankers: dict[str, _Ranker | None] = {}
        self._hits: dict[str, list[BackendHit]] = {"sparse": [], "dense": []}
        self._repositories: list[str] | None = None
        self.hybrid = HybridIndex(self._sparse, self._dense, alpha=alpha)

    def _sparse(self, query: str, limit: int) -> list[tuple[str, float]]:
        hits = self.backend.search_sparse(tokenize(weighted_report(query, self.title_repeats)), limit,
                                          self._repositories)
        self._hits["sparse"] = hits
        return [(primary_key(h.repository, h.chunk_id), h.score) for h in hits]

    def _dense(self, query: str, limit: int) -> list[tuple[str, float]]:
        if self.embedder is None:
            return []
        vector = self.embedder.embed([query], query=True)[0]
        hits = self.backend.search_dense(vector.tolist(), limit, self._repositories)
        self._hits["dense"] = hits
        return [(primary_key(h.repository, h.chunk_id), h.score) for h in hits]

    def close(self) -> None:
        """Close the repositories' stores and the leg thread."""
        self.hybrid.close()
        for ranker in self._rankers.values():
            if ranker is not None:
                ranker.orchestrator.close()
                ranker.store.close()
        self._rankers.clear()

    def _ranker(self, repository: str) -> _Ranker | None:
        """The repository's orchestrator over preset legs (None: its store is not on this machine)."""
        if repository not in self._rankers:
            if repository not in self._records:
                self._records = self.backend.repositories()
            record = self._records.get(repository)
            store = self.open_store(record) if record is not None else None
            if store is None:
                self._rankers[repository] = None
                return None
            preset = _Preset()
            spec = EmbeddingSpec.of(self.embedder) if self.embedder is not None else None
            dense = _PresetDense(preset, self.embedder.dimension) if self.embedder is not None else None
            generation = int(store.meta().get(CONTENT_GENERATION_KEY, "0"))
            index = SearchIndex(generation, _PresetSparse(preset), dense, spec)
            orchestrator = RetrievalOrchestrator(store, index, self.embedder, alpha=self.alpha,
                                                 top_k_multiplier=self.top_k_multiplier, signals=self.signals,
                                                 cross_encoder=self.cross_encoder)
            self._rankers[repository] = _Ranker(orchestrator, preset, store)
        return self._rankers[repository]

    def search(self, query: str, limit: int = 10,
               repositories: Sequence[str] | None = None) -> CrossRepoResults:
        """Ranked code across repositories.

        :param query: words, an identifier, or a "quoted" exact name (matched within the repositories
            the legs find).
        :param limit: hits wanted (1..1000).
        :param repositories: search only these (None: all of them).
        :return: the hits with their repositories, best first.
        :raises ValueError: an empty query or a limit out of range.
        :raises BackendError: the backend failed (there is no embedded index of all repositories).
        """
        validate_query(query, limit)
        self._repositories = list(repositories) if repositories else None
        wanted = max(limit, FIRST_TIER_LIMIT) * self.top_k_multiplier
        per_leg = wanted * CANDIDATE_FACTOR
        sparse_keys, dense_keys = self.hybrid.legs(query, per_leg)
        fused = reciprocal_rank_fusion(sparse_keys, dense_keys, alpha=self.alpha, known=set(dense_keys),
                                       limit=wanted)
        found = self._hits["sparse"] + self._hits["dense"]
        by_key = {primary_key(h.repository, h.chunk_id): h for h in found}
        order = list(dict.fromkeys(by_key[f.chunk_id].repository for f in fused))
        merged: list[RepositoryHit] = []
        errors: list[str] = []
        mode = RetrievalMode.HYBRID if self.embedder is not None else RetrievalMode.LEXICAL
        for repository in order:
            ranker = self._ranker(repository)
            if ranker is None:
                merged.extend(_raw_hits(repository, fused, by_key, limit))
                continue
            ranker.preset.sparse = [(_placeholder(h, repository), h.score) for h in self._hits["sparse"]]
            ranker.preset.dense = [(_placeholder(h, repository), h.score) for h in self._hits["dense"]]
            result = ranker.orchestrator.retrieve(query, limit_entities=limit, expand_deps=False)
            merged.extend(RepositoryHit(repository, hit) for hit in result.hits)
            errors.extend(e for e in result.errors if e not in errors and not e.startswith("nothing matched"))
            if result.mode is RetrievalMode.EXACT:
                mode = RetrievalMode.EXACT
        merged = self._named_first(query, merged)
        merged.sort(key=lambda r: (-r.hit.score, r.repository, r.hit.path, r.hit.start_line))
        if not merged:
            errors.append("nothing matched: try other words, an identifier, or a \"quoted name\"")
        pool = tuple((by_key[f.chunk_id].repository, by_key[f.chunk_id].path) for f in fused)
        return CrossRepoResults(query, mode, tuple(merged[:limit]), tuple(errors), tuple(order),
                                {"sparse": len(sparse_keys), "dense": len(dense_keys)}, pool)

    def _named_first(self, query: str, hits: list[RepositoryHit]) -> list[RepositoryHit]:
        """The hits, those of the repositories the query names scaled by NAME_PRIOR."""
        if len({h.repository for h in hits}) < 2:
            return hits  # one repository (a filtered search): a common factor changes nothing
        if not self._records:
            self._records = self.backend.repositories()
        if self._names[0] is not self._records:
            self._names = (self._records, name_index(self._records))
        named = named_repositories(query, self._names[1])
        if not named:
            return hits
        return [RepositoryHit(h.repository, dataclasses.replace(h.hit, score=h.hit.score * NAME_PRIOR))
                if h.repository in named else h for h in hits]


def name_index(names: Iterable[str]) -> dict[str, frozenset[str]]:
    """The backend's repositories by the word a query would name them with: the name's last "/" part,
    lowercased.

    :param names: the backend's repository names.
    :return: word -> the repositories it names.
    """
    index: dict[str, set[str]] = {}
    for name in names:
        short = name.rsplit("/", 1)[-1].lower()
        if short:
            index.setdefault(short, set()).add(name)
    return {word: frozenset(found) for word, found in index.items()}


def named_repositories(query: str, index: Mapping[str, frozenset[str]]) -> set[str]:
    """The repositories a query names: a whole word of it (letters, digits, "_" and "-"; dots inside
    too, for names like socket.io) equal to a name, case aside. One lookup per word, however many
    repositories the backend holds.

    :param query: the query as written.
    :param index: :func:`name_index` of the backend's repositories.
    :return: the names the query contains.
    """
    lowered = query.lower()
    words = set(_NAME_WORD.findall(lowered)) | {w.strip(".") for w in _DOTTED_WORD.findall(lowered)}
    return {name for word in words for name in index.get(word, ())}


def _raw_hits(repository: str, fused: Sequence[FusedCandidate], by_key: dict[str, BackendHit],
              limit: int) -> list[RepositoryHit]:
    """Hits of a repository without a local store: the backend's rows, one per entity, by fused score."""
    hits: list[RepositoryHit] = []
    seen: set[str] = set()
    for candidate in fused:
        row = by_key[candidate.chunk_id]
        if row.repository != repository or row.entity_id in seen:
            continue
        seen.add(row.entity_id)
        source = SOURCE_OF_LEGS[(candidate.sparse_rank is not None, candidate.dense_rank is not None)]
        hits.append(RepositoryHit(repository, SearchHit(
            row.path, row.start_line, row.end_line, candidate.score, row.entity_id, "", "", row.kind,
            source.value, row.chunk_id, "")))
        if len(hits) >= limit:
            break
    return hits
