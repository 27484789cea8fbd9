"""The hit breakdown of a quality.py result."""

from __future__ import annotations

import pytest
from hit_analysis import analyse, classify

from knowcode.evals.scoring import Hit, Target

TARGETS = [Target("pkg/core.py", 10, 20)]


@pytest.mark.parametrize(("hit", "kind"), [
    (Hit("pkg/core.py", 15, 30), "target"),
    (Hit("pkg/core.py", 40, 50), "target file"),
    (Hit("tests/test_core.py", 1, 5), "test"),
    (Hit("pkg/core_test.go", 1, 5), "test"),
    (Hit("README.rst", 1, 5), "non-code"),
    (Hit("docs/conf.py", 1, 5), "docs/examples"),
    (Hit("pkg/other.py", 1, 5), "other code"),
])
def test_classify(hit: Hit, kind: str) -> None:
    assert classify(hit, TARGETS, exact=True) == kind


def test_lenient_paths_for_the_corpus_sets() -> None:
    assert classify(Hit("core.py", 12, 12), [Target("src/pkg/core.py", 10, 20)], exact=False) == "target"
    assert classify(Hit("core.py", 12, 12), [Target("src/pkg/core.py", 10, 20)], exact=True) == "other code"


def test_analyse_uses_the_long_answer_for_the_first_rank() -> None:
    data = {"queries": [{"id": "q", "targets": [["a.py", 1, 2]]}],
            "methods": {"m": {"queries": [{"id": "q", "hits": [["b.py", 1, 1]] * 10,
                                           "hits_long": [["b.py", 1, 1]] * 10 + [["a.py", 2, 2]]}]}}}
    found = analyse("issues", data, "m")
    assert found["classes"]["other code"] == 1.0 and found["first_target"]["11-50"] == 1.0
