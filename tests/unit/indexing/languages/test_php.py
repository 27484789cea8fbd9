"""PHP: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.php import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = rb'''<?php
namespace App\Models;

use Illuminate\Support\Str;
use App\Contracts\{Shape, Named as N};
require_once __DIR__ . '/helpers.php';

/**
 * A registered user.
 */
class User extends Model implements Shape, App\Contracts\Sized
{
    use Greets;

    public function __construct(private string $name)
    {
        parent::__construct();
    }

    public static function make(string $name): static
    {
        return new User(Str::lower($name));
    }

    // Formats the display name.
    public function display(): string
    {
        return $this->format(slugify($this->name)) . self::SUFFIX;
    }
}

interface Greeter extends N {}

trait Greets
{
    public function greet(): string { return $this?->display(); }
}

enum Role: string { case Admin = 'admin'; }

function slugify(string $s): string { return strtolower($s); }
'''

BRACED = b'''<?php
namespace Lib\\Util {
    function helper() { return new static(\\strlen("x")); }
}
'''


def _parse() -> ParsedSource:
    return parse_source("app/Models/User.php", "php", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "app.Models.User", 1, 41),
        ("class", "app.Models.User.User", 11, 30),
        ("method", "app.Models.User.User.__construct", 15, 18),
        ("method", "app.Models.User.User.make", 20, 23),
        ("method", "app.Models.User.User.display", 26, 29),
        ("interface", "app.Models.User.Greeter", 32, 32),
        ("trait", "app.Models.User.Greets", 34, 37),
        ("method", "app.Models.User.Greets.greet", 36, 36),
        ("enum", "app.Models.User.Role", 39, 39),
        ("function", "app.Models.User.slugify", 41, 41),
    ]


def test_signature_docstring_and_parent() -> None:
    by_name = by_qualified_name(_parse())
    user = by_name["app.Models.User.User"]
    assert user.docstring == "A registered user."
    assert user.signature == "class User extends Model implements Shape, App\\Contracts\\Sized"
    make = by_name["app.Models.User.User.make"]
    assert make.signature == "public static function make(string $name): static"
    assert make.parent_id == user.id
    assert by_name["app.Models.User.User.display"].docstring == "Formats the display name."
    assert by_name["app.Models.User.Greets.greet"].parent_id == by_name["app.Models.User.Greets"].id


def test_references() -> None:
    assert reference_rows(_parse()) == {
        ("imports", "app.Models.User", "Illuminate.Support.Str", 4, "Str"),
        ("imports", "app.Models.User", "App.Contracts.Shape", 5, "Shape"),
        ("imports", "app.Models.User", "App.Contracts.Named", 5, "N"),
        ("imports", "app.Models.User", ".helpers", 6, "helpers"),
        ("inherits", "app.Models.User.User", "Model", 11, ""),
        ("inherits", "app.Models.User.User", "Shape", 11, ""),
        ("inherits", "app.Models.User.User", "App.Contracts.Sized", 11, ""),
        ("inherits", "app.Models.User.User", "Greets", 13, ""),
        ("calls", "app.Models.User.User.__construct", "parent.__construct", 17, ""),
        ("calls", "app.Models.User.User.make", "User", 22, ""),
        ("calls", "app.Models.User.User.make", "Str.lower", 22, ""),
        ("calls", "app.Models.User.User.display", "$this.format", 28, ""),
        ("calls", "app.Models.User.User.display", "slugify", 28, ""),
        ("inherits", "app.Models.User.Greeter", "N", 32, ""),
        ("calls", "app.Models.User.Greets.greet", "$this.display", 36, ""),
        ("calls", "app.Models.User.slugify", "strtolower", 41, ""),
    }


def test_braced_namespace_global_call_and_new_static() -> None:
    parsed = parse_source("lib/util.php", "php", BRACED, SPEC)
    assert entity_rows(parsed) == [
        ("module", "lib.util", 1, 4),
        ("module", "lib.util.Util", 2, 4),
        ("function", "lib.util.Util.helper", 3, 3),
    ]
    assert reference_rows(parsed) == {("calls", "lib.util.Util.helper", "strlen", 3, "")}
    assert "$this" in SPEC.self_names
