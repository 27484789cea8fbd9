"""Lua: functions (`function M.f`, `function M:m`, local and assigned ones), calls and require imports."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

_REQUIRE = ("(function_call name: (identifier) @_require arguments: (arguments . (string content: (_) @import.module))"
            ' (#eq? @_require "require"))')

QUERY = rf"""
(function_declaration name: (identifier) @name) @definition.function
(function_declaration name: (dot_index_expression table: (_) @receiver field: (identifier) @name)) @definition.function
(function_declaration name: (method_index_expression table: (_) @receiver method: (identifier) @name))
  @definition.function

; `local f = function() end` and `M.f = function() end`: the assignment wraps the function
(assignment_statement (variable_list . name: (identifier) @name)
  (expression_list . value: (function_definition) @definition.function))
(assignment_statement (variable_list . name: (dot_index_expression table: (_) @receiver field: (identifier) @name))
  (expression_list . value: (function_definition) @definition.function))

((function_call name: (identifier) @name) @reference.call (#not-eq? @name "require"))
(function_call name: (dot_index_expression table: (_) @receiver field: (identifier) @name)) @reference.call
(function_call name: (method_index_expression table: (_) @receiver method: (identifier) @name)) @reference.call

(assignment_statement (variable_list . name: (identifier) @import.alias)
  (expression_list . value: {_REQUIRE})) @reference.import
(chunk {_REQUIRE} @reference.import)
(block {_REQUIRE} @reference.import)
"""

SPEC = LanguageSpec(
    name="lua",
    extensions=(".lua",),
    grammar=Grammar("tree_sitter_lua"),
    query=QUERY,
    shebangs=("lua", "luajit"),
    wrapper_types=frozenset({"variable_declaration", "assignment_statement", "expression_list"}),
    self_names=frozenset({"self"}),
    package_file="init",
)
