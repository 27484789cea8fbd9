"""Exact queries: what counts as quoted, and the order of matches (definitions, then literal text)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from knowcode.indexing import index_repository
from knowcode.retrieval.exact_query_engine import definition_chunks, exact_search, quoted_text
from knowcode.storage import Store
from tests.conftest import write_tree

# --- quoted_text ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "expected"), [
    ('"helper"', "helper"),
    ("'helper'", "helper"),
    ("`helper`", "helper"),
    ('"Engine.run"', "Engine.run"),
    ('"two words"', "two words"),
    ('"a"', "a"),  # one character inside is still a quoted query
    ('  "helper"  ', "helper"),  # whitespace around the quotes
    ('\t"helper"\n', "helper"),
    ('" helper "', "helper"),  # whitespace inside the quotes
    ('"say "hi""', 'say "hi"'),  # only the outer pair is stripped
    ("'it''s'", "it''s"),
])
def test_quoted_text_unwraps(query: str, expected: str) -> None:
    assert quoted_text(query) == expected


@pytest.mark.parametrize("query", [
    '""', "''", "``",  # empty quotes
    '" "', "'   '", '"\t"',  # only whitespace inside
    '"helper', "helper\"", "'helper", "`helper",  # unbalanced
    "\"helper'", "'helper\"", "`helper'",  # mismatched pair
    "helper", "Engine.run", "two words",  # not quoted
    'a "b" c',  # quotes inside, not around
    '"', "'", "",  # too short
    "  ", "«helper»",  # blank; not one of the three quote characters
])
def test_quoted_text_rejects(query: str) -> None:
    assert quoted_text(query) is None


# --- exact_search -----------------------------------------------------------------------------------


def _method(name: str, marker: str = "") -> str:
    """A method of ~400 characters: large enough to get a chunk of its own."""
    body = "".join(f"        total = total + {i}  # step {i} of {name}\n" for i in range(8))
    return f"    def {name}(self):\n        total = 0{marker}\n{body}        return total\n\n"


BIG_PY = ('class Big:\n    """A big class."""\n\n'
          + _method("first") + _method("second") + _method("third") + _method("fourth", "  # MARKER_TEXT"))

EXACT_REPO = {
    "z.py": "def f():\n    return 'z'\n",  # z.f
    "a/z.py": "def f():\n    return 'az'\n",  # a.z.f: sorts before z.py by path
    "big.py": BIG_PY,
    "notes.txt": "call z.f to start\n\nMARKER_TEXT and MARKER_TEXT again\n",
    "util.py": "def helper(value):\n    return value\n",
    "use.py": "from util import helper\n\n\ndef main():\n    return helper(1)\n",
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    root = write_tree(tmp_path / "repo", EXACT_REPO)
    opened = Store.open(tmp_path / "store")
    try:
        index_repository(root, opened, max_file_bytes=1 << 20, workers=1)
        yield opened
    finally:
        opened.close()


def _summary(store: Store, text: str, limit: int = 20) -> list[tuple[str, int, str | None]]:
    return [(chunk.path, chunk.start_line, entity.qualified_name if entity else None)
            for chunk, entity in exact_search(store, text, limit)]


def test_definition_comes_before_literal_text(store: Store) -> None:
    found = exact_search(store, "helper", 10)
    chunk, entity = found[0]
    assert entity is not None
    assert (entity.qualified_name, entity.kind.value) == ("util.helper", "function")
    assert chunk.path == "util.py"
    assert chunk.start_line <= entity.start_line <= chunk.end_line
    assert [(c.path, e) for c, e in found[1:]] == [("use.py", None)]  # the call site, as literal text


def test_exact_qualified_name_first_then_qualified_suffix_then_literal(store: Store) -> None:
    # z.f is the qualified name of z.py's f; a.z.f only ends in ".z.f" and would sort first by path.
    assert _summary(store, "z.f") == [("z.py", 1, "z.f"), ("a/z.py", 1, "a.z.f"), ("notes.txt", 1, None)]


def test_same_name_definitions_by_path_then_every_literal_match(store: Store) -> None:
    found = _summary(store, "f")
    assert found[:2] == [("a/z.py", 1, "a.z.f"), ("z.py", 1, "z.f")]
    assert found[2:] and all(entity is None for _, _, entity in found[2:])


def test_definition_is_the_chunk_holding_the_entitys_first_line(store: Store) -> None:
    # The class header is packed into its first method's chunk: that chunk speaks for the class.
    [(chunk, entity)] = exact_search(store, "Big", 10)
    assert entity is not None and entity.qualified_name == "big.Big"
    assert chunk.start_line <= entity.start_line <= chunk.end_line
    assert chunk.entity_id != entity.id  # the chunk belongs to Big.first, the hit is about Big
    owner = store.entities_by_id({chunk.entity_id})[0]
    assert owner.qualified_name == "big.Big.first"


@pytest.mark.parametrize("text", ["Big.second", "Big::second", "big.Big.second", "second"])
def test_method_by_name_or_qualified_suffix(store: Store, text: str) -> None:
    [(chunk, entity)] = exact_search(store, text, 10)
    assert entity is not None and entity.qualified_name == "big.Big.second"
    assert (chunk.path, chunk.start_line) == ("big.py", entity.start_line)


def test_literal_text_matches_most_occurrences_first(store: Store) -> None:
    assert _summary(store, "MARKER_TEXT") == [("notes.txt", 1, None), ("big.py", 40, None)]


def test_literal_match_is_case_sensitive(store: Store) -> None:
    assert exact_search(store, "marker_text", 10) == []


def test_no_match_gives_nothing(store: Store) -> None:
    assert exact_search(store, "no_such_symbol_anywhere", 10) == []


def test_chunks_are_never_repeated(store: Store) -> None:
    ids = [chunk.id for chunk, _ in exact_search(store, "f", 50)]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
def test_limit_is_respected_and_keeps_the_order(store: Store, limit: int) -> None:
    everything = _summary(store, "f", 50)
    assert len(everything) > 5
    assert _summary(store, "f", limit) == everything[:limit]


def test_limit_one_keeps_the_best_definition(store: Store) -> None:
    assert _summary(store, "z.f", 1) == [("z.py", 1, "z.f")]


def test_definition_chunks_keep_the_given_order(store: Store) -> None:
    entities = store.entities_named_like("f", 10)
    pairs = definition_chunks(store, list(reversed(entities)))
    assert [entity.qualified_name for entity, _ in pairs] == ["z.f", "a.z.f"]
    assert all(chunk.path == entity.path for entity, chunk in pairs)

