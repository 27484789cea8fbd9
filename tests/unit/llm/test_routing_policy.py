"""The routing policy: local answers only for the task types a pinned, current eval artifact verified."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import knowcode
from knowcode.config import AppConfig, LLMConfig, load_config
from knowcode.evals import RoutingEvalReport, TaskTypeQuality, write_routing_artifact
from knowcode.llm.routing_policy import RoutingPolicy, load_routing_policy, local_bar
from knowcode.models import TaskType
from tests.conftest import write_tree

INDEX_VERSION = "12" * 32
CODE_VERSION = "1.2.3"
ARTIFACT = ".knowcode/routing-eval.json"


def measured(task: TaskType, quality: float = 0.0, meets: bool = False, eligible: int = 0) -> TaskTypeQuality:
    return TaskTypeQuality(task, eligible, eligible, quality, quality, quality, meets)


def write(root: Path, llm: LLMConfig, rows: dict[TaskType, TaskTypeQuality], *,
          index_version: str = INDEX_VERSION, code_version: str = CODE_VERSION) -> str:
    """Write an artifact measured under `llm` into root/ARTIFACT; return its SHA-256."""
    report = RoutingEvalReport(
        created_at="2025-01-01T00:00:00+00:00", knowcode_version=code_version, index_version=index_version,
        index={}, query_set_path="knowcode-eval.json", query_set_sha256="ab" * 32,
        quality_floor=llm.routing_quality_floor, sufficiency_bar=local_bar(llm),
        task_types=tuple(rows.get(task, measured(task)) for task in TaskType), outcomes=(), seconds=0.0)
    return write_routing_artifact(report, root / ARTIFACT)


def pinned(sha256: str, llm: LLMConfig | None = None) -> LLMConfig:
    return dataclasses.replace(llm or LLMConfig(), routing_artifact=ARTIFACT, routing_artifact_sha256=sha256)


def policy(root: Path, llm: LLMConfig, **versions: str) -> RoutingPolicy:
    options = {"index_version": INDEX_VERSION, "code_version": CODE_VERSION, **versions}
    return load_routing_policy(llm, root, **options)


PASSING = {
    TaskType.LOCATE: measured(TaskType.LOCATE, 0.9, True, 8),
    TaskType.GENERAL: measured(TaskType.GENERAL, 0.85, True, 12),
    TaskType.EXPLAIN: measured(TaskType.EXPLAIN, 1.0, False, 2),  # too few eligible queries when measured
    TaskType.DEBUG: measured(TaskType.DEBUG, 0.5, False, 9),
}


def assert_off(result: RoutingPolicy, *words: str) -> None:
    assert result.local_answer_task_types == frozenset()
    assert result.reason.startswith("local answers are off: ")
    for word in words:
        assert word in result.reason


def test_a_hand_written_list_is_force_cleared_at_load(tmp_path: Path) -> None:
    write_tree(tmp_path, {"knowcode.toml": '[llm]\nlocal_answer_task_types = ["locate"]\n'})
    llm = load_config(tmp_path).llm
    assert llm.local_answer_task_types == ()
    result = policy(tmp_path, llm)
    assert_off(result, "no routing artifact is configured", "knowcode eval --set FILE --out FILE",
               "routing_artifact", "routing_artifact_sha256")
    assert result.artifact is None


def test_a_valid_artifact_enables_exactly_its_passing_task_types(tmp_path: Path) -> None:
    sha256 = write(tmp_path, LLMConfig(), PASSING)
    result = policy(tmp_path, pinned(sha256))
    assert result.local_answer_task_types == {TaskType.LOCATE, TaskType.GENERAL}
    assert result.artifact == ARTIFACT
    assert result.reason.startswith(f"local answers on for locate, general (verified by {ARTIFACT}")
    assert "explain (not verified: 2 local-eligible of 2 queries)" in result.reason
    assert "debug (quality 0.50 < floor 0.80)" in result.reason and "review (no queries)" in result.reason


def test_the_pin_is_case_insensitive_hex(tmp_path: Path) -> None:
    sha256 = write(tmp_path, LLMConfig(), PASSING)
    assert policy(tmp_path, pinned(f"  {sha256.upper()} ")).local_answer_task_types == {TaskType.LOCATE,
                                                                                         TaskType.GENERAL}


def test_an_artifact_where_nothing_passed_enables_nothing(tmp_path: Path) -> None:
    sha256 = write(tmp_path, LLMConfig(), {TaskType.DEBUG: PASSING[TaskType.DEBUG]})
    result = policy(tmp_path, pinned(sha256))
    assert result.local_answer_task_types == frozenset()
    assert result.reason.startswith(f"local answers are off for every task type (verified by {ARTIFACT}")


def test_a_tampered_artifact_disables_everything(tmp_path: Path) -> None:
    sha256 = write(tmp_path, LLMConfig(), PASSING)
    path = tmp_path / ARTIFACT
    raw = bytearray(path.read_bytes())
    at = raw.index(b'"quality": 0.5')  # debug's quality; one byte changes it to 0.9
    raw[at + len(b'"quality": 0.')] = ord("9")
    path.write_bytes(bytes(raw))
    assert_off(policy(tmp_path, pinned(sha256)), "SHA-256", sha256, hashlib.sha256(raw).hexdigest(),
               "edited or replaced", f"knowcode eval --out {ARTIFACT}")


@pytest.mark.parametrize(("versions", "words"), [
    ({"code_version": "1.2.4"}, ("stale", "KnowCode '1.2.3'", "this is '1.2.4'")),
    ({"index_version": "34" * 32}, ("stale", "other retrieval settings", "121212121212", "343434343434")),
])
def test_a_stale_artifact_disables_everything(tmp_path: Path, versions: dict[str, str],
                                              words: tuple[str, ...]) -> None:
    sha256 = write(tmp_path, LLMConfig(), PASSING)
    assert_off(policy(tmp_path, pinned(sha256), **versions), *words, "knowcode eval")


def test_an_artifact_measured_at_another_sufficiency_bar_is_stale(tmp_path: Path) -> None:
    sha256 = write(tmp_path, LLMConfig(), PASSING)  # bar 0.8
    raised = pinned(sha256, LLMConfig(sufficiency_threshold=0.9))
    assert_off(policy(tmp_path, raised), "stale", "sufficiency bar 0.8", "now 0.9")


def test_a_raised_floor_only_disables(tmp_path: Path) -> None:
    measured_under = LLMConfig(sufficiency_threshold=0.95, routing_quality_floor=0.8)  # bar 0.95
    sha256 = write(tmp_path, measured_under, {TaskType.LOCATE: measured(TaskType.LOCATE, 0.92, True, 6),
                                              TaskType.GENERAL: measured(TaskType.GENERAL, 0.85, True, 6)})
    same_bar = LLMConfig(sufficiency_threshold=0.95, routing_quality_floor=0.9)
    result = policy(tmp_path, pinned(sha256, same_bar))
    assert result.local_answer_task_types == {TaskType.LOCATE}
    assert "general (quality 0.85 < floor 0.90)" in result.reason
    lowered = LLMConfig(sufficiency_threshold=0.95, routing_quality_floor=0.0)
    # Lowering the floor never enables a type that did not pass when measured.
    sha256 = write(tmp_path, measured_under, {TaskType.EXPLAIN: measured(TaskType.EXPLAIN, 0.7, False, 6)})
    assert policy(tmp_path, pinned(sha256, lowered)).local_answer_task_types == frozenset()


def test_a_missing_artifact(tmp_path: Path) -> None:
    assert_off(policy(tmp_path, pinned("ab" * 32)), "does not exist", str(tmp_path / ARTIFACT))


def test_an_artifact_without_a_pin(tmp_path: Path) -> None:
    write(tmp_path, LLMConfig(), PASSING)
    result = policy(tmp_path, dataclasses.replace(LLMConfig(), routing_artifact=ARTIFACT))
    assert_off(result, "routing_artifact_sha256 is not set", ARTIFACT)
    assert result.artifact == ARTIFACT


def test_a_pin_that_is_no_sha256(tmp_path: Path) -> None:
    write(tmp_path, LLMConfig(), PASSING)
    assert_off(policy(tmp_path, pinned("not-a-hash")), "is not a SHA-256")


@pytest.mark.parametrize(("content", "words"), [
    (b"\xff\xfe not json", ("not UTF-8 JSON",)),
    (b"[1, 2]", ("is not a knowcode-routing-eval file",)),
    (b'{"format": "knowcode-routing-eval", "format_version": 2}', ("format_version 1",)),
    (json.dumps({"format": "knowcode-routing-eval", "format_version": 1,
                 "task_types": {"locate": {"queries": 1}}}).encode(),
     ("malformed task_types entry 'locate'",)),
    (json.dumps({"format": "knowcode-routing-eval", "format_version": 1, "task_types": {"telepathy": {}}}
                ).encode(), ("malformed task_types entry 'telepathy'",)),
])
def test_a_pinned_file_that_is_no_artifact(tmp_path: Path, content: bytes, words: tuple[str, ...]) -> None:
    path = tmp_path / ARTIFACT
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert_off(policy(tmp_path, pinned(hashlib.sha256(content).hexdigest())), *words)


# --- through the facade: knowcode eval's own artifact, pinned as printed ----------------------------------


def config_with(root: Path, extra: dict[str, Any]) -> None:
    lines = ["[llm]"] + [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
    (root / "knowcode.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_facade_trusts_its_pinned_artifact_across_code_edits(sample_repo: Path, tmp_path: Path) -> None:
    # A bar and floor of 0: every first bundle is local-eligible, so 5 locate queries pass.
    bars = {"sufficiency_threshold": 0.0, "routing_quality_floor": 0.0}
    config_with(sample_repo, bars)
    queries = [{"query": f"where is {name} defined", "category": "symbol", "relevant": ["pkg/util.py"],
                "secondary": []} for name in ("helper", "slugify", "Engine", "render", "App")]
    (tmp_path / "set.json").write_text(json.dumps(queries), encoding="utf-8")
    engine = knowcode.open(sample_repo, store=tmp_path / "store")
    assert engine.routing_policy().local_answer_task_types == frozenset()
    sha256 = write_routing_artifact(engine.evaluate(tmp_path / "set.json"), sample_repo / ARTIFACT)
    engine.close()

    config_with(sample_repo, {**bars, "routing_artifact": ARTIFACT, "routing_artifact_sha256": sha256})
    engine = knowcode.open(sample_repo, store=tmp_path / "store")
    assert engine.routing_policy().local_answer_task_types == {TaskType.LOCATE}
    write_tree(sample_repo, {"pkg/util.py": "def helper(value):\n    return value * 2\n"})  # code edit
    engine.index()
    assert engine.routing_policy().local_answer_task_types == {TaskType.LOCATE}
    engine.close()

    changed = AppConfig(hybrid_alpha=0.5, llm=load_config(sample_repo).llm)  # another retrieval setting
    stale = knowcode.open(sample_repo, store=tmp_path / "other-store", config=changed).routing_policy()
    assert_off(stale, "other retrieval settings")


def test_this_repositorys_pinned_artifact_is_current(tmp_path: Path) -> None:
    # The README's `knowcode ask` transcript answers locally only while the artifact this repository's
    # knowcode.toml pins matches the code: a change to retrieval or to the index format (a parser output
    # version) needs `knowcode eval --out .knowcode/routing-eval.json` and the new SHA-256 pinned.
    repository = Path(__file__).resolve().parents[3]
    policy = knowcode.open(repository, store=tmp_path / "store").routing_policy()
    assert policy.local_answer_task_types == {TaskType.EXPLAIN, TaskType.LOCATE}, policy.reason
