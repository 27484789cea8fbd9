"""The Milvus backend against a real Milvus server: runs when KNOWCODE_MILVUS_URI is set, else skipped.

    KNOWCODE_MILVUS_URI=http://127.0.0.1:19530 [KNOWCODE_MILVUS_TOKEN=root:Milvus] \
        pytest tests/integration/test_milvus_server.py
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

URI = os.environ.get("KNOWCODE_MILVUS_URI", "")
pytestmark = pytest.mark.skipif(not URI, reason="set KNOWCODE_MILVUS_URI to test against a Milvus server")

if URI:
    pytest.importorskip("pymilvus")

import knowcode  # noqa: E402
from knowcode.config import AppConfig, BackendConfig  # noqa: E402
from tests.conftest import SAMPLE_REPO, write_tree  # noqa: E402


def test_two_repositories_on_a_server_rank_as_embedded_and_filter(tmp_path: Path) -> None:
    collection = f"knowcode_test_{secrets.token_hex(4)}"
    config = AppConfig(backend=BackendConfig(
        kind="milvus", uri=URI, collection=collection,
        token_env="KNOWCODE_MILVUS_TOKEN" if os.environ.get("KNOWCODE_MILVUS_TOKEN") else ""))
    first = knowcode.open(write_tree(tmp_path / "first", SAMPLE_REPO), store=tmp_path / "s1", config=config)
    second = knowcode.open(write_tree(tmp_path / "second", {"app/engine.py": "class Engine:\n    pass\n"}),
                           store=tmp_path / "s2", config=config)
    try:
        first.index(), second.index()
        embedded = knowcode.open(tmp_path / "first", store=tmp_path / "s-embedded")
        got = first.search("slugify text")
        assert not got.errors
        assert [h.chunk_id for h in got] == [h.chunk_id for h in embedded.search("slugify text")][:len(got)]
        across = first.search_repositories("engine", limit=10)
        assert {r.repository for r in across.hits} == {"first", "second"}
        only = first.search_repositories("engine", limit=10, repositories=["second"])
        assert {r.repository for r in only.hits} == {"second"}
        embedded.close()
    finally:
        backend = first._backend
        if backend is not None and backend._chunks is not None:
            backend._chunks.client.drop_collection(collection)
            backend._chunks.client.drop_collection(collection + "_repos")
        first.close(), second.close()
