"""The issue-localization set (bench/issues/): SWE-bench Verified issues, searched at their base commit.

One work tree and one KnowCode store per repository, under STORE_ROOT/issues/<owner>+<name>/
(`tree/`, `worktree.json`, `index/`). For each instance the tree is moved to its base commit (only
changed files written, see issue_corpus.py), `kc.index()` brings the store up to date incrementally,
and every method answers the whole problem statement. KnowCode indexes the whole work tree as it
sees it (prose and config included: issue queries must learn to prefer code over prose), and the
BM25 baselines index the same files.

Cost and caching: the cheapest correct re-run after a ranking-only change is one that re-parses
only what differs between consecutive base commits, with no cold index. So the commits are visited
in created_at order starting from the end nearest the commit the tree holds now: the first run goes
oldest to newest and leaves the tree (and the store) at the newest; the next run then goes newest
to oldest, and so on. Every visit indexes the tree at that commit exactly as a scratch index would,
so the order changes no figure. Changing what indexing extracts (KnowCode's EXTRACTION_VERSION)
re-parses everything once, as it must. `--issues-only`/`--issues-sample` just visit fewer commits.
"""

from __future__ import annotations

import ast
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from corpus_sets import log
from issue_corpus import WorkTree, commit_time, find_git_dir
from methods import MethodRun, QueryRecord, SearchFn, prepare, release, run_method, unavailable
from set_scoring import file_accuracy, function_ranks, recall, same_answer, score_issue

import knowcode
from knowcode import AppConfig, KnowCode
from knowcode.evals.scoring import CUTOFF, Target

ISSUES_FILE = Path("issues") / "swe_verified_dev.json"  # inside the benchmark folder
LONG_LIMIT = 50  # bench/issues/README.md: ask for 10 and for 50
SAMPLE_SEED = 11  # --issues-sample: the fixed shuffle within each repository


@dataclass(frozen=True, slots=True)
class Instance:
    """One issue: its repository, base commit, problem statement and the spans its fix changed."""

    instance_id: str
    repo: str
    base_commit: str
    created_at: str
    query: str
    targets: tuple[Target, ...]
    file_targets: tuple[str, ...]

    @property
    def created(self) -> float:
        """created_at in seconds since the epoch."""
        return datetime.fromisoformat(self.created_at.replace("Z", "+00:00")).timestamp()


def _as_list(raw: Any, what: str) -> list[Any]:
    """A list field that may also arrive as a string holding a JSON or Python-literal list."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            try:
                raw = ast.literal_eval(raw)
            except (ValueError, SyntaxError) as err:
                raise ValueError(f"{what} is a string but not a list literal: {raw[:80]!r}") from err
    if not isinstance(raw, list):
        raise ValueError(f"{what} must be a list, not {type(raw).__name__}")
    return raw


def parse_instance(raw: Any) -> Instance:
    """Read one instance of the issue set.

    :raises ValueError: a field is missing or malformed.
    """
    try:
        spans = _as_list(raw["targets"], f"{raw['instance_id']}: targets")
        targets = tuple(Target(t["path"], int(t["start_line"]), int(t["end_line"])) for t in spans)
        files = tuple(str(p) for p in _as_list(raw["file_targets"], f"{raw['instance_id']}: file_targets"))
        return Instance(raw["instance_id"], raw["repo"], raw["base_commit"], raw["created_at"],
                        raw["problem_statement"], targets, files)
    except (KeyError, TypeError) as err:
        raise ValueError(f"malformed issue instance ({err!r}): {str(raw)[:120]}") from err


def load_instances(path: Path) -> list[Instance]:
    """The issue set, in file order."""
    return [parse_instance(raw) for raw in json.loads(path.read_text(encoding="utf-8"))]


def repo_matches(repo: str, wanted: str) -> bool:
    """`owner/name` matches itself, `name`, `owner+name` and `owner__name`."""
    owner, name = repo.split("/", 1)
    return wanted in (repo, name, f"{owner}+{name}", f"{owner}__{name}")


def select_instances(instances: Sequence[Instance], only: Sequence[str] | None = None,
                     sample: int | None = None) -> list[Instance]:
    """The instances of the named repositories; with `sample`, the first N of a round robin over the
    repositories (in name order), each shuffled with a fixed seed. File order otherwise.

    :raises SystemExit: a name in `only` matches no repository of the set.
    """
    chosen = list(instances)
    if only:
        unknown = [w for w in only if not any(repo_matches(i.repo, w) for i in instances)]
        if unknown:
            known = sorted({i.repo for i in instances})
            raise SystemExit(f"no issue repository {', '.join(unknown)}; known: {', '.join(known)}")
        chosen = [i for i in chosen if any(repo_matches(i.repo, w) for w in only)]
    if sample is None or sample >= len(chosen):
        return chosen
    queues: dict[str, list[Instance]] = {}
    for instance in sorted(chosen, key=lambda i: i.instance_id):
        queues.setdefault(instance.repo, []).append(instance)
    for repo in sorted(queues):
        random.Random(f"{SAMPLE_SEED}:{repo}").shuffle(queues[repo])
    picked: list[Instance] = []
    while len(picked) < sample:
        for repo in sorted(queues):
            if queues[repo] and len(picked) < sample:
                picked.append(queues[repo].pop(0))
    keep = {i.instance_id for i in picked}
    return [i for i in chosen if i.instance_id in keep]


def visiting_order(instances: Sequence[Instance], now_at: float | None) -> list[Instance]:
    """created_at order, starting from the end nearest the tree's current commit time (see the
    module docstring); oldest first when the tree is empty."""
    ordered = sorted(instances, key=lambda i: (i.created, i.instance_id))
    if now_at is not None and ordered and (abs(ordered[-1].created - now_at)
                                           < abs(ordered[0].created - now_at)):
        ordered.reverse()
    return ordered


def issue_record(instance: Instance, hits: list[Any], hits_long: list[Any] | None) -> QueryRecord:
    """Score one answer; with the larger answer, also the limit check and function Recall@50."""
    score = score_issue(instance.targets, instance.file_targets, hits)
    metrics = score.metrics()
    if hits_long is not None:
        metrics["same_at_long"] = float(same_answer(hits, hits_long))
        metrics["fn_recall50"] = recall(function_ranks(instance.targets, hits_long, LONG_LIMIT))
        metrics["file_acc10_of50"] = file_accuracy(instance.file_targets, hits_long, CUTOFF)
    return QueryRecord(instance.instance_id, instance.repo, "issue", metrics, list(score.fn_ranks), hits,
                       hits_long, {"file_ranks": list(score.file_ranks)})


def run_issue_repo(repo: str, instances: Sequence[Instance], issue_repos: Path, store_root: Path,
                   methods: dict[str, SearchFn], runs: dict[str, MethodRun],
                   long_methods: Sequence[str], limit: int = CUTOFF) -> dict[str, Any]:
    """Visit one repository's base commits, index each, and run every method; returns the facts.

    Methods named in `long_methods` are also asked for LONG_LIMIT hits.
    """
    git_dir = find_git_dir(issue_repos, repo)
    base = store_root / "issues" / repo.replace("/", "+")
    tree = WorkTree(git_dir, base / "tree", base / "worktree.json")
    current = tree.current()
    order = visiting_order(instances, commit_time(git_dir, current) if current else None)
    facts: dict[str, Any] = {"instances": len(order), "git_dir": str(git_dir), "tree": str(tree.tree),
                             "store": str(base / "index"), "written": 0, "deleted": 0, "parsed_files": 0,
                             "move_seconds": 0.0, "index_seconds": 0.0}
    kc: KnowCode | None = None
    for number, instance in enumerate(order, start=1):
        move = tree.move_to(instance.base_commit)
        if kc is None:
            kc = knowcode.open(tree.tree, store=base / "index", config=AppConfig())
        started = time.perf_counter()
        report = kc.index()
        index_seconds = time.perf_counter() - started
        facts["written"] += move.written
        facts["deleted"] += move.deleted
        facts["parsed_files"] += report.parsed_files
        facts["move_seconds"] += move.seconds
        facts["index_seconds"] += index_seconds
        line = (f"[issues {repo} {number}/{len(order)}] {instance.instance_id} "
                f"@ {instance.base_commit[:10]}: "
                f"{move.written} written, {move.deleted} deleted ({move.seconds:.1f}s); "
                f"{report.parsed_files} parsed, indexed in {index_seconds:.1f}s")
        methods_started = time.perf_counter()
        for name, search in methods.items():
            run = runs[name]
            if run.skipped is None and (reason := unavailable(search, kc)) is not None:
                run.skipped = reason
                log(f"[{name}] skipped: {reason}")
            if run.skipped is not None:
                continue
            prepare(search, kc)
            began = time.perf_counter()
            hits = run_method(kc, instance.query, name, limit, methods)
            run.seconds.append(time.perf_counter() - began)
            hits_long = (run_method(kc, instance.query, name, LONG_LIMIT, methods)
                         if name in long_methods else None)
            record = issue_record(instance, hits, hits_long)
            run.records.setdefault(repo, []).append(record)
            if name in long_methods:
                line += f"; {name} fn R@10 {record.metrics['fn_recall10']:.2f}"
        log(f"{line}; methods {time.perf_counter() - methods_started:.1f}s")
    if kc is not None:
        for search in methods.values():
            release(search, kc)
        stats = kc.stats()
        facts |= {"files": stats.files, "lines": stats.lines, "chunks": stats.chunks}
        kc.close()
    facts["move_seconds"] = round(facts["move_seconds"], 1)
    facts["index_seconds"] = round(facts["index_seconds"], 1)
    return facts
