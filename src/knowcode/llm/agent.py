"""Answering a question (spec: Local-vs-LLM routing): locally from a sufficient bundle, else through an LLM.

``smart_answer`` climbs :data:`ESCALATION_LADDER`, one context bundle per rung. A bundle is the answer
itself when the question's task type is verified for local answers (``llm/routing_policy.py``) and its
sufficiency reaches :func:`local_bar`; otherwise the last bundle goes to the configured models.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from knowcode.config import LLMConfig, ModelConfig
from knowcode.errors import StoreError
from knowcode.llm.prompt_contract import MAX_ERROR_CHARS, build_messages, truncate_field
from knowcode.llm.providers import ChatProvider, ProviderError, create_chat_provider
from knowcode.llm.rate_limiter import RateLimiter, RateLimitExceeded
from knowcode.llm.routing_policy import RoutingPolicy, local_bar
from knowcode.models import (
    Answer,
    AnswerAttempt,
    AnswerRoute,
    AnswerSource,
    ContextBundle,
    TaskType,
    Verbosity,
)
from knowcode.telemetry import TelemetryLog

logger = logging.getLogger(__name__)
LOCAL_MODEL = "local"  # the `model` of an attempt that is a bundle rung, not a model call
# Attempt outcomes (models.AnswerAttempt); providers also report "exhausted" and "timeout".
ANSWERED = "answered"
INSUFFICIENT = "insufficient"
NOT_VERIFIED = "not_verified"
RATE_LIMITED = "rate_limited"
ERROR = "error"


@dataclass(frozen=True)
class Rung:
    """One step of the escalation ladder: the bundle to build."""

    max_tokens: int
    limit_entities: int
    verbosity: Verbosity
    expand_deps: bool


# spec: Local-vs-LLM routing -- 1500 tokens / 1 entity minimal -> 3000 / 3 + deps -> same at standard.
ESCALATION_LADDER = (
    Rung(1500, 1, Verbosity.MINIMAL, expand_deps=False),
    Rung(3000, 3, Verbosity.MINIMAL, expand_deps=True),
    Rung(3000, 3, Verbosity.STANDARD, expand_deps=True),
)


ProviderFactory = Callable[[ModelConfig], ChatProvider]
BundleBuilder = Callable[[Rung], ContextBundle]


@dataclass(frozen=True)
class LLMReply:
    """What the LLM leg produced: the first model's answer, or None after every model failed."""

    text: str | None
    model: str | None
    attempts: tuple[AnswerAttempt, ...]
    input_tokens: int | None = None
    output_tokens: int | None = None


def limiter_key(model: ModelConfig) -> str:
    """The rate-limit bucket of a model: the same name on two servers counts separately."""
    return f"{model.provider}:{model.base_url or 'default'}:{model.name}"


def _elapsed_ms(clock: Callable[[], float], start: float) -> float:
    return (clock() - start) * 1000.0


def answer(
    question: str,
    bundle: ContextBundle,
    models: Sequence[ModelConfig],
    *,
    limiter_path: Path,
    create_provider: ProviderFactory = create_chat_provider,
    clock: Callable[[], float] = time.perf_counter,
) -> LLMReply:
    """The LLM leg (spec): ask each configured model in order until one answers.

    Before each call the model's client-side :class:`RateLimiter` (its rpm/rpd, shared by every process
    through ``limiter_path``) must grant a slot. A used-up limit, the provider's resource exhaustion (429,
    quota), a timeout or any other provider failure moves on to the next model; every try is reported.

    :param question: the question as asked.
    :param bundle: the context bundle; its text and errors go into the prompt contract's envelope.
    :param models: the configured models, in failover order.
    :param limiter_path: the SQLite file holding the rate limiters' request log.
    :param create_provider: makes a chat client for a model (tests pass fakes).
    :return: the answer and its model, or no text when every model failed; the attempts either way.
    """
    messages = build_messages(question, bundle.context_text, bundle.task_type, bundle.errors)
    attempts: list[AnswerAttempt] = []
    for model in models:
        start = clock()
        limiter = RateLimiter(limiter_path, limiter_key(model), model.rpm or None, model.rpd or None)
        try:
            limiter.acquire()
            completion = create_provider(model).complete(messages)
        except RateLimitExceeded as err:
            attempts.append(AnswerAttempt(model.name, RATE_LIMITED, truncate_field(str(err), MAX_ERROR_CHARS),
                                          _elapsed_ms(clock, start)))
            continue
        except (ProviderError, StoreError) as err:  # StoreError: the limiter's log is unusable
            outcome = err.outcome if isinstance(err, ProviderError) else ERROR
            attempts.append(AnswerAttempt(model.name, outcome, truncate_field(str(err), MAX_ERROR_CHARS),
                                          _elapsed_ms(clock, start)))
            continue
        attempts.append(AnswerAttempt(model.name, ANSWERED, None, _elapsed_ms(clock, start)))
        return LLMReply(completion.text, model.name, tuple(attempts), completion.input_tokens,
                        completion.output_tokens)
    return LLMReply(None, None, tuple(attempts))


def sources_of(bundle: ContextBundle) -> tuple[AnswerSource, ...]:
    """The bundle's entities as an answer's sources, in bundle order."""
    return tuple(AnswerSource(entity.path, entity.start_line, entity.end_line, entity.qualified_name)
                 for entity in bundle.selected_entities)


def _sources_block(sources: Sequence[AnswerSource]) -> str:
    lines = [f"- {source.label}" for source in sources]
    return "Sources:\n" + ("\n".join(lines) if lines else "- (none)")


def local_answer_text(bundle: ContextBundle) -> str:
    """A local answer for a person: what it is, the bundle's Markdown, then its sources."""
    header = (f"Answered locally from the index (sufficiency {bundle.sufficiency_score:.2f}, "
              f"{bundle.total_tokens} tokens); no model was called.")
    return f"{header}\n\n{bundle.context_text.strip()}\n\n{_sources_block(sources_of(bundle))}"


def unanswered_text(reason: str, bundle: ContextBundle) -> str:
    """Why nothing answered, followed by the most relevant code found, so the caller still has it."""
    return (f"No answer: {reason}\n\nThe most relevant code found:\n\n{bundle.context_text.strip()}\n\n"
            f"{_sources_block(sources_of(bundle))}")


def _failure_reason(policy: RoutingPolicy, models: Sequence[ModelConfig], reply: LLMReply,
                    last_local: AnswerAttempt) -> str:
    if not models:
        # The policy's reason says on its own that (and why) local answers are off for this type; a
        # verified type fell short on sufficiency instead, which its last local attempt records.
        local = (f"no bundle was sufficient for a local answer ({last_local.error})"
                 if last_local.outcome == INSUFFICIENT else policy.reason.rstrip("."))
        return (f"{local}. Also, no models are configured: add an [llm] models list to knowcode.toml "
                "(see the README).")
    tried = "; ".join(f"{attempt.model}: {attempt.outcome}" for attempt in reply.attempts)
    return f"every configured model failed ({tried})."


def smart_answer(
    question: str,
    *,
    task_type: TaskType,
    build_bundle: BundleBuilder,
    policy: RoutingPolicy,
    llm: LLMConfig,
    limiter_path: Path,
    telemetry: TelemetryLog | None = None,
    create_provider: ProviderFactory = create_chat_provider,
    clock: Callable[[], float] = time.perf_counter,
) -> Answer:
    """Answer a question locally when a bundle provably suffices, else through the LLM leg (spec).

    With the task type verified for local answers (``policy``), each rung of :data:`ESCALATION_LADDER`
    builds a bundle and the first one whose sufficiency reaches :func:`local_bar` is the answer. Otherwise
    (or when no rung suffices) the last rung's bundle goes to :func:`answer`. Without a verified task type
    the cheaper rungs are skipped: they could not answer. Exactly one telemetry event is recorded.

    :param question: the question as asked.
    :param task_type: the question's task type (classified or named by the caller).
    :param build_bundle: builds the context bundle for a rung.
    :param policy: which task types may be answered locally, and why.
    :param llm: the [llm] configuration: models, sufficiency threshold and quality floor.
    :param limiter_path: the rate limiters' shared request log.
    :param telemetry: where the query event goes; None records nothing.
    :param create_provider: makes a chat client for a model.
    :return: the answer with its route, sources and every attempt.
    """
    start = clock()
    local_allowed = task_type in policy.local_answer_task_types
    bar = local_bar(llm)
    attempts: list[AnswerAttempt] = []
    bundle: ContextBundle | None = None
    for rung in ESCALATION_LADDER if local_allowed else ESCALATION_LADDER[-1:]:
        rung_start = clock()
        bundle = build_bundle(rung)
        sufficient = local_allowed and bundle.sufficiency_score >= bar
        if sufficient:
            outcome, error = ANSWERED, None
        elif local_allowed:
            outcome, error = INSUFFICIENT, f"sufficiency {bundle.sufficiency_score:.2f} < {bar:.2f}"
        else:
            outcome, error = NOT_VERIFIED, truncate_field(policy.reason, MAX_ERROR_CHARS)
        attempts.append(AnswerAttempt(LOCAL_MODEL, outcome, error, _elapsed_ms(clock, rung_start),
                                      rung.max_tokens, bundle.sufficiency_score))
        if sufficient:
            break
    assert bundle is not None  # the ladder is never empty
    last_local = attempts[-1]
    if last_local.outcome == ANSWERED:
        reply = LLMReply(None, None, ())
        route, text = AnswerRoute.LOCAL, local_answer_text(bundle)
    else:
        reply = answer(question, bundle, llm.models, limiter_path=limiter_path,
                       create_provider=create_provider, clock=clock)
        attempts.extend(reply.attempts)
        if reply.text is not None:
            route, text = AnswerRoute.LLM, reply.text
        else:
            route = AnswerRoute.NONE
            text = unanswered_text(_failure_reason(policy, llm.models, reply, last_local), bundle)
    result = Answer(
        question=question, text=text, route=route, model=reply.model, task_type=task_type,
        sufficiency_score=bundle.sufficiency_score, sources=sources_of(bundle), attempts=tuple(attempts),
        context_tokens=bundle.total_tokens,
        input_tokens=reply.input_tokens, output_tokens=reply.output_tokens,
        latency_ms=_elapsed_ms(clock, start), routing_reason=policy.reason,
    )
    if telemetry is not None:
        try:
            telemetry.record_answer(result)
        except OSError as err:  # the answer matters more than its log line
            logger.warning("telemetry not written to %s: %s", telemetry.path, err)
    return result
