"""Python: classes, functions, methods, calls, imports and base classes."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

QUERY = r"""
(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function
(module (expression_statement (assignment left: (identifier) @name)) @definition.variable)

(call function: (identifier) @name) @reference.call
(call function: (attribute object: (_) @receiver attribute: (identifier) @name)) @reference.call

(class_definition superclasses: (argument_list [(identifier) (attribute)] @name) @reference.inherits)

(import_statement name: (dotted_name) @import.module) @reference.import
(import_statement name: (aliased_import name: (dotted_name) @import.module alias: (identifier) @import.alias)) @reference.import
(import_from_statement module_name: (_) @import.module name: (dotted_name) @import.name) @reference.import
(import_from_statement module_name: (_) @import.module
  name: (aliased_import name: (dotted_name) @import.name alias: (identifier) @import.alias)) @reference.import
"""

SPEC = LanguageSpec(
    name="python",
    extensions=(".py", ".pyi", ".pyw"),
    grammar=Grammar("tree_sitter_python"),
    query=QUERY,
    shebangs=("python", "python3", "python2"),
    wrapper_types=frozenset({"decorated_definition"}),
    docstring_in_body=True,
    self_names=frozenset({"self", "cls", "super()"}),
    overload_decorator="overload",
)
