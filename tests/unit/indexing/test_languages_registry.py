"""Language registry: detect_language by extension, file name and shebang; spec_for and GRAMMARS."""

from __future__ import annotations

import pickle

import pytest

from knowcode.indexing.languages import (
    GRAMMARS,
    TEXT_EXTENSIONS,
    TEXT_FILENAMES,
    detect_language,
    header_language,
    spec_for,
)
from knowcode.indexing.languages.base import Grammar


@pytest.mark.parametrize(("path", "language"), [
    ("a.py", "python"),
    ("pkg/sub/a.pyi", "python"),
    ("A.PY", "python"),  # extensions are matched case-insensitively
    ("a.js", "javascript"),
    ("a.mjs", "javascript"),
    ("a.ts", "typescript"),
    ("a.tsx", "tsx"),
    ("a.go", "go"),
    ("src/lib.rs", "rust"),
    ("a.java", "java"),
    ("a.kt", "kotlin"),
    ("a.cs", "csharp"),
    ("a.rb", "ruby"),
    ("a.php", "php"),
    ("a.swift", "swift"),
    ("a.scala", "scala"),
    ("docs/a.md", "markdown"),
    ("a.yml", "yaml"),
    ("pyproject.toml", "toml"),
    ("package.json", "json"),
    ("schema.sql", "sql"),
    ("notes.txt", "text"),
    ("style.css", "css"),
])
def test_by_extension(path: str, language: str) -> None:
    assert detect_language(path) == language


@pytest.mark.parametrize(("path", "language"), [
    ("Makefile", "make"),
    ("sub/dir/makefile", "make"),
    ("GNUmakefile", "make"),
    ("Dockerfile", "dockerfile"),
    ("CMakeLists.txt", "cmake"),  # the file name wins over the .txt extension
    ("Gemfile", "ruby"),
    ("Rakefile", "ruby"),
    ("Jenkinsfile", "groovy"),
])
def test_by_file_name(path: str, language: str) -> None:
    assert detect_language(path) == language


def test_file_names_are_case_sensitive() -> None:
    assert detect_language("DOCKERFILE") is None


@pytest.mark.parametrize(("first_line", "language"), [
    ("#!/usr/bin/env python3", "python"),
    ("#!/usr/bin/env python", "python"),
    ("#!/usr/bin/python3.11", "python"),  # a version suffix is stripped
    ("#! /usr/bin/python", "python"),
    ("#!/usr/bin/env -S python3 -u", "python"),
    ("#!/usr/bin/env -S PYTHONPATH=src python3", "python"),
    ("#!/usr/bin/env -i LANG=C python3", "python"),
    ("#!/usr/bin/env node", "javascript"),
    ("#!/usr/bin/env -S deno run --allow-read", "typescript"),
    ("#!/usr/bin/ruby -w", "ruby"),
    ("#!/usr/bin/env php", "php"),
])
def test_by_shebang(first_line: str, language: str) -> None:
    assert detect_language("bin/tool", first_line) == language


def test_bash_shebang_when_registered() -> None:
    expected = "bash" if "bash" in GRAMMARS else None
    assert detect_language("deploy", "#!/bin/bash") == expected
    assert detect_language("deploy", "#!/usr/bin/env -S bash -e") == expected


@pytest.mark.parametrize(("path", "first_line"), [
    ("data.unknownext", ""),
    ("LICENSE", ""),
    ("script", "#!/usr/bin/env some-unknown-interpreter"),
    ("script", "#!"),
    ("script", "#!/usr/bin/env"),
    ("script", "#!/usr/bin/env -S"),
    ("script", "# not a shebang: python"),
    ("script", "  #!/usr/bin/python"),  # a shebang must start the line
])
def test_unknown(path: str, first_line: str) -> None:
    assert detect_language(path, first_line) is None


def test_name_wins_over_shebang() -> None:
    assert detect_language("tool.rb", "#!/usr/bin/env python3") == "ruby"
    assert detect_language("Makefile", "#!/usr/bin/env python3") == "make"


def test_spec_for_grammar_and_text_languages() -> None:
    python = spec_for("python")
    assert python is not None
    assert python.name == "python"
    assert ".py" in python.extensions
    assert spec_for("sql") is None  # a text language: chunked as line windows, no grammar
    assert spec_for("no-such-language") is None


def test_every_registered_spec_is_keyed_by_its_name() -> None:
    assert GRAMMARS
    for name, spec in GRAMMARS.items():
        assert spec.name == name
        assert all(ext.startswith(".") and ext == ext.lower() for ext in spec.extensions)


def test_every_grammar_extension_and_file_name_detects_its_language() -> None:
    """Grammar tables are consulted first, so a text-only entry never hides a parsable language."""
    for name, spec in GRAMMARS.items():
        for ext in spec.extensions:
            assert detect_language(f"dir/file{ext}") == name
        for file_name in spec.filenames:
            assert detect_language(f"dir/{file_name}") == name


def test_text_tables_agree_with_grammars_where_they_overlap() -> None:
    by_extension = {ext: spec.name for spec in GRAMMARS.values() for ext in spec.extensions}
    by_name = {fname: spec.name for spec in GRAMMARS.values() for fname in spec.filenames}
    for ext in by_extension.keys() & TEXT_EXTENSIONS.keys():
        assert TEXT_EXTENSIONS[ext] == by_extension[ext], ext
    for fname in by_name.keys() & TEXT_FILENAMES.keys():
        assert TEXT_FILENAMES[fname] == by_name[fname], fname


def test_every_grammar_loads_its_wheel_on_first_call() -> None:
    from tree_sitter import Language

    for name, spec in GRAMMARS.items():
        assert isinstance(spec.grammar, Grammar), name
        assert Language(spec.grammar()).abi_version > 0, name  # a real capsule, from the named wheel


def test_a_grammar_pickles_for_the_parse_workers() -> None:
    grammar = Grammar("tree_sitter_typescript", "language_tsx")
    assert pickle.loads(pickle.dumps(grammar)) == grammar


@pytest.mark.parametrize(("text", "language"), [
    ("namespace absl {\nint f();\n}  // namespace absl\n", "cpp"),
    ("template <typename T>\nT id(T x);\n", "cpp"),
    ("class Span : public Base {\n public:\n  int n;\n};\n", "cpp"),
    ("#include <vector>\nint g(void);\n", "cpp"),
    ("struct point { int x, y; };\nint area(const struct point *p);\n", "c"),  # structs are C too
    ("#define MAX(a, b) ((a) > (b) ? (a) : (b))\nint std_max(int a, int b);\n", "c"),
])
def test_a_header_is_cpp_when_its_text_is(text: str, language: str) -> None:
    assert header_language("c", "lib/x.h", text) == language
    assert header_language("c", "lib/x.c", text) == "c"  # only headers are ambiguous
