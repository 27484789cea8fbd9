"""Haskell: functions (first equation), data/newtype/type, classes, instance methods, calls, imports."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

# The grammar gives every equation of a function its own node; only the first equation of each
# function becomes the entity: the first child, or one after a declaration that is not an equation
# of the same function.
# An equation is named by its `name` field (the parser's default), which compiles 60 ms faster a process
# than a `name:` child pattern; the pattern that compares two equations' names captures them.
_EQUATION = "(function) @definition.function"
_NAMED_EQUATION = "(function name: (variable) @name) @definition.function"
_INSTANCE_SEPARATORS = ("signature", "bind", "pragma", "comment", "cpp", "type_instance", "data_instance")
_SEPARATORS = ("signature", "bind", "pragma", "comment", "cpp", "haddock", "fixity")
_TOP_SEPARATORS = (*_SEPARATORS, "data_type", "newtype", "type_synonym", "class", "instance", "type_family",
                   "type_instance", "data_family", "data_instance", "deriving_instance", "foreign_import",
                   "foreign_export", "kind_signature", "role_annotation", "pattern_synonym", "top_splice",
                   "default_types")


def _first_equations(separators: tuple[str, ...]) -> list[str]:
    # one pattern per separator: an alternation before an anchor matches nothing in tree-sitter 0.26
    return [f". {_EQUATION}",
            f"(function name: (variable) @_previous) . {_NAMED_EQUATION} (#not-eq? @_previous @name)",
            *(f"({separator}) . {_EQUATION}" for separator in separators)]


# `instance C T where` methods belong to T, like Rust impl methods.
_INSTANCE_TYPES = ("(name) @receiver", "(parens type: (apply constructor: (name) @receiver))")

QUERY = "\n".join([
    "(data_type name: (name) @name) @definition.struct",
    "(newtype name: (name) @name) @definition.struct",
    "(type_synonym name: (name) @name) @definition.type",
    "(class name: (name) @name) @definition.interface",
    "(class_declarations (signature name: (variable) @name) @definition.function)",
    "(declarations (bind name: (variable) @name) @definition.function)",
    *(f"(declarations {equation})" for equation in _first_equations(_TOP_SEPARATORS)),
    *(f"(local_binds {equation})" for equation in _first_equations(_SEPARATORS)),
    *(f"(instance patterns: (type_patterns . {receiver}) declarations: (instance_declarations {member}))"
      for receiver in _INSTANCE_TYPES
      for member in (*_first_equations(_INSTANCE_SEPARATORS), "(bind name: (variable) @name) @definition.function")),
    "(apply function: [(variable) (qualified)] @name) @reference.call",
    '(infix left_operand: [(variable) (qualified)] @name operator: (operator) @_dollar (#eq? @_dollar "$"))'
    " @reference.call",
    "(infix operator: (infix_id [(variable) (qualified)] @name)) @reference.call",
    "(import module: (module) @import.module !alias !names) @reference.import",
    "(import module: (module) @import.module alias: (module) @import.alias) @reference.import",
    "((import module: (module) @import.module !alias names: (import_list name: (import_name [(variable) (name)]"
    ' @import.name))) @reference.import (#not-match? @reference.import "\\\\bhiding\\\\b"))',
    "((import module: (module) @import.module !alias names: (_)) @reference.import"
    ' (#match? @reference.import "\\\\bhiding\\\\b"))',
])

SPEC = LanguageSpec(
    name="haskell",
    extensions=(".hs",),
    grammar=Grammar("tree_sitter_haskell"),
    query=QUERY,
    shebangs=("runhaskell", "runghc", "stack"),
    comment_types=frozenset({"comment", "haddock"}),
    body_field="match",  # `= expression` (or the guards): the signature is the head `name patterns`
    self_names=frozenset(),
    members_beside_types=True,
)
