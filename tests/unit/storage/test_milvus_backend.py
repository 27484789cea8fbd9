"""MilvusChunkStore on milvus-lite (the Milvus engine in a local file): schema, writes, BM25, filters."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

import bm25s
import pytest

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

from knowcode.storage.milvus_backend import (
    MAX_TEXT_BYTES,
    BackendError,
    ChunkRow,
    MilvusChunkStore,
    RepositoryRecord,
    _cut_tokens,
    primary_key,
    repository_filter,
)

K1, B = 1.2, 0.75
DIM = 4
DOCS = {  # repository -> chunk id -> tokens (space-joined, as the store keeps them)
    "alpha": {"a1": "parse http respons parse", "a2": "http client retri",
              "a3": "retri backoff jitter sleep"},
    "beta": {"b1": "parse json decod", "b2": "json encod", "b3": "http server rout handler parse",
             "b4": "sleep"},
}


def _row(chunk_id: str, tokens: str, vector: tuple[float, ...] = (1.0, 0.0, 0.0, 0.0)) -> ChunkRow:
    return ChunkRow(chunk_id, f"src/{chunk_id}.py", 1, 3, f"e-{chunk_id}", "function", tokens, tokens, vector)


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("milvus") / "kc.db"


_counter = iter(range(1000))


@pytest.fixture
def chunks(lite: Path) -> Iterator[MilvusChunkStore]:
    store = MilvusChunkStore.connect(str(lite), f"c{next(_counter)}", dimension=DIM, k1=K1, b=B)
    yield store
    store.client.drop_collection(store.collection)
    store.client.drop_collection(store.registry)
    store.close()


def _fill(store: MilvusChunkStore, repos: dict[str, dict[str, str]]) -> None:
    for repo, docs in repos.items():
        store.insert(repo, "abc", 1, [_row(cid, tokens) for cid, tokens in docs.items()])
        store.flush()  # one segment per repository: statistics must still be global


def _bm25(repos: dict[str, dict[str, str]], query: list[str]) -> dict[str, float]:
    """From-scratch embedded BM25 (bm25s, as retrieval/sparse.py builds it) over the union."""
    keys = [primary_key(r, c) for r, docs in repos.items() for c in docs]
    corpus = [t.split() for docs in repos.values() for t in docs.values()]
    retriever = bm25s.BM25(k1=K1, b=B)
    retriever.index(corpus, show_progress=False)
    known = [t for t in query if t in retriever.vocab_dict]
    scores = retriever.get_scores(known) if known else [0.0] * len(keys)
    return {k: float(s) for k, s in zip(keys, scores, strict=True) if s > 0}


@pytest.mark.parametrize("query", [["parse"], ["http", "parse"], ["sleep", "jitter"], ["json", "rout"]])
def test_bm25_scores_equal_a_from_scratch_bm25_over_all_repositories(chunks: MilvusChunkStore,
                                                                      query: list[str]) -> None:
    _fill(chunks, DOCS)
    expected = _bm25(DOCS, query)
    hits = chunks.search_sparse(query, 20)
    got = {primary_key(h.repository, h.chunk_id): h.score for h in hits}
    assert got.keys() == expected.keys()
    for key, score in expected.items():  # Milvus scores carry the constant factor (k1 + 1)
        assert math.isclose(got[key], (K1 + 1) * score, rel_tol=1e-5), key
    assert [primary_key(h.repository, h.chunk_id) for h in hits] == sorted(
        expected, key=lambda k: (-expected[k], k))


def test_statistics_follow_deletes_and_filters_keep_global_statistics(chunks: MilvusChunkStore) -> None:
    _fill(chunks, DOCS)
    chunks.delete("beta", ["b1", "b3"])
    remaining = {"alpha": DOCS["alpha"], "beta": {"b2": DOCS["beta"]["b2"], "b4": DOCS["beta"]["b4"]}}
    expected = _bm25(remaining, ["parse", "sleep"])
    only_alpha = chunks.search_sparse(["parse", "sleep"], 20, ["alpha"])
    assert {h.repository for h in only_alpha} == {"alpha"}
    for hit in only_alpha:  # filtered to one repository, still scored with the whole collection's df
        assert math.isclose(hit.score, (K1 + 1) * expected[primary_key("alpha", hit.chunk_id)], rel_tol=1e-5)
    assert chunks.count() == 5
    assert chunks.count(["beta"]) == 2


def test_dense_search_filters_by_repository(chunks: MilvusChunkStore) -> None:
    chunks.insert("alpha", "", 1, [_row("a1", "x", (1.0, 0.0, 0.0, 0.0)),
                                   _row("a2", "x", (0.0, 1.0, 0.0, 0.0))])
    chunks.insert("beta", "", 1, [_row("b1", "x", (0.9, 0.1, 0.0, 0.0))])
    everywhere = chunks.search_dense([1.0, 0.0, 0.0, 0.0], 3)
    assert [(h.repository, h.chunk_id) for h in everywhere] == [
        ("alpha", "a1"), ("beta", "b1"), ("alpha", "a2")]
    assert [h.chunk_id for h in chunks.search_dense([1.0, 0.0, 0.0, 0.0], 3, ["beta"])] == ["b1"]
    hit = everywhere[0]
    assert (hit.path, hit.start_line, hit.end_line, hit.entity_id, hit.kind) == (
        "src/a1.py", 1, 3, "e-a1", "function")


def test_chunk_ids_registry_and_dropping_one_repository(chunks: MilvusChunkStore) -> None:
    _fill(chunks, DOCS)
    assert chunks.chunk_ids("alpha") == {"a1", "a2", "a3"}
    chunks.record(RepositoryRecord("alpha", "/src/alpha", "/stores/alpha", "abc", 3, 3, 120, 1.0))
    chunks.record(RepositoryRecord("beta", "/src/beta", "/stores/beta", "def", 1, 4, 80, 2.0))
    assert chunks.repositories()["alpha"].store == "/stores/alpha"
    chunks.drop_repository("alpha")
    assert chunks.chunk_ids("alpha") == set()
    assert chunks.chunk_ids("beta") == set(DOCS["beta"])
    assert set(chunks.repositories()) == {"beta"}


def test_a_collection_of_another_dimension_or_bm25_parameters_is_refused(chunks: MilvusChunkStore,
                                                                         lite: Path) -> None:
    with pytest.raises(BackendError, match="4-dimension"):
        MilvusChunkStore.connect(str(lite), chunks.collection, dimension=8, k1=K1, b=B)
    with pytest.raises(BackendError, match=r"k1=1\.2"):
        MilvusChunkStore.connect(str(lite), chunks.collection, dimension=DIM, k1=1.5, b=B)


def test_an_unreachable_server_is_one_backend_error() -> None:
    with pytest.raises(BackendError, match=r"127\.0\.0\.1:9") as caught:
        MilvusChunkStore.connect("http://127.0.0.1:9", "c", dimension=DIM, k1=K1, b=B, timeout=1.0)
    assert "\n" not in str(caught.value)


def test_filters_quote_names_and_long_tokens_are_cut_at_a_token_boundary() -> None:
    assert repository_filter(None) == ""
    assert repository_filter(['we"ird\\']) == 'repo == "we\\"ird\\\\"'
    assert repository_filter(["a", "b"]) == 'repo in ["a", "b"]'
    tokens = " ".join(["token"] * 20_000)
    cut = _cut_tokens(tokens, MAX_TEXT_BYTES)
    assert len(cut.encode()) <= MAX_TEXT_BYTES and set(cut.split()) == {"token"}


def test_listing_keys_splits_full_pages_by_hex_prefix(chunks: MilvusChunkStore,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import knowcode.storage.milvus_backend as module

    ids = [f"{digit}{n:03x}" for digit in "0123456789abcdef" for n in range(3)]
    chunks.insert("alpha", "", 1, [_row(cid, "x") for cid in ids])
    monkeypatch.setattr(module, "QUERY_PAGE", 5)  # every repository-wide page is full: split
    assert chunks.chunk_ids("alpha") == set(ids)


def test_an_ivf_dense_index_answers_with_its_search_parameters(lite: Path) -> None:
    from knowcode.storage.milvus_backend import dense_search_params

    assert dense_search_params("HNSW", 150) == {"ef": 150} and dense_search_params("HNSW", 10) == {"ef": 64}
    assert dense_search_params("FLAT", 10) == {}
    store = MilvusChunkStore.connect(str(lite), "ivf", dimension=DIM, k1=K1, b=B, dense_index="IVF_FLAT")
    store.insert("alpha", "", 1, [_row("a1", "x", (1.0, 0.0, 0.0, 0.0)),
                                  _row("a2", "x", (0.0, 1.0, 0.0, 0.0))])
    store.flush()
    assert [h.chunk_id for h in store.search_dense([1.0, 0.0, 0.0, 0.0], 2)] == ["a1", "a2"]
    assert store.client.describe_index("ivf", "dense")["nlist"] == "1024"
    store.client.drop_collection("ivf")
    store.close()


class _RefusedFirst:
    """pymilvus.MilvusClient as a milvus-lite server still opening its socket refuses it: the first
    `refusals` connects fail with CONNECT_FAILED (status 2), later ones connect for real."""

    def __init__(self, refusals: int) -> None:
        import pymilvus

        self.real = pymilvus.MilvusClient
        self.refusals = refusals
        self.calls = 0

    def __call__(self, **kwargs: object) -> object:
        from pymilvus import MilvusException

        self.calls += 1
        if self.calls <= self.refusals:
            raise MilvusException(code=2, message="Fail connecting to server on unix:/tmp/x.sock")
        return self.real(**kwargs)


def test_a_lite_server_not_listening_yet_is_waited_for(lite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pymilvus

    client = _RefusedFirst(refusals=2)
    monkeypatch.setattr(pymilvus, "MilvusClient", client)
    store = MilvusChunkStore.connect(str(lite), "waited", dimension=DIM, k1=K1, b=B)
    assert client.calls == 3
    store.client.drop_collection(store.collection)
    store.client.drop_collection(store.registry)
    store.close()


def test_a_lite_server_that_never_listens_fails_in_bounded_time(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import pymilvus

    from knowcode.storage import milvus_backend

    client = _RefusedFirst(refusals=10**6)
    monkeypatch.setattr(pymilvus, "MilvusClient", client)
    monkeypatch.setattr(milvus_backend, "LITE_LISTEN_SECONDS", 0.6)
    with pytest.raises(BackendError, match="cannot reach Milvus"):
        MilvusChunkStore.connect(str(tmp_path / "never.db"), "c", dimension=DIM, k1=K1, b=B)
    assert 2 <= client.calls <= 4  # polled every LITE_LISTEN_POLL_SECONDS until the limit


def test_a_refused_server_uri_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    import pymilvus

    client = _RefusedFirst(refusals=10**6)
    monkeypatch.setattr(pymilvus, "MilvusClient", client)
    with pytest.raises(BackendError, match=re.escape("cannot reach Milvus at http://127.0.0.1:9")):
        MilvusChunkStore.connect("http://127.0.0.1:9", "c", dimension=DIM, k1=K1, b=B)
    assert client.calls == 1
