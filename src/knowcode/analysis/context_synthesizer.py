"""Context synthesis (spec: "Context synthesis"): retrieved entities into a token-budgeted bundle.

``synthesize`` runs the steps in order: read each entity's relations, pick the task template, ask the
response profile whether raw source belongs in the bundle, pack the sections under the budget, score
sufficiency, and measure the side signals (retrieval confidence, leg agreement, index freshness,
reduction against reading whole files).
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from pathlib import Path

from knowcode.analysis.entity_facts import gather_facts
from knowcode.analysis.packing import TaskTemplate, pack
from knowcode.analysis.sections import MAX_CALLEES, MAX_CALLERS, MAX_CHILDREN, Section
from knowcode.analysis.signals import (
    changed_since_index,
    leg_agreement,
    reduction_factor,
    reduction_summary,
    retrieval_confidence,
    whole_file_tokens,
)
from knowcode.analysis.token_counter import TokenCounter
from knowcode.models import ContextBundle, Evidence, SelectedEntity, TaskType, Verbosity
from knowcode.retrieval.orchestrator import RetrievalResult
from knowcode.retrieval.response_profiles import ResponseKind, include_source
from knowcode.storage.store import Store

S = Section
# spec: Context synthesis — section priority order and budget boosts per task type. A section's budget
# is min(max_tokens x boost, max_tokens): boosts above 1 mark emphasis (and saturate at the budget),
# boosts below 1 cap a section at that share of the budget. Every template lists all seven sections, so
# sufficiency scores of different task types share one scale.
TASK_TEMPLATES: dict[TaskType, TaskTemplate] = {
    # A bug is in the lines and in how they are reached: code first, then who calls it (spec boosts).
    # Members rarely locate a bug, and the docstring states intent, not behaviour.
    TaskType.DEBUG: TaskTemplate(
        (S.SIGNATURE, S.SOURCE, S.CALLERS, S.CALLEES, S.DOCSTRING, S.SUMMARY, S.CHILDREN),
        {S.SOURCE: 2.0, S.CALLERS: 1.5, S.DOCSTRING: 0.5, S.CHILDREN: 0.25}),
    # A review reads the changed code and weighs its blast radius (callers), like a debug session,
    # but cares what the code promises (docstring) more than what it calls.
    TaskType.REVIEW: TaskTemplate(
        (S.SIGNATURE, S.SOURCE, S.CALLERS, S.DOCSTRING, S.CALLEES, S.SUMMARY, S.CHILDREN),
        {S.SOURCE: 2.0, S.CALLERS: 1.5, S.CHILDREN: 0.25}),
    # An explanation starts from what the code says it does, then what it is built from (callees);
    # who calls it matters least.
    TaskType.EXPLAIN: TaskTemplate(
        (S.SIGNATURE, S.DOCSTRING, S.SUMMARY, S.SOURCE, S.CALLEES, S.CHILDREN, S.CALLERS),
        {S.DOCSTRING: 1.5, S.CALLEES: 1.2, S.CALLERS: 0.5}),
    # Extending needs the interface and its members (where new code goes) and usage examples
    # (callers); bodies and callees are secondary.
    TaskType.EXTEND: TaskTemplate(
        (S.SIGNATURE, S.DOCSTRING, S.CHILDREN, S.SUMMARY, S.CALLERS, S.SOURCE, S.CALLEES),
        {S.CHILDREN: 1.5, S.CALLERS: 1.2, S.CALLEES: 0.5}),
    # "Where is X" is answered by path:lines and a one-line description; bodies are nearly noise.
    TaskType.LOCATE: TaskTemplate(
        (S.SIGNATURE, S.SUMMARY, S.DOCSTRING, S.CALLERS, S.CHILDREN, S.CALLEES, S.SOURCE),
        {S.SOURCE: 0.25, S.CALLEES: 0.5}),
    # A whole-repository question: the explain-like default order, no boosts (a question with no cue is
    # explain since the v6 round of issue 13; this order was its default).
    TaskType.GENERAL: TaskTemplate(
        (S.SIGNATURE, S.DOCSTRING, S.SOURCE, S.SUMMARY, S.CALLEES, S.CALLERS, S.CHILDREN)),
}

SOURCE_BONUS = 0.2  # spec: Sufficiency — raw source in the bundle
DOCSTRING_BONUS = 0.1  # spec: Sufficiency — a docstring over DOCSTRING_BONUS_CHARS characters
DOCSTRING_BONUS_CHARS = 50  # spec: Sufficiency — "docstring > 50 chars"
SHORT_BUNDLE_CHARS = 100  # spec: Sufficiency — a bundle under 100 characters ...
SHORT_BUNDLE_FACTOR = 0.5  # spec: Sufficiency — ... has its score halved
MIN_MAX_TOKENS = 50  # below this not even one entity header and signature fit
MAX_MAX_TOKENS = 200_000  # above the context window of current models


def _calculate_sufficiency(priority: Sequence[Section], present: frozenset[Section] | set[Section], *,
                           source_included: bool, docstring_chars: int, text_chars: int) -> float:
    """spec: Sufficiency — position-weighted coverage of the template priority list, normalised.

    score = Σ 1/(i+1) over the sections present (i = position in `priority`, from 0)
            + 0.2 if source is included + 0.1 if a docstring over 50 characters is present,
    then x 0.5 when the bundle is under 100 characters, divided by the maximum possible score
    max = H(n) + 0.2 + 0.1, where H(n) = Σ_{i<n} 1/(i+1) and n = len(priority), clamped to [0, 1].
    """
    weights = [1.0 / (i + 1) for i in range(len(priority))]
    score = sum(w for section, w in zip(priority, weights, strict=True) if section in present)
    if source_included:
        score += SOURCE_BONUS
    if docstring_chars > DOCSTRING_BONUS_CHARS:
        score += DOCSTRING_BONUS
    if text_chars < SHORT_BUNDLE_CHARS:
        score *= SHORT_BUNDLE_FACTOR
    maximum = sum(weights) + SOURCE_BONUS + DOCSTRING_BONUS
    return min(1.0, max(0.0, score / maximum)) if maximum else 0.0


def validate_budget(max_tokens: int) -> None:
    """Reject a budget no bundle can use well.

    :raises ValueError: max_tokens outside MIN_MAX_TOKENS..MAX_MAX_TOKENS.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) \
            or not MIN_MAX_TOKENS <= max_tokens <= MAX_MAX_TOKENS:
        raise ValueError(f"max_tokens must be a whole number between {MIN_MAX_TOKENS} and {MAX_MAX_TOKENS}, "
                         f"not {max_tokens!r}")


def parse_verbosity(value: str | Verbosity) -> Verbosity:
    """A verbosity from its name.

    :raises ValueError: an unknown name; the message lists the choices.
    """
    try:
        return Verbosity(value)
    except ValueError:
        choices = ", ".join(v.value for v in Verbosity)
        raise ValueError(f"unknown verbosity {value!r}; choose one of: {choices}") from None


def synthesize(result: RetrievalResult, store: Store, root: Path, *, max_tokens: int, task_type: TaskType,
               task_confidence: float, verbosity: Verbosity, counter: TokenCounter,
               caller_counts: MutableMapping[str, int] | None = None) -> ContextBundle:
    """Build the context bundle for a retrieval result.

    :param result: ranked hits, dependency hits, mode, errors and the per-entity budget.
    :param store: the open store the result came from.
    :param root: the repository root (for freshness and whole-file token counts).
    :param max_tokens: the bundle budget; the bundle's text never counts more.
    :param task_type: decides the template and, with the verbosity, whether raw source is included.
    :param task_confidence: the classifier's confidence (1.0 for a type the caller named).
    :param verbosity: the requested verbosity (the bundle holds every field whatever it is).
    :param counter: the token counter the budget is measured with.
    :param caller_counts: caller totals already counted on the result's state of the index, kept
        across queries by a read-only facade (see :meth:`Store.caller_names`); None: count them.
    :return: the bundle.
    """
    hits = (*result.hits, *result.dependencies)
    facts = gather_facts(store, hits, max_callers=MAX_CALLERS, max_callees=MAX_CALLEES,
                         max_children=MAX_CHILDREN, caller_counts=caller_counts)
    template = TASK_TEMPLATES[task_type]
    with_source = include_source(ResponseKind.CONTEXT, task_type, verbosity)
    packed = pack(facts, template, include_source=with_source, max_tokens=max_tokens,
                  per_entity_budget=result.per_entity_budget, counter=counter)
    sufficiency = _calculate_sufficiency(
        template.priority, packed.sections, source_included=Section.SOURCE in packed.sections,
        docstring_chars=packed.docstring_chars, text_chars=len(packed.text))
    selected = tuple(SelectedEntity(f.hit.entity_id, f.hit.qualified_name, f.hit.kind, f.hit.path,
                                    f.entity_start, f.entity_end, f.hit.source)
                     for f in (facts[i] for i in packed.entities))
    paths = sorted({entity.path for entity in selected})
    changed = changed_since_index(store, root, paths)
    baseline = whole_file_tokens(store, root, paths, counter)
    evidence = tuple(Evidence(rank, h.chunk_id, h.entity_id, h.score, h.source)
                     for rank, h in enumerate(hits, start=1))
    return ContextBundle(
        query=result.query, task_type=task_type, task_confidence=task_confidence,
        retrieval_mode=result.mode, verbosity=verbosity, max_tokens=max_tokens, context_text=packed.text,
        total_tokens=packed.total_tokens, token_encoding=counter.name, source_included=with_source,
        truncated=bool(packed.truncation), truncation=packed.truncation, sufficiency_score=sufficiency,
        sections_present=tuple(s.value for s in template.priority if s in packed.sections),
        retrieval_confidence=retrieval_confidence(result.hits),
        leg_agreement=leg_agreement(result.hits, result.mode), files_changed_since_index=len(changed),
        changed_files=changed, selected_entities=selected, evidence=evidence, errors=result.errors,
        baseline_tokens=baseline, reduction_factor=reduction_factor(packed.total_tokens, baseline),
        reduction_summary=reduction_summary(packed.total_tokens, baseline))
