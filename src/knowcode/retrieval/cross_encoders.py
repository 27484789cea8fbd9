"""Cross-encoder reranking providers (spec: "Reranking"): VoyageAI's rerank API, or none.

A provider scores (query, document) pairs; :func:`knowcode.retrieval.reranker.rerank` orders the fused
candidates by those scores and falls back to signal scoring on any provider error. Remote providers need
the optional ``httpx`` (``knowcode[remote]``) and share the HTTP plumbing of the embedding providers
(:mod:`knowcode.retrieval.remote_http`).
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from knowcode.errors import RerankerError
from knowcode.retrieval.embeddings import VOYAGE_API_KEY_ENV, VOYAGE_BASE_URL
from knowcode.retrieval.remote_http import (
    ERROR_BODY_CHARS,
    REMOTE_MAX_RETRIES,
    REMOTE_RETRY_BACKOFF_SECONDS,
    LazyHttpClient,
    api_key_headers,
    post_json,
)
from knowcode.retrieval.reranker import CrossEncoder

if TYPE_CHECKING:
    import httpx

VOYAGE_RERANK_MODEL = "rerank-2.5"  # spec: Reranking — the VoyageAI cross-encoder
# Chunks aim at 1,500 characters (indexing/chunker.py TARGET_CHUNK_CHARS), so this cap only cuts an
# oversized chunk (one huge line, minified code, a big literal). Its head names the entity and holds the
# signature and docstring, which is what the relevance judgement needs; the cap bounds what one candidate
# adds to a request's tokens (Voyage bills per token, and caps them per request).
MAX_DOCUMENT_CHARS = 4_000
MAX_QUERY_CHARS = 8_000  # rerank-2.5 reads at most 8,000 query tokens; a search query is a line or so
RERANK_TIMEOUT_SECONDS = 15.0  # a search waits on it: give up (signal scoring) sooner than embedding does
MAX_BATCH_DOCUMENTS = 1_000  # Voyage: at most 1,000 documents per request (limit 1000 x 5 takes several)
# Voyage: "query tokens x documents + document tokens" at most 600K per request for the rerank-2 family.
MAX_BATCH_TOKENS = 600_000
CHARS_PER_TOKEN_ESTIMATE = 2  # conservative: code averages 3-4 characters per token, so batches fit


class RerankerProviderName(str, enum.Enum):
    """The `reranker_provider` settings `create_cross_encoder` accepts."""

    NONE = "none"  # signal scoring only (the default: no network, deterministic)
    VOYAGE = "voyage"


def _estimated_tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN_ESTIMATE)


class VoyageReranker:
    """VoyageAI's rerank API: POST {base_url}/rerank, one relevance score per document."""

    provider = RerankerProviderName.VOYAGE.value

    def __init__(self, *, model: str = VOYAGE_RERANK_MODEL, base_url: str = VOYAGE_BASE_URL,
                 api_key_env: str = VOYAGE_API_KEY_ENV, timeout: float = RERANK_TIMEOUT_SECONDS,
                 max_retries: int = REMOTE_MAX_RETRIES, retry_backoff: float = REMOTE_RETRY_BACKOFF_SECONDS,
                 max_batch_documents: int = MAX_BATCH_DOCUMENTS,
                 max_batch_tokens: int = MAX_BATCH_TOKENS) -> None:
        """Configure the endpoint; no request is made yet.

        :param model: the Voyage rerank model.
        :param base_url: the API root.
        :param api_key_env: the environment variable holding the API key.
        :param timeout: read timeout per request, in seconds.
        :param max_retries: retries of 429, 5xx and connection errors.
        :param retry_backoff: first wait before a retry, doubled per retry (Retry-After wins).
        :param max_batch_documents: documents per request at most.
        :param max_batch_tokens: estimated tokens per request at most.
        """
        if max_batch_documents < 1:
            raise ValueError(f"reranker batch size must be at least 1, not {max_batch_documents}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.max_batch_documents = max_batch_documents
        self.max_batch_tokens = max_batch_tokens
        self._http = LazyHttpClient(f"the {self.provider} reranker", timeout)

    def close(self) -> None:
        """Close the HTTP connection pool (a later request opens a new one)."""
        self._http.close()

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Score each document against the query; higher is more relevant.

        :param query: the query as the user wrote it.
        :param documents: the candidates' texts (each cut to `MAX_DOCUMENT_CHARS`).
        :return: one score per document, in document order.
        :raises RerankerError: on a missing key, an HTTP error or a malformed reply.
        :raises ImportError: when httpx is not installed.
        """
        if not documents:
            return []
        query = query[:MAX_QUERY_CHARS]
        texts = [document[:MAX_DOCUMENT_CHARS] for document in documents]
        client = self._http.get()
        headers = api_key_headers(self.api_key_env, provider=self.provider, setting="reranker_api_key_env",
                                  error=RerankerError)
        scores: list[float] = []
        for batch in self._batches(len(query), texts):
            scores.extend(self._post(client, headers, query, batch))
        return scores

    def _batches(self, query_chars: int, texts: list[str]) -> list[list[str]]:
        """Split texts, in order, into requests under Voyage's document and token caps."""
        batches: list[list[str]] = [[]]
        used = 0
        for text in texts:
            cost = _estimated_tokens(query_chars + len(text))
            current = batches[-1]
            if current and (len(current) >= self.max_batch_documents or used + cost > self.max_batch_tokens):
                batches.append([])
                used = 0
            batches[-1].append(text)
            used += cost
        return batches

    def _post(self, client: httpx.Client, headers: dict[str, str], query: str,
              texts: list[str]) -> list[float]:
        url = f"{self.base_url}/rerank"
        body = {"query": query, "documents": texts, "model": self.model, "top_k": len(texts)}
        content = post_json(client, url, body, headers, what=f"{self.provider} rerank", error=RerankerError,
                            max_retries=self.max_retries, retry_backoff=self.retry_backoff)
        return _parse_scores(content, len(texts), f"{self.provider} rerank reply from {url}")


def _parse_scores(content: bytes, count: int, where: str) -> list[float]:
    """Read ``{"data": [{"index": i, "relevance_score": s}, ...]}`` (any order) into document order."""
    found: dict[int, float] = {}
    try:
        items = json.loads(content)["data"]
        if not isinstance(items, list):
            raise TypeError(f"data is {type(items).__name__}, not a list")
        for item in items:
            index, score = item["index"], item["relevance_score"]
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
                raise ValueError(f"index {index!r} is not one of the {count} documents")
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise ValueError(f"relevance_score {score!r} is not a finite number")
            if index in found:
                raise ValueError(f"index {index} is scored twice")
            found[index] = float(score)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise RerankerError(f"{where} is not the expected JSON "
                            f"({type(err).__name__}: {str(err)[:ERROR_BODY_CHARS]})") from None
    if len(found) != count:
        raise RerankerError(f"{where} scores {len(found)} of {count} documents")
    return [found[index] for index in range(count)]


def create_cross_encoder(name: str, *, model: str | None = None, base_url: str | None = None,
                         api_key_env: str | None = None) -> CrossEncoder | None:
    """Build the reranking provider a config names; no request is made yet.

    :param name: ``none`` (default: signal scoring only) or ``voyage`` (VoyageAI's rerank API).
    :param model: the rerank model (default ``rerank-2.5``).
    :param base_url: the API root (default: Voyage's public API).
    :param api_key_env: the environment variable holding the API key (default ``VOYAGE_API_KEY``).
    :return: the provider, or None for ``none``.
    :raises ValueError: for an unknown name.
    """
    try:
        choice = RerankerProviderName(name.strip().lower())
    except ValueError:
        choices = ", ".join(member.value for member in RerankerProviderName)
        raise ValueError(f"unknown reranker provider {name!r}: choose one of {choices}") from None
    if choice is RerankerProviderName.NONE:
        return None
    return VoyageReranker(model=model or VOYAGE_RERANK_MODEL, base_url=base_url or VOYAGE_BASE_URL,
                          api_key_env=api_key_env or VOYAGE_API_KEY_ENV)
