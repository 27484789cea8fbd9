"""TypeScript and TSX: entities, spans and references on small fixtures."""

from knowcode.indexing.languages.typescript import SPECS, TSX, TYPESCRIPT
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''import { Injectable, Logger as Log } from "@nestjs/common";
import type { Config } from "./config";
import * as path from "path";
import fs = require("fs");

/** Anything with an area. */
export interface Shape extends Named, Comparable<Shape> {
  area(): number;
}

export type ShapeId = string | number;

export enum Color { Red, Green }

// A drawable base.
export abstract class Base<T> extends Entity implements Shape, geo.Sized {
  private readonly log = new Log("base");

  constructor(protected config: Config) {
    super();
  }

  abstract area(): number;

  describe(prefix: string): string {
    return this.format(prefix) + path.join("a", String(this.area()));
  }

  onReady = (): void => { fs.existsSync(this.config.root); };
}

namespace Geometry {
  export function square(n: number): number {
    return Math.pow(n, 2);
  }
}
'''

TSX_SOURCE = b'''import React, { useState } from "react";
import { Button } from "./ui";

interface Props {
  label: string;
}

// Counter button.
export const Counter = ({ label }: Props) => {
  const [n, setN] = useState(0);
  return <Button onClick={() => setN(n + 1)}><ui.Icon />{label}</Button>;
};

export default class App extends React.Component<Props> {
  render() {
    return <Counter label="hi" />;
  }
}
'''


def _parse() -> ParsedSource:
    return parse_source("app/shapes.ts", "typescript", SOURCE, TYPESCRIPT)


def test_specs_cover_both_dialects() -> None:
    assert [s.name for s in SPECS] == ["typescript", "tsx"]
    assert set(TYPESCRIPT.extensions) == {".ts", ".mts", ".cts"}
    assert TSX.extensions == (".tsx",)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "app.shapes", 1, 36),
        ("interface", "app.shapes.Shape", 7, 9),
        ("method", "app.shapes.Shape.area", 8, 8),
        ("type", "app.shapes.ShapeId", 11, 11),
        ("enum", "app.shapes.Color", 13, 13),
        ("class", "app.shapes.Base", 16, 30),
        ("method", "app.shapes.Base.constructor", 19, 21),
        ("method", "app.shapes.Base.area", 23, 23),
        ("method", "app.shapes.Base.describe", 25, 27),
        ("method", "app.shapes.Base.onReady", 29, 29),
        ("module", "app.shapes.Geometry", 32, 36),
        ("function", "app.shapes.Geometry.square", 33, 35),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    describe = by_name["app.shapes.Base.describe"]
    assert describe.signature == "describe(prefix: string): string"
    assert describe.parent_id == by_name["app.shapes.Base"].id
    assert by_name["app.shapes.Shape.area"].parent_id == by_name["app.shapes.Shape"].id
    assert by_name["app.shapes.Shape"].docstring == "Anything with an area."
    base = by_name["app.shapes.Base"]
    assert base.docstring == "A drawable base."
    assert base.signature == "abstract class Base<T> extends Entity implements Shape, geo.Sized"
    square = by_name["app.shapes.Geometry.square"]
    assert square.parent_id == by_name["app.shapes.Geometry"].id


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "app.shapes", "@nestjs.common.Injectable", 1, "Injectable"),
        ("imports", "app.shapes", "@nestjs.common.Logger", 1, "Log"),
        ("imports", "app.shapes", ".config.Config", 2, "Config"),
        ("imports", "app.shapes", "path", 3, "path"),
        ("imports", "app.shapes", "fs", 4, "fs"),
        ("inherits", "app.shapes.Shape", "Named", 7, ""),
        ("inherits", "app.shapes.Shape", "Comparable", 7, ""),
        ("inherits", "app.shapes.Base", "Entity", 16, ""),
        ("inherits", "app.shapes.Base", "Shape", 16, ""),
        ("inherits", "app.shapes.Base", "geo.Sized", 16, ""),
        ("calls", "app.shapes.Base", "Log", 17, ""),
        ("calls", "app.shapes.Base.describe", "this.format", 26, ""),
        ("calls", "app.shapes.Base.describe", "path.join", 26, ""),
        ("calls", "app.shapes.Base.describe", "String", 26, ""),
        ("calls", "app.shapes.Base.describe", "this.area", 26, ""),
        ("calls", "app.shapes.Base.onReady", "fs.existsSync", 29, ""),
        ("calls", "app.shapes.Geometry.square", "Math.pow", 34, ""),
    }


def test_tsx_components_and_jsx_calls() -> None:
    parsed = parse_source("app/counter.tsx", "tsx", TSX_SOURCE, TSX)
    assert entity_rows(parsed) == [
        ("module", "app.counter", 1, 18),
        ("interface", "app.counter.Props", 4, 6),
        ("function", "app.counter.Counter", 9, 12),
        ("class", "app.counter.App", 14, 18),
        ("method", "app.counter.App.render", 15, 17),
    ]
    counter = next(e for e in parsed.entities if e.name == "Counter")
    assert counter.signature == "Counter = ({ label }: Props) =>"
    assert counter.docstring == "Counter button."
    assert reference_rows(parsed) == {
        ("imports", "app.counter", "react", 1, "React"),
        ("imports", "app.counter", "react.useState", 1, "useState"),
        ("imports", "app.counter", ".ui.Button", 2, "Button"),
        ("calls", "app.counter.Counter", "useState", 10, ""),
        ("calls", "app.counter.Counter", "Button", 11, ""),
        ("calls", "app.counter.Counter", "setN", 11, ""),
        ("calls", "app.counter.Counter", "ui.Icon", 11, ""),
        ("inherits", "app.counter.App", "React.Component", 14, ""),
        ("calls", "app.counter.App.render", "Counter", 16, ""),
    }


FACTORY_SOURCE = b'''export interface $ZodCatch extends $ZodType {
  _zod: $ZodCatchInternals;
}

export const $ZodCatch = /*@__PURE__*/ core.$constructor("$ZodCatch", (inst, def) => {
  $ZodType.init(inst, def);
});

export const Button = React.forwardRef(function Button(props, ref) {
  return render(props, ref);
});

export const settings = loadSettings("app");
'''


def test_a_const_made_by_a_factory_with_a_function_argument_is_a_definition() -> None:
    parsed = parse_source("core/schemas.ts", "typescript", FACTORY_SOURCE, TYPESCRIPT)
    assert entity_rows(parsed) == [
        ("module", "core.schemas", 1, 13),
        ("interface", "core.schemas.$ZodCatch", 1, 3),
        ("function", "core.schemas.$ZodCatch", 5, 7),  # the class-like value beside its type
        ("function", "core.schemas.Button", 9, 11),
    ]  # `settings`, a plain call's result, stays module-level code


def test_a_members_decorators_are_in_its_span_and_its_doc_stands_above_them() -> None:
    source = b"class Panel {\n  /** Opens it. */\n  @HostListener('click')\n  @Log()\n  open() {}\n}\n"
    parsed = parse_source("src/panel.ts", "typescript", source, TYPESCRIPT)
    method = by_qualified_name(parsed)["src.panel.Panel.open"]
    assert (method.start_line, method.end_line, method.docstring) == (3, 5, "Opens it.")


def test_an_anonymous_default_export_is_named_default() -> None:
    source = b"export default function (): { localeError: ErrorMap } {\n  return { error };\n}\n"
    parsed = parse_source("v4/locales/en.ts", "typescript", source, TYPESCRIPT)
    default = by_qualified_name(parsed)["v4.locales.en.default"]
    assert (default.kind.value, default.start_line, default.end_line) == ("function", 1, 3)
    assert default.signature == "function (): { localeError: ErrorMap }"
