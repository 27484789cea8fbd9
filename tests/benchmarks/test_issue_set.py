"""The issue set: reading instances, choosing and ordering them, and a whole run on a tiny history."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import quality
from issue_set import Instance, parse_instance, select_instances, visiting_order

from knowcode.evals.scoring import Target
from tests.benchmarks.test_issue_corpus import T1, T2, commit, git
from tests.conftest import write_tree

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")


def raw_instance(**changes: Any) -> dict[str, Any]:
    raw = {"instance_id": "o__r-1", "repo": "o/r", "base_commit": "abc", "created_at": "2020-01-02T03:04:05Z",
           "problem_statement": "it breaks",
           "targets": [{"path": "r/m.py", "start_line": 3, "end_line": 9, "kind": "function", "name": "f"}],
           "file_targets": ["r/m.py"]}
    return raw | changes


def test_parse_instance_reads_lists_and_list_literals() -> None:
    expected = (Target("r/m.py", 3, 9),)
    assert parse_instance(raw_instance()).targets == expected
    as_json = json.dumps(raw_instance()["targets"])
    assert parse_instance(raw_instance(targets=as_json)).targets == expected
    as_python = repr(raw_instance()["targets"])  # single quotes: not JSON, a Python literal
    parsed = parse_instance(raw_instance(targets=as_python, file_targets="['r/m.py']"))
    assert parsed.targets == expected and parsed.file_targets == ("r/m.py",)
    assert parse_instance(raw_instance()).created == 1577934245.0


@pytest.mark.parametrize("bad", [{"targets": "not a list"}, {"targets": "{'a': 1}"}, {"file_targets": 3},
                                 {"targets": [{"path": "x.py"}]}])
def test_parse_instance_rejects_malformed_fields(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        parse_instance(raw_instance(**bad))


def instances() -> list[Instance]:
    made = []
    for repo, count in (("a/big", 5), ("b/small", 2), ("c/one", 1)):
        for n in range(count):
            made.append(parse_instance(raw_instance(instance_id=f"{repo}-{n}", repo=repo,
                                                    created_at=f"202{n}-01-01T00:00:00Z")))
    return made


def test_select_by_repository_name_forms() -> None:
    everything = instances()
    assert select_instances(everything) == everything
    assert {i.repo for i in select_instances(everything, ["small", "a/big"])} == {"a/big", "b/small"}
    assert len(select_instances(everything, ["c__one"])) == 1
    with pytest.raises(SystemExit, match="no issue repository nope"):
        select_instances(everything, ["nope"])


def test_sample_is_a_fixed_round_robin() -> None:
    everything = instances()
    sample = select_instances(everything, sample=4)
    assert len(sample) == 4 and {i.repo for i in sample} == {"a/big", "b/small", "c/one"}
    assert sample == select_instances(everything, sample=4)  # deterministic
    assert [i.instance_id for i in sample] == sorted((i.instance_id for i in sample),
                                                     key=[e.instance_id for e in everything].index)


def test_visiting_order_starts_from_the_nearest_end() -> None:
    repo = [i for i in instances() if i.repo == "a/big"]
    oldest_first = sorted(repo, key=lambda i: i.created)
    assert visiting_order(list(reversed(repo)), None) == oldest_first
    assert visiting_order(repo, oldest_first[-1].created + 5) == oldest_first[::-1]
    assert visiting_order(repo, oldest_first[1].created) == oldest_first


def tiny_history(tmp_path: Path) -> tuple[Path, Path]:
    """A two-commit repository (its git dir under repos/) and a benchmark folder with one report at
    each commit: (bench, repos)."""
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    first = commit(origin, {
        "pkg/parser.py": "def parse_header(line):\n    name, value = line.split(':')\n    return name\n",
        "pkg/other.py": "def unrelated():\n    return 42\n",
        "README.md": "# pkg\n\nparse header lines\n"}, T1)
    second = commit(origin, {
        "pkg/parser.py": ("def parse_header(line):\n    name, value = line.split(':', 1)\n"
                          "    return name\n\n\n"
                          "def parse_cookie(text):\n"
                          "    return dict(p.split('=') for p in text.split(';'))\n")}, T2)
    repos = tmp_path / "repos"
    shutil.copytree(origin / ".git", repos / "o__pkg")
    bench = write_tree(tmp_path / "bench", {"corpora.json": "[]"})
    (bench / "annotations").mkdir()
    cases = [
        raw_instance(instance_id="o__pkg-2", repo="o/pkg", base_commit=second,
                     created_at="2020-09-13T12:26:40Z",
                     problem_statement="parse_cookie fails on a cookie without '='",
                     targets=[{"path": "pkg/parser.py", "start_line": 6, "end_line": 7}],
                     file_targets=["pkg/parser.py"]),
        raw_instance(instance_id="o__pkg-1", repo="o/pkg", base_commit=first,
                     created_at="2017-07-14T02:40:00Z",
                     problem_statement="parse_header splits a header value containing ':'",
                     targets=[{"path": "pkg/parser.py", "start_line": 1, "end_line": 3}],
                     file_targets=["pkg/parser.py"]),
    ]
    write_tree(bench, {"issues/swe_verified_dev.json": json.dumps(cases)})
    return bench, repos


def test_a_whole_issue_run_on_a_tiny_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench, repos = tiny_history(tmp_path)
    out = tmp_path / "out" / "quality.json"
    argv = ["--sets", "issues", "--bench", str(bench), "--issue-repos", str(repos), "--store-root",
            str(tmp_path / "stores"), "--methods", "bm25-lines", "knowcode", "--out", str(out),
            "--markdown", str(tmp_path / "out" / "quality.md")]
    quality.main(argv)
    result = json.loads(out.read_text())
    issues = result["sets"]["issues"]
    lines = issues["methods"]["bm25-lines"]
    assert lines["status"] == "ok" and [q["id"] for q in lines["queries"]] == ["o__pkg-1", "o__pkg-2"]
    assert lines["file_acc1"] == 1.0 and lines["fn_recall10"] == 1.0
    assert lines["same_at_long"] == 1.0 and "hits_long" in lines["queries"][0]
    assert issues["methods"]["knowcode"]["file_acc10"] == 1.0
    assert issues["repos"]["o/pkg"]["instances"] == 2
    err = capsys.readouterr().err
    assert "[issues o/pkg 1/2] o__pkg-1" in err  # oldest first on an empty tree
    tree = tmp_path / "stores" / "issues" / "o+pkg" / "tree"
    assert (tree / "pkg/parser.py").read_text().count("def ") == 2  # left at the newest commit
    quality.main(argv)  # again: newest first, from where the tree is, incremental
    err = capsys.readouterr().err
    assert "[issues o/pkg 1/2] o__pkg-2 @ " in err and "0 written, 0 deleted" in err
    again = json.loads(out.read_text())["sets"]["issues"]["methods"]["bm25-lines"]
    assert [q["hits"] for q in again["queries"]] == [q["hits"] for q in lines["queries"]]
    assert "## Issue localization" in (tmp_path / "out" / "quality.md").read_text()


def test_the_issue_set_needs_its_repositories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KNOWCODE_ISSUE_REPOS", raising=False)
    with pytest.raises(SystemExit, match="--issue-repos DIR or set KNOWCODE_ISSUE_REPOS"):
        quality.issue_repos_dir(None)
    monkeypatch.setenv("KNOWCODE_ISSUE_REPOS", str(tmp_path))
    assert quality.issue_repos_dir(None) == tmp_path.resolve()
