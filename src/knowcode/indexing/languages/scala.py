"""Scala: classes, objects, traits, enums, type aliases, defs, calls, imports and extends clauses."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

# An import path is a run of sibling identifiers with no node of its own, and the parser reads one
# node per capture, so @import.module is the last path segment (`import a.b.C` imports `C`).
QUERY = r"""
(class_definition name: (identifier) @name) @definition.class
(object_definition name: (identifier) @name) @definition.class
(trait_definition name: (identifier) @name) @definition.trait
(enum_definition name: (identifier) @name) @definition.enum
(type_definition name: (type_identifier) @name) @definition.type
(function_definition name: (identifier) @name) @definition.function
(function_declaration name: (identifier) @name) @definition.function

(call_expression function: [
  (identifier) @name
  (field_expression value: (_) @receiver field: (identifier) @name)
  (generic_function function: (identifier) @name)
  (generic_function function: (field_expression value: (_) @receiver field: (identifier) @name))
]) @reference.call
(instance_expression [(type_identifier) (stable_type_identifier)] @name) @reference.call
(instance_expression (generic_type type: (_) @name)) @reference.call

(extends_clause [
  (type_identifier) @name
  (stable_type_identifier) @name
  (generic_type type: (_) @name)]) @reference.inherits

(import_declaration (identifier) @import.module .) @reference.import
(import_declaration (identifier) @import.module . (namespace_wildcard) @import.name) @reference.import
(import_declaration (identifier) @import.module . (namespace_selectors (identifier) @import.name))
  @reference.import
(import_declaration (identifier) @import.module . (namespace_selectors
  [(arrow_renamed_identifier name: (identifier) @import.name alias: (identifier) @import.alias)
   (as_renamed_identifier name: (identifier) @import.name alias: (identifier) @import.alias)]))
  @reference.import
"""

SPEC = LanguageSpec(
    name="scala",
    extensions=(".scala", ".sc"),
    grammar=Grammar("tree_sitter_scala"),
    query=QUERY,
    comment_types=frozenset({"comment", "block_comment"}),
    self_names=frozenset({"this", "super"}),
)
