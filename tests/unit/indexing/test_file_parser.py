"""One file read, parsed and chunked: the language a header is parsed as, a parse that takes too long."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowcode.indexing import parser
from knowcode.indexing.file_parser import ParsedFile, parse_file
from knowcode.indexing.languages import spec_for
from knowcode.indexing.parser import ParseTimeout, parse_source
from knowcode.indexing.scanner import ScannedFile

HEADER = """#pragma once
namespace absl {
class Span : public Base {
 public:
  int size() const;
};
}  // namespace absl
"""


def _parse(tmp_path: Path, name: str, text: str, language: str = "c") -> ParsedFile:
    (tmp_path / name).write_text(text)
    parsed = parse_file(tmp_path, ScannedFile(name, language, len(text), 0.0, name.split(".")[0]))
    assert isinstance(parsed, ParsedFile)
    return parsed


def test_a_cpp_header_named_c_is_parsed_and_recorded_as_cpp(tmp_path: Path) -> None:
    parsed = _parse(tmp_path, "span.h", HEADER)
    assert parsed.record.language == "cpp"
    kinds = {(row[2], row[4]) for row in parsed.entities}  # (kind, qualified name)
    assert ("class", "span.absl.Span") in kinds  # the C grammar reads no namespace and no class
    assert {row[10] for row in parsed.entities} == {"cpp"}


def test_a_c_header_stays_c(tmp_path: Path) -> None:
    parsed = _parse(tmp_path, "point.h", "struct point { int x, y; };\nint area(const struct point *p);\n")
    assert parsed.record.language == "c"


# Long enough that tree-sitter reports progress (and so may be stopped) several times while parsing it.
MANY_FUNCTIONS = "".join(f"def handler_{i}(request):\n    return respond(request, {i})\n\n\n"
                         for i in range(3000))


def _no_time_to_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parser, "PARSE_SECONDS_MIN", 0.0)
    monkeypatch.setattr(parser, "PARSE_BYTES_PER_SECOND_MIN", float("inf"))


def test_a_parse_slower_than_its_budget_is_abandoned(monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(parse_source("app.py", "python", MANY_FUNCTIONS.encode(), spec_for("python")).entities) == 3001
    _no_time_to_parse(monkeypatch)
    with pytest.raises(ParseTimeout):
        parse_source("app.py", "python", MANY_FUNCTIONS.encode(), spec_for("python"))


def test_a_file_whose_parse_is_abandoned_is_still_indexed_as_text(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _no_time_to_parse(monkeypatch)
    parsed = _parse(tmp_path, "app.py", MANY_FUNCTIONS, language="python")
    assert [row[2] for row in parsed.entities] == ["module"]
    assert parsed.chunks and "handler_2999" in parsed.chunks[-1][5]  # every line is still in a chunk


class _InterruptedRead(bytes):
    """A source whose third read by tree-sitter is interrupted, as Ctrl-C interrupts a parse."""

    reads = 0

    def __getitem__(self, key: object) -> bytes:  # type: ignore[override]
        _InterruptedRead.reads += 1
        if _InterruptedRead.reads == 3:
            raise KeyboardInterrupt
        return bytes(self).__getitem__(key)  # type: ignore[arg-type]


def test_an_interrupt_during_a_parse_stops_it_as_itself() -> None:
    # tree-sitter wraps an exception raised in its read callback in a SystemError, which parse_file
    # would report as a bad file and go on; the interrupt must reach the run instead
    source = _InterruptedRead((MANY_FUNCTIONS * 20).encode())
    with pytest.raises(KeyboardInterrupt):
        parse_source("app.py", "python", source, spec_for("python"))
