"""Human-readable output shared by the CLI and the servers."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from knowcode.models import (
    Answer,
    AnswerRoute,
    CallTrace,
    ContextBundle,
    GraphNode,
    ImpactReport,
    IndexStats,
    SearchResults,
    Verbosity,
)

if TYPE_CHECKING:
    from knowcode.indexing import IndexReport
    from knowcode.retrieval.cross_repo import CrossRepoResults

MAX_LISTED_PATHS = 10  # per change kind in a human summary; --json has them all
SNIPPET_LINES = 3  # non-blank lines of code shown under each search hit
# Fields of a search hit in JSON: search never carries source text (agents pay for every token).
SEARCH_HIT_FIELDS = ("path", "start_line", "end_line", "score", "entity_id", "name", "qualified_name",
                     "kind", "source")
# spec: Context synthesis — the verbosity ladder; each level adds fields to the one before. The side
# signals sit beside the sufficiency score, and errors are never hidden (nothing is silent).
CONTEXT_FIELDS: dict[Verbosity, tuple[str, ...]] = {
    Verbosity.MINIMAL: ("context_text", "sufficiency_score", "retrieval_confidence", "leg_agreement",
                        "files_changed_since_index", "total_tokens", "max_tokens", "baseline_tokens",
                        "reduction_factor", "reduction_summary", "errors"),
    Verbosity.STANDARD: ("query", "task_type", "task_confidence", "retrieval_mode", "source_included",
                         "truncated", "truncation", "changed_files"),
    Verbosity.VERBOSE: ("selected_entities", "evidence", "sections_present"),
}


def to_json(value: Any) -> str:
    """Serialise a dataclass (or plain data) as indented JSON."""
    is_instance = dataclasses.is_dataclass(value) and not isinstance(value, type)
    data = dataclasses.asdict(value) if is_instance else value
    return json.dumps(data, indent=2, sort_keys=False, default=str)


def index_report_json(report: IndexReport) -> str:
    """The `knowcode index --json` document."""
    data = dataclasses.asdict(report)
    data["renamed"] = [{"from": old, "to": new} for old, new in report.renamed]
    return json.dumps(data, indent=2)


def _listing(title: str, paths: list[str]) -> list[str]:
    if not paths:
        return []
    shown = paths[:MAX_LISTED_PATHS]
    more = f" (+{len(paths) - len(shown)} more)" if len(paths) > len(shown) else ""
    return [f"{title} ({len(paths)}){more}:", *(f"  {path}" for path in shown)]


def index_report_text(report: IndexReport) -> str:
    """A short summary of an indexing run."""
    rate = report.parsed_lines / report.seconds if report.seconds else 0.0
    lines = [f"indexed in {report.seconds:.2f}s: {report.parsed_files} files parsed "
             f"({report.parsed_lines} lines, {rate:,.0f} lines/s), {report.unchanged} unchanged"]
    lines += _listing("added", list(report.added))
    lines += _listing("changed", list(report.changed))
    lines += _listing("deleted", list(report.deleted))
    lines += _listing("renamed", [f"{old} -> {new}" for old, new in report.renamed])
    lines += _listing("failed", [f"{path}: {reason}" for path, reason in report.failed.items()])
    if report.skipped:
        lines.append(f"skipped {len(report.skipped)} files (binary, too large, secrets, ...): "
                     "see `knowcode stats --json`")
    return "\n".join(lines)


def stats_text(stats: IndexStats) -> str:
    """A compact table of index totals."""
    def pairs(counts: dict[str, int]) -> str:
        return ", ".join(f"{key} {value}" for key, value in sorted(counts.items(), key=lambda kv: -kv[1]))

    return "\n".join([
        f"root:          {stats.root}",
        f"store:         {stats.store}",
        f"files:         {stats.files} ({stats.lines} lines, {stats.skipped_files} skipped)",
        f"languages:     {pairs(stats.languages)}",
        f"entities:      {pairs(stats.entities)}",
        f"relationships: {pairs(stats.relationships)}",
        f"unresolved:    {stats.unresolved_references} references",
        f"chunks:        {stats.chunks}",
    ])


def search_data(query: str, results: SearchResults) -> dict[str, Any]:
    """Search results as plain data: hits without source text, mode and errors."""
    hits = [{name: getattr(hit, name) for name in SEARCH_HIT_FIELDS} for hit in results]
    return {"query": query, "mode": results.mode.value, "errors": list(results.errors), "hits": hits}


def search_json(query: str, results: SearchResults) -> str:
    """The `knowcode search --json` document (see :func:`search_data`)."""
    return json.dumps(search_data(query, results), indent=2)


def cross_repo_data(results: CrossRepoResults) -> dict[str, Any]:
    """Cross-repository results as plain data: `search_data`'s document, each hit with its repository."""
    hits = [{"repository": r.repository, **{name: getattr(r.hit, name) for name in SEARCH_HIT_FIELDS}}
            for r in results.hits]
    return {"query": results.query, "mode": results.mode.value, "errors": list(results.errors),
            "repositories": list(results.repositories), "hits": hits}


def cross_repo_text(results: CrossRepoResults) -> str:
    """Cross-repository hits as `repository  path:start-end  kind qualified_name  score`, with snippets."""
    lines = [f"[{e}]" for e in results.errors]
    for rank, found in enumerate(results.hits, start=1):
        hit = found.hit
        lines.append(f"{rank:>2}. {found.repository}  {hit.path}:{hit.start_line}-{hit.end_line}  {hit.kind} "
                     f"{hit.qualified_name or hit.entity_id}  ({hit.score:.4f}, {hit.source})")
        snippet = [line for line in hit.text.splitlines() if line.strip()][:SNIPPET_LINES]
        lines.extend(f"      {line.rstrip()[:120]}" for line in snippet)
    if not results.hits:
        lines.append("no results")
    lines.append(f"mode: {results.mode.value}")
    return "\n".join(lines)


def compact_json(data: Any) -> str:
    """Plain data or a dataclass as JSON without whitespace (what the MCP tools answer: every token
    an agent reads costs it)."""
    is_instance = dataclasses.is_dataclass(data) and not isinstance(data, type)
    value = dataclasses.asdict(data) if is_instance else data
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def search_text(results: SearchResults) -> str:
    """Hits as `path:start-end  kind qualified_name  score`, each with a short snippet."""
    lines = [f"[{e}]" for e in results.errors]
    for rank, hit in enumerate(results, start=1):
        lines.append(f"{rank:>2}. {hit.path}:{hit.start_line}-{hit.end_line}  {hit.kind} "
                     f"{hit.qualified_name}  ({hit.score:.4f}, {hit.source})")
        snippet = [line for line in hit.text.splitlines() if line.strip()][:SNIPPET_LINES]
        lines.extend(f"      {line.rstrip()[:120]}" for line in snippet)
    if not results:
        lines.append("no results")
    lines.append(f"mode: {results.mode.value}")
    return "\n".join(lines)


def context_fields(verbosity: Verbosity) -> tuple[str, ...]:
    """The ContextBundle fields a response at this verbosity carries (diagnostic: every field)."""
    if verbosity is Verbosity.DIAGNOSTIC:
        return tuple(field.name for field in dataclasses.fields(ContextBundle))
    return tuple(name for level, names in CONTEXT_FIELDS.items() if level.level <= verbosity.level
                 for name in names)


def context_data(bundle: ContextBundle, verbosity: Verbosity) -> dict[str, Any]:
    """The bundle as plain data, limited to the fields of a verbosity level (what
    :func:`dataclasses.asdict` makes of those fields: only they are converted, where converting the
    whole bundle's evidence and entities cost ~0.8 ms of a minimal bundle's ~1 ms of rendering)."""
    return {name: _plain(getattr(bundle, name)) for name in context_fields(verbosity)}


def _plain(value: Any) -> Any:
    """A field's value as ``dataclasses.asdict`` converts it: dataclasses to dicts, tuples item by item."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    return value


def context_json(bundle: ContextBundle, verbosity: Verbosity) -> str:
    """The `knowcode context --json` document."""
    return json.dumps(context_data(bundle, verbosity), indent=2, default=str)


def context_markdown(bundle: ContextBundle, verbosity: Verbosity) -> str:
    """The bundle's Markdown, then one line per signal the verbosity level carries."""
    lines = [f"[{error}]" for error in bundle.errors]
    lines.append(bundle.context_text or "_No context: nothing fit or nothing matched._")
    lines += ["", "---",
              f"tokens: {bundle.total_tokens} of {bundle.max_tokens} ({bundle.token_encoding}); "
              f"{bundle.reduction_summary}",
              f"sufficiency: {bundle.sufficiency_score:.2f}; retrieval confidence: "
              f"{bundle.retrieval_confidence:.2f}; leg agreement: "
              + ("n/a" if bundle.leg_agreement is None else f"{bundle.leg_agreement:.2f}")
              + f"; files changed since indexing: {bundle.files_changed_since_index}"]
    if verbosity.level >= Verbosity.STANDARD.level:
        lines.append(f"query: {bundle.query}; task: {bundle.task_type.value} "
                     f"({bundle.task_confidence:.2f}); mode: {bundle.retrieval_mode.value}; "
                     f"source: {'included' if bundle.source_included else 'summary only'}")
        lines += [f"truncated: {item}" for item in bundle.truncation]
    if verbosity.level >= Verbosity.VERBOSE.level:
        lines += [f"evidence {e.rank}: {e.entity_id} ({e.score:.4f}, {e.source})" for e in bundle.evidence]
    return "\n".join(lines)

TRUNCATED_NOTICE = "truncated: the result reached its size bound; ask for a smaller depth"


def _node_line(node: GraphNode) -> str:
    via = f" ({node.via})" if node.via else ""
    return (f"{'  ' * node.depth}{node.kind} {node.qualified_name}  "
            f"{node.path}:{node.start_line}-{node.end_line}{via}")


def trace_text(trace: CallTrace) -> str:
    """A call trace as an indented list: the root, then each node by depth, then the bound notice."""
    lines = [f"{trace.direction.value} of {trace.root.qualified_name} (depth {trace.depth}):"]
    lines += [_node_line(node) for node in trace.nodes]
    lines.append(f"{len(trace.nodes) - 1} entities, {len(trace.edges)} call edges")
    if trace.truncated:
        lines.append(TRUNCATED_NOTICE)
    return "\n".join(lines)


def impact_text(report: ImpactReport) -> str:
    """An impact report: the target, direct and transitive dependents, affected files."""
    target = report.target
    lines = [f"impact of {target.kind} {target.qualified_name}  {target.path}:{target.start_line}-"
             f"{target.end_line} (depth {report.depth}):",
             f"direct dependents ({len(report.direct)}):", *map(_node_line, report.direct),
             f"transitive dependents ({len(report.transitive)}):", *map(_node_line, report.transitive),
             f"affected files ({len(report.affected_files)}):", *(f"  {p}" for p in report.affected_files)]
    if report.truncated:
        lines.append(TRUNCATED_NOTICE)
    return "\n".join(lines)


def answer_data(answer: Answer) -> dict[str, Any]:
    """The `knowcode ask --json` document: the answer, its route and every attempt on the way."""
    return {
        "answer": answer.text,
        "route": answer.route.value,
        "model": answer.model,
        "task_type": answer.task_type.value,
        "sufficiency_score": answer.sufficiency_score,
        "sources": [{"path": s.path, "start_line": s.start_line, "end_line": s.end_line,
                     "qualified_name": s.qualified_name, "location": s.location} for s in answer.sources],
        "attempts": [{**dataclasses.asdict(attempt), "latency_ms": round(attempt.latency_ms, 1)}
                     for attempt in answer.attempts],
        "context_tokens": answer.context_tokens,
        "input_tokens": answer.input_tokens,
        "output_tokens": answer.output_tokens,
        "latency_ms": round(answer.latency_ms, 1),
        "routing_reason": answer.routing_reason,
    }


def answer_text(answer: Answer) -> str:
    """The answer, the code a model was given (local answers and non-answers list it themselves), then
    one line saying where the answer came from and what was tried."""
    via = {"local": "answered locally", "llm": f"answered by {answer.model}", "none": "not answered"}
    tried = ", ".join(f"{attempt.model} {attempt.outcome}" for attempt in answer.attempts)
    given = ""
    if answer.route is AnswerRoute.LLM and answer.sources:
        given = "\n\nContext given to the model:\n" + "\n".join(
            f"- {source.label}" for source in answer.sources)
    return (f"{answer.text.strip()}{given}\n\n---\n{via[answer.route.value]} ({answer.task_type.value}; "
            f"sufficiency {answer.sufficiency_score:.2f}; {answer.latency_ms:.0f} ms); tried: {tried}")
