"""The index version a routing artifact is valid for: a fingerprint of what decides retrieval and bundles.

The parts are the index format (schema, parser output and tokenizer versions, the embedded text length),
the embedding model, the retrieval settings (hybrid alpha, BM25 k1 and b, reranking depth, ranking
signals, reranker), the token encoding budgets are counted in, and the escalation ladder the evaluation
climbs. A change to any of them can change which bundles are sufficient and what they hold, so it makes
an artifact stale until ``knowcode eval`` runs again.

The repository's content is deliberately left out: an artifact measures how well this configuration
answers on this codebase, and ordinary edits (which re-index incrementally) must not switch local
answers off. Changes to KnowCode's own code are caught by the artifact's ``knowcode_version`` instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from knowcode.indexing.indexer import PARSER_OUTPUT_VERSION
from knowcode.indexing.tokenizer import TOKENIZER_VERSION
from knowcode.llm.agent import ESCALATION_LADDER
from knowcode.retrieval.embeddings import EmbeddingSpec
from knowcode.retrieval.search_index import DENSE_TEXT_CHARS
from knowcode.storage.store import SCHEMA_VERSION

if TYPE_CHECKING:
    from knowcode.engine import KnowCode


def index_version_parts(kc: KnowCode) -> dict[str, Any]:
    """What the index version fingerprints, as plain JSON data (recorded in the routing artifact).

    :param kc: the facade; its embedding provider is created if it was not yet (no indexing happens).
    :return: the parts, keyed by name.
    """
    config = kc.config
    embedder = kc.embedder()
    return {
        "schema_version": SCHEMA_VERSION,
        "parser_output_version": PARSER_OUTPUT_VERSION,
        "tokenizer_version": TOKENIZER_VERSION,
        "dense_text_chars": DENSE_TEXT_CHARS,
        # The spec the search index records next to its vectors; None when vectors are switched off.
        "embedding": dataclasses.asdict(EmbeddingSpec.of(embedder)) if embedder is not None else None,
        "hybrid_alpha": config.hybrid_alpha,
        "bm25_k1": config.bm25_k1,
        "bm25_b": config.bm25_b,
        "reranker_top_k_multiplier": config.reranker_top_k_multiplier,
        "ranking": dataclasses.asdict(config.ranking),
        # As configured: an empty model means the provider's default, which only a code change moves.
        "reranker": {"provider": config.reranker_provider, "model": config.reranker_model},
        "token_encoding": config.token_encoding,
        "escalation_ladder": [{"max_tokens": rung.max_tokens, "limit_entities": rung.limit_entities,
                               "verbosity": rung.verbosity.value, "expand_deps": rung.expand_deps}
                              for rung in ESCALATION_LADDER],
    }


def fingerprint(parts: Mapping[str, Any]) -> str:
    """The SHA-256 hex of the parts as canonical JSON (sorted keys, no whitespace)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def index_version(kc: KnowCode) -> str:
    """The current index version of a facade: :func:`fingerprint` of :func:`index_version_parts`.

    :param kc: the facade.
    :return: a SHA-256 hex digest.
    """
    return fingerprint(index_version_parts(kc))
