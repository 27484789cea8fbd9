"""C++: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.cpp import SPEC
from knowcode.indexing.parser import parse_source
from knowcode.models import RelationKind

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


def _parse():  # type: ignore[no-untyped-def]
    return parse_source("src/geo.cpp", "cpp", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    got = [(e.kind.value, e.qualified_name, e.start_line, e.end_line) for e in _parse().entities]
    assert got == [
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
    by_name = {e.qualified_name: e for e in _parse().entities}
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
    parsed = _parse()
    by_id = {e.id: e.qualified_name for e in parsed.entities}
    refs = {(r.kind.value, by_id[r.source_id], r.target_name, r.line, r.alias)
            for r in parsed.references if r.kind is not RelationKind.CONTAINS}
    assert refs == {
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
