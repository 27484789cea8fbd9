"""Cross-encoder reranking: the Voyage provider against a real local HTTP server, and through KnowCode."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import knowcode
from knowcode.config import AppConfig, load_config
from knowcode.errors import KnowCodeError, RerankerError
from knowcode.retrieval.cross_encoders import (
    MAX_DOCUMENT_CHARS,
    VOYAGE_RERANK_MODEL,
    RerankerProviderName,
    VoyageReranker,
    create_cross_encoder,
)
from knowcode.retrieval.embeddings import VOYAGE_API_KEY_ENV, VOYAGE_BASE_URL
from tests.conftest import write_tree
from tests.unit.retrieval._local_server import LocalApi, Reply, serving

KEY_ENV = "KNOWCODE_TEST_RERANK_KEY"
SECRET = "vk-test-do-not-leak-0123456789"


def by_length(query: str, document: str) -> float:
    return float(len(document))


@dataclass
class FakeVoyage(LocalApi):
    """The local server as Voyage's rerank endpoint: unless told otherwise, it scores with `score`."""

    score: Callable[[str, str], float] = by_length

    def answer(self, body: dict[str, Any]) -> Reply:
        # like Voyage: results sorted by relevance, best first, each naming its input index
        data = [{"index": i, "relevance_score": self.score(body["query"], doc)}
                for i, doc in enumerate(body["documents"])]
        data.sort(key=lambda item: -item["relevance_score"])
        reply = {"object": "list", "data": data[:body["top_k"]], "model": body["model"],
                 "usage": {"total_tokens": 10}}
        return 200, json.dumps(reply).encode(), {}


@pytest.fixture
def api() -> Iterator[FakeVoyage]:
    with serving(FakeVoyage()) as state:
        yield state


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the retry waits instead of sleeping them."""
    waits: list[float] = []
    monkeypatch.setattr("knowcode.retrieval.remote_http.time.sleep", waits.append)
    return waits


def voyage_at(api: FakeVoyage, **options: Any) -> VoyageReranker:
    return VoyageReranker(base_url=api.url, api_key_env=KEY_ENV, **options)


# --- the provider ------------------------------------------------------------------------------------


def test_request_body_and_headers(api: FakeVoyage, key: str) -> None:
    scores = voyage_at(api).rerank("where is parse", ["def parse(): pass", "x = 1", "class Parser: ..."])
    assert len(api.requests) == 1
    request = api.requests[0]
    assert request["path"] == "/v1/rerank"
    assert request["headers"]["Authorization"] == f"Bearer {key}"
    assert request["headers"]["Content-Type"] == "application/json"
    assert request["body"] == {"query": "where is parse",
                               "documents": ["def parse(): pass", "x = 1", "class Parser: ..."],
                               "model": "rerank-2.5", "top_k": 3}
    assert scores == [17.0, 5.0, 17.0]


def test_scores_come_back_in_document_order(api: FakeVoyage, key: str) -> None:
    documents = ["bb", "a", "dddd", "ccc"]
    scores = voyage_at(api).rerank("q", documents)
    assert scores == [2.0, 1.0, 4.0, 3.0]  # the server answered best first: indexes 2, 3, 0, 1


def test_empty_input_makes_no_request(api: FakeVoyage, key: str) -> None:
    assert voyage_at(api).rerank("q", []) == []
    assert api.requests == []


def test_long_documents_are_truncated(api: FakeVoyage, key: str) -> None:
    voyage_at(api).rerank("q", ["x" * (MAX_DOCUMENT_CHARS + 500), "short"])
    sent = api.requests[0]["body"]["documents"]
    assert [len(d) for d in sent] == [MAX_DOCUMENT_CHARS, 5]


def test_many_documents_are_split_into_ordered_requests(api: FakeVoyage, key: str) -> None:
    documents = ["a" * n for n in (3, 1, 5, 2, 4)]
    scores = voyage_at(api, max_batch_documents=2).rerank("q", documents)
    assert [r["body"]["documents"] for r in api.requests] == [documents[0:2], documents[2:4], documents[4:]]
    assert [r["body"]["top_k"] for r in api.requests] == [2, 2, 1]
    assert scores == [3.0, 1.0, 5.0, 2.0, 4.0]


def test_token_budget_splits_requests(api: FakeVoyage, key: str) -> None:
    # ~ (1 query char + 10 document chars) / 2 chars per token = 6 tokens each: two fit in 12
    scores = voyage_at(api, max_batch_tokens=12).rerank("q", ["x" * 10] * 5)
    assert [len(r["body"]["documents"]) for r in api.requests] == [2, 2, 1]
    assert scores == [10.0] * 5


def test_http_500_raises_without_the_key(api: FakeVoyage, key: str, sleeps: list[float]) -> None:
    api.always = (500, f'{{"detail": "boom, you sent Bearer {key}"}}'.encode(), {})
    with pytest.raises(RerankerError, match="HTTP 500") as caught:
        voyage_at(api, retry_backoff=0.5).rerank("q", ["a"])
    assert key not in str(caught.value)
    assert "***" in str(caught.value)
    assert len(api.requests) == 3  # the first try and two retries
    assert sleeps == [0.5, 1.0]  # doubling backoff (no Retry-After)
    assert isinstance(caught.value, KnowCodeError)


def test_429_then_success_honours_retry_after(api: FakeVoyage, key: str, sleeps: list[float]) -> None:
    api.replies.append((429, b'{"detail": "rate limited"}', {"Retry-After": "2.5"}))
    scores = voyage_at(api, retry_backoff=0.0).rerank("q", ["aa", "b"])
    assert scores == [2.0, 1.0]
    assert len(api.requests) == 2
    assert sleeps == [2.5]


def test_client_error_is_not_retried(api: FakeVoyage, key: str, sleeps: list[float]) -> None:
    api.replies.append((401, b'{"detail": "bad key"}', {}))
    with pytest.raises(RerankerError, match="HTTP 401"):
        voyage_at(api).rerank("q", ["a"])
    assert len(api.requests) == 1
    assert sleeps == []


@pytest.mark.parametrize("payload", [
    b"<html>not json</html>",
    b"\xff\xfe not utf-8",
    b'["data"]',
    b'{"data": "nope"}',
    b'{"results": []}',
    b'{"data": [{"index": 0}, {"index": 1, "relevance_score": 0.5}]}',  # a score missing
    b'{"data": [{"index": 0, "relevance_score": "high"}, {"index": 1, "relevance_score": 0.5}]}',
    b'{"data": [{"index": 0, "relevance_score": NaN}, {"index": 1, "relevance_score": 0.5}]}',
    b'{"data": [{"index": 0, "relevance_score": true}, {"index": 1, "relevance_score": 0.5}]}',
    b'{"data": [{"index": 2, "relevance_score": 0.9}, {"index": 1, "relevance_score": 0.5}]}',  # range
    b'{"data": [{"index": "0", "relevance_score": 0.9}, {"index": 1, "relevance_score": 0.5}]}',
    b'{"data": [{"index": 1, "relevance_score": 0.9}, {"index": 1, "relevance_score": 0.5}]}',  # twice
    b'{"data": [{"index": 1, "relevance_score": 0.9}]}',  # a document left unscored
    b'{"data": [0.9, 0.5]}',
])
def test_malformed_reply_raises_without_key(api: FakeVoyage, key: str, payload: bytes) -> None:
    api.replies.append((200, payload, {}))
    with pytest.raises(RerankerError, match="reply") as caught:
        voyage_at(api).rerank("q", ["a", "b"])
    assert key not in str(caught.value)


def test_missing_key_variable_is_named(api: FakeVoyage, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(RerankerError, match=f"{KEY_ENV} is not set.*reranker_api_key_env"):
        voyage_at(api).rerank("q", ["a"])
    assert api.requests == []


def test_missing_httpx_gives_install_command(monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(ImportError, match=r"voyage reranker needs httpx: pip install 'knowcode\[remote\]'"):
        VoyageReranker(base_url="http://127.0.0.1:1/v1", api_key_env=KEY_ENV).rerank("q", ["a"])


def test_create_cross_encoder_choices() -> None:
    assert create_cross_encoder("none") is None
    assert create_cross_encoder(" None ") is None
    voyage = create_cross_encoder("VOYAGE")
    assert isinstance(voyage, VoyageReranker)
    assert (voyage.model, voyage.base_url, voyage.api_key_env) == (
        VOYAGE_RERANK_MODEL, VOYAGE_BASE_URL, VOYAGE_API_KEY_ENV)
    custom = create_cross_encoder("voyage", model="rerank-2.5-lite", base_url="http://h/v1/",
                                  api_key_env="MY_KEY")
    assert isinstance(custom, VoyageReranker)
    assert (custom.model, custom.base_url, custom.api_key_env) == ("rerank-2.5-lite", "http://h/v1", "MY_KEY")
    with pytest.raises(ValueError, match="unknown reranker provider 'cohere': choose one of none, voyage"):
        create_cross_encoder("cohere")
    assert [m.value for m in RerankerProviderName] == ["none", "voyage"]


def test_config_reads_reranker_settings(tmp_path: Path) -> None:
    assert AppConfig().reranker_provider == "none"
    (tmp_path / "knowcode.toml").write_text(
        'reranker_provider = "voyage"\nreranker_model = "rerank-2.5-lite"\n'
        'reranker_base_url = "http://localhost:9/v1"\nreranker_api_key_env = "MY_KEY"\n', encoding="utf-8")
    assert load_config(tmp_path) == AppConfig(reranker_provider="voyage", reranker_model="rerank-2.5-lite",
                                              reranker_base_url="http://localhost:9/v1",
                                              reranker_api_key_env="MY_KEY")


# --- through KnowCode.search -------------------------------------------------------------------------

PARSERS = ("alpha_parse", "beta_parse", "gamma_parse")
PATHS = ["tools/alpha.py", "tools/beta.py", "tools/gamma.py"]


@pytest.fixture
def parser_repo(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", {
        f"tools/{name.split('_')[0]}.py": (
            f"def {name}(path):\n    \"\"\"Parse the config file at path.\"\"\"\n"
            f"    return open(path).read().split()  # parse config {name}\n")
        for name in PARSERS})


def search_paths(repo: Path, store: Path, config: AppConfig) -> tuple[list[str], tuple[str, ...]]:
    kc = knowcode.open(repo, store=store, config=config)
    try:
        results = kc.search("parse config", limit=3)
    finally:
        kc.close()
    return [hit.path for hit in results], results.errors


def reranked_config(api: FakeVoyage) -> AppConfig:
    return AppConfig(reranker_provider="voyage", reranker_base_url=api.url, reranker_api_key_env=KEY_ENV)


def test_search_follows_the_cross_encoder(api: FakeVoyage, key: str, parser_repo: Path,
                                          tmp_path: Path) -> None:
    baseline, errors = search_paths(parser_repo, tmp_path / "store", AppConfig())
    assert sorted(baseline) == PATHS
    assert errors == ()
    wanted = baseline[::-1]  # an order signal scoring did not give

    def prefer(query: str, document: str) -> float:  # each file defines <stem>_parse
        return next((10.0 - rank for rank, path in enumerate(wanted)
                     if f"def {Path(path).stem}_parse(" in document), 0.0)

    api.score = prefer
    paths, errors = search_paths(parser_repo, tmp_path / "store", reranked_config(api))
    assert paths == wanted
    assert errors == ()
    assert len(api.requests) == 1
    body = api.requests[0]["body"]
    assert body["query"] == "parse config"
    assert body["model"] == "rerank-2.5"
    assert 3 <= body["top_k"] == len(body["documents"]) <= 3 * 5  # limit x reranker_top_k_multiplier
    assert api.requests[0]["headers"]["Authorization"] == f"Bearer {key}"


def test_search_falls_back_to_signal_scoring_on_provider_error(api: FakeVoyage, key: str,
                                                               parser_repo: Path, tmp_path: Path) -> None:
    baseline, _ = search_paths(parser_repo, tmp_path / "store", AppConfig())
    api.always = (500, f"internal error for Bearer {key}".encode(), {"Retry-After": "0"})
    paths, errors = search_paths(parser_repo, tmp_path / "store", reranked_config(api))
    assert paths == baseline  # signal scored, as without a reranker
    assert len(errors) == 1
    assert "reranker failed" in errors[0]
    assert "HTTP 500" in errors[0]
    assert key not in errors[0]
    assert len(api.requests) == 3  # retried, then given up


def test_search_with_missing_key_still_answers(api: FakeVoyage, parser_repo: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    paths, errors = search_paths(parser_repo, tmp_path / "store", reranked_config(api))
    assert sorted(paths) == PATHS
    assert len(errors) == 1
    assert errors[0].startswith("reranker failed: environment variable")
    assert api.requests == []
