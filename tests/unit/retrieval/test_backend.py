"""The search-backend boundary: syncing a repository's chunks, backend legs, and falling back."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

import knowcode
from knowcode.config import AppConfig, BackendConfig
from knowcode.retrieval import backend as backend_module
from knowcode.retrieval.backend import BackendLegs, git_commit
from knowcode.retrieval.search_index import load_search_index
from knowcode.storage.milvus_backend import BackendError, BackendHit
from knowcode.storage.store import Store
from tests._milvus import release_lite_servers  # noqa: F401 - autouse: stops the test's servers
from tests.conftest import SAMPLE_REPO, write_tree

QUERIES = ("engine run", "slugify text", "render the app", "helper value", "install guide", "start")


def _milvus(db: Path, repository: str = "") -> AppConfig:
    return AppConfig(backend=BackendConfig(kind="milvus", uri=str(db), collection="chunks",
                                           repository=repository))


@pytest.fixture
def two_repos(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    first = write_tree(tmp_path / "first", SAMPLE_REPO)
    second = write_tree(tmp_path / "second", {
        "app/server.py": "def serve(port):\n    return listen(port)\n\n\ndef listen(port):\n"
                         "    return port\n",
        "app/engine.py": "class Engine:\n    def run(self, job):\n        return job()\n",
        "pkg/util.py": SAMPLE_REPO["pkg/util.py"],  # the same file in both: the same chunk ids
    })
    yield first, second, tmp_path / "milvus.db"


def test_milvus_legs_rank_as_the_embedded_index_does(two_repos: tuple[Path, Path, Path],
                                                     tmp_path: Path) -> None:
    first, second, db = two_repos
    embedded = knowcode.open(first, store=tmp_path / "s-embedded")
    on_milvus = knowcode.open(first, store=tmp_path / "s-first", config=_milvus(db))
    for query in QUERIES:  # one repository in the collection: the same statistics, the same ranking
        expected = [(h.path, h.start_line, h.score) for h in embedded.search(query, limit=10)]
        got = on_milvus.search(query, limit=10)
        assert got.mode.value == "hybrid" and not got.errors
        assert [(h.path, h.start_line) for h in got] == [(p, s) for p, s, _ in expected], query
        assert [h.score for h in got] == pytest.approx([s for _, _, s in expected], rel=1e-6)
    other = knowcode.open(second, store=tmp_path / "s-second", config=_milvus(db))
    other.index()
    # Another repository in the collection changes the statistics, never the filter: first's hits only.
    assert {h.path for h in on_milvus.search("engine run util helper", limit=20)} <= set(SAMPLE_REPO)
    embedded.close(), on_milvus.close(), other.close()


def test_sync_writes_only_what_changed_and_leaves_other_repositories_alone(
        two_repos: tuple[Path, Path, Path], tmp_path: Path) -> None:
    first, second, db = two_repos
    a = knowcode.open(first, store=tmp_path / "s-first", config=_milvus(db))
    b = knowcode.open(second, store=tmp_path / "s-second", config=_milvus(db))
    a.index(), b.index()
    assert a._backend is not None and b._backend is not None
    total_first = a._backend.last_sync.inserted  # type: ignore[union-attr]
    chunks = a._backend._chunks
    assert chunks is not None
    before_second = chunks.chunk_ids("second")
    assert chunks.chunk_ids("first") and before_second
    (first / "pkg" / "util.py").write_text("def helper(value):\n    return value * 2\n")
    (first / "notes.txt").unlink()
    report = a.index()
    sync = a._backend.last_sync
    assert sync is not None and report.changed == ("pkg/util.py",) and report.deleted == ("notes.txt",)
    assert 0 < sync.inserted < total_first and sync.deleted >= 2
    store = Store.open(tmp_path / "s-first", create=False)
    assert chunks.chunk_ids("first") == {c.id for c in store.chunks()}
    store.close()
    assert chunks.chunk_ids("second") == before_second  # re-indexing first never touched second
    assert a.index() and a._backend.last_sync is not None and a._backend.last_sync.inserted == 0
    record = chunks.repositories()["first"]
    assert (record.root, record.store) == (str(first), str(tmp_path / "s-first"))
    a.close(), b.close()


def test_a_down_backend_answers_from_the_embedded_index_with_one_line(sample_repo: Path,
                                                                      tmp_path: Path) -> None:
    config = dataclasses.replace(_milvus(tmp_path / "x.db"), backend=BackendConfig(
        kind="milvus", uri="http://127.0.0.1:9", timeout_seconds=1.0))
    kc = knowcode.open(sample_repo, store=tmp_path / "store", config=config)
    hits = kc.search("engine run")
    assert hits and hits.mode.value == "hybrid"
    assert len(hits.errors) == 2 and all("\n" not in e for e in hits.errors)
    assert "not updated" in hits.errors[0] and "127.0.0.1:9" in hits.errors[0]
    assert "answering from the embedded index" in hits.errors[1]
    expected = knowcode.open(sample_repo, store=tmp_path / "store").search("engine run")
    assert [h.chunk_id for h in hits] == [h.chunk_id for h in expected]
    kc.close()


class _Failing:
    """A backend whose searches fail (down, or slower than its timeout)."""

    calls = 0

    def search_sparse(self, tokens: Sequence[str], limit: int,
                      repositories: Sequence[str] | None = None) -> list[BackendHit]:
        self.calls += 1
        raise BackendError("Milvus could not search the sparse leg (chunks): deadline exceeded")

    search_dense = search_sparse


def test_a_failing_leg_falls_back_records_once_and_rests_the_backend(sample_repo: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    kc = knowcode.open(sample_repo, store=tmp_path / "store")
    kc.index()
    store = Store.open(tmp_path / "store", create=False)
    embedded = load_search_index(store, tmp_path / "store")
    failing = _Failing()
    legs = BackendLegs(failing, ["repo"], embedded)  # type: ignore[arg-type]
    assert legs.sparse("engine run", 5) == embedded.sparse.search("engine run", 5)
    assert legs.sparse("engine run", 5) == embedded.sparse.search("engine run", 5)
    assert failing.calls == 1  # resting: the second query did not wait for the backend
    assert legs.errors == ["search backend unavailable, answering from the embedded index: "
                           "Milvus could not search the sparse leg (chunks): deadline exceeded"]
    monkeypatch.setattr(backend_module, "BACKEND_RETRY_SECONDS", 0.0)
    legs._down_until = 0.0
    legs.sparse("engine", 5)
    assert failing.calls == 2
    with pytest.raises(BackendError, match="no embedded index"):
        BackendLegs(failing, None, None).sparse("engine", 5)  # type: ignore[arg-type]
    store.close(), kc.close()


def test_git_commit_reads_head_through_a_ref(tmp_path: Path) -> None:
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text("0123abcd\n")
    assert git_commit(tmp_path) == "0123abcd"
    (git / "refs" / "heads" / "main").unlink()
    (git / "packed-refs").write_text("# pack-refs\nfeedbeef refs/heads/main\n")
    assert git_commit(tmp_path) == "feedbeef"
    assert git_commit(tmp_path / "nothing") == ""


# A reference hit this close to the embedded index's 10th score (relative) counts as one of its top 10: the
# two backends' scores differ by a few percent (the docstring below), so an order inside 0.1% is a coin
# toss, not a ranking (on "tokenize identifiers camelCase" the 10th and 11th differ by 0.01%).
NEAR_TIE_REL = 1e-3

SOURCE_QUERIES = ("how are chunks cut from a file", "reciprocal rank fusion", "BM25 index save and load",
                  "SearchHit", "which files changed since the last index", "rate limiter for models",
                  "parse a config file", "exact match on qualified names", "token budget per entity",
                  "tokenize identifiers camelCase")


def test_on_a_real_tree_the_top_10_overlaps_the_embedded_top_10(tmp_path: Path) -> None:
    """KnowCode's own source (~100 files, ~900 chunks). One chunk, the shipped model's tokenizer.json
    (one 440 KB line), has 170 KB of tokens: Milvus keeps the first 64 KiB (its VARCHAR limit), so the
    average length BM25 normalises by is ~15% shorter than the embedded index's and scores shift by a
    few percent; rankings still overlap >= 0.9 in the top 10 on average (the issue's bar; a hit within
    NEAR_TIE_REL of the embedded 10th score counts as in its top 10). A query can
    lose more where a near tie at the edge of the 50 reranked candidates is lifted by the signals into
    the top 10 (this tree is the package's own source, so which near ties exist changes with every
    commit). Without such a chunk they are equal (test_milvus_legs_rank_as_the_embedded_index_does)."""
    source = Path(__file__).resolve().parents[3] / "src" / "knowcode"
    embedded = knowcode.open(source, store=tmp_path / "s-embedded")
    on_milvus = knowcode.open(source, store=tmp_path / "s-milvus", config=_milvus(tmp_path / "m.db"))
    on_milvus.index()
    assert on_milvus._backend is not None and on_milvus._backend.last_sync is not None
    assert on_milvus._backend.last_sync.truncated == 1
    overlaps = []
    for query in SOURCE_QUERIES:
        reference = embedded.search(query, limit=20)
        tenth = reference[min(10, len(reference)) - 1].score
        expected = {h.chunk_id for h in reference[:10]}
        near_ties = {h.chunk_id for h in reference[10:] if h.score >= tenth * (1 - NEAR_TIE_REL)}
        got = on_milvus.search(query, limit=10)
        assert not got.errors, got.errors
        overlaps.append(min(len(expected), len((expected | near_ties) & {h.chunk_id for h in got}))
                        / len(expected))
    assert min(overlaps) >= 0.7 and sum(overlaps) / len(overlaps) >= 0.9, overlaps
    embedded.close(), on_milvus.close()
