"""Signal scoring: each spec boost exactly, and each code-aware signal on a table of cases."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from knowcode.models import Chunk, Entity, EntityKind
from knowcode.retrieval import reranker
from knowcode.retrieval.reranker import (
    CALL_SEEDS,
    DEFAULT_TOP_K_MULTIPLIER,
    MENTION_NAMESAKES,
    QUESTION_TOKENS,
    RECENT_SECONDS,
    SHORT_QUERY_WORDS,
    Candidate,
    RankingSignals,
    is_symbol_query,
    line_links,
    mentioned_symbols,
    reads_calls,
    reads_tokens,
    rerank,
    score_signals,
    traceback_frames,
    wants_code_only,
)

NOW = 1_000_000_000.0
OLD = NOW - 30 * 24 * 3600
NEUTRAL = RankingSignals(**{name: 1.0 for name in RankingSignals.__dataclass_fields__})


def _candidate(path: str = "src/pkg/engine.py", name: str = "run", kind: EntityKind = EntityKind.FUNCTION,
               text: str = "def run():\n    pass", docstring: str = "", mtime: float = OLD,
               score: float = 1.0, parent: str | None = "m", qualified: str = "",
               language: str = "python", tokens: str = "") -> Candidate:
    entity = Entity(f"{path}:{name}", path, kind, name, qualified or f"pkg.{name}", parent, 1, 2, "",
                    docstring, language)
    chunk = Chunk(f"c:{path}:{name}", path, entity.id, 1, 2, text, text, tokens)
    return Candidate(chunk, entity, score, mtime)


def _factor(query: str, candidate: Candidate, **signals: float) -> float:
    [(_, score)] = score_signals(query, [candidate], replace(NEUTRAL, **signals), now=NOW)
    return score / candidate.score


def test_spec_defaults() -> None:
    defaults = RankingSignals()
    assert (defaults.docstring, defaults.recent, defaults.substring, defaults.kind) == (1.2, 1.1, 1.5, 2.0)
    assert DEFAULT_TOP_K_MULTIPLIER == 5
    assert RECENT_SECONDS == 7 * 24 * 3600


@pytest.mark.parametrize(("signal", "query", "candidate", "expected"), [
    ("docstring", "zzz", _candidate(docstring="Runs it."), 1.2),
    ("docstring", "zzz", _candidate(docstring=""), 1.0),
    ("recent", "zzz", _candidate(mtime=NOW - 3600), 1.1),
    ("recent", "zzz", _candidate(mtime=NOW - RECENT_SECONDS - 1), 1.0),
    ("substring", "DEF RUN", _candidate(), 1.5),
    ("substring", "def walk", _candidate(), 1.0),
    ("kind", "function", _candidate(), 2.0),
    ("kind", "Function ", _candidate(), 2.0),
    ("kind", "class", _candidate(), 1.0),
])
def test_spec_boosts(signal: str, query: str, candidate: Candidate, expected: float) -> None:
    assert _factor(query, candidate, **{signal: RankingSignals().__getattribute__(signal)}) == pytest.approx(
        expected)


@pytest.mark.parametrize(("query", "candidate", "expected"), [
    ("run", _candidate(), 3.0),  # symbol query names the entity
    ("engine.run", _candidate(qualified="pkg.engine.run"), 3.0 * 1.5),  # ... and a dotted part the file
    ("Engine.run", _candidate(qualified="pkg.Engine.run"), 3.0 * 1.5),
    ("Other.run", _candidate(qualified="pkg.Engine.run"), 3.0 ** 0.5),  # another owner's `run`: half
    ("engine", _candidate(name="engine"), 3.0 * 1.5),
    ("walk", _candidate(), 1.0),
])
def test_definition_boost(query: str, candidate: Candidate, expected: float) -> None:
    assert _factor(query, candidate, definition=3.0, definition_path=1.5) == pytest.approx(expected)



MENTION_QUESTION = ("Why does calling engine.run twice with different worker pools leave stale jobs queued "
                    "in the scheduler backend?")
MENTION_REPORT = MENTION_QUESTION + " " + " ".join(f"logline{i}" for i in range(20))


@pytest.mark.parametrize(("query", "expected"), [
    ("engine.run retries", 2.0),  # a short query naming code wants its definition
    (MENTION_REPORT, 2.0),  # so does a report: the code it names is where it failed
    (MENTION_QUESTION + "\n>>> engine.run(pool)", 2.0),  # a short report: a title over what it pasted
    (MENTION_QUESTION, 1.0),  # a long question asks how it behaves, which its definition rarely is all of
])
def test_named_code_s_definition_counts_in_short_queries_and_reports(query: str, expected: float) -> None:
    candidate = _candidate(qualified="pkg.engine.run")
    assert _factor(query, candidate, mention=2.0) == pytest.approx(expected)


def _definition(qualified: str, path: str = "pkg/core.py", line: int = 1,
                kind: EntityKind = EntityKind.FUNCTION) -> Candidate:
    """A candidate defining `qualified` at `line`, with an id of its own."""
    name = qualified.rsplit(".", 1)[-1]
    entity = Entity(f"{path}:{qualified}:{line}", path, kind, name, qualified, "m", line, line + 2, "", "",
                    "python")
    chunk = Chunk(f"c:{entity.id}", path, entity.id, line, line + 2, f"def {name}():", f"def {name}():", "")
    return Candidate(chunk, entity, 1.0, OLD)


def _mention_factors(query: str, candidates: list[Candidate]) -> list[float]:
    scored = score_signals(query, candidates, replace(NEUTRAL, mention=2.0), now=NOW)
    return [score / candidate.score for candidate, score in scored]


MATRIX_REPORT = MENTION_REPORT + "\n>>> X = MatrixSymbol('X', 2, 2)"


def test_a_name_defined_many_times_shares_its_mention() -> None:
    # sympy's report constructs `MatrixSymbol(...)`; four handler methods share the class's name
    handlers = [_definition(f"pkg.{owner}.MatrixSymbol", "pkg/handlers.py", kind=EntityKind.METHOD)
                for owner in ("Ask", "Tell", "Show", "Hide")]
    named = [*handlers, _definition("pkg.MatrixSymbol", "pkg/matrices.py", kind=EntityKind.CLASS)]
    assert _mention_factors(MATRIX_REPORT, named) == pytest.approx([2.0 ** (MENTION_NAMESAKES / 5)] * 5)
    # up to MENTION_NAMESAKES definitions keep the whole boost
    assert _mention_factors(MATRIX_REPORT, named[:MENTION_NAMESAKES]) == [2.0] * MENTION_NAMESAKES


def test_overloads_of_a_function_are_one_definition() -> None:
    overloads = [_definition("pkg.polyval", line=line) for line in (10, 20, 30, 40, 50)]
    assert _mention_factors(MENTION_REPORT + "\n>>> polyval(coord, coeffs)", overloads) == [2.0] * 5


@pytest.mark.parametrize(("path", "expected"), [
    ("tests/test_engine.py", 0.5), ("pkg/test_engine.py", 0.5), ("pkg/engine_test.go", 0.5),
    ("src/app.spec.ts", 0.5), ("examples/demo.py", 0.5), ("docs/conf.py", 0.5), ("pkg/_compat.py", 0.5),
    ("types/index.d.ts", 0.5), ("src/pkg/engine.py", 1.0), ("src/contest.py", 1.0), ("latest/x.py", 1.0),
    ("Tests/RetryPolicyTests.swift", 0.5), ("Samples/App.cs", 0.5), ("AppTests/Fixture.swift", 0.5),
    ("src/test/java/CircleTest.java", 0.5), ("lib/CircleTests.kt", 0.5), ("Sources/Contest.swift", 1.0),
    ("Sources/Tests.swift", 1.0),
    ("internal/testdata/x.go", 0.5), ("benches/parse.rs", 0.5), ("src/__mocks__/fs.js", 0.5),
    ("e2e-tests/app.py", 0.5), ("src/Button.stories.tsx", 0.5), ("lib/user_spec.rb", 0.5),
    ("test-utils/render.tsx", 0.5), ("bench/run.py", 0.5), ("lib/mock.py", 1.0), ("src/stories.py", 1.0),
    ("src/benchmark.py", 1.0),
    ("lib/pkg/axes.pyi", 0.5), ("pip/_vendor/rich/x.py", 0.5), ("vendor/github.com/a/b.go", 0.5),
    ("third_party/zlib/inflate.c", 0.5), ("src/ThirdParty/x.cpp", 0.5), ("extern/agg/agg.h", 0.5),
    ("sympy/external/importtools.py", 1.0), ("src/vendors.py", 1.0), ("lib/pkg/axes.py", 1.0),
])
def test_path_penalty(path: str, expected: float) -> None:
    assert _factor("zzz", _candidate(path=path), path_penalty=0.5) == pytest.approx(expected)


def test_reexport_penalty_only_hits_module_level_chunks_of_init_files() -> None:
    assert _factor("zzz", _candidate(path="pkg/__init__.py", parent=None), reexport_penalty=0.6) == 0.6
    assert _factor("zzz", _candidate(path="pkg/__init__.py"), reexport_penalty=0.6) == 1.0


def test_word_query_matching_file_and_folder_names() -> None:
    candidate = _candidate(path="src/router/dispatch.py", name="route_request")
    assert _factor("how does the router dispatch", candidate, file_name=1.25) == pytest.approx(1.25 ** 2)


@pytest.mark.parametrize(("query", "path", "expected"), [
    ("how does the test client simulate requests", "starlette/testclient.py", 1.25),
    ("generating model cards", "pkg/modelcards/modelcards.py", 1.25),  # file and folder: one word
    ("Auto-reloader should pass -X options", "django/utils/autoreload.py", 1.25),
    ("URL parsing and construction", "httpx/_urlparse.py", 1.25),
    ("test client", "pkg/clienttest.py", 1.0),  # joined in the order written
    ("the test, client", "starlette/testclient.py", 1.0),  # not written as a pair
    ("tell me an answer", "pkg/mean.py", 1.0),  # stop words join nothing
    ("Test client crashes\nIt fails in site-packages.", "starlette/testclient.py", 1.0),  # a report's
    # hyphens join paths and code, so a report joins no words
])
def test_words_written_apart_name_a_file_written_as_one(query: str, path: str, expected: float) -> None:
    assert _factor(query, _candidate(path=path, name="zzz"), file_name=1.25) == pytest.approx(expected)


def test_file_names_count_less_in_long_questions() -> None:
    candidate = _candidate(path="src/router/dispatch.py")
    words = "router dispatch alpha beta gamma delta epsilon zeta eta theta iota kappa"  # 12 tokens
    assert _factor(words, candidate, file_name=1.25) == pytest.approx(1.25 ** (2 * SHORT_QUERY_WORDS / 12))


@pytest.mark.parametrize(("query", "text", "expected"), [
    ("it fails with 'no secret key was set' here", "raise RuntimeError('no secret key was set')", 2.0),
    ('raises "the session is unavailable because no key"', "msg = 'The session is unavailable because ' + x",
     2.0),  # a 4-word window of a long message is enough: the code builds it from parts
    ("it fails with 'no secret key' here", "raise RuntimeError('missing key')", 1.0),
    ("it fails with no secret key here", "raise RuntimeError('no secret key')", 1.0),  # not quoted
    ("the 'order' field breaks", "order = 1", 1.0),  # one quoted word is no message
    ("don't know why it's slow to load", "don't know why it's slow", 1.0),  # apostrophes open no quote
])
def test_quoted_phrases_found_in_the_chunk(query: str, text: str, expected: float) -> None:
    assert _factor(query, _candidate(text=text), phrase=2.0) == pytest.approx(expected)


@pytest.mark.parametrize(("query", "language", "expected"), [
    ("how are retries configured", "markdown", 0.5), ("how are retries configured", "rst", 0.5),
    ("how are retries configured", "ini", 0.5), ("how are retries configured", "python", 1.0),
    ("where do the docs explain retries", "markdown", 1.0), ("retry documentation", "rst", 1.0),
    ("docs " + " ".join(f"word{i}" for i in range(30)), "rst", 0.5),  # a long report mentioning docs
])
def test_prose_penalty_unless_the_query_is_about_docs(query: str, language: str, expected: float) -> None:
    candidate = _candidate(path="README.md", language=language)
    assert _factor(query, candidate, prose_penalty=0.5) == pytest.approx(expected)


def test_file_diversity_and_coherence() -> None:
    first = _candidate(name="a", score=1.0)
    second = _candidate(name="b", score=0.9)
    other = _candidate(path="x/other.py", name="c", score=0.8)
    ranked = score_signals("zzz", [first, second, other], replace(NEUTRAL, file_diversity=0.5), now=NOW)
    assert [(c.entity.name, s) for c, s in ranked] == [("a", 1.0), ("c", 0.8), ("b", 0.45)]
    ranked = score_signals("zzz", [first, other], replace(NEUTRAL, file_coherence=1.1), now=NOW)
    assert [s for _, s in ranked] == [1.0, 0.8]
    ranked = score_signals("zzz", [first, second], replace(NEUTRAL, file_coherence=1.1), now=NOW)
    assert [s for _, s in ranked] == pytest.approx([1.1, 0.99])


@pytest.mark.parametrize(("question", "damping"), [
    ("alpha beta gamma delta", 1.0),  # a short query: full diversity
    ("alpha beta gamma delta epsilon zeta eta theta", 1.0),  # 8 tokens: still full
    ("alpha beta gamma delta epsilon zeta eta theta iota kappa", 0.5),  # 10: half way
    ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu", 0.0),  # 12: none
    ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron", 0.0),
])
def test_file_diversity_fades_out_in_long_questions(question: str, damping: float) -> None:
    first, second = _candidate(name="a", score=1.0), _candidate(name="b", score=0.9)
    ranked = score_signals(question, [first, second], replace(NEUTRAL, file_diversity=0.5), now=NOW)
    assert [s for _, s in ranked] == pytest.approx([1.0, 0.9 * 0.5 ** damping])


LONG = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"  # 12 tokens: a long question
SHORT = "alpha beta gamma"
REPORT = LONG + " " + " ".join(f"word{n}" for n in range(QUESTION_TOKENS))  # more tokens than a question


def test_coverage_rewards_the_chunk_holding_more_of_a_long_question() -> None:
    # Two candidates hold "alpha" (weight ln(1 + 3/3)), one also "beta" (ln(1 + 3/2)); "gamma" ... "mu"
    # are held by none (ln(1 + 3/1) each): the total is ln 2 + ln 2.5 + 10 ln 4.
    both = _candidate(name="both", score=1.0, tokens="alpha beta other")
    one = _candidate(path="x.py", name="one", score=1.0, tokens="alpha other")
    none = _candidate(path="y.py", name="none", score=1.0, tokens="other")
    total = math.log(2) + math.log(2.5) + 10 * math.log(4)
    ranked = score_signals(LONG, [none, one, both], replace(NEUTRAL, coverage=3.0), now=NOW)
    assert [(c.entity.name, s) for c, s in ranked] == [
        ("both", pytest.approx(3.0 ** ((math.log(2) + math.log(2.5)) / total))),
        ("one", pytest.approx(3.0 ** (math.log(2) / total))), ("none", 1.0)]
    short = score_signals(SHORT, [none, one, both], replace(NEUTRAL, coverage=3.0), now=NOW)
    assert [s for _, s in short] == [1.0, 1.0, 1.0]


def test_a_long_question_lifts_what_its_first_hits_call_up_to_the_last_seed() -> None:
    seeds = [_candidate(path=f"s{n}.py", name=f"seed{n}", score=1.0 - n / 10) for n in range(CALL_SEEDS)]
    last = seeds[-1].score
    callee = _candidate(path="a.py", name="callee", score=0.3)
    caller = _candidate(path="b.py", name="caller", score=0.2)
    other = _candidate(path="c.py", name="other", score=0.25)
    near = _candidate(path="d.py", name="near", score=0.7 * last)  # lifted, but not above the seeds
    calls = [(seeds[0].entity.id, callee.entity.id), (caller.entity.id, seeds[1].entity.id),
             (seeds[2].entity.id, near.entity.id), (other.entity.id, callee.entity.id)]
    signals = replace(NEUTRAL, callee=2.0)
    candidates = [*seeds, callee, caller, other, near]
    ranked = score_signals(LONG, candidates, signals, now=NOW, calls=calls)
    assert [(c.entity.name, s) for c, s in ranked] == [
        *((c.entity.name, c.score) for c in seeds), ("near", last), ("callee", pytest.approx(0.6)),
        ("other", 0.25), ("caller", 0.2)]
    assert reads_calls(LONG, signals) and not reads_calls(LONG, NEUTRAL)
    for query in (SHORT, "Engine.run"):  # short queries and symbols are answered by their own words
        assert not reads_calls(query, signals)
        assert [c for c, _ in score_signals(query, candidates, signals, now=NOW, calls=calls)] == [
            *seeds, near, callee, other, caller]


@pytest.mark.parametrize("query", [SHORT, "Engine.run", "how are http cookies parsed", LONG, REPORT,
                                   " ".join(f"word{n}" for n in range(9))])
def test_the_tokens_are_read_exactly_when_reads_tokens_says(query: str) -> None:
    # the orchestrator leaves a candidate's tokens empty when reads_tokens is false: ranking must not move
    held = [_candidate(name="a", tokens="alpha beta word1 word2"),
            _candidate(path="x.py", name="b", tokens="gamma"),
            _candidate(path="y.py", name="c", tokens="alpha word3 word4 word5")]
    blank = [replace(c, chunk=replace(c.chunk, tokens="")) for c in held]
    with_tokens = [(c.entity.name, s) for c, s in score_signals(query, held, RankingSignals(), now=NOW)]
    without = [(c.entity.name, s) for c, s in score_signals(query, blank, RankingSignals(), now=NOW)]
    assert (with_tokens != without) is reads_tokens(query)


@pytest.mark.parametrize(("query", "expected"), [
    (LONG, True), (SHORT, False), (LONG + " docs", False), ("Engine.run", False),
])
def test_long_code_questions_want_code_only(query: str, expected: bool) -> None:
    assert wants_code_only(query) is expected


@pytest.mark.parametrize(("query", "kind", "expected"), [
    (LONG, EntityKind.CLASS, 0.7), (LONG, EntityKind.MODULE, 0.7), (LONG, EntityKind.METHOD, 1.0),
    (LONG, EntityKind.FUNCTION, 1.0), (SHORT, EntityKind.CLASS, 1.0), ("Engine", EntityKind.CLASS, 1.0),
    (REPORT, EntityKind.CLASS, 1.0),  # a report's fix may go into a class or a module just as well
])
def test_long_questions_prefer_functions_and_methods(query: str, kind: EntityKind, expected: float) -> None:
    assert _factor(query, _candidate(kind=kind), non_callable=0.7) == pytest.approx(expected)


@pytest.mark.parametrize(("query", "expected"), [
    ("Flask", True), ("app.run", True), ("Foo::bar", True), ("run()", True), ("$store", True),
    ("how does it run", False), ("", False), ("a-b", False),
])
def test_symbol_queries(query: str, expected: bool) -> None:
    assert is_symbol_query(query) is expected


class _Encoder:
    def __init__(self, scores: list[float] | None) -> None:
        self.scores = scores

    def rerank(self, query: str, documents: object) -> list[float]:
        if self.scores is None:
            raise ConnectionError("provider down")
        return self.scores


def test_cross_encoder_order_and_fallback_on_error() -> None:
    a, b = _candidate(name="a", score=1.0), _candidate(path="y.py", name="b", score=0.5)
    ranked, error = rerank("q", [a, b], NEUTRAL, _Encoder([0.1, 0.9]))
    assert [c.entity.name for c, _ in ranked] == ["b", "a"] and error is None
    ranked, error = rerank("q", [a, b], NEUTRAL, _Encoder(None))
    assert [c.entity.name for c, _ in ranked] == ["a", "b"]
    assert error == "reranker failed: provider down"
    ranked, error = rerank("q", [a, b], NEUTRAL, _Encoder([1.0]))
    assert error is not None and "1 scores for 2" in error


@pytest.mark.parametrize(("query", "path", "expected"), [
    ('File "/usr/lib/site-packages/pkg/core/engine.py", line 3, in run', "pkg/core/engine.py", 2.0),
    ("the bug is in core/engine.py somewhere", "pkg/core/engine.py", 2.0),
    ("see engine.py", "pkg/core/engine.py", 2.0),
    ("see ./pkg/core/engine.py", "pkg/core/engine.py", 2.0),
    ("see other/engine.py", "pkg/core/engine.py", 1.0),
    ("version 1.2.3 of engine", "pkg/core/engine.py", 1.0),
    ("C:\\envs\\lib\\site-packages\\pkg\\core\\engine.py in run(self)", "pkg/core/engine.py", 2.0),
    ("C:\\envs\\lib\\site-packages\\pkg\\core\\engine.py in run(self)", "pkg/other/engine.py", 1.0),
])
def test_a_path_the_query_names(query: str, path: str, expected: float) -> None:
    assert _factor(query, _candidate(path=path), path_mention=2.0) == pytest.approx(expected)


@pytest.mark.parametrize(("query", "path", "name", "expected"), [
    ('Traceback:\n  File "/srv/site-packages/pkg/core/engine.py", line 3, in run\n    boom()',
     "pkg/core/engine.py", "run", 2.0),
    ("TypeError: x\n    at Engine.run (/app/src/pkg/engine.js:12:5)", "src/pkg/engine.js", "run", 2.0),
    ("java.lang.NullPointerException\n\tat com.acme.Engine.run(Engine.java:42)", "src/com/acme/Engine.java",
     "run", 2.0),
    ("src/pkg/core/engine.py:88: in run\n    return self.step()\nE   KeyError: 'x'",  # pytest
     "pkg/core/engine.py", "run", 2.0),
    ("----> 1 print(q)\n/srv/site-packages/pkg/core/engine.py in run(self, sql)\n    85 else:",  # IPython 7
     "pkg/core/engine.py", "run", 2.0),
    ("File ~/envs/site-packages/pkg/core/engine.py:340, in Engine.run(self, obj)",  # IPython 8
     "pkg/core/engine.py", "run", 2.0),
    ("C:\\envs\\site-packages\\pkg\\core\\engine.py in run(self)", "pkg/core/engine.py", "run", 2.0),
    ("   at Acme.Core.Engine.Run(String x) in C:\\src\\Acme\\Core\\Engine.cs:line 42",  # .NET
     "src/Acme/Core/Engine.cs", "Run", 2.0),
    ("/app/lib/acme/engine.rb:12:in `valid?'", "lib/acme/engine.rb", "valid?", 2.0),  # Ruby
    ("/app/lib/acme/engine.rb:12:in 'Acme::Engine#run'", "lib/acme/engine.rb", "run", 2.0),  # Ruby 3.4
    ("goroutine 1 [running]:\nacme/engine.(*Engine).Run(0xc000010000)\n"
     "\t/home/u/acme/engine/engine.go:42 +0x1d", "engine/engine.go", "Run", 2.0),  # Go
    ("   4: acme::engine::run::h0123456789abcdef\n             at ./src/engine.rs:9:5",
     "src/engine.rs", "run", 2.0),  # Rust
    ("#0 /var/www/src/Engine.php(12): Acme\\Engine->run()", "src/Engine.php", "run", 2.0),  # PHP
    ("    (acme 0.1.0) lib/acme/engine.ex:12: Acme.Engine.run/2", "lib/acme/engine.ex", "run", 2.0),  # Elixir
    ("#1  0x0000555555555189 in acme::Engine::run (this=0x0) at src/engine.cc:12",
     "src/engine.cc", "run", 2.0),  # gdb
    ("#1 /var/www/src/Engine.php(12): Acme\\Engine->stop()", "src/Engine.php", "run", 1.0),  # another one
    ('File "/srv/pkg/core/engine.py", line 3, in stop', "pkg/core/engine.py", "run", 1.0),  # another function
    ("the engine.py in run(self) is slow", "pkg/core/engine.py", "run", 1.0),  # prose, not a frame
    ('File "/srv/pkg/other.py", line 3, in run', "pkg/core/engine.py", "run", 1.0),  # another file
])
def test_a_traceback_frame_names_its_function(query: str, path: str, name: str, expected: float) -> None:
    assert _factor(query, _candidate(path=path, name=name), frame=2.0) == pytest.approx(expected)


@pytest.mark.parametrize(("query", "links"), [
    ("Composed queries break (see compiler.py#L428-L433).", [("compiler.py", 428)]),  # GitHub
    ("https://github.com/o/r/blob/abc/src/engine.py#L12", [("github.com/o/r/blob/abc/src/engine.py", 12)]),
    ("gitlab: src/pkg/engine.py#L12-20", [("src/pkg/engine.py", 12)]),
    ("supervised.py:859: RuntimeWarning: overflow encountered", [("supervised.py", 859)]),  # a warning
    ("the check in ./src/app.py:120 is wrong", [("src/app.py", 120)]),
    ("File ~/envs/pkg/engine.py:340, in Engine.run(self, obj)", []),  # a frame names it, with its function
    ("at Engine.run (/app/src/pkg/engine.js:12:5)", []),
    ("src/pkg/engine.py:88: in run", []),  # pytest's frame
    ("see http://localhost:8000 and 127.0.0.1:8000 at 12:30", []),
])
def test_a_line_the_query_links_to(query: str, links: list[tuple[str, int]]) -> None:
    assert [(link.path, link.line) for link in line_links(query)] == links


@pytest.mark.parametrize(("query", "kind", "expected"), [
    ("see engine.py#L12", EntityKind.FUNCTION, 2.0),
    ("see pkg/core/engine.py:12", EntityKind.METHOD, 2.0),
    ("see engine.py#L21", EntityKind.FUNCTION, 1.0),  # another function of the file
    ("see other.py#L12", EntityKind.FUNCTION, 1.0),  # another file
    ("see engine.py#L12", EntityKind.CLASS, 1.0),  # the class around it: the innermost is meant
])
def test_a_line_link_lifts_the_function_holding_its_line(query: str, kind: EntityKind,
                                                         expected: float) -> None:
    candidate = _candidate(path="pkg/core/engine.py", kind=kind)
    candidate = replace(candidate, entity=replace(candidate.entity, start_line=10, end_line=20))
    assert _factor(query, candidate, line_link=2.0) == pytest.approx(expected)


# The path and frame patterns as first written, which tried a match at every character of a run and
# scanned the rest of it each time (a 20,000-digit or dotted run in a report took seconds); the anchored
# patterns must find exactly what these find.
_UNANCHORED = {
    "path": re.compile(r"(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,4}\b|\b[\w-]+\.(?:py|rb|go|rs|ex)\b"),
    "ruby": re.compile(r"(?P<path>[^\s:'\"`]+\.rb):(?P<line>\d+):in [`'](?:[\w:]+[#.])?(?P<name>[\w?!=]+)'"),
    "go": re.compile(r"(?:[\w./-]+\.)?(?:\(\*?\w+\)\.)?(?P<name>\w+)\([^()\n]*\)\n[ \t]+(?P<path>[^\s:]+\.go)"
                     r":(?P<line>\d+)"),
    "rust": re.compile(r"\d+: (?:[\w<>{} ]+::)*?(?P<name>\w+)(?:::h[0-9a-f]{16})?"
                       r"\n[ \t]+at (?P<path>[^\s:]+\.rs):(?P<line>\d+)"),
    "elixir": re.compile(r"(?P<path>[\w./-]+\.exs?):(?P<line>\d+): (?:[\w.]+\.)?(?P<name>[\w?!]+)/\d+"),
}
_PIECES = st.lists(st.sampled_from(["a", "x1", "9", "12", ".", "/", "-", "_", ".py", ".rb", ".go", ".rs",
                                     ".ex", ":", ": ", ":in `", "'", " ", "\n", "\n\t", "(", ")", "(*T)",
                                     "::", " at "]), max_size=20).map("".join)
# Real frames, glued to random text on either side.
_FRAME_TEXTS = st.sampled_from(["/app/lib/acme/engine.rb:12:in `run'",
                                "acme/e.(*E).Run(0xc0)\n\t/u/e.go:42 +0x1d",
                                "4: acme::engine::run\n    at ./src/engine.rs:9:5",
                                "lib/acme/e.ex:7: Acme.E.run/2"])


def _frame_pattern(ending: str) -> re.Pattern[str]:
    return next(p for p in reranker._FRAMES if ending in p.pattern)


@given(st.tuples(_PIECES, _FRAME_TEXTS | st.just(""), _PIECES).map("".join))
def test_anchored_path_and_frame_patterns_find_what_the_unanchored_ones_found(text: str) -> None:
    text = re.sub("/+", "/", text)  # a run of slashes: the anchored path starts before it, not after it
    text = re.sub(r"(\.(?:py|rb|go|rs|ex))-", r"\1 ", text)  # `b.rb` glued to `a.py-` is read no longer
    endings = (".py", ".rb", ".go", ".rs", ".ex")

    def names(found: list[str]) -> set[str]:  # each once, as the query reads them; `-.py` names nothing
        return {path for path in (reranker._LEADING_ROOT.sub("", m) for m in found)
                if path.endswith(endings) and not path.startswith(".")}

    assert names(reranker._PATH_WORD.findall(text)) == names(_UNANCHORED["path"].findall(text))
    for name, ending in (("ruby", r"\.rb)"), ("go", r"\.go)"), ("rust", r"\.rs)"), ("elixir", r"\.exs?)")):
        anchored = [m.groupdict() for m in _frame_pattern(ending).finditer(text)]
        assert anchored == [m.groupdict() for m in _UNANCHORED[name].finditer(text)], name


@pytest.mark.parametrize(("query", "line"), [
    ('File "/srv/pkg/engine.py", line 3, in run', 3),
    ("pkg/engine.py:3: in run", 3),
    ("at Engine.run (/app/src/pkg/engine.js:12:5)", 12),
    ("\tat com.acme.Engine.run(Engine.java:42)", 42),
    ("/srv/pkg/engine.py in run(self, sql)", None),  # IPython 7 prints no line on the frame
    ("File ~/envs/pkg/engine.py:340, in Engine.run(self, obj)", 340),
    ("   at Acme.Engine.Run(String x) in C:/src/Acme/Engine.cs:line 42", 42),
    ("/app/lib/acme/engine.rb:12:in `run'", 12),
    ("acme/engine.(*Engine).Run(0xc000010000)\n\t/home/u/acme/engine.go:42 +0x1d", 42),
    ("   4: acme::engine::run\n             at ./src/engine.rs:9:5", 9),
    ("#0 /var/www/src/Engine.php(12): Acme\\Engine->run()", 12),
    ("    (acme 0.1.0) lib/acme/engine.ex:7: Acme.Engine.run/2", 7),
    ("#1  0x0000555555555189 in acme::Engine::run (this=0x0) at src/engine.cc:12", 12),
])
def test_a_traceback_frame_keeps_its_line(query: str, line: int | None) -> None:
    [frame] = traceback_frames(query)
    assert (frame.name.lower(), frame.line) == ("run", line)


@pytest.mark.parametrize(("query", "named"), [
    ("Lag() with DecimalField crashes", ["DecimalField", "Lag"]),  # called
    ("why does `jsonify` drop keys?", ["jsonify"]),  # in backquotes
    ("from pkg.models import (Window, F as Frame)\nimport os", ["pkg.models", "Window", "F", "os"]),
    ("import { Window, Lag as L } from './window'", ["Window", "Lag"]),
    ("if (ready) { super().run(x); print(x) }", []),  # keywords and builtins of syntax
    # a bare call of a built-in names the language's function, not the repository's `Storage.open`;
    # dotted or in backquotes the name counts
    ("with open(path) as f: list(f); require('x')", []),
    ("Storage.open() differs from `open`", ["Storage.open", "open"]),
    ("the __repr__() output and `__init__`", []),  # a protocol every class defines names none
    ("a function (see below) and some words", []),  # prose: a space before the parenthesis
])
def test_a_plain_word_written_as_code_is_a_mention(query: str, named: list[str]) -> None:
    assert list(mentioned_symbols(query)) == named
