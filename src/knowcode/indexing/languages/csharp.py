"""C#: namespaces, classes, structs, interfaces, enums, records, methods, calls, usings and base lists."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

QUERY = r"""
(namespace_declaration name: (_) @name) @definition.module
(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.struct
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(delegate_declaration name: (identifier) @name) @definition.type
(method_declaration name: (identifier) @name) @definition.function
(constructor_declaration name: (identifier) @name) @definition.function
(local_function_statement name: (identifier) @name) @definition.function

(invocation_expression function: [
  (identifier) @name
  (generic_name . (identifier) @name)
  (member_access_expression expression: _ @receiver
    name: [(identifier) @name (generic_name . (identifier) @name)])
  (conditional_access_expression condition: (_) @receiver
    (member_binding_expression name: (identifier) @name))
]) @reference.call
(object_creation_expression type: [
  (identifier) @name
  (qualified_name) @name
  (generic_name . (identifier) @name)]) @reference.call

(base_list [
  (identifier) @name
  (qualified_name) @name
  (generic_name . (identifier) @name)
  (primary_constructor_base_type type: [(identifier) (qualified_name)] @name)
  (primary_constructor_base_type type: (generic_name . (identifier) @name))]) @reference.inherits

(using_directive !name (_) @import.module .) @reference.import
(using_directive name: (identifier) @import.alias (_) @import.module .) @reference.import
"""

SPEC = LanguageSpec(
    name="csharp",
    extensions=(".cs",),
    grammar=Grammar("tree_sitter_c_sharp"),
    query=QUERY,
    self_names=frozenset({"this", "base"}),
)
