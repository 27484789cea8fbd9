"""One file read, parsed and chunked: the language a header is parsed as."""

from __future__ import annotations

from pathlib import Path

from knowcode.indexing.file_parser import ParsedFile, parse_file
from knowcode.indexing.scanner import ScannedFile

HEADER = """#pragma once
namespace absl {
class Span : public Base {
 public:
  int size() const;
};
}  // namespace absl
"""


def _parse(tmp_path: Path, name: str, text: str) -> ParsedFile:
    (tmp_path / name).write_text(text)
    parsed = parse_file(tmp_path, ScannedFile(name, "c", len(text), 0.0, name.split(".")[0]))
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
