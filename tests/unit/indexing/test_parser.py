"""The parser's capture conventions that no single language's fixture pins down."""

from dataclasses import replace

from tree_sitter import Language, Node, Parser

from knowcode.indexing.languages.cpp import SPEC as CPP
from knowcode.indexing.languages.python import SPEC
from knowcode.indexing.parser import _closing_line, parse_source
from tests.unit.indexing.languages._extract import entity_rows

SOURCE = b"def outer():\n    def inner():\n        return 1\n    return inner\n\n\nclass Box:\n    pass\n"


def test_a_definition_without_a_name_capture_is_named_by_its_name_field() -> None:
    spec = replace(SPEC, query="(function_definition) @definition.function\n"
                               "(class_definition name: (identifier) @name) @definition.class")
    assert entity_rows(parse_source("pkg/mod.py", "python", SOURCE, spec)) == [
        ("module", "pkg.mod", 1, 8),
        ("function", "pkg.mod.outer", 1, 4),
        ("function", "pkg.mod.outer.inner", 2, 3),
        ("class", "pkg.mod.Box", 7, 8),
    ]


def test_a_definition_whose_node_has_no_name_field_is_left_out() -> None:
    spec = replace(SPEC, query="(return_statement) @definition.function")
    assert entity_rows(parse_source("pkg/mod.py", "python", SOURCE, spec)) == [("module", "pkg.mod", 1, 8)]


def _first_definition(source: bytes) -> Node:
    return Parser(Language(CPP.grammar())).parse(source).root_node.named_children[0]


def test_a_closing_brace_is_found_at_the_definitions_own_indentation() -> None:
    # where a definition with a parse error is cut when tree-sitter ran it past its `}` (fmt's
    # `struct size_padding` swallowed 1,800 lines after an unknown macro, abseil's 139 definitions)
    source = (b"struct Box {\n  int size;\n  int f() {\n    return 1;\n  }\n};\n\n"
              b"int after() {\n  return 2;\n}\n")
    assert _closing_line(source.split(b"\n"), _first_definition(source)) == 6


def test_contents_not_indented_deeper_have_no_closing_line() -> None:
    # a C++ namespace's functions start at its own indentation: their `}` does not close it
    source = b"namespace geo {\nint f() {\n  return 1;\n}\n}  // namespace geo\n"
    assert _closing_line(source.split(b"\n"), _first_definition(source)) is None


def test_a_definition_without_a_parse_error_keeps_its_span() -> None:
    source = b"struct Box {\n  int size;\n};\n\nint after() {\n  return 2;\n}\n"
    assert entity_rows(parse_source("geo/box.h", "cpp", source, CPP)) == [
        ("module", "geo.box", 1, 7), ("struct", "geo.box.Box", 1, 3), ("function", "geo.box.after", 5, 7)]
