"""The routing evaluation: query sets, the ladder climb, hit judgement per task type, the index version."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

import knowcode
from knowcode.config import AppConfig, LLMConfig
from knowcode.engine import KnowCode
from knowcode.evals import (
    MIN_ELIGIBLE_QUERIES,
    QuerySet,
    RoutingEvalReport,
    index_version,
    index_version_parts,
    load_query_set,
    repo_relative,
    run_routing_eval,
)
from knowcode.evals.scoring import Query, Target
from knowcode.llm.agent import ESCALATION_LADDER
from knowcode.llm.routing_policy import local_bar
from knowcode.models import (
    ContextBundle,
    RetrievalMode,
    SearchResults,
    SelectedEntity,
    TaskType,
    Verbosity,
)
from tests.conftest import write_tree

# Every bundle reaches a bar of 0, so each query's local answer is its first rung's bundle.
ALWAYS_LOCAL = AppConfig(llm=LLMConfig(sufficiency_threshold=0.0, routing_quality_floor=0.0))
SLUGIFY = "where is slugify defined"  # classified locate
_BODY = "".join(f"    step_{i} = value + {i}\n" for i in range(12))


def _function(name: str, doc: str) -> str:
    return f'def {name}(value):\n    """{doc}"""\n{_BODY}    return value\n\n\n'


# Three modules of two functions each: each module is one chunk (lines 1-34), answered by the function
# that matches (slugify: lines 1-15); the first rung holds only the best one, the top rung all three.
SHOP = {
    "shop/pricing.py": _function("apply_discount", "Apply a discount.") + _function("add_tax", "Add tax."),
    "shop/cart.py": _function("add_item", "Put an item in.") + _function("remove_item", "Take it out."),
    "shop/text.py": _function("slugify", "Turn a title into a slug.") + _function("truncate", "Cut text."),
}


def entry(query: str, *relevant: Any, category: str = "symbol") -> dict[str, Any]:
    return {"query": query, "category": category, "relevant": list(relevant), "secondary": []}


def query_set(tmp_path: Path, entries: list[dict[str, Any]]) -> QuerySet:
    path = tmp_path / "set.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    return load_query_set(path)


@pytest.fixture
def kc(tmp_path: Path) -> Iterator[KnowCode]:
    engine = knowcode.open(write_tree(tmp_path / "shop", SHOP), store=tmp_path / "store", config=ALWAYS_LOCAL)
    yield engine
    engine.close()


# --- query sets ---------------------------------------------------------------------------------------


def test_load_query_set_reads_the_benchmark_format_and_hashes_the_bytes(tmp_path: Path) -> None:
    loaded = query_set(tmp_path, [entry(SLUGIFY, "pkg/util.py"),
                                  entry("Engine", {"path": "pkg/core.py", "start_line": 9, "end_line": 14})])
    assert loaded.sha256 == hashlib.sha256((tmp_path / "set.json").read_bytes()).hexdigest()
    assert loaded.queries == (Query(SLUGIFY, "symbol", (Target("pkg/util.py"),)),
                              Query("Engine", "symbol", (Target("pkg/core.py", 9, 14),)))


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", "not UTF-8 JSON"),
    ('{"query": "x"}', "expected a JSON list"),
    ('[{"query": "x", "relevant": []}]', "needs string `query` and `category`"),
    ('["just a string"]', "must be an object"),
    ('[{"query": "x", "category": "symbol", "relevant": "a.py"}]', "`relevant` must be a list"),
    ("[]", "holds no queries"),
    ('[{"query": "x", "category": "symbol"}, {"query": " ", "category": "symbol"}]', "entry 2 has an empty"),
])
def test_a_bad_query_set_is_a_value_error_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message) as raised:
        load_query_set(path)
    assert str(path) in str(raised.value)


def test_a_missing_query_set_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="query set not found") as raised:
        load_query_set(tmp_path / "nope.json")
    assert "(a JSON list of {query, category, relevant, secondary}," in str(raised.value)


def test_repo_relative_paths() -> None:
    root = Path("/repo").resolve()
    assert repo_relative(root / ".knowcode" / "routing-eval.json", root) == ".knowcode/routing-eval.json"
    assert repo_relative(Path("/elsewhere/a.json"), root) == str(Path("/elsewhere/a.json").resolve())


# --- the evaluation on a real index -----------------------------------------------------------------


def test_hits_follow_the_benchmark_rules_and_counts_add_up(kc: KnowCode, tmp_path: Path) -> None:
    entries = [
        entry(SLUGIFY, "shop/text.py"),  # whole-file target in the first rung's bundle: hit
        entry(SLUGIFY, {"path": "shop/text.py", "start_line": 5, "end_line": 12}),  # inside slugify: hit
        entry(SLUGIFY, {"path": "shop/text.py", "start_line": 100, "end_line": 120}),  # no overlap: miss
        entry(SLUGIFY, "other/text.py"),  # the same name in another folder: miss
        entry(SLUGIFY, "shop/cart.py"),  # only the top rung's bundle holds it
        entry("where is the discount applied", "pricing.py"),  # a suffix of shop/pricing.py: hit
        entry("overview of slugify", "shop/text.py"),  # an overview: general
    ]
    report = run_routing_eval(kc, query_set(tmp_path, entries), code_version="9.9.9")

    outcomes = report.outcomes
    assert [o.task_type for o in outcomes] == [TaskType.LOCATE] * 6 + [TaskType.GENERAL]
    assert [o.local_rung for o in outcomes] == [0] * 7  # a bar of 0: the first rung always suffices
    assert [o.local_hit for o in outcomes] == [True, True, False, False, False, True, True]
    assert [o.bundle_hit for o in outcomes] == [True, True, False, False, True, True, True]
    assert outcomes[0].ndcg_at_10 == 1.0  # shop/text.py ranks first
    assert outcomes[2].ndcg_at_10 == outcomes[3].ndcg_at_10 == 0.0
    assert 0.0 < outcomes[4].ndcg_at_10 < 1.0  # shop/cart.py is found, below the top

    by_type = {result.task_type: result for result in report.task_types}
    assert list(by_type) == list(TaskType)
    locate, general = by_type[TaskType.LOCATE], by_type[TaskType.GENERAL]
    assert (locate.queries, locate.local_eligible, locate.quality) == (6, 6, 0.5)
    assert locate.bundle_recall == pytest.approx(4 / 6)
    assert locate.meets_floor  # 6 eligible queries, and quality 0.5 >= the floor of 0
    assert (general.queries, general.local_eligible, general.quality) == (1, 1, 1.0)
    assert not general.meets_floor  # one eligible query is too few, however right
    for task in (TaskType.EXPLAIN, TaskType.DEBUG, TaskType.EXTEND, TaskType.REVIEW):
        empty = by_type[task]
        assert (empty.queries, empty.local_eligible, empty.quality, empty.bundle_recall, empty.ndcg_at_10,
                empty.meets_floor) == (0, 0, 0.0, 0.0, 0.0, False)
    assert report.passing_task_types == (TaskType.LOCATE,)


def test_the_report_records_what_it_was_measured_on(kc: KnowCode, tmp_path: Path) -> None:
    loaded = query_set(tmp_path, [entry(SLUGIFY, "shop/text.py")])
    report = run_routing_eval(kc, loaded, code_version="9.9.9")
    assert report.knowcode_version == "9.9.9"
    assert report.index == index_version_parts(kc) and report.index_version == index_version(kc)
    assert report.query_set_sha256 == loaded.sha256
    assert report.query_set_path == str((tmp_path / "set.json").resolve())  # outside the repository
    assert report.sufficiency_bar == local_bar(kc.config.llm) == 0.0
    assert report.quality_floor == 0.0 and report.seconds > 0.0


# --- the ladder climb, with scripted bundles --------------------------------------------------------


def scripted_bundle(sufficiency: float, path: str) -> ContextBundle:
    entity = SelectedEntity("e", "f", "function", path, 1, 3, "hybrid")
    return ContextBundle(
        query="q", task_type=TaskType.LOCATE, task_confidence=1.0, retrieval_mode=RetrievalMode.HYBRID,
        verbosity=Verbosity.MINIMAL, max_tokens=1500, context_text="", total_tokens=0,
        token_encoding="cl100k", source_included=False, truncated=False, truncation=(),
        sufficiency_score=sufficiency, sections_present=(), retrieval_confidence=0.0, leg_agreement=None,
        files_changed_since_index=0, changed_files=(), selected_entities=(entity,), evidence=(), errors=(),
        baseline_tokens=0, reduction_factor=0.0, reduction_summary="")


class ScriptedEngine:
    """A facade whose rungs give scripted (sufficiency, entity path) bundles; records every call."""

    def __init__(self, root: Path, rungs: list[tuple[float, str]]) -> None:
        self.root = root.resolve()
        self.config = AppConfig()  # bar 0.8
        self.rungs = rungs
        self.calls: list[dict[str, Any]] = []

    def ensure_indexed(self) -> None:
        pass

    def embedder(self) -> None:
        return None

    def context(self, query: str, **options: Any) -> ContextBundle:
        rung = next(i for i, r in enumerate(ESCALATION_LADDER) if r.max_tokens == options["max_tokens"]
                    and r.verbosity is options["verbosity"])
        self.calls.append({"query": query, **options})
        return scripted_bundle(*self.rungs[rung])

    def search(self, query: str, limit: int = 10) -> SearchResults:
        return SearchResults([], RetrievalMode.HYBRID)


def scripted_eval(tmp_path: Path, rungs: list[tuple[float, str]],
                  entries: list[dict[str, Any]]) -> tuple[ScriptedEngine, RoutingEvalReport]:
    engine = ScriptedEngine(tmp_path, rungs)
    return engine, run_routing_eval(cast(KnowCode, engine), query_set(tmp_path, entries), code_version="1")


@pytest.mark.parametrize(("rungs", "local_rung", "local_hit", "bundle_hit", "built"), [
    # sufficient on the first rung, with a target; the top rung is still built for bundle recall
    ([(0.9, "a.py"), (0.9, "x.py"), (0.9, "x.py")], 0, True, False, [0, 2]),
    # the second rung is the first sufficient one: it is the local answer
    ([(0.5, "a.py"), (0.85, "x.py"), (0.9, "a.py")], 1, False, True, [0, 1, 2]),
    # exactly at the bar counts, as in the agent
    ([(0.5, "x.py"), (0.5, "x.py"), (0.8, "a.py")], 2, True, True, [0, 1, 2]),
    # never sufficient: not eligible, never a local hit
    ([(0.1, "a.py"), (0.2, "a.py"), (0.3, "a.py")], None, False, True, [0, 1, 2]),
])
def test_the_ladder_is_climbed_as_the_agent_climbs_it(
        tmp_path: Path, rungs: list[tuple[float, str]], local_rung: int | None, local_hit: bool,
        bundle_hit: bool, built: list[int]) -> None:
    engine, report = scripted_eval(tmp_path, rungs, [entry(SLUGIFY, "a.py")])
    (outcome,) = report.outcomes
    assert (outcome.local_rung, outcome.local_hit, outcome.bundle_hit) == (local_rung, local_hit, bundle_hit)
    expected = [{"query": SLUGIFY, "max_tokens": ESCALATION_LADDER[i].max_tokens,
                 "limit_entities": ESCALATION_LADDER[i].limit_entities, "task_type": TaskType.LOCATE,
                 "verbosity": ESCALATION_LADDER[i].verbosity, "expand_deps": ESCALATION_LADDER[i].expand_deps}
                for i in built]
    assert engine.calls == expected
    assert report.index["embedding"] is None


def test_too_few_eligible_queries_never_pass(tmp_path: Path) -> None:
    entries = [entry(SLUGIFY, "a.py")] * (MIN_ELIGIBLE_QUERIES - 1)
    _, report = scripted_eval(tmp_path, [(0.9, "a.py")] * 3, entries)
    locate = next(r for r in report.task_types if r.task_type is TaskType.LOCATE)
    assert (locate.local_eligible, locate.quality) == (MIN_ELIGIBLE_QUERIES - 1, 1.0)
    assert not locate.meets_floor
    _, report = scripted_eval(tmp_path, [(0.9, "a.py")] * 3, [*entries, entry(SLUGIFY, "a.py")])
    assert report.passing_task_types == (TaskType.LOCATE,)


def test_quality_below_the_floor_fails(tmp_path: Path) -> None:
    # 4 of 5 eligible answers hold their target: 0.8 meets the default floor of 0.8; 3 of 5 does not.
    four = [entry(SLUGIFY, "a.py")] * 4 + [entry(SLUGIFY, "b.py")]
    three = [entry(SLUGIFY, "a.py")] * 3 + [entry(SLUGIFY, "b.py")] * 2
    assert scripted_eval(tmp_path, [(0.9, "a.py")] * 3, four)[1].passing_task_types == (TaskType.LOCATE,)
    assert scripted_eval(tmp_path, [(0.9, "a.py")] * 3, three)[1].passing_task_types == ()
