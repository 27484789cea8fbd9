"""Zig: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.zig import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''const std = @import("std");
const util = @import("util/helpers.zig");

/// A point on the plane.
pub const Point = struct {
    x: i32,

    pub fn init(x: i32) Point {
        return .{ .x = x };
    }

    fn norm(self: Point) i32 {
        return self.x + abs(self.x);
    }
};

const Color = enum { red, green };
const Value = union(enum) { int: i32, none };

pub fn main() !void {
    const p = Point.init(1);
    std.debug.print("{}\\n", .{p.norm()});
    _ = util.helper();
}
'''


def _parse() -> ParsedSource:
    return parse_source("src/geo.zig", "zig", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "src.geo", 1, 24),
        ("struct", "src.geo.Point", 5, 15),
        ("method", "src.geo.Point.init", 8, 10),
        ("method", "src.geo.Point.norm", 12, 14),
        ("enum", "src.geo.Color", 17, 17),
        ("struct", "src.geo.Value", 18, 18),
        ("function", "src.geo.main", 20, 24),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    point = by_name["src.geo.Point"]
    assert point.signature == "pub const Point = struct"
    assert point.docstring == "A point on the plane."
    init = by_name["src.geo.Point.init"]
    assert init.signature == "pub fn init(x: i32) Point"
    assert init.parent_id == point.id


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "src.geo", "std", 1, "std"),
        ("imports", "src.geo", "util.helpers", 2, "util"),
        ("calls", "src.geo.Point.norm", "abs", 13, ""),
        ("calls", "src.geo.main", "Point.init", 21, ""),
        ("calls", "src.geo.main", "std.debug.print", 22, ""),
        ("calls", "src.geo.main", "p.norm", 22, ""),
        ("calls", "src.geo.main", "util.helper", 23, ""),
    }
