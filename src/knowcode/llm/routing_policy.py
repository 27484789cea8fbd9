"""Which task types may be answered locally (spec: Local-vs-LLM routing): those a pinned, current
``knowcode eval`` artifact verified, and no others.

config.py force-clears ``[llm] local_answer_task_types`` at load, so a hand-written list never turns local
answers on. :func:`load_routing_policy` is the only way back: it reads the artifact that ``[llm]
routing_artifact`` names, checks its bytes against ``routing_artifact_sha256``, and checks that it was
measured by this KnowCode, with these retrieval settings and at this sufficiency bar. Any failed check
leaves local answers off, with a reason that names the fix. This module defines the artifact's format;
evals/routing_artifact.py writes it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowcode.config import LLMConfig
from knowcode.models import TaskType

ARTIFACT_FORMAT = "knowcode-routing-eval"  # the artifact's "format" field
# The artifact's "format_version"; bump when its fields change (one line per bump):
#   1: per task type queries, local_eligible, quality, bundle_recall, ndcg_at_10, meets_floor.
ARTIFACT_FORMAT_VERSION = 1
EVAL_COMMAND = "knowcode eval --set FILE --out FILE"  # the command that writes an artifact
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")  # a SHA-256 as `knowcode eval` prints it (lower-case hex)


@dataclass(frozen=True, slots=True)
class RoutingPolicy:
    """The task types answered locally, why, and the artifact that decided it (None: none configured)."""

    local_answer_task_types: frozenset[TaskType]
    reason: str
    artifact: str | None


@dataclass(frozen=True, slots=True)
class _Measured:
    """What the artifact says about one task type (the fields routing reads)."""

    queries: int
    local_eligible: int
    quality: float
    meets_floor: bool


def local_bar(llm: LLMConfig) -> float:
    """The sufficiency a bundle needs to answer locally: max(sufficiency_threshold, routing_quality_floor)."""
    return max(llm.sufficiency_threshold, llm.routing_quality_floor)


class _Off(Exception):
    """The artifact cannot be trusted; the message says why and what to do."""


def load_routing_policy(llm: LLMConfig, root: Path, *, index_version: str,
                        code_version: str) -> RoutingPolicy:
    """Decide which task types may be answered locally, from the pinned routing artifact.

    :param llm: the ``[llm]`` settings: routing_artifact, routing_artifact_sha256, the floor and threshold.
    :param root: the repository root; a relative routing_artifact is read from under it.
    :param index_version: the current index version (evals/index_version.py) the artifact must match.
    :param code_version: the running KnowCode's version the artifact must match.
    :return: the task types that passed (empty when anything is missing, edited or stale) and why.
    """
    configured = llm.routing_artifact.strip()
    if not configured:
        return RoutingPolicy(frozenset(), f"local answers are off: no routing artifact is configured; run "
                             f"`{EVAL_COMMAND}` and pin its output with [llm] routing_artifact and "
                             "routing_artifact_sha256", None)
    try:
        data = _verified(root / configured, configured, llm.routing_artifact_sha256)
        measured = _current(data, configured, index_version=index_version, code_version=code_version,
                            bar=local_bar(llm))
    except _Off as off:
        return RoutingPolicy(frozenset(), f"local answers are off: {off}", configured)
    floor = llm.routing_quality_floor
    # A type passes only if it met the floor when measured AND meets today's floor: raising
    # routing_quality_floor can switch types off, lowering it never switches one on.
    passing = frozenset(task for task, m in measured.items() if m.meets_floor and m.quality >= floor)
    return RoutingPolicy(passing, _summary(measured, passing, configured, floor), configured)


def _rerun(configured: str) -> str:
    return f"run `knowcode eval --out {configured}` and pin the SHA-256 it prints as routing_artifact_sha256"


def _verified(path: Path, configured: str, pinned_sha256: str) -> Any:
    """The artifact's JSON, once its bytes match the pinned SHA-256."""
    pinned = pinned_sha256.strip().lower()
    if not pinned:
        raise _Off(f"[llm] routing_artifact_sha256 is not set for {configured}; pin the SHA-256 that "
                   "`knowcode eval` printed for it")
    if not _SHA256_HEX.fullmatch(pinned):
        raise _Off(f"[llm] routing_artifact_sha256 {pinned_sha256!r} is not a SHA-256 (64 hex digits); "
                   "copy the one `knowcode eval` printed")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise _Off(f"routing artifact {path} does not exist; {_rerun(configured)}") from None
    except OSError as err:
        raise _Off(f"cannot read routing artifact {path} ({err.strerror or err}); "
                   f"{_rerun(configured)}") from None
    actual = hashlib.sha256(raw).hexdigest()
    if not hmac.compare_digest(actual.encode(), pinned.encode()):
        raise _Off(f"routing artifact {configured} has SHA-256 {actual}, not the pinned {pinned} (it was "
                   f"edited or replaced); {_rerun(configured)}")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise _Off(f"routing artifact {configured} is not UTF-8 JSON ({err}); {_rerun(configured)}") from None


def _current(data: Any, configured: str, *, index_version: str, code_version: str,
             bar: float) -> dict[TaskType, _Measured]:
    """The per-type results of a well-formed artifact measured under today's conditions."""
    if not isinstance(data, dict) or data.get("format") != ARTIFACT_FORMAT \
            or data.get("format_version") != ARTIFACT_FORMAT_VERSION:
        raise _Off(f"{configured} is not a {ARTIFACT_FORMAT} file of format_version "
                   f"{ARTIFACT_FORMAT_VERSION}; {_rerun(configured)}")
    measured = _task_types(data.get("task_types"), configured)
    if data.get("knowcode_version") != code_version:
        raise _Off(f"routing artifact {configured} is stale: measured by KnowCode "
                   f"{data.get('knowcode_version')!r}, this is {code_version!r}; {_rerun(configured)}")
    if data.get("index_version") != index_version:
        raise _Off(f"routing artifact {configured} is stale: measured with other retrieval settings or "
                   f"another index format (index_version {str(data.get('index_version'))[:12]}..., now "
                   f"{index_version[:12]}...); {_rerun(configured)}")
    recorded_bar = data.get("sufficiency_bar")
    if not _is_number(recorded_bar) or recorded_bar != bar:
        raise _Off(f"routing artifact {configured} is stale: measured at sufficiency bar {recorded_bar!r}, "
                   f"the bar is now {bar} (max of sufficiency_threshold and routing_quality_floor); "
                   f"{_rerun(configured)}")
    return measured


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _task_types(raw: Any, configured: str) -> dict[TaskType, _Measured]:
    """Read the artifact's ``task_types`` table; any malformed entry rejects the whole artifact."""
    known = {task.value: task for task in TaskType}
    if not isinstance(raw, dict):
        raise _Off(f"routing artifact {configured} has no task_types table; {_rerun(configured)}")
    measured: dict[TaskType, _Measured] = {}
    for name, entry in raw.items():
        ok = (name in known and isinstance(entry, dict) and _is_count(entry.get("queries"))
              and _is_count(entry.get("local_eligible")) and _is_number(entry.get("quality"))
              and isinstance(entry.get("meets_floor"), bool))
        if not ok:
            raise _Off(f"routing artifact {configured} has a malformed task_types entry {name!r}; "
                       f"{_rerun(configured)}")
        measured[known[name]] = _Measured(entry["queries"], entry["local_eligible"], float(entry["quality"]),
                                          entry["meets_floor"])
    return measured


def _summary(measured: dict[TaskType, _Measured], passing: frozenset[TaskType], configured: str,
             floor: float) -> str:
    """Which types are on, which are off and why, and the artifact that says so."""
    off = []
    for task in TaskType:
        m = measured.get(task)
        if task in passing:
            continue
        if m is None or m.queries == 0:
            off.append(f"{task.value} (no queries)")
        elif m.quality < floor:
            off.append(f"{task.value} (quality {m.quality:.2f} < floor {floor:.2f})")
        else:
            off.append(f"{task.value} (not verified: {m.local_eligible} local-eligible of "
                       f"{m.queries} queries)")
    on = ", ".join(task.value for task in TaskType if task in passing)
    head = (f"local answers on for {on}" if passing else "local answers are off for every task type")
    return f"{head} (verified by {configured}, quality floor {floor:.2f}); off: {', '.join(off) or 'none'}"
