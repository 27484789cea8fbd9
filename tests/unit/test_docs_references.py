"""The docs' code references stay true: every `src/knowcode/...py:NN` names what is written on line NN.

The two query-path documents cite the code they describe as ``NAME`` (``src/knowcode/x.py:NN``), where
NAME is a constant, a function or a fragment of a formula exactly as it is written on line NN. This test
finds every such reference, checks that the file exists and that NAME occurs on that line, so a change
that moves or rewrites the code fails here until the docs are updated with it. A bare ``path:NN`` (one
with no NAME in front of it) fails too: it could not be checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "docs" / "internals" / "retrieval-synthesis.md", ROOT / "docs" / "business-logic.md")

# `NAME` (`src/knowcode/path.py:NN`): NAME is any code span; the reference is the parenthesised span after it.
CHECKED = re.compile(r"`(?P<name>[^`\n]+)`\s*\(`(?P<path>src/knowcode/[\w/]+\.py):(?P<line>\d+)`\)")
ANY = re.compile(r"src/knowcode/[\w/]+\.py:\d+")

# Every constant and formula of the spec, and each ranking signal of our own, must be cited in the
# maintainer's doc (a subset of the NAMEs it references).
REQUIRED_IN_INTERNALS = {
    "CANDIDATE_FACTOR = 3", "RRF_K = 60", "DEFAULT_HYBRID_ALPHA = 0.2", "(1 - alpha) / (RRF_K + rank + 1)",
    "alpha / (RRF_K + rank + 1)", "alpha=self.alpha", "alpha=config.hybrid_alpha", "dict.fromkeys",
    "if chunk_id not in known or chunk_id in excluded:",
    "max(1, min(PER_ENTITY_TOKEN_CAP, max_tokens // limit_entities))",
    "DEFAULT_TOP_K_MULTIPLIER = 5", "docstring: float = 1.2", "recent: float = 1.1",
    "substring: float = 1.5", "kind: float = 2.0", "RECENT_SECONDS", "CONFIDENCE_HALF_SCALE = 0.5",
    "MAX_GAP_BOOST = 0.3", "TASK_TEMPLATES", "TASK_PROMPTS",
    "min(max_tokens * self.boost(section), max_tokens)",
    "SOURCE_SHARE_CAP = 0.5", "MAX_CALLERS = 10", "MAX_CALLEES = 10", "MAX_CHILDREN = 15",
    "DOCSTRING_PREVIEW_CHARS = 200", "CONTEXT_FIELDS", "1.0 / (i + 1)", "SOURCE_BONUS = 0.2",
    "DOCSTRING_BONUS = 0.1", "DOCSTRING_BONUS_CHARS = 50", "SHORT_BUNDLE_CHARS = 100",
    "SHORT_BUNDLE_FACTOR = 0.5", "min(1.0, max(0.0, score / maximum))", "DENSE_TEXT_CHARS = 160",
    "definition: float = 3.0", "definition_path: float = 1.5", "mention: float = 2.0",
    "file_name: float = 1.25", "phrase: float = 2.0", "prose_penalty: float = 0.5",
    "path_mention: float = 2.0", "frame: float = 2.0", "line_link: float = 2.0",
    "DIVERSE_QUERY_TOKENS", "UNDIVERSE_QUERY_TOKENS",
    "FIRST_TIER_LIMIT = 10", "path_penalty: float = 0.5",
    "reexport_penalty: float = 0.6", "file_coherence: float = 1.05", "file_diversity: float = 0.5",
    "SOURCE_HUNGRY_TASKS", "MAX_DEPENDENCIES = 10", "0.0, HitSource.DEPENDENCY",
}


def _references(doc: Path) -> list[tuple[str, str, int]]:
    if not doc.is_file():
        return []  # reported by test_every_reference_names_what_it_points_at
    return [(m["name"], m["path"], int(m["line"])) for m in CHECKED.finditer(doc.read_text(encoding="utf-8"))]


REFERENCES = [(doc.relative_to(ROOT).as_posix(), *ref) for doc in DOCS for ref in _references(doc)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_reference_names_what_it_points_at(doc: Path) -> None:
    assert doc.is_file(), f"{doc.relative_to(ROOT)} is missing"
    text = doc.read_text(encoding="utf-8")
    bare = len(ANY.findall(text)) - len(CHECKED.findall(text))
    assert bare == 0, f"{doc.name}: {bare} path:line reference(s) not written as `NAME` (`path:NN`)"
    assert len(_references(doc)) >= 10, f"{doc.name}: too few code references found; is the format right?"


@pytest.mark.parametrize(("doc", "name", "path", "line"), REFERENCES,
                         ids=[f"{d}->{p}:{n}" for d, _, p, n in REFERENCES])
def test_reference_is_true(doc: str, name: str, path: str, line: int) -> None:
    source = ROOT / path
    assert source.is_file(), f"{doc} cites {path}, which does not exist"
    lines = source.read_text(encoding="utf-8").splitlines()
    assert 1 <= line <= len(lines), f"{doc} cites {path}:{line}, but the file has {len(lines)} lines"
    assert name in lines[line - 1], (
        f"{doc} says `{name}` is on {path}:{line}, which reads: {lines[line - 1].strip()!r}; "
        f"it now appears on line(s) {[n for n, text in enumerate(lines, 1) if name in text] or 'none'}")


def test_internals_doc_cites_every_spec_constant_and_signal() -> None:
    cited = {name for name, _, _ in _references(DOCS[0])}
    missing = sorted(REQUIRED_IN_INTERNALS - cited)
    assert not missing, f"{DOCS[0].name} no longer cites: {missing}"
