"""C++: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.cpp import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''#include <vector>
#include "shape.hpp"
using std::string;

namespace geo {
/// A drawable shape.
class Shape : public Base, private ns::Mixin<int> {
public:
    Shape() {}
    virtual double area() const { return compute(); }
    void draw();
};

template <typename T>
struct Box : geo::Shape {
    T get() const { return this->value; }
};

void Shape::draw() {
    this->area();
    canvas->render(1);
    std::sort(items.begin(), items.end());
}

enum class Mode { Fast, Slow };
using Ints = std::vector<int>;
typedef struct { int a; } Pair;
}

Shape *geo::Shape::make() { return new Shape(); }
'''


def _parse() -> ParsedSource:
    return parse_source("src/geo.cpp", "cpp", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "src.geo", 1, 30),
        ("module", "src.geo.geo", 5, 28),
        ("class", "src.geo.geo.Shape", 7, 12),
        ("method", "src.geo.geo.Shape.Shape", 9, 9),
        ("method", "src.geo.geo.Shape.area", 10, 10),
        ("struct", "src.geo.geo.Box", 14, 17),
        ("method", "src.geo.geo.Box.get", 16, 16),
        ("method", "src.geo.geo.Shape.draw", 19, 23),
        ("enum", "src.geo.geo.Mode", 25, 25),
        ("type", "src.geo.geo.Ints", 26, 26),
        ("struct", "src.geo.geo.Pair", 27, 27),
        ("method", "src.geo.geo.Shape.make", 30, 30),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    shape = by_name["src.geo.geo.Shape"]
    assert shape.signature == "class Shape : public Base, private ns::Mixin<int>"
    assert shape.docstring == "A drawable shape."
    assert shape.parent_id == by_name["src.geo.geo"].id
    assert by_name["src.geo.geo.Shape.area"].signature == "virtual double area() const"
    # out-of-class definitions belong to their class, wherever they are written
    assert by_name["src.geo.geo.Shape.draw"].parent_id == shape.id
    assert by_name["src.geo.geo.Shape.make"].parent_id == shape.id
    assert by_name["src.geo.geo.Shape.make"].signature == "Shape *geo::Shape::make()"
    assert by_name["src.geo.geo.Box.get"].parent_id == by_name["src.geo.geo.Box"].id


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "src.geo", "vector", 1, "vector"),
        ("imports", "src.geo", "shape", 2, "shape"),
        ("imports", "src.geo", "std.string", 3, "string"),
        ("inherits", "src.geo.geo.Shape", "Base", 7, ""),
        ("inherits", "src.geo.geo.Shape", "Mixin", 7, ""),
        ("inherits", "src.geo.geo.Box", "geo.Shape", 15, ""),
        ("calls", "src.geo.geo.Shape.area", "compute", 10, ""),
        ("calls", "src.geo.geo.Shape.draw", "this.area", 20, ""),
        ("calls", "src.geo.geo.Shape.draw", "canvas.render", 21, ""),
        ("calls", "src.geo.geo.Shape.draw", "std.sort", 22, ""),
        ("calls", "src.geo.geo.Shape.draw", "items.begin", 22, ""),
        ("calls", "src.geo.geo.Shape.draw", "items.end", 22, ""),
        ("calls", "src.geo.geo.Shape.make", "Shape", 30, ""),
    }


def test_a_class_with_an_attribute_macro_before_its_name_is_a_class() -> None:
    source = b"""namespace absl {
template <typename T>
class ABSL_ATTRIBUTE_VIEW Span {
 public:
  void clear() { n = 0; }
};
struct DLL_EXPORT Point {
  void reset() { x = 0; }
};
}
"""
    # the grammar's recovery from the misreading decides the namespace's extent, not the query
    kinds = {e.name: e.kind.value for e in parse_source("absl/span.h", "cpp", source, SPEC).entities}
    assert kinds["Span"] == "class"
    assert kinds["Point"] == "struct"
    assert kinds["reset"] == "method"
