"""Kotlin: classes, interfaces, objects, enums, type aliases, functions, calls, imports and supertypes."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

# Extension functions (`fun String.trim()`) take their receiver type as @receiver.
QUERY = r"""
((class_declaration "class" name: (identifier) @name) @definition.class
  (#not-match? @definition.class "^[^{]*\\benum\\s+class\\b"))
((class_declaration "class" name: (identifier) @name) @definition.enum
  (#match? @definition.enum "^[^{]*\\benum\\s+class\\b"))
(class_declaration "interface" name: (identifier) @name) @definition.interface
(object_declaration name: (identifier) @name) @definition.class
(companion_object name: (identifier) @name) @definition.class
(type_alias type: (identifier) @name) @definition.type
(function_declaration
  ([(user_type (identifier) @receiver . (type_arguments)?)
    (nullable_type (user_type (identifier) @receiver))] ".")?
  . name: (identifier) @name) @definition.function
(secondary_constructor "constructor" @name) @definition.function

(call_expression . (identifier) @name) @reference.call
(call_expression . (navigation_expression . (_) @receiver (identifier) @name .)) @reference.call

(delegation_specifier [
  (user_type (identifier) .) @name
  (user_type (identifier) @name . (type_arguments))
  (constructor_invocation [
    (user_type (identifier) .) @name
    (user_type (identifier) @name . (type_arguments))])
  (explicit_delegation [
    (user_type (identifier) .) @name
    (user_type (identifier) @name . (type_arguments))])
]) @reference.inherits

((import (qualified_identifier) @import.module .) @reference.import
  (#not-match? @reference.import "\\*\\s*$"))
(import (qualified_identifier) @import.module "*" @import.name) @reference.import
(import (qualified_identifier) @import.module (identifier) @import.alias) @reference.import
"""

SPEC = LanguageSpec(
    name="kotlin",
    extensions=(".kt", ".kts"),
    grammar=Grammar("tree_sitter_kotlin"),
    query=QUERY,
    comment_types=frozenset({"line_comment", "block_comment"}),
    self_names=frozenset({"this", "super"}),
    members_beside_types=True,
)
