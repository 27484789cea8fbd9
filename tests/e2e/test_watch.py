"""The live index: `serve --watch` re-indexes edits, additions, deletions and renames while a client
keeps querying; no query fails, each change shows within a bounded time, and the store stays consistent."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")
pytest.importorskip("uvicorn", reason="the server extra is not installed")
pytest.importorskip("watchfiles", reason="watchfiles (server extra) is not installed")
import httpx

from knowcode.api import API_PREFIX, INDEXED_AT_HEADER
from knowcode.engine import KnowCode
from knowcode.storage.store import DATABASE_NAME
from tests.conftest import write_tree
from tests.e2e.http_server import serve

VISIBLE_WITHIN_SECONDS = 5.0  # the goal is about a second; this bound only keeps a slow CI from flaking
POLL_SECONDS = 0.05
BACKGROUND_QUERIES = ("alpha_handler", "beta_worker", "gamma_tool", "brand_new_feature")

REPO = {
    "pkg/__init__.py": "",
    "pkg/alpha.py": "def alpha_handler(x):\n    return x + 1\n",
    "pkg/beta.py": "def beta_worker(y):\n    return y * 2\n",
    "pkg/gamma.py": "def gamma_tool(z):\n    return z - 3\n",
}


def _hits(client: httpx.Client, query: str) -> list[dict[str, Any]]:
    response = client.get(f"{API_PREFIX}/search", params={"q": query, "limit": 20})
    assert response.status_code == 200, response.text
    assert response.headers[INDEXED_AT_HEADER]
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


def _wait_until(client: httpx.Client, query: str, condition: Callable[[list[dict[str, Any]]], bool]) -> float:
    """Poll the search until `condition` holds; the seconds it took."""
    started = time.monotonic()
    while True:
        if condition(_hits(client, query)):
            return time.monotonic() - started
        if time.monotonic() - started > VISIBLE_WITHIN_SECONDS:
            pytest.fail(f"the change did not show in {VISIBLE_WITHIN_SECONDS}s (query {query!r})")
        time.sleep(POLL_SECONDS)


def _named(name: str) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda hits: any(hit["name"] == name for hit in hits)


def test_serve_watch_reindexes_changes_while_queries_go_on(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "repo", REPO)
    store = tmp_path / "store"
    engine = KnowCode.from_path(root, store=store)
    engine.index()
    statuses: list[int] = []
    failures: list[str] = []
    stop = threading.Event()
    delays: dict[str, float] = {}
    with serve(engine, watch=True) as live:
        def query_loop() -> None:
            with httpx.Client(base_url=live.base_url, timeout=30) as background:
                while not stop.is_set():
                    for query in BACKGROUND_QUERIES:
                        try:
                            response = background.get(f"{API_PREFIX}/search", params={"q": query})
                            statuses.append(response.status_code)
                            if response.status_code != 200:
                                failures.append(f"{response.status_code}: {response.text}")
                        except httpx.HTTPError as err:
                            failures.append(repr(err))

        querier = threading.Thread(target=query_loop, name="knowcode-test-querier", daemon=True)
        querier.start()
        try:
            with httpx.Client(base_url=live.base_url, timeout=30) as client:
                assert _named("alpha_handler")(_hits(client, "alpha_handler"))

                (root / "pkg/alpha.py").write_text("def omega_handler_renamed(x):\n    return x + 10\n",
                                                   encoding="utf-8")
                delays["edit"] = _wait_until(client, "omega_handler_renamed", _named("omega_handler_renamed"))
                assert not _named("alpha_handler")(_hits(client, "alpha_handler"))

                write_tree(root, {"pkg/delta.py": "def brand_new_feature():\n    return 42\n"})
                delays["add"] = _wait_until(client, "brand_new_feature", _named("brand_new_feature"))

                (root / "pkg/beta.py").unlink()
                delays["delete"] = _wait_until(client, "beta_worker",
                                               lambda hits: not _named("beta_worker")(hits))

                (root / "pkg/gamma.py").rename(root / "pkg/gamma_moved.py")

                def moved(hits: list[dict[str, Any]]) -> bool:
                    paths = {hit["path"] for hit in hits if hit["name"] == "gamma_tool"}
                    return paths == {"pkg/gamma_moved.py"}

                delays["rename"] = _wait_until(client, "gamma_tool", moved)
        finally:
            stop.set()
            querier.join(timeout=30)
    engine.close()
    print(f"change -> visible delays (s): {', '.join(f'{k} {v:.2f}' for k, v in delays.items())}")
    assert statuses and not failures, failures[:3]
    assert all(status == 200 for status in statuses)
    _assert_store_consistent(store / DATABASE_NAME)


def _assert_store_consistent(database: Path) -> None:
    """No duplicate or orphan chunks: ids unique, every chunk's entity and file exist."""
    connection = sqlite3.connect(database)
    try:
        ids = [row[0] for row in connection.execute("SELECT id FROM chunks")]
        assert ids and len(ids) == len(set(ids))
        orphans = connection.execute(
            "SELECT c.id FROM chunks c LEFT JOIN entities e ON e.id = c.entity_id WHERE e.id IS NULL"
        ).fetchall()
        assert not orphans
        fileless = connection.execute(
            "SELECT c.id FROM chunks c LEFT JOIN files f ON f.path = c.path WHERE f.path IS NULL").fetchall()
        assert not fileless
        paths = {row[0] for row in connection.execute("SELECT path FROM files")}
        assert "pkg/beta.py" not in paths and "pkg/gamma.py" not in paths
        assert {"pkg/gamma_moved.py", "pkg/delta.py", "pkg/alpha.py"} <= paths
    finally:
        connection.close()


def test_the_watcher_skips_what_the_scanner_skips(tmp_path: Path) -> None:
    from knowcode.watcher import Watcher

    root = write_tree(tmp_path / "repo", {**REPO, ".gitignore": "ignored/\n*.log\n",
                                          "ignored/a.py": "", "venv2/pyvenv.cfg": ""})
    store = root / "custom-store"
    store.mkdir()
    watcher = Watcher(root, store, lambda: None)
    assert watcher.relevant(root / "pkg/alpha.py") and watcher.relevant(root / "pkg/gone.py")
    assert watcher.relevant(root / ".gitignore")  # the rules changed
    for skipped in ("ignored/a.py", "app.log", "node_modules/x.js", ".git/index", "custom-store/index.db",
                    ".env", "venv2/lib/x.py", "yarn.lock"):
        assert not watcher.relevant(root / skipped), skipped
    assert not watcher.relevant(tmp_path / "elsewhere.py")


def test_mcp_watch_reindexes_in_the_background_and_stamps_results(tmp_path: Path) -> None:
    import json

    from knowcode.mcp_server import Repositories

    root = write_tree(tmp_path / "repo", REPO)
    repos = Repositories.open([root], tmp_path / "store")
    repos.start_watching()
    try:
        def search(query: str) -> dict[str, Any]:
            document: dict[str, Any] = json.loads(repos.answer(
                None, lambda kc: {"hits": [hit.name for hit in kc.search(query)]}))
            return document

        first = search("alpha_handler")
        assert "alpha_handler" in first["hits"] and first["pending_changes"] == 0 and first["indexed_at"]
        (root / "pkg/delta.py").write_text("def brand_new_feature():\n    return 42\n", encoding="utf-8")
        started = time.monotonic()
        while True:  # the new name shows, stamped with the new run's time
            later = search("brand_new_feature")
            if "brand_new_feature" in later["hits"] and later["indexed_at"] > first["indexed_at"]:
                break
            assert time.monotonic() - started < VISIBLE_WITHIN_SECONDS, "the change did not show"
            time.sleep(POLL_SECONDS)
        status = json.loads(repos.status(None))
        assert status["watching"] is True and status["last_update"]["added"] == 1
    finally:
        repos.stop_watching()
        for item in repos.items:
            item.engine.close()


def _wait_for(condition: Callable[[], bool]) -> None:
    started = time.monotonic()  # only a bound on a hang, never a speed check
    while not condition():
        assert time.monotonic() - started < VISIBLE_WITHIN_SECONDS, "timed out waiting"
        time.sleep(0.005)


def test_the_tracker_records_changed_paths_until_taken(tmp_path: Path) -> None:
    from knowcode.watcher import Watcher

    root = write_tree(tmp_path / "repo", {**REPO, ".gitignore": "*.log\n"})
    tracker = Watcher(root, tmp_path / "store", None)
    tracker.start()
    try:
        assert tracker.wait_ready(VISIBLE_WITHIN_SECONDS) and tracker.healthy
        (root / "pkg/alpha.py").write_text("def alpha_handler(x):\n    return x + 2\n", encoding="utf-8")
        (root / "debug.log").write_text("ignored\n", encoding="utf-8")
        _wait_for(lambda: tracker.pending > 0)
        time.sleep(0.1)  # the ignored file had its chance to be (wrongly) recorded
        taken = tracker.take()
        assert taken == {"pkg/alpha.py"} and tracker.pending == 0 and tracker.take() == set()
        tracker.restore(taken)
        assert tracker.pending == 1
    finally:
        tracker.stop()
    assert not tracker.healthy


def _mcp_search(repos: Any, query: str) -> dict[str, Any]:
    import json

    document: dict[str, Any] = json.loads(repos.answer(
        None, lambda kc: {"hits": [hit.name for hit in kc.search(query)]}))
    return document


def test_mcp_without_watch_walks_the_tree_only_after_a_change(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from knowcode.mcp_server import Repositories

    root = write_tree(tmp_path / "repo", REPO)
    repos = Repositories.open([root], tmp_path / "store")
    runs: list[str] = []
    index = KnowCode.index

    def counted(self: KnowCode, *args: Any, **kwargs: Any) -> Any:
        runs.append("index")  # every run walks the whole tree
        return index(self, *args, **kwargs)

    monkeypatch.setattr(KnowCode, "index", counted)
    monkeypatch.setattr(KnowCode, "changed_since_index", lambda self: pytest.fail("walked the tree"))
    repos.start_tracking()
    try:
        first = _mcp_search(repos, "alpha_handler")
        assert "alpha_handler" in first["hits"] and first["pending_changes"] == 0 and runs == ["index"]
        for _ in range(5):  # nothing changed: no walk, no run
            assert _mcp_search(repos, "alpha_handler")["pending_changes"] == 0
        assert runs == ["index"]

        (root / "pkg/alpha.py").write_text("def omega_handler(x):\n    return x\n", encoding="utf-8")
        tracker = repos.items[0].tracker
        assert tracker is not None
        _wait_for(lambda: tracker.pending > 0)  # milliseconds: the tracker's batch
        later = _mcp_search(repos, "omega_handler")  # the next call re-indexes, then answers
        assert "omega_handler" in later["hits"] and later["pending_changes"] == 0
        assert later["indexed_at"] > first["indexed_at"] and runs == ["index", "index"]
        monkeypatch.setattr(KnowCode, "changed_since_index", lambda self: ())
        status = json.loads(repos.status(None))
        assert status["watching"] is False and status["last_update"]["changed"] == 1
    finally:
        repos.stop_watching()
        for item in repos.items:
            item.engine.close()


def test_mcp_without_a_tracker_walks_at_most_every_recheck_interval(tmp_path: Path) -> None:
    from knowcode.config import AppConfig, ServerConfig
    from knowcode.mcp_server import Repositories

    root = write_tree(tmp_path / "repo", REPO)
    for interval, sees_the_edit in ((3600.0, False), (0.0, True)):
        config = AppConfig(server=ServerConfig(recheck_interval_seconds=interval))
        repos = Repositories.open([root], tmp_path / f"store-{interval}", config)  # no start_tracking()
        try:
            assert "alpha_handler" in _mcp_search(repos, "alpha_handler")["hits"]
            name = f"edited_within_{int(interval)}"
            (root / "pkg/alpha.py").write_text(f"def {name}(x):\n    return x\n", encoding="utf-8")
            answer = _mcp_search(repos, name)
            # within the interval the index is answered as it is (as documented), never walked
            assert (name in answer["hits"]) is sees_the_edit and answer["pending_changes"] == 0
        finally:
            repos.stop_watching()
            for item in repos.items:
                item.engine.close()
        write_tree(root, REPO)
