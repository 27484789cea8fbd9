"""Rust: structs, enums, unions, traits, type aliases, mods, functions, impl methods, calls, uses, bounds."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

# The type an `impl` block is for: `Point`, `Wrapper<T>`, `geo::Point`.
_IMPL_TYPE = ("type: [(type_identifier) @receiver (generic_type type: (type_identifier) @receiver)"
              " (scoped_type_identifier name: (type_identifier) @receiver)]")
_TRAIT = "(type_identifier) @name (scoped_type_identifier) @name"

QUERY = rf"""
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name body: (_)) @definition.module

; free functions; functions in `impl` blocks are methods of the impl type instead
(source_file (function_item name: (identifier) @name) @definition.function)
(block (function_item name: (identifier) @name) @definition.function)
(mod_item body: (declaration_list (function_item name: (identifier) @name) @definition.function))
(trait_item body: (declaration_list
  [(function_item name: (identifier) @name) (function_signature_item name: (identifier) @name)]
  @definition.function))
(impl_item {_IMPL_TYPE} body: (declaration_list (function_item name: (identifier) @name) @definition.function))

(call_expression function: [(identifier) @name (generic_function function: (identifier) @name)]) @reference.call
(call_expression function: (field_expression value: (_) @receiver field: (field_identifier) @name)) @reference.call
(call_expression function: [
  (scoped_identifier path: [(identifier) (scoped_identifier) (self) (super) (crate)] @receiver name: (identifier) @name)
  (scoped_identifier path: (generic_type type: (_) @receiver) name: (identifier) @name)
  (generic_function function: (scoped_identifier path: (_) @receiver name: (identifier) @name))
  ]) @reference.call

; `impl Trait for Type` and supertrait bounds `trait A: B + C`
(impl_item trait: [{_TRAIT} (generic_type type: [{_TRAIT}])]) @reference.inherits
(trait_item bounds: (trait_bounds [{_TRAIT} (generic_type type: [{_TRAIT}])]) @reference.inherits)

(use_declaration argument: [(identifier) (scoped_identifier) (crate) (self) (super)] @import.module) @reference.import
(use_declaration argument: (use_as_clause path: (_) @import.module alias: (identifier) @import.alias)) @reference.import
(use_declaration argument: (use_wildcard (_) @import.module)) @reference.import
(use_declaration argument: (scoped_use_list path: (_) @import.module list: (use_list (identifier) @import.name)))
  @reference.import
(use_declaration argument: (scoped_use_list path: (_) @import.module
  list: (use_list (use_as_clause path: (identifier) @import.name alias: (identifier) @import.alias)))) @reference.import
(extern_crate_declaration name: (identifier) @import.module !alias) @reference.import
(extern_crate_declaration name: (identifier) @import.module alias: (identifier) @import.alias) @reference.import
"""

SPEC = LanguageSpec(
    name="rust",
    extensions=(".rs",),
    grammar=Grammar("tree_sitter_rust"),
    query=QUERY,
    comment_types=frozenset({"line_comment", "block_comment"}),
    self_names=frozenset({"self", "Self"}),
    members_beside_types=True,
    prefix_types=frozenset({"attribute_item"}),  # `#[derive(...)]`, `#[test]` above an item
    package_file="mod",
    root_segment="crate",
    self_segment="self",
    parent_segment="super",
    folder_module_stems=frozenset({"mod", "lib", "main"}),
)
