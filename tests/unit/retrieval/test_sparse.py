"""The sparse leg: BM25 from term frequencies, over segments with tombstones, saved as mapped arrays."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowcode.indexing.tokenizer import tokenize
from knowcode.retrieval.sparse import BM25_B, BM25_K1, Postings, SparseIndex, SparseSegment

DOCS = {
    "c1": "def load_config(path): read the config file and parse it",
    "c2": "class HtmlView: render the html view of a page",
    "c3": "config loader: merge config defaults with the user config",
    "c4": "def render_page(page): return HtmlView(page).render()",
    "c5": "unrelated words about cats and dogs",
}
QUERIES = ["config", "render html", "page view", "cats", "load config render", "config config", "parse"]


def tokens_of(docs: dict[str, str]) -> list[str]:
    return [" ".join(tokenize(text)) for text in docs.values()]


def build(docs: dict[str, str] = DOCS, **params: float) -> SparseIndex:
    return SparseIndex.build(list(docs), tokens_of(docs), **params)


def test_lucene_defaults() -> None:
    assert (BM25_K1, BM25_B) == (1.2, 0.75)


def test_search_ranks_by_bm25_best_first() -> None:
    hits = build().search("config", 10)
    assert [cid for cid, _ in hits] == ["c3", "c1"]  # c3 says "config" three times
    assert hits[0][1] > hits[1][1] > 0


def test_scores_follow_the_formula_by_hand() -> None:
    index = SparseIndex.build(["a", "b", "c"], ["xx yy", "xx xx zz", "zz"])
    # N = 3, avgdl = 6 / 3 = 2; "xx": df 2, tf 1 in a (dl 2) and 2 in b (dl 3)
    idf = np.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    a = idf * 1 / (1 + 1.2 * (0.25 + 0.75 * 2 / 2))
    b = idf * 2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 2))
    assert index.search("xx", 5) == [("b", pytest.approx(b, rel=1e-12)), ("a", pytest.approx(a, rel=1e-12))]


def test_a_repeated_term_counts_once_per_repeat_with_its_expansion_weight() -> None:
    index = build()
    once = index.scores(["config"])
    assert np.allclose(index.scores(["config", "page", "config"], {"config": 0.5, "parse": 0.25}),
                       2.5 * once + index.scores(["page"]) + 0.25 * index.scores(["parse"]), rtol=1e-12)


def _corpus(seed: int, size: int) -> dict[str, str]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(40)] + ["config", "render", "page", "parse", "load"]
    # a few very common words and a long tail, as in code
    return {f"c{i:04}": " ".join(rng.choices(words, weights=[1 / (j + 1) for j in range(len(words))],
                                             k=rng.randint(0, 30)))
            for i in range(size)}


@pytest.mark.parametrize(("k1", "b"), [(BM25_K1, BM25_B), (2.0, 0.3), (0.5, 1.0)])
def test_scores_equal_bm25s_lucene(k1: float, b: float) -> None:
    docs = _corpus(7, 300)
    index = build(docs, k1=k1, b=b)
    reference = bm25s.BM25(k1=k1, b=b, method="lucene")
    reference.index([text.split() for text in tokens_of(docs)], show_progress=False)
    for query in ["w0", "w1 w2", "config page w39", "render render", "parse w5 w6 w7", "w0 w0 w30"]:
        known = [t for t in tokenize(query) if t in reference.vocab_dict]
        expected = reference.get_scores(known)  # float32 in bm25s
        assert np.allclose(index.scores(tokenize(query)), expected, rtol=1e-5, atol=1e-6)


def _segmented(docs: dict[str, str], seed: int, pieces: int) -> SparseIndex:
    """The same live documents spread over `pieces` segments, with stale copies deleted in each."""
    rng = random.Random(seed)
    ids = list(docs)
    rng.shuffle(ids)
    segments = []
    for part in range(pieces):
        own = ids[part::pieces]
        stale = [f"{cid}-old" for cid in rng.sample(own, len(own) // 3)] if own else []
        rows = own + stale
        rng.shuffle(rows)
        texts = [" ".join(tokenize(docs.get(cid, "config stale words w0 w0"))) for cid in rows]
        deleted = frozenset(i for i, cid in enumerate(rows) if cid.endswith("-old"))
        segments.append(SparseSegment(rows, Postings.build(texts), deleted))
    return SparseIndex(segments)


@pytest.mark.parametrize("pieces", [1, 2, 5])
def test_segments_with_tombstones_score_as_one_segment(pieces: int) -> None:
    docs = _corpus(3, 400)
    whole = build(docs)
    split = _segmented(docs, 11, pieces)
    assert sorted(split.chunk_ids) == sorted(docs)
    assert split.documents == len(docs)
    for query in ["w0", "w1 w2", "config page w39", "render render", "parse w5 w6 w7", "stale", "w0 w0"]:
        expected, found = whole.search(query, 25), split.search(query, 25)
        assert [cid for cid, _ in found] == [cid for cid, _ in expected]
        assert [s for _, s in found] == pytest.approx([s for _, s in expected], rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.text("abcdef", min_size=1, max_size=3),
                       st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "config"]),
                                max_size=8).map(" ".join), max_size=30),
       st.integers(1, 4), st.integers(0, 1000),
       st.sampled_from(["alpha", "beta gamma", "config alpha alpha"]))
def test_any_split_ranks_exactly_as_one_segment(docs: dict[str, str], pieces: int, seed: int,
                                                query: str) -> None:
    expected = build(docs).search(query, 10)
    found = _segmented(docs, seed, pieces).search(query, 10)
    assert [cid for cid, _ in found] == [cid for cid, _ in expected]
    assert [s for _, s in found] == pytest.approx([s for _, s in expected], rel=1e-9)


def test_ties_are_broken_by_id_whatever_the_row_order() -> None:
    same = {"b": "config", "a": "config", "c": "config"}
    assert [cid for cid, _ in build(same).search("config", 2)] == ["a", "b"]
    one, two = Postings.build(["config", "config"]), Postings.build(["config"])
    index = SparseIndex([SparseSegment(["c", "b"], one), SparseSegment(["a"], two)])
    assert [cid for cid, _ in index.search("config", 2)] == ["a", "b"]


def test_deleted_rows_are_never_returned_and_do_not_count() -> None:
    postings = Postings.build(tokens_of(DOCS))
    index = SparseIndex([SparseSegment(list(DOCS), postings, frozenset({2}))])  # c3 deleted
    assert [cid for cid, _ in index.search("config", 10)] == ["c1"]
    rest = {cid: text for cid, text in DOCS.items() if cid != "c3"}
    assert index.search("config", 10) == build(rest).search("config", 10)  # same N, df, avgdl: bit for bit
    assert "c3" not in index.chunk_ids


@pytest.mark.parametrize("query", QUERIES)
def test_save_then_load_gives_the_same_ranking(tmp_path: Path, query: str) -> None:
    built = Postings.build(tokens_of(DOCS))
    built.save(tmp_path, "seg")
    loaded = SparseIndex([SparseSegment(list(DOCS), Postings.load(tmp_path, "seg"))])
    before = build().search(query, 10)
    assert before  # each query matches something
    assert loaded.search(query, 10) == before


def test_load_memory_maps_the_arrays(tmp_path: Path) -> None:
    Postings.build(tokens_of(DOCS)).save(tmp_path, "seg")
    loaded = Postings.load(tmp_path, "seg")
    for array in (loaded.indptr, loaded.docs, loaded.tfs, loaded.lengths):
        assert type(array) is np.ndarray  # a plain view, so slicing skips memmap's Python overhead...
        assert isinstance(array.base, np.memmap)  # ...of the mapped file, not a copy in memory
    terms = json.loads((tmp_path / "seg.vocabulary.json").read_text())
    assert loaded.vocabulary == {term: number for number, term in enumerate(terms)}


def test_postings_count_terms_per_document() -> None:
    postings = Postings.build(["x y x", "", "y"])  # the tokens are taken as they are
    assert postings.rows == 3
    assert postings.lengths.tolist() == [3, 0, 1]
    x, y = postings.vocabulary["x"], postings.vocabulary["y"]
    assert postings.docs[postings.indptr[x]:postings.indptr[x + 1]].tolist() == [0]
    assert postings.tfs[postings.indptr[x]:postings.indptr[x + 1]].tolist() == [2]
    assert postings.docs[postings.indptr[y]:postings.indptr[y + 1]].tolist() == [0, 2]


def test_parameters_change_the_scores() -> None:
    assert build().search("config", 10) != build(k1=2.0, b=0.1).search("config", 10)


@pytest.mark.parametrize("query", ["zebra", "quantum entanglement", "the of and", "!!!", ""])
def test_unknown_query_words_give_nothing(query: str) -> None:
    assert build().search(query, 10) == []


def test_unknown_words_do_not_stop_known_ones() -> None:
    assert [cid for cid, _ in build().search("zebra cats", 10)] == ["c5"]


def test_empty_index_finds_nothing(tmp_path: Path) -> None:
    empty = SparseIndex.build([], [])
    assert empty.search("config", 10) == []
    assert empty.chunk_ids == []
    assert SparseIndex([]).search("config", 10) == []


def test_everything_deleted_finds_nothing() -> None:
    index = SparseIndex([SparseSegment(list(DOCS), Postings.build(tokens_of(DOCS)), frozenset(range(5)))])
    assert index.search("config", 10) == []
    assert index.documents == 0


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_limit_is_respected(limit: int) -> None:
    everything = build().search("config render page html view", 10)
    assert len(everything) == 4
    hits = build().search("config render page html view", limit)
    assert len(hits) == limit
    assert hits == everything[:limit]


@pytest.mark.parametrize("limit", [0, -1])
def test_non_positive_limit_gives_nothing(limit: int) -> None:
    assert build().search("config", limit) == []


def test_limit_larger_than_the_index() -> None:
    hits = build().search("config render", 1000)
    assert {cid for cid, _ in hits} == {"c1", "c2", "c3", "c4"}


def test_zero_score_documents_are_left_out() -> None:
    hits = build().search("cats", 10)
    assert [cid for cid, _ in hits] == ["c5"]  # the other four score 0 and are not returned
    assert all(score > 0 for _, score in build().search("config render page", 10))


def test_single_document_index() -> None:
    one = SparseIndex.build(["only"], [" ".join(tokenize("parse config"))])
    assert [cid for cid, _ in one.search("config", 5)] == ["only"]
    assert one.search("render", 5) == []



def _reference_postings(token_strings: list[str]) -> tuple[dict[str, int], list[int], list[int], list[int]]:
    """Postings counted the plain way: terms by first occurrence, each column's rows ascending."""
    vocabulary: dict[str, int] = {}
    columns: dict[int, dict[int, int]] = {}
    for row, text in enumerate(token_strings):
        for token in text.split():
            column = columns.setdefault(vocabulary.setdefault(token, len(vocabulary)), {})
            column[row] = column.get(row, 0) + 1
    indptr, docs, tfs = [0], [], []
    for term in range(len(vocabulary)):
        for row in sorted(columns[term]):
            docs.append(row)
            tfs.append(columns[term][row])
        indptr.append(len(docs))
    return vocabulary, indptr, docs, tfs


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "cc", "d", "e"]), max_size=6).map(" ".join),
                max_size=12), st.integers(min_value=1, max_value=5))
def test_postings_built_in_batches_are_those_counted_at_once(documents: list[str], batch: int) -> None:
    import knowcode.retrieval.sparse as sparse

    original = sparse.BUILD_BATCH_DOCUMENTS
    sparse.BUILD_BATCH_DOCUMENTS = batch  # hypothesis runs examples in one test call: no monkeypatch fixture
    try:
        postings = Postings.build(iter(documents))  # a stream, read once
    finally:
        sparse.BUILD_BATCH_DOCUMENTS = original
    vocabulary, indptr, docs, tfs = _reference_postings(documents)
    assert postings.vocabulary == vocabulary
    assert (postings.indptr.tolist(), postings.docs.tolist(), postings.tfs.tolist()) == (indptr, docs, tfs)
    assert postings.lengths.tolist() == [len(text.split()) for text in documents]
    assert postings.docs.dtype == np.int32 and postings.lengths.dtype == np.int64


def test_irregular_spacing_counts_as_split_does() -> None:
    regular = Postings.build(["aa bb", "cc", "", "aa aa"])
    spaced = Postings.build(["aa  bb ", " cc", "", "aa aa"])
    assert regular.vocabulary == spaced.vocabulary
    np.testing.assert_array_equal(regular.lengths, spaced.lengths)
    np.testing.assert_array_equal(regular.docs, spaced.docs)
    np.testing.assert_array_equal(regular.tfs, spaced.tfs)
    np.testing.assert_array_equal(regular.lengths, [2, 1, 0, 2])


def test_an_expansion_adds_its_terms_weighted_scores() -> None:
    index = build()
    plain = dict(index.search("config", 10))
    page = dict(index.search("page", 10))
    seen: list[list[tuple[str, float]]] = []

    def expand(hits: Sequence[tuple[str, float]]) -> dict[str, float]:
        seen.append(list(hits))
        return {"page": 0.5}

    expanded = dict(index.search("config", 10, expand))
    assert seen == [index.search("config", 10)]  # it is given the query's own hits
    for cid in set(plain) | set(page):
        assert expanded[cid] == pytest.approx(plain.get(cid, 0.0) + 0.5 * page.get(cid, 0.0), rel=1e-12)
    assert index.search("config", 10, lambda hits: {}) == index.search("config", 10)
    assert index.search("config", 10, lambda hits: {"nowhere": 3.0}) == index.search("config", 10)


def test_a_query_without_hits_is_not_expanded() -> None:
    def expand(hits: Sequence[tuple[str, float]]) -> dict[str, float]:
        raise AssertionError("no hits to expand from")

    assert build().search("nowhere", 10, expand) == []


def test_document_frequency_counts_live_rows_only() -> None:
    postings = Postings.build(tokens_of(DOCS))
    index = SparseIndex([SparseSegment(list(DOCS), postings, frozenset({2}))])  # c3 deleted
    assert index.document_frequency("config") == 1
    assert build().document_frequency("config") == 2
    assert build().document_frequency("nowhere") == 0


@pytest.mark.parametrize("pieces", [1, 3])
def test_segments_with_tombstones_weigh_extra_terms_as_one_segment(pieces: int) -> None:
    docs = _corpus(5, 300)
    whole, split = build(docs), _segmented(docs, 7, pieces)
    extra = {"w3": 0.7, "page": 0.2, "stale": 1.5}
    expected = whole.search("config w1", 25, lambda hits: extra)
    found = split.search("config w1", 25, lambda hits: extra)
    assert [cid for cid, _ in found] == [cid for cid, _ in expected]
    assert [split.document_frequency(t) for t in extra] == [whole.document_frequency(t) for t in extra]
