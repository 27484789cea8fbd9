"""KnowCode: a local-first codebase knowledge engine.

``knowcode.open(path)`` returns a :class:`KnowCode` facade; the data types live in :mod:`knowcode.models`.
"""

from knowcode.config import AppConfig
from knowcode.engine import KnowCode, open
from knowcode.errors import KnowCodeError, SchemaVersionError, StoreError
from knowcode.models import Chunk, Entity, EntityKind, FileRecord, IndexStats, RelationKind, Relationship

__version__ = "0.1.0"

__all__ = [
    "AppConfig", "Chunk", "Entity", "EntityKind", "FileRecord", "IndexStats", "KnowCode",
    "KnowCodeError", "RelationKind", "Relationship", "SchemaVersionError", "StoreError", "open",
]
