"""milvus-lite in tests: each database file gets a server process, which pymilvus keeps until exit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def release_lite_servers(tmp_path: Path) -> Iterator[None]:
    """Stop the milvus-lite servers a test started on files under its tmp_path (import it to use it)."""
    yield
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:
        return
    for path in list(server_manager_instance._servers):
        if Path(path).is_relative_to(tmp_path):
            server_manager_instance.release_server(path)
