"""Package re-exports imported on first use (PEP 562), so importing one module loads only what it needs.

A package ``__init__`` that imports every public name eagerly makes importing any of its modules
import them all: ``knowcode.analysis.token_counter`` used to bring in context synthesis, the
retrieval orchestrator and numpy, and ``knowcode --help`` the whole engine.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

Getattr = Callable[[str], Any]
Dir = Callable[[], list[str]]


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Getattr, Dir]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public names are imported when first read.

    :param package: the package's ``__name__``.
    :param exports: each public name and the module it comes from.
    :return: the two functions, to assign to ``__getattr__, __dir__`` in the package's ``__init__``.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:  # also how `from package import submodule` learns to import the submodule
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later reads are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return __getattr__, __dir__
