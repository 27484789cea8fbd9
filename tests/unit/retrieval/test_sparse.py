"""The sparse leg: BM25 over chunk tokens, saved as files and loaded memory-mapped."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from knowcode.indexing.tokenizer import tokenize
from knowcode.retrieval.sparse import BM25_B, BM25_K1, SparseIndex

DOCS = {
    "c1": "def load_config(path): read the config file and parse it",
    "c2": "class HtmlView: render the html view of a page",
    "c3": "config loader: merge config defaults with the user config",
    "c4": "def render_page(page): return HtmlView(page).render()",
    "c5": "unrelated words about cats and dogs",
}


def build(docs: dict[str, str] = DOCS, **params: float) -> SparseIndex:
    return SparseIndex.build(list(docs), [" ".join(tokenize(text)) for text in docs.values()], **params)


def test_lucene_defaults() -> None:
    assert (BM25_K1, BM25_B) == (1.2, 0.75)


def test_search_ranks_by_bm25_best_first() -> None:
    hits = build().search("config", 10)
    assert [cid for cid, _ in hits] == ["c3", "c1"]  # c3 says "config" three times
    assert hits[0][1] > hits[1][1] > 0


@pytest.mark.parametrize("query", ["config", "render html", "page view", "cats", "load config render"])
def test_save_then_load_gives_the_same_ranking(tmp_path: Path, query: str) -> None:
    built = build()
    built.save(tmp_path / "sparse")
    loaded = SparseIndex.load(tmp_path / "sparse")
    before = built.search(query, 10)
    after = loaded.search(query, 10)
    assert before  # each query matches something
    assert [cid for cid, _ in after] == [cid for cid, _ in before]
    assert [score for _, score in after] == pytest.approx([score for _, score in before])


def test_load_memory_maps_the_score_matrix(tmp_path: Path) -> None:
    build().save(tmp_path / "sparse")
    loaded = SparseIndex.load(tmp_path / "sparse")
    assert loaded.retriever is not None
    data = loaded.retriever.scores["data"]
    assert type(data) is np.ndarray  # a plain view, so slicing skips memmap's Python overhead...
    assert isinstance(data.base, np.memmap)  # ...of the mapped file, not a copy in memory
    assert loaded.chunk_ids == list(DOCS)
    assert json.loads((tmp_path / "sparse" / "chunk_ids.json").read_text()) == list(DOCS)


def test_saved_parameters_survive_the_round_trip(tmp_path: Path) -> None:
    default, custom = build(), build(k1=2.0, b=0.1)
    assert default.search("config", 10) != custom.search("config", 10)
    custom.save(tmp_path / "sparse")
    loaded = SparseIndex.load(tmp_path / "sparse")
    expected = custom.search("config", 10)
    found = loaded.search("config", 10)
    assert [cid for cid, _ in found] == [cid for cid, _ in expected]
    assert [score for _, score in found] == pytest.approx([score for _, score in expected])


@pytest.mark.parametrize("query", ["zebra", "quantum entanglement", "the of and", "!!!", ""])
def test_unknown_query_words_give_nothing(query: str) -> None:
    assert build().search(query, 10) == []


def test_unknown_words_do_not_stop_known_ones() -> None:
    assert [cid for cid, _ in build().search("zebra cats", 10)] == ["c5"]


def test_empty_index_saves_loads_and_finds_nothing(tmp_path: Path) -> None:
    empty = SparseIndex.build([], [])
    assert empty.search("config", 10) == []
    empty.save(tmp_path / "sparse")
    loaded = SparseIndex.load(tmp_path / "sparse")
    assert loaded.chunk_ids == []
    assert loaded.retriever is None
    assert loaded.search("config", 10) == []


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


def test_single_document_index(tmp_path: Path) -> None:
    one = SparseIndex.build(["only"], [" ".join(tokenize("parse config"))])
    one.save(tmp_path / "sparse")
    loaded = SparseIndex.load(tmp_path / "sparse")
    assert [cid for cid, _ in loaded.search("config", 5)] == ["only"]
    assert loaded.search("render", 5) == []
