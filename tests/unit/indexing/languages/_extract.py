"""What the language tests compare: a parsed fixture's entities and references as plain rows."""

from __future__ import annotations

from knowcode.indexing.parser import ParsedSource
from knowcode.models import Entity, RelationKind

EntityRow = tuple[str, str, int, int]  # kind, qualified name, start line, end line
ReferenceRow = tuple[str, str, str, int, str]  # kind, source qualified name, target name, line, alias


def entity_rows(parsed: ParsedSource) -> list[EntityRow]:
    """Every entity as (kind, qualified name, start line, end line), in source order."""
    return [(e.kind.value, e.qualified_name, e.start_line, e.end_line) for e in parsed.entities]


def reference_rows(parsed: ParsedSource) -> set[ReferenceRow]:
    """Every reference but `contains` as (kind, source qualified name, target name, line, alias)."""
    names = {e.id: e.qualified_name for e in parsed.entities}
    return {(r.kind.value, names[r.source_id], r.target_name, r.line, r.alias)
            for r in parsed.references if r.kind is not RelationKind.CONTAINS}


def by_qualified_name(parsed: ParsedSource) -> dict[str, Entity]:
    """The entities keyed by qualified name (a repeated name keeps its last entity)."""
    return {e.qualified_name: e for e in parsed.entities}
