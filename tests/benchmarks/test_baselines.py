"""The plain BM25 baselines: line chunking, incremental re-tokenizing, ranking."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import baselines
import pytest
from baselines import LINE_CHUNK_CHARS, CachedBm25, Unit, line_chunks

import knowcode
from knowcode import AppConfig, KnowCode
from tests.conftest import write_tree


def spans(units: list[Unit]) -> list[tuple[int, int]]:
    return [(u.start_line, u.end_line) for u in units]


def test_the_chunk_size_is_the_documented_one() -> None:
    assert LINE_CHUNK_CHARS == 1500


def test_lines_are_packed_until_the_limit() -> None:
    text = "aaaa\n" * 7  # 5 characters per line with its newline
    assert spans(line_chunks("f.py", text, max_chars=10)) == [(1, 2), (3, 4), (5, 6), (7, 7)]
    assert spans(line_chunks("f.py", text, max_chars=14)) == [(1, 2), (3, 4), (5, 6), (7, 7)]
    assert spans(line_chunks("f.py", text, max_chars=15)) == [(1, 3), (4, 6), (7, 7)]
    assert all(len(u.text) <= 15 for u in line_chunks("f.py", text, max_chars=15))


def test_a_long_line_is_a_chunk_of_its_own() -> None:
    text = "a\n" + "x" * 40 + "\nb\nc\n"
    assert spans(line_chunks("f.py", text, max_chars=10)) == [(1, 1), (2, 2), (3, 4)]


def test_text_without_a_final_newline_and_blank_chunks() -> None:
    units = line_chunks("f.py", "one\ntwo", max_chars=1500)
    assert spans(units) == [(1, 2)] and units[0].text == "one\ntwo" and units[0].path == "f.py"
    assert line_chunks("f.py", "") == []
    assert spans(line_chunks("f.py", "\n" * 6 + "x\n", max_chars=3)) == [(7, 7)]  # blank chunks dropped


def test_line_chunks_cover_every_line_once() -> None:
    text = "".join(f"line {i} {'y' * (i % 37)}\n" for i in range(1, 400))
    units = line_chunks("f.py", text)
    assert units[0].start_line == 1 and units[-1].end_line == 399
    assert all(a.end_line + 1 == b.start_line for a, b in itertools.pairwise(units))
    assert "".join(u.text for u in units) == text
    assert all(len(u.text) <= LINE_CHUNK_CHARS for u in units)


@pytest.fixture
def indexed(tmp_path: Path) -> KnowCode:
    root = write_tree(tmp_path / "repo", {
        "pkg/util.py": "def slugify(text):\n    return text.lower()\n",
        "pkg/core.py": "class Engine:\n    def run(self):\n        return 1\n",
        "README.md": "# Project\n\nnothing about that word\n",
    })
    kc = knowcode.open(root, store=tmp_path / "store", config=AppConfig())
    kc.index()
    return kc


def test_bm25_lines_ranks_the_matching_file_and_skips_unmatched(indexed: KnowCode) -> None:
    method = baselines.bm25_lines()
    found = method(indexed, "slugify the text", 10)
    assert found and found[0].path == "pkg/util.py" and (found[0].start_line, found[0].end_line) == (1, 2)
    assert method(indexed, "zzzunknownword", 10) == []


def test_bm25_chunks_uses_knowcodes_chunks(indexed: KnowCode) -> None:
    found = baselines.bm25_chunks()(indexed, "Engine run", 10)
    assert found and found[0].path == "pkg/core.py"


def test_only_changed_files_are_cut_again(indexed: KnowCode) -> None:
    cut: list[list[str]] = []

    def units_of(kc: KnowCode, paths: list[str]) -> dict[str, list[Unit]]:
        cut.append(list(paths))
        return baselines.file_line_units(kc, paths)

    method = CachedBm25(units_of)
    method.prepare(indexed)
    assert cut == [["README.md", "pkg/core.py", "pkg/util.py"]]
    method.prepare(indexed)
    assert len(cut) == 1  # nothing changed: no work
    util = indexed.root / "pkg/util.py"
    util.write_text("def shout(text):\n    return text.upper()\n", encoding="utf-8")
    os.utime(util, (1, 1))
    (indexed.root / "README.md").unlink()
    indexed.index()
    method.prepare(indexed)
    assert cut[1] == ["pkg/util.py"]
    assert method(indexed, "slugify", 10) == []
    assert [h.path for h in method(indexed, "shout upper", 10)] == ["pkg/util.py"]
    assert method(indexed, "Project", 10) == []  # the deleted file is gone from the index
    method.release(indexed)
    assert method(indexed, "shout", 10)  # a released index is rebuilt on the next query
