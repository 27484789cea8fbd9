"""Response profiles (spec: "Context synthesis", source inclusion): which responses carry raw source.

* query and context responses are summary-first: raw source only when the verbosity is standard or
  above, or the task type is source-hungry (debug, review);
* search and trace responses never carry source;
* semantic search responses always do.

This supersedes the older ``summarize=True`` knob. Each rule is pinned by
tests/unit/retrieval/test_response_profiles.py.
"""

from __future__ import annotations

from enum import Enum

from knowcode.models import TaskType, Verbosity


class ResponseKind(str, Enum):
    """The kinds of response a query can produce."""

    QUERY = "query"
    CONTEXT = "context"
    SEARCH = "search"
    TRACE = "trace"
    SEMANTIC_SEARCH = "semantic_search"


# spec: response profiles — task types that need the code itself to be answered (a bug or a review is
# in the lines, not in the signature).
SOURCE_HUNGRY_TASKS = frozenset({TaskType.DEBUG, TaskType.REVIEW})
SOURCE_VERBOSITY = Verbosity.STANDARD  # spec: source from this verbosity up in summary-first responses
SUMMARY_FIRST_KINDS = frozenset({ResponseKind.QUERY, ResponseKind.CONTEXT})
NEVER_SOURCE_KINDS = frozenset({ResponseKind.SEARCH, ResponseKind.TRACE})
ALWAYS_SOURCE_KINDS = frozenset({ResponseKind.SEMANTIC_SEARCH})


def is_source_hungry(task_type: TaskType) -> bool:
    """True for task types whose answers are in the code lines (debug, review)."""
    return task_type in SOURCE_HUNGRY_TASKS


def summary_first_includes_source(task_type: TaskType, verbosity: Verbosity) -> bool:
    """The summary-first rule: source at standard verbosity or above, or for a source-hungry task."""
    return verbosity.level >= SOURCE_VERBOSITY.level or is_source_hungry(task_type)


def include_source(kind: ResponseKind, task_type: TaskType, verbosity: Verbosity) -> bool:
    """Whether a response of this kind carries raw source.

    :param kind: the response kind.
    :param task_type: the query's task type.
    :param verbosity: the requested verbosity.
    :return: True when raw source belongs in the response.
    """
    if kind in NEVER_SOURCE_KINDS:
        return False
    if kind in ALWAYS_SOURCE_KINDS:
        return True
    return summary_first_includes_source(task_type, verbosity)
