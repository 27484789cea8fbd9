"""The parser's capture conventions that no single language's fixture pins down."""

from dataclasses import replace

from knowcode.indexing.languages.python import SPEC
from knowcode.indexing.parser import parse_source
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
