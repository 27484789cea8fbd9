"""LLM stage: what a question asks for, and the personas used to answer it.

Public, query_classifier.py (spec: Query classification): :func:`~knowcode.llm.query_classifier.classify`
(a query into a :class:`~knowcode.llm.query_classifier.QueryClassification`: task type, confidence, every
type's score), :func:`~knowcode.llm.query_classifier.parse_task_type` (a ``--task`` value, ``"auto"``
meaning classify), :data:`~knowcode.llm.query_classifier.TASK_PROMPTS` (one expert persona per task type,
used by ``ask``), :data:`~knowcode.llm.query_classifier.DEFAULT_PATTERNS` with
:class:`~knowcode.llm.query_classifier.WeightedPattern` and
:func:`~knowcode.llm.query_classifier.compile_patterns` (the weighted cue tables).
"""

from knowcode.llm.query_classifier import (
    DEFAULT_PATTERNS,
    TASK_PROMPTS,
    QueryClassification,
    WeightedPattern,
    classify,
    compile_patterns,
    parse_task_type,
)

__all__ = [
    "DEFAULT_PATTERNS",
    "TASK_PROMPTS",
    "QueryClassification",
    "WeightedPattern",
    "classify",
    "compile_patterns",
    "parse_task_type",
]
