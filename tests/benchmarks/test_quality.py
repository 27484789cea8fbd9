"""The quality benchmark's plumbing: method registry, ablation engines, code view and a whole run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import corpus_sets
import pytest
import quality
import report

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


def test_the_default_methods_and_the_headline_baseline() -> None:
    assert list(quality.METHODS) == ["bm25-lines", "bm25-chunks", "knowcode"]
    assert "sparse-only" in quality.ABLATIONS and "no-file_diversity" in quality.ABLATIONS


def test_ablation_runs_its_own_config_on_the_same_index(sample_repo: Path, tmp_path: Path) -> None:
    kc = knowcode.open(sample_repo, store=tmp_path / "store", config=AppConfig())
    kc.index()
    method = quality.ABLATIONS["sparse-only"]
    found = method(kc, "slugify text", 5)
    assert found and found[0].path == "pkg/util.py"
    engine = method._engine(kc)  # type: ignore[attr-defined]
    assert engine is not kc and engine.store_dir == kc.store_dir and engine.config.hybrid_alpha == 0.0
    method.release(kc)  # type: ignore[attr-defined]


def test_ablation_engine_sees_a_reindex_after_prepare(sample_repo: Path, tmp_path: Path) -> None:
    kc = knowcode.open(sample_repo, store=tmp_path / "store", config=AppConfig())
    kc.index()
    method = quality.KnowCodeSearch(AppConfig(hybrid_alpha=0.0))
    assert all(h.path != "pkg/extra.py" for h in method(kc, "frobnicate", 5))
    (sample_repo / "pkg" / "extra.py").write_text("def frobnicate():\n    return 1\n")
    kc.index()
    method.prepare(kc)
    assert [h.path for h in method(kc, "frobnicate", 5)][:1] == ["pkg/extra.py"]
    method.release(kc)


def test_code_view_keeps_only_benchmark_code_files(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "root", {
        "a.py": "x = 1\n", "README.md": "# r\n", "sub/b.ts": "let b = 1;\n", "sub/data.json": "{}\n",
        "node_modules/dep/c.js": "var c;\n", "build/d.py": "d = 1\n", "vendor/e.ts": "let e = 1;\n",
    })
    assert quality.code_view(root, tmp_path / "view") == 3
    kept = sorted(p.relative_to(tmp_path / "view").as_posix() for p in (tmp_path / "view").rglob("*")
                  if p.is_file())
    assert kept == ["a.py", "sub/b.ts", "vendor/e.ts"]


def tiny_bench(tmp_path: Path) -> tuple[Path, Path]:
    """A benchmark folder with file-level annotations and span questions for one repo, and its corpus."""
    bench = write_tree(tmp_path / "bench", {
        "corpora.json": json.dumps([{"name": "tiny", "index_root": "pkgroot"}, {"name": "other",
                                                                               "index_root": "x"}]),
        "annotations/tiny.json": json.dumps([
            {"query": "slugify", "category": "symbol", "relevant": ["src/pkg/util.py"], "secondary": []},
            {"query": "Engine runs things", "category": "semantic", "relevant": ["pkg/core.py"],
             "secondary": [{"path": "pkg/util.py", "start_line": 1, "end_line": 2}]},
        ]),
        "questions/tiny.json": json.dumps([
            {"query": "how is text turned into a slug in lower case", "category": "semantic",
             "task": "explain",
             "relevant": [{"path": "src/pkg/util.py", "start_line": 5, "end_line": 6}],
             "secondary": [{"path": "src/pkg/core.py", "start_line": 1, "end_line": 2}], "note": "n"},
        ]),
    })
    corpus = write_tree(tmp_path / "corpus" / "tiny" / "pkgroot", {
        "pkg/core.py": 'class Engine:\n    """Runs things."""\n\n    def run(self):\n        return 1\n',
        "pkg/util.py": ("def helper(value):\n    return value\n\n\n"
                        "def slugify(text):\n    return text.lower()\n"),
        "NOTES.md": "# slugify notes\n",
    }).parent.parent
    return bench, corpus


def test_load_repos_reads_both_sets(tmp_path: Path) -> None:
    bench, corpus = tiny_bench(tmp_path)
    both = corpus_sets.load_repos(bench, corpus, None, ("file", "questions"))
    assert [r.name for r in both] == ["tiny"] and len(both[0].queries) == 2 and len(both[0].questions) == 1
    questions_only = corpus_sets.load_repos(bench, corpus, None, ("questions",))
    assert questions_only[0].queries == [] and len(questions_only[0].of_set("questions")) == 1


def test_load_repos_reads_questions_from_another_folder(tmp_path: Path) -> None:
    bench, corpus = tiny_bench(tmp_path)
    def question(text: str, start: int) -> dict[str, object]:
        return {"query": text, "category": "semantic", "task": "locate", "note": "n", "secondary": [],
                "relevant": [{"path": "src/pkg/core.py", "start_line": start, "end_line": 5}]}

    heldout = write_tree(tmp_path / "heldout", {"tiny.json": json.dumps([
        question("where does the engine run", 4), question("Engine", 1)])})
    repos = corpus_sets.load_repos(bench, corpus, None, ("file", "questions"), heldout)
    assert len(repos[0].queries) == 2  # the file-level set still comes from the bench folder
    assert [q.text for q in repos[0].questions] == ["where does the engine run", "Engine"]

    # a questions folder with its own corpora.json covers repositories outside the bench corpus
    write_tree(heldout, {"corpora.json": json.dumps([{"name": "tiny", "index_root": "pkgroot/pkg"}])})
    own = corpus_sets.load_repos(bench, corpus, None, ("questions",), heldout)
    assert [(r.name, r.root.name, len(r.questions)) for r in own] == [("tiny", "pkg", 2)]
    write_tree(heldout, {"corpora.json": json.dumps([{"name": "absent", "index_root": "."}]),
                         "absent.json": (heldout / "tiny.json").read_text()})
    with pytest.raises(SystemExit, match=r"README\.md says how to get them"):
        corpus_sets.load_repos(bench, corpus, None, ("questions",), heldout)


def test_main_scores_both_corpus_sets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench, corpus = tiny_bench(tmp_path)
    out = tmp_path / "results" / "quality.json"
    quality.main(["--sets", "file", "questions", "--bench", str(bench), "--corpus", str(corpus),
                  "--methods", "bm25-lines", "bm25-chunks", "--out", str(out),
                  "--markdown", str(tmp_path / "results" / "quality.md"),
                  "--store-root", str(tmp_path / "s")])
    result = json.loads(out.read_text())
    assert list(result["sets"]) == ["file", "questions"]
    file_set = result["sets"]["file"]
    baseline = file_set["methods"]["bm25-lines"]
    assert baseline["status"] == "ok" and file_set["repos"]["tiny"]["queries"] == 2
    assert baseline["queries"][0]["id"] == "tiny#0" and baseline["queries"][0]["ranks"] == [1]
    assert all(not hit[0].endswith(".md") for q in baseline["queries"] for hit in q["hits"])
    assert file_set["queries"][0]["query"] == "slugify"
    questions = result["sets"]["questions"]["methods"]["bm25-chunks"]
    assert set(questions) >= {"ndcg10", "recall10", "mrr10", "mean_lines_per_hit", "categories", "queries"}
    assert questions["queries"][0]["ranks"][0] == 1 and questions["mrr10"] == 1.0
    printed = capsys.readouterr().out
    assert "| questions: Recall@10 |" in printed and "## Span-level questions" in printed
    assert (tmp_path / "results" / "quality.md").read_text().startswith("# Search quality")


def test_ablation_table_has_a_column_per_set() -> None:
    def method(value: float) -> dict[str, Any]:
        return {"status": "ok", "ndcg10": value, "fn_ndcg10": value, "fn_recall10": value,
                "file_acc10": value}

    result = {"ablations": ["no-x"], "sets": {
        "file": {"methods": {"knowcode": method(0.8), "no-x": method(0.7)}},
        "issues": {"methods": {"knowcode": method(0.3), "no-x": method(0.35)}}}}
    table = "\n".join(report.ablation_section(result))
    assert "| method | file NDCG@10 | issues fn NDCG@10 | issues fn R@10 | issues file Acc@10 |" in table
    assert "| no-x | 0.700 (-0.100) | 0.350 (+0.050) |" in table


def test_results_json_has_one_line_per_query_and_round_trips() -> None:
    result = {"a": 1, "sets": {"file": {"methods": {"m": {"ndcg10": 0.5, "queries": [
        {"id": "r#0", "hits": [["a.py", 1, 2]]}, {"id": "r#1", "hits": []}]}}, "empty": [], "nested": [[1]]}}}
    text = report.dump_json(result)
    assert json.loads(text) == result
    assert text.splitlines()[8].strip() == '{"id":"r#0","hits":[["a.py",1,2]]},'
