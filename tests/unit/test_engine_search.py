"""`KnowCode.search`: the public search API on a real tiny repository."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import knowcode
from knowcode.engine import KnowCode
from knowcode.models import RetrievalMode, SearchHit, SearchResults
from tests.conftest import write_tree


@pytest.fixture
def kc(sample_repo: Path, tmp_path: Path) -> Iterator[KnowCode]:
    engine = knowcode.open(sample_repo, store=tmp_path / "store")
    yield engine
    engine.close()


def edit(path: Path, text: str) -> None:
    """Rewrite a file and move its mtime, so the indexer sees the change whatever the clock's resolution."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    later = max(before + 10**9, path.stat().st_mtime_ns)
    os.utime(path, ns=(later, later))


def test_search_returns_a_list_of_hits_with_mode_and_errors(kc: KnowCode) -> None:
    results = kc.search("helper")
    assert isinstance(results, SearchResults)
    assert isinstance(results, list)
    assert results and all(isinstance(hit, SearchHit) for hit in results)
    assert results.mode is RetrievalMode.HYBRID
    assert results.errors == ()
    assert results[0].qualified_name == "pkg.util.helper"
    assert results[0].path == "pkg/util.py"


@pytest.mark.parametrize("query", ["helper", "render the view", '"Engine"', "Engine.run", "install guide"])
def test_hit_paths_are_relative_with_forward_slashes(kc: KnowCode, sample_repo: Path, query: str) -> None:
    results = kc.search(query, limit=10)
    assert results
    for hit in results:
        assert not Path(hit.path).is_absolute()
        assert "\\" not in hit.path
        assert not hit.path.startswith(("./", "/"))
        assert (sample_repo / hit.path).is_file()


@pytest.mark.parametrize("query", ["helper", "render the view", '"Engine"', "slugify text", "install guide"])
def test_hit_lines_are_one_based_inclusive_and_exist(kc: KnowCode, sample_repo: Path, query: str) -> None:
    for hit in kc.search(query, limit=10):
        lines = (sample_repo / hit.path).read_text(encoding="utf-8").splitlines()
        assert 1 <= hit.start_line <= hit.end_line <= len(lines)
        assert hit.text == "\n".join(lines[hit.start_line - 1:hit.end_line])  # the span is the hit's code
        assert lines[hit.start_line - 1].strip() and lines[hit.end_line - 1].strip()  # blank edges trimmed


def test_single_line_file_hit(kc: KnowCode) -> None:
    [hit] = [h for h in kc.search('"from .core import Engine"') if h.path == "pkg/__init__.py"]
    assert (hit.start_line, hit.end_line) == (1, 1)


def test_hits_are_unique_entities_within_the_limit(kc: KnowCode) -> None:
    for limit in (1, 2, 5, 50):
        results = kc.search("run", limit=limit)
        assert 1 <= len(results) <= limit
        ids = [hit.entity_id for hit in results]
        assert len(ids) == len(set(ids))
        assert "dependency" not in {hit.source for hit in results}  # search does not expand callees
        scores = [hit.score for hit in results]
        assert scores == sorted(scores, reverse=True)


def test_quoted_search_is_exact(kc: KnowCode) -> None:
    results = kc.search('"slugify"')
    assert results.mode is RetrievalMode.EXACT
    assert results[0].qualified_name == "pkg.util.slugify"
    assert {hit.source for hit in results} == {"exact"}


def test_no_match_is_an_empty_list_with_a_reason(kc: KnowCode) -> None:
    results = kc.search('"no_such_name_here"')
    assert results == []
    assert results.errors and "nothing matched" in results.errors[0]


@pytest.mark.parametrize("query", ["", " ", "\t\n"])
def test_blank_query_raises(kc: KnowCode, query: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        kc.search(query)


@pytest.mark.parametrize("limit", [0, -3, 1001, 5000])
def test_limit_out_of_range_raises(kc: KnowCode, tmp_path: Path, limit: int) -> None:
    with pytest.raises(ValueError, match="limit"):
        kc.search("helper", limit=limit)
    assert not (tmp_path / "store").exists()  # rejected before indexing


def test_limit_bounds_are_accepted(kc: KnowCode) -> None:
    assert len(kc.search("helper", limit=1)) == 1
    assert kc.search("helper", limit=1000)


def test_first_search_indexes_the_repository(kc: KnowCode, tmp_path: Path) -> None:
    assert not (tmp_path / "store").exists()
    assert kc.search("slugify")
    assert (tmp_path / "store").is_dir()


def test_edited_file_is_found_after_reindexing(kc: KnowCode, sample_repo: Path) -> None:
    assert all("zanzibar" not in hit.text for hit in kc.search("zanzibar_ledger"))
    edit(sample_repo / "pkg" / "util.py", (sample_repo / "pkg" / "util.py").read_text()
         + "\n\ndef zanzibar_ledger(entries):\n    return sorted(entries)\n")
    kc.index()
    results = kc.search("zanzibar_ledger")
    assert results[0].qualified_name == "pkg.util.zanzibar_ledger"
    assert "def zanzibar_ledger" in results[0].text
    exact = kc.search('"zanzibar_ledger"')
    assert exact[0].qualified_name == "pkg.util.zanzibar_ledger"


def test_new_file_is_found_and_deleted_file_is_gone_after_reindexing(kc: KnowCode, sample_repo: Path) -> None:
    assert kc.search('"slugify"')[0].path == "pkg/util.py"
    write_tree(sample_repo, {"lib/deep/tool.py": "def quagmire_tool():\n    return 42\n"})
    (sample_repo / "scripts" / "run.py").unlink()
    kc.index()
    [hit] = [h for h in kc.search('"quagmire_tool"') if h.name == "quagmire_tool"]
    assert (hit.path, hit.start_line, hit.end_line) == ("lib/deep/tool.py", 1, 2)
    assert all(h.path != "scripts/run.py" for h in kc.search("main shout", limit=50))


def test_another_facade_sees_the_same_index(kc: KnowCode, sample_repo: Path, tmp_path: Path) -> None:
    first = kc.search("helper")
    other = knowcode.open(sample_repo, store=tmp_path / "store")
    try:
        second = other.search("helper")
    finally:
        other.close()
    assert [(h.path, h.start_line, h.end_line, h.entity_id) for h in second] == \
        [(h.path, h.start_line, h.end_line, h.entity_id) for h in first]
