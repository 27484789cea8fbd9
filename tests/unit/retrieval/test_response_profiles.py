"""Response profiles (spec: Context synthesis, source inclusion): each rule as a parametrized table."""

from __future__ import annotations

import itertools

import pytest

from knowcode.models import TaskType, Verbosity
from knowcode.retrieval.response_profiles import (
    SOURCE_HUNGRY_TASKS,
    ResponseKind,
    include_source,
    is_source_hungry,
    summary_first_includes_source,
)

T, V, K = TaskType, Verbosity, ResponseKind

# Summary-first (query, context): (task type, verbosity) -> source included.
SUMMARY_FIRST = [
    (T.EXPLAIN, V.MINIMAL, False),
    (T.EXTEND, V.MINIMAL, False),
    (T.LOCATE, V.MINIMAL, False),
    (T.GENERAL, V.MINIMAL, False),
    (T.DEBUG, V.MINIMAL, True),  # source-hungry
    (T.REVIEW, V.MINIMAL, True),  # source-hungry
    (T.EXPLAIN, V.STANDARD, True),  # verbosity >= standard
    (T.LOCATE, V.STANDARD, True),
    (T.GENERAL, V.VERBOSE, True),
    (T.EXTEND, V.DIAGNOSTIC, True),
    (T.DEBUG, V.STANDARD, True),
    (T.REVIEW, V.DIAGNOSTIC, True),
]


def test_the_source_hungry_task_types_are_debug_and_review() -> None:
    assert frozenset({T.DEBUG, T.REVIEW}) == SOURCE_HUNGRY_TASKS
    assert [t for t in TaskType if is_source_hungry(t)] == [T.DEBUG, T.REVIEW]


def test_source_hungry_tasks_get_source_even_at_minimal_verbosity() -> None:
    for kind, task in itertools.product((K.QUERY, K.CONTEXT), SOURCE_HUNGRY_TASKS):
        assert include_source(kind, task, V.MINIMAL)  # the spec cites this line: keep it at :44


@pytest.mark.parametrize("kind", [K.QUERY, K.CONTEXT])
@pytest.mark.parametrize(("task", "verbosity", "expected"), SUMMARY_FIRST)
def test_query_and_context_are_summary_first(kind: ResponseKind, task: TaskType, verbosity: Verbosity,
                                             expected: bool) -> None:
    assert include_source(kind, task, verbosity) is expected
    assert summary_first_includes_source(task, verbosity) is expected


@pytest.mark.parametrize(("kind", "expected"), [
    (K.SEARCH, False),  # search never carries source
    (K.TRACE, False),  # trace never carries source
    (K.SEMANTIC_SEARCH, True),  # semantic search always does
])
@pytest.mark.parametrize(("task", "verbosity"), list(itertools.product(TaskType, Verbosity)))
def test_search_trace_and_semantic_search_ignore_task_and_verbosity(
        kind: ResponseKind, expected: bool, task: TaskType, verbosity: Verbosity) -> None:
    assert include_source(kind, task, verbosity) is expected


def test_summary_first_table_covers_every_rule_exhaustively() -> None:
    for task, verbosity in itertools.product(TaskType, Verbosity):
        expected = verbosity.level >= V.STANDARD.level or task in (T.DEBUG, T.REVIEW)
        assert include_source(K.CONTEXT, task, verbosity) is expected, (task, verbosity)


def test_response_kinds_are_the_five_the_spec_names() -> None:
    assert [k.value for k in ResponseKind] == ["query", "context", "search", "trace", "semantic_search"]
