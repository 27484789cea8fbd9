"""The routing artifact: a routing evaluation written as pinned, plain JSON (read by llm/routing_policy.py).

The file holds what was measured (per task type), on what (KnowCode version, index version and its
parts, the query set's SHA-256) and against which bars. ``knowcode eval`` prints its SHA-256; pinning that
in ``[llm] routing_artifact_sha256`` is what lets the routing policy trust it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from knowcode.evals.routing_eval import RoutingEvalReport
from knowcode.llm.routing_policy import ARTIFACT_FORMAT, ARTIFACT_FORMAT_VERSION

# `knowcode eval` writes here by default, relative to the repository root; the scanner never indexes
# `.knowcode/`, so the artifact cannot turn up in search results.
DEFAULT_ARTIFACT_PATH = Path(".knowcode") / "routing-eval.json"
ARTIFACT_FILE_MODE = 0o644  # an ordinary readable file (a temporary file starts owner-only)


def artifact_data(report: RoutingEvalReport) -> dict[str, Any]:
    """The artifact document of a report (per-query outcomes are left out).

    :param report: the evaluation.
    :return: JSON-ready data in the artifact format.
    """
    return {
        "format": ARTIFACT_FORMAT,
        "format_version": ARTIFACT_FORMAT_VERSION,
        "created_at": report.created_at,
        "knowcode_version": report.knowcode_version,
        "index_version": report.index_version,
        "index": report.index,
        "query_set": {"path": report.query_set_path, "sha256": report.query_set_sha256,
                      "queries": len(report.outcomes)},
        "quality_floor": report.quality_floor,
        "sufficiency_bar": report.sufficiency_bar,
        "task_types": {result.task_type.value: {
            "queries": result.queries, "local_eligible": result.local_eligible, "quality": result.quality,
            "bundle_recall": result.bundle_recall, "ndcg_at_10": result.ndcg_at_10,
            "meets_floor": result.meets_floor} for result in report.task_types},
        "passing_task_types": [task.value for task in report.passing_task_types],
    }


def write_routing_artifact(report: RoutingEvalReport, path: Path) -> str:
    """Write the artifact atomically (a temporary file in the same folder, then a rename).

    :param report: the evaluation.
    :param path: the artifact file; missing folders are created.
    :return: the SHA-256 hex of the exact bytes written, to pin as ``routing_artifact_sha256``.
    :raises OSError: the folder or file cannot be written.
    """
    data = (json.dumps(artifact_data(report), indent=2) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, ARTIFACT_FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return hashlib.sha256(data).hexdigest()


def pin_lines(configured_path: str, sha256: str) -> str:
    """The two ``[llm]`` settings that pin an artifact, as TOML lines to paste into knowcode.toml.

    :param configured_path: the artifact path as the config records it (relative to the repository root).
    :param sha256: the SHA-256 :func:`write_routing_artifact` returned.
    :return: ``routing_artifact = "..."`` and ``routing_artifact_sha256 = "..."`` on two lines.
    """
    # json.dumps emits only escapes that TOML basic strings accept too (quote, backslash, \n, \uXXXX).
    return f"routing_artifact = {json.dumps(configured_path)}\nrouting_artifact_sha256 = {json.dumps(sha256)}"
