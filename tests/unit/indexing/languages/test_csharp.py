"""C#: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.csharp import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''using System;
using System.Collections.Generic;
using IO = System.IO;

namespace Acme.Shapes
{
    /// A shape.
    public interface IShape { double Area(); }

    // A round shape.
    [Serializable]
    public class Circle : Base, IShape, IComparable<Circle>
    {
        public Circle(double r) : base(r) { }

        public double Area() => this.Helper() * Math.Max(1, 2);

        private double Helper()
        {
            var items = new List<int>();
            return items?.Count() + Compute<int>(1);
        }
    }

    public struct Point : IEquatable<Point> { public int X; }

    public enum Color { Red, Green }

    public record Person(string Name) : Entity(Name);

    public delegate void Handler(int x);
}
'''

NS = "src.Geometry.Acme.Shapes"


def _parse() -> ParsedSource:
    return parse_source("src/Geometry.cs", "csharp", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "src.Geometry", 1, 32),
        ("module", NS, 5, 32),
        ("interface", f"{NS}.IShape", 8, 8),
        ("method", f"{NS}.IShape.Area", 8, 8),
        ("class", f"{NS}.Circle", 11, 23),
        ("method", f"{NS}.Circle.Circle", 14, 14),
        ("method", f"{NS}.Circle.Area", 16, 16),
        ("method", f"{NS}.Circle.Helper", 18, 22),
        ("struct", f"{NS}.Point", 25, 25),
        ("enum", f"{NS}.Color", 27, 27),
        ("class", f"{NS}.Person", 29, 29),
        ("type", f"{NS}.Handler", 31, 31),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    circle = by_name[f"{NS}.Circle"]
    assert circle.signature == "[Serializable] public class Circle : Base, IShape, IComparable<Circle>"
    assert circle.docstring == "A round shape."
    assert circle.parent_id == by_name[NS].id
    assert by_name[f"{NS}.IShape"].docstring == "A shape."
    assert by_name[f"{NS}.Circle.Circle"].signature == "public Circle(double r) : base(r)"
    assert by_name[f"{NS}.Circle.Helper"].parent_id == circle.id


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "src.Geometry", "System", 1, "System"),
        ("imports", "src.Geometry", "System.Collections.Generic", 2, "Generic"),
        ("imports", "src.Geometry", "System.IO", 3, "IO"),
        ("inherits", f"{NS}.Circle", "Base", 12, ""),
        ("inherits", f"{NS}.Circle", "IShape", 12, ""),
        ("inherits", f"{NS}.Circle", "IComparable", 12, ""),
        ("calls", f"{NS}.Circle.Area", "this.Helper", 16, ""),
        ("calls", f"{NS}.Circle.Area", "Math.Max", 16, ""),
        ("calls", f"{NS}.Circle.Helper", "List", 20, ""),
        ("calls", f"{NS}.Circle.Helper", "items.Count", 21, ""),
        ("calls", f"{NS}.Circle.Helper", "Compute", 21, ""),
        ("inherits", f"{NS}.Point", "IEquatable", 25, ""),
        ("inherits", f"{NS}.Person", "Entity", 29, ""),
    }
