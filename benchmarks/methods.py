"""The methods benchmarks/quality.py compares: KnowCode configurations and plain BM25 baselines.

A method is a callable `(kc, query, limit) -> hits`, where each hit has `.path`, `.start_line` and
`.end_line`. It may also define:
- `unavailable(kc) -> str | None`: a reason to skip the method (checked once per run);
- `prepare(kc)`: called after every (re)index of kc and before its queries, so a method that caches
  anything per index (a baseline's BM25, an ablation's engine) brings it up to date there;
- `release(kc)`: called when a run is done with kc, to free what the method holds for it.

Adding a method: `METHODS["no-dense"] = KnowCodeSearch(replace(AppConfig(), hybrid_alpha=0.0))`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from baselines import bm25_chunks, bm25_lines

import knowcode
from knowcode import AppConfig, KnowCode
from knowcode.evals.scoring import CUTOFF, Hit
from knowcode.retrieval.reranker import RankingSignals


class HitLike(Protocol):
    """What a method returns per result: a root-relative path and a 1-based inclusive span."""

    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...


SearchFn = Callable[[KnowCode, str, int], Sequence[HitLike]]


class KnowCodeSearch:
    """`search(query, limit)` of a KnowCode over the same index, optionally with another config.

    An ablation is a config: `KnowCodeSearch(replace(AppConfig(), hybrid_alpha=0.0))` is BM25 alone.
    Configs that keep the embedding provider share the index, so nothing is rebuilt.
    """

    def __init__(self, config: AppConfig | None = None) -> None:
        self.config = config
        self._engines: dict[Path, KnowCode] = {}

    def unavailable(self, kc: KnowCode) -> str | None:
        """A reason this method cannot run on this build, else None."""
        if not callable(getattr(kc, "search", None)):
            return "KnowCode.search(query, limit) does not exist yet in this build"
        return None

    def prepare(self, kc: KnowCode) -> None:
        """After a re-index: drop this config's loaded search index, so its next query loads the new one."""
        engine = self._engines.get(kc.store_dir)
        if engine is not None:
            engine.close()

    def release(self, kc: KnowCode) -> None:
        """Close and forget this config's engine on kc's store."""
        engine = self._engines.pop(kc.store_dir, None)
        if engine is not None:
            engine.close()

    def _engine(self, kc: KnowCode) -> KnowCode:
        if self.config is None:
            return kc
        if kc.store_dir not in self._engines:
            self._engines[kc.store_dir] = knowcode.open(kc.root, store=kc.store_dir, config=self.config)
        return self._engines[kc.store_dir]

    def __call__(self, kc: KnowCode, query: str, limit: int) -> Sequence[HitLike]:
        """The engine's hits for the query."""
        hits: Sequence[HitLike] = self._engine(kc).search(query, limit=limit)
        return hits


# The methods of every run: the headline baseline, plain BM25 over KnowCode's chunks, KnowCode itself.
METHODS: dict[str, SearchFn] = {
    "bm25-lines": bm25_lines(),
    "bm25-chunks": bm25_chunks(),
    "knowcode": KnowCodeSearch(),
}
BASELINE = "bm25-lines"  # what the headline tables put beside KnowCode
MAIN = "knowcode"


def _without(signal: str) -> AppConfig:
    return replace(AppConfig(), ranking=replace(RankingSignals(), **{signal: 1.0}))


# Ablations (--ablation): each leg alone, no relevance feedback, no ranking stage at all, and each ranking
# signal switched off.
ABLATIONS: dict[str, SearchFn] = {
    "sparse-only": KnowCodeSearch(replace(AppConfig(), hybrid_alpha=0.0)),
    "dense-only": KnowCodeSearch(replace(AppConfig(), hybrid_alpha=1.0)),
    "no-feedback": KnowCodeSearch(replace(AppConfig(), query_feedback=0.0)),
    "no-title": KnowCodeSearch(replace(AppConfig(), report_title_repeats=0)),
    "no-ranking": KnowCodeSearch(replace(AppConfig(), ranking=RankingSignals(
        **{name: 1.0 for name in RankingSignals.__dataclass_fields__}))),
    **{f"no-{name}": KnowCodeSearch(_without(name)) for name in RankingSignals.__dataclass_fields__},
}
KNOWN: dict[str, SearchFn] = {**METHODS, **ABLATIONS}


@dataclass(frozen=True)
class QueryRecord:
    """One query's outcome under one method: its figures, target ranks and hits (best first).

    `hits_long` is the answer to the same query with a larger limit (the issue set's limit check).
    """

    id: str
    repo: str
    category: str
    metrics: dict[str, float]
    ranks: list[int | None]
    hits: list[Hit]
    hits_long: list[Hit] | None = None
    extra: dict[str, object] = field(default_factory=dict)


@dataclass
class MethodRun:
    """Everything one method produced on one set: records per repo, query seconds, or why it was skipped."""

    records: dict[str, list[QueryRecord]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    skipped: str | None = None

    def all_records(self) -> list[QueryRecord]:
        """Every record, repo by repo."""
        return [record for records in self.records.values() for record in records]


def to_hit(result: HitLike) -> Hit:
    """Normalise one result to a Hit (`\\` in paths becomes `/`)."""
    return Hit(str(result.path).replace("\\", "/"), int(result.start_line), int(result.end_line))


def run_method(kc: KnowCode, query: str, method: str, limit: int = CUTOFF,
               methods: dict[str, SearchFn] | None = None) -> list[Hit]:
    """Run one query through the named method and return at most `limit` hits, best first."""
    search = (METHODS if methods is None else methods)[method]
    return [to_hit(result) for result in search(kc, query, limit)][:limit]


def unavailable(search: SearchFn, kc: KnowCode) -> str | None:
    """The method's reason to be skipped on kc, if it has one."""
    check = getattr(search, "unavailable", None)
    reason: str | None = check(kc) if check is not None else None
    return reason


def prepare(search: SearchFn, kc: KnowCode) -> None:
    """Let the method catch up with kc's (re)built index."""
    hook = getattr(search, "prepare", None)
    if hook is not None:
        hook(kc)


def release(search: SearchFn, kc: KnowCode) -> None:
    """Let the method free what it holds for kc."""
    hook = getattr(search, "release", None)
    if hook is not None:
        hook(kc)
