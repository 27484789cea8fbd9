"""PHP: classes, interfaces, traits, enums, functions, methods, calls, `use` imports, bases and traits."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

QUERY = r"""
(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(function_definition name: (name) @name) @definition.function
(method_declaration name: (name) @name) @definition.function
(namespace_definition name: (namespace_name (name) @name .) body: (compound_statement)) @definition.module

(function_call_expression function: (name) @name) @reference.call
(function_call_expression
  function: (qualified_name prefix: (namespace_name) @receiver (name) @name)) @reference.call
(member_call_expression object: (_) @receiver name: (name) @name) @reference.call
(nullsafe_member_call_expression object: (_) @receiver name: (name) @name) @reference.call
(scoped_call_expression scope: (_) @receiver name: (name) @name) @reference.call
(object_creation_expression (name) @name (#not-match? @name "^(static|self|parent)$")) @reference.call
(object_creation_expression (qualified_name prefix: (namespace_name) @receiver (name) @name)) @reference.call
(function_call_expression function: (qualified_name . (name) @name .)) @reference.call
(object_creation_expression (qualified_name . (name) @name .)) @reference.call

(base_clause [(name) (qualified_name)] @name) @reference.inherits
(class_interface_clause [(name) (qualified_name)] @name) @reference.inherits
(use_declaration [(name) (qualified_name)] @name) @reference.inherits

(namespace_use_declaration
  (namespace_use_clause [(name) (qualified_name)] @import.module !alias)) @reference.import
(namespace_use_declaration (namespace_use_clause [(name) (qualified_name)] @import.module
  alias: (name) @import.alias)) @reference.import
(namespace_use_declaration (namespace_name) @import.module
  body: (namespace_use_group (namespace_use_clause (name) @import.name !alias))) @reference.import
(namespace_use_declaration (namespace_name) @import.module
  body: (namespace_use_group
    (namespace_use_clause (name) @import.name alias: (name) @import.alias))) @reference.import
"""

# `require`/`include` of a literal path, alone or appended to a base such as `__DIR__ . '/x.php'`.
_PATH = r"""[(string (string_content) @import.module) (encapsed_string (string_content) @import.module)
  (binary_expression right: [(string (string_content) @import.module)
                             (encapsed_string (string_content) @import.module)])]"""
QUERY += "\n".join(f"({kind} {_PATH}) @reference.import" for kind in (
    "require_expression", "require_once_expression", "include_expression", "include_once_expression"))

SPEC = LanguageSpec(
    name="php",
    extensions=(".php", ".phtml", ".php8", ".php7", ".inc"),
    grammar=Grammar("tree_sitter_php", "language_php"),
    query=QUERY,
    shebangs=("php",),
    self_names=frozenset({"$this", "self", "static", "parent"}),
)
