"""Bash: entities, spans and references on a small fixture."""

from knowcode.indexing.languages.bash import SPEC
from knowcode.indexing.parser import ParsedSource, parse_source
from tests.unit.indexing.languages._extract import by_qualified_name, entity_rows, reference_rows

SOURCE = b'''#!/usr/bin/env bash
source ./lib/common.sh
. "$HOME/.bashrc"

# Say hello to someone.
greet() {
  echo "hello $1"
  log_info "greeted $1"
}

function log_info {
  printf '%s\\n' "$*" | tee -a build.log
}

function main() {
  greet world
  if check_env; then log_info ok; fi
  result=$(compute 1)
}

main "$@"
'''


def _parse() -> ParsedSource:
    return parse_source("scripts/build.sh", "bash", SOURCE, SPEC)


def test_entities_have_exact_kinds_names_and_spans() -> None:
    assert entity_rows(_parse()) == [
        ("module", "scripts.build", 1, 21),
        ("function", "scripts.build.greet", 6, 9),
        ("function", "scripts.build.log_info", 11, 13),
        ("function", "scripts.build.main", 15, 19),
    ]


def test_signature_docstring_and_parent() -> None:
    parsed = _parse()
    by_name = by_qualified_name(parsed)
    greet = by_name["scripts.build.greet"]
    assert greet.signature == "greet()"
    assert greet.docstring == "Say hello to someone."
    assert greet.parent_id == parsed.entities[0].id
    assert by_name["scripts.build.log_info"].signature == "function log_info"


def test_references() -> None:
    # builtins (echo, printf, source) are no calls; a sourced path built from a variable is dropped
    assert reference_rows(_parse()) == {
        ("imports", "scripts.build", ".lib.common", 2, "common"),
        ("calls", "scripts.build.greet", "log_info", 8, ""),
        ("calls", "scripts.build.log_info", "tee", 12, ""),
        ("calls", "scripts.build.main", "greet", 16, ""),
        ("calls", "scripts.build.main", "check_env", 17, ""),
        ("calls", "scripts.build.main", "log_info", 17, ""),
        ("calls", "scripts.build.main", "compute", 18, ""),
        ("calls", "scripts.build", "main", 21, ""),
    }
