"""`KnowCode.context`: the facade end to end on the sample repository."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import knowcode
from knowcode.analysis.token_counter import default_counter
from knowcode.config import AppConfig
from knowcode.engine import KnowCode
from knowcode.models import ContextBundle, RetrievalMode, TaskType, Verbosity

COUNTER = default_counter()


@pytest.fixture
def kc(sample_repo: Path, tmp_path: Path) -> Iterator[KnowCode]:
    engine = knowcode.open(sample_repo, store=tmp_path / "store")
    yield engine
    engine.close()


def test_context_returns_a_bundle_within_budget(kc: KnowCode) -> None:
    bundle = kc.context("why does Engine.run crash")
    assert isinstance(bundle, ContextBundle)
    assert bundle.total_tokens == COUNTER.count(bundle.context_text) <= bundle.max_tokens == 6000
    assert bundle.token_encoding == "cl100k"
    assert bundle.retrieval_mode is RetrievalMode.HYBRID
    assert bundle.errors == ()
    assert not bundle.truncated and bundle.truncation == ()
    assert 0.0 < bundle.sufficiency_score <= 1.0


def test_auto_task_type_is_classified(kc: KnowCode) -> None:
    bundle = kc.context("why does Engine.run crash")
    assert bundle.task_type is TaskType.DEBUG
    assert 0.0 < bundle.task_confidence <= 1.0


@pytest.mark.parametrize("task", ["explain", TaskType.EXPLAIN])
def test_a_named_task_type_has_full_confidence(kc: KnowCode, task: str | TaskType) -> None:
    bundle = kc.context("why does Engine.run crash", task_type=task)
    assert (bundle.task_type, bundle.task_confidence) == (TaskType.EXPLAIN, 1.0)


def test_each_entity_block_has_its_location_signature_and_relations(kc: KnowCode) -> None:
    bundle = kc.context("why does Engine.run crash", task_type="debug")
    text = bundle.context_text
    assert "## 1. `pkg.core.Engine.run` (method) — pkg/core.py:12-14" in text
    assert "```python\ndef run(self, text)\n```" in text  # signature
    assert "        return helper(slugify(text))" in text  # source, trimmed to the method's lines
    assert "class Engine(Base)" not in text.split("## 2.")[0]
    assert "**Calls:** `pkg.core.Base.start`, `pkg.util.helper`, `pkg.util.slugify`" in text
    assert "**Called by:** `pkg.core.Engine.run`" in text  # on the dependency blocks


def test_summary_first_leaves_source_out_at_minimal_verbosity(kc: KnowCode) -> None:
    bundle = kc.context("helper", task_type="explain")
    assert not bundle.source_included
    assert "source" not in bundle.sections_present
    assert "    return value" not in bundle.context_text
    assert "**Summary:** function `pkg.util.helper`" in bundle.context_text
    assert "```python\ndef helper(value)\n```" in bundle.context_text


@pytest.mark.parametrize(("task", "verbosity"), [("explain", "standard"), ("explain", "verbose"),
                                                  ("debug", "minimal"), ("review", "minimal")])
def test_source_comes_with_standard_verbosity_or_a_source_hungry_task(kc: KnowCode, task: str,
                                                                     verbosity: str) -> None:
    bundle = kc.context("helper", task_type=task, verbosity=verbosity)
    assert bundle.source_included
    assert "source" in bundle.sections_present
    assert "def helper(value):\n    return value" in bundle.context_text


def test_selected_entities_and_evidence(kc: KnowCode) -> None:
    bundle = kc.context("why does Engine.run crash", task_type="debug", verbosity="verbose")
    first = bundle.selected_entities[0]
    assert (first.qualified_name, first.kind, first.path, first.start_line, first.end_line) == (
        "pkg.core.Engine.run", "method", "pkg/core.py", 12, 14)
    assert first.source == "hybrid"
    assert [e.rank for e in bundle.evidence] == list(range(1, len(bundle.evidence) + 1))
    dependencies = [e for e in bundle.evidence if e.source == "dependency"]
    assert dependencies and all(e.score == 0.0 for e in dependencies)
    assert {e.entity_id for e in bundle.evidence} >= {s.id for s in bundle.selected_entities}


def test_without_dependency_expansion(kc: KnowCode) -> None:
    bundle = kc.context("why does Engine.run crash", expand_deps=False)
    assert all(e.source != "dependency" for e in bundle.evidence)
    assert "· dependency" not in bundle.context_text


def test_limit_entities(kc: KnowCode) -> None:
    bundle = kc.context("why does Engine.run crash", limit_entities=1, expand_deps=False)
    assert len(bundle.selected_entities) == 1 and len(bundle.evidence) == 1
    assert bundle.retrieval_confidence == 1.0  # a lone hit


def test_small_budget_truncates_and_says_so(kc: KnowCode) -> None:
    bundle = kc.context("why does Engine.run crash", max_tokens=80, task_type="debug")
    assert bundle.total_tokens <= 80
    assert bundle.truncated and bundle.truncation
    assert bundle.context_text.endswith("part(s) cut or left out._")


def test_reduction_against_the_whole_files(kc: KnowCode, sample_repo: Path) -> None:
    bundle = kc.context("why does Engine.run crash", limit_entities=1, expand_deps=False)
    whole = COUNTER.count((sample_repo / "pkg/core.py").read_text())
    assert bundle.baseline_tokens == whole
    assert bundle.reduction_factor == pytest.approx(whole / bundle.total_tokens)
    assert bundle.reduction_summary.startswith(f"{bundle.total_tokens} tokens instead of {whole} (")


def test_retrieval_signals_in_hybrid_and_exact_mode(kc: KnowCode) -> None:
    hybrid = kc.context("why does Engine.run crash")
    assert hybrid.leg_agreement is not None and 0.0 <= hybrid.leg_agreement <= 1.0
    assert 0.0 <= hybrid.retrieval_confidence <= 1.0
    exact = kc.context('"Engine"')
    assert exact.retrieval_mode is RetrievalMode.EXACT
    assert exact.leg_agreement is None


def test_lexical_mode_has_no_leg_agreement(sample_repo: Path, tmp_path: Path) -> None:
    engine = knowcode.open(sample_repo, store=tmp_path / "store", config=AppConfig(embedding_provider="none"))
    try:
        bundle = engine.context("helper")
    finally:
        engine.close()
    assert bundle.retrieval_mode is RetrievalMode.LEXICAL
    assert bundle.leg_agreement is None


def test_files_changed_since_indexing_are_counted(kc: KnowCode, sample_repo: Path) -> None:
    assert kc.context("helper", limit_entities=1, expand_deps=False).files_changed_since_index == 0
    path = sample_repo / "pkg/util.py"
    path.write_text(path.read_text() + "\n# edited\n")
    later = path.stat().st_mtime_ns + 10**9
    os.utime(path, ns=(later, later))
    bundle = kc.context("helper", limit_entities=1, expand_deps=False)  # the facade indexed once, earlier
    assert bundle.files_changed_since_index == 1
    assert bundle.changed_files == ("pkg/util.py",)


def test_nothing_matched_is_an_empty_bundle_with_the_error(kc: KnowCode) -> None:
    bundle = kc.context('"no_such_name"')
    assert bundle.context_text == "" and bundle.total_tokens == 0
    assert bundle.sufficiency_score == 0.0 and bundle.retrieval_confidence == 0.0
    assert any("nothing matched" in e for e in bundle.errors)


def test_verbosity_is_recorded(kc: KnowCode) -> None:
    assert kc.context("helper", verbosity="diagnostic").verbosity is Verbosity.DIAGNOSTIC


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_tokens": 49}, "max_tokens must be a whole number between 50 and 200000"),
    ({"max_tokens": 200_001}, "max_tokens must be"),
    ({"limit_entities": 0}, "limit must be between 1 and 1000"),
    ({"verbosity": "loud"},
     "unknown verbosity 'loud'; choose one of: minimal, standard, verbose, diagnostic"),
    ({"task_type": "fix"}, "unknown task type 'fix'"),
])
def test_bad_input_is_refused_before_indexing(sample_repo: Path, tmp_path: Path, kwargs: dict[str, object],
                                              message: str) -> None:
    engine = knowcode.open(sample_repo, store=tmp_path / "store")
    with pytest.raises(ValueError, match=message):
        engine.context("helper", **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("query", ["", "   ", '""'])
def test_empty_query_is_refused(kc: KnowCode, query: str) -> None:
    with pytest.raises(ValueError, match="query is empty"):
        kc.context(query)


def test_unknown_token_encoding_is_refused(sample_repo: Path, tmp_path: Path) -> None:
    engine = knowcode.open(sample_repo, store=tmp_path / "store", config=AppConfig(token_encoding="o200k"))
    with pytest.raises(ValueError, match="token_encoding"):
        engine.context("helper")


def _hub_repo(root: Path, callers: int) -> None:
    (root / "hub").mkdir(parents=True, exist_ok=True)
    (root / "hub" / "__init__.py").write_text("")
    (root / "hub" / "core.py").write_text('def hub_target():\n    """The popular one."""\n    return 1\n')
    (root / "hub" / "users.py").write_text("from .core import hub_target\n\n\n" + "".join(
        f"def user{i}():\n    return hub_target()\n\n\n" for i in range(callers)))


def test_a_reader_keeps_caller_totals_for_one_state_of_the_index_only(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _hub_repo(root, 12)
    writer = knowcode.open(root, store=tmp_path / "store")
    writer.index()
    reader = writer.reader()
    query = '"hub_target"'
    with reader.snapshot():
        first = reader.context(query, max_tokens=2000, limit_entities=1, expand_deps=False)
    assert "called by: 12." in first.context_text and "(+2 more)" in first.context_text
    assert list(reader._caller_counts.values()) == [12]  # counted once, kept for the next query
    with reader.snapshot():
        again = reader.context(query, max_tokens=2000, limit_entities=1, expand_deps=False)
    assert again.context_text == first.context_text
    _hub_repo(root, 15)
    writer.index()
    with reader.snapshot():  # a new state: counted again
        later = reader.context(query, max_tokens=2000, limit_entities=1, expand_deps=False)
    assert "called by: 15." in later.context_text and "(+5 more)" in later.context_text
    assert writer.context(query, max_tokens=2000, limit_entities=1, expand_deps=False).context_text \
        == later.context_text
    assert writer._caller_counts == {}  # a facade that indexes keeps none
    reader.close()
    writer.close()
