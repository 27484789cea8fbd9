"""KnowCode: a local-first codebase knowledge engine.

``knowcode.open(path)`` returns a :class:`KnowCode` facade; the data types live in :mod:`knowcode.models`.
Each name below is imported on first use (:mod:`knowcode.lazy_imports`), so that importing one
``knowcode`` module, as ``knowcode --help`` does, does not load the engine and the search stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from knowcode.lazy_imports import lazy_exports

if TYPE_CHECKING:
    from knowcode.config import AppConfig
    from knowcode.engine import KnowCode, open
    from knowcode.errors import KnowCodeError, SchemaVersionError, StoreError
    from knowcode.models import Chunk, Entity, EntityKind, FileRecord, IndexStats, RelationKind, Relationship

__version__ = "0.1.0"

__all__ = [
    "AppConfig", "Chunk", "Entity", "EntityKind", "FileRecord", "IndexStats", "KnowCode",
    "KnowCodeError", "RelationKind", "Relationship", "SchemaVersionError", "StoreError", "open",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "AppConfig": "knowcode.config", "KnowCode": "knowcode.engine", "open": "knowcode.engine",
    "KnowCodeError": "knowcode.errors", "SchemaVersionError": "knowcode.errors",
    "StoreError": "knowcode.errors",
    "Chunk": "knowcode.models", "Entity": "knowcode.models", "EntityKind": "knowcode.models",
    "FileRecord": "knowcode.models", "IndexStats": "knowcode.models", "RelationKind": "knowcode.models",
    "Relationship": "knowcode.models",
})
