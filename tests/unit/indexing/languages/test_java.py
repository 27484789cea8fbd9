"""Java: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.java import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''package com.acme;

import java.util.List;
import static java.lang.Math.max;
import java.io.*;

/** A round shape. */
@Deprecated
public class Circle extends Base implements Shape, java.io.Serializable {
    private double r;

    public Circle(double r) { this.r = r; }

    // Computes the area.
    @Override
    public double area() {
        return this.helper() * max(1, 2) + new Foo<>().bar() + List.of(r).size();
    }

    interface Named extends Shape { String name(); }

    enum Color implements Named { RED; public String name() { return "red"; } }

    record Point(int x, int y) {
        Point { check(x); }
    }
}
'''


def _parse() -> ParsedSource:
    return parse_source("com/acme/Circle.java", "java", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "com.acme.Circle", 1, 27),
        ("class", "com.acme.Circle.Circle", 8, 27),
        ("method", "com.acme.Circle.Circle.Circle", 12, 12),
        ("method", "com.acme.Circle.Circle.area", 15, 18),
        ("interface", "com.acme.Circle.Circle.Named", 20, 20),
        ("method", "com.acme.Circle.Circle.Named.name", 20, 20),
        ("enum", "com.acme.Circle.Circle.Color", 22, 22),
        ("method", "com.acme.Circle.Circle.Color.name", 22, 22),
        ("class", "com.acme.Circle.Circle.Point", 24, 26),
        ("method", "com.acme.Circle.Circle.Point.Point", 25, 25),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    area = by_name["com.acme.Circle.Circle.area"]
    assert area.signature == "@Override public double area()"
    assert area.docstring == "Computes the area."
    assert area.parent_id == by_name["com.acme.Circle.Circle"].id
    color = by_name["com.acme.Circle.Circle.Color"]
    assert by_name["com.acme.Circle.Circle.Color.name"].parent_id == color.id
    circle = by_name["com.acme.Circle.Circle"]
    assert circle.docstring == "A round shape."
    assert circle.signature == (
        "@Deprecated public class Circle extends Base implements Shape, java.io.Serializable")


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "com.acme.Circle", "java.util.List", 3, "List"),
        ("imports", "com.acme.Circle", "java.lang.Math.max", 4, "max"),
        ("imports", "com.acme.Circle", "java.io.*", 5, "*"),
        ("inherits", "com.acme.Circle.Circle", "Base", 9, ""),
        ("inherits", "com.acme.Circle.Circle", "Shape", 9, ""),
        ("inherits", "com.acme.Circle.Circle", "java.io.Serializable", 9, ""),
        ("calls", "com.acme.Circle.Circle.area", "this.helper", 17, ""),
        ("calls", "com.acme.Circle.Circle.area", "max", 17, ""),
        ("calls", "com.acme.Circle.Circle.area", "Foo", 17, ""),
        ("calls", "com.acme.Circle.Circle.area", "bar", 17, ""),
        ("calls", "com.acme.Circle.Circle.area", "List.of", 17, ""),
        ("calls", "com.acme.Circle.Circle.area", "size", 17, ""),
        ("inherits", "com.acme.Circle.Circle.Named", "Shape", 20, ""),
        ("inherits", "com.acme.Circle.Circle.Color", "Named", 22, ""),
        ("calls", "com.acme.Circle.Circle.Point.Point", "check", 25, ""),
    }
