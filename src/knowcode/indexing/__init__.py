"""Indexing: a repository's files into entities, relationships and chunks in the store.

Public: :func:`~knowcode.indexing.indexer.index_repository` (indexer.py) and its
:class:`~knowcode.indexing.indexer.IndexReport`; :func:`~knowcode.indexing.scanner.scan` (scanner.py).
Stages: scanner -> file_parser (parser + chunker) -> graph_builder -> storage.
"""

from knowcode.indexing.indexer import IndexReport, index_repository
from knowcode.indexing.scanner import scan

__all__ = ["IndexReport", "index_repository", "scan"]
