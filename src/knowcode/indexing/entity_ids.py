"""Stable identifiers and names, shared by every parser so that re-indexing keeps ids unchanged."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import PurePosixPath

_ID_HEX_CHARS = 16  # 64 bits: collisions are negligible at millions of entities
# Languages whose files of one stem are one module by design, named alike by their includes and
# imports: a C or Objective-C header and its C, C++ or Objective-C source; a TypeScript file and the
# JavaScript compiled next to it. Any other language is a family of its own.
_MODULE_FAMILIES = {"cpp": "c", "objective-c": "c", "tsx": "typescript", "javascript": "typescript"}


def stable_id(*parts: str) -> str:
    """Hash the parts into a short hex id; the same parts always give the same id."""
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=_ID_HEX_CHARS // 2).hexdigest()


def module_name(path: str, *, with_extension: bool = False) -> tuple[str, str]:
    """Return (name, dotted qualified name) of the module a file is.

    ``pkg/sub/mod.py`` -> ``("mod", "pkg.sub.mod")``; ``pkg/__init__.py`` -> ``("pkg", "pkg")``.
    With `with_extension`, the extension joins the last part as any dot inside a part does
    (``my.pkg/x.py`` -> ``my_pkg.x``): ``bad.lua`` -> ``("bad", "bad_lua")``, ``pkg/__init__.py``
    -> ``("pkg", "pkg_py")``; :func:`modules_named_with_extension` says which files need it.
    """
    pure = PurePosixPath(path)
    parts = [*pure.parent.parts, pure.stem] if pure.stem else list(pure.parent.parts)
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    dotted = ".".join(part.replace(".", "_") for part in parts) or pure.name
    if with_extension and pure.suffix:
        dotted = f"{dotted}_{pure.suffix[1:]}"
    return parts[-1] if parts else pure.name, dotted


def modules_named_with_extension(files: Iterable[tuple[str, str]]) -> set[str]:
    """The files whose module name must keep its extension to stay unique.

    Those are the files that would share a module name with a file of another language family
    (``bad.py`` and ``bad.lua``: ``bad_py`` and ``bad_lua``). Every other file keeps its plain name,
    and so do files of one family that share a name (``util.h`` and ``util.cpp`` are one module to
    their includes, as before).

    :param files: (root-relative path, language) of every file of the tree.
    :return: the paths to name with ``module_name(path, with_extension=True)``.
    """
    families: dict[str, set[str]] = {}
    members: dict[str, list[str]] = {}
    for path, language in files:
        dotted = module_name(path)[1]
        families.setdefault(dotted, set()).add(_MODULE_FAMILIES.get(language, language))
        members.setdefault(dotted, []).append(path)
    return {path for dotted, paths in members.items() if len(families[dotted]) > 1 for path in paths}
