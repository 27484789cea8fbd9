"""The routing evaluation (spec: Local-vs-LLM routing): how often a local answer would show the right code.

For every annotated query, the task type comes from the classifier and the escalation ladder is climbed
exactly as ``KnowCode.ask`` climbs it. The first bundle whose sufficiency reaches the local bar is the one
that would be shown as a local answer; the query is then *local-eligible*, and the answer is right when
one of the bundle's entities matches an annotated target (the benchmark's path and line rules). Per task
type, ``quality`` is the share of local-eligible queries answered right: the precision of local answers,
the number compared with ``routing_quality_floor``. ``bundle_recall`` (the top rung's bundle, the one the
models would get, over all queries) and NDCG@10 of search are reported beside it.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowcode.evals.index_version import fingerprint, index_version_parts
from knowcode.evals.scoring import CUTOFF, Hit, Query, hit_matches, parse_annotations, score_query
from knowcode.llm.agent import ESCALATION_LADDER, Rung
from knowcode.llm.query_classifier import classify
from knowcode.llm.routing_policy import local_bar
from knowcode.models import ContextBundle, TaskType
from knowcode.progress import Phase, ProgressCallback, no_progress

if TYPE_CHECKING:
    from knowcode.engine import KnowCode

DEFAULT_QUERY_SET = "knowcode-eval.json"  # `knowcode eval` reads this file in the repository root by default
# A task type needs at least this many local-eligible queries to pass. 5 is the smallest sample in which
# one wrong answer (4/5 = 0.8) can still meet the default floor of 0.8 and two cannot; with fewer, a
# single query decides the verdict. It guards against flukes, it is not a confidence bound: the public
# benchmark's sets have ~20 queries per repository, so a larger minimum would leave most types unmeasured.
MIN_ELIGIBLE_QUERIES = 5


@dataclass(frozen=True, slots=True)
class QuerySet:
    """An annotated query set (the benchmark's format) and the SHA-256 of the bytes it was read from."""

    path: Path
    sha256: str
    queries: tuple[Query, ...]


@dataclass(frozen=True, slots=True)
class QueryOutcome:
    """One query: its task type, the rung a local answer would come from, and whether bundles hit."""

    query: str
    task_type: TaskType
    local_rung: int | None  # index into ESCALATION_LADDER of the first sufficient bundle; None: none was
    local_hit: bool  # the local answer's bundle holds a target (False when no rung was sufficient)
    bundle_hit: bool  # the top rung's bundle holds a target
    ndcg_at_10: float  # of search's top 10


@dataclass(frozen=True, slots=True)
class TaskTypeQuality:
    """The evaluation of one task type; all zeros (and not passing) when no query has that type."""

    task_type: TaskType
    queries: int
    local_eligible: int  # queries with a sufficient bundle on the ladder
    quality: float  # share of local-eligible queries whose local answer holds a target
    bundle_recall: float  # share of all queries whose top-rung bundle holds a target
    ndcg_at_10: float  # mean over the queries
    meets_floor: bool  # local_eligible >= MIN_ELIGIBLE_QUERIES and quality >= the quality floor


@dataclass(frozen=True, slots=True)
class RoutingEvalReport:
    """A whole evaluation: what it was measured on, and the result per task type (in TaskType order)."""

    created_at: str  # ISO 8601, UTC
    knowcode_version: str
    index_version: str
    index: dict[str, Any]  # the parts index_version fingerprints
    query_set_path: str  # relative to the repository root when inside it
    query_set_sha256: str
    quality_floor: float
    sufficiency_bar: float
    task_types: tuple[TaskTypeQuality, ...]
    outcomes: tuple[QueryOutcome, ...]
    seconds: float  # evaluation time, indexing excluded

    @property
    def passing_task_types(self) -> tuple[TaskType, ...]:
        """The task types that met the floor, in TaskType order."""
        return tuple(result.task_type for result in self.task_types if result.meets_floor)


def load_query_set(path: Path) -> QuerySet:
    """Read an annotated query set: a JSON list of ``{query, category, relevant, secondary}``.

    :param path: the file.
    :return: the queries, in file order, with the file's SHA-256.
    :raises FileNotFoundError: the file does not exist.
    :raises ValueError: it cannot be read, is not UTF-8 JSON, is not a list of valid entries, is empty,
        or has an empty query.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"query set not found: {path} (a JSON list of {{query, category, relevant, "
                                "secondary}, as in the public benchmark's annotations)") from None
    except OSError as err:
        raise ValueError(f"cannot read query set {path}: {err.strerror or err}") from err
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"query set {path} is not UTF-8 JSON: {err}") from err
    queries = parse_annotations(data, path)
    if not queries:
        raise ValueError(f"query set {path} holds no queries")
    blank = [number for number, query in enumerate(queries, start=1) if not query.text.strip()]
    if blank:
        raise ValueError(f"query set {path}: entry {blank[0]} has an empty `query`")
    return QuerySet(path, hashlib.sha256(raw).hexdigest(), tuple(queries))


def run_routing_eval(kc: KnowCode, query_set: QuerySet, *, code_version: str,
                     progress: ProgressCallback = no_progress) -> RoutingEvalReport:
    """Evaluate local answering per task type on an annotated query set (indexing first if needed).

    :param kc: the facade; its configuration gives the sufficiency bar and the quality floor.
    :param query_set: the annotated queries (:func:`load_query_set`).
    :param code_version: the running KnowCode's version, recorded so a newer one treats it as stale.
    :param progress: told of each query evaluated.
    :return: the report, ready for :func:`~knowcode.evals.routing_artifact.write_routing_artifact`.
    :raises ValueError: a query is empty or too long for the retrievers.
    :raises StoreError: the index cannot be read or written.
    """
    kc.ensure_indexed()
    parts = index_version_parts(kc)
    llm = kc.config.llm
    bar = local_bar(llm)
    started = time.perf_counter()
    queries = query_set.queries
    evaluated: list[QueryOutcome] = []
    progress(Phase.EVALUATE, 0, len(queries))
    for query in queries:
        evaluated.append(_evaluate(kc, query, bar))
        progress(Phase.EVALUATE, len(evaluated), len(queries))
    outcomes = tuple(evaluated)
    seconds = time.perf_counter() - started
    return RoutingEvalReport(
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), knowcode_version=code_version,
        index_version=fingerprint(parts), index=parts, query_set_path=repo_relative(query_set.path, kc.root),
        query_set_sha256=query_set.sha256, quality_floor=llm.routing_quality_floor, sufficiency_bar=bar,
        task_types=tuple(_per_type(task, outcomes, llm.routing_quality_floor) for task in TaskType),
        outcomes=outcomes, seconds=seconds)


def repo_relative(path: Path, root: Path) -> str:
    """A path as config files and artifacts record it: relative to the root (``/``) when inside it."""
    resolved = path.resolve()
    return resolved.relative_to(root).as_posix() if resolved.is_relative_to(root) else str(resolved)


def _bundle(kc: KnowCode, query: str, task: TaskType, rung: Rung) -> ContextBundle:
    """The bundle ``ask`` builds for this rung (same arguments, so the evaluation sees what it shows)."""
    return kc.context(query, max_tokens=rung.max_tokens, limit_entities=rung.limit_entities, task_type=task,
                      verbosity=rung.verbosity, expand_deps=rung.expand_deps)


def bundle_holds_target(bundle: ContextBundle, query: Query) -> bool:
    """One of the bundle's entities matches one of the query's targets (the benchmark's path and line
    rules): the right code is in front of the reader."""
    spans = [Hit(entity.path, entity.start_line, entity.end_line) for entity in bundle.selected_entities]
    return any(hit_matches(target, span) for target in query.targets for span in spans)


def _evaluate(kc: KnowCode, query: Query, bar: float) -> QueryOutcome:
    task = classify(query.text).task_type
    built: dict[int, ContextBundle] = {}
    local_rung: int | None = None
    for index, rung in enumerate(ESCALATION_LADDER):
        built[index] = _bundle(kc, query.text, task, rung)
        if built[index].sufficiency_score >= bar:
            local_rung = index
            break
    top = len(ESCALATION_LADDER) - 1
    # bundle_recall is measured on the top rung for every query, so climb on past a sufficient rung.
    top_bundle = built[top] if top in built else _bundle(kc, query.text, task, ESCALATION_LADDER[top])
    found = [Hit(hit.path, hit.start_line, hit.end_line) for hit in kc.search(query.text, CUTOFF)]
    return QueryOutcome(
        query=query.text, task_type=task, local_rung=local_rung,
        local_hit=local_rung is not None and bundle_holds_target(built[local_rung], query),
        bundle_hit=bundle_holds_target(top_bundle, query), ndcg_at_10=score_query(query, found).ndcg)


def _per_type(task: TaskType, outcomes: tuple[QueryOutcome, ...], floor: float) -> TaskTypeQuality:
    mine = [outcome for outcome in outcomes if outcome.task_type is task]
    eligible = [outcome for outcome in mine if outcome.local_rung is not None]
    quality = statistics.fmean(o.local_hit for o in eligible) if eligible else 0.0
    return TaskTypeQuality(
        task_type=task, queries=len(mine), local_eligible=len(eligible), quality=quality,
        bundle_recall=statistics.fmean(o.bundle_hit for o in mine) if mine else 0.0,
        ndcg_at_10=statistics.fmean(o.ndcg_at_10 for o in mine) if mine else 0.0,
        meets_floor=len(eligible) >= MIN_ELIGIBLE_QUERIES and quality >= floor)
