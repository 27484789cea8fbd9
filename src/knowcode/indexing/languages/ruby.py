"""Ruby: classes, modules, methods, singleton methods, calls, require imports, superclasses and mixins."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

QUERY = r"""
(class name: (constant) @name) @definition.class
(class name: (scope_resolution name: (constant) @name)) @definition.class
(module name: (scope_resolution name: (constant) @name)) @definition.module
(module name: (constant) @name) @definition.module
(method name: (_) @name) @definition.function
(singleton_method name: (_) @name) @definition.function

(call !receiver method: (identifier) @name
  (#not-match? @name "^(require|require_relative|load|include|extend|prepend|new)$")) @reference.call
(call receiver: (_) @receiver method: (identifier) @name (#not-eq? @name "new")) @reference.call
(call receiver: (constant) @name method: (identifier) @_new (#eq? @_new "new")) @reference.call
(call receiver: (scope_resolution scope: (_) @receiver name: (constant) @name)
  method: (identifier) @_new (#eq? @_new "new")) @reference.call

(superclass [(constant) (scope_resolution)] @name) @reference.inherits
(call !receiver method: (identifier) @_mixin arguments: (argument_list [(constant) (scope_resolution)] @name)
  (#any-of? @_mixin "include" "extend" "prepend")) @reference.inherits

(call !receiver method: (identifier) @_require
  arguments: (argument_list . (string (string_content) @import.module))
  (#any-of? @_require "require" "require_relative" "load")) @reference.import
"""

SPEC = LanguageSpec(
    name="ruby",
    extensions=(".rb", ".rake", ".gemspec", ".ru"),
    grammar=Grammar("tree_sitter_ruby"),
    query=QUERY,
    shebangs=("ruby",),
    filenames=("Rakefile", "Gemfile", "Vagrantfile", "Guardfile", "Podfile", "Brewfile"),
    self_names=frozenset({"self"}),
)
