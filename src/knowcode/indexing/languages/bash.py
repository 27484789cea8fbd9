"""Bash: functions, commands as calls (common builtins left out) and `source` / `.` imports."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

# Builtins are never defined in the repository, so calls to them are left out; a sourced path built
# from variables (`"$DIR/lib.sh"`) names no file that can be found, so it is left out too.
QUERY = r"""
(function_definition name: (word) @name) @definition.function

((command name: (command_name (word) @name)) @reference.call
  (#not-match? @name "^(source|\\.|echo|printf|cd|exit|return|set|shift|test|\\[|\\[\\[)$")
  (#not-match? @name "^(eval|exec|true|false|read|trap|unset|command|builtin|:)$"))

((command name: (command_name (word) @_source) . argument: [(word) (string) (raw_string)] @import.module)
  @reference.import (#any-of? @_source "source" ".") (#not-match? @import.module "\\$"))
"""

SPEC = LanguageSpec(
    name="bash",
    extensions=(".sh", ".bash"),
    grammar=Grammar("tree_sitter_bash"),
    query=QUERY,
    shebangs=("bash", "sh", "zsh"),
    self_names=frozenset(),
)
