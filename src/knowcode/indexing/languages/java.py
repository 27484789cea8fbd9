"""Java: classes, interfaces, enums, records, methods, constructors, calls, imports and supertypes."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

QUERY = r"""
(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(annotation_type_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(method_declaration name: (identifier) @name) @definition.function
(constructor_declaration name: (identifier) @name) @definition.function
(compact_constructor_declaration name: (identifier) @name) @definition.function

(method_invocation !object name: (identifier) @name) @reference.call
(method_invocation object: (_) @receiver name: (identifier) @name) @reference.call
(object_creation_expression type: [
  (type_identifier) @name
  (scoped_type_identifier) @name
  (generic_type [(type_identifier) (scoped_type_identifier)] @name)]) @reference.call

(superclass [
  (type_identifier) @name
  (scoped_type_identifier) @name
  (generic_type [(type_identifier) (scoped_type_identifier)] @name)]) @reference.inherits
(super_interfaces (type_list [
  (type_identifier) @name
  (scoped_type_identifier) @name
  (generic_type [(type_identifier) (scoped_type_identifier)] @name)])) @reference.inherits
(extends_interfaces (type_list [
  (type_identifier) @name
  (scoped_type_identifier) @name
  (generic_type [(type_identifier) (scoped_type_identifier)] @name)])) @reference.inherits

(import_declaration [(identifier) (scoped_identifier)] @import.module .) @reference.import
(import_declaration [(identifier) (scoped_identifier)] @import.module (asterisk) @import.name)
  @reference.import
"""

SPEC = LanguageSpec(
    name="java",
    extensions=(".java",),
    grammar=Grammar("tree_sitter_java"),
    query=QUERY,
    comment_types=frozenset({"line_comment", "block_comment"}),
    self_names=frozenset({"this", "super"}),
)
