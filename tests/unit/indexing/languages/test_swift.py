"""Swift: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.swift import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''import Foundation
import struct Swift.Array

/// Anything with an area.
protocol Shape: AnyObject, Equatable {
    func area() -> Double
}

// A round shape.
class Circle: Base, Shape {
    var r: Double

    init(r: Double) {
        self.r = r
        super.init()
    }

    func area() -> Double {
        let m = max(1, 2)
        return self.helper() * Double(m)
    }

    private func helper() -> Double { abs(r) }
}

struct Point: Hashable {
    let x: Int
    static func == (a: Point, b: Point) -> Bool { a.x == b.x }
}

enum Color: String { case red, green }

extension Circle: CustomStringConvertible {
    /// Makes a bigger circle.
    func scaled(by f: Double) -> Circle { Circle(r: r * f) }
}

typealias Names = [String]

func top() { Circle(r: 1).area(); Log.shared.info() }
'''


def _parse() -> ParsedSource:
    return parse_source("Sources/Shapes.swift", "swift", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "Sources.Shapes", 1, 40),
        ("interface", "Sources.Shapes.Shape", 5, 7),
        ("method", "Sources.Shapes.Shape.area", 6, 6),
        ("class", "Sources.Shapes.Circle", 10, 24),
        ("method", "Sources.Shapes.Circle.init", 13, 16),
        ("method", "Sources.Shapes.Circle.area", 18, 21),
        ("method", "Sources.Shapes.Circle.helper", 23, 23),
        ("struct", "Sources.Shapes.Point", 26, 29),
        ("method", "Sources.Shapes.Point.==", 28, 28),  # an operator, named by the `name` field
        ("enum", "Sources.Shapes.Color", 31, 31),
        ("method", "Sources.Shapes.Circle.scaled", 35, 35),  # declared in `extension Circle`
        ("type", "Sources.Shapes.Names", 38, 38),
        ("function", "Sources.Shapes.top", 40, 40),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    circle = by_name["Sources.Shapes.Circle"]
    assert circle.signature == "class Circle: Base, Shape"
    assert circle.docstring == "A round shape."
    assert by_name["Sources.Shapes.Shape"].docstring == "Anything with an area."
    scaled = by_name["Sources.Shapes.Circle.scaled"]
    assert scaled.signature == "func scaled(by f: Double) -> Circle"
    assert scaled.docstring == "Makes a bigger circle."
    assert scaled.parent_id == circle.id
    assert by_name["Sources.Shapes.Circle.init"].parent_id == circle.id


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "Sources.Shapes", "Foundation", 1, "Foundation"),
        ("imports", "Sources.Shapes", "Swift.Array", 2, "Array"),
        ("inherits", "Sources.Shapes.Shape", "AnyObject", 5, ""),
        ("inherits", "Sources.Shapes.Shape", "Equatable", 5, ""),
        ("inherits", "Sources.Shapes.Circle", "Base", 10, ""),
        ("inherits", "Sources.Shapes.Circle", "Shape", 10, ""),
        ("calls", "Sources.Shapes.Circle.init", "super.init", 15, ""),
        ("calls", "Sources.Shapes.Circle.area", "max", 19, ""),
        ("calls", "Sources.Shapes.Circle.area", "self.helper", 20, ""),
        ("calls", "Sources.Shapes.Circle.area", "Double", 20, ""),
        ("calls", "Sources.Shapes.Circle.helper", "abs", 23, ""),
        ("inherits", "Sources.Shapes.Point", "Hashable", 26, ""),
        ("inherits", "Sources.Shapes.Color", "String", 31, ""),
        ("calls", "Sources.Shapes.Circle.scaled", "Circle", 35, ""),
        ("calls", "Sources.Shapes.top", "Circle", 40, ""),
        ("calls", "Sources.Shapes.top", "area", 40, ""),
        ("calls", "Sources.Shapes.top", "Log.shared.info", 40, ""),
    }
