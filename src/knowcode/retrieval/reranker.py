"""Reranking (spec: "Reranking"): a cross-encoder provider when configured, else signal scoring.

Signal scoring multiplies each fused candidate's score by the spec's boosts (docstring, recent
change, query substring, query == kind) and by code-aware signals of our own (definition of the
queried symbol, file and folder names, test/example/doc path penalties, file coherence, per-file
diversity). Every factor is a field of :class:`RankingSignals`, so each can be switched off
(set to 1.0) and measured alone; `benchmarks/quality.py` does that ablation.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Protocol

from knowcode.indexing.languages import is_document_language
from knowcode.indexing.tokenizer import tokenize
from knowcode.models import Chunk, Entity, EntityKind
from knowcode.paths import same_file

RECENT_SECONDS = 7 * 24 * 3600  # spec: Reranking — "modified < 7 days"
DEFAULT_TOP_K_MULTIPLIER = 5  # spec: Reranking — limit x reranker_top_k_multiplier go to the reranker

_SYMBOL_QUERY = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*(?:\(\))?$")
# Paths whose code is rarely the answer: tests, examples, docs, benchmarks, compat shims, other projects'
# code vendored in (`vendor/`, pip's `_vendor/`, `third_party/`, matplotlib's `extern/`) and type
# declarations beside the code they declare (TypeScript's `.d.ts`, Python's `.pyi` stubs).
# Folder names in any case (SwiftPM's `Tests/`, .NET's `Samples/`) and Xcode's test targets (`AppTests/`);
# test files by the conventions of Python, Go, JavaScript and of the JVM, Swift and .NET
# (`RetryPolicyTests.swift`, `CircleTest.java`); test support by those of Go (`testdata/`), Rust
# (`benches/`), JavaScript (`__mocks__/`, `e2e/`, Storybook's `*.stories.tsx`) and RSpec (`*_spec.rb`).
_PENALISED_PATH = re.compile(
    r"(^|/)(?i:tests?|__tests__|testing|spec|specs|examples?|samples?|docs?|benchmarks?|fixtures?|testdata"
    r"|test[-_]utils?|test[-_]helpers?|(?:integration|e2e)[-_]tests?|e2e|__mocks__|mocks|benches|bench"
    r"|demos?|stories|_?vendor(?:ed)?|third[-_]?party|3rdparty|extern)/"
    r"|(^|/)test_[^/]*$|_test\.[a-z]+$|\.(test|spec|stories|bench|cy)\.[jt]sx?$|_spec\.rb$|(^|/)conftest\.py$"
    r"|(^|/)[A-Z]\w*Tests?\.(?:swift|java|kt|scala|cs|m)$|(^|/)[A-Z]\w*Tests/"
    r"|(^|/)_?compat[^/]*$|\.d\.ts$|\.pyi$")
# Words of a question that are code: dotted (`res.sendFile`), camelCase, PascalCase with two humps
# (`ZodDefault`), snake_case. Plain words ("session") are left to BM25.
# A word starts at its first character: `_fetch_all` is one name, not `fetch_all`.
_CODE_WORD = re.compile(r"(?<![\w$])(?:[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[a-z][a-z0-9]*[A-Z][\w$]*"
                        r"|[A-Z][a-z0-9]+[A-Z][\w$]*|_*[A-Za-z][A-Za-z0-9]*_[\w$]+)")
# A plain word is code too where the text writes it as code: called (`Window(`, `jsonify()`), in
# backquotes, or imported (`from django.db.models import Window`, `import { Window } from`). Issue
# reports name the class they use this way ("Lag() with DecimalField crashes"); a word and its opening
# parenthesis never touch in prose. Keywords that take a parenthesis in code (`if (`, `super()`) are no
# names, nor `print(`, which every reproduction calls.
_CALLED_WORD = re.compile(r"(?<![\w$.])([A-Za-z_$][\w$]+)\(|`([A-Za-z_$][\w$]+)(?:\(\))?`")
_IMPORTED_WORDS = re.compile(r"^[ \t>]*(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]+[({]?[ \t]*([\w, \t]+)",
                             re.MULTILINE)
_NOT_NAMES = frozenset({"if", "for", "while", "switch", "catch", "return", "function", "super", "typeof",
                        "sizeof", "await", "yield", "assert", "print", "with", "elif", "not", "and", "or",
                        "in", "is", "as", "lambda", "new", "delete", "throw", "case", "do", "else"})
# A bare call of a built-in (`open(path)`, `list(a)`, `require('x')`) names the language's function, not
# the repository's methods of that name (`Storage.open`, `Permutation.list`): reproductions call them
# everywhere. Written in backquotes or dotted (`Storage.open`), the name still counts.
_BUILTIN_CALLS = frozenset({
    # Python's built-in functions and types
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod",
    "compile", "complex", "delattr", "dict", "dir", "divmod", "enumerate", "eval", "exec", "filter",
    "float", "format", "frozenset", "getattr", "globals", "hasattr", "hash", "hex", "id", "input", "int",
    "isinstance", "issubclass", "iter", "len", "list", "locals", "map", "max", "min", "next", "object",
    "oct", "open", "ord", "pow", "property", "range", "repr", "reversed", "round", "set", "setattr",
    "slice", "sorted", "staticmethod", "str", "sum", "tuple", "type", "vars", "zip",
    # JavaScript's globals
    "require", "setTimeout", "setInterval", "clearTimeout", "clearInterval", "parseInt", "parseFloat",
    "String", "Number", "Boolean", "Array", "Object", "Symbol", "Promise", "Error"})
# A file path a question names (a traceback frame, "see django/db/models/query.py"): folders and a
# file with an extension, or a bare file name with a code extension. Each branch is tried only where a
# run of its characters starts (a later start inside the run finds the same tail or nothing): tried at
# every character, a 20,000-character run of letters or `a-a-` in a report took seconds.
_PATH_WORD = re.compile(r"(?<![\w./-])/*(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,4}\b"
                        r"|(?<![\w-])-*\b[\w-]+\.(?:py|js|jsx|ts|tsx|go|rs|java|rb|php|c|h|cc|cpp|hpp|cs|kt|swift|scala"
                        r"|ex|exs|lua|sh|zig|hs)\b")
_LEADING_ROOT = re.compile(r"^(?:\.?/|-)+")  # "/abs/x.py", "./x.py", "--x.py": compared without it
# Two words a question writes apart, with a space or a hyphen, that code often writes as one: "test
# client" is testclient.py, "model cards" modelcards.py, "auto-reloader" autoreload.py.
_WRITTEN_APART = re.compile(r"(?=\b([A-Za-z]+)[ -]([A-Za-z]+)\b)")
# Traceback frames, as (path, function, line), read after a Windows path's `\` became `/`. A frame names the
# function the failure passed through, which is where an issue's fix often goes. One pattern a format:
_FRAMES = (
    # Python: File "pkg/core.py", line 12, in run
    re.compile(r'File "(?P<path>[^"\n]+)", line (?P<line>\d+), in (?P<name>[A-Za-z_]\w*)'),
    # pytest (--tb=long, short): pkg/core.py:12: in run
    re.compile(r"(?<![\w./-])(?P<path>[\w./-]+\.py):(?P<line>\d+): in (?P<name>[A-Za-z_]\w*)"),
    # IPython up to 7: pkg/core.py in run(self, x)
    re.compile(r"^[ \t]*(?P<path>\S+\.py) in (?P<name>[A-Za-z_]\w*)\(", re.MULTILINE),
    # IPython 8 on: File pkg/core.py:12, in Engine.run(self, x)
    re.compile(r"File (?P<path>[^\s\",]+\.py):(?P<line>\d+), in (?:\w+\.)*(?P<name>[A-Za-z_]\w*)"),
    # V8 (Node.js, Chrome): at Engine.run (src/engine.js:12:5)
    re.compile(r"\bat (?:async )?(?:[\w$]+\.)*(?P<name>[A-Za-z_$][\w$]*)"
               r" \((?P<path>[^()\s]+?):(?P<line>\d+):\d+\)"),
    # the JVM (Java, Kotlin, Scala, Groovy): at com.acme.Engine.run(Engine.java:12)
    re.compile(r"\bat (?:[\w$]+\.)+(?P<name>[A-Za-z_$][\w$]*)"
               r"\((?P<path>[\w$-]+\.(?:java|kt|scala|groovy)):(?P<line>\d+)\)"),
    # .NET: at Acme.Engine.Run(String x) in C:/src/Acme/Engine.cs:line 12
    re.compile(r"\bat (?:[\w`<>]+\.)+(?P<name>\w+)\([^()\n]*\)"
               r" in (?P<path>[^\n]+?\.(?:cs|fs|vb)):line (?P<line>\d+)"),
    # Ruby: lib/acme/engine.rb:12:in `run' (Ruby 3.4: 'Acme::Engine#run')
    re.compile(r"(?<![^\s:'\"`])(?P<path>[^\s:'\"`]+\.rb):(?P<line>\d+)"
               r":in [`'](?:[\w:]+[#.])?(?P<name>[\w?!=]+)'"),
    # Go: acme/engine.(*Engine).Run(0xc000010000)  then, indented,  /src/acme/engine.go:12 +0x1d
    re.compile(r"(?<![\w./-])(?:[\w./-]+\.)?(?:\(\*?\w+\)\.)?(?P<name>\w+)\([^()\n]*\)"
               r"\n[ \t]+(?P<path>[^\s:]+\.go):(?P<line>\d+)"),
    # Rust: 3: acme::engine::Engine::run[::h<hash>]  then, indented,  at ./src/engine.rs:12:5
    re.compile(r"(?<!\d)\d+: (?:[\w<>{} ]+::)*?(?P<name>\w+)(?:::h[0-9a-f]{16})?"
               r"\n[ \t]+at (?P<path>[^\s:]+\.rs):(?P<line>\d+)"),
    # PHP: #0 /var/www/src/Engine.php(12): Acme\Engine->run()
    re.compile(r"#\d+ (?P<path>[^\s()]+\.php)\((?P<line>\d+)\): (?:[\w/]+(?:->|::))?(?P<name>\w+)\("),
    # Elixir: (acme 0.1.0) lib/acme/engine.ex:12: Acme.Engine.run/2
    re.compile(r"(?<![\w./-])(?P<path>[\w./-]+\.exs?):(?P<line>\d+): (?:[\w.]+\.)?(?P<name>[\w?!]+)/\d+"),
    # gdb (C, C++): #1 0x0000555555555189 in acme::Engine::run (this=0x0) at src/engine.cc:12
    re.compile(r"#\d+ +(?:0x[0-9a-f]+ in )?(?:[\w~]+::)*(?P<name>[\w~]+)"
               r" \([^()\n]*\) at (?P<path>[^\s:]+):(?P<line>\d+)"),
)
# A line a query points at in a file without naming its function: a code host's line anchor (GitHub's
# `compiler.py#L428-L433`, GitLab's `#L428-433`) or `path:line` (a warning's `supervised.py:859:
# RuntimeWarning`, an agent's `src/app.py:120`). The function holding that line is what the asker saw.
_LINE_LINK = re.compile(r"(?<![\w./-])/*(?P<path>(?:[\w.-]+/)*[\w.-]+\.[A-Za-z]\w{0,4})"
                        r"(?:#L|:)(?P<line>\d+)\b")
# Quoted text of several words in a question is usually an error message copied from the output. A
# quoted single word or expression (`'order'`, `np.float16`) is no such evidence: issue reports quote
# dozens, and boosting every chunk holding one cost 0.09 function Recall@10 on bench/issues. An
# apostrophe inside a word (don't) opens no quote.
_QUOTED = re.compile(r"(?<![\w'])'([^'\n]{3,200})'(?![\w'])|\"([^\"\n]{3,200})\"|`([^`\n]{3,200})`")
PHRASE_MIN_WORDS = 3
# A long quoted message matches when any run of this many of its words does: the code often builds
# the message from parts (f-strings, concatenation), so the whole rendered text rarely occurs.
PHRASE_WINDOW_WORDS = 4
# Question length at which per-word signals (file names) start to thin out: a short query's words
# each carry the question, a 20-word question's incidental words do not (bench/questions: 0.525 ->
# 0.543 NDCG@10 at 6; 4 and 8 within 0.005; the file-level set unchanged).
SHORT_QUERY_WORDS = 6
# File diversity by query length (distinct tokens). A short query names an area and is answered by
# files, so further chunks of a ranked file are damped in full up to DIVERSE_QUERY_TOKENS; a long
# question is specific, and its answer is often two or three functions of one file, which diversity
# would push apart, so none is applied from UNDIVERSE_QUERY_TOKENS on, fading linearly between. The
# file-level benchmark's non-symbol queries hold 0-12 tokens (96% at most 8), the span-level
# questions 10-21 (92% at least 12). Measured (span-level / file-level NDCG@10): full diversity
# everywhere 0.419 / 0.866, none 0.562 / 0.806, the earlier smooth rule (3 / tokens) 0.491 / 0.865,
# this rule 0.557 / 0.866 (7-11: 0.561 / 0.866, 6-10: 0.562 / 0.865, 9-12: 0.555 / 0.866).
DIVERSE_QUERY_TOKENS = 8
UNDIVERSE_QUERY_TOKENS = 12
# The most distinct tokens a question holds; a longer query is a report (an issue, a traceback). The
# span-level questions (12-40 words) hold 10-21 tokens, the issue reports of bench/issues a median of 76
# (7 of 100 hold at most 24: each is a title line over a body, which makes a report too). A report
# mentions docs in passing and names no kind of code it wants.
QUESTION_TOKENS = 24
# Queries whose facts are kept: one query is read by the fusion (wants_code_only) and by each tier's
# signal scoring, and the longest report of bench/issues (1,200 words) takes ~4.5 ms to read (measured);
# a few recent queries suffice.
QUERY_FACTS_CACHE = 32
# Words that make a question (not a report) about documentation, so prose files are not penalised for it.
_DOC_WORDS = frozenset(tokenize("doc docs documentation documented readme changelog guide tutorial"))
# The first hits whose callees a long question lifts (RankingSignals.callee). The answer to "how does X
# work" is X and what it calls: on bench/questions, of the candidates ranked 11-50, 2% were answers,
# against 21% of those a first-three hit calls (12% of those calling one). Measured (span-level /
# file-level NDCG@10 against 0.649 / 0.866), callers lifted too at x2: 1 seed 0.653 / 0.865, 2: 0.660 /
# 0.864, 3: 0.665 / 0.864, 5: 0.653 / 0.864; callees only, 3 seeds: 0.657 / 0.866 (kept: the callers
# cost a file-level query).
CALL_SEEDS = 3
# How many definitions of a mentioned name the mention lifts at full strength: with n > 2 candidates
# defining it, each takes the mention factor ** (2 / n). A name defined many times says little about
# which one a report means (sympy's five `MatrixSymbol` handler methods beside the class its reproduction
# constructs). A function's overloads are one definition: counted by file and qualified name. Chosen
# on the issue reports (function Recall@10 0.584 without it, 0.601 / 0.601 / 0.591 at 1 / 2 / 3; NDCG@10
# 0.476 -> 0.486 / 0.487 / 0.481); every question set scores the same at each.
MENTION_NAMESAKES = 2
CALLABLE_KINDS = frozenset({EntityKind.FUNCTION, EntityKind.METHOD})
_REEXPORT_FILES = frozenset({"__init__.py", "index.js", "index.ts", "mod.rs"})


@dataclass(frozen=True)
class RankingSignals:
    """Multiplicative ranking factors; 1.0 switches a signal off."""

    docstring: float = 1.2  # spec: entity has a docstring
    recent: float = 1.1  # spec: file modified less than 7 days ago
    substring: float = 1.5  # spec: the query appears verbatim (case-insensitive) in the chunk
    kind: float = 2.0  # spec: the query is the chunk's entity kind ("class", "function", ...)
    definition: float = 3.0  # symbol query: the chunk's entity is named like the queried symbol
    definition_path: float = 1.5  # ... and the file (or its folder) is named like it too
    mention: float = 2.0  # word query naming code (`app.set`, `parseUrl`, `max_retries`): its definition;
    # faded out in long questions, kept in reports (see _signal_factor)
    file_name: float = 1.25  # per query word naming the file or its folder (at most 2 words)
    phrase: float = 2.0  # a quoted phrase of the query (an error message) occurs in the chunk
    path_mention: float = 2.0  # the query names the chunk's file (a traceback frame, a path in an issue)
    frame: float = 2.0  # a traceback frame of the query names the chunk's entity in the chunk's file
    line_link: float = 2.0  # the query points at a line of the chunk's function (`compiler.py#L428`)
    path_penalty: float = 0.5  # tests, examples, docs, benchmarks, compat shims, vendored code, .d.ts, .pyi
    prose_penalty: float = 0.5  # prose and config files (Markdown, reST, text, INI, ...) for a code question
    reexport_penalty: float = 0.6  # module-level chunk of an __init__.py / index.ts re-export file
    file_coherence: float = 1.05  # per further candidate from the same file (at most 4)
    file_diversity: float = 0.5  # per chunk of the same file ranked above, thinned in long queries
    coverage: float = 3.0  # long question: raised to the share of its words the chunk holds (see _coverage)
    non_callable: float = 0.7  # long question, not a report: the chunk is no function or method
    callee: float = 2.0  # long question: the chunk's entity is called by one of the first hits


@dataclass(frozen=True, slots=True)
class Candidate:
    """A fused candidate with what signal scoring reads."""

    chunk: Chunk
    entity: Entity
    score: float
    mtime: float


class CrossEncoder(Protocol):
    """A reranking provider: scores (query, document) pairs; higher is more relevant."""

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Return one relevance score per document."""
        ...


def is_symbol_query(query: str) -> bool:
    """A bare or dotted identifier (``Flask``, ``app.run``, ``Foo::bar``, ``run()``)."""
    return bool(_SYMBOL_QUERY.match(query.strip()))


def wants_code_only(query: str) -> bool:
    """Whether prose and configuration chunks are no candidates for the query: a long question (every
    long-question signal in full, UNDIVERSE_QUERY_TOKENS tokens or more) that is not about docs. An issue
    report that pastes its template's headings matches the repository's issue templates, changelog and
    translation catalogues better than its code; the prose penalty cannot lift code that never made the
    candidate pool (bench/issues: two of 44 reports had none)."""
    facts = _Query.of(query)
    return facts.long_share == 1.0 and not facts.about_docs


def is_long_question(query: str) -> bool:
    """Whether the query is a long, specific question: every long-question signal in full (from
    UNDIVERSE_QUERY_TOKENS distinct tokens), yet no report (at most QUESTION_TOKENS)."""
    facts = _Query.of(query)
    return facts.long_share == 1.0 and not facts.is_report


def reads_calls(query: str, signals: RankingSignals) -> bool:
    """Whether signal scoring reads the call edges among the candidates for the query (long questions
    only, when a call signal is on): when not, the caller need not look them up."""
    return signals.callee != 1.0 and bool(_Query.of(query).long_share)


def scores_sole_functions(query: str) -> bool:
    """Whether a candidate is scored as what its chunk holds for the query (long questions, whose signals
    judge functions): a module chunk whose only member is a function is that function, not a chunk that
    is no function or method (a small file of one function fits one chunk, which its module owns)."""
    return bool(_Query.of(query).long_share)


def reads_tokens(query: str) -> bool:
    """Whether signal scoring reads the candidates' tokens for the query (coverage, in long questions
    only): when not, the caller need not fetch them (they are as long as the chunks' texts)."""
    return bool(_Query.of(query).long_share)


@lru_cache(maxsize=QUERY_FACTS_CACHE)
def mentioned_symbols(query: str) -> tuple[str, ...]:
    """The code names a question mentions: the whole query if it is a symbol, else its code words.
    Cached: signal scoring and the definitions lookup both read them for the same query."""
    stripped = query.strip()
    if is_symbol_query(stripped):
        return (stripped.removesuffix("()"),)
    written = [m.strip(".") for m in _CODE_WORD.findall(stripped)]
    written += [called or quoted for called, quoted in _CALLED_WORD.findall(stripped)
                if called not in _BUILTIN_CALLS]
    written += [name.split()[0] for names in _IMPORTED_WORDS.findall(stripped)
                for name in names.split(",") if name.strip()]
    # a dunder (`__repr__`) is a protocol every class may define: it names none of them
    return tuple(word for word in dict.fromkeys(written)
                 if word not in _NOT_NAMES and not (word.startswith("__") and word.endswith("__")))


@dataclass(frozen=True, slots=True)
class Frame:
    """A traceback frame: the file and function the failure passed through, and the line if given."""

    path: str
    name: str
    line: int | None


@dataclass(frozen=True, slots=True)
class LineLink:
    """A line of a file the query points at (see _LINE_LINK)."""

    path: str
    line: int


def traceback_frames(query: str) -> tuple[Frame, ...]:
    """The traceback frames a query holds (see _FRAMES): a word query's only."""
    return _Query.of(query).frames


def line_links(query: str) -> tuple[LineLink, ...]:
    """The file lines a query points at that no traceback frame of it names (see _LINE_LINK): a word
    query's only."""
    return _Query.of(query).links


@dataclass(frozen=True)
class _Query:
    """What signal scoring reads from the query, computed once per query."""

    lowered: str
    words: frozenset[str]  # its tokens
    symbol_words: frozenset[str] | None  # tokens of a symbol query's parts; None for word queries
    symbol: str  # a symbol query's last part ("run" of "Engine.run")
    symbol_path: str  # a dotted symbol query's parts as a qualified-name suffix (".engine.run"), else ""
    mentions: tuple[str, ...]  # code words of a word query, lower-cased, with a leading dot
    joined: frozenset[str]  # the tokens of a question's pairs of words written apart, as one word
    phrases: tuple[tuple[str, ...], ...]  # per quoted phrase: itself, or its PHRASE_WINDOW_WORDS windows
    paths: tuple[str, ...]  # file paths the query names, without a leading "/", "./" or "-"
    frames: tuple[Frame, ...]  # the traceback frames the query holds
    links: tuple[LineLink, ...]  # the file lines it points at, beside its frames
    word_share: float  # how much one query word counts: 1 up to SHORT_QUERY_WORDS words, then less
    diversity_share: float  # how strongly further chunks of a ranked file are damped: less in long queries

    @property
    def long_share(self) -> float:
        """How much the query is a long, specific question (0 for short ones): the complement of its
        file diversity, so that the signals of long questions fade in where diversity fades out."""
        return 0.0 if self.symbol_words is not None else 1.0 - self.diversity_share

    @property
    def is_report(self) -> bool:
        """Whether the query is a report rather than a question: more than QUESTION_TOKENS tokens, or a
        title line over a body (pasted output, a reproduction)."""
        return _reads_as_report(self.words, self.lowered)

    @property
    def about_docs(self) -> bool:
        """Whether the query asks about documentation: a question that names docs, not a long report
        that mentions them in passing (most issue reports do)."""
        return bool(self.words & _DOC_WORDS) and not self.is_report

    @classmethod
    @lru_cache(maxsize=QUERY_FACTS_CACHE)
    def of(cls, query: str) -> _Query:
        stripped = query.strip()
        words = frozenset(tokenize(stripped))
        shares = {"word_share": min(1.0, SHORT_QUERY_WORDS / max(1, len(words))),
                  "diversity_share": _diversity_share(len(words))}
        if not is_symbol_query(stripped):
            slashed = stripped.replace("\\", "/")  # a Windows traceback's paths (C:\envs\...\query.py)
            frames = _frames(slashed)
            return cls(stripped.lower(), words, None, "", "",
                       mentions=tuple("." + m.lower() for m in mentioned_symbols(query)),
                       # a report's hyphens join paths and pasted code ("site-packages"), not words
                       joined=frozenset() if _reads_as_report(words, stripped) else _joined(stripped),
                       phrases=_phrases(stripped),
                       paths=tuple(dict.fromkeys(_LEADING_ROOT.sub("", path)
                                                 for path in _PATH_WORD.findall(slashed))),
                       frames=frames, links=_links(slashed, frames),
                       **shares)
        parts = [p for p in re.split(r"\.|::|#|->", stripped.removesuffix("()")) if p]
        dotted = "." + ".".join(parts).lower() if len(parts) > 1 else ""
        return cls(stripped.lower(), words, frozenset(tokenize(" ".join(parts))), parts[-1], dotted,
                   mentions=(), joined=frozenset(), phrases=(), paths=(), frames=(), links=(), **shares)


def _reads_as_report(words: Collection[str], stripped: str) -> bool:
    """Whether a query of these tokens and this stripped text is a report (see _Query.is_report)."""
    return len(words) > QUESTION_TOKENS or "\n" in stripped


def _diversity_share(tokens: int) -> float:
    """How strongly file diversity applies to a query of this many distinct tokens (1 full, 0 none)."""
    fade = (UNDIVERSE_QUERY_TOKENS - tokens) / (UNDIVERSE_QUERY_TOKENS - DIVERSE_QUERY_TOKENS)
    return min(1.0, max(0.0, fade))


def _coverage(candidates: Sequence[Candidate], query: _Query) -> list[float]:
    """Per candidate, the share of a long question's word weight its tokens hold, times the query's
    long share (so 0 for short queries and symbols).

    A word weighs its rarity among the candidates, ``ln(1 + n / (1 + df))``: a word every candidate
    holds tells none apart. BM25 already sums its words' weights, but saturated per word and damped by
    length; this is the coordination of the classic vector-space scoring, which rewards a chunk for
    answering more of the question's parts.
    """
    if not query.long_share or not candidates:
        return [0.0] * len(candidates)
    held = [query.words.intersection(c.chunk.tokens.split()) for c in candidates]
    frequency = Counter(word for words in held for word in words)
    weight = {word: math.log(1 + len(candidates) / (1 + frequency[word])) for word in query.words}
    # fsum: exact whatever the order, and a set's order changes with the hash seed (a plain sum
    # changed the last digits of a long question's scores from one process to the next)
    total = math.fsum(weight.values())
    return [query.long_share * math.fsum(weight[word] for word in words) / total for words in held]


def _joined(query: str) -> frozenset[str]:
    """The token of each pair of adjacent words written apart (neither a stop word) when, written as one
    word, they make one token that neither word is ("test client": testclient)."""
    joined = set()
    for first, second in _WRITTEN_APART.findall(query):
        parts = tokenize(first) + tokenize(second)
        one = tokenize((first + second).lower())  # "URL parsing": urlparse, not URL + parsing
        if len(parts) == 2 and len(one) == 1 and one[0] not in parts:
            joined.add(one[0])
    return frozenset(joined)


def _frames(query: str) -> tuple[Frame, ...]:
    """The traceback frames of the query (paths without a leading root), each once."""
    found = (match for pattern in _FRAMES for match in pattern.finditer(query))
    return tuple(dict.fromkeys(Frame(_LEADING_ROOT.sub("", m["path"]), m["name"],
                                     int(m["line"]) if "line" in m.groupdict() else None)
                               for m in found))


def _links(query: str, frames: Sequence[Frame]) -> tuple[LineLink, ...]:
    """The file lines the query points at (paths without a leading root), each once, but those its
    frames name with their function (`File x.py:12, in run`, `at run (x.js:12:5)`)."""
    framed: dict[int | None, list[str]] = {}  # a frame's line -> the paths of the frames naming it
    for frame in frames:  # looked up by line: a pasted log of thousands of frames and links stays linear
        framed.setdefault(frame.line, []).append(frame.path)
    found = (LineLink(_LEADING_ROOT.sub("", m["path"]), int(m["line"])) for m in _LINE_LINK.finditer(query))
    return tuple(link for link in dict.fromkeys(found)
                 if not any(same_file(path, link.path) for path in framed.get(link.line, ())))


def _phrases(query: str) -> tuple[tuple[str, ...], ...]:
    """The query's quoted phrases, lower-cased; a long one as its word windows."""
    found: list[tuple[str, ...]] = []
    for groups in _QUOTED.findall(query):
        phrase = next(g for g in groups if g).lower()
        words = phrase.split()
        if len(words) < PHRASE_MIN_WORDS:
            continue
        if len(words) <= PHRASE_WINDOW_WORDS:
            found.append((phrase,))
        else:
            found.append(tuple(" ".join(words[i:i + PHRASE_WINDOW_WORDS])
                               for i in range(len(words) - PHRASE_WINDOW_WORDS + 1)))
    return tuple(found)


@lru_cache(maxsize=1 << 14)
def _path_facts(path: str) -> tuple[frozenset[str], bool, bool]:
    """(tokens of the file stem and its two parent folders, penalised path?, re-export file?)."""
    pure = PurePosixPath(path)
    words = frozenset(tokenize(" ".join([pure.stem, *pure.parent.parts[-2:]])))
    return words, bool(_PENALISED_PATH.search(path)), pure.name in _REEXPORT_FILES


def _defines(candidate: Candidate) -> bool:
    """Whether the candidate's chunk holds its entity's first line: a definition counts where it is
    written, not in the chunks of its body further down."""
    return candidate.chunk.start_line <= candidate.entity.start_line <= candidate.chunk.end_line


def _namesakes(candidates: Sequence[Candidate], query: _Query) -> list[int]:
    """Per candidate that defines a name the query mentions, how many definitions of that mention the
    candidates hold (distinct file and qualified name: overloads count once); 0 for every other one."""
    named: list[tuple[str, str, str] | None] = []
    for candidate in candidates:
        entity = candidate.entity
        qualified = "." + entity.qualified_name.lower()
        mention = next((m for m in query.mentions if qualified.endswith(m)), None)
        named.append((mention, entity.path, entity.qualified_name)
                     if mention is not None and _defines(candidate) else None)
    definitions = Counter(key[0] for key in set(named) if key is not None)
    return [0 if key is None else definitions[key[0]] for key in named]


def _signal_factor(candidate: Candidate, query: _Query, signals: RankingSignals, now: float,
                   namesakes: int) -> float:
    chunk, entity = candidate.chunk, candidate.entity
    factor = 1.0
    if entity.docstring:
        factor *= signals.docstring
    if now - candidate.mtime < RECENT_SECONDS:
        factor *= signals.recent
    lowered = chunk.text.lower()
    if query.lowered and query.lowered in lowered:
        factor *= signals.substring
    if any(any(window in lowered for window in windows) for windows in query.phrases):
        factor *= signals.phrase
    if query.lowered == entity.kind.value:
        factor *= signals.kind
    path_words, penalised, reexport = _path_facts(chunk.path)
    if query.symbol_words is not None:
        if _defines(candidate) and entity.name.lower() == query.symbol.lower():
            # `Session` the class beats `session` the helper, and `Cookie.save` beats `Null.save`: a
            # case-only match, or a dotted query whose owner differs, gets half the boost.
            exact = entity.name == query.symbol and (
                not query.symbol_path or ("." + entity.qualified_name.lower()).endswith(query.symbol_path))
            factor *= signals.definition if exact else signals.definition ** 0.5
            if query.symbol_words & path_words:
                factor *= signals.definition_path
    else:
        if namesakes:  # the candidate defines a name the query mentions (see _namesakes)
            # A long question names the API it asks about ("why does `ky.json(schema)` throw ..."): the
            # answer is the mechanism behind it, and words already bring the definition in. Without this
            # factor in long questions, span-level NDCG@10 rose on all four question sets (+0.001 to
            # +0.013); short queries and reports (the code that failed) keep it.
            factor *= signals.mention ** ((1.0 if query.is_report else 1.0 - query.long_share)
                                          * min(1.0, MENTION_NAMESAKES / namesakes))
        named_by = (query.words | query.joined) & path_words
        factor *= signals.file_name ** (min(2, len(named_by)) * query.word_share)
        if any(same_file(chunk.path, mentioned) for mentioned in query.paths):
            factor *= signals.path_mention
        if any(frame.name == entity.name and same_file(chunk.path, frame.path) for frame in query.frames):
            factor *= signals.frame
        if entity.kind in CALLABLE_KINDS and any(
                entity.start_line <= link.line <= entity.end_line and same_file(chunk.path, link.path)
                for link in query.links):
            factor *= signals.line_link
    if penalised:
        factor *= signals.path_penalty
    if reexport and entity.parent_id is None:
        factor *= signals.reexport_penalty
    if is_document_language(entity.language) and not query.about_docs:
        factor *= signals.prose_penalty
    return factor


def score_signals(query: str, candidates: Sequence[Candidate], signals: RankingSignals,
                  now: float | None = None,
                  calls: Collection[tuple[str, str]] = ()) -> list[tuple[Candidate, float]]:
    """Rerank candidates by signal scoring (deterministic; no provider needed).

    :param query: the query as the user wrote it.
    :param candidates: fused candidates with their chunk, entity and file mtime.
    :param signals: the factors to apply.
    :param now: the current time (tests pin it).
    :param calls: (caller id, callee id) edges among the candidates' entities (see reads_calls).
    :return: (candidate, final score), best first.
    """
    clock = time.time() if now is None else now
    facts = _Query.of(query)
    per_file = Counter(c.chunk.path for c in candidates)
    covered = _coverage(candidates, facts)
    namesakes = _namesakes(candidates, facts) if facts.mentions else [0] * len(candidates)
    scored = []
    for candidate, share, named in zip(candidates, covered, namesakes, strict=True):
        coherence = signals.file_coherence ** min(4, per_file[candidate.chunk.path] - 1)
        factor = _signal_factor(candidate, facts, signals, clock, named) * signals.coverage ** share
        if candidate.entity.kind not in CALLABLE_KINDS and not facts.is_report:
            factor *= signals.non_callable ** facts.long_share
        scored.append((candidate, candidate.score * coherence * factor))
    scored.sort(key=lambda pair: -pair[1])
    if calls and facts.long_share:
        scored = _lift_callees(scored, calls, signals.callee ** facts.long_share)
    seen: Counter[str] = Counter()
    diversified = []
    for candidate, score in scored:
        damping = seen[candidate.chunk.path] * facts.diversity_share
        diversified.append((candidate, score * signals.file_diversity ** damping))
        seen[candidate.chunk.path] += 1
    diversified.sort(key=lambda pair: -pair[1])
    return diversified


def _lift_callees(scored: list[tuple[Candidate, float]], calls: Collection[tuple[str, str]],
                  factor: float) -> list[tuple[Candidate, float]]:
    """The ranking (best first) with the candidates below the first CALL_SEEDS that a seed calls lifted
    by `factor`, none above the last seed: the first hits stay first."""
    seeds = {candidate.entity.id for candidate, _ in scored[:CALL_SEEDS]}
    called = {callee for caller, callee in calls if caller in seeds}
    ceiling = scored[min(CALL_SEEDS, len(scored)) - 1][1]
    lifted = scored[:CALL_SEEDS] + [(c, min(ceiling, score * factor)) if c.entity.id in called else (c, score)
                                    for c, score in scored[CALL_SEEDS:]]
    lifted.sort(key=lambda pair: -pair[1])
    return lifted


def rerank(query: str, candidates: Sequence[Candidate], signals: RankingSignals,
           cross_encoder: CrossEncoder | None = None,
           calls: Collection[tuple[str, str]] = ()) -> tuple[list[tuple[Candidate, float]], str | None]:
    """Rerank with the cross-encoder when one is configured, else (or on any error) by signals.

    :return: the ranking and the provider error that forced the fallback, if any.
    """
    if cross_encoder is not None and candidates:
        try:
            scores = cross_encoder.rerank(query, [c.chunk.text for c in candidates])
            if len(scores) != len(candidates):
                raise ValueError(f"reranker returned {len(scores)} scores for {len(candidates)} documents")
            ranked = sorted(zip(candidates, scores, strict=True), key=lambda pair: -pair[1])
            return [(c, float(s)) for c, s in ranked], None
        except Exception as err:  # spec: any provider error degrades to signal scoring
            return score_signals(query, candidates, signals, calls=calls), f"reranker failed: {err}"
    return score_signals(query, candidates, signals, calls=calls), None
