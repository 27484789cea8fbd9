"""Embedding providers: the shipped static model offline, remote providers against a local HTTP server."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from knowcode.errors import EmbeddingError, EmbeddingMismatchError, KnowCodeError
from knowcode.indexing.tokenizer import tokenize
from knowcode.retrieval.embeddings import (
    STATIC_DIMENSION,
    STATIC_MODEL_DIR,
    STATIC_MODEL_FILES,
    STATIC_MODEL_NAME,
    STATIC_QUERY_STOP_TOKENS,
    VOYAGE_BASE_URL,
    EmbeddingProviderName,
    EmbeddingSpec,
    OpenAICompatibleEmbeddingProvider,
    StaticEmbeddingProvider,
    VoyageEmbeddingProvider,
    check_compatible,
    create_embedding_provider,
    embeds_in_process,
    l2_normalize,
    static_query_text,
)
from tests.unit.retrieval._local_server import LocalApi, Reply, serving

KEY_ENV = "KNOWCODE_TEST_EMBEDDING_KEY"
SECRET = "sk-test-do-not-leak-0123456789"


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hub offline mode on, and any connection beyond 127.0.0.1 fails the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    real_connect = socket.socket.connect

    def loopback_only(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1"):
            raise AssertionError(f"network access attempted: {address}")
        real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)


@pytest.fixture(scope="module")
def static() -> StaticEmbeddingProvider:
    return StaticEmbeddingProvider()


# --- the shipped static model -------------------------------------------------------------------------


def test_shipped_model_files_exist() -> None:
    for name in STATIC_MODEL_FILES:
        assert (STATIC_MODEL_DIR / name).is_file(), name


def test_static_loads_offline_and_gives_unit_float32_rows(offline: None) -> None:
    embedder = StaticEmbeddingProvider()
    assert embedder.dimension == STATIC_DIMENSION == 256
    assert embedder._static is None  # the dimension is known without loading the model
    vectors = embedder.embed(["def add(a, b):\n    return a + b", "class Parser:\n    pass", "x"])
    assert vectors.shape == (3, 256)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert EmbeddingSpec.of(embedder) == EmbeddingSpec("static", STATIC_MODEL_NAME, 256, True)


def test_static_model_is_the_one_model2vec_itself_would_load(offline: None,
                                                             static: StaticEmbeddingProvider) -> None:
    from model2vec import StaticModel

    reference = StaticModel.from_pretrained(STATIC_MODEL_DIR, normalize=True)
    texts = ["def add(a, b):\n    return a + b", "where are retries configured", "x" * 5000, ""]
    ours = static.embed(texts)
    theirs = reference.encode(texts, max_length=512, use_multiprocessing=False)
    np.testing.assert_array_equal(ours, l2_normalize(theirs))


def test_static_is_deterministic_and_short_queries_embed_as_texts(static: StaticEmbeddingProvider) -> None:
    text = ["def read_config(path): return json.load(open(path))", "how is the config read"]
    np.testing.assert_array_equal(static.embed(text), static.embed(text, query=True))


LONG_QUESTION = ("Why does my custom handler for a 500 server error never run when I register it with "
                 "app.errorhandler in the blueprint, and is_valid is set? It is skipped.")


def test_static_long_query_is_embeddedstatic_query_text(static: StaticEmbeddingProvider) -> None:
    assert len(set(tokenize(LONG_QUESTION))) >= STATIC_QUERY_STOP_TOKENS
    kept = static_query_text(LONG_QUESTION)
    words = kept.split()
    assert "app.errorhandler" in words and "is_valid" in words  # names keep their stop-word parts
    assert not {"Why", "does", "my", "for", "a", "when", "I", "it", "with", "the", "and", "is"} & set(words)
    assert words[:4] == ["custom", "handler", "500", "server"]
    np.testing.assert_array_equal(static.embed([LONG_QUESTION], query=True), static.embed([kept]))
    assert not np.array_equal(static.embed([LONG_QUESTION], query=True), static.embed([LONG_QUESTION]))


def test_static_empty_input(static: StaticEmbeddingProvider) -> None:
    vectors = static.embed([])
    assert vectors.shape == (0, 256)
    assert vectors.dtype == np.float32


def test_static_empty_text_is_a_zero_row(static: StaticEmbeddingProvider) -> None:
    vectors = static.embed(["", "def f(): pass"])
    assert not vectors[0].any()
    assert np.linalg.norm(vectors[1]) == pytest.approx(1.0, abs=1e-5)


SIMILARITY_CASES = [
    pytest.param(
        "def read_config(path):\n    with open(path) as handle:\n        return json.load(handle)\n",
        "function loadSettings(file) {\n  const text = fs.readFileSync(file, 'utf8');\n"
        "  return JSON.parse(text);\n}\n",
        "<div class=\"navbar\">\n  <ul><li><a href=\"/home\">Home</a></li></ul>\n</div>\n",
        id="json-config-python-vs-js"),
    pytest.param(
        "def binary_search(items, target):\n    low, high = 0, len(items) - 1\n    while low <= high:\n"
        "        mid = (low + high) // 2\n        if items[mid] < target:\n            low = mid + 1\n"
        "        else:\n            high = mid - 1\n    return low\n",
        "func bisect(values []int, want int) int {\n\tlo, hi := 0, len(values)\n\tfor lo < hi {\n"
        "\t\tmid := (lo + hi) / 2\n\t\tif values[mid] < want { lo = mid + 1 } else { hi = mid }\n\t}\n"
        "\treturn lo\n}\n",
        "CREATE TABLE customers (\n  id INTEGER PRIMARY KEY,\n  email TEXT NOT NULL UNIQUE\n);\n",
        id="binary-search-python-vs-go"),
    pytest.param(
        "how do I send an http request with a timeout",
        "async def fetch(url, timeout=10):\n    async with aiohttp.ClientSession() as session:\n"
        "        async with session.get(url, timeout=timeout) as response:\n"
        "            return await response.text()\n",
        "def matrix_multiply(a, b):\n    return [[sum(x * y for x, y in zip(row, col)) for col in zip(*b)]"
        " for row in a]\n",
        id="question-to-code"),
]


@pytest.mark.parametrize(("anchor", "similar", "unrelated"), SIMILARITY_CASES)
def test_static_similar_code_is_closer(static: StaticEmbeddingProvider, anchor: str, similar: str,
                                       unrelated: str) -> None:
    a, s, u = static.embed([anchor, similar, unrelated])
    assert float(a @ s) > float(a @ u) + 0.05


def test_static_missing_files_raise_instead_of_downloading(offline: None, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    embedder = StaticEmbeddingProvider(tmp_path)
    with pytest.raises(EmbeddingError, match=r"model\.safetensors"):
        embedder.embed(["x"])


def test_static_custom_folder_learns_its_dimension(offline: None) -> None:
    embedder = create_embedding_provider("static", model=str(STATIC_MODEL_DIR))
    assert isinstance(embedder, StaticEmbeddingProvider)
    assert embedder.model == STATIC_MODEL_DIR.name
    assert embedder.dimension == 256


# --- compatibility of recorded vectors -------------------------------------------------------------------


def test_check_compatible_accepts_equal_specs() -> None:
    spec = EmbeddingSpec("static", STATIC_MODEL_NAME, 256, True)
    check_compatible(spec, EmbeddingSpec("static", STATIC_MODEL_NAME, 256, True))


@pytest.mark.parametrize("current", [
    EmbeddingSpec("voyage", "voyage-code-3", 1024, True),
    EmbeddingSpec("static", "other-static-model", 256, True),
    EmbeddingSpec("static", STATIC_MODEL_NAME, 128, True),
    EmbeddingSpec("static", STATIC_MODEL_NAME, 256, False),
])
def test_check_compatible_refuses_other_models(current: EmbeddingSpec) -> None:
    recorded = EmbeddingSpec("static", STATIC_MODEL_NAME, 256, True)
    with pytest.raises(EmbeddingMismatchError) as caught:
        check_compatible(recorded, current)
    message = str(caught.value)
    assert STATIC_MODEL_NAME in message
    assert current.model in message
    assert "knowcode index --rebuild-vectors" in message
    assert isinstance(caught.value, KnowCodeError)


# --- the provider factory ----------------------------------------------------------------------------------


def test_factory_unknown_name_lists_every_choice() -> None:
    with pytest.raises(ValueError, match="bogus") as caught:
        create_embedding_provider("bogus")
    for member in EmbeddingProviderName:
        assert member.value in str(caught.value)


def test_factory_builds_each_provider() -> None:
    assert create_embedding_provider("none") is None
    assert isinstance(create_embedding_provider("static"), StaticEmbeddingProvider)
    openai = create_embedding_provider("openai", model="nomic-embed-text", base_url="http://127.0.0.1:1/v1",
                                       dimension=768, batch_size=7)
    assert isinstance(openai, OpenAICompatibleEmbeddingProvider)
    assert (openai.model, openai.base_url, openai.api_key_env, openai.batch_size) == (
        "nomic-embed-text", "http://127.0.0.1:1/v1", None, 7)
    assert openai.dimension == 768  # configured: no request
    voyage = create_embedding_provider("Voyage", api_key_env=KEY_ENV)
    assert isinstance(voyage, VoyageEmbeddingProvider)
    assert (voyage.model, voyage.base_url, voyage.api_key_env) == ("voyage-code-3", VOYAGE_BASE_URL, KEY_ENV)


def test_factory_static_model_must_be_a_local_folder() -> None:
    with pytest.raises(ValueError, match="not a folder"):
        create_embedding_provider("static", model="minishlab/potion-code-16M")


def test_openai_default_url_reads_openai_key() -> None:
    provider = OpenAICompatibleEmbeddingProvider()
    assert provider.api_key_env == "OPENAI_API_KEY"


# --- remote providers against a real local HTTP server ----------------------------------------------------


def fake_vector(text: str) -> list[float]:
    return [float(len(text)), 1.0, 0.0, 2.0]


class FakeApi(LocalApi):
    """The local server as an embeddings endpoint: unless told otherwise, it embeds with `fake_vector`."""

    def answer(self, body: dict[str, Any]) -> Reply:
        # answer in reverse order: the client must sort by "index"
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(text)}
                for i, text in enumerate(body["input"])]
        return 200, json.dumps({"object": "list", "data": data[::-1]}).encode(), {}


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with serving(FakeApi()) as state:
        yield state


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def openai_at(api: FakeApi, **options: Any) -> OpenAICompatibleEmbeddingProvider:
    return OpenAICompatibleEmbeddingProvider(model="text-embedding-3-small", base_url=api.url,
                                             api_key_env=KEY_ENV, **options)


def test_openai_request_and_batching(api: FakeApi, key: str, offline: None) -> None:
    provider = openai_at(api, batch_size=2)
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    vectors = provider.embed(texts)
    assert [r["body"]["input"] for r in api.requests] == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    for request in api.requests:
        assert request["path"] == "/v1/embeddings"
        assert request["headers"]["Authorization"] == f"Bearer {key}"
        assert request["body"]["model"] == "text-embedding-3-small"
        assert "input_type" not in request["body"]
    expected = np.array([fake_vector(t) for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    assert provider.dimension == 4  # learnt from the replies
    assert len(api.requests) == 3


def test_openai_without_key_env_sends_no_key_to_a_local_server(api: FakeApi) -> None:
    provider = create_embedding_provider("openai", model="nomic-embed-text", base_url=api.url)
    assert provider is not None
    provider.embed(["x"])
    assert "Authorization" not in api.requests[0]["headers"]


def test_remote_dimension_probe_and_empty_input(api: FakeApi, key: str) -> None:
    provider = openai_at(api)
    assert provider.embed([]).shape == (0, 4)  # the dimension is unknown: one probe request
    assert len(api.requests) == 1
    assert provider.dimension == 4
    assert provider.embed([]).shape == (0, 4)
    assert len(api.requests) == 1


def test_remote_configured_dimension_is_checked(api: FakeApi, key: str) -> None:
    provider = openai_at(api, dimension=8)
    assert provider.embed([]).shape == (0, 8)
    assert api.requests == []
    with pytest.raises(EmbeddingError, match="4 dims, expected 8"):
        provider.embed(["x"])


def test_voyage_request_body(api: FakeApi, key: str) -> None:
    provider = create_embedding_provider("voyage", base_url=api.url, api_key_env=KEY_ENV)
    assert provider is not None
    provider.embed(["def f(): pass"])
    provider.embed(["where is f defined"], query=True)
    documents, queries = (r["body"] for r in api.requests)
    assert documents == {"model": "voyage-code-3", "input": ["def f(): pass"], "input_type": "document"}
    assert queries == {"model": "voyage-code-3", "input": ["where is f defined"], "input_type": "query"}
    assert all(r["headers"]["Authorization"] == f"Bearer {key}" for r in api.requests)
    assert EmbeddingSpec.of(provider) == EmbeddingSpec("voyage", "voyage-code-3", 4, True)


def test_http_error_names_status_and_hides_key(api: FakeApi, key: str) -> None:
    api.replies.append((500, f'{{"error": "boom, you sent Bearer {key}"}}'.encode(), {}))
    with pytest.raises(EmbeddingError, match="HTTP 500") as caught:
        openai_at(api, max_retries=0).embed(["x"])
    assert key not in str(caught.value)
    assert "***" in str(caught.value)


def test_transient_error_is_retried(api: FakeApi, key: str) -> None:
    api.replies.append((503, b'{"error": "overloaded"}', {}))
    vectors = VoyageEmbeddingProvider(base_url=api.url, api_key_env=KEY_ENV, retry_backoff=0.0).embed(["x"])
    assert vectors.shape == (1, 4)
    assert len(api.requests) == 2


@pytest.mark.parametrize("payload", [
    b"<html>not json</html>",
    b'{"data": "nope"}',
    b'{"result": []}',
    b'{"data": [{"index": 0, "embedding": [1.0, "x"]}]}',
    b'{"data": [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0, 2.0]}]}',
    b'{"data": [{"index": 0, "embedding": []}]}',
])
def test_malformed_reply_raises_without_key(api: FakeApi, key: str, payload: bytes) -> None:
    api.replies.append((200, payload, {}))
    with pytest.raises(EmbeddingError, match="reply") as caught:
        openai_at(api).embed(["x"])
    assert key not in str(caught.value)


def test_missing_key_variable_is_named(api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(EmbeddingError, match=f"{KEY_ENV} is not set"):
        VoyageEmbeddingProvider(base_url=api.url, api_key_env=KEY_ENV).embed(["x"])
    assert api.requests == []


def test_unreachable_server_raises(key: str) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAICompatibleEmbeddingProvider(base_url=f"http://127.0.0.1:{port}/v1", api_key_env=KEY_ENV,
                                                 max_retries=0)
    with pytest.raises(EmbeddingError, match="ConnectError") as caught:
        provider.embed(["x"])
    assert key not in str(caught.value)


def test_missing_httpx_gives_install_command(monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(ImportError, match=r"pip install 'knowcode\[remote\]'"):
        openai_at(FakeApi(url="http://127.0.0.1:1/v1")).embed(["x"])


def test_only_the_static_model_embeds_in_process() -> None:
    remote = OpenAICompatibleEmbeddingProvider(model="m", base_url="http://127.0.0.1:9", api_key_env=None)
    assert embeds_in_process(StaticEmbeddingProvider())
    assert not embeds_in_process(remote)
    assert not embeds_in_process(None)
