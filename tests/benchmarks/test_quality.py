"""The quality benchmark's plumbing: method registry, BM25 baseline, code view and a whole run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest
import quality

import knowcode
from knowcode import AppConfig, KnowCode
from knowcode.evals.scoring import Hit
from tests.conftest import write_tree


class FakeEngine:
    """Stands in for a KnowCode whose `search` exists; records the options it was called with."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, dict[str, Any]]] = []

    def search(self, query: str, limit: int = 10, **options: Any) -> list[Hit]:
        self.calls.append((query, limit, options))
        return [Hit("pkg\\a.py", 1, 2), Hit("b.py", 3, 9)]


def test_run_method_maps_truncates_and_normalises() -> None:
    def two_hits(kc: KnowCode, query: str, limit: int) -> Sequence[Hit]:
        return [Hit("src\\x.py", 1, 4), Hit("y.py", 2, 2)]

    found = quality.run_method(cast(KnowCode, None), "q", "fixed", limit=1, methods={"fixed": two_hits})
    assert found == [Hit("src/x.py", 1, 4)]


def test_knowcode_search_calls_search_and_reports_when_missing() -> None:
    engine = FakeEngine()
    method = quality.KnowCodeSearch()
    assert method.unavailable(cast(KnowCode, engine)) is None
    found = quality.run_method(cast(KnowCode, engine), "q", "m", methods={"m": method})
    assert found == [Hit("pkg/a.py", 1, 2), Hit("b.py", 3, 9)]
    assert engine.calls == [("q", 10, {})]
    reason = method.unavailable(cast(KnowCode, object()))
    assert reason is not None and "search" in reason


def test_ablation_runs_its_own_config_on_the_same_index(sample_repo: Path, tmp_path: Path) -> None:
    kc = knowcode.open(sample_repo, store=tmp_path / "store", config=AppConfig())
    kc.index()
    method = quality.ABLATIONS["sparse-only"]
    found = method(kc, "slugify text", 5)
    assert found and found[0].path == "pkg/util.py"
    engine = method._engine(kc)  # type: ignore[attr-defined]
    assert engine is not kc and engine.store_dir == kc.store_dir and engine.config.hybrid_alpha == 0.0


def test_bm25_baseline_ranks_the_defining_chunk(sample_repo: Path, tmp_path: Path) -> None:
    kc = knowcode.open(sample_repo, store=tmp_path / "store", config=AppConfig())
    baseline = quality.Bm25Baseline()
    found = baseline(kc, "slugify text lower", 10)
    assert found and found[0].path == "pkg/util.py"
    assert baseline(kc, "zzzunknownword", 10) == []


def test_code_view_keeps_only_benchmark_code_files(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "root", {
        "a.py": "x = 1\n", "README.md": "# r\n", "sub/b.ts": "let b = 1;\n", "sub/data.json": "{}\n",
        "node_modules/dep/c.js": "var c;\n", "build/d.py": "d = 1\n", "vendor/e.ts": "let e = 1;\n",
    })
    assert quality.code_view(root, tmp_path / "view") == 3
    kept = sorted(p.relative_to(tmp_path / "view").as_posix() for p in (tmp_path / "view").rglob("*")
                  if p.is_file())
    assert kept == ["a.py", "sub/b.ts", "vendor/e.ts"]


def test_main_scores_a_tiny_benchmark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench"
    write_tree(bench, {
        "corpora.json": json.dumps([{"name": "tiny", "index_root": "pkgroot"}]),
        "annotations/tiny.json": json.dumps([
            {"query": "slugify", "category": "symbol", "relevant": ["src/pkg/util.py"], "secondary": []},
            {"query": "Engine runs things", "category": "semantic", "relevant": ["pkg/core.py"],
             "secondary": [{"path": "pkg/util.py", "start_line": 1, "end_line": 2}]},
        ]),
    })
    write_tree(tmp_path / "corpus" / "tiny" / "pkgroot", {
        "pkg/core.py": 'class Engine:\n    """Runs things."""\n\n    def run(self):\n        return 1\n',
        "pkg/util.py": ("def helper(value):\n    return value\n\n\n"
                        "def slugify(text):\n    return text.lower()\n"),
        "NOTES.md": "# slugify notes\n",
    })
    out = tmp_path / "results" / "quality.json"
    quality.main(["--bench", str(bench), "--corpus", str(tmp_path / "corpus"), "--methods", "bm25-baseline",
                  "--out", str(out), "--markdown", str(tmp_path / "results" / "quality.md"),
                  "--store-root", str(tmp_path / "s")])
    result = json.loads(out.read_text())
    baseline = result["methods"]["bm25-baseline"]
    assert baseline["status"] == "ok"
    assert baseline["repos"]["tiny"]["queries"] == 2
    assert baseline["queries"][0]["ranks"] == [1]
    assert all(not hit[0].endswith(".md") for q in baseline["queries"] for hit in q["hits"])
    assert "| bm25-baseline |" in capsys.readouterr().out
    assert (tmp_path / "results" / "quality.md").read_text().startswith("# Search quality")
