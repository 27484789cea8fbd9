"""RetrievalOrchestrator (spec: "Retrieval routing"): route a query, rank, select entities, expand.

1. A quoted query goes to the exact-match engine.
2. Otherwise the hybrid index (BM25 + dense, RRF), reranked; a long question's BM25 query is
   expanded by pseudo-relevance feedback (relevance_feedback) first, an issue report's title weighs
   more in it (report_query).
3. If the dense leg fails, BM25 alone on the query's keywords; the error is kept and the mode is
   ``lexical``: never a silent empty result.
4. Hits are de-duplicated to `limit_entities` unique entities.
5. Optionally, 1-hop callees are added as ``source="dependency"`` hits with score 0.0.
6. Each entity gets a token budget of ``max(1, min(2000, max_tokens // limit_entities))``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from knowcode.indexing.indexer import CONTENT_GENERATION_KEY
from knowcode.indexing.languages import is_document_language, spec_for
from knowcode.indexing.tokenizer import token_set, tokenize
from knowcode.models import Chunk, Entity, EntityKind, HitSource, RetrievalMode, SearchHit
from knowcode.paths import same_file
from knowcode.retrieval.completeness import expand_dependencies, hit_for
from knowcode.retrieval.embeddings import (
    EmbeddingProvider,
    EmbeddingSpec,
    check_compatible,
    embeds_in_process,
)
from knowcode.retrieval.exact_query_engine import definition_chunks, exact_search, quoted_text
from knowcode.retrieval.hybrid_index import (
    CANDIDATE_FACTOR,
    RRF_K,
    FusedCandidate,
    HybridIndex,
    admitted_prefix,
    reciprocal_rank_fusion,
)
from knowcode.retrieval.relevance_feedback import DEFAULT_FEEDBACK_WEIGHT, FEEDBACK_DOCUMENTS, expansion_terms
from knowcode.retrieval.report_query import TITLE_REPEATS, weighted_report
from knowcode.retrieval.reranker import (
    CALLABLE_KINDS,
    Candidate,
    CrossEncoder,
    Frame,
    RankingSignals,
    is_long_question,
    line_links,
    mentioned_symbols,
    reads_calls,
    reads_tokens,
    rerank,
    scores_sole_functions,
    traceback_frames,
    wants_code_only,
)
from knowcode.retrieval.search_index import SearchIndex
from knowcode.storage.store import Store

# Which legs found a candidate -> its source; neither: a definition brought in by name.
SOURCE_OF_LEGS = {(True, True): HitSource.HYBRID, (True, False): HitSource.SPARSE,
                   (False, True): HitSource.DENSE, (False, False): HitSource.EXACT}
PER_ENTITY_TOKEN_CAP = 2000  # spec: Retrieval routing step 6 (the 200-token floor was removed)
MAX_LIMIT = 1000  # more entities than this is a dump, not a search
# The first tier is fused from legs of a fixed depth and reranked alone: the spec's pool (limit x
# reranker_top_k_multiplier, legs x CANDIDATE_FACTOR) at the default search limit of 10. A larger
# limit only appends deeper tiers, so the first k hits of any request are the k-hit answer (issue
# #11: limit 10 and limit 50 differed on 119 of 120 queries when the whole pool grew with the limit).
FIRST_TIER_LIMIT = 10
# How much deeper the legs are asked again when ruled-out chunks leave fewer than the first tier's depth
# of candidates (a code question in a docs-heavy repository: on one sphinx report, 250 of 300 leg ids
# were prose). Each round costs a leg scan; x4 reached the depth in one round on bench/issues.
SHORT_TIER_GROWTH = 4
# A line link's path may name several files (`compiler.py#L428`: django's sql/ and mysql/ compilers; the
# line falls in one of them); a path more files share than this (`__init__.py:1`, `models.py:12`)
# names none.
LINKED_FILES_MAX = 5
# The line links read of one query: more is a pasted log or listing, whose first links are the asker's.
LINE_LINKS_MAX = 16
# Candidates whose members are read at once (one SQL query, ~10 us a candidate) for their precise
# entities: the hits' limit and this many more, or 1.5 times the limit. On 360 queries (the latency
# queries and chunk-text snippets) 10 hits took 10-14 candidates in 97% of searches, 50 hits 50-75
# in 97%; past the window, the next window is read.
PRECISE_WINDOW_EXTRA = 5
PRECISE_WINDOW_FACTOR = 1.5
# How a comment line opens in the languages parsed (C family, shell and Python, Lua and Haskell): the
# block right above a packed member documents it.
_COMMENT_STARTS = ("//", "/*", "*", "#", "--")


def per_entity_token_budget(max_tokens: int, limit_entities: int) -> int:
    """spec: ``max(1, min(2000, max_tokens // limit_entities))``."""
    return max(1, min(PER_ENTITY_TOKEN_CAP, max_tokens // limit_entities))


@dataclass(frozen=True)
class RetrievalResult:
    """Ranked hits (unique entities), dependency hits, the mode used and any errors on the way."""

    query: str
    mode: RetrievalMode
    hits: tuple[SearchHit, ...]
    dependencies: tuple[SearchHit, ...] = ()
    errors: tuple[str, ...] = ()
    per_entity_budget: int = PER_ENTITY_TOKEN_CAP
    candidates: int = 0  # fused candidates that were reranked
    legs: dict[str, int] = field(default_factory=dict)  # results per leg (sparse, dense)


def validate_query(query: str, limit: int) -> None:
    """Reject what no search can answer well.

    :raises ValueError: an empty or blank query, or a limit outside 1..MAX_LIMIT.
    """
    stripped = query.strip() if query else ""
    if not stripped or (len(stripped) >= 2 and stripped[0] == stripped[-1] in "\"'`"
                        and not stripped[1:-1].strip()):
        raise ValueError("the query is empty: pass some words, an identifier or a \"quoted name\"")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")


NO_KEYWORD_MATCH = ("no word of the query occurs in the index: these hits are only its nearest neighbours "
                    "in meaning and may be unrelated")


@dataclass(frozen=True)
class _Named:
    """The definitions of the symbols a query names, and the chunks holding their first lines."""

    definitions: tuple[Entity, ...]
    chunks: tuple[Chunk, ...]


_Row = tuple[Chunk, Entity, float]  # a candidate chunk, the entity owning it, its file's mtime


@dataclass(frozen=True)
class _Prepared:
    """What a hybrid query's ranking reads that the dense leg's ids do not change."""

    current: bool  # the store holds exactly the chunks the search index was built from
    named: _Named
    code_only: bool  # prose and configuration chunks are no candidates (wants_code_only)
    rows: Mapping[str, _Row]  # the rows of the sparse leg's first tier, by chunk id


class RetrievalOrchestrator:
    """Answers queries from one store and its search index."""

    def __init__(self, store: Store, index: SearchIndex, embedder: EmbeddingProvider | None, *,
                 alpha: float, top_k_multiplier: int, signals: RankingSignals,
                 cross_encoder: CrossEncoder | None = None,
                 feedback: float = DEFAULT_FEEDBACK_WEIGHT, title_repeats: int = TITLE_REPEATS,
                 parallel_legs: bool | None = None) -> None:
        """Answer from a store and its search index.

        :param parallel_legs: run the dense leg on a thread of its own while the sparse leg runs; None:
            only when the embedder is not the in-process static model (a remote one waits on the
            network). Pass True when the legs themselves wait (a search backend's).
        """
        self.store = store
        self.index = index
        self.embedder = embedder
        self.alpha = alpha
        self.top_k_multiplier = top_k_multiplier
        self.signals = signals
        self.cross_encoder = cross_encoder
        self.feedback = feedback
        self.title_repeats = title_repeats
        # An embedding computed in process gains nothing from a thread (HybridIndex); a remote one's
        # network wait overlaps the sparse leg and the rows read meanwhile.
        parallel = not embeds_in_process(embedder) if parallel_legs is None else parallel_legs
        self.hybrid = HybridIndex(self._sparse, self._dense, alpha=alpha, parallel=parallel)

    def close(self) -> None:
        """Release the hybrid index's threads."""
        self.hybrid.close()

    def _sparse(self, query: str, limit: int) -> list[tuple[str, float]]:
        """BM25 for the query (a report's title weighted: report_query); for a long question, ranked
        again with the terms its first hits suggest."""
        sparse = self.index.sparse
        # Feedback needs a question with enough words to find its subject: at 9-11 tokens (the longest
        # file-level queries) it cost 3 of 284 file-level queries 0.01-0.07 NDCG@10 and gained none.
        # A report names its code already (bench/issues: fn Recall@10 0.480 -> 0.471 with feedback).
        # A search backend's leg holds no term statistics here.
        weighted = weighted_report(query, self.title_repeats)
        if not self.feedback or not is_long_question(query) or not sparse.documents:
            return sparse.search(weighted, limit)

        def expand(hits: Sequence[tuple[str, float]]) -> dict[str, float]:
            first = hits[:FEEDBACK_DOCUMENTS]
            tokens = self.store.chunk_tokens([cid for cid, _ in first])
            feedback = [(tokens[cid], score) for cid, score in first if cid in tokens]
            return expansion_terms(tokenize(query), feedback, sparse.document_frequency, sparse.documents,
                                   weight=self.feedback)

        return sparse.search(weighted, limit, expand)

    def _dense(self, query: str, limit: int) -> list[tuple[str, float]]:
        if self.embedder is None or self.index.dense is None or self.index.embedding is None:
            raise RuntimeError("no dense index: vectors are switched off or were not built")
        vector = self.embedder.embed([query], query=True)[0]  # first: a remote provider learns its size
        check_compatible(self.index.embedding, EmbeddingSpec.of(self.embedder))
        return self.index.dense.search(vector, limit)

    def _index_is_current(self) -> bool:
        """The store holds exactly the chunks the search index was built from (one content generation),
        so every id the index returns resolves; a meta row is read instead of looking the ids up."""
        return self.store.meta().get(CONTENT_GENERATION_KEY) == str(self.index.generation)

    def _named(self, query: str) -> _Named:
        """The definitions of the symbols the query names (none when the signals give definitions and
        mentions no weight), of the functions its traceback frames pass through, in the files the
        frames name (none when frames have no weight), and of the lines it links to (none when line
        links have no weight), each with the chunk holding its first line."""
        definitions: list[Entity] = []
        if self.signals.definition != 1.0 or self.signals.mention != 1.0:
            for symbol in mentioned_symbols(query):
                definitions.extend(self.store.entities_named_like(symbol, self.top_k_multiplier))
        frames = traceback_frames(query) if self.signals.frame != 1.0 else ()
        if frames:
            # A frame's function may share no word with the report's text ("Optimize .delete()" failed
            # in Collector.collect): the frame signal cannot lift what never became a candidate.
            named = self.store.entities_named({frame.name for frame in frames}, brief=True)
            passed = {entity.id for frame in frames for entity in _framed(frame, named)}
            framed = self.store.entities_by_id(passed)
            definitions.extend(sorted(framed, key=lambda entity: (entity.path, entity.start_line)))
        if self.signals.line_link != 1.0:
            definitions.extend(self._linked(query))
        unique = list({entity.id: entity for entity in definitions}.values())
        chunks = tuple(chunk for _, chunk in definition_chunks(self.store, unique))
        return _Named(tuple(unique), chunks)

    def _linked(self, query: str) -> list[Entity]:
        """The innermost definition holding each line the query points at (`compiler.py#L428`), in each
        file the link's path names; none for a path that too many files share (`__init__.py:1`)."""
        found = []
        for link in line_links(query)[:LINE_LINKS_MAX]:
            paths = self.store.files_named(link.path, LINKED_FILES_MAX + 1)
            for path in paths if len(paths) <= LINKED_FILES_MAX else ():
                holding = self.store.entities_at(path, link.line)  # innermost first
                innermost = next((e for e in holding if e.kind is not EntityKind.MODULE), None)
                if innermost is not None:
                    found.append(innermost)
        return found

    def _while_dense(self, query: str, sparse_ids: Sequence[str],
                     dense_pending: Callable[[], bool]) -> _Prepared:
        """What ranking reads that the dense leg's ids do not change, read on the caller's thread while
        that leg (the query's embedding and the vector scan) runs; SQLite and numpy release the
        interpreter lock, so both threads work. With the legs on one thread this runs after both, the
        dense leg is done, and the rows are left to :meth:`_candidates` (read once, after the fusion)."""
        current, named, code_only = self._index_is_current(), self._named(query), wants_code_only(query)
        # The dense leg weighs alpha (0.2) in the fusion: 40-50 of the first tier's 50 candidates are
        # among the sparse leg's first 50 on the search-latency queries, so their rows are read now,
        # while the dense leg runs (when it is done, all rows are read at once after the fusion).
        tier = self._first_tier
        rows = (self.store.chunks_with_owners(sparse_ids[:tier], tokens=reads_tokens(query))
                if dense_pending() else {})
        return _Prepared(current, named, code_only, rows)

    def _fused(self, query: str, wanted: int, errors: list[str]) -> tuple[RetrievalMode, list[FusedCandidate],
                                                                         dict[str, int], _Prepared]:
        if self.embedder is not None:
            try:
                per_leg = wanted * CANDIDATE_FACTOR
                sparse_ids, dense_ids, prepared = self.hybrid.legs_and(
                    query, per_leg,
                    lambda sparse, dense_pending: self._while_dense(query, sparse, dense_pending))
                while True:
                    known = set(dense_ids) if prepared.current else self.store.existing_chunk_ids(dense_ids)
                    prose, only_prose = self._prose(prepared.code_only, sparse_ids + dense_ids)
                    if not self._first_tier_short(sparse_ids, dense_ids, known, prose, per_leg):
                        break
                    # Ruled-out chunks (a code question in a docs-heavy repository) thinned the legs'
                    # first tier: ask deeper, so that it holds what a larger limit's would.
                    per_leg *= SHORT_TIER_GROWTH
                    sparse_ids, dense_ids = self.hybrid.legs(query, per_leg)
                excluded = frozenset() if only_prose else prose
                fused = self._tiered_fusion(sparse_ids, dense_ids, known, wanted, excluded)
                if dense_ids and not sparse_ids:
                    # The dense leg always has nearest neighbours, even for words that mean nothing here
                    # (gibberish reaches 0.70 cosine, real questions start at 0.43): say so, never guess.
                    errors.append(NO_KEYWORD_MATCH)
                return (RetrievalMode.HYBRID, fused, {"sparse": len(sparse_ids), "dense": len(dense_ids)},
                        prepared)
            except Exception as err:  # the dense leg (a provider, a model file) failed: fall back
                errors.append(f"semantic retrieval failed, using keywords only: {err}")
        # Keyword extraction is the index's tokenizer (identifiers split, stems, no stop words),
        # which the sparse leg applies to the query itself.
        sparse = [cid for cid, _ in self._sparse(query, wanted * CANDIDATE_FACTOR)]
        fused = [FusedCandidate(cid, 1.0 / (RRF_K + rank + 1), rank, None)
                 for rank, cid in enumerate(sparse[:wanted])]
        prepared = _Prepared(current=False, named=self._named(query), code_only=False, rows={})  # named only
        return RetrievalMode.LEXICAL, fused, {"sparse": len(sparse)}, prepared

    def _prose(self, code_only: bool, chunk_ids: Sequence[str]) -> tuple[frozenset[str], bool]:
        """The prose and configuration chunks among the ids when the query wants code only (else none),
        and whether every id is one (then they are all there is)."""
        if not code_only:
            return frozenset(), False
        languages = self.store.chunk_languages(chunk_ids)
        prose = frozenset(cid for cid, language in languages.items() if is_document_language(language))
        return prose, len(prose) == len(languages)

    @property
    def _first_tier(self) -> int:
        """Candidates in the first tier: the spec's pool (limit x multiplier) at FIRST_TIER_LIMIT."""
        return FIRST_TIER_LIMIT * self.top_k_multiplier

    def _tiered_fusion(self, sparse_ids: list[str], dense_ids: list[str], known: Container[str],
                       wanted: int, excluded: Container[str] = frozenset()) -> list[FusedCandidate]:
        """The first tier fused from the legs cut where each holds its own depth of admitted ids (so a
        deeper request cannot reorder it), then the rest of the fusion of the whole legs, up to `wanted`
        candidates; `excluded` ids are no candidates."""
        tier = self._first_tier
        sparse_admits, dense_admits = _admitted(known, excluded)
        first = reciprocal_rank_fusion(
            admitted_prefix(sparse_ids, tier * CANDIDATE_FACTOR, sparse_admits),
            admitted_prefix(dense_ids, tier * CANDIDATE_FACTOR, dense_admits),
            alpha=self.alpha, known=known, limit=tier, excluded=excluded)
        if wanted <= tier:
            return first
        taken = {f.chunk_id for f in first}
        rest = reciprocal_rank_fusion(sparse_ids, dense_ids, alpha=self.alpha, known=known, limit=wanted,
                                      excluded=excluded)
        return first + [f for f in rest if f.chunk_id not in taken][:wanted - len(first)]

    def _first_tier_short(self, sparse_ids: Sequence[str], dense_ids: Sequence[str], known: Container[str],
                          excluded: Container[str], per_leg: int) -> bool:
        """Whether a leg that has more to give (it returned all `per_leg` ids asked for) holds fewer
        admitted ids than the first tier's depth: the ids it left out would then be missing from the
        first tier of this request and present in that of a deeper one."""
        if not excluded:
            return False
        depth = self._first_tier * CANDIDATE_FACTOR
        return any(len(ids) == per_leg and sum(map(admits, ids)) < depth
                   for ids, admits in zip((sparse_ids, dense_ids), _admitted(known, excluded), strict=True))

    def _candidates(self, fused: Sequence[FusedCandidate], *, named: _Named | None,
                    exclude: Container[str] = (), read: Mapping[str, _Row] | None = None,
                    tokens: bool = True) -> list[tuple[Candidate, HitSource]]:
        """The fused candidates with their chunks and entities; with `named`, plus the definitions of
        the symbols the query names (chunk ids in `exclude` are left out); rows already `read` are not
        read again; without `tokens`, the chunks' tokens are left empty (see reranker.reads_tokens)."""
        scores = {f.chunk_id: f for f in fused if f.chunk_id not in exclude}
        ids = list(scores)
        definitions = named.definitions if named is not None else ()
        if named is not None:
            # The definition of a named symbol may rank low on words alone: bring it in, and let
            # the chunk that holds its signature speak for it (a class header is often packed
            # into the chunk of its first method).
            floor = min((f.score for f in fused), default=1.0 / RRF_K)
            for chunk in named.chunks:
                if chunk.id not in scores and chunk.id not in exclude:
                    scores[chunk.id] = FusedCandidate(chunk.id, floor, None, None)
                    ids.append(chunk.id)
        read = read or {}
        rows = {**read, **self.store.chunks_with_owners([cid for cid in ids if cid not in read],
                                                        tokens=tokens)}
        found: list[tuple[Candidate, HitSource]] = []
        for chunk_id in ids:
            if chunk_id not in rows:
                continue  # stale id from an index built before the last commit
            chunk, owner, mtime = rows[chunk_id]
            # each named definition whose first line the chunk holds is a candidate of its own: a packed
            # chunk may hold several (a Java class and its constructor, two `area` methods)
            entities = [d for d in definitions if d.path == chunk.path
                        and chunk.start_line <= d.start_line <= chunk.end_line] or [owner]
            fused_candidate = scores[chunk_id]
            found_by = (fused_candidate.sparse_rank is not None, fused_candidate.dense_rank is not None)
            source = SOURCE_OF_LEGS[found_by]
            found.extend((Candidate(chunk, entity, fused_candidate.score, mtime), source)
                         for entity in entities)
        return found

    def retrieve(self, query: str, *, limit_entities: int = 3, max_tokens: int = 6000,
                 expand_deps: bool = True) -> RetrievalResult:
        """Route, rank and select entities for a query.

        :param query: words, an identifier, or a "quoted" exact name.
        :param limit_entities: unique entities wanted.
        :param max_tokens: the caller's token budget, split per entity.
        :param expand_deps: add the hits' 1-hop callees as dependency hits.
        :return: the result, with its mode and any errors.
        :raises ValueError: an empty query or a limit out of range.
        """
        validate_query(query, limit_entities)
        errors: list[str] = []
        # At least the first tier's pool; a larger limit only adds deeper tiers (see _tiered_fusion).
        wanted = max(limit_entities, FIRST_TIER_LIMIT) * self.top_k_multiplier
        exact = quoted_text(query)
        legs: dict[str, int] = {}
        if exact is not None:
            mode = RetrievalMode.EXACT
            matches = exact_search(self.store, exact, wanted)
            owners = {e.id: e for e in self.store.entities_by_id({c.entity_id for c, _ in matches})}
            ranked = [(Candidate(chunk, entity or owners[chunk.entity_id], 1.0 / (RRF_K + rank + 1), 0.0),
                       1.0 / (RRF_K + rank + 1))
                      for rank, (chunk, entity) in enumerate(matches)
                      if entity is not None or chunk.entity_id in owners]
            sources = {c.chunk.id: HitSource.EXACT for c, _ in ranked}
            hits = self._unique_hits(exact, ranked, sources, limit_entities, [])
        else:
            mode, fused, legs, prepared = self._fused(query, wanted, errors)
            # The first tier (the spec's pool for the default limit) is reranked on its own, so a
            # larger limit only appends: hits from deeper candidates never overtake it.
            tier = self._first_tier
            tokens, sole = reads_tokens(query), scores_sole_functions(query)
            candidates = self._candidates(fused[:tier], named=prepared.named, read=prepared.rows,
                                          tokens=tokens)
            if sole:
                candidates = self._as_sole_functions(candidates)
            sources = {c.chunk.id: source for c, source in candidates}
            ranked = self._rerank(query, candidates, errors)
            hits = self._unique_hits(query, ranked, sources, limit_entities, [])
            if len(hits) < limit_entities and len(fused) > tier:
                deeper = self._candidates(fused[tier:], named=None, exclude=sources, tokens=tokens)
                if sole:
                    deeper = self._as_sole_functions(deeper)
                sources.update((c.chunk.id, source) for c, source in deeper)
                more = self._rerank(query, deeper, errors)
                ranked += more
                hits = self._unique_hits(query, more, sources, limit_entities, hits)
        if not hits:
            errors.append("nothing matched: try other words, an identifier, or a \"quoted name\"")
        dependencies = expand_dependencies(self.store, hits) if expand_deps and hits else []
        return RetrievalResult(query, mode, tuple(hits), tuple(dependencies), tuple(errors),
                               per_entity_token_budget(max_tokens, limit_entities), len(ranked), legs)

    def _as_sole_functions(self, candidates: Sequence[tuple[Candidate, HitSource]]
                           ) -> list[tuple[Candidate, HitSource]]:
        """The candidates, each chunk of a module that holds exactly one member, a function or method,
        owned by that function (see reranker.scores_sole_functions); one query for all of them."""
        spans = [(c.entity.id, c.chunk.start_line, c.chunk.end_line, _beside(c.entity.language))
                 for c, _ in candidates if c.entity.kind is EntityKind.MODULE]
        members = self.store.members_within(spans) if spans else {}
        sole: list[tuple[Candidate, HitSource]] = []
        for candidate, source in candidates:
            inside = [m for m in members.get(candidate.entity.id, ()) if _within(m, candidate.chunk)]
            if len(inside) == 1 and inside[0].kind in CALLABLE_KINDS:
                candidate = replace(candidate, entity=inside[0])
            sole.append((candidate, source))
        return sole

    def _rerank(self, query: str, candidates: Sequence[tuple[Candidate, HitSource]],
                errors: list[str]) -> list[tuple[Candidate, float]]:
        """Rerank candidates by the cross-encoder or the signals, recording a provider's error once."""
        chosen = [c for c, _ in candidates]
        calls: list[tuple[str, str]] = []
        if reads_calls(query, self.signals):
            ids = {c.entity.id for c in chosen}
            calls = [(a, b) for a, b in self.store.callees(ids) if b in ids]
        ranked, rerank_error = rerank(query, chosen, self.signals, self.cross_encoder, calls)
        if rerank_error and rerank_error not in errors:
            errors.append(rerank_error)
        return ranked

    def _unique_hits(self, query: str, ranked: Sequence[tuple[Candidate, float]],
                     sources: Mapping[str, HitSource], limit: int, hits: list[SearchHit]) -> list[SearchHit]:
        """Append a hit for the best chunk of each entity not yet hit, up to `limit` hits in all; each
        chunk is answered by its precise entity, looked up a window of candidates at a time."""
        seen = {hit.entity_id for hit in hits}
        window = max(limit + PRECISE_WINDOW_EXTRA, math.ceil(PRECISE_WINDOW_FACTOR * limit))
        if len(hits) >= limit:
            return hits
        implementations: dict[tuple[str, str], Candidate] | None = None  # read at the first stub
        for start in range(0, len(ranked), window):
            for candidate, score in self._precise(query, ranked[start:start + window]):
                if _is_overload_stub(candidate):
                    implementations = _implementations(ranked) if implementations is None else implementations
                    candidate = implementations.get((candidate.entity.path, candidate.entity.qualified_name),
                                                    candidate)
                if candidate.entity.id in seen:
                    continue
                seen.add(candidate.entity.id)
                hits.append(hit_for(candidate.entity, [candidate.chunk], score, sources[candidate.chunk.id]))
                if len(hits) >= limit:  # before the next candidate's precise entity is computed
                    return hits
        return hits

    def _precise(self, query: str,
                 ranked: Sequence[tuple[Candidate, float]]) -> Iterator[tuple[Candidate, float]]:
        """Name the entity a chunk is about: a chunk that packs small members of its entity (a class's
        getters, a module's helpers) is answered by the member that matches more query words than the
        entity's own lines and name do. The members of every candidate are read at once (one query);
        each candidate's lines are matched only when the caller takes it (the hits are complete after
        about half the window)."""
        spans = [(c.entity.id, c.chunk.start_line, c.chunk.end_line, _beside(c.entity.language))
                 for c, _ in ranked]
        members = self.store.members_within(spans) if spans else {}
        if not members:
            yield from ranked
            return
        words = frozenset(tokenize(query))
        for candidate, score in ranked:
            chunk = candidate.chunk
            inside = [m for m in members.get(candidate.entity.id, ()) if _within(m, chunk)]
            if inside:
                rows = chunk.text.split("\n")
                # a member's documenting comment is its own, not its owner's
                spans_of = {m.id: (_comment_above(rows, chunk.start_line, m.start_line), m.end_line)
                            for m in inside}
                skip = list(spans_of.values())
                own = _lines(rows, chunk.start_line, chunk.start_line, chunk.end_line, skip)
                owner = candidate.entity
                best, most = None, (_held(words, owner.qualified_name, own), _named(words, owner.name))
                # the first member holding more words than the entity's own lines and name, and than
                # every member before it (on equal words, more of them in its own name: `settings_path`
                # over a `load` whose docstring reads "settings"); once all words are held, only a name
                # holding more of them can win, and its lines need not be read
                for member in inside:
                    named = _named(words, member.name)
                    if most[0] == len(words) and named <= most[1]:
                        continue
                    lines = _lines(rows, chunk.start_line, *spans_of[member.id])
                    held = (_held(words, member.qualified_name, lines), named)
                    if held > most:
                        best, most = member, held
                if best is not None:
                    candidate = replace(candidate, entity=best)
            yield candidate, score


def _admitted(known: Container[str], excluded: Container[str]) -> tuple[Callable[[str], bool],
                                                                         Callable[[str], bool]]:
    """Which ids of the sparse and of the dense leg may be candidates: none the query rules out, and of
    the dense leg only ids the store still holds (its index may predate the last commit)."""
    return (lambda c: c not in excluded), (lambda c: c in known and c not in excluded)


def _beside(language: str) -> bool:
    """Whether the language declares methods beside their type (LanguageSpec.members_beside_types)."""
    spec = spec_for(language)
    return spec is not None and spec.members_beside_types


def _comment_above(rows: Sequence[str], first_line: int, start: int) -> int:
    """The first line of the comment block right above line `start` of a chunk whose lines are `rows`
    (the first is line `first_line`), one blank line between them allowed as the chunker allows it;
    `start` itself when there is none."""
    index = start - first_line - 1
    if index >= 0 and not rows[index].strip():
        index -= 1
    top = None
    while index >= 0 and rows[index].lstrip().startswith(_COMMENT_STARTS):
        top, index = index, index - 1
    return start if top is None else first_line + top


def _framed(frame: Frame, named: Sequence[Entity]) -> list[Entity]:
    """The entities a traceback frame passed through: those of its function's name in its file, or, of
    a name that several classes of the file define (`__repr__`), the one whose span holds the frame's
    line when one does (the line may come from another version of the file)."""
    found = [entity for entity in named if entity.name == frame.name and same_file(entity.path, frame.path)]
    holding = [entity for entity in found
               if frame.line is not None and entity.start_line <= frame.line <= entity.end_line]
    return holding or found


def _implementations(ranked: Sequence[tuple[Candidate, float]]) -> dict[tuple[str, str], Candidate]:
    """The best-ranked function or method of each (file, qualified name) that is no overload stub."""
    found: dict[tuple[str, str], Candidate] = {}
    for candidate, _ in ranked:
        if candidate.entity.kind in CALLABLE_KINDS and not _is_overload_stub(candidate):
            found.setdefault((candidate.entity.path, candidate.entity.qualified_name), candidate)
    return found


def _is_overload_stub(candidate: Candidate) -> bool:
    """Whether the candidate's entity is a function's typing stub (LanguageSpec.overload_decorator and
    overload_signatures), read from its lines in the candidate's chunk."""
    spec = spec_for(candidate.entity.language)
    chunk, entity = candidate.chunk, candidate.entity
    if spec is None or entity.kind not in CALLABLE_KINDS or entity.start_line < chunk.start_line:
        return False
    if spec.overload_signatures:
        if entity.end_line > chunk.end_line:
            return False
        index = entity.end_line - chunk.start_line
        last = chunk.text.split("\n", index + 1)[index]
        return last.rstrip().endswith(";") and not last.lstrip().startswith("}")  # `});` ends a body
    # a substring test first: splitting every candidate's text into lines cost 2-4% of a search
    if not spec.overload_decorator or spec.overload_decorator not in chunk.text:
        return False
    for line in chunk.text.split("\n")[entity.start_line - chunk.start_line:]:
        decorator = line.strip()
        if not decorator.startswith("@"):
            return False
        name = decorator[1:].partition("(")[0].strip()
        if name == spec.overload_decorator or name.endswith("." + spec.overload_decorator):
            return True
    return False


def _within(entity: Entity, chunk: Chunk) -> bool:
    """Whether the entity's whole span lies inside the chunk."""
    return chunk.start_line <= entity.start_line and entity.end_line <= chunk.end_line


def _lines(rows: Sequence[str], first_line: int, start: int, end: int,
           skip: Sequence[tuple[int, int]] = ()) -> str:
    """Lines start..end of a chunk whose lines are `rows` (the first is line `first_line`), leaving out
    the `skip` spans."""
    kept = list(rows[start - first_line:end - first_line + 1])
    for first, last in skip:
        for line in range(max(first, start), min(last, end) + 1):
            kept[line - start] = ""
    return "\n".join(kept)


def _held(words: frozenset[str], qualified_name: str, text: str) -> int:
    """How many of the query's words the qualified name and the text hold."""
    return len(words.intersection(token_set(qualified_name + "\n" + text)))


def _named(words: frozenset[str], name: str) -> int:
    """How many of the query's words a name holds (`settings_path`: settings, path)."""
    return len(words.intersection(token_set(name)))
