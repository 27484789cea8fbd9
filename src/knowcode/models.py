"""Plain data that crosses stage boundaries: files, entities, relationships and chunks."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class EntityKind(str, Enum):
    """What an entity is. Class-like kinds are the ones that can own methods."""

    MODULE = "module"
    CLASS = "class"
    STRUCT = "struct"
    INTERFACE = "interface"
    TRAIT = "trait"
    ENUM = "enum"
    TYPE = "type"
    FUNCTION = "function"
    METHOD = "method"
    VARIABLE = "variable"  # a module-level assignment (Python), e.g. `g = LocalProxy(...)`
    SECTION = "section"  # a Markdown heading section
    KEY = "key"  # a top-level key of a YAML, TOML or JSON document

    @property
    def is_class_like(self) -> bool:
        """True for kinds whose nested functions are methods."""
        return self in _CLASS_LIKE

    @property
    def is_callable(self) -> bool:
        """True for kinds a call expression can resolve to (constructors included)."""
        return self in _CALLABLE


_CLASS_LIKE = frozenset(
    {EntityKind.CLASS, EntityKind.STRUCT, EntityKind.INTERFACE, EntityKind.TRAIT, EntityKind.ENUM}
)
_CALLABLE = frozenset({EntityKind.FUNCTION, EntityKind.METHOD, EntityKind.CLASS, EntityKind.STRUCT})


class RelationKind(str, Enum):
    """Edges of the entity graph."""

    CONTAINS = "contains"
    CALLS = "calls"
    IMPORTS = "imports"
    INHERITS = "inherits"


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One indexed file, keyed by its root-relative path with `/` separators."""

    path: str
    language: str
    content_hash: str
    size: int
    mtime: float
    line_count: int


@dataclass(frozen=True, slots=True)
class Entity:
    """A module, type, function, method or document part, with a 1-based inclusive line span."""

    id: str
    path: str
    kind: EntityKind
    name: str
    qualified_name: str
    parent_id: str | None
    start_line: int
    end_line: int
    signature: str
    docstring: str
    language: str


@dataclass(frozen=True, slots=True)
class Relationship:
    """A directed edge; `target_id` is None when the target could not be resolved unambiguously.

    `target_name` is the name as written at the reference site (a dotted module path for imports);
    `alias` is the local name an import binds, so later calls through that name can be resolved.
    """

    source_id: str
    kind: RelationKind
    target_name: str
    target_id: str | None
    path: str
    line: int
    alias: str = ""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrieval unit: code-sized text with its span, owning entity and the text the indexes see.

    `tokens` is `index_text` through the index's tokenizer, space-joined: what the sparse leg counts.
    """

    id: str
    path: str
    entity_id: str
    start_line: int
    end_line: int
    text: str
    index_text: str
    tokens: str = ""


@dataclass(frozen=True, slots=True)
class IndexStats:
    """Totals of one index, as `knowcode stats --json` prints them."""

    root: str
    store: str
    indexed_at: float | None
    files: int
    lines: int
    languages: dict[str, int]
    entities: dict[str, int]
    relationships: dict[str, int]
    chunks: int
    unresolved_references: int
    skipped_files: int
    skipped: dict[str, str]  # path -> why the last run left it out (scanner or parser)


class RetrievalMode(str, Enum):
    """How a query was answered (recorded on every result, so a fallback is never silent)."""

    EXACT = "exact"  # a quoted query: names, qualified names, then literal text
    HYBRID = "hybrid"  # BM25 and dense vectors fused by reciprocal rank
    LEXICAL = "lexical"  # BM25 alone, after the dense leg failed or is switched off


class HitSource(str, Enum):
    """Which retriever produced a hit."""

    EXACT = "exact"
    SPARSE = "sparse"
    DENSE = "dense"
    HYBRID = "hybrid"  # found by both legs
    DEPENDENCY = "dependency"  # a 1-hop callee pulled in for completeness, score 0.0


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked piece of code: a chunk of one entity, with a 1-based inclusive line span."""

    path: str
    start_line: int
    end_line: int
    score: float
    entity_id: str
    name: str
    qualified_name: str
    kind: str
    source: str
    chunk_id: str
    text: str
    signature: str = ""
    docstring: str = ""


class SearchResults(list[SearchHit]):
    """The ranked hits of `KnowCode.search`, a plain list, plus how they were found."""

    def __init__(self, hits: list[SearchHit] | tuple[SearchHit, ...], mode: RetrievalMode,
                 errors: tuple[str, ...] = ()) -> None:
        super().__init__(hits)
        self.mode = mode
        self.errors = errors


class TaskType(str, Enum):
    """What a question asks for (spec: Query classification); decides the context template."""

    EXPLAIN = "explain"
    DEBUG = "debug"
    EXTEND = "extend"
    REVIEW = "review"
    LOCATE = "locate"
    GENERAL = "general"


class Verbosity(str, Enum):
    """How much a context response carries (spec: Context synthesis, verbosity ladder), in order."""

    MINIMAL = "minimal"  # context, sufficiency, tokens, reduction summary
    STANDARD = "standard"  # + query, mode, truncation
    VERBOSE = "verbose"  # + evidence
    DIAGNOSTIC = "diagnostic"  # tests only: everything

    @property
    def level(self) -> int:
        """Position on the ladder, so levels compare (`verbosity.level >= Verbosity.STANDARD.level`)."""
        return list(Verbosity).index(self)


@dataclass(frozen=True, slots=True)
class SelectedEntity:
    """An entity whose block made it into a context bundle; `source` is the retriever that found it
    (exact, sparse, dense, hybrid or dependency), never code."""

    id: str
    qualified_name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    source: str


@dataclass(frozen=True, slots=True)
class Evidence:
    """One retrieved hit behind a context bundle, in retrieval rank order (1-based)."""

    rank: int
    chunk_id: str
    entity_id: str
    score: float
    source: str


@dataclass(frozen=True, slots=True)
class ContextBundle:
    """A token-budgeted context for one query (spec: Context synthesis).

    The dataclass always holds every field; the verbosity decides which ones a rendering shows
    (``render.context_json``). `sufficiency_score` is the spec's section-coverage score; retrieval
    confidence, leg agreement and index freshness are separate signals, never mixed into it.
    """

    query: str
    task_type: TaskType
    task_confidence: float  # 1.0 when the caller named the task type
    retrieval_mode: RetrievalMode
    verbosity: Verbosity
    max_tokens: int
    context_text: str  # Markdown: per entity path:lines, signature, docstring, source or summary, relations
    total_tokens: int  # of context_text, by the configured token encoding; never above max_tokens
    token_encoding: str
    source_included: bool  # the response profile allowed raw source
    truncated: bool
    truncation: tuple[str, ...]  # what was cut or left out, one line each
    sufficiency_score: float  # spec: _calculate_sufficiency, in [0, 1]
    sections_present: tuple[str, ...]  # the template sections that made it in, in template order
    retrieval_confidence: float  # relative score margin of hit 1 over hit 2, in [0, 1]
    leg_agreement: float | None  # share of hits found by both sparse and dense legs; None unless hybrid
    files_changed_since_index: int  # of the bundle's files, changed or gone on disk since indexing
    changed_files: tuple[str, ...]
    selected_entities: tuple[SelectedEntity, ...]
    evidence: tuple[Evidence, ...]
    errors: tuple[str, ...]
    baseline_tokens: int  # tokens of the whole files the selected entities live in
    reduction_factor: float  # baseline_tokens / total_tokens (0.0 for an empty bundle)
    reduction_summary: str  # "N tokens instead of M (x-fold)"


class TraceDirection(str, Enum):
    """Which way a call trace walks from its root entity."""

    CALLERS = "callers"  # who calls the root, then who calls them, ...
    CALLEES = "callees"  # what the root calls, then what those call, ...
    BOTH = "both"  # both walks, merged


@dataclass(frozen=True, slots=True)
class GraphNode:
    """An entity reached in a call trace or an impact analysis, with a 1-based inclusive line span.

    `depth` is the number of edges from the root (0 for the root itself); `via` says how it was
    reached: "caller" or "callee" in a trace, "calls", "inherits" or "imports" in an impact analysis
    ("" for the root).
    """

    id: str
    qualified_name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    depth: int
    via: str = ""


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """A resolved relationship between two reached entities, written at `path`:`line`."""

    source_id: str
    target_id: str
    kind: str  # calls, inherits or imports
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class CallTrace:
    """The call graph around one entity: the root (first node), the nodes reached, the call edges
    between them. `truncated` is True when a node or edge bound cut the walk short."""

    root: GraphNode
    direction: TraceDirection
    depth: int
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    truncated: bool


@dataclass(frozen=True, slots=True)
class ImpactReport:
    """What depends on an entity (or anything inside it): direct dependents (callers, subclasses,
    importers) at depth 1, transitive ones up to `depth`, and the files they live in."""

    target: GraphNode
    depth: int
    direct: tuple[GraphNode, ...]
    transitive: tuple[GraphNode, ...]
    affected_files: tuple[str, ...]
    edges: tuple[GraphEdge, ...]
    truncated: bool


@dataclass(frozen=True, slots=True)
class EntityContext:
    """One entity with its code and its neighbours (each list capped; `truncated` when one was cut).

    `source` holds the entity's own lines as they are on disk, at most a bounded number of them.
    """

    entity: GraphNode
    signature: str
    docstring: str
    language: str
    parent: str | None  # the qualified name of the enclosing entity
    source: str
    source_truncated: bool
    members: tuple[GraphNode, ...]
    callers: tuple[GraphNode, ...]
    callees: tuple[GraphNode, ...]
    bases: tuple[GraphNode, ...]  # what it inherits from
    subclasses: tuple[GraphNode, ...]
    importers: tuple[GraphNode, ...]  # modules that import it
    truncated: bool


class AnswerRoute(str, Enum):
    """Where an answer came from (spec: Local-vs-LLM routing)."""

    LOCAL = "local"  # the context bundle itself, judged sufficient for a verified task type
    LLM = "llm"  # a configured model answered from the bundle
    NONE = "none"  # neither: no verified local route and no model answered (see the attempts)


@dataclass(frozen=True, slots=True)
class AnswerAttempt:
    """One step of answering a question, in order: a local bundle rung or one model call.

    `outcome` is one of: ``insufficient`` (a bundle rung below the bar), ``not_verified`` (local answers
    are off for the task type), ``answered``, ``rate_limited`` (our client-side limit), ``exhausted``
    (the provider's 429 or quota), ``timeout``, or ``error``. `error` is a short message, never a key.
    """

    model: str  # "local" for a bundle rung, else the configured model name
    outcome: str
    error: str | None
    latency_ms: float
    max_tokens: int = 0  # bundle rungs: the budget; model calls: 0
    sufficiency_score: float | None = None  # bundle rungs: the bundle's score


@dataclass(frozen=True, slots=True)
class AnswerSource:
    """Code an answer rests on: an entity of the bundle with its path and lines."""

    path: str
    start_line: int
    end_line: int
    qualified_name: str

    @property
    def location(self) -> str:
        """``path:start-end``, as answers cite code."""
        return f"{self.path}:{self.start_line}-{self.end_line}"

    @property
    def label(self) -> str:
        """``path:start-end qualified.name``: one line of an answer's source list."""
        return f"{self.location} {self.qualified_name}"


@dataclass(frozen=True, slots=True)
class Answer:
    """The answer to one question, with its route and everything tried on the way (``KnowCode.ask``)."""

    question: str
    text: str
    route: AnswerRoute
    model: str | None  # the model that answered; None for local answers and failures
    task_type: TaskType
    sufficiency_score: float  # of the bundle the answer was built from
    sources: tuple[AnswerSource, ...]
    attempts: tuple[AnswerAttempt, ...]
    context_tokens: int  # tokens of the bundle given to the model or shown as the local answer
    input_tokens: int | None  # as the provider reported them; None when local or unreported
    output_tokens: int | None
    latency_ms: float
    routing_reason: str  # why local answering was on or off for this task type
