"""Issue snapshots: one store copy per report at its base commit, then scored without re-indexing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import issue_snapshots
import pytest

from tests.benchmarks.test_issue_corpus import T1, T2, commit, git
from tests.benchmarks.test_issue_set import raw_instance
from tests.conftest import write_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


def test_parse_variant_takes_signal_and_config_fields() -> None:
    name, config = issue_snapshots.parse_variant('lexical={"hybrid_alpha": 0.0, "coverage": 1.0}')
    assert name == "lexical" and config.hybrid_alpha == 0.0 and config.ranking.coverage == 1.0
    for bad, message in (("no-equals", "NAME=JSON"), ("x=[1]", "an object"),
                         ('x={"nope": 1}', "unknown keys nope")):
        with pytest.raises(ValueError, match=message):
            issue_snapshots.parse_variant(bad)


def _history(tmp_path: Path) -> tuple[Path, Path]:
    """A two-commit repository and a benchmark folder with one report at each commit."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    first = commit(origin, {"pkg/parser.py": "def parse_header(line):\n    return line.split(':')[0]\n",
                            "pkg/other.py": "def unrelated():\n    return 42\n"}, T1)
    cookie = "def parse_cookie(text):\n    return dict(p.split('=') for p in text.split(';'))\n"
    header = "def parse_header(line):\n    return line.split(':', 1)[0]\n\n\n"
    second = commit(origin, {"pkg/parser.py": header + cookie}, T2)
    repos = tmp_path / "repos"
    shutil.copytree(origin / ".git", repos / "o__pkg")
    bench = write_tree(tmp_path / "bench", {"corpora.json": "[]"})
    (bench / "annotations").mkdir()
    cases = [raw_instance(instance_id="o__pkg-2", repo="o/pkg", base_commit=second,
                          created_at="2020-09-13T12:26:40Z",
                          problem_statement="parse_cookie fails on a cookie without '='",
                          targets=[{"path": "pkg/parser.py", "start_line": 5, "end_line": 6}],
                          file_targets=["pkg/parser.py"]),
             raw_instance(instance_id="o__pkg-1", repo="o/pkg", base_commit=first,
                          created_at="2017-07-14T02:40:00Z",
                          problem_statement="parse_header splits a header value containing ':'",
                          targets=[{"path": "pkg/parser.py", "start_line": 1, "end_line": 2}],
                          file_targets=["pkg/parser.py"])]
    write_tree(bench, {"issues/swe_verified_dev.json": json.dumps(cases)})
    return bench, repos


def test_build_then_score_on_a_tiny_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench, repos = _history(tmp_path)
    snapshots = tmp_path / "snap"
    common = ["--bench", str(bench), "--snapshots", str(snapshots)]
    build = ["build", *common, "--issue-repos", str(repos), "--store-root", str(tmp_path / "stores")]
    assert issue_snapshots.main(build) == 0
    assert "2 snapshots copied" in capsys.readouterr().err
    assert issue_snapshots.main(build) == 0  # built: nothing to do
    assert "0 snapshots copied" in capsys.readouterr().err
    out = tmp_path / "score.json"
    assert issue_snapshots.main(["score", *common, "--variant", 'lexical={"hybrid_alpha": 0.0}',
                                 "--out", str(out)]) == 0
    assert "| knowcode |" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["reports"] == 2 and set(result["means"]) == {"bm25-chunks", "knowcode", "lexical"}
    assert result["means"]["knowcode"]["fn_recall10"] == 1.0  # each report on its own commit's code
    tree = tmp_path / "stores" / "issues" / "o+pkg" / "tree"
    (tree / "pkg" / "parser.py").unlink()  # the tree moved on; the snapshots never read it
    issue_snapshots.main(["score", *common, "--out", str(out)])
    assert json.loads(out.read_text())["means"]["knowcode"]["fn_recall10"] == 1.0
    shutil.rmtree(tree)  # or is gone
    issue_snapshots.main(["score", *common, "--out", str(out)])
    assert json.loads(out.read_text())["means"]["knowcode"]["fn_recall10"] == 1.0


def test_a_partial_snapshot_is_built_again_and_never_scored(tmp_path: Path) -> None:
    bench, repos = _history(tmp_path)
    snapshots = tmp_path / "snap"
    (snapshots / "o__pkg-1" / "index").mkdir(parents=True)  # a copy cut off before its done file
    result = issue_snapshots.score(
        issue_snapshots.load_instances(bench / "issues" / "swe_verified_dev.json"), snapshots,
        {"knowcode": issue_snapshots.AppConfig()})
    assert result["reports"] == 0 and result["means"] == {}
    assert issue_snapshots.build(issue_snapshots.load_instances(bench / "issues" / "swe_verified_dev.json"),
                                 repos, tmp_path / "stores", snapshots) == 2
    assert issue_snapshots.is_done(snapshots / "o__pkg-1")
