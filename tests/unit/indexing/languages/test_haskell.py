"""Haskell: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.haskell import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''module Geo.Shapes (Shape(..), area) where

import Data.List (sortBy)
import qualified Data.Map as M
import Prelude hiding (lookup)

data Shape = Circle Double | Rect Double Double
  deriving (Show, Eq)
newtype Name = Name String
type Point = (Double, Double)

class HasArea a where
  area :: a -> Double

instance HasArea Shape where
  area (Circle r) = pi * r * r
  area (Rect w h) = w * h

total :: [Shape] -> Double
total [] = 0
total (s:rest) = area s + total rest

-- | Print the summary.
report xs = do
  print $ total xs
  M.lookup 1 table `seq` render xs
  where render ys = show (length ys)
'''


def _parse() -> ParsedSource:
    return parse_source("src/Geo/Shapes.hs", "haskell", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    # one entity per function: its type signature and all its consecutive equations (the grammar has
    # no node grouping them)
    assert entity_rows(_parse()) == [
        ("module", "src.Geo.Shapes", 1, 27),
        ("struct", "src.Geo.Shapes.Shape", 7, 8),
        ("struct", "src.Geo.Shapes.Name", 9, 9),
        ("type", "src.Geo.Shapes.Point", 10, 10),
        ("interface", "src.Geo.Shapes.HasArea", 12, 13),
        ("method", "src.Geo.Shapes.HasArea.area", 13, 13),
        ("method", "src.Geo.Shapes.Shape.area", 16, 17),
        ("function", "src.Geo.Shapes.total", 19, 21),
        ("function", "src.Geo.Shapes.report", 24, 27),
        ("function", "src.Geo.Shapes.report.render", 27, 27),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    report = by_name["src.Geo.Shapes.report"]
    assert report.signature == "report xs"
    assert report.docstring == "| Print the summary."
    assert by_name["src.Geo.Shapes.HasArea.area"].signature == "area :: a -> Double"
    # instance methods belong to the instance type, like Rust impl methods
    assert by_name["src.Geo.Shapes.Shape.area"].parent_id == by_name["src.Geo.Shapes.Shape"].id
    assert by_name["src.Geo.Shapes.report.render"].parent_id == report.id


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "src.Geo.Shapes", "Data.List.sortBy", 3, "sortBy"),
        ("imports", "src.Geo.Shapes", "Data.Map", 4, "M"),
        ("imports", "src.Geo.Shapes", "Prelude", 5, "Prelude"),
        # a later equation's calls are the function's
        ("calls", "src.Geo.Shapes.total", "area", 21, ""),
        ("calls", "src.Geo.Shapes.total", "total", 21, ""),
        ("calls", "src.Geo.Shapes.report", "print", 25, ""),
        ("calls", "src.Geo.Shapes.report", "total", 25, ""),
        ("calls", "src.Geo.Shapes.report", "M.lookup", 26, ""),
        ("calls", "src.Geo.Shapes.report", "seq", 26, ""),
        ("calls", "src.Geo.Shapes.report", "render", 26, ""),
        ("calls", "src.Geo.Shapes.report.render", "show", 27, ""),
        ("calls", "src.Geo.Shapes.report.render", "length", 27, ""),
    }
