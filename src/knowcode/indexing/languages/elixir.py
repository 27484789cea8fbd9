"""Elixir: defmodule as module, def/defp/defmacro as functions, calls, alias/import/require/use imports."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

_DEF = r'"^(def|defp|defmacro|defmacrop|defguard|defguardp)$"'
# Special forms and definition macros look like local calls but call nothing in the repository.
_NOT_CALLED = (r'"^(def\\w*|alias|import|require|use|if|unless|case|cond|with|for|receive|try|quote|'
               r'unquote\\w*|super|__\\w+__)$"')
_LOCAL_CALL = f"(call target: (identifier) @name) @reference.call (#not-match? @name {_NOT_CALLED})"
# A local call is matched through its parent, so that the head of `def name(args)` is not one.
_CALL_PARENTS = ("do_block", "body", "list", "tuple", "interpolation", "source", "else_block",
                 "after_block", "rescue_block", "catch_block")
_IMPORT = '(#match? @_keyword "^(alias|import|require|use)$")'

QUERY = "\n".join([
    '(call target: (identifier) @_keyword (arguments . (alias) @name) (#eq? @_keyword "defmodule"))'
    " @definition.module",
    "(call target: (identifier) @_keyword (arguments . [(call target: (identifier) @name) (identifier) @name"
    ' (binary_operator left: [(call target: (identifier) @name) (identifier) @name] operator: "when")])'
    f" (#match? @_keyword {_DEF})) @definition.function",
    *(f"({parent} {_LOCAL_CALL})" for parent in _CALL_PARENTS),
    f"(pair value: {_LOCAL_CALL})",
    f"(binary_operator right: {_LOCAL_CALL})",
    f'(binary_operator left: {_LOCAL_CALL} operator: _ @_operator (#not-eq? @_operator "when"))',
    f"(call target: (_) @_outer (arguments {_LOCAL_CALL}) (#not-match? @_outer {_DEF}))",
    "(call target: (dot left: (_) @receiver right: (identifier) @name)) @reference.call",
    f"(call target: (identifier) @_keyword (arguments . (alias) @import.module .) {_IMPORT}) @reference.import",
    "(call target: (identifier) @_keyword (arguments . (alias) @import.module . (keywords))"
    ' (#match? @_keyword "^(import|require|use)$")) @reference.import',
    "(call target: (identifier) @_keyword (arguments . (alias) @import.module"
    " . (keywords (pair key: (keyword) @_as value: (alias) @import.alias)))"
    ' (#eq? @_keyword "alias") (#match? @_as "^as:")) @reference.import',
    "(call target: (identifier) @_keyword"
    " (arguments . (dot left: (alias) @import.module right: (tuple (alias) @import.name)))"
    f" {_IMPORT}) @reference.import",
])

SPEC = LanguageSpec(
    name="elixir",
    extensions=(".ex", ".exs"),
    grammar=Grammar("tree_sitter_elixir"),
    query=QUERY,
    shebangs=("elixir",),
    self_names=frozenset({"__MODULE__"}),
    clauses=True,  # `def f(0)` / `def f(n)`: one function
)
