"""KnowCode's own failures. Bad input raises built-in exceptions (FileNotFoundError, ValueError)."""


class KnowCodeError(Exception):
    """Base of every error KnowCode raises about its own state; the message says what to do next."""


class StoreError(KnowCodeError):
    """The index store cannot be opened, read or written."""


class StoreLockedError(StoreError):
    """Another indexing run held the store's writer lock for longer than the wait allowed."""


class StoreRootError(StoreError):
    """The store holds the index of another repository folder than the one asked for."""


class SchemaVersionError(StoreError):
    """The store was written by a newer KnowCode than this one."""


class EmbeddingError(KnowCodeError):
    """An embedding provider failed: its model files, a remote API, its reply or its settings."""


class EmbeddingMismatchError(KnowCodeError):
    """The index holds vectors from another embedding model than the one configured now."""


class RerankerError(KnowCodeError):
    """A cross-encoder reranking provider failed: a remote API, its reply or its settings."""
