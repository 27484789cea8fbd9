"""TypeScript and TSX: classes, interfaces, types, enums, namespaces, functions, calls, imports, bases."""

import tree_sitter_typescript

from knowcode.indexing.languages.base import LanguageSpec

QUERY = r"""
(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(variable_declarator name: (identifier) @name value: (class)) @definition.class
(interface_declaration name: (type_identifier) @name) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
(internal_module name: [(identifier) (nested_identifier)] @name) @definition.module
(module name: [(identifier) (nested_identifier)] @name) @definition.module
(module name: (string (string_fragment) @name)) @definition.module

(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(ambient_declaration (function_signature name: (identifier) @name) @definition.function)
(variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.function
(method_signature name: (property_identifier) @name) @definition.function
(abstract_method_signature name: (property_identifier) @name) @definition.function
(public_field_definition name: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.function

(call_expression function: (identifier) @name (#not-eq? @name "require")) @reference.call
(call_expression function: (member_expression object: (_) @receiver
  property: [(property_identifier) (private_property_identifier)] @name)) @reference.call
(new_expression constructor: (identifier) @name) @reference.call
(new_expression constructor: (member_expression object: (_) @receiver
  property: (property_identifier) @name)) @reference.call

(extends_clause value: [(identifier) (member_expression)] @name) @reference.inherits
(implements_clause [(type_identifier) (nested_type_identifier)] @name) @reference.inherits
(implements_clause (generic_type name: (_) @name)) @reference.inherits
(extends_type_clause type: [(type_identifier) (nested_type_identifier)] @name) @reference.inherits
(extends_type_clause type: (generic_type name: (_) @name)) @reference.inherits

(import_statement (import_clause (identifier) @import.alias)
  source: (string (string_fragment) @import.module)) @reference.import
(import_statement (import_clause (namespace_import (identifier) @import.alias))
  source: (string (string_fragment) @import.module)) @reference.import
(import_statement (import_clause (named_imports (import_specifier name: (_) @import.name !alias)))
  source: (string (string_fragment) @import.module)) @reference.import
(import_statement (import_clause (named_imports (import_specifier name: (_) @import.name
  alias: (identifier) @import.alias)))
  source: (string (string_fragment) @import.module)) @reference.import
((import_statement source: (string (string_fragment) @import.module)) @reference.import
  (#match? @reference.import "^import\\s*[\"']"))
(import_statement (import_require_clause (identifier) @import.alias
  source: (string (string_fragment) @import.module))) @reference.import
(export_statement source: (string (string_fragment) @import.module)) @reference.import

(variable_declarator name: (identifier) @import.alias
  value: (call_expression function: (identifier) @_require
    arguments: (arguments . (string (string_fragment) @import.module)))
  (#eq? @_require "require")) @reference.import
(variable_declarator
  name: (object_pattern (shorthand_property_identifier_pattern) @import.name)
  value: (call_expression function: (identifier) @_require
    arguments: (arguments . (string (string_fragment) @import.module)))
  (#eq? @_require "require")) @reference.import
"""

# TSX adds JSX: a capitalised element is a component used like a call.
JSX_QUERY = r"""
(jsx_opening_element name: (identifier) @name (#match? @name "^[A-Z]")) @reference.call
(jsx_self_closing_element name: (identifier) @name (#match? @name "^[A-Z]")) @reference.call
(jsx_opening_element name: (member_expression object: (_) @receiver property: (_) @name)) @reference.call
(jsx_self_closing_element name: (member_expression object: (_) @receiver property: (_) @name)) @reference.call
"""

_WRAPPERS = frozenset({"export_statement", "lexical_declaration", "variable_declaration",
                       "ambient_declaration", "expression_statement"})

TYPESCRIPT = LanguageSpec(
    name="typescript",
    extensions=(".ts", ".mts", ".cts"),
    grammar=tree_sitter_typescript.language_typescript,
    query=QUERY,
    shebangs=("ts-node", "tsx", "deno", "bun"),
    wrapper_types=_WRAPPERS,
    self_names=frozenset({"this", "super"}),
)

TSX = LanguageSpec(
    name="tsx",
    extensions=(".tsx",),
    grammar=tree_sitter_typescript.language_tsx,
    query=QUERY + JSX_QUERY,
    wrapper_types=_WRAPPERS,
    self_names=frozenset({"this", "super"}),
)

SPECS = (TYPESCRIPT, TSX)
