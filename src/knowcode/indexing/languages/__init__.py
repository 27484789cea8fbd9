"""Language registry: which spec parses a file, detected by extension, file name or shebang.

Public: :func:`spec_for`, :func:`detect_language`, :func:`header_language`, :func:`is_document_language`,
:data:`GRAMMARS`.
"""

from __future__ import annotations

import importlib
import re
from pathlib import PurePosixPath

from knowcode.indexing.languages.base import LanguageSpec

# One module per language family; each defines SPEC (or SPECS when one grammar wheel serves several).
_SPEC_MODULES = (
    "python", "javascript", "typescript", "php", "ruby", "go", "java", "kotlin", "csharp", "scala", "swift",
    "c", "cpp", "rust", "zig", "lua", "bash", "elixir", "haskell", "documents",
)

# Text languages with no grammar here: still indexed, as line-window chunks, under these names.
TEXT_EXTENSIONS: dict[str, str] = {
    ".sql": "sql", ".dart": "dart", ".r": "r", ".m": "objective-c", ".mm": "objective-c",
    ".pl": "perl", ".pm": "perl", ".ml": "ocaml", ".mli": "ocaml", ".clj": "clojure",
    ".erl": "erlang", ".hrl": "erlang", ".jl": "julia", ".nim": "nim", ".vue": "vue",
    ".svelte": "svelte", ".html": "html", ".htm": "html", ".css": "css", ".scss": "scss",
    ".less": "css", ".xml": "xml", ".gradle": "groovy", ".groovy": "groovy", ".proto": "protobuf",
    ".graphql": "graphql", ".tf": "terraform", ".ini": "ini", ".cfg": "ini", ".txt": "text",
    ".rst": "rst", ".cmake": "cmake", ".ps1": "powershell", ".bat": "batch", ".fs": "fsharp",
    ".v": "verilog", ".sv": "verilog", ".vhd": "vhdl", ".dockerfile": "dockerfile",
}
TEXT_FILENAMES: dict[str, str] = {
    "Dockerfile": "dockerfile", "Makefile": "make", "makefile": "make", "GNUmakefile": "make",
    "CMakeLists.txt": "cmake", "Gemfile": "ruby", "Rakefile": "ruby", "Jenkinsfile": "groovy",
}


def _load_specs() -> tuple[LanguageSpec, ...]:
    specs: list[LanguageSpec] = []
    for module_name in _SPEC_MODULES:
        module = importlib.import_module(f"knowcode.indexing.languages.{module_name}")
        specs.extend(getattr(module, "SPECS", None) or (module.SPEC,))
    return tuple(specs)


_SPECS = _load_specs()
GRAMMARS: dict[str, LanguageSpec] = {spec.name: spec for spec in _SPECS}
_BY_EXTENSION = {ext: spec.name for spec in _SPECS for ext in spec.extensions}
_BY_FILENAME = {name: spec.name for spec in _SPECS for name in spec.filenames}
_BY_INTERPRETER = {interp: spec.name for spec in _SPECS for interp in spec.shebangs}
# The file stems that stand for their folder in some language (LanguageSpec.package_file).
PACKAGE_FILES = frozenset(spec.package_file for spec in _SPECS if spec.package_file)


# Languages whose files are prose or configuration, not code: a code question rarely wants them.
DOCUMENT_LANGUAGES = frozenset({"markdown", "yaml", "toml", "json", "text", "rst", "ini"})


def is_document_language(language: str) -> bool:
    """Whether files of this language are prose or configuration rather than code."""
    return language in DOCUMENT_LANGUAGES


def spec_for(language: str) -> LanguageSpec | None:
    """Return the parsing spec of a language, or None for text indexed only as line windows."""
    return GRAMMARS.get(language)


def _interpreter(first_line: str) -> str:
    """`#!/usr/bin/env -S python3 -u` -> `python3`; `#!/bin/bash` -> `bash`."""
    words = first_line[2:].split()
    if words and words[0].endswith("/env"):
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return PurePosixPath(words[0]).name if words else ""


def detect_language(path: str, first_line: str = "") -> str | None:
    """Name the language of a file from its extension, its name or its shebang line.

    :param path: root-relative path with `/` separators.
    :param first_line: the file's first line, read only when the name says nothing.
    :return: a language with a grammar, a text language, or None if unknown.
    """
    name = PurePosixPath(path).name
    suffix = PurePosixPath(name).suffix.lower()
    for table, key in ((_BY_FILENAME, name), (TEXT_FILENAMES, name), (_BY_EXTENSION, suffix),
                       (TEXT_EXTENSIONS, suffix)):
        if key in table:
            return table[key]
    if first_line.startswith("#!"):
        interpreter = _interpreter(first_line)
        stripped = interpreter.rstrip("0123456789.")
        return _BY_INTERPRETER.get(interpreter) or _BY_INTERPRETER.get(stripped)
    return None


# What only C++ writes, after GitHub linguist's heuristics for `.h`: a template or namespace, an access
# label, `std::`, a class with a base or body, a C++ standard header. abseil's 386 headers are C++,
# and the C grammar took twice as long over them (1.74 against 0.78 s) to find fewer entities.
_CPP_HEADER = re.compile(
    r"^[ \t]*(?:template[ \t]*<|namespace(?:[ \t]+\w+)?[ \t]*\{|(?:public|protected|private)[ \t]*:(?!:)"
    r"|class[ \t]+\w+[ \t]*(?:final\b|:[^:]|\{)|using[ \t]+namespace\b"
    r"|#[ \t]*include[ \t]*<(?:cstd\w*|string|vector|map|set|memory|utility|algorithm|iostream|type_traits"
    r"|functional|array|optional|tuple)>)|\bstd::\w", re.MULTILINE)
_HEADER_SNIFF_CHARS = 64 * 1024  # a header shows its C++ early; a 1 MiB file is not scanned whole


def header_language(language: str, path: str, text: str) -> str:
    """The language to parse a file as: a `.h` file named C is C++ when its text is.

    :param language: the language :func:`detect_language` gave.
    :param path: root-relative path.
    :param text: the file's text.
    :return: ``cpp`` for a C++ header, else `language`.
    """
    if language == "c" and path.endswith(".h") and _CPP_HEADER.search(text, 0, _HEADER_SNIFF_CHARS):
        return "cpp"
    return language
