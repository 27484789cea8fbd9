"""Chunks follow entities, stay code-sized, never overlap and cover every non-blank line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from knowcode.indexing.chunker import TARGET_CHUNK_CHARS, TARGET_CHUNK_LINES, chunk_file
from knowcode.indexing.languages.javascript import SPEC as JS_SPEC
from knowcode.indexing.languages.python import SPEC
from knowcode.indexing.parser import parse_source
from knowcode.models import Chunk


def _chunks(path: str, text: str) -> tuple[list[Chunk], dict[str, str]]:
    parsed = parse_source(path, "python", text.encode(), SPEC)
    names = {e.id: e.qualified_name for e in parsed.entities}
    return chunk_file(path, text, parsed.entities, parsed.split_lines, parsed.lead_lines), names


def _check_cover(text: str, chunks: list[Chunk]) -> None:
    covered: set[int] = set()
    for chunk in chunks:
        span = set(range(chunk.start_line, chunk.end_line + 1))
        assert not span & covered, "chunks overlap"
        covered |= span
    lines = text.split("\n")
    assert {i + 1 for i, line in enumerate(lines) if line.strip()} <= covered


def test_small_file_is_one_chunk_owned_by_the_module() -> None:
    text = "import os\n\n\ndef f():\n    return os.sep\n"
    chunks, names = _chunks("m.py", text)
    assert [(c.start_line, c.end_line, names[c.entity_id]) for c in chunks] == [(1, 5, "m")]
    assert chunks[0].index_text == "m.py\nm\n" + text.rstrip("\n")


def test_functions_get_their_own_chunks_and_the_class_header_joins_the_first() -> None:
    body = "".join(f"        value = value + {i}\n" for i in range(20))
    methods = "".join(f"    def method_{n}(self, value):\n{body}        return value\n\n" for n in range(3))
    text = f"import os\n\n\nclass Big:\n{methods}"
    chunks, names = _chunks("big.py", text)
    assert [(c.start_line, names[c.entity_id]) for c in chunks] == [
        (1, "big"), (4, "big.Big.method_0"), (28, "big.Big.method_1"), (51, "big.Big.method_2")]
    assert chunks[1].text.startswith("class Big:\n    def method_0")


def test_large_function_is_cut_at_statement_starts() -> None:
    statements = "".join(f"    total = total + compute_something_long({i}, {i} * 2, 'padding')\n"
                          for i in range(80))
    text = f"def huge(total):\n{statements}    return total\n"
    chunks, names = _chunks("h.py", text)
    assert len(chunks) > 1
    assert all(names[c.entity_id] == "h.huge" for c in chunks)
    assert all(c.end_line - c.start_line < TARGET_CHUNK_LINES for c in chunks)
    assert all(len(c.text) <= TARGET_CHUNK_CHARS for c in chunks)
    _check_cover(text, chunks)


def test_small_siblings_are_packed_under_their_parent() -> None:
    tiny = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(40))
    chunks, names = _chunks("t.py", tiny)
    assert 1 < len(chunks) < 40
    assert {names[c.entity_id] for c in chunks} == {"t"}
    _check_cover(tiny, chunks)


_LINE = st.one_of(
    st.just(""), st.just("    pass"), st.just("x = 1"), st.just("def f():"), st.just("class C:"),
    st.just("    def m(self):"), st.just("        return 1"),
    st.text("abc ", max_size=200).map(lambda s: f"# {s}"))


@settings(max_examples=60, deadline=None)
@given(st.lists(_LINE, max_size=150))
def test_any_source_is_covered_without_overlap(lines: list[str]) -> None:
    text = "\n".join(lines)
    chunks, _ = _chunks("p.py", text)
    _check_cover(text, chunks)
    assert all(c.text.strip() for c in chunks)


def _js_chunks(text: str) -> tuple[list[Chunk], dict[str, str]]:
    parsed = parse_source("lib/r.js", "javascript", text.encode(), JS_SPEC)
    names = {e.id: e.qualified_name for e in parsed.entities}
    return chunk_file("lib/r.js", text, parsed.entities, parsed.split_lines, parsed.lead_lines), names


def _documented(name: str, doc_lines: int, body_lines: int) -> str:
    doc = "".join(f" * says what {name} does, line {i}.\n" for i in range(doc_lines))
    body = "".join(f"  total = total + {i};\n" for i in range(body_lines))
    return f"/**\n{doc} */\n\nres.{name} = function {name}(total) {{\n{body}  return total;\n}};\n\n"


def test_a_definition_that_fits_with_its_documentation_takes_it_into_its_chunk() -> None:
    # each documentation block follows a one-line helper, which is packed with the lines after it
    helpers = [f"res.h{n} = function h{n}() {{ return {n}; }};\n\n" for n in range(3)]
    text = "".join(h + _documented(f"m{n}", 6, 20) for n, h in enumerate(helpers))
    chunks, names = _js_chunks(text)
    _check_cover(text, chunks)
    documented = {names[c.entity_id]: c for c in chunks if "says what" in c.text}
    assert set(documented) == {"lib.r.res.m0", "lib.r.res.m1", "lib.r.res.m2"}
    for n in range(3):
        chunk = documented[f"lib.r.res.m{n}"]
        assert f"says what m{n} does" in chunk.text and f"function m{n}(" in chunk.text


def test_documentation_too_long_to_share_a_chunk_stays_with_the_lines_before() -> None:
    text = "var res = {};\n\n" + _documented("big", 40, 30) + _documented("small", 2, 3)
    chunks, names = _js_chunks(text)
    _check_cover(text, chunks)
    big = [c for c in chunks if names[c.entity_id] == "lib.r.res.big"]
    assert big and all("says what big" not in c.text for c in big)  # no chunk of comments named `big`
