"""Local telemetry: one JSON line per logical query (spec: Local-vs-LLM routing), never sent anywhere.

A query that climbs the escalation ladder and tries several models is still one event: its attempts are a
list inside it. Events carry no question text and no code -- only the question's SHA-256 and length, the
route, the attempts' outcomes, tokens and latency -- so the file can be shared when reporting a problem.
Each event is appended with a single ``write`` on a file opened for appending, which the OS keeps whole
when several processes append at once.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from knowcode.models import Answer

TELEMETRY_FILE_NAME = "telemetry.jsonl"  # in the index folder, beside the store
EVENT_KIND = "query"


@dataclass(frozen=True)
class TelemetryLog:
    """Appends query events to a JSON-lines file."""

    path: Path

    def record_answer(self, answer: Answer) -> dict[str, object]:
        """Append the one event of an answered (or unanswerable) question; returns the event written."""
        event: dict[str, object] = {
            "event": EVENT_KIND,
            "id": uuid.uuid4().hex,
            "ts": time.time(),
            "question_sha256": hashlib.sha256(answer.question.encode("utf-8")).hexdigest(),
            "question_chars": len(answer.question),
            "task_type": answer.task_type.value,
            "route": answer.route.value,
            "model": answer.model,
            "attempts": [{"model": attempt.model, "outcome": attempt.outcome,
                          "latency_ms": round(attempt.latency_ms, 1)} for attempt in answer.attempts],
            "sufficiency_score": answer.sufficiency_score,
            "context_tokens": answer.context_tokens,
            "input_tokens": answer.input_tokens,
            "output_tokens": answer.output_tokens,
            "latency_ms": round(answer.latency_ms, 1),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")
        return event


def read_events(path: Path) -> list[dict[str, object]]:
    """Every event in a telemetry file, oldest first; an absent file has none."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
