"""Scala: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.scala import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import entity_rows, reference_rows

SOURCE = b'''package com.acme

import scala.collection.mutable
import java.io.{File, InputStream => IS}
import foo.bar._

/** A shape. */
trait Shape {
  def area: Double
}

// A round shape.
case class Circle(r: Double) extends Base(r) with Shape with Ordered[Circle] {
  override def area: Double = this.helper() * math.max(1, 2)

  private def helper(): Double = Math.abs(r)
}

object Circle extends Factory {
  def apply(): Circle = new Circle(1.0)
}

enum Color extends Named:
  case Red, Green

type Names = List[String]

def top(): Unit = println(Circle().area)
'''


def _parse() -> ParsedSource:
    return parse_source("com/acme/Shapes.scala", "scala", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "com.acme.Shapes", 1, 28),
        ("trait", "com.acme.Shapes.Shape", 8, 10),
        ("method", "com.acme.Shapes.Shape.area", 9, 9),
        ("class", "com.acme.Shapes.Circle", 13, 17),
        ("method", "com.acme.Shapes.Circle.area", 14, 14),
        ("method", "com.acme.Shapes.Circle.helper", 16, 16),
        ("class", "com.acme.Shapes.Circle", 19, 21),  # the companion object
        ("method", "com.acme.Shapes.Circle.apply", 20, 20),
        ("enum", "com.acme.Shapes.Color", 23, 25),
        ("type", "com.acme.Shapes.Names", 26, 26),
        ("function", "com.acme.Shapes.top", 28, 28),
    ]


def test_signature_docstring_and_parent() -> None:
    entities = _parse().entities
    by_line = {e.start_line: e for e in entities}
    circle, companion = by_line[13], by_line[19]
    assert circle.id != companion.id
    assert circle.signature == "case class Circle(r: Double) extends Base(r) with Shape with Ordered[Circle]"
    assert circle.docstring == "A round shape."
    assert by_line[8].docstring == "A shape."
    assert by_line[14].signature == "override def area: Double"
    assert by_line[14].parent_id == circle.id
    assert by_line[20].parent_id == companion.id


def test_references() -> None:
    assert reference_rows(_parse()) == {
        # An import path is not one node, so only its last segment is kept.
        ("imports", "com.acme.Shapes", "mutable", 3, "mutable"),
        ("imports", "com.acme.Shapes", "io.File", 4, "File"),
        ("imports", "com.acme.Shapes", "io.InputStream", 4, "IS"),
        ("imports", "com.acme.Shapes", "bar._", 5, "_"),
        ("inherits", "com.acme.Shapes.Circle", "Base", 13, ""),
        ("inherits", "com.acme.Shapes.Circle", "Shape", 13, ""),
        ("inherits", "com.acme.Shapes.Circle", "Ordered", 13, ""),
        ("calls", "com.acme.Shapes.Circle.area", "this.helper", 14, ""),
        ("calls", "com.acme.Shapes.Circle.area", "math.max", 14, ""),
        ("calls", "com.acme.Shapes.Circle.helper", "Math.abs", 16, ""),
        ("inherits", "com.acme.Shapes.Circle", "Factory", 19, ""),
        ("calls", "com.acme.Shapes.Circle.apply", "Circle", 20, ""),
        ("inherits", "com.acme.Shapes.Color", "Named", 23, ""),
        ("calls", "com.acme.Shapes.top", "println", 28, ""),
        ("calls", "com.acme.Shapes.top", "Circle", 28, ""),
    }
