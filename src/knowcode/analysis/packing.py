"""Greedy packing of entity sections under a token budget (spec: "Context synthesis").

Sections are placed in the task template's priority order, section by section across the ranked
entities (so every entity's signature goes in before any entity's source), then the same for the
dependency entities with what is left. A section goes in whole, or shortened at a line or list-item
boundary, or not at all, under four limits at once:

* the bundle budget (``max_tokens``);
* the entity's budget (``RetrievalResult.per_entity_budget``, spec: Retrieval routing step 6);
* the section's budget ``min(max_tokens x boost, max_tokens)`` (spec), summed over entities;
* raw source at most ``SOURCE_SHARE_CAP`` of the budget (spec: 50% in task mode).

Every cut or left-out section is recorded, and the text says it was truncated. The final text is
counted whole and shortened line by line until it fits, so it never exceeds ``max_tokens``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from knowcode.analysis.entity_facts import EntityFacts
from knowcode.analysis.sections import Section, header, render, units
from knowcode.analysis.token_counter import RecentCounts, TokenCounter

SOURCE_SHARE_CAP = 0.5  # spec: Context synthesis — raw source capped at 50% of budget in task mode
DEFAULT_BOOST = 1.0  # a section the template does not boost may use the whole budget
SEPARATOR = "\n\n"  # between the parts of a block and between blocks
NOTE_SLACK = 4  # tokens kept beside the truncation note in case its numbers grow a digit
MIN_SOURCE_LINES = 3  # a source cut shorter than this shows little beyond the signature: leave it out


@dataclass(frozen=True)
class TaskTemplate:
    """A task type's section priority order (most important first) and per-section budget boosts.

    A section's budget is ``min(max_tokens x boost, max_tokens)`` (spec), so a boost above 1 states the
    template's emphasis but is saturated by the budget itself; a boost below 1 caps the section at that
    share of the budget.
    """

    priority: tuple[Section, ...]
    boosts: Mapping[Section, float] = field(default_factory=dict)

    def boost(self, section: Section) -> float:
        """The section's boost (DEFAULT_BOOST when the template does not name it)."""
        return self.boosts.get(section, DEFAULT_BOOST)

    def section_budget(self, section: Section, max_tokens: int) -> int:
        """spec: ``min(max_tokens x boost, max_tokens)``, in whole tokens."""
        return int(min(max_tokens * self.boost(section), max_tokens))


@dataclass(frozen=True)
class Packed:
    """What packing placed: the text, its exact token count and what was cut or left out."""

    text: str
    total_tokens: int
    entities: tuple[int, ...]  # indices of the facts whose block is in the text
    sections: frozenset[Section]  # sections placed for at least one entity
    docstring_chars: int  # the longest docstring placed (flattened), for the sufficiency bonus
    section_tokens: dict[Section, int]
    truncation: tuple[str, ...]


def source_budget(max_tokens: int) -> int:
    """spec: raw source gets at most half of the budget."""
    return int(max_tokens * SOURCE_SHARE_CAP)


def truncation_note(max_tokens: int, count: int) -> str:
    """The last line of a truncated bundle."""
    return f"_Truncated to fit {max_tokens} tokens: {count} part(s) cut or left out._"


class _Packer:
    """One packing pass under one budget."""

    def __init__(self, facts: Sequence[EntityFacts], template: TaskTemplate, include_source: bool,
                 budget: int, per_entity_budget: int, counter: TokenCounter) -> None:
        self.facts = facts
        self.order = [s for s in template.priority if include_source or s is not Section.SOURCE]
        self.budget = budget
        self.per_entity = per_entity_budget
        self.counter = counter
        self.caps = {s: template.section_budget(s, budget) for s in template.priority}
        self.source_cap = source_budget(budget)
        self.used = 0
        self.entity_used: dict[int, int] = {}
        self.section_used = dict.fromkeys(Section, 0)
        self.parts: dict[int, list[str]] = {}
        self.placed: set[Section] = set()
        self.docstring_chars = 0
        self.truncation: list[str] = []

    def cost(self, text: str) -> int:
        return self.counter.count(text + SEPARATOR)

    def room(self, index: int, section: Section | None) -> tuple[int, str]:
        """The tokens a part may still take, and the name of the tightest limit."""
        limits = [(self.budget - self.used, "token budget"),
                  (self.per_entity - self.entity_used.get(index, 0), "entity budget")]
        if section is not None:
            limits.append((self.caps[section] - self.section_used[section], f"{section.value} budget"))
            if section is Section.SOURCE:
                limits.append((self.source_cap - self.section_used[section], "50% source cap"))
        return min(limits, key=lambda limit: limit[0])

    def put(self, index: int, section: Section | None, text: str, cost: int) -> None:
        self.parts.setdefault(index, []).append(text)
        self.used += cost
        self.entity_used[index] = self.entity_used.get(index, 0) + cost
        if section is not None:
            self.section_used[section] += cost
            self.placed.add(section)
            if section is Section.DOCSTRING:
                flat = " ".join(self.facts[index].hit.docstring.split())
                self.docstring_chars = max(self.docstring_chars, len(flat))

    def run(self) -> None:
        primary = [i for i, f in enumerate(self.facts) if not f.is_dependency]
        dependencies = [i for i, f in enumerate(self.facts) if f.is_dependency]
        for group in (primary, dependencies):
            self.pack_group(group)

    def pack_group(self, group: list[int]) -> None:
        members = []
        for index in group:
            facts = self.facts[index]
            title = header(facts, index + 1)
            cost = self.cost(title)
            room, reason = self.room(index, None)
            if cost <= room:
                self.put(index, None, title, cost)
                members.append(index)
            else:
                self.truncation.append(f"{facts.hit.qualified_name}: left out ({reason})")
        for section in self.order:
            for index in members:
                self.pack_section(index, section)

    def pack_section(self, index: int, section: Section) -> None:
        facts = self.facts[index]
        text = render(section, facts)
        if not text:
            return
        cost = self.cost(text)
        room, reason = self.room(index, section)
        if cost <= room:
            self.put(index, section, text, cost)
            return
        total = units(section, facts)
        best: tuple[int, str, int] | None = None
        low = MIN_SOURCE_LINES if section is Section.SOURCE else 1
        high = total - 1  # the largest shortened form that fits
        while low <= high:
            middle = (low + high) // 2
            shorter = render(section, facts, middle)
            shorter_cost = self.cost(shorter)
            if shorter_cost <= room:
                best = (middle, shorter, shorter_cost)
                low = middle + 1
            else:
                high = middle - 1
        name = facts.hit.qualified_name
        if best is None:
            self.truncation.append(f"{name}: {section.value} left out ({reason})")
            return
        kept, shorter, shorter_cost = best
        unit = "lines" if section is Section.SOURCE else "items"
        self.truncation.append(f"{name}: {section.value} cut to {kept} of {total} {unit} ({reason})")
        self.put(index, section, shorter, shorter_cost)

    def body(self) -> str:
        return SEPARATOR.join(SEPARATOR.join(self.parts[i]) for i in sorted(self.parts))


def _fit(body: str, max_tokens: int, truncation: list[str], counter: TokenCounter) -> str:
    """The body plus its truncation note, shortened line by line until the whole counts within budget."""
    def whole(lines: Sequence[str]) -> str:
        text = "\n".join(lines)
        if truncation:
            note = truncation_note(max_tokens, len(truncation))
            text = f"{text}{SEPARATOR}{note}" if text else note
        return text

    lines = body.split("\n") if body else []
    if counter.count(whole(lines)) <= max_tokens:
        return whole(lines)
    truncation.append("the last lines of the bundle: cut to fit the exact token count")
    low, high, best = 0, len(lines) - 1, -1
    while low <= high:
        middle = (low + high) // 2
        if counter.count(whole(lines[:middle])) <= max_tokens:
            best, low = middle, middle + 1
        else:
            high = middle - 1
    return whole(lines[:best]) if best >= 0 else ""


def pack(facts: Sequence[EntityFacts], template: TaskTemplate, *, include_source: bool, max_tokens: int,
         per_entity_budget: int, counter: TokenCounter) -> Packed:
    """Pack the entities' sections into at most `max_tokens` tokens.

    :param facts: ranked entities, then dependencies.
    :param template: the task template (priority order and boosts).
    :param include_source: the response profile allows raw source.
    :param max_tokens: the bundle budget.
    :param per_entity_budget: the most one entity's block may take.
    :param counter: the token counter the budget is measured with.
    :return: the packed text, counted whole, and what was truncated.
    """
    # Each text counted once in this pack, whatever its length: a truncated bundle is packed twice, the
    # second time under a budget smaller by its note, and the sections and the shortened forms the two
    # passes try are mostly the same texts (36% of the count calls of a 2,000-token bundle, ~1.2 of 3.3 ms).
    counter = RecentCounts(counter, max_chars=sys.maxsize, max_text_chars=sys.maxsize)
    packer = _Packer(facts, template, include_source, max_tokens, per_entity_budget, counter)
    packer.run()
    if packer.truncation:  # pack again, keeping room for the note that says so
        reserve = counter.count(SEPARATOR + truncation_note(max_tokens, len(packer.truncation))) + NOTE_SLACK
        packer = _Packer(facts, template, include_source, max(0, max_tokens - reserve), per_entity_budget,
                         counter)
        packer.run()
        if not packer.truncation:  # cannot happen with a smaller budget, but never lose the record
            packer.truncation.append("bundle: packed under a reduced budget")
    truncation = list(packer.truncation)
    text = _fit(packer.body(), max_tokens, truncation, counter)
    entities = tuple(sorted(packer.parts)) if text else ()
    return Packed(text, counter.count(text), entities, frozenset(packer.placed) if text else frozenset(),
                  packer.docstring_chars if text else 0,
                  {s: n for s, n in packer.section_used.items() if n}, tuple(truncation))
