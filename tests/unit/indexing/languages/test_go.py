"""Go: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.go import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''package shapes

import (
	"fmt"
	str "strings"
)

import "net/http"

// Shape is anything with an area.
type Shape interface {
	fmt.Stringer
	Area() float64
}

// Circle is round.
type Circle struct {
	Base
	*io.Reader
	R float64
}

type (
	Meters float64
	ID     = int
)

// Area computes the area.
func (c *Circle) Area() float64 {
	return c.helper() * fmt.Sprint(c.R)
}

func (l *List[T]) Push(v T) {}

func New(r float64) *Circle {
	http.Get(str.ToLower("x"))
	return build(r)
}
'''


def _parse() -> ParsedSource:
    return parse_source("pkg/shapes.go", "go", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "pkg.shapes", 1, 38),
        ("interface", "pkg.shapes.Shape", 11, 14),
        ("method", "pkg.shapes.Shape.Area", 13, 13),
        ("struct", "pkg.shapes.Circle", 17, 21),
        ("type", "pkg.shapes.Meters", 24, 24),
        ("type", "pkg.shapes.ID", 25, 25),
        ("method", "pkg.shapes.Circle.Area", 29, 31),
        ("method", "pkg.shapes.List.Push", 33, 33),
        ("function", "pkg.shapes.New", 35, 38),
    ]


def test_signature_docstring_and_parent() -> None:
    parsed = _parse()
    by_name = by_qualified_name(parsed)
    module_id = parsed.entities[0].id
    area = by_name["pkg.shapes.Circle.Area"]
    assert area.signature == "func (c *Circle) Area() float64"
    assert area.docstring == "Area computes the area."
    assert area.parent_id == by_name["pkg.shapes.Circle"].id
    assert by_name["pkg.shapes.Shape.Area"].parent_id == by_name["pkg.shapes.Shape"].id
    assert by_name["pkg.shapes.List.Push"].parent_id == module_id  # List is declared elsewhere
    assert by_name["pkg.shapes.Circle"].signature == "type Circle struct"
    assert by_name["pkg.shapes.Circle"].docstring == "Circle is round."
    assert by_name["pkg.shapes.Shape"].docstring == "Shape is anything with an area."


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "pkg.shapes", "fmt", 4, "fmt"),
        ("imports", "pkg.shapes", "strings", 5, "str"),
        ("imports", "pkg.shapes", "net.http", 8, "http"),
        ("inherits", "pkg.shapes.Shape", "fmt.Stringer", 12, ""),
        ("inherits", "pkg.shapes.Circle", "Base", 18, ""),
        ("inherits", "pkg.shapes.Circle", "io.Reader", 19, ""),
        ("calls", "pkg.shapes.Circle.Area", "c.helper", 30, ""),
        ("calls", "pkg.shapes.Circle.Area", "fmt.Sprint", 30, ""),
        ("calls", "pkg.shapes.New", "http.Get", 36, ""),
        ("calls", "pkg.shapes.New", "str.ToLower", 36, ""),
        ("calls", "pkg.shapes.New", "build", 37, ""),
    }
