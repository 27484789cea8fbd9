"""Context synthesis: templates, greedy packing and its caps, the verbosity ladder, sufficiency.

Most tests count tokens with a fake counter (one token per whitespace-separated word) so every budget
can be worked out by hand; the budget guarantee is also checked with the real cl100k counter.
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest

from knowcode import render
from knowcode.analysis import packing
from knowcode.analysis.context_synthesizer import (
    DOCSTRING_BONUS,
    MAX_MAX_TOKENS,
    MIN_MAX_TOKENS,
    SOURCE_BONUS,
    TASK_TEMPLATES,
    _calculate_sufficiency,
    parse_verbosity,
    validate_budget,
)
from knowcode.analysis.entity_facts import EntityFacts
from knowcode.analysis.packing import (
    MIN_SOURCE_LINES,
    SOURCE_SHARE_CAP,
    Packed,
    TaskTemplate,
    pack,
    source_budget,
    truncation_note,
)
from knowcode.analysis.sections import (
    DOCSTRING_PREVIEW_CHARS,
    MAX_CALLEES,
    MAX_CALLERS,
    MAX_CHILDREN,
    Section,
    docstring_preview,
)
from knowcode.analysis.sections import (
    render as render_section,
)
from knowcode.analysis.token_counter import default_counter
from knowcode.models import (
    ContextBundle,
    Evidence,
    RetrievalMode,
    SearchHit,
    SelectedEntity,
    TaskType,
    Verbosity,
)

S = Section


class WordCounter:
    """One token per whitespace-separated word: budgets a reader can add up by hand."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


WORDS = WordCounter()


def facts(name: str, *, lines: int = 0, signature: str = "", docstring: str = "", callers: int = 0,
          callees: int = 0, children: int = 0, dependency: bool = False) -> EntityFacts:
    """An entity `pkg.<name>` whose source is `lines` lines of two words each."""
    source = "\n".join(f"{name}_line {i}" for i in range(1, lines + 1))
    hit = SearchHit("pkg/mod.py", 1, max(lines, 1), 0.0 if dependency else 1.0, name, name, f"pkg.{name}",
                    "function", "dependency" if dependency else "hybrid", f"c-{name}", source, signature,
                    docstring)
    return EntityFacts(hit, "python", 1, max(lines, 1), source, 1, max(lines, 1),
                       tuple(f"caller{i}" for i in range(callers)),
                       tuple(f"callee{i}" for i in range(callees)),
                       tuple(f"def member{i}()" for i in range(children)), callers, callees, children)


def packed_text(entities: list[EntityFacts], template: TaskTemplate, max_tokens: int,
                per_entity: int | None = None, include_source: bool = True) -> tuple[str, tuple[str, ...]]:
    result = pack(entities, template, include_source=include_source, max_tokens=max_tokens,
                  per_entity_budget=per_entity or max_tokens, counter=WORDS)
    return result.text, result.truncation


# --- templates -------------------------------------------------------------------------------------


def test_every_task_type_has_a_template_listing_every_section_once() -> None:
    assert set(TASK_TEMPLATES) == set(TaskType)
    for template in TASK_TEMPLATES.values():
        assert sorted(template.priority) == sorted(Section)


def test_debug_template_boosts_are_the_specs() -> None:
    debug = TASK_TEMPLATES[TaskType.DEBUG]
    assert debug.boost(S.SOURCE) == 2.0
    assert debug.boost(S.CALLERS) == 1.5
    assert debug.priority[:3] == (S.SIGNATURE, S.SOURCE, S.CALLERS)


@pytest.mark.parametrize(("boost", "max_tokens", "expected"), [
    (2.0, 1000, 1000),  # min(1000 x 2.0, 1000)
    (1.5, 1000, 1000),
    (1.0, 1000, 1000),
    (0.5, 1000, 500),
    (0.25, 1000, 250),
    (0.25, 101, 25),  # whole tokens, rounded down
])
def test_section_budget_is_min_of_boosted_budget_and_budget(boost: float, max_tokens: int,
                                                            expected: int) -> None:
    template = TaskTemplate((S.SOURCE,), {S.SOURCE: boost})
    assert template.section_budget(S.SOURCE, max_tokens) == expected


def test_unboosted_sections_default_to_one() -> None:
    assert TaskTemplate((S.SOURCE,)).boost(S.SOURCE) == 1.0


# --- packing order ---------------------------------------------------------------------------------


def test_sections_follow_the_template_priority_order_within_a_block() -> None:
    entity = facts("a", lines=2, signature="def a()", docstring="Does a.", callers=1, callees=1, children=1)
    for task in TaskType:
        text, _ = packed_text([entity], TASK_TEMPLATES[task], 10_000)
        markers = {S.SIGNATURE: "```python\ndef a()", S.DOCSTRING: "> Does a.", S.SOURCE: "a_line 1",
                   S.SUMMARY: "**Summary:**", S.CALLERS: "**Called by:**", S.CALLEES: "**Calls:**",
                   S.CHILDREN: "**Members"}
        positions = [text.index(markers[s]) for s in TASK_TEMPLATES[task].priority]
        assert positions == sorted(positions), task


def test_higher_priority_sections_of_every_entity_go_in_before_any_lower_one() -> None:
    # By hand (one token per word): a header is 6 words, a signature block 4, a source block 2 + 2 per line.
    # Budget 80 truncates, so packing runs again under 80 - 14 (the 10-word note + 4 spare) = 66: both
    # headers and signatures (20), then a's whole source (22) under the source cap of 33; b's source
    # would need 12 more than the 11 left under the cap.
    a = facts("a", lines=10, signature="def a()")
    b = facts("b", lines=10, signature="def b()")
    text, truncation = packed_text([a, b], TaskTemplate((S.SIGNATURE, S.SOURCE)), 80)
    assert "def a()" in text and "def b()" in text
    assert "a_line 10" in text and "b_line 1" not in text
    assert truncation == ("pkg.b: source left out (50% source cap)",)


def test_dependencies_are_packed_after_every_ranked_entity() -> None:
    ranked = facts("a", lines=5, signature="def a()")
    dependency = facts("dep", lines=5, signature="def dep()", dependency=True)
    text, _ = packed_text([ranked, dependency], TaskTemplate((S.SIGNATURE, S.SOURCE)), 10_000)
    assert text.index("a_line 5") < text.index("`pkg.dep`")
    assert "· dependency" in text
    # Under 40 - 14 = 26: the ranked entity's header, signature and whole source (22), not the dependency.
    tight, truncation = packed_text([ranked, dependency], TaskTemplate((S.SIGNATURE, S.SOURCE)), 40)
    assert "a_line 5" in tight and "pkg.dep" not in tight
    assert truncation == ("pkg.dep: left out (token budget)",)


def test_empty_sections_are_left_out_silently() -> None:
    text, truncation = packed_text([facts("a", lines=1)], TASK_TEMPLATES[TaskType.GENERAL], 1000)
    assert "**Called by:**" not in text and "```python\n\n" not in text and ">" not in text
    assert truncation == ()


# --- caps ------------------------------------------------------------------------------------------


def test_relationship_list_caps_are_the_specs() -> None:
    assert (MAX_CALLERS, MAX_CALLEES, MAX_CHILDREN, DOCSTRING_PREVIEW_CHARS) == (10, 10, 15, 200)


def test_callers_and_callees_show_at_most_ten_names() -> None:
    entity = facts("a", callers=12, callees=11)
    callers = render_section(S.CALLERS, entity)
    callees = render_section(S.CALLEES, entity)
    assert callers.count("`caller") == 10 and callers.endswith("(+2 more)")
    assert callees.count("`callee") == 10 and callees.endswith("(+1 more)")
    assert "caller10" not in callers
    assert render_section(S.CALLERS, facts("b", callers=10)).count("`caller") == 10
    assert "more" not in render_section(S.CALLERS, facts("b", callers=10))


def test_children_show_at_most_fifteen_members() -> None:
    members = render_section(S.CHILDREN, facts("a", children=20))
    assert members.startswith("**Members (20):**")
    assert members.count("- `def member") == 15
    assert members.endswith("- … (+5 more)")


def test_docstring_preview_is_cut_at_200_characters() -> None:
    long = "word " * 100
    preview = docstring_preview(long)
    assert len(preview) == DOCSTRING_PREVIEW_CHARS and preview.endswith("…")
    assert docstring_preview("x" * 200) == "x" * 200
    assert docstring_preview("  two\n   lines ") == "two lines"
    assert render_section(S.DOCSTRING, facts("a", docstring=long)) == f"> {preview}"


def test_raw_source_is_capped_at_half_the_budget() -> None:
    assert SOURCE_SHARE_CAP == 0.5
    assert source_budget(101) == 50
    entity = facts("a", lines=100)  # 200 words of source
    result = pack([entity], TaskTemplate((S.SOURCE,), {S.SOURCE: 2.0}), include_source=True, max_tokens=100,
                  per_entity_budget=100, counter=WORDS)
    # the second pass packs under 100 minus the note's reserve; the cap is half of that budget
    assert 40 <= result.section_tokens[S.SOURCE] <= 50
    assert any("50% source cap" in t for t in result.truncation)
    assert result.total_tokens <= 100


def test_a_section_budget_below_one_caps_that_section() -> None:
    entity = facts("a", callers=10)  # "**Called by:** `caller0`, ..." = 2 + 10 words
    template = TaskTemplate((S.CALLERS,), {S.CALLERS: 0.05})
    result = pack([entity], template, include_source=True, max_tokens=200, per_entity_budget=200,
                  counter=WORDS)
    assert result.section_tokens[S.CALLERS] <= template.section_budget(S.CALLERS, 200)
    assert any("callers cut to" in t and "callers budget" in t for t in result.truncation)


def test_each_entity_stays_within_its_per_entity_budget() -> None:
    a, b = facts("a", lines=50), facts("b", lines=50)
    result = pack([a, b], TaskTemplate((S.SOURCE,)), include_source=True, max_tokens=1000,
                  per_entity_budget=30, counter=WORDS)
    blocks = result.text.split("_Truncated")[0].split("## ")[1:]
    assert len(blocks) == 2
    assert all(WORDS.count("## " + block) <= 30 for block in blocks)
    assert any("pkg.a: source cut to" in t and "entity budget" in t for t in result.truncation)


def test_source_is_cut_at_a_line_boundary_and_says_so() -> None:
    text, truncation = packed_text([facts("a", lines=30)], TaskTemplate((S.SOURCE,)), 60)
    kept = [line for line in text.splitlines() if line.startswith("a_line")]
    assert kept == [f"a_line {i}" for i in range(1, len(kept) + 1)]  # whole lines, in order
    assert 0 < len(kept) < 30
    assert f"_… {30 - len(kept)} more lines not shown (token budget)_" in text
    assert truncation[0] == f"pkg.a: source cut to {len(kept)} of 30 lines (50% source cap)"


def test_a_source_cut_keeps_at_least_three_lines_or_is_left_out() -> None:
    assert MIN_SOURCE_LINES == 3
    # Under 50 - 14 = 36 (source cap 18) after a 6-word header: 3 lines need 2 + 6 + 8 = 16 words, fit.
    text, truncation = packed_text([facts("a", lines=30)], TaskTemplate((S.SOURCE,)), 50)
    assert "a_line 3" in text and truncation[0].startswith("pkg.a: source cut to 3 of 30 lines")
    # Under 40 - 14 = 26 (source cap 13): only 2 lines would fit, so none are shown.
    text, truncation = packed_text([facts("a", lines=30)], TaskTemplate((S.SOURCE,)), 40)
    assert "a_line" not in text and truncation == ("pkg.a: source left out (50% source cap)",)


def test_a_truncated_bundle_ends_with_a_note_within_the_budget() -> None:
    entities = [facts("a", lines=30), facts("b", lines=30)]
    text, truncation = packed_text(entities, TaskTemplate((S.SOURCE,)), 60)
    assert text.endswith(truncation_note(60, len(truncation)))
    assert WORDS.count(text) <= 60


class TallyCounter(WordCounter):
    """WordCounter that records every text it is asked to count."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return super().count(text)


def test_packing_counts_each_text_once_and_packs_as_counting_each_time_would(
        monkeypatch: pytest.MonkeyPatch) -> None:
    entities = [facts("a", lines=30, callers=12, docstring="does a"), facts("b", lines=30, children=20)]

    def packed(counter: TallyCounter) -> Packed:
        return pack(entities, TASK_TEMPLATES[TaskType.DEBUG], include_source=True, max_tokens=80,
                    per_entity_budget=80, counter=counter)

    once = TallyCounter()
    result = packed(once)
    assert result.truncation  # packed twice: the second pass under the note's reserve
    assert len(once.texts) == len(set(once.texts))
    monkeypatch.setattr(packing, "RecentCounts", lambda counter, **_: counter)  # count every time
    every = TallyCounter()
    assert packed(every) == result
    assert len(every.texts) > len(once.texts)


def test_a_bundle_that_fits_has_no_note() -> None:
    text, truncation = packed_text([facts("a", lines=3)], TaskTemplate((S.SOURCE,)), 1000)
    assert truncation == () and "Truncated" not in text


def test_summary_first_bundles_carry_no_source() -> None:
    entity = facts("a", lines=3, signature="def a()", docstring="Does a.", callers=2, callees=1, children=2)
    result = pack([entity], TASK_TEMPLATES[TaskType.EXPLAIN], include_source=False, max_tokens=1000,
                  per_entity_budget=1000, counter=WORDS)
    assert "a_line" not in result.text
    assert S.SOURCE not in result.sections
    for marker in ("def a()", "> Does a.", "**Summary:**", "**Members (2):**", "**Called by:**",
                   "**Calls:**"):
        assert marker in result.text


def test_budget_too_small_for_any_header_gives_an_empty_bundle() -> None:
    result = pack([facts("a", lines=3)], TaskTemplate((S.SOURCE,)), include_source=True, max_tokens=5,
                  per_entity_budget=5, counter=WORDS)
    assert result.text == "" and result.total_tokens == 0 and result.entities == ()
    assert result.truncation[0] == "pkg.a: left out (token budget)"


def test_real_counter_never_exceeds_the_budget() -> None:
    counter = default_counter()
    entities = [facts(n, lines=40, signature=f"def {n}(x)", docstring="Long docstring " * 30, callers=12,
                      callees=12, children=20) for n in ("a", "b", "c")]
    for max_tokens in (50, 60, 99, 150, 333, 1000, 4000):
        for task in TaskType:
            result = pack(entities, TASK_TEMPLATES[task], include_source=True, max_tokens=max_tokens,
                          per_entity_budget=max(1, min(2000, max_tokens // 3)), counter=counter)
            assert result.total_tokens == counter.count(result.text) <= max_tokens


# --- sufficiency -----------------------------------------------------------------------------------

SEVEN = tuple(TASK_TEMPLATES[TaskType.DEBUG].priority)
H7 = 1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5 + 1 / 6 + 1 / 7  # 2.592857...
MAX7 = H7 + 0.2 + 0.1  # spec: normalised by the maximum possible score


def sufficiency(present: set[Section], *, source: bool = False, doc: int = 0, chars: int = 500,
                priority: tuple[Section, ...] = SEVEN) -> float:
    return _calculate_sufficiency(priority, present, source_included=source, docstring_chars=doc,
                                  text_chars=chars)


def test_sufficiency_bonuses_are_the_specs() -> None:
    assert (SOURCE_BONUS, DOCSTRING_BONUS) == (0.2, 0.1)


@pytest.mark.parametrize(("present", "source", "doc", "chars", "expected"), [
    (set(SEVEN), True, 51, 500, 1.0),  # everything: the maximum
    (set(), False, 0, 500, 0.0),
    ({SEVEN[0]}, False, 0, 500, 1 / MAX7),  # weight 1/1
    ({SEVEN[1]}, False, 0, 500, (1 / 2) / MAX7),  # weight 1/2
    ({SEVEN[6]}, False, 0, 500, (1 / 7) / MAX7),  # weight 1/7
    ({SEVEN[0], SEVEN[2]}, False, 0, 500, (1 + 1 / 3) / MAX7),
    ({SEVEN[1]}, True, 0, 500, (1 / 2 + 0.2) / MAX7),  # + source bonus
    ({SEVEN[0]}, False, 51, 500, (1 + 0.1) / MAX7),  # + docstring over 50 characters
    ({SEVEN[0]}, False, 50, 500, 1 / MAX7),  # exactly 50 is not over 50
    ({SEVEN[0]}, True, 51, 99, (1 + 0.2 + 0.1) * 0.5 / MAX7),  # x 0.5 under 100 characters, after bonuses
    ({SEVEN[0]}, True, 51, 100, (1 + 0.2 + 0.1) / MAX7),  # 100 characters is not under 100
    (set(SEVEN), True, 51, 10, 0.5),
])
def test_sufficiency_terms(present: set[Section], source: bool, doc: int, chars: int,
                           expected: float) -> None:
    assert sufficiency(present, source=source, doc=doc, chars=chars) == pytest.approx(expected)


def test_sufficiency_maximum_follows_the_priority_list_length() -> None:
    three = (S.SIGNATURE, S.SOURCE, S.CALLERS)
    maximum = 1 + 1 / 2 + 1 / 3 + 0.2 + 0.1  # H(3) + 0.2 + 0.1
    assert sufficiency({S.SOURCE}, priority=three) == pytest.approx(0.5 / maximum)
    assert sufficiency(set(three), source=True, doc=99, priority=three) == pytest.approx(1.0)
    assert sufficiency({S.CHILDREN}, priority=three) == 0.0  # not in the template: no weight


def test_the_same_section_weighs_by_its_position_in_each_template() -> None:
    explain, debug = TASK_TEMPLATES[TaskType.EXPLAIN].priority, TASK_TEMPLATES[TaskType.DEBUG].priority
    expected_explain = (1 / (explain.index(S.DOCSTRING) + 1)) / MAX7
    expected_debug = (1 / (debug.index(S.DOCSTRING) + 1)) / MAX7
    assert sufficiency({S.DOCSTRING}, priority=explain) == pytest.approx(expected_explain)
    assert sufficiency({S.DOCSTRING}, priority=debug) == pytest.approx(expected_debug)
    assert expected_explain > expected_debug


# --- verbosity ladder ------------------------------------------------------------------------------

MINIMAL = {"context_text", "sufficiency_score", "retrieval_confidence", "leg_agreement",
           "files_changed_since_index", "total_tokens", "max_tokens", "baseline_tokens", "reduction_factor",
           "reduction_summary", "errors"}
STANDARD = MINIMAL | {"query", "task_type", "task_confidence", "retrieval_mode", "source_included",
                      "truncated", "truncation", "changed_files"}
VERBOSE = STANDARD | {"selected_entities", "evidence", "sections_present"}


def bundle() -> ContextBundle:
    return ContextBundle(
        query="q", task_type=TaskType.DEBUG, task_confidence=0.5, retrieval_mode=RetrievalMode.HYBRID,
        verbosity=Verbosity.MINIMAL, max_tokens=100, context_text="## 1. x", total_tokens=4,
        token_encoding="cl100k", source_included=True, truncated=False, truncation=(), sufficiency_score=0.1,
        sections_present=(), retrieval_confidence=1.0, leg_agreement=None, files_changed_since_index=0,
        changed_files=(), selected_entities=(), evidence=(), errors=(), baseline_tokens=40,
        reduction_factor=10.0, reduction_summary="4 tokens instead of 40 (10.0x fewer)")


@pytest.mark.parametrize(("verbosity", "fields"), [
    (Verbosity.MINIMAL, MINIMAL),  # context, sufficiency (+ side signals), tokens, reduction summary
    (Verbosity.STANDARD, STANDARD),  # + query, mode, truncation
    (Verbosity.VERBOSE, VERBOSE),  # + evidence
    (Verbosity.DIAGNOSTIC, {f.name for f in dataclasses.fields(ContextBundle)}),  # everything
])
def test_each_verbosity_level_carries_its_fields(verbosity: Verbosity, fields: set[str]) -> None:
    assert set(render.context_fields(verbosity)) == fields
    assert set(render.context_data(bundle(), verbosity)) == fields


@pytest.mark.parametrize("verbosity", list(Verbosity))
def test_a_levels_data_is_what_asdict_makes_of_its_fields(verbosity: Verbosity) -> None:
    full = dataclasses.replace(
        bundle(), truncation=("x: cut",), changed_files=("a.py",), errors=("[e]",),
        selected_entities=(SelectedEntity("i", "m.f", "function", "a.py", 1, 2, "hybrid"),),
        evidence=(Evidence(1, "c", "i", 0.5, "hybrid"), Evidence(2, "d", "j", 0.25, "sparse")))
    whole = dataclasses.asdict(full)
    data = render.context_data(full, verbosity)
    assert data == {name: whole[name] for name in render.context_fields(verbosity)}
    assert [type(value) for value in data.values()] == [type(whole[name]) for name in data]
    assert render.context_json(full, verbosity) == json.dumps(
        {name: whole[name] for name in render.context_fields(verbosity)}, indent=2, default=str)


def test_the_ladder_only_adds_fields() -> None:
    levels = [set(render.context_fields(v)) for v in Verbosity]
    assert all(lower < higher for lower, higher in itertools.pairwise(levels))


def test_markdown_rendering_grows_with_verbosity() -> None:
    minimal = render.context_markdown(bundle(), Verbosity.MINIMAL)
    standard = render.context_markdown(bundle(), Verbosity.STANDARD)
    assert "## 1. x" in minimal and "sufficiency: 0.10" in minimal and "leg agreement: n/a" in minimal
    assert "mode:" not in minimal and "mode: hybrid" in standard


# --- input checks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [MIN_MAX_TOKENS, 6000, MAX_MAX_TOKENS])
def test_budgets_in_range_are_accepted(value: int) -> None:
    validate_budget(value)


@pytest.mark.parametrize("value", [0, -1, MIN_MAX_TOKENS - 1, MAX_MAX_TOKENS + 1, True])
def test_budgets_out_of_range_are_refused(value: int) -> None:
    with pytest.raises(ValueError, match="max_tokens must be a whole number between 50 and 200000"):
        validate_budget(value)


def test_verbosity_names() -> None:
    assert parse_verbosity("standard") is Verbosity.STANDARD
    assert parse_verbosity(Verbosity.VERBOSE) is Verbosity.VERBOSE
    with pytest.raises(ValueError, match="minimal, standard, verbose, diagnostic"):
        parse_verbosity("loud")
