"""Kotlin: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.kotlin import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''package com.acme

import kotlin.math.max
import java.io.File as JFile
import foo.bar.*

/** A shape. */
interface Shape {
    fun area(): Double
}

// A round shape.
open class Circle(val r: Double) : Base(r), Shape, Comparable<Circle> {
    constructor() : this(1.0)

    override fun area(): Double = this.helper() * max(1.0, 2.0)

    private fun helper() = Math.abs(r).also { println(it) }

    companion object Factory {
        fun make() = Circle(1.0)
    }
}

enum class Color { RED, GREEN }

object Registry : Store(), Api by impl {
    fun get(): List<Int> = listOf(1)
}

typealias Names = List<String>

fun String?.shout(): String = this.orEmpty().uppercase()
'''


def _parse() -> ParsedSource:
    return parse_source("com/acme/Shapes.kt", "kotlin", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "com.acme.Shapes", 1, 33),
        ("interface", "com.acme.Shapes.Shape", 8, 10),
        ("method", "com.acme.Shapes.Shape.area", 9, 9),
        ("class", "com.acme.Shapes.Circle", 13, 23),
        ("method", "com.acme.Shapes.Circle.constructor", 14, 14),
        ("method", "com.acme.Shapes.Circle.area", 16, 16),
        ("method", "com.acme.Shapes.Circle.helper", 18, 18),
        ("class", "com.acme.Shapes.Circle.Factory", 20, 22),
        ("method", "com.acme.Shapes.Circle.Factory.make", 21, 21),
        ("enum", "com.acme.Shapes.Color", 25, 25),
        ("class", "com.acme.Shapes.Registry", 27, 29),
        ("method", "com.acme.Shapes.Registry.get", 28, 28),
        ("type", "com.acme.Shapes.Names", 31, 31),
        ("method", "com.acme.Shapes.String.shout", 33, 33),  # an extension function of String
    ]


def test_signature_docstring_and_parent() -> None:
    parsed = _parse()
    by_name = by_qualified_name(parsed)
    circle = by_name["com.acme.Shapes.Circle"]
    assert circle.signature == "open class Circle(val r: Double) : Base(r), Shape, Comparable<Circle>"
    assert circle.docstring == "A round shape."
    assert by_name["com.acme.Shapes.Shape"].docstring == "A shape."
    assert by_name["com.acme.Shapes.Circle.area"].parent_id == circle.id
    factory = by_name["com.acme.Shapes.Circle.Factory"]
    assert by_name["com.acme.Shapes.Circle.Factory.make"].parent_id == factory.id
    assert by_name["com.acme.Shapes.String.shout"].parent_id == parsed.entities[0].id


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "com.acme.Shapes", "kotlin.math.max", 3, "max"),
        ("imports", "com.acme.Shapes", "java.io.File", 4, "JFile"),
        ("imports", "com.acme.Shapes", "foo.bar.*", 5, "*"),
        ("inherits", "com.acme.Shapes.Circle", "Base", 13, ""),
        ("inherits", "com.acme.Shapes.Circle", "Shape", 13, ""),
        ("inherits", "com.acme.Shapes.Circle", "Comparable", 13, ""),
        ("calls", "com.acme.Shapes.Circle.area", "this.helper", 16, ""),
        ("calls", "com.acme.Shapes.Circle.area", "max", 16, ""),
        ("calls", "com.acme.Shapes.Circle.helper", "Math.abs", 18, ""),
        ("calls", "com.acme.Shapes.Circle.helper", "also", 18, ""),
        ("calls", "com.acme.Shapes.Circle.helper", "println", 18, ""),
        ("calls", "com.acme.Shapes.Circle.Factory.make", "Circle", 21, ""),
        ("inherits", "com.acme.Shapes.Registry", "Store", 27, ""),
        ("inherits", "com.acme.Shapes.Registry", "Api", 27, ""),
        ("calls", "com.acme.Shapes.Registry.get", "listOf", 28, ""),
        ("calls", "com.acme.Shapes.String.shout", "this.orEmpty", 33, ""),
        ("calls", "com.acme.Shapes.String.shout", "uppercase", 33, ""),
    }
