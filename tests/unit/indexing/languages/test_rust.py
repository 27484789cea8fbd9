"""Rust: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.rust import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''use std::collections::HashMap;
use crate::models::{Entity, Kind as K};
use std::io as sio;

pub struct Point {
    x: i32,
}

pub enum Shape { Dot, Line }
type Index = HashMap<String, Point>;

/// Anything with an area.
pub trait Area: fmt::Debug {
    fn area(&self) -> f64;
}

mod geometry {
    pub fn origin() -> i32 { 0 }
}

impl Point {
    pub fn new(x: i32) -> Self {
        Point { x }
    }
    fn shifted(&self) -> Self { Self::new(self.offset(1)) }
}

impl Area for Point {
    fn area(&self) -> f64 { helpers::zero() }
}

fn main() {
    let p = Point::new(1);
    p.shifted();
}
'''


def _parse() -> ParsedSource:
    return parse_source("src/geo.rs", "rust", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "src.geo", 1, 35),
        ("struct", "src.geo.Point", 5, 7),
        ("enum", "src.geo.Shape", 9, 9),
        ("type", "src.geo.Index", 10, 10),
        ("trait", "src.geo.Area", 13, 15),
        ("method", "src.geo.Area.area", 14, 14),
        ("module", "src.geo.geometry", 17, 19),
        ("function", "src.geo.geometry.origin", 18, 18),
        ("method", "src.geo.Point.new", 22, 24),
        ("method", "src.geo.Point.shifted", 25, 25),
        ("method", "src.geo.Point.area", 29, 29),
        ("function", "src.geo.main", 32, 35),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    new = by_name["src.geo.Point.new"]
    assert new.signature == "pub fn new(x: i32) -> Self"
    assert new.parent_id == by_name["src.geo.Point"].id
    assert by_name["src.geo.Point.area"].parent_id == by_name["src.geo.Point"].id
    assert by_name["src.geo.Area.area"].parent_id == by_name["src.geo.Area"].id
    assert by_name["src.geo.Area"].docstring == "Anything with an area."
    assert by_name["src.geo.Area"].signature == "pub trait Area: fmt::Debug"


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "src.geo", "std.collections.HashMap", 1, "HashMap"),
        ("imports", "src.geo", "crate.models.Entity", 2, "Entity"),
        ("imports", "src.geo", "crate.models.Kind", 2, "K"),
        ("imports", "src.geo", "std.io", 3, "sio"),
        ("inherits", "src.geo.Area", "fmt.Debug", 13, ""),
        # an impl block is no entity, so `impl Area for Point` is recorded on the module
        ("inherits", "src.geo", "Area", 28, ""),
        ("calls", "src.geo.Point.shifted", "Self.new", 25, ""),
        ("calls", "src.geo.Point.shifted", "self.offset", 25, ""),
        ("calls", "src.geo.Point.area", "helpers.zero", 29, ""),
        ("calls", "src.geo.main", "Point.new", 33, ""),
        ("calls", "src.geo.main", "p.shifted", 34, ""),
    }


def test_an_items_attributes_are_in_its_span_and_its_doc_stands_above_them() -> None:
    source = (b"/// A point.\n#[derive(Debug)]\n#[serde(rename_all = \"camelCase\")]\n"
              b"pub struct P { x: u8 }\n\n#[test]\n\nfn apart() {}\n")
    parsed = parse_source("src/p.rs", "rust", source, SPEC)
    point, apart = (by_qualified_name(parsed)[f"src.p.{name}"] for name in ("P", "apart"))
    assert (point.start_line, point.end_line, point.docstring) == (2, 4, "A point.")
    assert point.id in parsed.lead_lines  # the doc comment is chunked with the item
    assert apart.start_line == 8  # an attribute a blank line away is not the item's


INLINE_MODULES = b'''pub struct Foo;
mod imp {
    use super::Foo;
    pub fn make() -> Foo { super::helper() }
    mod deep { use super::super::Foo; use super::make; use super::super::super::x::Y; }
}
fn helper() {}
'''


def test_a_path_from_inside_a_declared_module_is_written_from_the_files_module() -> None:
    # `super::` inside `mod imp` is this file's module, not its parent: resolution sees `self::`
    rows = reference_rows(parse_source("src/a.rs", "rust", INLINE_MODULES, SPEC))
    assert rows == {
        ("imports", "src.a", "self.Foo", 3, "Foo"),
        ("calls", "src.a.imp.make", "self.helper", 4, ""),
        ("imports", "src.a", "self.Foo", 5, "Foo"),
        ("imports", "src.a", "self.imp.make", 5, "make"),
        ("imports", "src.a", "super.x.Y", 5, "Y"),  # climbs out of the file: left to resolution
    }
