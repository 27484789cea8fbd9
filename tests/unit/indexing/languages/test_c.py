"""C: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.c import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''#include <stdio.h>
#include "util/helpers.h"

/* A point on the plane. */
struct Point {
    int x;
    int y;
};

typedef struct Point Point;
typedef struct { int a; } Anon;
typedef struct Point *PointPtr;
typedef int (*Callback)(int);
union Value { int i; float f; };
enum Color { RED, GREEN };

// Add two ints.
static int add(int a, int b) {
    return a + b;
}

char *name_of(struct Point *p) {
    printf("%d", p->x);
    return helper(add(1, 2));
}

void run(struct Ops *ops) {
    ops->start(1);
}
'''


def _parse() -> ParsedSource:
    return parse_source("src/geo.c", "c", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "src.geo", 1, 29),
        ("struct", "src.geo.Point", 5, 8),
        ("struct", "src.geo.Anon", 11, 11),
        ("type", "src.geo.PointPtr", 12, 12),
        ("type", "src.geo.Callback", 13, 13),
        ("struct", "src.geo.Value", 14, 14),
        ("enum", "src.geo.Color", 15, 15),
        ("function", "src.geo.add", 18, 20),
        ("function", "src.geo.name_of", 22, 25),
        ("function", "src.geo.run", 27, 29),
    ]


def test_signature_docstring_and_parent() -> None:
    parsed = _parse()
    by_name = by_qualified_name(parsed)
    add = by_name["src.geo.add"]
    assert add.signature == "static int add(int a, int b)"
    assert add.docstring == "Add two ints."
    assert add.parent_id == parsed.entities[0].id
    assert by_name["src.geo.name_of"].signature == "char *name_of(struct Point *p)"
    assert by_name["src.geo.Point"].docstring == "A point on the plane."
    assert by_name["src.geo.Point"].signature == "struct Point"


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "src.geo", "stdio", 1, "stdio"),
        ("imports", "src.geo", "util.helpers", 2, "helpers"),
        ("calls", "src.geo.name_of", "printf", 23, ""),
        ("calls", "src.geo.name_of", "helper", 24, ""),
        ("calls", "src.geo.name_of", "add", 24, ""),
        ("calls", "src.geo.run", "ops.start", 28, ""),
    }
