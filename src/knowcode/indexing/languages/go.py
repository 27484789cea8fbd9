"""Go: structs, interfaces, named types, functions, receiver methods, calls, imports, embedded fields."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

# A lone `type X ...` declaration is captured whole (its span and leading comment start at `type`);
# the specs of a grouped `type ( ... )` declaration are captured one by one.
QUERY = r"""
((type_declaration (type_spec name: (type_identifier) @name type: (struct_type))) @definition.struct
  (#not-match? @definition.struct "^type\\s*\\("))
(type_declaration "(" (type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct)
((type_declaration (type_spec name: (type_identifier) @name type: (interface_type))) @definition.interface
  (#not-match? @definition.interface "^type\\s*\\("))
(type_declaration "(" (type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface)
((type_declaration (type_spec name: (type_identifier) @name
   type: (_) @_type (#not-match? @_type "^(struct|interface)\\s*\\{"))) @definition.type
  (#not-match? @definition.type "^type\\s*\\("))
(type_declaration "(" (type_spec name: (type_identifier) @name
  type: (_) @_type (#not-match? @_type "^(struct|interface)\\s*\\{")) @definition.type)
((type_declaration (type_alias name: (type_identifier) @name)) @definition.type
  (#not-match? @definition.type "^type\\s*\\("))
(type_declaration "(" (type_alias name: (type_identifier) @name) @definition.type)

(function_declaration name: (identifier) @name) @definition.function
(method_declaration
  receiver: (parameter_list (parameter_declaration type: [
    (type_identifier) @receiver
    (pointer_type (type_identifier) @receiver)
    (generic_type type: (type_identifier) @receiver)
    (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name) @definition.function
(method_elem name: (field_identifier) @name) @definition.function

(call_expression function: (identifier) @name) @reference.call
(call_expression function: (selector_expression operand: (_) @receiver field: (field_identifier) @name))
  @reference.call

(field_declaration_list (field_declaration !name type: [
  (type_identifier) @name
  (qualified_type) @name
  (pointer_type [(type_identifier) (qualified_type)] @name)
  (generic_type type: (_) @name)]) @reference.inherits)
(interface_type (type_elem . [(type_identifier) (qualified_type)] @name .) @reference.inherits)

(import_spec !name path: (_) @import.module) @reference.import
(import_spec name: (package_identifier) @import.alias path: (_) @import.module) @reference.import
(import_spec name: [(blank_identifier) (dot)] path: (_) @import.module) @reference.import
"""

SPEC = LanguageSpec(
    name="go",
    extensions=(".go",),
    grammar=Grammar("tree_sitter_go"),
    query=QUERY,
    members_beside_types=True,
)
