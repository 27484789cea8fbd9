"""LLM stage: what a question asks for, and the personas used to answer it.

Public, query_classifier.py (spec: Query classification): :func:`~knowcode.llm.query_classifier.classify`
(a query into a :class:`~knowcode.llm.query_classifier.QueryClassification`: task type, confidence, every
type's score), :func:`~knowcode.llm.query_classifier.parse_task_type` (a ``--task`` value, ``"auto"``
meaning classify), :data:`~knowcode.llm.query_classifier.TASK_PROMPTS` (one expert persona per task type,
used by ``ask``), :data:`~knowcode.llm.query_classifier.DEFAULT_PATTERNS` with
:class:`~knowcode.llm.query_classifier.WeightedPattern` and
:func:`~knowcode.llm.query_classifier.compile_patterns` (the weighted cue tables).

Public, prompt_contract.py (spec: prompt contract): :func:`~knowcode.llm.prompt_contract.build_messages`
(a ``system`` message with the rules and persona, then one ``user`` message carrying the question, context
and errors as a capped, JSON-escaped untrusted-input envelope).

Public, rate_limiter.py (spec: LLM leg): :class:`~knowcode.llm.rate_limiter.RateLimiter` (client-side
requests per minute and per day for one model, counted in a SQLite file that separate processes share) and
:class:`~knowcode.llm.rate_limiter.RateLimitExceeded`.
"""

from knowcode.llm.prompt_contract import build_messages
from knowcode.llm.query_classifier import (
    DEFAULT_PATTERNS,
    TASK_PROMPTS,
    QueryClassification,
    WeightedPattern,
    classify,
    compile_patterns,
    parse_task_type,
)
from knowcode.llm.rate_limiter import RateLimiter, RateLimitExceeded

__all__ = [
    "DEFAULT_PATTERNS",
    "TASK_PROMPTS",
    "QueryClassification",
    "RateLimitExceeded",
    "RateLimiter",
    "WeightedPattern",
    "build_messages",
    "classify",
    "compile_patterns",
    "parse_task_type",
]
