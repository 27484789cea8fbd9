"""The progress protocol: how long work tells its caller how far it has got.

Lower layers (indexing, retrieval, evals) only call a :data:`ProgressCallback`; what it shows, and
where, is the interface's business (the CLI draws bars on a terminal's stderr, the servers pass none).
A run reports its phases in order; a phase starts with its first call and is finished once
``done == total``. Calls may come from a worker thread (embedding overlaps the BM25 build), so a
callback must be thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum


class Phase(str, Enum):
    """A step of long work; the value is what a person reads."""

    SCAN = "scanning files"
    PARSE = "parsing files"
    RESOLVE = "linking references"
    SEARCH_INDEX = "building the search index"
    EMBED = "embedding chunks"
    EVALUATE = "evaluating queries"


# (phase, done, total): units of the phase finished so far, and units in it (None while unknown).
ProgressCallback = Callable[[Phase, int, "int | None"], None]


def no_progress(phase: Phase, done: int, total: int | None) -> None:
    """A callback that shows nothing (the default of every layer)."""
