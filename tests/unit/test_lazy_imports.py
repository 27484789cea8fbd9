"""Lazy package re-exports: every public name resolves to the object of its module, on first read."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import knowcode
import knowcode.analysis
from knowcode.lazy_imports import lazy_exports


@pytest.mark.parametrize("package", [knowcode, knowcode.analysis], ids=lambda p: p.__name__)
def test_every_public_name_resolves(package: object) -> None:
    names = package.__all__  # type: ignore[attr-defined]
    for name in names:
        assert getattr(package, name) is not None, name
        assert name in dir(package)


def test_names_are_the_objects_of_their_modules() -> None:
    from knowcode import engine
    from knowcode.config import AppConfig
    from knowcode.errors import StoreError

    assert (knowcode.AppConfig, knowcode.KnowCode, knowcode.open, knowcode.StoreError) == (
        AppConfig, engine.KnowCode, engine.open, StoreError)
    from knowcode.analysis.context_synthesizer import synthesize
    from knowcode.analysis.entity_context import entity_context

    assert knowcode.analysis.synthesize is synthesize
    assert knowcode.analysis.entity_context is entity_context  # the function, not its module


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        knowcode.nothing_here  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError):
        exec("from knowcode import nothing_here")


def test_a_submodule_still_imports_through_from_import() -> None:
    call_graph = importlib.import_module("knowcode.analysis.call_graph")
    from knowcode.analysis import call_graph as imported

    assert imported is call_graph


def test_exports_are_imported_on_first_read_only() -> None:
    script = ("import sys, knowcode\nassert 'knowcode.engine' not in sys.modules\n"
              "knowcode.KnowCode\nassert 'knowcode.engine' in sys.modules\nprint('ok')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False,
                          timeout=300)
    assert done.stdout.strip() == "ok", done.stderr


def test_a_name_of_a_missing_module_raises_its_import_error() -> None:
    getattr_, _ = lazy_exports("knowcode", {"Gone": "knowcode.no_such_module"})
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        getattr_("Gone")
