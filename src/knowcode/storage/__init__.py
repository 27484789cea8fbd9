"""Storage: the SQLite index store.

Public: :class:`~knowcode.storage.store.Store` (store.py), :data:`~knowcode.storage.store.SCHEMA_VERSION`.
"""

from knowcode.storage.store import SCHEMA_VERSION, Store

__all__ = ["SCHEMA_VERSION", "Store"]
