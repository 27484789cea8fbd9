"""C++: namespaces, classes, structs, unions, enums, aliases, functions, methods, calls, includes, bases."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

_NAME = "[(identifier) (field_identifier) (destructor_name) (operator_name)] @name"
_SCOPE = "scope: [(namespace_identifier) @receiver (template_type name: (type_identifier) @receiver)]"
# `Outer::name`, `ns::Outer::name`, `a::ns::Outer::name`: the innermost scope is the owning type.
_QUALIFIED = [f"(qualified_identifier {_SCOPE} name: {_NAME})"]
for _ in range(2):
    _QUALIFIED.append(f"(qualified_identifier name: {_QUALIFIED[-1]})")


def _function(declarator: str) -> str:
    inner = f"(function_declarator declarator: {declarator})"
    return (f"(function_definition declarator: [{inner} (pointer_declarator declarator: {inner})"
            f" (reference_declarator {inner})]) @definition.function")


_CALLEE = "[(identifier) @name (template_function name: (identifier) @name)]"
_CALL_QUALIFIED = [f"(qualified_identifier {_SCOPE} name: {_CALLEE})"]
for _ in range(2):
    _CALL_QUALIFIED.append(f"(qualified_identifier name: {_CALL_QUALIFIED[-1]})")

QUERY = "\n".join([
    "(namespace_definition name: [(namespace_identifier) @name"
    " (nested_namespace_specifier (namespace_identifier) @name .)]) @definition.module",
    "(class_specifier name: [(type_identifier) @name (template_type name: (type_identifier) @name)]"
    " body: (_)) @definition.class",
    "(struct_specifier name: [(type_identifier) @name (template_type name: (type_identifier) @name)]"
    " body: (_)) @definition.struct",
    # `class ABSL_ATTRIBUTE_VIEW Span {...}`, `struct DLL_EXPORT Point {...}`: an attribute macro before
    # the name makes the grammar read a function `Span` returning `class ABSL_ATTRIBUTE_VIEW`
    "(function_definition type: (class_specifier !body) declarator: (identifier) @name"
    " body: (compound_statement)) @definition.class",
    "(function_definition type: (struct_specifier !body) declarator: (identifier) @name"
    " body: (compound_statement)) @definition.struct",
    "(union_specifier name: (type_identifier) @name body: (_)) @definition.struct",
    "(enum_specifier name: (type_identifier) @name body: (_)) @definition.enum",
    "(type_definition type: [(struct_specifier !name body: (_)) (union_specifier !name body: (_))]"
    " @definition.struct declarator: (type_identifier) @name)",
    "(type_definition type: (enum_specifier !name body: (_)) @definition.enum declarator: (type_identifier) @name)",
    "(alias_declaration name: (type_identifier) @name) @definition.type",
    "(type_definition type: [(primitive_type) (type_identifier) (sized_type_specifier)"
    " (qualified_identifier) (template_type)] declarator: (type_identifier) @name) @definition.type",
    _function(_NAME),
    *(_function(qualified) for qualified in _QUALIFIED),
    f"(call_expression function: {_CALLEE}) @reference.call",
    "(call_expression function: (field_expression argument: (_) @receiver field: (field_identifier) @name))"
    " @reference.call",
    *(f"(call_expression function: {qualified}) @reference.call" for qualified in _CALL_QUALIFIED),
    "(new_expression type: [(type_identifier) @name (template_type name: (type_identifier) @name)])"
    " @reference.call",
    "(base_class_clause [(type_identifier) (qualified_identifier name: (type_identifier))] @name)"
    " @reference.inherits",
    "(base_class_clause [(template_type name: (type_identifier) @name)"
    " (qualified_identifier name: (template_type name: (type_identifier) @name))]) @reference.inherits",
    "(preproc_include path: (_) @import.module) @reference.import",
    "(using_declaration (qualified_identifier scope: (_) @import.module name: (identifier) @import.name))"
    " @reference.import",
    '(using_declaration "namespace" [(identifier) (qualified_identifier)] @import.module) @reference.import',
])

SPEC = LanguageSpec(
    name="cpp",
    extensions=(".cpp", ".cc", ".cxx", ".hpp", ".hh", ".hxx", ".h++"),
    grammar=Grammar("tree_sitter_cpp"),
    query=QUERY,
    wrapper_types=frozenset({"template_declaration", "type_definition"}),
    self_names=frozenset({"this"}),
    members_beside_types=True,
)
