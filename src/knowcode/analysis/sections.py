"""The sections of an entity's block in a context bundle, and their Markdown.

Every renderer takes a unit limit (source lines, list items) so the packer can shorten a section to
fit its budget; a section with nothing to show renders as "" and is left out.
"""

from __future__ import annotations

import re
from enum import Enum

from knowcode.analysis.entity_facts import EntityFacts


class Section(str, Enum):
    """What an entity's block can hold; task templates order these by priority."""

    SIGNATURE = "signature"
    DOCSTRING = "docstring"
    SOURCE = "source"
    SUMMARY = "summary"  # one line: kind, name, span, how many members, callees and callers
    CALLERS = "callers"
    CALLEES = "callees"
    CHILDREN = "children"


MAX_CALLERS = 10  # spec: Context synthesis — relationship lists capped (10 callers/callees)
MAX_CALLEES = 10  # spec: Context synthesis
MAX_CHILDREN = 15  # spec: Context synthesis — 15 children
DOCSTRING_PREVIEW_CHARS = 200  # spec: Context synthesis — 200-char docstring previews
LIST_CAPS = {Section.CALLERS: MAX_CALLERS, Section.CALLEES: MAX_CALLEES, Section.CHILDREN: MAX_CHILDREN}
_BACKTICKS = re.compile(r"`+")


def header(facts: EntityFacts, rank: int) -> str:
    """The block's title: rank, qualified name, kind and path:start-end (always first)."""
    hit = facts.hit
    role = " · dependency" if facts.is_dependency else ""
    return (f"## {rank}. `{hit.qualified_name}` ({hit.kind}) — "
            f"{hit.path}:{facts.entity_start}-{facts.entity_end}{role}")


def docstring_preview(docstring: str) -> str:
    """The docstring on one line, cut to DOCSTRING_PREVIEW_CHARS characters (… marks a cut)."""
    flat = " ".join(docstring.split())
    if len(flat) <= DOCSTRING_PREVIEW_CHARS:
        return flat
    return flat[:DOCSTRING_PREVIEW_CHARS - 1].rstrip() + "…"


def _items(section: Section, facts: EntityFacts) -> tuple[str, ...]:
    if section is Section.CALLERS:
        return facts.callers
    if section is Section.CALLEES:
        return facts.callees
    return facts.children


def _count(section: Section, facts: EntityFacts) -> int:
    if section is Section.CALLERS:
        return facts.caller_count
    if section is Section.CALLEES:
        return facts.callee_count
    return facts.child_count


def source_lines(facts: EntityFacts) -> list[str]:
    """The entity's retrieved code, line by line."""
    return facts.source.splitlines()


def units(section: Section, facts: EntityFacts) -> int:
    """How far a section can be shortened: source lines, capped list items, else 1 (whole or nothing)."""
    if section is Section.SOURCE:
        return len(source_lines(facts))
    if section in LIST_CAPS:
        return min(len(_items(section, facts)), LIST_CAPS[section])
    return 1


def _fence(text: str) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def _source(facts: EntityFacts, limit: int) -> str:
    lines = source_lines(facts)
    shown = lines[:limit]
    if not shown:
        return ""
    code = "\n".join(shown)
    fence = _fence(code)
    block = f"{fence}{facts.language}\n{code}\n{fence}"
    if (facts.source_start, facts.source_end) != (facts.entity_start, facts.entity_end):
        block = f"_lines {facts.source_start}-{facts.source_end}:_\n{block}"
    if len(shown) < len(lines):
        block += f"\n_… {len(lines) - len(shown)} more lines not shown (token budget)_"
    return block


def _listing(section: Section, facts: EntityFacts, limit: int) -> str:
    items = _items(section, facts)
    shown = items[:min(limit, LIST_CAPS[section])]
    if not shown:
        return ""
    total = _count(section, facts)
    more = f" (+{total - len(shown)} more)" if total > len(shown) else ""
    if section is Section.CHILDREN:
        lines = [f"**Members ({total}):**", *(f"- `{item}`" for item in shown)]
        return "\n".join(lines) + (f"\n- …{more}" if more else "")
    title = "Called by" if section is Section.CALLERS else "Calls"
    return f"**{title}:** " + ", ".join(f"`{name}`" for name in shown) + more


def _summary(facts: EntityFacts) -> str:
    hit = facts.hit
    length = facts.entity_end - facts.entity_start + 1
    return (f"**Summary:** {hit.kind} `{hit.qualified_name}`, {length} line(s); members: "
            f"{facts.child_count}; calls: {facts.callee_count}; called by: {facts.caller_count}.")


def render(section: Section, facts: EntityFacts, limit: int | None = None) -> str:
    """A section's Markdown, shortened to `limit` units when given; "" when there is nothing to show."""
    hit = facts.hit
    if section is Section.SIGNATURE:
        signature = hit.signature.strip()
        if not signature:
            return ""
        fence = _fence(signature)
        return f"{fence}{facts.language}\n{signature}\n{fence}"
    if section is Section.DOCSTRING:
        preview = docstring_preview(hit.docstring)
        return f"> {preview}" if preview else ""
    if section is Section.SUMMARY:
        return _summary(facts)
    count = units(section, facts) if limit is None else limit
    if section is Section.SOURCE:
        return _source(facts, count)
    return _listing(section, facts, count)
