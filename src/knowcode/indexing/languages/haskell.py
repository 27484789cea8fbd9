"""Haskell: functions (all equations, with the type signature), data/newtype/type, classes, instance
methods, calls, imports."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

# The grammar gives every equation of a function its own node: each is captured, and the parser
# merges a function's consecutive equations into one entity (LanguageSpec.clauses). An equation is
# named by its `name` field (the parser's default), which compiles faster than a `name:` child pattern.
_EQUATION = "(function) @definition.function"

# `instance C T where` methods belong to T, like Rust impl methods.
_INSTANCE_TYPES = ("(name) @receiver", "(parens type: (apply constructor: (name) @receiver))")

QUERY = "\n".join([
    "(data_type name: (name) @name) @definition.struct",
    "(newtype name: (name) @name) @definition.struct",
    "(type_synonym name: (name) @name) @definition.type",
    "(class name: (name) @name) @definition.interface",
    "(class_declarations (signature name: (variable) @name) @definition.function)",
    "(declarations (bind name: (variable) @name) @definition.function)",
    f"(declarations {_EQUATION})",
    f"(local_binds {_EQUATION})",
    *(f"(instance patterns: (type_patterns . {receiver}) declarations: (instance_declarations {member}))"
      for receiver in _INSTANCE_TYPES
      for member in (_EQUATION, "(bind name: (variable) @name) @definition.function")),
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
    clauses=True,
    prefix_types=frozenset({"signature"}),  # `name :: Type` above the first equation
)
