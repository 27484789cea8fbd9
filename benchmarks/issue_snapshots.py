"""Issue localization on per-report store snapshots: index each base commit once, score many rankings.

`quality.py --sets issues` walks each repository's base commits and re-indexes between them, so every
ranking experiment on the 100 reports pays the whole walk (62 min on the 2-core benchmark machine, 40
of it indexing). This script splits the two:

- `build` walks the commits once, as issue_set.py does (one work tree and store per repository under
  STORE_ROOT/issues/), and copies the store as it stands at each report's base commit to
  SNAPSHOTS/<instance id>/index (a copy is its repository's store: ~380 MB for sympy; the 53 reports of
  the eight smaller repositories and sympy take ~10 GB). A report whose snapshot exists is skipped, so
  an interrupted build resumes.
- `score` opens each snapshot read-only (`KnowCode.reader()`: it never indexes, so the work tree,
  which has moved on, is never read) and scores plain BM25 over KnowCode's chunks (`bm25-chunks`, the
  same-run baseline: `bm25-lines` needs the files at the commit) and every ranking variant in one pass,
  with bench/issues/README.md's metrics (set_scoring.score_issue).

A snapshot holds what the code that built it extracted; `score` with another checkout's code ranks
those rows with its own ranking, so ranking changes are compared on identical stores. A change to
extraction or chunking needs new snapshots.

    python benchmarks/issue_snapshots.py build --issue-repos /work/.mirror --store-root ~/.kcbench \\
        --snapshots ~/.kcbench/snap --issues-only requests pytest
    python benchmarks/issue_snapshots.py score --snapshots ~/.kcbench/snap \\
        --variant no-coverage='{"coverage": 1.0}' --variant lexical='{"hybrid_alpha": 0.0}' --out X.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from baselines import bm25_chunks
from corpus_sets import find_bench_dir, log
from issue_corpus import WorkTree, commit_time, find_git_dir
from issue_set import ISSUES_FILE, LONG_LIMIT, Instance, load_instances, select_instances, visiting_order
from methods import to_hit
from set_scoring import file_accuracy, mean_metrics, score_issue

import knowcode
from knowcode import AppConfig
from knowcode.evals.scoring import CUTOFF
from knowcode.retrieval.reranker import RankingSignals

META_FILE = "meta.json"  # per snapshot: repository, base commit, the work tree it was indexed from
DONE_FILE = "done"  # written last: a snapshot without it is a partial copy and is built again
BASELINE = "bm25-chunks"
KNOWCODE = "knowcode"
SIGNAL_NAMES = frozenset(f.name for f in fields(RankingSignals))
CONFIG_NAMES = frozenset(f.name for f in fields(AppConfig)) - {"ranking"}


def parse_variant(text: str) -> tuple[str, AppConfig]:
    """``NAME=JSON``: a ranking variant; JSON keys are RankingSignals fields or AppConfig fields.

    :raises ValueError: no ``=``, JSON that is no object, or a key that is neither.
    """
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise ValueError(f"a variant is NAME=JSON, not {text!r}")
    spec = json.loads(raw)
    if not isinstance(spec, dict):
        raise ValueError(f"variant {name}: the JSON must be an object")
    unknown = sorted(set(spec) - SIGNAL_NAMES - CONFIG_NAMES)
    if unknown:
        raise ValueError(f"variant {name}: unknown keys {', '.join(unknown)}")
    config = AppConfig()
    signals = replace(config.ranking, **{k: v for k, v in spec.items() if k in SIGNAL_NAMES})
    return name, replace(config, ranking=signals, **{k: v for k, v in spec.items() if k in CONFIG_NAMES})


def is_done(snapshot: Path) -> bool:
    """Whether the snapshot was copied completely."""
    return (snapshot / DONE_FILE).is_file()


def build(instances: Sequence[Instance], issue_repos: Path, store_root: Path, snapshots: Path) -> int:
    """Walk each repository's base commits, index, and copy the store per report; the number copied."""
    copied = 0
    for repo in sorted({i.repo for i in instances}):
        todo = [i for i in instances if i.repo == repo and not is_done(snapshots / i.instance_id)]
        if not todo:
            continue
        git_dir = find_git_dir(issue_repos, repo)
        base = store_root / "issues" / repo.replace("/", "+")
        tree = WorkTree(git_dir, base / "tree", base / "worktree.json")
        current = tree.current()
        kc = None
        try:
            for number, instance in enumerate(visiting_order(todo, commit_time(git_dir, current)
                                                             if current else None), start=1):
                started = time.perf_counter()
                tree.move_to(instance.base_commit)
                if kc is None:
                    kc = knowcode.open(tree.tree, store=base / "index", config=AppConfig())
                kc.index()
                target = snapshots / instance.instance_id
                if target.exists():
                    shutil.rmtree(target)
                shutil.copytree(base / "index", target / "index", ignore=shutil.ignore_patterns("write.lock"))
                (target / META_FILE).write_text(json.dumps(
                    {"repo": repo, "commit": instance.base_commit, "tree": str(tree.tree)}))
                (target / DONE_FILE).write_text("")
                copied += 1
                log(f"[{repo} {number}/{len(todo)}] {instance.instance_id}: "
                    f"{time.perf_counter() - started:.1f}s")
        finally:
            if kc is not None:
                kc.close()
    return copied


def score(instances: Sequence[Instance], snapshots: Path, variants: Mapping[str, AppConfig],
          limit: int = CUTOFF) -> dict[str, Any]:
    """Score the baseline and every variant on each built snapshot; per-method means and per-report rows."""
    baseline = bm25_chunks()
    methods = [BASELINE, *variants]
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in methods}
    reports: list[dict[str, Any]] = []
    for instance in instances:
        snapshot = snapshots / instance.instance_id
        if not is_done(snapshot):
            continue
        tree = Path(json.loads((snapshot / META_FILE).read_text())["tree"])
        root = tree if tree.is_dir() else snapshot  # a reader never reads its root: any folder will do
        per_method: dict[str, Any] = {}
        for name in methods:
            owner = knowcode.open(root, store=snapshot / "index",
                                  config=variants.get(name, AppConfig()))
            reader = owner.reader()
            try:
                # one answer of LONG_LIMIT hits: its first `limit` are the `limit`-hit answer (the
                # search's fixed candidate pool; plain BM25 ranks by score alone)
                if name == BASELINE:
                    found = baseline(reader, instance.query, LONG_LIMIT)
                    baseline.release(reader)
                else:
                    found = [to_hit(h) for h in reader.search(instance.query, limit=LONG_LIMIT)]
            finally:
                reader.close()
                owner.close()
            metrics = score_issue(instance.targets, instance.file_targets, found[:limit]).metrics()
            metrics["file_acc10_of50"] = file_accuracy(instance.file_targets, found, CUTOFF)
            rows[name].append(metrics)
            per_method[name] = metrics
        reports.append({"instance": instance.instance_id, "repo": instance.repo, "metrics": per_method})
        log(f"[score] {instance.instance_id}")
    means = {name: mean_metrics(rows[name]) for name in methods if rows[name]}
    return {"reports": len(reports), "means": means, "per_report": reports}


def markdown(result: Mapping[str, Any]) -> str:
    """The per-method means as a markdown table."""
    means: dict[str, dict[str, float]] = result["means"]
    if not means:
        return "No built snapshot was scored.\n"
    keys = list(next(iter(means.values())))
    lines = [f"{result['reports']} issue reports, one snapshot each, every method on the same stores.", "",
             "| method | " + " | ".join(keys) + " |", "| --- |" + " ---: |" * len(keys)]
    lines += [f"| {name} | " + " | ".join(f"{m[k]:.3f}" for k in keys) + " |" for name, m in means.items()]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Build or score snapshots; print the table (score) and write --out."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("build", "score"))
    parser.add_argument("--bench", type=Path, help="the benchmark folder (default as quality.py)")
    parser.add_argument("--snapshots", type=Path, required=True, help="one folder per report is kept here")
    parser.add_argument("--issue-repos", type=Path, help="build: where the repositories' git dirs are")
    parser.add_argument("--store-root", type=Path, help="build: the work trees and stores (issue_set.py)")
    parser.add_argument("--issues-only", nargs="+", metavar="REPO", help="only these repositories")
    parser.add_argument("--issues-sample", type=int, metavar="N", help="a fixed sample of N reports")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=JSON",
                        help="score: a ranking variant (RankingSignals or AppConfig fields); repeatable")
    parser.add_argument("--out", type=Path, help="score: write the JSON results here")
    args = parser.parse_args(argv)
    every = load_instances(find_bench_dir(args.bench) / ISSUES_FILE)
    instances = select_instances(every, args.issues_only, args.issues_sample)
    if args.command == "build":
        if args.issue_repos is None or args.store_root is None:
            parser.error("build needs --issue-repos and --store-root")
        log(f"{build(instances, args.issue_repos, args.store_root, args.snapshots)} snapshots copied")
        return 0
    try:
        variants = dict([(KNOWCODE, AppConfig()), *(parse_variant(v) for v in args.variant)])
    except ValueError as err:
        parser.error(str(err))
    result = score(instances, args.snapshots, variants)
    print(markdown(result), end="")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
