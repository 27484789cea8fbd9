"""Scoring for the semble code-search benchmark: annotations, target matching, NDCG@10, averaging.

Pure functions with no other KnowCode imports, so the rules can be tested on hand-computed cases. The
benchmark scripts (benchmarks/quality.py, benchmarks/tokens.py) and ``knowcode eval``
(evals/routing_eval.py) share them. The rules follow the benchmark's README (bench/README.md, "Scoring
rules"):

- a query's targets are `relevant` plus `secondary`, each with gain 1; `seed` and `related` are ignored;
- a target is a bare path (the whole file) or `{path, start_line, end_line}` (1-based, inclusive);
- paths match when equal, or when either ends with "/" followed by the other (after `\\` -> `/`);
- a span target also needs the hit's lines to overlap the span (one shared line is enough);
- a target's rank is the 1-based position of the first of the top-k hits that matches it;
- NDCG@k: rel[r - 1] = 1 for each found rank r (targets sharing a rank count once), DCG = sum of
  rel_i / log2(i + 2), IDCG = DCG of min(k, number of targets) ones, 0 when there are no targets;
- repo score = mean over its queries; headline = unweighted mean over repos; a category score is the
  mean within each repo, then the mean over the repos that have that category.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from knowcode.paths import same_file

CUTOFF = 10  # bench/README.md: the metric is NDCG@10, over the top 10 results
CATEGORIES = ("semantic", "architecture", "symbol")  # bench/README.md: the query categories, report order


class Hit(NamedTuple):
    """One returned result: a root-relative path and a 1-based inclusive line span."""

    path: str
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True)
class Target:
    """An annotated answer: a whole file (no lines) or a line span in a file."""

    path: str
    start_line: int | None = None
    end_line: int | None = None

    @property
    def is_span(self) -> bool:
        """Whether the target is a line span rather than a whole file."""
        return self.start_line is not None and self.end_line is not None


@dataclass(frozen=True, slots=True)
class Query:
    """One benchmark query with its category and targets (relevant then secondary)."""

    text: str
    category: str
    targets: tuple[Target, ...]


@dataclass(frozen=True, slots=True)
class ScoredQuery:
    """The outcome of one query: its NDCG@k and the rank of each target (None: not in the top k)."""

    category: str
    ndcg: float
    ranks: tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class Summary:
    """Averaged scores: headline over repos, per repo, per category, and per category within each repo."""

    overall: float
    repos: dict[str, float]
    categories: dict[str, float]
    repo_categories: dict[str, dict[str, float]]


def parse_target(raw: Any) -> Target:
    """Read one annotation target: a path string or a mapping with path, start_line and end_line.

    :raises ValueError: the target has neither form, or its span is not 1 <= start <= end.
    """
    if isinstance(raw, str):
        return Target(raw)
    if isinstance(raw, Mapping) and isinstance(raw.get("path"), str):
        start, end = raw.get("start_line"), raw.get("end_line")
        if start is None and end is None:
            return Target(raw["path"])
        if not isinstance(start, int) or not isinstance(end, int) or not 1 <= start <= end:
            raise ValueError(f"invalid line span in target {raw!r}")
        return Target(raw["path"], start, end)
    raise ValueError(f"a target must be a path or {{path, start_line, end_line}}, not {raw!r}")


def parse_query(raw: Any) -> Query:
    """Read one annotation entry (`query`, `category`, `relevant`, `secondary`; others ignored).

    :raises ValueError: the entry is not an object, or a required field is missing or has the wrong type.
    """
    if not isinstance(raw, Mapping):
        raise ValueError(f"an annotation must be an object with `query` and `category`, not {raw!r}")
    text, category = raw.get("query"), raw.get("category")
    if not isinstance(text, str) or not isinstance(category, str):
        raise ValueError(f"an annotation needs string `query` and `category`: {raw!r}")
    targets: list[Target] = []
    for field in ("relevant", "secondary"):
        values = raw.get(field, [])
        if not isinstance(values, list):
            raise ValueError(f"`{field}` must be a list in annotation {text!r}")
        targets.extend(parse_target(value) for value in values)
    return Query(text, category, tuple(targets))


def parse_annotations(data: Any, source: str | Path) -> list[Query]:
    """Read decoded annotations (a list of query entries), in order; `source` names them in errors.

    :raises ValueError: the data is not a list of valid entries.
    """
    if not isinstance(data, list):
        raise ValueError(f"{source}: expected a JSON list of queries, got {type(data).__name__}")
    try:
        return [parse_query(entry) for entry in data]
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from err


def load_annotations(path: Path) -> list[Query]:
    """Read an upstream annotation file (a JSON list of query entries), in file order.

    :raises ValueError: the file is not a JSON list of valid entries.
    """
    return parse_annotations(json.loads(path.read_text(encoding="utf-8")), path)


def normalize_path(path: str) -> str:
    """Use `/` as the separator."""
    return path.replace("\\", "/")


def path_matches(target: str, result: str) -> bool:
    """Equal paths, or either one ends with "/" followed by the other (so `app.py` != `xapp.py`)."""
    return same_file(normalize_path(target), normalize_path(result))


def hit_matches(target: Target, hit: Hit) -> bool:
    """The hit is in the target's file and, for a span target, shares at least one line with it."""
    if not path_matches(target.path, hit.path):
        return False
    if target.start_line is None or target.end_line is None:
        return True
    return hit.start_line <= target.end_line and hit.end_line >= target.start_line


def target_ranks(targets: Sequence[Target], hits: Sequence[Hit], k: int = CUTOFF) -> list[int | None]:
    """For each target, the 1-based position of the first of the top-k hits matching it, else None."""
    top = hits[:k]
    ranks: list[int | None] = []
    for target in targets:
        ranks.append(next((i for i, hit in enumerate(top, start=1) if hit_matches(target, hit)), None))
    return ranks


def dcg(rel: Sequence[float]) -> float:
    """Discounted cumulative gain: sum of rel_i / log2(i + 2), i from 0."""
    return sum(value / math.log2(i + 2) for i, value in enumerate(rel))


def ndcg_from_ranks(ranks: Sequence[int | None], n_targets: int, k: int = CUTOFF) -> float:
    """NDCG@k from target ranks; unfound targets still count in the ideal DCG."""
    if n_targets == 0:
        return 0.0
    rel = [0.0] * k
    for rank in ranks:
        if rank is not None and 1 <= rank <= k:
            rel[rank - 1] = 1.0
    ideal = dcg([1.0] * min(k, n_targets))
    return dcg(rel) / ideal


def score_query(query: Query, hits: Sequence[Hit], k: int = CUTOFF) -> ScoredQuery:
    """Rank the query's targets in the hits and compute its NDCG@k."""
    ranks = target_ranks(query.targets, hits, k)
    return ScoredQuery(query.category, ndcg_from_ranks(ranks, len(query.targets), k), tuple(ranks))


def mean_lines_per_hit(hits: Iterable[Hit]) -> float:
    """Mean of end - start + 1 over all hits; 0 when there are none."""
    sizes = [hit.end_line - hit.start_line + 1 for hit in hits]
    return statistics.fmean(sizes) if sizes else 0.0


def summarize(per_repo: Mapping[str, Sequence[ScoredQuery]]) -> Summary:
    """Average scored queries: repo = mean of its queries; headline = mean of repos (repos without
    queries are left out); category = mean within each repo, then mean over repos having it."""
    repos = {name: statistics.fmean(q.ndcg for q in scored) for name, scored in per_repo.items() if scored}
    repo_categories: dict[str, dict[str, float]] = {}
    for name, scored in per_repo.items():
        by_category: dict[str, list[float]] = {}
        for q in scored:
            by_category.setdefault(q.category, []).append(q.ndcg)
        if by_category:
            repo_categories[name] = {c: statistics.fmean(v) for c, v in sorted(by_category.items())}
    names = sorted({c for cats in repo_categories.values() for c in cats},
                   key=lambda c: (CATEGORIES.index(c) if c in CATEGORIES else len(CATEGORIES), c))
    categories = {c: statistics.fmean(cats[c] for cats in repo_categories.values() if c in cats)
                  for c in names}
    overall = statistics.fmean(repos.values()) if repos else 0.0
    return Summary(overall, repos, categories, repo_categories)
