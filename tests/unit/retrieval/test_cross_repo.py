"""Search across the repositories of one backend: global fusion, each repository's own ranking."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

import knowcode
from knowcode.config import AppConfig, BackendConfig
from knowcode.retrieval.cross_repo import name_index, named_repositories
from knowcode.storage.milvus_backend import primary_key
from tests._milvus import release_lite_servers  # noqa: F401 - autouse: stops the test's servers
from tests.conftest import SAMPLE_REPO, write_tree

SECOND = {
    "app/server.py": "def serve(port):\n    return listen(port)\n\n\ndef listen(port):\n    return port\n",
    "app/engine.py": "class Engine:\n    def run(self, job):\n        return job()\n",
    "pkg/util.py": SAMPLE_REPO["pkg/util.py"],
}


def _open(root: Path, store: Path, db: Path) -> knowcode.KnowCode:
    return knowcode.open(root, store=store, config=AppConfig(
        backend=BackendConfig(kind="milvus", uri=str(db), collection="chunks")))


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[knowcode.KnowCode, knowcode.KnowCode]:
    db = tmp_path / "milvus.db"
    first = _open(write_tree(tmp_path / "first", SAMPLE_REPO), tmp_path / "s1", db)
    second = _open(write_tree(tmp_path / "second", SECOND), tmp_path / "s2", db)
    first.index(), second.index()
    return first, second


def test_hits_come_from_every_repository_tagged_and_by_score(
        indexed: tuple[knowcode.KnowCode, knowcode.KnowCode]) -> None:
    first, second = indexed
    results = first.search_repositories("engine run helper value", limit=10)
    assert results.mode.value == "hybrid" and not results.errors
    assert {r.repository for r in results.hits} == {"first", "second"}
    scores = [r.hit.score for r in results.hits]
    assert scores == sorted(scores, reverse=True)
    # The file both repositories hold is found in each, with its own entity.
    util = [r for r in results.hits if r.hit.path == "pkg/util.py" and r.hit.name == "helper"]
    assert {r.repository for r in util} == {"first", "second"}
    first.close(), second.close()


def test_a_repository_filter_gives_that_repository_its_own_ranking(
        indexed: tuple[knowcode.KnowCode, knowcode.KnowCode]) -> None:
    first, second = indexed
    only = second.search_repositories("engine run", limit=5, repositories=["second"])
    assert {r.repository for r in only.hits} == {"second"}
    alone = second.search("engine run", limit=5)  # the same repository through its own legs
    assert [(r.hit.path, r.hit.start_line) for r in only.hits] == [(h.path, h.start_line) for h in alone]
    assert second.search_repositories("engine", repositories=["nobody"]).hits == ()
    first.close(), second.close()


def test_other_repositories_keep_their_global_rank(
        indexed: tuple[knowcode.KnowCode, knowcode.KnowCode]) -> None:
    first, _ = indexed
    results = first.search_repositories("helper value", limit=10)
    search = first._cross_repo
    assert search is not None
    ranker = search._ranker("first")
    assert ranker is not None
    # first's orchestrator saw second's chunks as keys its store does not hold, at their global ranks.
    assert any(cid.startswith(primary_key("second", "")) for cid, _ in ranker.preset.sparse)
    assert results.hits
    first.close()


def test_dropping_a_repository_removes_it_from_searches(
        indexed: tuple[knowcode.KnowCode, knowcode.KnowCode]) -> None:
    from knowcode.search_backend import drop_repository

    first, second = indexed
    assert drop_repository(second.config, "second", 256) > 0
    with pytest.raises(ValueError, match=r"no repository 'second' \(it holds: first\)"):
        drop_repository(second.config, "second", 256)
    results = first.search_repositories("engine run helper value", limit=10)
    assert {r.repository for r in results.hits} == {"first"}
    first.close(), second.close()


def test_cross_repository_search_needs_a_shared_backend(sample_repo: Path, tmp_path: Path) -> None:
    kc = knowcode.open(sample_repo, store=tmp_path / "s")
    with pytest.raises(ValueError, match=r"\[backend\] kind"):
        kc.search_repositories("engine")
    kc.close()


def test_a_query_that_names_a_repository_ranks_its_hits_first(
        indexed: tuple[knowcode.KnowCode, knowcode.KnowCode]) -> None:
    first, second = indexed

    def helper_order(query: str) -> list[str]:
        hits = first.search_repositories(query, limit=10).hits
        return [r.repository for r in hits if r.hit.path == "pkg/util.py" and r.hit.name == "helper"]

    # pkg/util.py is the same file in both: only the name the query says tells them apart.
    assert helper_order("the helper of second") == ["second", "first"]
    assert helper_order("the helper of first") == ["first", "second"]
    first.close(), second.close()


def test_repository_names_are_matched_as_whole_words() -> None:
    index = name_index(["flask", "acme/requests", "pypi-pip", "click", "socket.io", "other/flask"])
    assert named_repositories("how does Flask register blueprints", index) == {"flask", "other/flask"}
    assert named_repositories("cookies between requests", index) == {"acme/requests"}  # a name can be a word
    assert named_repositories("flasks, clicked, pip-tools, pypi-pip2, io", index) == set()
    assert named_repositories("vendored in pypi-pip.", index) == {"pypi-pip"}
    assert named_repositories("rooms in socket.io; flask.app", index) == {"socket.io", "flask", "other/flask"}
