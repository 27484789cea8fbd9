"""JavaScript/JSX: classes, functions (incl. named arrow functions), methods, calls, imports, bases."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

DEFINITIONS = r"""
(class_declaration name: (identifier) @name) @definition.class
(variable_declarator name: (identifier) @name value: (class)) @definition.class
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(variable_declarator name: (identifier) @name
  value: (call_expression arguments: (arguments [(arrow_function) (function_expression)]))) @definition.function
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.function
(field_definition property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.function
"""

# Shared with TypeScript, whose grammar extends this one: assignments of functions to members
# (`app.set = function set() {}`) and named functions handed to a call at the top of a module
# (`defineGetter(req, 'host', function host() {})`: a definition by another name; inside a function
# such a callback is a step of that function), calls, ES imports and CommonJS `require`.
MEMBER_FUNCTIONS = r"""
(assignment_expression left: (member_expression object: (_) @receiver property: (property_identifier) @name)
  right: [(arrow_function) (function_expression) (generator_function)]) @definition.function
(program (expression_statement (call_expression
  arguments: (arguments (function_expression name: (identifier) @name))) @definition.function))
"""
# An anonymous default export (`export default function () {}`, a locale or plugin module's one function)
# is named as its importers' `import x from` sees it: `default`. A named one is a declaration above.
DEFAULT_EXPORTS = r"""
(export_statement "default" @name
  value: [(arrow_function) (function_expression) (generator_function)] @definition.function)
(export_statement "default" @name value: (class) @definition.class)
"""
CALLS = r"""
(call_expression function: (identifier) @name (#not-eq? @name "require")) @reference.call
(call_expression function: (member_expression object: (_) @receiver
  property: [(property_identifier) (private_property_identifier)] @name)) @reference.call
(new_expression constructor: (identifier) @name) @reference.call
(new_expression constructor: (member_expression object: (_) @receiver
  property: (property_identifier) @name)) @reference.call
"""
# A capitalised JSX element is a component used like a call.
JSX_CALLS = r"""
(jsx_opening_element name: (identifier) @name (#match? @name "^[A-Z]")) @reference.call
(jsx_self_closing_element name: (identifier) @name (#match? @name "^[A-Z]")) @reference.call
(jsx_opening_element name: (member_expression object: (_) @receiver property: (_) @name)) @reference.call
(jsx_self_closing_element name: (member_expression object: (_) @receiver property: (_) @name)) @reference.call
"""
ES_IMPORTS = r"""
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
(export_statement source: (string (string_fragment) @import.module)) @reference.import
"""
REQUIRES = r"""
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
JS_ONLY = r"""
(class_heritage [(identifier) (member_expression)] @name) @reference.inherits
(variable_declarator
  name: (object_pattern (pair_pattern key: (property_identifier) @import.name
                                      value: (identifier) @import.alias))
  value: (call_expression function: (identifier) @_require
    arguments: (arguments . (string (string_fragment) @import.module)))
  (#eq? @_require "require")) @reference.import
(expression_statement (call_expression function: (identifier) @_require
    arguments: (arguments . (string (string_fragment) @import.module)))
  (#eq? @_require "require")) @reference.import
"""
QUERY = DEFINITIONS + MEMBER_FUNCTIONS + DEFAULT_EXPORTS + CALLS + JSX_CALLS + ES_IMPORTS + REQUIRES + JS_ONLY

SPEC = LanguageSpec(
    name="javascript",
    extensions=(".js", ".jsx", ".mjs", ".cjs"),
    grammar=Grammar("tree_sitter_javascript"),
    query=QUERY,
    shebangs=("node", "nodejs"),
    wrapper_types=frozenset({"export_statement", "lexical_declaration", "variable_declaration",
                             "expression_statement"}),
    self_names=frozenset({"this", "super"}),
    prefix_types=frozenset({"decorator"}),  # a class member's `@observable` above it
    package_file="index",
)
