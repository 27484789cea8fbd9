"""JavaScript: entities, spans and references on a small fixture (JSX included)."""

from knowcode.indexing.languages.javascript import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''import fs from "fs";
import { join, resolve as res } from "path";
import * as util from "./util.js";
import "../polyfill";
const lodash = require("lodash");
const { debounce, map: mapAll } = require("./helpers");
export { Shape } from "./shapes";

// Base animal.
// Knows its name.
export class Animal extends Base {
  constructor(name) {
    super(name);
  }

  /** Speak loudly. */
  speak(times) {
    return this.helper(times) + fs.readFileSync(join("a", "b"));
  }

  onClick = () => util.log(this.name);
}

class Dog extends models.Pet {}

export default function main(x) {
  return new Animal(x).speak(res(x));
}

const View = ({ name }) => {
  return <ui.Card><Badge label={name} /></ui.Card>;
};
'''


def _parse() -> ParsedSource:
    return parse_source("web/zoo.js", "javascript", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "web.zoo", 1, 32),
        ("class", "web.zoo.Animal", 11, 22),
        ("method", "web.zoo.Animal.constructor", 12, 14),
        ("method", "web.zoo.Animal.speak", 17, 19),
        ("method", "web.zoo.Animal.onClick", 21, 21),
        ("class", "web.zoo.Dog", 24, 24),
        ("function", "web.zoo.main", 26, 28),
        ("function", "web.zoo.View", 30, 32),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    speak = by_name["web.zoo.Animal.speak"]
    assert speak.signature == "speak(times)"
    assert speak.docstring == "Speak loudly."
    assert speak.parent_id == by_name["web.zoo.Animal"].id
    assert by_name["web.zoo.Animal.onClick"].parent_id == by_name["web.zoo.Animal"].id
    assert by_name["web.zoo.Animal"].signature == "class Animal extends Base"
    assert by_name["web.zoo.Animal"].docstring == "Base animal.\nKnows its name."
    assert by_name["web.zoo.main"].signature == "function main(x)"
    assert by_name["web.zoo.View"].signature == "View = ({ name }) =>"


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "web.zoo", "fs", 1, "fs"),
        ("imports", "web.zoo", "path.join", 2, "join"),
        ("imports", "web.zoo", "path.resolve", 2, "res"),
        ("imports", "web.zoo", ".util", 3, "util"),
        ("imports", "web.zoo", "..polyfill", 4, "polyfill"),
        ("imports", "web.zoo", "lodash", 5, "lodash"),
        ("imports", "web.zoo", ".helpers.debounce", 6, "debounce"),
        ("imports", "web.zoo", ".helpers.map", 6, "mapAll"),
        ("imports", "web.zoo", ".shapes", 7, "shapes"),
        ("inherits", "web.zoo.Animal", "Base", 11, ""),
        ("calls", "web.zoo.Animal.speak", "this.helper", 18, ""),
        ("calls", "web.zoo.Animal.speak", "fs.readFileSync", 18, ""),
        ("calls", "web.zoo.Animal.speak", "join", 18, ""),
        ("calls", "web.zoo.Animal.onClick", "util.log", 21, ""),
        ("inherits", "web.zoo.Dog", "models.Pet", 24, ""),
        ("calls", "web.zoo.main", "Animal", 27, ""),
        ("calls", "web.zoo.main", "speak", 27, ""),
        ("calls", "web.zoo.main", "res", 27, ""),
        ("calls", "web.zoo.View", "ui.Card", 31, ""),
        ("calls", "web.zoo.View", "Badge", 31, ""),
    }


def test_shebang_and_extensions() -> None:
    assert "node" in SPEC.shebangs
    assert set(SPEC.extensions) == {".js", ".jsx", ".mjs", ".cjs"}


LEADS = b'''/**
 * @fileoverview Response helpers.
 */

/**
 * Send a JSON body.
 */

res.json = function json(obj) {
  return this.send(obj);
};

var limit = 10; // the default page size
function page(n) {
  return n * limit;
}

/* a plain block, then a blank line */

function tail() {}
'''


def test_a_doc_block_one_blank_line_above_documents_the_definition() -> None:
    parsed = parse_source("lib/response.js", "javascript", LEADS, SPEC)
    by_name = by_qualified_name(parsed)
    json = by_name["lib.response.res.json"]
    assert json.docstring == "Send a JSON body."
    assert parsed.lead_lines[json.id] == 5  # its own block, not the file's overview above it
    assert by_name["lib.response.tail"].docstring == ""  # a plain comment a blank line above is no doc


def test_a_comment_trailing_code_leaves_its_line_to_the_code() -> None:
    parsed = parse_source("lib/response.js", "javascript", LEADS, SPEC)
    page = by_qualified_name(parsed)["lib.response.page"]
    assert page.docstring == "the default page size"
    assert page.id not in parsed.lead_lines


def test_a_method_assigned_inside_a_definition_is_named_under_it() -> None:
    source = b'''export const $ZodObject = $constructor("$ZodObject", (inst, def) => {
  inst._zod.parse = (payload, ctx) => {
    return payload;
  };
});
res.send = function send(body) {};
'''
    by_name = by_qualified_name(parse_source("core/schemas.js", "javascript", source, SPEC))
    parse = by_name["core.schemas.$ZodObject.inst._zod.parse"]
    assert parse.parent_id == by_name["core.schemas.$ZodObject"].id
    assert "core.schemas.res.send" in by_name  # at module level, the receiver alone scopes it


def test_a_named_function_handed_to_a_call_at_module_level_is_defined() -> None:
    source = b'''/**
 * The host, from X-Forwarded-Host when trusted.
 */

defineGetter(req, 'host', function host() {
  return this.get('Host');
});

app.init = function init() {
  this.on('mount', function onmount(parent) {
    this.parent = parent;
  });
};

describe('host', function () {});
'''
    parsed = parse_source("lib/request.js", "javascript", source, SPEC)
    by_name = by_qualified_name(parsed)
    host = by_name["lib.request.host"]
    assert (host.start_line, host.end_line) == (5, 7)
    assert host.docstring == "The host, from X-Forwarded-Host when trusted."
    assert parsed.lead_lines[host.id] == 1
    # a callback inside a function is a step of that function; an anonymous one names nothing
    assert sorted(by_name) == ["lib.request", "lib.request.app.init", "lib.request.host"]


def test_an_anonymous_default_export_is_named_default() -> None:
    source = b'''// The English messages.
export default function () {
  return { localeError: error() };
}
export default class extends Base {
  render() {}
}
export default (options) => options;
export default config;
'''
    parsed = parse_source("locales/en.js", "javascript", source, SPEC)
    assert entity_rows(parsed)[1:] == [
        ("function", "locales.en.default", 2, 4),
        ("class", "locales.en.default", 5, 7),
        ("method", "locales.en.default.render", 6, 6),
        ("function", "locales.en.default", 8, 8),
    ]  # `export default config` exports a name defined elsewhere: nothing to define here
    assert parsed.entities[1].docstring == "The English messages."
