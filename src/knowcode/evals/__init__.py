"""Evals stage: measuring retrieval and bundles on annotated queries, and the routing artifact it writes.

Public, scoring.py (the public benchmark's rules, bench/README.md):
:func:`~knowcode.evals.scoring.load_annotations` and :func:`~knowcode.evals.scoring.parse_annotations`
(a JSON list of ``{query, category, relevant, secondary}`` into :class:`~knowcode.evals.scoring.Query`
with :class:`~knowcode.evals.scoring.Target`), :func:`~knowcode.evals.scoring.hit_matches` (path and
line-overlap matching of a :class:`~knowcode.evals.scoring.Hit`), :func:`~knowcode.evals.scoring.score_query`
(NDCG@10) and :func:`~knowcode.evals.scoring.summarize` (averages over repos and categories).

Public, routing_eval.py (spec: Local-vs-LLM routing): :func:`~knowcode.evals.routing_eval.load_query_set`
(a :class:`~knowcode.evals.routing_eval.QuerySet` with its SHA-256),
:func:`~knowcode.evals.routing_eval.repo_relative` (a path as config and artifacts record it) and
:func:`~knowcode.evals.routing_eval.run_routing_eval` (per task type: local-eligible queries, the quality
of local answers, bundle recall, NDCG@10, in a :class:`~knowcode.evals.routing_eval.RoutingEvalReport`).

Public, routing_artifact.py: :func:`~knowcode.evals.routing_artifact.write_routing_artifact` (the report as
pinned JSON; returns its SHA-256), :func:`~knowcode.evals.routing_artifact.artifact_data` and
:func:`~knowcode.evals.routing_artifact.pin_lines` (the ``[llm]`` lines that pin it).

Public, index_version.py: :func:`~knowcode.evals.index_version.index_version` (the fingerprint of what
decides retrieval and bundle quality; repository content excluded) and
:func:`~knowcode.evals.index_version.index_version_parts`.
"""

from knowcode.evals.index_version import fingerprint, index_version, index_version_parts
from knowcode.evals.routing_artifact import (
    DEFAULT_ARTIFACT_PATH,
    artifact_data,
    pin_lines,
    write_routing_artifact,
)
from knowcode.evals.routing_eval import (
    DEFAULT_QUERY_SET,
    MIN_ELIGIBLE_QUERIES,
    QueryOutcome,
    QuerySet,
    RoutingEvalReport,
    TaskTypeQuality,
    load_query_set,
    repo_relative,
    run_routing_eval,
)
from knowcode.evals.scoring import (
    Hit,
    Query,
    Target,
    hit_matches,
    load_annotations,
    parse_annotations,
    score_query,
    summarize,
)

__all__ = [
    "DEFAULT_ARTIFACT_PATH",
    "DEFAULT_QUERY_SET",
    "MIN_ELIGIBLE_QUERIES",
    "Hit",
    "Query",
    "QueryOutcome",
    "QuerySet",
    "RoutingEvalReport",
    "Target",
    "TaskTypeQuality",
    "artifact_data",
    "fingerprint",
    "hit_matches",
    "index_version",
    "index_version_parts",
    "load_annotations",
    "load_query_set",
    "parse_annotations",
    "pin_lines",
    "repo_relative",
    "run_routing_eval",
    "score_query",
    "summarize",
    "write_routing_artifact",
]
