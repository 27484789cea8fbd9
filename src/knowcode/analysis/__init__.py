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
"""

from knowcode.analysis.context_synthesizer import TASK_TEMPLATES, parse_verbosity, synthesize, validate_budget
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
    "pack",
    "parse_verbosity",
    "synthesize",
    "validate_budget",
]
