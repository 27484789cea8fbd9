"""Zig: functions, `const X = struct/enum/union {...}` containers, calls and `@import` imports."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

# A container is named by the `const X =` declaration that holds it: the declaration is the definition.
QUERY = r"""
(variable_declaration (identifier) @name (struct_declaration)) @definition.struct
(variable_declaration (identifier) @name (union_declaration)) @definition.struct
(variable_declaration (identifier) @name (enum_declaration)) @definition.enum
(function_declaration name: (identifier) @name) @definition.function

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression object: (_) @receiver member: (identifier) @name)) @reference.call

(variable_declaration (identifier) @import.alias
  (builtin_function (builtin_identifier) @_builtin (arguments . (string (string_content) @import.module)))
  (#eq? @_builtin "@import")) @reference.import
"""

SPEC = LanguageSpec(
    name="zig",
    extensions=(".zig",),
    grammar=Grammar("tree_sitter_zig"),
    query=QUERY,
    self_names=frozenset({"self"}),
)
