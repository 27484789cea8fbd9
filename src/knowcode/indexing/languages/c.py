"""C: functions, structs, unions, enums, typedefs, calls and #include imports."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

QUERY = r"""
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @definition.function
(function_definition declarator: (pointer_declarator
  declarator: (function_declarator declarator: (identifier) @name))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator
  declarator: (function_declarator declarator: (identifier) @name)))) @definition.function

(struct_specifier name: (type_identifier) @name body: (_)) @definition.struct
(union_specifier name: (type_identifier) @name body: (_)) @definition.struct
(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum

; `typedef struct { ... } Name;`: the anonymous body takes the typedef's name
(type_definition type: (struct_specifier !name body: (_)) @definition.struct
  declarator: (type_identifier) @name)
(type_definition type: (union_specifier !name body: (_)) @definition.struct
  declarator: (type_identifier) @name)
(type_definition type: (enum_specifier !name body: (_)) @definition.enum
  declarator: (type_identifier) @name)

; other typedefs; `typedef struct Point Point;` adds no new name, so it is left out
(type_definition type: [(primitive_type) (type_identifier) (sized_type_specifier)]
  declarator: [(type_identifier) @name
               (pointer_declarator declarator: (type_identifier) @name)
               (function_declarator declarator: (parenthesized_declarator
                 (pointer_declarator declarator: (type_identifier) @name)))]) @definition.type
(type_definition
  type: [(struct_specifier !body name: (_) @_tag) (union_specifier !body name: (_) @_tag)
         (enum_specifier !body name: (_) @_tag)]
  declarator: [(type_identifier) @name (pointer_declarator declarator: (type_identifier) @name)]
  (#not-eq? @_tag @name)) @definition.type

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (field_expression argument: (_) @receiver field: (field_identifier) @name)) @reference.call

(preproc_include path: (_) @import.module) @reference.import
"""

SPEC = LanguageSpec(
    name="c",
    extensions=(".c", ".h"),
    grammar=Grammar("tree_sitter_c"),
    query=QUERY,
    wrapper_types=frozenset({"type_definition"}),
    self_names=frozenset(),
)
