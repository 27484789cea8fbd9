"""Retrieval: queries into ranked chunks (sparse and dense legs, fusion, reranking, routing).

Public, embeddings.py (the dense leg's vectors): :class:`~knowcode.retrieval.embeddings.EmbeddingProvider`
(the protocol), :class:`~knowcode.retrieval.embeddings.EmbeddingSpec` and
:func:`~knowcode.retrieval.embeddings.check_compatible` (what an index records, and the refusal to mix
vectors), :func:`~knowcode.retrieval.embeddings.create_embedding_provider` with its
:class:`~knowcode.retrieval.embeddings.EmbeddingProviderName` choices, and the providers
:class:`~knowcode.retrieval.embeddings.StaticEmbeddingProvider` (default: the model2vec model shipped in
``static_model/``), :class:`~knowcode.retrieval.embeddings.OpenAICompatibleEmbeddingProvider` and
:class:`~knowcode.retrieval.embeddings.VoyageEmbeddingProvider` (need ``knowcode[remote]``).
"""

from knowcode.retrieval.embeddings import (
    EmbeddingProvider,
    EmbeddingProviderName,
    EmbeddingSpec,
    OpenAICompatibleEmbeddingProvider,
    StaticEmbeddingProvider,
    VoyageEmbeddingProvider,
    check_compatible,
    create_embedding_provider,
)

__all__ = [
    "EmbeddingProvider",
    "EmbeddingProviderName",
    "EmbeddingSpec",
    "OpenAICompatibleEmbeddingProvider",
    "StaticEmbeddingProvider",
    "VoyageEmbeddingProvider",
    "check_compatible",
    "create_embedding_provider",
]
