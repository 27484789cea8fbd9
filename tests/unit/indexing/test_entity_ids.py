"""Module names from paths, and which files keep their extension so that module names stay unique."""

from __future__ import annotations

import pytest

from knowcode.indexing.entity_ids import module_name, modules_named_with_extension


@pytest.mark.parametrize(("path", "plain", "with_extension"), [
    ("pkg/sub/mod.py", ("mod", "pkg.sub.mod"), ("mod", "pkg.sub.mod_py")),
    ("pkg/__init__.py", ("pkg", "pkg"), ("pkg", "pkg_py")),
    ("bad.lua", ("bad", "bad"), ("bad", "bad_lua")),
    ("my.pkg/x.tar.gz", ("x.tar", "my_pkg.x_tar"), ("x.tar", "my_pkg.x_tar_gz")),
    ("README", ("README", "README"), ("README", "README")),  # nothing to keep
])
def test_module_name(path: str, plain: tuple[str, str], with_extension: tuple[str, str]) -> None:
    assert module_name(path) == plain
    assert module_name(path, with_extension=True) == with_extension


@pytest.mark.parametrize(("files", "kept"), [
    ({"bad.py": "python", "bad.lua": "lua"}, {"bad.py", "bad.lua"}),
    ({"bad.py": "python", "bad.pyi": "python", "bad.lua": "lua"}, {"bad.py", "bad.pyi", "bad.lua"}),
    ({"pkg/__init__.py": "python", "pkg.lua": "lua"}, {"pkg/__init__.py", "pkg.lua"}),
    ({"README": "text", "README.md": "markdown"}, {"README", "README.md"}),
    ({"src/a.py": "python", "lib/a.lua": "lua"}, set()),  # other folders: other names already
    ({"util.h": "c", "util.cpp": "cpp", "util.c": "c"}, set()),  # a header and its sources: one module
    ({"app.ts": "typescript", "app.js": "javascript", "app.tsx": "tsx"}, set()),  # source and compiled
    ({"mod.py": "python"}, set()),
])
def test_only_modules_shared_across_language_families_keep_the_extension(
        files: dict[str, str], kept: set[str]) -> None:
    assert modules_named_with_extension(files.items()) == kept
    names = [module_name(path, with_extension=path in kept)[1] for path in files]
    if kept:
        assert len(set(names)) == len(names)
