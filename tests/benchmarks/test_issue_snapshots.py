"""Issue snapshots: one store copy per report at its base commit, then scored without re-indexing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import issue_snapshots
import pytest

from tests.benchmarks.test_issue_set import tiny_history

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


def test_parse_variant_takes_signal_and_config_fields() -> None:
    name, config = issue_snapshots.parse_variant('lexical={"hybrid_alpha": 0.0, "coverage": 1.0}')
    assert name == "lexical" and config.hybrid_alpha == 0.0 and config.ranking.coverage == 1.0
    for bad, message in (("no-equals", "NAME=JSON"), ("x=[1]", "an object"),
                         ('x={"nope": 1}', "unknown keys nope")):
        with pytest.raises(ValueError, match=message):
            issue_snapshots.parse_variant(bad)


def test_build_then_score_on_a_tiny_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench, repos = tiny_history(tmp_path)
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
    assert result["means"]["knowcode"]["file_acc10_of50"] == 1.0
    tree = tmp_path / "stores" / "issues" / "o+pkg" / "tree"
    (tree / "pkg" / "parser.py").unlink()  # the tree moved on; the snapshots never read it
    issue_snapshots.main(["score", *common, "--out", str(out)])
    assert json.loads(out.read_text())["means"]["knowcode"]["fn_recall10"] == 1.0
    shutil.rmtree(tree)  # or is gone
    issue_snapshots.main(["score", *common, "--out", str(out)])
    assert json.loads(out.read_text())["means"]["knowcode"]["fn_recall10"] == 1.0


def test_a_partial_snapshot_is_built_again_and_never_scored(tmp_path: Path) -> None:
    bench, repos = tiny_history(tmp_path)
    snapshots = tmp_path / "snap"
    (snapshots / "o__pkg-1" / "index").mkdir(parents=True)  # a copy cut off before its done file
    result = issue_snapshots.score(
        issue_snapshots.load_instances(bench / "issues" / "swe_verified_dev.json"), snapshots,
        {"knowcode": issue_snapshots.AppConfig()})
    assert result["reports"] == 0 and result["means"] == {}
    assert issue_snapshots.build(issue_snapshots.load_instances(bench / "issues" / "swe_verified_dev.json"),
                                 repos, tmp_path / "stores", snapshots) == 2
    assert issue_snapshots.is_done(snapshots / "o__pkg-1")
