"""Embedding providers for the dense leg: the shipped static model (default) and remote HTTP APIs.

Every provider returns float32 rows of one fixed dimension, L2-normalised (an empty text gives a zero
row). The index records an `EmbeddingSpec` next to its vectors and `check_compatible` refuses to mix them
with vectors from another model. Remote providers need the optional ``httpx`` (``knowcode[remote]``).
"""

from __future__ import annotations

import enum
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from knowcode.errors import EmbeddingError, EmbeddingMismatchError
from knowcode.indexing.tokenizer import STOP_WORDS, tokenize
from knowcode.retrieval.remote_http import (
    ERROR_BODY_CHARS,
    REMOTE_MAX_RETRIES,
    REMOTE_RETRY_BACKOFF_SECONDS,
    REMOTE_TIMEOUT_SECONDS,
    LazyHttpClient,
    api_key_headers,
    post_json,
)
from knowcode.retrieval.reranker import UNDIVERSE_QUERY_TOKENS
from knowcode.retrieval.static_encoder import StaticEncoder, load_static_encoder

Vectors = npt.NDArray[np.float32]

STATIC_MODEL_DIR = Path(__file__).resolve().parent / "static_model"  # built by scripts/build_static_model.py
STATIC_MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")  # a model2vec folder
# Recorded in every index: change it whenever scripts/build_static_model.py or tune_static_model.py writes a
# new model (indexes then re-embed with it on their next update).
STATIC_MODEL_NAME = "all-MiniLM-L6-v2-distilled-256d-codetuned-v2"
STATIC_DIMENSION = 256  # scripts/build_static_model.py DEFAULT_PCA_DIMS; DESIGN.md measured this size
STATIC_MAX_TOKENS = 512  # model2vec's default; a 1,500-character code chunk is ~415 tokens, few are cut
STATIC_BATCH_SIZE = 1024  # texts per tokenizer call: model2vec's encode default
# The static model's vector is the mean of its tokens' vectors, so the function words of a long question
# ("why does my ... when I ...") pull every question towards one point: a query of at least this many
# distinct tokens (where the ranking stage's long-question signals take over) is embedded without the
# tokenizer's stop words. Span-level questions NDCG@10 0.642 -> 0.649, 62 issue reports (django, sympy;
# held out) fn NDCG@10 0.444 -> 0.450, Recall@10 0.562 either way; file-level 0.866 either way (dropped
# from every query instead: 0.865). benchmarks/results/quality*_query_stop_words*.md, 2026-12.
STATIC_QUERY_STOP_TOKENS = UNDIVERSE_QUERY_TOKENS
_WORD = re.compile(r"(?<![\w.$])[A-Za-z]+\b(?![.(])")  # a whole word: not part of a name or a call

REMOTE_BATCH_SIZE = 128  # texts per request: under Voyage's 1,000 and OpenAI's 2,048, ~50k tokens of chunks
DIMENSION_PROBE_TEXT = "dimension probe"  # embedded once when a remote dimension is neither set nor seen

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_DEFAULT_MODEL = "text-embedding-3-small"  # OpenAI's cheapest current embedding model
OPENAI_API_KEY_ENV = "OPENAI_API_KEY"  # the variable OpenAI's own SDK reads
VOYAGE_BASE_URL = "https://api.voyageai.com/v1"
VOYAGE_DEFAULT_MODEL = "voyage-code-3"  # Voyage's code retrieval model
VOYAGE_API_KEY_ENV = "VOYAGE_API_KEY"  # the variable Voyage's own SDK reads


class EmbeddingProviderName(str, enum.Enum):
    """The `embedding_provider` settings `create_embedding_provider` accepts."""

    STATIC = "static"
    OPENAI = "openai"
    VOYAGE = "voyage"
    NONE = "none"


class EmbeddingProvider(Protocol):
    """Turns texts into fixed-size vectors; tests may pass any object of this shape."""

    @property
    def provider(self) -> str:
        """Provider name, one of `EmbeddingProviderName`."""

    @property
    def model(self) -> str:
        """Model name recorded with the vectors."""

    @property
    def dimension(self) -> int:
        """Length of every vector."""

    @property
    def normalized(self) -> bool:
        """Whether rows are L2-normalised."""

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """Embed texts into a float32 array of shape (len(texts), dimension)."""


@dataclass(frozen=True, slots=True)
class EmbeddingSpec:
    """What produced an index's vectors; vectors of two different specs are never mixed."""

    provider: str
    model: str
    dimension: int
    normalized: bool

    @classmethod
    def of(cls, embedder: EmbeddingProvider) -> EmbeddingSpec:
        """Return the spec of a provider (a remote one may make one request to learn its dimension)."""
        return cls(embedder.provider, embedder.model, embedder.dimension, embedder.normalized)

    def describe(self) -> str:
        """Return e.g. ``static:all-MiniLM-L6-v2-distilled-256d-v1 (256 dims)``."""
        norm = "" if self.normalized else ", not normalised"
        return f"{self.provider}:{self.model} ({self.dimension} dims{norm})"


def check_compatible(recorded: EmbeddingSpec, current: EmbeddingSpec) -> None:
    """Refuse to search or extend an index's vectors with another embedding model.

    :param recorded: the spec stored with the index's vectors.
    :param current: the spec of the configured provider.
    :raises EmbeddingMismatchError: when the two differ in any field.
    """
    if recorded != current:
        raise EmbeddingMismatchError(
            f"the index's vectors were made by {recorded.describe()} but the configured embedding model is "
            f"{current.describe()}; re-index with `knowcode index --rebuild-vectors`")


def l2_normalize(vectors: npt.NDArray[Any]) -> Vectors:
    """Return float32 rows scaled to unit length; all-zero rows stay zero."""
    rows = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit: Vectors = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return unit


class StaticEmbeddingProvider:
    """The default: a model2vec static model read from a local folder, offline, no torch.

    The model is read by :mod:`knowcode.retrieval.static_encoder` on first use, not by model2vec
    (the same vectors, without model2vec's import cost).
    """

    provider = EmbeddingProviderName.STATIC.value
    normalized = True

    def __init__(self, model_dir: Path | None = None) -> None:
        """Point at a model2vec folder (default: the model shipped in the package); nothing loads yet.

        :param model_dir: a folder with model.safetensors, tokenizer.json and config.json.
        """
        self.model_dir = model_dir or STATIC_MODEL_DIR
        self.model = STATIC_MODEL_NAME if model_dir is None else self.model_dir.name
        self._dimension = STATIC_DIMENSION if model_dir is None else None
        self._static: StaticEncoder | None = None
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        """Length of every vector (a custom folder is loaded to learn it)."""
        if self._dimension is None:
            self._dimension = int(self._load().dim)
        return self._dimension

    def _load(self) -> StaticEncoder:
        with self._lock:
            if self._static is None:
                missing = [name for name in STATIC_MODEL_FILES if not (self.model_dir / name).is_file()]
                if missing:  # model2vec (which wrote the folder) would take it for a hub id to download
                    raise EmbeddingError(
                        f"static embedding model incomplete in {self.model_dir} (missing "
                        f"{', '.join(missing)}): reinstall knowcode, or rebuild it with "
                        "scripts/build_static_model.py")
                static = load_static_encoder(self.model_dir, STATIC_MAX_TOKENS)
                if self._dimension is not None and static.dim != self._dimension:
                    raise EmbeddingError(f"static model in {self.model_dir} has {static.dim} dims, expected "
                                         f"{self._dimension}: rebuild it with scripts/build_static_model.py")
                self._static = static
            return self._static

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """Embed texts; a long query loses its stop words first (STATIC_QUERY_STOP_TOKENS).

        :param texts: the texts to embed.
        :param query: True for search queries.
        :return: float32 array (len(texts), dimension), L2-normalised rows.
        :raises EmbeddingError: when the model files are missing or wrong.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        texts = [static_query_text(text) for text in texts] if query else list(texts)
        # The Rust tokenizer spreads each batch over the cores: no thread pool of our own.
        raw = self._load().encode(texts, batch_size=STATIC_BATCH_SIZE)
        return l2_normalize(raw)  # the model stores float16; normalise again in float32


def static_query_text(query: str) -> str:
    """The query without its stop words when it holds at least STATIC_QUERY_STOP_TOKENS distinct tokens
    (names such as `is_valid` or `self.to` keep theirs), else the query itself."""
    if len(set(tokenize(query))) < STATIC_QUERY_STOP_TOKENS:
        return query
    return _WORD.sub(lambda word: "" if word[0].lower() in STOP_WORDS else word[0], query)


def embeds_in_process(provider: EmbeddingProvider | None) -> bool:
    """Whether the provider computes its vectors in this process (the static model), not over a network:
    then a query's embedding is CPU work that a thread of its own cannot overlap with much else.

    :param provider: the dense provider, or None.
    :return: True for the static model.
    """
    return isinstance(provider, StaticEmbeddingProvider)


class _RemoteEmbeddingProvider:
    """Shared HTTP client, batching, retries and reply parsing of the remote providers."""

    provider: str
    normalized = True

    def __init__(self, *, model: str, base_url: str, api_key_env: str | None, dimension: int | None,
                 batch_size: int = REMOTE_BATCH_SIZE, timeout: float = REMOTE_TIMEOUT_SECONDS,
                 max_retries: int = REMOTE_MAX_RETRIES,
                 retry_backoff: float = REMOTE_RETRY_BACKOFF_SECONDS) -> None:
        if batch_size < 1:
            raise ValueError(f"embedding batch size must be at least 1, not {batch_size}")
        if dimension is not None and dimension < 1:
            raise ValueError(f"embedding dimension must be at least 1, not {dimension}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self._dimension = dimension
        self._http = LazyHttpClient(f"the {self.provider} embedding provider", timeout)

    @property
    def dimension(self) -> int:
        """Length of every vector: configured, seen in a reply, or learnt from one probe request."""
        if self._dimension is None:
            self.embed([DIMENSION_PROBE_TEXT])
        assert self._dimension is not None  # embed() sets it or raises
        return self._dimension

    def _body(self, texts: list[str], query: bool) -> dict[str, Any]:
        return {"model": self.model, "input": texts}

    def _headers(self) -> dict[str, str]:
        return api_key_headers(self.api_key_env, provider=self.provider, setting="embedding_api_key_env",
                               error=EmbeddingError)

    def close(self) -> None:
        """Close the HTTP connection pool (a later request opens a new one)."""
        self._http.close()

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """Embed texts in batches of `batch_size` requests.

        :param texts: the texts to embed.
        :param query: True for a search query (Voyage embeds queries differently).
        :return: float32 array (len(texts), dimension), L2-normalised rows.
        :raises EmbeddingError: on a missing key, an HTTP error, a malformed reply or a wrong dimension.
        :raises ImportError: when httpx is not installed.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        batches = [self._post(list(texts[i:i + self.batch_size]), query)
                   for i in range(0, len(texts), self.batch_size)]
        return l2_normalize(np.concatenate(batches))

    def _post(self, texts: list[str], query: bool) -> Vectors:
        client, headers, url = self._http.get(), self._headers(), f"{self.base_url}/embeddings"
        content = post_json(client, url, self._body(texts, query), headers,
                            what=f"{self.provider} embeddings", error=EmbeddingError,
                            max_retries=self.max_retries, retry_backoff=self.retry_backoff)
        return self._parse(content, len(texts), url)

    def _parse(self, content: bytes, count: int, url: str) -> Vectors:
        """Read ``{"data": [{"embedding": [...], "index": i}, ...]}`` (OpenAI's shape, also Voyage's)."""
        where = f"{self.provider} embeddings reply from {url}"
        try:
            items = json.loads(content)["data"]
            rows = [item["embedding"] for item in sorted(items, key=lambda item: int(item.get("index", 0)))]
            vectors = np.asarray(rows, dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise EmbeddingError(f"{where} is not the expected JSON "
                                 f"({type(err).__name__}: {str(err)[:ERROR_BODY_CHARS]})") from None
        if vectors.ndim != 2 or vectors.shape[0] != count or vectors.shape[1] == 0:
            raise EmbeddingError(f"{where} has {vectors.shape} vectors for {count} texts")
        if not np.isfinite(vectors).all():
            raise EmbeddingError(f"{where} holds non-finite numbers")
        if self._dimension is None:
            self._dimension = int(vectors.shape[1])
        elif vectors.shape[1] != self._dimension:
            raise EmbeddingError(f"{where} has {vectors.shape[1]} dims, expected {self._dimension}: fix "
                                 "embedding_dimension or the model, then `knowcode index --rebuild-vectors`")
        return vectors


class OpenAICompatibleEmbeddingProvider(_RemoteEmbeddingProvider):
    """POST {base_url}/embeddings as OpenAI defines it; also Ollama, vLLM, LM Studio and others.

    With no `api_key_env`, the key is read from OPENAI_API_KEY for OpenAI's own URL and no key is sent to
    any other URL (a local Ollama or vLLM needs none).
    """

    provider = EmbeddingProviderName.OPENAI.value

    def __init__(self, *, model: str = OPENAI_DEFAULT_MODEL, base_url: str = OPENAI_BASE_URL,
                 api_key_env: str | None = None, dimension: int | None = None, **options: Any) -> None:
        """Configure the endpoint; no request is made yet."""
        if api_key_env is None and base_url.rstrip("/") == OPENAI_BASE_URL:
            api_key_env = OPENAI_API_KEY_ENV
        super().__init__(model=model, base_url=base_url, api_key_env=api_key_env, dimension=dimension,
                         **options)


class VoyageEmbeddingProvider(_RemoteEmbeddingProvider):
    """Voyage AI's embeddings API; queries and documents are embedded with their own input_type."""

    provider = EmbeddingProviderName.VOYAGE.value

    def __init__(self, *, model: str = VOYAGE_DEFAULT_MODEL, base_url: str = VOYAGE_BASE_URL,
                 api_key_env: str | None = VOYAGE_API_KEY_ENV, dimension: int | None = None,
                 **options: Any) -> None:
        """Configure the endpoint; no request is made yet."""
        super().__init__(model=model, base_url=base_url, api_key_env=api_key_env or VOYAGE_API_KEY_ENV,
                         dimension=dimension, **options)

    def _body(self, texts: list[str], query: bool) -> dict[str, Any]:
        return {"model": self.model, "input": texts, "input_type": "query" if query else "document"}


def create_embedding_provider(name: str, *, model: str | None = None, base_url: str | None = None,
                              api_key_env: str | None = None, dimension: int | None = None,
                              batch_size: int | None = None) -> EmbeddingProvider | None:
    """Build the embedding provider a config names; no model is loaded and no request made yet.

    :param name: ``static`` (default, shipped model), ``openai`` (any OpenAI-compatible API), ``voyage``,
        or ``none`` (no vectors: keyword search only).
    :param model: remote model name; for ``static``, an optional local model2vec folder.
    :param base_url: remote API root (default: the provider's public API).
    :param api_key_env: environment variable holding the API key.
    :param dimension: expected vector size of a remote model (default: learnt from the first reply).
    :param batch_size: texts per remote request (default `REMOTE_BATCH_SIZE`).
    :return: the provider, or None for ``none``.
    :raises ValueError: for an unknown name, or a ``static`` model folder that does not exist.
    """
    try:
        choice = EmbeddingProviderName(name.strip().lower())
    except ValueError:
        choices = ", ".join(member.value for member in EmbeddingProviderName)
        raise ValueError(f"unknown embedding provider {name!r}: choose one of {choices}") from None
    options: dict[str, Any] = {"dimension": dimension, "batch_size": batch_size or REMOTE_BATCH_SIZE}
    if choice is EmbeddingProviderName.NONE:
        return None
    if choice is EmbeddingProviderName.STATIC:
        if model is None:
            return StaticEmbeddingProvider()
        folder = Path(model).expanduser()
        if not folder.is_dir():
            raise ValueError(f"static embedding model {model!r} is not a folder: the static provider loads "
                             "local model2vec folders only (leave embedding_model empty for the default)")
        return StaticEmbeddingProvider(folder)
    if choice is EmbeddingProviderName.OPENAI:
        return OpenAICompatibleEmbeddingProvider(model=model or OPENAI_DEFAULT_MODEL,
                                                 base_url=base_url or OPENAI_BASE_URL,
                                                 api_key_env=api_key_env, **options)
    return VoyageEmbeddingProvider(model=model or VOYAGE_DEFAULT_MODEL, base_url=base_url or VOYAGE_BASE_URL,
                                   api_key_env=api_key_env, **options)
