"""Property: no context bundle ever counts more tokens than its budget (real cl100k counter).

Two levels: the packer on random entities (any text, any caps), and the whole facade on small
generated repositories with random queries, budgets, task types and verbosities.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import knowcode
from knowcode.analysis.context_synthesizer import TASK_TEMPLATES
from knowcode.analysis.entity_facts import EntityFacts
from knowcode.analysis.packing import pack
from knowcode.analysis.token_counter import default_counter
from knowcode.engine import KnowCode
from knowcode.models import SearchHit, TaskType, Verbosity
from tests.conftest import write_tree

COUNTER = default_counter()
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)
NAMES = st.lists(st.text("abcxyz_.`", min_size=1, max_size=30), max_size=25)


@st.composite
def entity_facts(draw: st.DrawFn) -> EntityFacts:
    lines = draw(st.lists(TEXT.filter(lambda t: "\n" not in t and "\r" not in t), max_size=60))
    source = "\n".join(lines)
    name = draw(st.text("abcdef", min_size=1, max_size=12))
    dependency = draw(st.booleans())
    hit = SearchHit("p/m.py", 1, max(1, len(lines)), 0.0 if dependency else 1.0, name, name, name, "function",
                    "dependency" if dependency else "sparse", name, source, draw(TEXT), draw(TEXT))
    callers, callees, children = (tuple(draw(NAMES)) for _ in range(3))
    # a list may be cut where a bundle stops showing it: totals up to thousands beyond it
    more = st.integers(0, 5000)
    return EntityFacts(hit, "python", 1, max(1, len(lines)), source, 1, max(1, len(lines)),
                       callers, callees, children, len(callers) + draw(more), len(callees) + draw(more),
                       len(children) + draw(more))


@settings(max_examples=150, deadline=None)
@given(entities=st.lists(entity_facts(), max_size=6), max_tokens=st.integers(50, 4000),
       task=st.sampled_from(TaskType), with_source=st.booleans(), limit=st.integers(1, 6))
def test_packed_bundles_never_exceed_the_budget(entities: list[EntityFacts], max_tokens: int, task: TaskType,
                                                with_source: bool, limit: int) -> None:
    result = pack(entities, TASK_TEMPLATES[task], include_source=with_source, max_tokens=max_tokens,
                  per_entity_budget=max(1, min(2000, max_tokens // limit)), counter=COUNTER)
    assert result.total_tokens == COUNTER.count(result.text) <= max_tokens


WORDS = ["parse", "render", "token", "budget", "cache", "index", "query", "score", "merge", "split",
         "load", "save", "error", "retry", "stream", "buffer", "graph", "node", "edge", "path"]


def generated_tree(seed: int) -> dict[str, str]:
    """A small Python package: modules of functions and classes that call each other, with docstrings."""
    rng = random.Random(seed)
    names = [f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{i}" for i in range(24)]
    files: dict[str, str] = {}
    for module in range(4):
        parts = []
        for name in names[module * 6:(module + 1) * 6]:
            doc = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 40)))
            calls = "\n".join(f"    {rng.choice(names)}(value)" for _ in range(rng.randint(0, 4)))
            body = "\n".join(f"    value = value + {rng.randint(0, 99)}  # {rng.choice(WORDS)}"
                             for _ in range(rng.randint(1, 60)))
            if rng.random() < 0.3:
                parts.append(f"class {name.title().replace('_', '')}:\n    \"\"\"{doc}\"\"\"\n\n"
                             f"    def {name}(self, value):\n    {calls.replace(chr(10), chr(10) + '    ')}\n"
                             f"    {body.replace(chr(10), chr(10) + '    ')}\n        return value\n")
            else:
                parts.append(f"def {name}(value):\n    \"\"\"{doc}\"\"\"\n{calls}\n{body}\n"
                             "    return value\n")
        files[f"pkg{seed}/mod_{module}.py"] = "\n\n".join(parts)
    return files


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[KnowCode]]:
    opened = []
    for seed in range(3):
        root = write_tree(tmp_path_factory.mktemp(f"repo{seed}"), generated_tree(seed))
        engine = knowcode.open(root, store=tmp_path_factory.mktemp(f"store{seed}"))
        engine.index()
        opened.append(engine)
    yield opened
    for engine in opened:
        engine.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 2), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
       max_tokens=st.integers(50, 4000), limit=st.integers(1, 5), task=st.sampled_from(["auto", *TaskType]),
       verbosity=st.sampled_from(Verbosity), expand=st.booleans())
def test_context_bundles_never_exceed_the_budget(engines: list[KnowCode], which: int, words: list[str],
                                                 max_tokens: int, limit: int, task: str, verbosity: Verbosity,
                                                 expand: bool) -> None:
    bundle = engines[which].context(" ".join(words), max_tokens=max_tokens, limit_entities=limit,
                                    task_type=task, verbosity=verbosity, expand_deps=expand)
    assert bundle.total_tokens == COUNTER.count(bundle.context_text) <= max_tokens
    assert 0.0 <= bundle.sufficiency_score <= 1.0
    assert bundle.truncated == bool(bundle.truncation)
