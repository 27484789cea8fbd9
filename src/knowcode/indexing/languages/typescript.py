"""TypeScript and TSX: classes, interfaces, types, enums, namespaces, functions, calls, imports, bases."""

from knowcode.indexing.languages import javascript
from knowcode.indexing.languages.base import Grammar, LanguageSpec

DEFINITIONS = r"""
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
(variable_declarator name: (identifier) @name
  value: (call_expression arguments: (arguments [(arrow_function) (function_expression)]))) @definition.function
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @definition.function
(method_signature name: (property_identifier) @name) @definition.function
(abstract_method_signature name: (property_identifier) @name) @definition.function
(public_field_definition name: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.function
"""
TS_ONLY = r"""
(extends_clause value: [(identifier) (member_expression)] @name) @reference.inherits
(implements_clause [(type_identifier) (nested_type_identifier)] @name) @reference.inherits
(implements_clause (generic_type name: (_) @name)) @reference.inherits
(extends_type_clause type: [(type_identifier) (nested_type_identifier)] @name) @reference.inherits
(extends_type_clause type: (generic_type name: (_) @name)) @reference.inherits
(import_statement (import_require_clause (identifier) @import.alias
  source: (string (string_fragment) @import.module))) @reference.import
"""
QUERY = DEFINITIONS + javascript.MEMBER_FUNCTIONS + javascript.DEFAULT_EXPORTS + javascript.CALLS + \
    javascript.ES_IMPORTS + javascript.REQUIRES + TS_ONLY

_WRAPPERS = frozenset({"export_statement", "lexical_declaration", "variable_declaration",
                       "ambient_declaration", "expression_statement"})

TYPESCRIPT = LanguageSpec(
    name="typescript",
    extensions=(".ts", ".mts", ".cts"),
    grammar=Grammar("tree_sitter_typescript", "language_typescript"),
    query=QUERY,
    shebangs=("ts-node", "tsx", "deno", "bun"),
    wrapper_types=_WRAPPERS,
    self_names=frozenset({"this", "super"}),
    prefix_types=frozenset({"decorator"}),  # a class member's `@Input()` above it
    package_file="index",
    overload_signatures=True,
)

TSX = LanguageSpec(
    name="tsx",
    extensions=(".tsx",),
    grammar=Grammar("tree_sitter_typescript", "language_tsx"),
    query=QUERY + javascript.JSX_CALLS,
    wrapper_types=_WRAPPERS,
    self_names=frozenset({"this", "super"}),
    prefix_types=frozenset({"decorator"}),  # a class member's `@Input()` above it
    package_file="index",
    overload_signatures=True,
)

SPECS = (TYPESCRIPT, TSX)
