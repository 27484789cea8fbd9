"""GET /api/v1/search across the repositories of a shared backend (repo=, all_repos=)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from knowcode.api import API_PREFIX, create_app
from knowcode.config import AppConfig, BackendConfig
from knowcode.engine import KnowCode
from tests._milvus import release_lite_servers  # noqa: F401 - autouse: stops the test's servers
from tests.conftest import SAMPLE_REPO, write_tree


def test_search_across_repositories_and_filtered(tmp_path: Path) -> None:
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    config = AppConfig(backend=BackendConfig(kind="milvus", uri=str(tmp_path / "org.db")))
    other = KnowCode.from_path(write_tree(tmp_path / "other", {"app/engine.py": "class Engine:\n    pass\n"}),
                               store=tmp_path / "s-other", config=config)
    other.index()
    other.close()
    facade = KnowCode.from_path(write_tree(tmp_path / "repo", SAMPLE_REPO), store=tmp_path / "s",
                                config=config)
    client = TestClient(create_app(facade, token=None))
    every = client.get(f"{API_PREFIX}/search", params={"q": "engine", "all_repos": "true"})
    assert every.status_code == 200
    assert {hit["repository"] for hit in every.json()["hits"]} == {"repo", "other"}
    only = client.get(f"{API_PREFIX}/search", params=[("q", "engine"), ("repo", "other")])
    assert {hit["repository"] for hit in only.json()["hits"]} == {"other"}
    plain = client.get(f"{API_PREFIX}/search", params={"q": "engine"}).json()
    assert "repository" not in plain["hits"][0]
    facade.close()


def test_across_repositories_without_a_shared_backend_is_400(tmp_path: Path) -> None:
    facade = KnowCode.from_path(write_tree(tmp_path / "repo", SAMPLE_REPO), store=tmp_path / "s")
    client = TestClient(create_app(facade, token=None))
    reply = client.get(f"{API_PREFIX}/search", params={"q": "engine", "all_repos": "true"})
    assert reply.status_code == 400 and "[backend] kind" in reply.json()["error"]["message"]
    facade.close()
