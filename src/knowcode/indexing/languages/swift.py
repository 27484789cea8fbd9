"""Swift: classes, structs, enums, actors, protocols, extensions' methods, functions, calls, imports."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

# Members of an `extension T` are captured with @receiver T, so they join T when it is in the file.
# Function patterns are tied to where the function sits, so no function is matched twice.
_MEMBERS = r"""
  [(function_declaration)
   (init_declaration "init" @name)
   (deinit_declaration "deinit" @name)] @definition.function"""

QUERY = rf"""
(class_declaration declaration_kind: ["class" "actor"] name: (type_identifier) @name) @definition.class
(class_declaration declaration_kind: "struct" name: (type_identifier) @name) @definition.struct
(class_declaration declaration_kind: "enum" name: (type_identifier) @name) @definition.enum
(protocol_declaration name: (type_identifier) @name) @definition.interface
(typealias_declaration name: (type_identifier) @name) @definition.type
(protocol_function_declaration name: (simple_identifier) @name) @definition.function

(source_file (function_declaration) @definition.function)
(statements (function_declaration) @definition.function)
(class_declaration declaration_kind: ["class" "actor" "struct" "enum"]
  body: [(class_body {_MEMBERS}) (enum_class_body {_MEMBERS})])
(class_declaration declaration_kind: "extension" name: (user_type . (type_identifier) @receiver)
  body: (class_body {_MEMBERS}))

(call_expression . (simple_identifier) @name) @reference.call
(call_expression . (navigation_expression target: (_) @receiver
  suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call
; The grammar reads `a * f(x)` as `(a * f)(x)`: the callee is the right operand.
(call_expression . (_ rhs: (simple_identifier) @name) . (call_suffix)) @reference.call
(call_expression . (_ rhs: (navigation_expression target: (_) @receiver
  suffix: (navigation_suffix suffix: (simple_identifier) @name))) . (call_suffix)) @reference.call

(class_declaration declaration_kind: ["class" "actor" "struct" "enum"]
  (inheritance_specifier inherits_from: [
    (user_type (type_identifier) .) @name
    (user_type (type_identifier) @name . (type_arguments))]) @reference.inherits)
(protocol_declaration
  (inheritance_specifier inherits_from: [
    (user_type (type_identifier) .) @name
    (user_type (type_identifier) @name . (type_arguments))]) @reference.inherits)

(import_declaration (identifier) @import.module) @reference.import
"""

SPEC = LanguageSpec(
    name="swift",
    extensions=(".swift",),
    grammar=Grammar("tree_sitter_swift"),
    query=QUERY,
    comment_types=frozenset({"comment", "multiline_comment"}),
    self_names=frozenset({"self", "Self", "super"}),
    members_beside_types=True,
)
