"""The reader pool: read-only facades lent one per thread, each query on one committed state of the
index, while a writer re-indexes; no query ever sees half of a re-index."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from knowcode import engine as engine_module
from knowcode.engine import KnowCode
from knowcode.indexing.indexer import CONTENT_GENERATION_KEY
from knowcode.readers import ReaderPool, auto_readers
from knowcode.storage.lock import writer_lock
from knowcode.storage.store import DATABASE_NAME
from tests.conftest import SAMPLE_REPO, write_tree

READERS = 3
REINDEXES = 12
WAIT_SECONDS = 60.0  # only a bound on a hang, never a speed check


def _generation(root: Path, number: int) -> None:
    """Two files that always change together: a query that read half of a re-index would see one
    function of generation N beside the other of N-1 (or miss one)."""
    write_tree(root, {"pkg/alpha_side.py": f"def alpha_marker_gen{number}(x):\n    return x + {number}\n",
                      "pkg/beta_side.py": f"def beta_marker_gen{number}(y):\n    return y * {number}\n"})


@pytest.fixture
def engine(tmp_path: Path) -> KnowCode:
    root = write_tree(tmp_path / "repo", SAMPLE_REPO)
    _generation(root, 0)
    facade = KnowCode.from_path(root, store=tmp_path / "store")
    facade.index()
    return facade


def _markers(reader: KnowCode) -> list[str]:
    return [hit.name for hit in reader.search("alpha marker beta marker", limit=20)
            if "_marker_gen" in hit.name]


def test_concurrent_readers_never_see_half_a_reindex(engine: KnowCode) -> None:
    pool = ReaderPool(engine, READERS)
    stop = threading.Event()
    seen: list[list[str]] = []
    failures: list[str] = []
    answered = threading.Semaphore(0)

    def query_loop() -> None:
        while not stop.is_set():
            try:
                with pool.borrow() as reader:
                    names = _markers(reader)
                    stamp = reader.indexed_at()
                    again = _markers(reader)  # the same snapshot: the same state, whatever committed
                    if reader.indexed_at() != stamp:
                        failures.append("the snapshot's index moved under a query")
                seen.append(sorted(names))
                if names != again:
                    failures.append(f"one snapshot, two answers: {names} then {again}")
            except Exception as err:
                failures.append(repr(err))
            answered.release()

    threads = [threading.Thread(target=query_loop, name=f"knowcode-test-reader-{i}") for i in range(READERS)]
    for thread in threads:
        thread.start()
    try:
        for number in range(1, REINDEXES + 1):
            assert answered.acquire(timeout=WAIT_SECONDS)  # queries run between the re-indexes too
            _generation(engine.root, number)
            report = engine.index()
            assert sorted(report.changed) == ["pkg/alpha_side.py", "pkg/beta_side.py"]
        # A query answered just after the last run may have started before it: wait for one that saw it.
        last, deadline = f"alpha_marker_gen{REINDEXES}", time.monotonic() + WAIT_SECONDS
        while not any(names and names[0] == last for names in list(seen)):
            assert time.monotonic() < deadline, "no reader followed the writer to its last state"
            assert answered.acquire(timeout=WAIT_SECONDS)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=WAIT_SECONDS)
        pool.close()
    assert not failures, failures[:3]
    assert seen
    for names in seen:  # both functions, of one generation
        assert len(names) == 2, names
        alpha, beta = names
        assert alpha.startswith("alpha_marker_gen") and beta.startswith("beta_marker_gen"), names
        assert alpha.removeprefix("alpha_marker_gen") == beta.removeprefix("beta_marker_gen"), names
    generations = {int(names[0].removeprefix("alpha_marker_gen")) for names in seen}
    assert max(generations) == REINDEXES


def test_a_reader_follows_the_writer_and_the_pool_shares_one_search_index(engine: KnowCode) -> None:
    pool = ReaderPool(engine, 2)
    with pool.borrow() as first, pool.borrow() as second:
        assert first is not second and first.read_only and not engine.read_only
        assert first.orchestrator().index is second.orchestrator().index  # one copy per process
        assert first.search("alpha_marker_gen0")[0].name == "alpha_marker_gen0"
    _generation(engine.root, 7)
    engine.index()
    with pool.borrow() as reader:
        assert reader in (first, second)  # kept, not made again
        assert reader.search("alpha_marker_gen7")[0].name == "alpha_marker_gen7"
    pool.close()


def test_a_reader_never_indexes(engine: KnowCode) -> None:
    reader = engine.reader()
    write_tree(engine.root, {"pkg/new_file.py": "def unseen_function():\n    return 1\n"})
    with reader.snapshot():
        assert not any(hit.name == "unseen_function" for hit in reader.search("unseen_function"))
        assert reader.stats().files == len(SAMPLE_REPO) + 2
    reader.close()


def test_snapshot_needs_a_reader(engine: KnowCode) -> None:
    with pytest.raises(ValueError, match="read-only facade"), engine.snapshot():
        pass


def test_pool_lends_at_most_its_size_and_waits_for_a_free_reader(engine: KnowCode) -> None:
    pool = ReaderPool(engine, 1)
    borrowed = threading.Event()
    order: list[str] = []

    def second_borrower() -> None:
        borrowed.wait(WAIT_SECONDS)
        with pool.borrow():
            order.append("second")

    thread = threading.Thread(target=second_borrower)
    thread.start()
    with pool.borrow():
        borrowed.set()
        thread.join(timeout=0.2)  # it cannot get the only reader meanwhile
        order.append("first")
    thread.join(timeout=WAIT_SECONDS)
    assert order == ["first", "second"]
    pool.close()
    with pytest.raises(ValueError, match="at least one"):
        ReaderPool(engine, 0)


def test_auto_readers() -> None:
    assert auto_readers(3) == 3
    assert auto_readers(0) >= 2


def _set_content_generation(engine: KnowCode, value: str) -> str:
    """Move the store's content generation, as a run between its two commits leaves it; the old value."""
    connection = sqlite3.connect(engine.store_dir / DATABASE_NAME)
    try:
        (old,) = connection.execute("SELECT value FROM meta WHERE key = ?",
                                    (CONTENT_GENERATION_KEY,)).fetchone()
        with connection:
            connection.execute("UPDATE meta SET value = ? WHERE key = ?", (value, CONTENT_GENERATION_KEY))
        return str(old)
    finally:
        connection.close()


def test_a_reader_waits_for_a_running_writer_to_publish_its_search_index(
        engine: KnowCode, monkeypatch: pytest.MonkeyPatch) -> None:
    published = _set_content_generation(engine, "999")  # rows committed, search index not yet
    naps: list[float] = []

    def publish_while_waiting(seconds: float) -> None:
        naps.append(seconds)
        _set_content_generation(engine, published)  # the run publishes its search index

    monkeypatch.setattr(engine_module.time, "sleep", publish_while_waiting)
    pool = ReaderPool(engine, 1)
    with writer_lock(engine.store_dir), pool.borrow() as reader:  # a run holds the store
        assert reader.search("alpha_marker_gen0")[0].name == "alpha_marker_gen0"
    assert naps  # it waited for the publication instead of reading the state in between
    pool.close()


def test_a_reader_does_not_wait_for_a_run_that_died_between_its_commits(
        engine: KnowCode, monkeypatch: pytest.MonkeyPatch) -> None:
    _set_content_generation(engine, "999")  # and no run holds the store
    monkeypatch.setattr(engine_module.time, "sleep", lambda _: pytest.fail("waited for a dead run"))
    pool = ReaderPool(engine, 1)
    with pool.borrow() as reader:
        assert reader.search("alpha_marker_gen0")[0].name == "alpha_marker_gen0"
    pool.close()
