"""Analysis: retrieved entities into task-aware, token-budgeted context bundles.

Public, context_synthesizer.py (spec: Context synthesis):
:func:`~knowcode.analysis.context_synthesizer.synthesize` (a retrieval result into a
:class:`~knowcode.models.ContextBundle`),
:data:`~knowcode.analysis.context_synthesizer.TASK_TEMPLATES` (section priority and boosts per task type),
:func:`~knowcode.analysis.context_synthesizer.validate_budget` and
:func:`~knowcode.analysis.context_synthesizer.parse_verbosity` (input checks of the facade).
packing.py: :class:`~knowcode.analysis.packing.TaskTemplate` and :func:`~knowcode.analysis.packing.pack`
(greedy packing under the budget). sections.py: :class:`~knowcode.analysis.sections.Section`.
token_counter.py: :class:`~knowcode.analysis.token_counter.TokenCounter` (the protocol) and
:func:`~knowcode.analysis.token_counter.default_counter` (offline cl100k).
call_graph.py: :func:`~knowcode.analysis.call_graph.trace_calls` (callers/callees, bounded, cycle-safe),
:func:`~knowcode.analysis.call_graph.impact` (direct and transitive dependents, affected files) and
:func:`~knowcode.analysis.call_graph.resolve_target` (an id, a name or path:line to one entity).
entity_context.py: :func:`~knowcode.analysis.entity_context.entity_context` (one entity, its code and
1-hop neighbours).
"""

from typing import TYPE_CHECKING

from knowcode.analysis.call_graph import impact, resolve_target, trace_calls
from knowcode.analysis.entity_context import entity_context
from knowcode.lazy_imports import lazy_exports

if TYPE_CHECKING:
    from knowcode.analysis.context_synthesizer import (
        TASK_TEMPLATES,
        parse_verbosity,
        synthesize,
        validate_budget,
    )
    from knowcode.analysis.packing import TaskTemplate, pack
    from knowcode.analysis.sections import Section
    from knowcode.analysis.token_counter import TiktokenCounter, TokenCounter, default_counter

__all__ = [
    "TASK_TEMPLATES",
    "Section",
    "TaskTemplate",
    "TiktokenCounter",
    "TokenCounter",
    "default_counter",
    "entity_context",
    "impact",
    "pack",
    "parse_verbosity",
    "resolve_target",
    "synthesize",
    "trace_calls",
    "validate_budget",
]

# The call graph and entity context are imported eagerly: they are light (the store and the models), and
# `entity_context` names a module and its function, which a lazy export would leave ambiguous. Context
# synthesis is imported on first use: it loads the retrieval stack (numpy, BM25), which importing
# `knowcode.analysis.token_counter` (the config does) or `call_graph` (the CLI's help does) need not.
_CONTEXT = "knowcode.analysis.context_synthesizer"
__getattr__, __dir__ = lazy_exports(__name__, {
    "TASK_TEMPLATES": _CONTEXT, "parse_verbosity": _CONTEXT, "synthesize": _CONTEXT,
    "validate_budget": _CONTEXT,
    "TaskTemplate": "knowcode.analysis.packing", "pack": "knowcode.analysis.packing",
    "Section": "knowcode.analysis.sections", "TiktokenCounter": "knowcode.analysis.token_counter",
    "TokenCounter": "knowcode.analysis.token_counter", "default_counter": "knowcode.analysis.token_counter",
})
