"""Documents: Markdown heading sections and the top-level keys of YAML, TOML and JSON files."""

from knowcode.indexing.languages.base import Grammar, LanguageSpec

MARKDOWN_QUERY = r"""
(section [(atx_heading heading_content: (_) @name) (setext_heading heading_content: (_) @name)]) @definition.section
"""
YAML_QUERY = r"""
(document (block_node (block_mapping (block_mapping_pair key: (_) @name) @definition.key)))
"""
TOML_QUERY = r"""
(document (pair . (_) @name) @definition.key)
(document (table . (_) @name) @definition.key)
(document (table_array_element . (_) @name) @definition.key)
"""
JSON_QUERY = r"""
(document (object (pair key: (string (string_content) @name)) @definition.key))
"""

SPECS = (
    LanguageSpec(name="markdown", extensions=(".md", ".markdown", ".mdx"),
                 grammar=Grammar("tree_sitter_markdown"), query=MARKDOWN_QUERY,
                 comment_types=frozenset({"html_block"})),
    LanguageSpec(name="yaml", extensions=(".yaml", ".yml"), grammar=Grammar("tree_sitter_yaml"),
                 query=YAML_QUERY),
    LanguageSpec(name="toml", extensions=(".toml",), grammar=Grammar("tree_sitter_toml"),
                 query=TOML_QUERY),
    LanguageSpec(name="json", extensions=(".json", ".jsonc"), grammar=Grammar("tree_sitter_json"),
                 query=JSON_QUERY),
)
