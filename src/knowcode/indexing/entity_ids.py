"""Stable identifiers and names, shared by every parser so that re-indexing keeps ids unchanged."""

from __future__ import annotations

import hashlib
from pathlib import PurePosixPath

_ID_HEX_CHARS = 16  # 64 bits: collisions are negligible at millions of entities


def stable_id(*parts: str) -> str:
    """Hash the parts into a short hex id; the same parts always give the same id."""
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=_ID_HEX_CHARS // 2).hexdigest()


def module_name(path: str) -> tuple[str, str]:
    """Return (name, dotted qualified name) of the module a file is.

    ``pkg/sub/mod.py`` -> ``("mod", "pkg.sub.mod")``; ``pkg/__init__.py`` -> ``("pkg", "pkg")``.
    """
    pure = PurePosixPath(path)
    parts = [*pure.parent.parts, pure.stem] if pure.stem else list(pure.parent.parts)
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    dotted = ".".join(part.replace(".", "_") for part in parts) or pure.name
    return parts[-1] if parts else pure.name, dotted
