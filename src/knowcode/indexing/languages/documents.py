"""Documents: Markdown heading sections and the top-level keys of YAML, TOML and JSON files."""

import tree_sitter_json
import tree_sitter_markdown
import tree_sitter_toml
import tree_sitter_yaml

from knowcode.indexing.languages.base import LanguageSpec

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
                 grammar=tree_sitter_markdown.language, query=MARKDOWN_QUERY,
                 comment_types=frozenset({"html_block"})),
    LanguageSpec(name="yaml", extensions=(".yaml", ".yml"), grammar=tree_sitter_yaml.language,
                 query=YAML_QUERY),
    LanguageSpec(name="toml", extensions=(".toml",), grammar=tree_sitter_toml.language,
                 query=TOML_QUERY),
    LanguageSpec(name="json", extensions=(".json", ".jsonc"), grammar=tree_sitter_json.language,
                 query=JSON_QUERY),
)
