"""Retrieval routing (spec "Retrieval routing"): exact, hybrid and lexical modes, de-duplication,
dependency expansion and the per-entity token budget, on real tiny repositories."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import knowcode
from knowcode.engine import KnowCode
from knowcode.indexing.indexer import CONTENT_GENERATION_KEY
from knowcode.models import EntityKind, RetrievalMode, SearchHit
from knowcode.retrieval.embeddings import EmbeddingProvider, StaticEmbeddingProvider, Vectors
from knowcode.retrieval.orchestrator import (
    LINKED_FILES_MAX,
    MAX_LIMIT,
    NO_KEYWORD_MATCH,
    PER_ENTITY_TOKEN_CAP,
    RetrievalOrchestrator,
    RetrievalResult,
    per_entity_token_budget,
    validate_query,
)
from knowcode.retrieval.relevance_feedback import DEFAULT_FEEDBACK_WEIGHT
from knowcode.retrieval.reranker import CrossEncoder, RankingSignals
from knowcode.retrieval.search_index import load_search_index
from knowcode.storage import Store
from tests.conftest import SAMPLE_REPO, write_tree

NO_MATCH = "nothing matched"


class FailingEmbedder:
    """A dense provider that looks like the static one but fails on every call."""

    provider = "static"
    model = "failing-model"
    dimension = 256
    normalized = True

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        raise RuntimeError("embedding backend exploded")


class FailingCrossEncoder:
    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        raise ConnectionError("reranker offline")


def _indexed(tmp_path_factory: pytest.TempPathFactory, name: str,
             files: dict[str, str]) -> Iterator[KnowCode]:
    """Write files into a fresh folder, index them, yield the engine and close it afterwards."""
    base = tmp_path_factory.mktemp(name)
    engine = knowcode.open(write_tree(base / "repo", files), store=base / "store")
    engine.index()
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def sample_kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowCode]:
    """The shared sample repository, indexed once for the read-only tests of this module."""
    yield from _indexed(tmp_path_factory, "orchestrator", SAMPLE_REPO)


def _orchestrator(kc: KnowCode, embedder: EmbeddingProvider | None,
                  cross_encoder: CrossEncoder | None = None,
                  feedback: float = DEFAULT_FEEDBACK_WEIGHT,
                  signals: RankingSignals | None = None) -> Iterator[RetrievalOrchestrator]:
    store = Store.open(kc.store_dir, create=False)
    orchestrator = RetrievalOrchestrator(store, load_search_index(store, kc.store_dir), embedder,
                                         alpha=0.2, top_k_multiplier=5, signals=signals or RankingSignals(),
                                         cross_encoder=cross_encoder, feedback=feedback)
    try:
        yield orchestrator
    finally:
        orchestrator.close()
        store.close()


@pytest.fixture
def failing_dense(sample_kc: KnowCode) -> Iterator[RetrievalOrchestrator]:
    yield from _orchestrator(sample_kc, FailingEmbedder())


def _names(hits: Sequence[SearchHit]) -> list[str]:
    return [hit.qualified_name for hit in hits]


# --- per-entity token budget --------------------------------------------------------------------------


@pytest.mark.parametrize(("max_tokens", "limit", "expected"), [
    (6000, 3, 2000),
    (3000, 3, 1000),
    (10, 3, 3),
    (1, 5, 1),
    (0, 1, 1),
    (100000, 1, 2000),
    (6001, 3, 2000),
    (5999, 3, 1999),
    (2000, 1, 2000),
    (2001, 1, 2000),
    (1999, 1, 1999),
    (600, 3, 200),  # no 200-token floor (BL-29) ...
    (599, 3, 199),  # ... so below it the budget keeps shrinking
    (4, 5, 1),
    (0, 1000, 1),
])
def test_per_entity_token_budget(max_tokens: int, limit: int, expected: int) -> None:
    assert per_entity_token_budget(max_tokens, limit) == expected


def test_per_entity_token_budget_is_the_spec_formula_everywhere() -> None:
    assert PER_ENTITY_TOKEN_CAP == 2000
    for max_tokens in (0, 1, 2, 7, 199, 200, 1999, 2000, 2001, 6000, 60000, 10**7):
        for limit in (1, 2, 3, 7, 10, 1000):
            assert per_entity_token_budget(max_tokens, limit) == max(1, min(2000, max_tokens // limit))


def test_result_carries_the_budget(sample_kc: KnowCode) -> None:
    assert sample_kc.retrieve("helper", limit_entities=3, max_tokens=3000).per_entity_budget == 1000
    assert sample_kc.retrieve("helper", limit_entities=3).per_entity_budget == 2000  # 6000 // 3
    assert sample_kc.retrieve("helper", limit_entities=2, max_tokens=5).per_entity_budget == 2


# --- validation ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   ", "\t\n "])
def test_blank_query_is_rejected(query: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        validate_query(query, 3)


@pytest.mark.parametrize("limit", [0, -1, MAX_LIMIT + 1, 1001, 10**6])
def test_limit_out_of_range_is_rejected(limit: int) -> None:
    assert MAX_LIMIT == 1000
    with pytest.raises(ValueError, match=str(limit)):
        validate_query("helper", limit)


@pytest.mark.parametrize("limit", [1, MAX_LIMIT])
def test_limit_bounds_are_accepted(limit: int) -> None:
    validate_query("helper", limit)


@pytest.mark.parametrize(("query", "limit"), [("", 3), ("  ", 3), ("helper", 0), ("helper", 1001)])
def test_retrieve_validates_before_indexing(tmp_path: Path, sample_repo: Path, query: str,
                                            limit: int) -> None:
    kc = knowcode.open(sample_repo, store=tmp_path / "store")
    with pytest.raises(ValueError):
        kc.retrieve(query, limit_entities=limit)
    assert not (tmp_path / "store").exists()  # rejected before any work


@pytest.mark.parametrize(("query", "limit"), [("", 3), ("helper", 0), ("helper", 1001)])
def test_orchestrator_validates_too(failing_dense: RetrievalOrchestrator, query: str, limit: int) -> None:
    with pytest.raises(ValueError):
        failing_dense.retrieve(query, limit_entities=limit)


# --- routing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ['"helper"', "'helper'", "`helper`", '  "helper" '])
def test_quoted_query_goes_to_the_exact_engine(sample_kc: KnowCode, query: str) -> None:
    result = sample_kc.retrieve(query, limit_entities=5)
    assert result.mode is RetrievalMode.EXACT
    assert result.errors == ()
    assert result.hits
    assert {hit.source for hit in result.hits} == {"exact"}
    assert result.hits[0].qualified_name == "pkg.util.helper"
    assert result.hits[0].kind == "function"
    assert result.legs == {}  # neither leg ran


def test_exact_hits_are_ranked_by_position(sample_kc: KnowCode) -> None:
    hits = sample_kc.retrieve('"helper"', limit_entities=5).hits
    assert _names(hits) == ["pkg.util.helper", "pkg.core"]  # the definition, then the call site's chunk
    assert hits[0].score > hits[1].score > 0


def test_normal_query_is_hybrid_with_the_static_embedder(sample_kc: KnowCode) -> None:
    assert isinstance(sample_kc.embedder(), StaticEmbeddingProvider)
    result = sample_kc.retrieve("helper", limit_entities=3)
    assert result.mode is RetrievalMode.HYBRID
    assert result.errors == ()
    assert set(result.legs) == {"sparse", "dense"}
    assert result.legs["sparse"] > 0 and result.legs["dense"] > 0
    assert result.hits[0].qualified_name == "pkg.util.helper"
    assert result.hits[0].source == "hybrid"  # found by both legs
    assert {hit.source for hit in result.hits} <= {"hybrid", "sparse", "dense"}
    assert result.candidates >= len(result.hits)


def test_the_legs_on_one_thread_or_two_answer_alike(sample_kc: KnowCode) -> None:
    # the static model runs both legs on the caller's thread; a thread for the dense leg ranks the same
    store = Store.open(sample_kc.store_dir, create=False)
    index = load_search_index(store, sample_kc.store_dir)
    embedder = sample_kc.embedder()
    answers = []
    for parallel_legs in (None, True, False):
        orchestrator = RetrievalOrchestrator(store, index, embedder, alpha=0.2, top_k_multiplier=5,
                                             signals=RankingSignals(), parallel_legs=parallel_legs)
        assert (orchestrator.hybrid._pool is not None) is bool(parallel_legs)  # None: the static model's
        answers.append([orchestrator.retrieve(query, limit_entities=limit)
                        for query in ("helper", "core helper call", "pkg.util.helper") for limit in (1, 5)])
        orchestrator.close()
    store.close()
    assert answers[0] == answers[1] == answers[2]


def test_a_current_index_resolves_dense_ids_without_looking_them_up(
        sample_kc: KnowCode, monkeypatch: pytest.MonkeyPatch) -> None:
    orchestrator = sample_kc.orchestrator()
    looked_up: list[list[str]] = []
    real_lookup = orchestrator.store.existing_chunk_ids

    def spy(ids: Sequence[str]) -> set[str]:
        looked_up.append(list(ids))
        return real_lookup(ids)

    monkeypatch.setattr(orchestrator.store, "existing_chunk_ids", spy)
    current = orchestrator.retrieve("helper", limit_entities=3)
    assert looked_up == []
    # the store moved on (another process indexed): the ids are looked up again, with the same result
    generation = orchestrator.store.meta()[CONTENT_GENERATION_KEY]
    monkeypatch.setattr(orchestrator.store, "meta", lambda: {CONTENT_GENERATION_KEY: generation + "1"})
    looked_up_again = orchestrator.retrieve("helper", limit_entities=3)
    assert len(looked_up) == 1 and looked_up[0]
    assert looked_up_again.hits == current.hits


def test_hits_without_any_keyword_match_say_they_are_only_neighbours(sample_kc: KnowCode) -> None:
    result = sample_kc.retrieve("qwxz plorf zzyzx", limit_entities=3)
    assert result.mode is RetrievalMode.HYBRID and result.hits  # the dense leg always has neighbours
    assert result.legs["sparse"] == 0
    assert result.errors == (NO_KEYWORD_MATCH,)
    assert sample_kc.retrieve("helper", limit_entities=3).errors == ()


def test_failing_dense_leg_falls_back_to_keywords(failing_dense: RetrievalOrchestrator) -> None:
    result = failing_dense.retrieve("helper", limit_entities=3)
    assert result.mode is RetrievalMode.LEXICAL
    assert len(result.errors) == 1
    assert "embedding backend exploded" in result.errors[0]
    assert "semantic retrieval failed" in result.errors[0]
    assert result.hits  # never a silent empty result
    assert result.hits[0].qualified_name == "pkg.util.helper"
    assert {hit.source for hit in result.hits} == {"sparse"}
    assert set(result.legs) == {"sparse"}


def test_failing_dense_leg_uses_the_querys_keywords(failing_dense: RetrievalOrchestrator) -> None:
    result = failing_dense.retrieve("how does the slugify function work?", limit_entities=3)
    assert result.mode is RetrievalMode.LEXICAL
    assert any("def slugify" in hit.text for hit in result.hits)


def test_failing_dense_leg_does_not_affect_exact_queries(failing_dense: RetrievalOrchestrator) -> None:
    result = failing_dense.retrieve('"slugify"', limit_entities=3)
    assert result.mode is RetrievalMode.EXACT
    assert result.errors == ()
    assert result.hits[0].qualified_name == "pkg.util.slugify"


def test_monkeypatched_dense_failure_is_recorded(sample_kc: KnowCode,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(self: StaticEmbeddingProvider, texts: Sequence[str], *, query: bool = False) -> Vectors:
        raise OSError("model file vanished")

    sample_kc.close()  # a fresh orchestrator after the patch
    monkeypatch.setattr(StaticEmbeddingProvider, "embed", explode)
    try:
        result = sample_kc.retrieve("slugify", limit_entities=2)
    finally:
        sample_kc.close()
    assert result.mode is RetrievalMode.LEXICAL
    assert any("model file vanished" in error for error in result.errors)
    assert result.hits[0].qualified_name == "pkg.util.slugify"


def test_switched_off_vectors_are_lexical_without_error(sample_kc: KnowCode) -> None:
    for orchestrator in _orchestrator(sample_kc, None):
        result = orchestrator.retrieve("helper", limit_entities=2)
        assert result.mode is RetrievalMode.LEXICAL
        assert result.errors == ()
        assert result.hits[0].qualified_name == "pkg.util.helper"


def test_failing_reranker_degrades_to_signals(sample_kc: KnowCode) -> None:
    for orchestrator in _orchestrator(sample_kc, sample_kc.embedder(), cross_encoder=FailingCrossEncoder()):
        result = orchestrator.retrieve("helper", limit_entities=2)
        assert result.mode is RetrievalMode.HYBRID
        assert any("reranker failed" in error and "reranker offline" in error for error in result.errors)
        assert result.hits[0].qualified_name == "pkg.util.helper"


# --- nothing matched ----------------------------------------------------------------------------------


def _assert_explained_empty(result: RetrievalResult) -> None:
    assert result.hits == ()
    assert result.dependencies == ()
    assert any(NO_MATCH in error for error in result.errors)


def test_exact_query_matching_nothing_is_explained(sample_kc: KnowCode) -> None:
    result = sample_kc.retrieve('"no_such_symbol_anywhere"')
    assert result.mode is RetrievalMode.EXACT
    _assert_explained_empty(result)
    assert len(result.errors) == 1


def test_lexical_query_matching_nothing_is_explained(failing_dense: RetrievalOrchestrator) -> None:
    result = failing_dense.retrieve("zyzzyva quokka")
    assert result.mode is RetrievalMode.LEXICAL
    _assert_explained_empty(result)
    assert len(result.errors) == 2  # the dense failure and the empty result, both kept
    assert "embedding backend exploded" in result.errors[0]


def test_keyword_only_query_matching_nothing_is_explained(sample_kc: KnowCode) -> None:
    for orchestrator in _orchestrator(sample_kc, None):
        _assert_explained_empty(orchestrator.retrieve("zyzzyva quokka"))


@pytest.mark.parametrize("query", ['""', "''", '"   "'])
def test_empty_quoted_query_is_rejected(sample_kc: KnowCode, query: str) -> None:
    with pytest.raises(ValueError):
        sample_kc.retrieve(query)


# --- de-duplication -----------------------------------------------------------------------------------

# crunch() is ~120 lines, so it is cut into several chunks, all owned by crunch.
CRUNCH_PY = "def crunch(value):\n" + "".join(
    f"    value = frobnicate(value, {i})  # pass {i}\n" for i in range(120)) + "    return value\n"
DEDUP_REPO = {
    "crunch.py": CRUNCH_PY,
    "frob.py": "def frobnicate(value, step):\n    return value + step\n",
    "other.py": "def describe():\n    return 'frobnicate adds a step'\n",
    "extra.py": "def frobnicate_twice(value):\n    return value * 2\n",
}


@pytest.fixture(scope="module")
def dedup_kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowCode]:
    yield from _indexed(tmp_path_factory, "dedup", DEDUP_REPO)


def test_large_entity_has_several_chunks(dedup_kc: KnowCode) -> None:
    store = dedup_kc.open_store()
    try:
        [crunch] = [e for e in store.entities_named_like("crunch", 5) if e.qualified_name == "crunch.crunch"]
        assert len(store.chunks_of_entities([crunch])) >= 3
    finally:
        store.close()


@pytest.mark.parametrize("query", ["frobnicate", '"frobnicate"', "crunch frobnicate value"])
@pytest.mark.parametrize("limit", [1, 2, 3, 10])
def test_hits_are_unique_entities_up_to_the_limit(dedup_kc: KnowCode, query: str, limit: int) -> None:
    result = dedup_kc.retrieve(query, limit_entities=limit, expand_deps=False)
    ids = [hit.entity_id for hit in result.hits]
    assert len(ids) == len(set(ids))
    assert 1 <= len(ids) <= limit
    assert result.candidates >= len(ids)


def test_many_chunks_of_one_entity_collapse_to_one_hit(dedup_kc: KnowCode) -> None:
    result = dedup_kc.retrieve('"frobnicate"', limit_entities=10, expand_deps=False)
    assert result.candidates > len(result.hits)  # crunch's chunks were candidates, once each ...
    assert _names(result.hits).count("crunch.crunch") == 1  # ... and one hit
    assert _names(result.hits)[0] == "frob.frobnicate"  # the definition first


def test_limit_cuts_the_ranked_unique_list(dedup_kc: KnowCode) -> None:
    everything = _names(dedup_kc.retrieve('"frobnicate"', limit_entities=10, expand_deps=False).hits)
    assert len(everything) >= 3
    for limit in range(1, len(everything) + 1):
        cut = dedup_kc.retrieve('"frobnicate"', limit_entities=limit, expand_deps=False)
        assert _names(cut.hits) == everything[:limit]


# --- stable ranking and precise hits -----------------------------------------------------------------

# Sixty small files, each a few functions on one topic: more candidates than the first tier holds.
MANY_REPO = {f"mod{i}.py": "".join(
    f"def handle_{i}_{j}(request):\n    return parse_request(request, {j})\n\n\n" for j in range(3))
    for i in range(60)}
# Small helpers packed into one chunk (each under PACK_BELOW_CHARS), owned by their module.
PACKED_PY = ("def load_config(path):\n    return read(path)\n\n\n"
             "def save_config(path, data):\n    return write(path, data)\n\n\n"
             "def reset_cache():\n    cache.clear()\n")


@pytest.fixture(scope="module")
def many_kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowCode]:
    yield from _indexed(tmp_path_factory, "many", {**MANY_REPO, "helpers.py": PACKED_PY})


@pytest.mark.parametrize("query", ["handle the request", "parse_request", "how is a request handled"])
def test_the_first_hits_of_a_larger_limit_are_the_smaller_answer(many_kc: KnowCode, query: str) -> None:
    answers = {limit: many_kc.search(query, limit=limit) for limit in (1, 3, 10, 20, 50)}
    assert len(answers[50]) == 50
    for limit, hits in answers.items():
        assert [h.chunk_id for h in hits] == [h.chunk_id for h in answers[50][:limit]]


# A function declared by typing stubs (`@overload`), and another declared by stubs only (a .pyi's).
OVERLOAD_REPO = {
    "poly.py": ("from typing import overload\nimport typing\n\n\n"
                "@overload\ndef polyval(coord: int, coeffs: list) -> int: ...\n\n\n"
                "@typing.overload\ndef polyval(coord: str, coeffs: list) -> str: ...\n\n\n"
                "def polyval(coord, coeffs):\n    \"\"\"Evaluate a polynomial at coord.\"\"\"\n"
                + "".join(f"    coord = horner(coord, coeffs, {i})\n" for i in range(12))
                + "    return coord\n"),
    "stubs.pyi": ("from typing import overload\n\n\n@overload\ndef polyfit(x: int) -> int: ...\n\n\n"
                  "@overload\ndef polyfit(x: str) -> str: ...\n"),
    # TypeScript's overload signatures before the implementation, and an interface's signature
    "refine.ts": ("export class Schema {\n  superRefine(check: (v: string) => boolean): Schema;\n"
                  "  superRefine(check: (v: string) => void): Schema;\n"
                  "  superRefine(check: (v: string) => unknown): Schema {\n"
                  + "".join(f"    this.checks.push(check, {i});\n" for i in range(12))
                  + "    return this;\n  }\n}\n"
                  "export interface Refiner {\n  refineAll(check: unknown): Refiner;\n}\n"),
}


@pytest.mark.parametrize("query", ["polyval", "evaluate polyval coord coeffs"])
def test_overload_stubs_are_answered_by_their_implementation(tmp_path_factory: pytest.TempPathFactory,
                                                             query: str) -> None:
    for kc in _indexed(tmp_path_factory, "overloads", OVERLOAD_REPO):
        named = [(h.qualified_name, h.start_line) for h in kc.search(query, limit=10) if h.name == "polyval"]
        assert named == [("poly.polyval", 13)]
        # stubs with no implementation beside them stay hits
        assert [h.start_line for h in kc.search("polyfit", limit=10) if h.name == "polyfit"] == [4, 8]
        refine = [h.start_line for h in kc.search("superRefine check", limit=10) if h.name == "superRefine"]
        assert refine == [4]
        assert [h.start_line for h in kc.search("refineAll", limit=10) if h.name == "refineAll"] == [21]


# The words of a long bug report that its repository's issue template and changelog hold too.
PROSE_REPO = {
    "CHANGES.md": "".join(f"* Fixed: retry the upload when the server drops the connection ({i})\n"
                          for i in range(40)),
    ".github/bug_report.md": "Describe the bug. Steps to reproduce. Expected behaviour. Upload server "
                             "connection retry.\n",
    "upload.py": "def send_chunk(connection, data):\n    return connection.write(data)\n",
}
LONG_REPORT = ("Describe the bug: the upload stops when the server drops the connection; steps to reproduce: "
               "start an upload, kill the server; expected behaviour: retry the upload")


@pytest.fixture(scope="module")
def prose_kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowCode]:
    yield from _indexed(tmp_path_factory, "prose", PROSE_REPO)


@pytest.mark.parametrize(("query", "code_only"), [
    (LONG_REPORT, True),  # a long code question: prose is no candidate
    (LONG_REPORT + " (see the docs)", False),  # about docs: prose stays
    ("upload retry connection", False),  # short: prose stays, only penalised
])
def test_long_code_questions_leave_prose_out(prose_kc: KnowCode, query: str, code_only: bool) -> None:
    paths = {hit.path for hit in prose_kc.search(query, limit=10)}
    assert "upload.py" in paths
    assert (paths == {"upload.py"}) is code_only


def test_a_long_question_with_only_prose_to_answer_keeps_it(tmp_path_factory: pytest.TempPathFactory) -> None:
    for kc in _indexed(tmp_path_factory, "prose-only", {"CHANGES.md": PROSE_REPO["CHANGES.md"]}):
        assert {hit.path for hit in kc.search(LONG_REPORT, limit=3)} == {"CHANGES.md"}


# More prose chunks matching a long report than the legs' first tier holds, and code that matches less.
PROSE_HEAVY_REPO = {
    **{f"notes/note{i}.md": f"# Note {i}\n\nRetry the upload when the server drops the connection.\n"
       for i in range(400)},
    **{f"job{i}.py": f"def job_{i}(server):\n    return server.run({i})\n" for i in range(80)},
}


def test_prose_ruled_out_of_the_legs_leaves_the_first_tier_as_deep(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    for kc in _indexed(tmp_path_factory, "prose-heavy", PROSE_HEAVY_REPO):
        short, long = kc.search(LONG_REPORT, limit=10), kc.search(LONG_REPORT, limit=50)
        assert all(hit.path.endswith(".py") for hit in long)
        assert [h.chunk_id for h in short] == [h.chunk_id for h in long[:10]]
        assert [round(h.score, 12) for h in short] == [round(h.score, 12) for h in long[:10]]


# A report whose words match 80 purge helpers, failing in a function whose words are few and common here.
FRAME_REPO = {
    **{f"app/purge_{i}.py": (f"def purge_rows_{i}(rows):\n"
                             "    # purge old rows after a deletion, decode unicode fields\n"
                             "    return collect(row for row in rows if row.old and row.unicode)\n")
       for i in range(80)},
    "app/deletion.py": "def collect(objs):\n    return list(objs)\n",
    "app/other.py": "def collect(items):\n    return set(items)\n",
    "app/runner.py": ("class Fast:\n    def collect(self, rows):\n        return rows\n\n\n"
                      "class Slow:\n    def collect(self, rows):\n        return sorted(rows)\n"),
}
FRAME_REPORT = ("Purging old rows fails on unicode fields\n"
                "Purging old rows with unicode fields raises during the purge.\n"
                "Traceback (most recent call last):\n"
                '  File "/venv/lib/python3.12/site-packages/app/deletion.py", line 2, in collect\n'
                "UnicodeDecodeError: invalid start byte\n")


@pytest.fixture(scope="module")
def frame_kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowCode]:
    yield from _indexed(tmp_path_factory, "frames", FRAME_REPO)


@pytest.mark.parametrize(("frame", "found"), [(RankingSignals().frame, True), (1.0, False)])
def test_a_traceback_frames_function_is_a_candidate_whatever_its_words(frame_kc: KnowCode, frame: float,
                                                                       found: bool) -> None:
    for orchestrator in _orchestrator(frame_kc, None, signals=RankingSignals(frame=frame)):
        paths = {h.path for h in orchestrator.retrieve(FRAME_REPORT, limit_entities=10).hits}
        assert ("app/deletion.py" in paths) is found
        assert "app/other.py" not in paths  # a function of that name in another file is no frame's


def test_a_frames_line_picks_its_function_among_those_of_one_name_in_its_file(frame_kc: KnowCode) -> None:
    report = FRAME_REPORT.replace("/app/deletion.py\", line 2", "/app/runner.py\", line 8")
    names = {h.qualified_name for h in frame_kc.search(report, limit=10)}
    assert "app.runner.Slow.collect" in names
    assert "app.runner.Fast.collect" not in names


@pytest.mark.parametrize(("line_link", "found"), [(RankingSignals().line_link, True), (1.0, False)])
def test_the_function_a_line_link_points_at_is_a_candidate_whatever_its_words(
        frame_kc: KnowCode, line_link: float, found: bool) -> None:
    report = FRAME_REPORT.split("Traceback")[0] + "It goes wrong in app/runner.py#L8 (see there).\n"
    for orchestrator in _orchestrator(frame_kc, None, signals=RankingSignals(line_link=line_link)):
        names = {h.qualified_name for h in orchestrator.retrieve(report, limit_entities=10).hits}
        assert ("app.runner.Slow.collect" in names) is found
        assert "app.runner.Fast.collect" not in names


def test_a_line_link_whose_path_many_files_share_names_none(tmp_path_factory: pytest.TempPathFactory) -> None:
    repo = {f"pkg{i}/util.py": f"def helper_{i}():\n    return {i}\n" for i in range(LINKED_FILES_MAX + 1)}
    for kc in _indexed(tmp_path_factory, "shared-name", repo):
        for orchestrator in _orchestrator(kc, None):
            assert orchestrator._linked("It goes wrong in util.py#L2.") == []
            [linked] = orchestrator._linked("It goes wrong in pkg3/util.py#L2.")
            assert linked.qualified_name == "pkg3.util.helper_3"


def test_a_packed_chunk_is_answered_by_the_member_that_matches(many_kc: KnowCode) -> None:
    [hit] = many_kc.search("save config data", limit=1)
    assert (hit.path, hit.qualified_name) == ("helpers.py", "helpers.save_config")
    assert (hit.start_line, hit.end_line) == (5, 6)
    assert hit.text == "def save_config(path, data):\n    return write(path, data)"


# Methods declared beside their type, in files small enough to be one packed chunk; a method's
# documenting comment counts as the method's lines, not the module's.
RECEIVER_REPO = {
    "shapes.go": ("package shapes\n\ntype Circle struct {\n\tR float64\n}\n\n"
                  "func NewCircle(r float64) *Circle { return &Circle{R: r} }\n\n"
                  "// Scaled makes an enlarged copy.\nfunc (c *Circle) Scaled(factor float64) *Circle {\n"
                  "\treturn &Circle{R: c.R * factor}\n}\n"),
    "lib.rs": ("pub struct Square {\n    side: f64,\n}\n\nimpl Square {\n"
               "    pub fn grown(&self, margin: f64) -> Square {\n"
               "        Square { side: self.side + margin }\n    }\n}\n"),
}


@pytest.mark.parametrize(("query", "expected"), [
    ("scaled circle factor", ("shapes.go", "shapes.Circle.Scaled", 10, 12)),
    ("makes an enlarged copy", ("shapes.go", "shapes.Circle.Scaled", 10, 12)),  # its comment's words
    ("grown square margin", ("lib.rs", "lib.Square.grown", 6, 8)),
])
def test_a_packed_method_declared_beside_its_type_answers_for_the_chunk(
        tmp_path_factory: pytest.TempPathFactory, query: str, expected: tuple[str, str, int, int]) -> None:
    for kc in _indexed(tmp_path_factory, "receivers", RECEIVER_REPO):
        hit = kc.search(query, limit=1)[0]
        assert (hit.path, hit.qualified_name, hit.start_line, hit.end_line) == expected


TIED_MEMBERS_REPO = {"config.py": ('def load(path):\n    """Read the settings file."""\n'
                                  '    return open(path).read()\n\n\n'
                                  'def settings_path(root):\n    return root + "/app.cfg"\n')}


def test_of_members_holding_as_many_query_words_the_one_whose_name_holds_them_answers(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    for kc in _indexed(tmp_path_factory, "tied", TIED_MEMBERS_REPO):
        hit = kc.search("settings path", limit=1)[0]  # load holds both words too, in its body
        assert (hit.qualified_name, hit.start_line, hit.end_line) == ("config.settings_path", 6, 7)


def test_exact_hits_start_at_the_definition(many_kc: KnowCode) -> None:
    [hit] = many_kc.search('"reset_cache"', limit=1)
    assert (hit.qualified_name, hit.start_line, hit.end_line) == ("helpers.reset_cache", 9, 10)


# --- dependency expansion -----------------------------------------------------------------------------


def test_dependencies_are_the_hits_one_hop_callees(sample_kc: KnowCode) -> None:
    result = sample_kc.retrieve('"Engine.run"', limit_entities=1, expand_deps=True)
    assert _names(result.hits) == ["pkg.core.Engine.run"]
    deps = result.dependencies
    assert set(_names(deps)) == {"pkg.core.Base.start", "pkg.util.helper", "pkg.util.slugify"}
    assert deps[0].qualified_name == "pkg.core.Base.start"  # called first (line 13)
    assert {hit.source for hit in deps} == {"dependency"}
    assert all(hit.score == 0.0 for hit in deps)
    assert not {hit.entity_id for hit in deps} & {hit.entity_id for hit in result.hits}
    for hit in deps:  # each dependency hit shows its callee's code
        assert f"def {hit.name}" in hit.text


def test_no_dependencies_without_expansion(sample_kc: KnowCode) -> None:
    result = sample_kc.retrieve('"Engine.run"', limit_entities=1, expand_deps=False)
    assert _names(result.hits) == ["pkg.core.Engine.run"]
    assert result.dependencies == ()


def test_callees_are_not_expanded_transitively(sample_kc: KnowCode) -> None:
    result = sample_kc.retrieve('"show"', limit_entities=1)
    assert _names(result.hits) == ["web.app.App.show"]
    assert _names(result.dependencies) == ["web.view.render"]


def test_entity_without_resolved_callees_has_no_dependencies(sample_kc: KnowCode) -> None:
    result = sample_kc.retrieve('"helper"', limit_entities=1)
    assert _names(result.hits) == ["pkg.util.helper"]
    assert result.dependencies == ()


def _function(name: str, calls: str, marker: bool) -> str:
    """A function of ~700 characters: three of them do not fit one chunk, so each gets its own."""
    padding = "".join(f"    step_{i} = {i}  # padding line {i} of the {name} function\n" for i in range(14))
    comment = "    # MARKER\n" if marker else ""
    return f"def {name}():\n{comment}{padding}    return {calls}\n\n\n"


CALLS_REPO = {
    "calls.py": (_function("leaf", "1", marker=False) + _function("middle", "leaf()", marker=True)
                 + _function("top", "middle() + leaf()", marker=True)),
}


@pytest.fixture(scope="module")
def calls_kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowCode]:
    yield from _indexed(tmp_path_factory, "calls", CALLS_REPO)


def test_callee_that_is_already_a_hit_is_not_a_dependency(calls_kc: KnowCode) -> None:
    result = calls_kc.retrieve('"MARKER"', limit_entities=5)
    assert set(_names(result.hits)) == {"calls.top", "calls.middle"}
    assert _names(result.dependencies) == ["calls.leaf"]  # middle is top's callee but already a hit
    [leaf] = result.dependencies
    assert (leaf.source, leaf.score) == ("dependency", 0.0)


def test_each_callee_appears_once(calls_kc: KnowCode) -> None:
    result = calls_kc.retrieve('"top"', limit_entities=1)
    assert _names(result.hits) == ["calls.top"]
    assert _names(result.dependencies) == ["calls.middle", "calls.leaf"]  # in call order, leaf once


def test_hybrid_results_are_expanded_too(calls_kc: KnowCode) -> None:
    result = calls_kc.retrieve("top", limit_entities=1)
    assert result.mode is RetrievalMode.HYBRID
    assert _names(result.hits) == ["calls.top"]
    assert set(_names(result.dependencies)) == {"calls.middle", "calls.leaf"}
    assert all(hit.score == 0.0 for hit in result.dependencies)


# The question's words are in session.py; the signing code they lead to shares that file's
# identifiers (serializer, salt, itsdangerous) but none of the question's words.
FEEDBACK_REPO = {
    "session.py": "def save_session_cookie(response, session):\n"
                  "    serializer = itsdangerous_serializer(salt_value)\n"
                  "    response.set_cookie(serializer.dumps(session))\n",
    "signing.py": "def itsdangerous_serializer(salt_value):\n    return URLSafeSerializer(salt_value)\n",
    **{f"noise{i}.py": f"def unrelated_{i}(items):\n    return sorted(items)\n" for i in range(6)},
}
FEEDBACK_QUESTION = ("When the app saves the session cookie on the response, which code decides how its "
                     "contents are protected before they are sent to the browser?")

FEEDBACK_REPORT = FEEDBACK_QUESTION + (" Steps to reproduce: start the development server, log in twice "
                                       "from two tabs, wait until the token expires, then reload every page.")


@pytest.fixture(scope="module")
def feedback_kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowCode]:
    yield from _indexed(tmp_path_factory, "feedback", FEEDBACK_REPO)


@pytest.mark.parametrize(("feedback", "query", "found"), [
    (DEFAULT_FEEDBACK_WEIGHT, FEEDBACK_QUESTION, True),  # a long question: the first hit's terms join it
    (0.0, FEEDBACK_QUESTION, False),  # switched off: only the question's words
    (DEFAULT_FEEDBACK_WEIGHT, "session cookie response", False),  # a short query is taken as it is
    (DEFAULT_FEEDBACK_WEIGHT, FEEDBACK_REPORT, False),  # so is a report: it names its code already
])
def test_a_long_question_reaches_code_through_its_first_hits_terms(feedback_kc: KnowCode, feedback: float,
                                                                   query: str, found: bool) -> None:
    for orchestrator in _orchestrator(feedback_kc, None, feedback=feedback):
        result = orchestrator.retrieve(query, limit_entities=5, expand_deps=False)
        assert result.hits[0].path == "session.py"
        assert ("signing.py" in {hit.path for hit in result.hits}) is found


# --- issue reports ------------------------------------------------------------------------------------
# A report whose title names the window function that crashes, and whose pasted log names the
# connection pool's code more often.
REPORT_REPO = {
    "window.py": "def lag_window_cast(expression, decimal_field):\n    return sqlite_cast(expression)\n",
    "pool.py": "def retry_connection_pool(worker, log):\n    return worker.retry(log)\n",
    **{f"noise{i}.py": f"def unrelated_{i}(items):\n    return sorted(items)\n" for i in range(6)},
}
REPORT_TITLE = "Lag window cast of a decimal field crashes on SQLite"
REPORT_BODY = ("Description: the nightly job stops after the upgrade. Steps to reproduce: run the command "
               "with the production settings and watch the log: connection pool retry, worker retry, "
               "connection pool retry, worker log, connection pool exhausted after three minutes.")


@pytest.fixture(scope="module")
def report_kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowCode]:
    yield from _indexed(tmp_path_factory, "report", REPORT_REPO)


@pytest.mark.parametrize(("query", "first"), [
    (f"{REPORT_TITLE}\n{REPORT_BODY}", "window.py"),  # the title weighs more than the pasted log
    (f"{REPORT_BODY}\n{REPORT_TITLE}", "pool.py"),  # the same words with no title line: the log wins
])
def test_a_report_s_title_decides_its_keyword_ranking(report_kc: KnowCode, query: str, first: str) -> None:
    # keywords alone, and no coverage signal (it counts the same words in either order)
    for orchestrator in _orchestrator(report_kc, None, signals=RankingSignals(coverage=1.0)):
        result = orchestrator.retrieve(query, limit_entities=1, expand_deps=False)
        assert result.mode is RetrievalMode.LEXICAL
        assert result.hits[0].path == first


# --- a small file of one function is that function ------------------------------------------------

SOLE_REPO = {
    "backoff.py": ("import random\n\n\n"
                   "def next_delay(attempt, base):\n"
                   "    return base * 2 ** attempt + random.uniform(0, base)  # retry backoff with jitter\n"),
    "policy.py": ("# the retry backoff policy: base delay, jitter and attempts for every client\n"
                  "RETRY_BACKOFF = {'base': 0.5, 'jitter': True, 'attempts': 5}\n"),
}
SOLE_QUESTION = ("When a request to the server fails, how is the retry backoff delay with random jitter "
                 "computed for the next attempt, and where is the base delay configured?")


def test_a_module_chunk_holding_one_function_is_scored_as_that_function(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    # Each file fits one chunk, which its module owns; the long question damps chunks that are no
    # function or method, but backoff.py's chunk is its function: only policy.py's is damped.
    scores: dict[float, dict[str, float]] = {}  # per non-callable penalty, hit scores by path
    for engine in _indexed(tmp_path_factory, "sole", SOLE_REPO):
        for penalty in (RankingSignals().non_callable, 1.0):
            for orchestrator in _orchestrator(engine, None, signals=RankingSignals(non_callable=penalty)):
                hits = orchestrator.retrieve(SOLE_QUESTION, limit_entities=2, expand_deps=False).hits
                scores[penalty] = {hit.path: hit.score for hit in hits}
    damped, undamped = scores[RankingSignals().non_callable], scores[1.0]
    assert damped["backoff.py"] == pytest.approx(undamped["backoff.py"])
    assert damped["policy.py"] < undamped["policy.py"]  # a long question: the penalty applies


# --- every language: a definition's name finds it with its own span ---------------------------------

LANGUAGE_FIXTURES = sorted(p.stem.removeprefix("test_") for p in
                           (Path(__file__).parents[1] / "indexing" / "languages").glob("test_*.py"))


@pytest.mark.parametrize("quoted", [True, False], ids=["exact", "symbol"])
@pytest.mark.parametrize("language", LANGUAGE_FIXTURES)
def test_a_name_finds_every_definition_with_its_own_span(language: str, quoted: bool, tmp_path: Path) -> None:
    # Definitions that share one packed chunk (a Java file's module, class and constructor are all
    # `Circle`; a Go interface method and a struct method are both `Area`) are each a hit, not only
    # the first one found in that chunk.
    fixture = importlib.import_module(f"tests.unit.indexing.languages.test_{language}")
    parsed = fixture._parse()
    path = parsed.entities[0].path
    repo = write_tree(tmp_path / "repo", {path: fixture.SOURCE.decode()})
    engine = knowcode.open(repo, store=tmp_path / "store")
    try:
        engine.index()
        definitions = [e for e in parsed.entities if e.kind is not EntityKind.MODULE
                       and (quoted or e.name.isidentifier())]  # `==` is no symbol query
        namesakes = Counter(e.name for e in definitions)
        missed = [e.qualified_name for e in definitions
                  if not any((hit.start_line, hit.end_line) == (e.start_line, e.end_line) for hit in
                             engine.search(f'"{e.name}"' if quoted else e.name, limit=namesakes[e.name] + 2))]
    finally:
        engine.close()
    assert definitions and missed == []

