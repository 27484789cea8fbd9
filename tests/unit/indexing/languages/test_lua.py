"""Lua: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.lua import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''local json = require("json")
local util = require "lib.util"
require("side.effects")

local M = {}

-- Create a counter.
function M.new(start)
  return setmetatable({ n = start }, M)
end

function M:bump(by)
  return self:add(by) + util.clamp(self.n)
end

local function helper(a)
  return json.encode(a)
end

local square = function(x) return x * x end
M.reset = function(c)
  c.n = 0
end

return M
'''


def _parse() -> ParsedSource:
    return parse_source("lib/counter.lua", "lua", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "lib.counter", 1, 25),
        ("method", "lib.counter.M.new", 8, 10),
        ("method", "lib.counter.M.bump", 12, 14),
        ("function", "lib.counter.helper", 16, 18),
        ("function", "lib.counter.square", 20, 20),
        ("method", "lib.counter.M.reset", 21, 23),
    ]


def test_signature_docstring_and_parent() -> None:
    parsed = _parse()
    by_name = by_qualified_name(parsed)
    new = by_name["lib.counter.M.new"]
    assert new.signature == "function M.new(start)"
    assert new.docstring == "Create a counter."
    assert new.parent_id == parsed.entities[0].id  # `M` is a table, not an entity
    assert by_name["lib.counter.helper"].signature == "local function helper(a)"
    assert by_name["lib.counter.M.reset"].signature == "function(c)"


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "lib.counter", "json", 1, "json"),
        ("imports", "lib.counter", "lib.util", 2, "util"),
        ("imports", "lib.counter", "side.effects", 3, "effects"),
        ("calls", "lib.counter.M.new", "setmetatable", 9, ""),
        ("calls", "lib.counter.M.bump", "self.add", 13, ""),
        ("calls", "lib.counter.M.bump", "util.clamp", 13, ""),
        ("calls", "lib.counter.helper", "json.encode", 17, ""),
    }
