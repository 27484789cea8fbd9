"""Search quality on three benchmark sets side by side, each beside plain BM25 in the same run.

- `file`: the public code-search benchmark (bench/annotations, 14 repos, whole-file answers):
  NDCG@10 overall and per category (corpus_sets.py);
- `questions`: span-level questions (bench/questions, 6 repos, line-span answers): NDCG@10,
  Recall@10, MRR@10, per category, mean lines per hit (corpus_sets.py, set_scoring.py); with
  `--questions benchmarks/data/questions_heldout`, the held-out questions on the other 8 repos instead
  (written after the ranking was tuned; report only, never tune on them);
- `issues`: issue localization (bench/issues, 100 SWE-bench Verified issues at their base commits):
  file Acc@1/5/10, function Recall@10, Acc@10, NDCG@10, MRR@10, mean lines per hit, the share of
  top-10 hits that are prose/config files, and whether the first 10 hits of a limit-50 call equal
  the limit-10 answer (issue_set.py, issue_corpus.py, set_scoring.py).

Methods (methods.py): `bm25-lines`, the headline baseline (plain bm25s over 1,500-character line
chunks of the files KnowCode indexed, independent of KnowCode's chunking; baselines.py),
`bm25-chunks` (plain bm25s over KnowCode's own chunks) and `knowcode`; `--ablation` adds every
configuration of methods.ABLATIONS and one table of each set's headline figure per ablation.
Indexing is not timed with the queries; query latency is measured per call.

    python benchmarks/quality.py --corpus /work/corpus --issue-repos /work/.mirror --store-root ~/.kcbench
    python benchmarks/quality.py --sets file questions --only flask zod
    python benchmarks/quality.py --sets questions --questions benchmarks/data/questions_heldout
    python benchmarks/quality.py --sets issues --issues-only requests pytest --store-root ~/.kcbench
    python benchmarks/quality.py --sets issues --issues-sample 10 --ablation --store-root ~/.kcbench

The issue set needs the repositories' git history: `--issue-repos DIR` or $KNOWCODE_ISSUE_REPOS
(layout and clone commands: issue_corpus.py). Pass the same `--store-root` again to reuse the work
trees and indexes: a re-run after a ranking-only change re-parses only the files that differ
between consecutive base commits (issue_set.py explains the visiting order).

Time on the 2-core benchmark machine (2026-12): all three sets with --ablation and cold stores, 69
min (issues 62, of which 40 indexing; django's 47 commits alone 40); the issue set again with the
stores cached and the default methods, ~20 min (KnowCode's incremental index still rebuilds the
whole BM25 index per commit: ~5 s at django's 40k chunks); `--sets issues --issues-only requests
pytest xarray`, 52 s cold and 37 s cached; `--sets file questions`, 16 s (7 min with --ablation).
`benchmarks/hit_analysis.py` breaks a result's top-10 hits down by kind (target, its file, test,
prose/config, docs, other code) and shows where the first target ranks.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from baselines import LINE_CHUNK_CHARS
from corpus_sets import (
    BENCH_DIR_ENV,
    DEFAULT_CORPUS,
    FILE_SET,
    HERE,
    QUESTION_SET,
    RESULTS,
    Repo,
    code_view,
    corpus_parser,
    find_bench_dir,
    load_repos,
    log,
    open_repo,
    run_corpus_repo,
    store_folder,
)
from issue_corpus import ISSUE_REPOS_ENV
from issue_set import ISSUES_FILE, LONG_LIMIT, Instance, load_instances, run_issue_repo, select_instances
from methods import ABLATIONS, KNOWN, METHODS, KnowCodeSearch, MethodRun, SearchFn, run_method, to_hit
from report import (
    ISSUE_SET,
    SET_ORDER,
    corpus_queries_json,
    dump_json,
    issue_queries_json,
    method_json,
    render_markdown,
)

from knowcode.evals.scoring import CUTOFF

__all__ = ["ABLATIONS", "METHODS", "KnowCodeSearch", "code_view", "corpus_parser", "find_bench_dir",
           "load_repos", "log", "main", "open_repo", "run_method", "store_folder", "to_hit"]

SET_NOTES = {
    FILE_SET: "NDCG@10 per bench/README.md (lenient path rule, one shared line matches a span); repo = mean "
              "of its queries, overall = mean of repos, category = mean within each repo, then over repos.",
    QUESTION_SET: "The same rules on line-span targets (relevant + secondary, gain 1 each); Recall@10 = "
                  "share of targets in the top 10, MRR@10 = 1 / rank of the first one.",
    ISSUE_SET: "bench/issues/README.md scoring (exact paths): file Acc@k = every fixed file among the first "
               "k distinct files of the 10 hits; fn metrics over the fixed functions' spans; means over "
               f"instances. Recall@50 and the limit check use a second call with limit {LONG_LIMIT}; "
               "non-code = prose, config, translation and template files (set_scoring.NON_CODE_SUFFIXES).",
}


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(HERE), *args], capture_output=True, text=True, check=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def code_version() -> dict[str, str]:
    """The checkout measured: its commit, and the git tree id of src/ (equal on two branches whose
    KnowCode code is the same), marked dirty when src/ has uncommitted changes."""
    src_tree = _git("rev-parse", "HEAD:src")
    dirty = bool(_git("status", "--porcelain", "--", str(HERE.parent / "src")))
    return {"commit": _git("describe", "--always", "--dirty") or "unknown",
            "src_tree": (src_tree[:12] + ("-dirty" if dirty else "")) if src_tree else "unknown"}


def run_corpus_sets(args: argparse.Namespace, sets: Sequence[str], methods: dict[str, SearchFn],
                    store_root: Path) -> dict[str, Any]:
    """The file and questions sets: every repo indexed once, both sets' queries run on it."""
    bench = find_bench_dir(args.bench)
    repos: list[Repo] = load_repos(bench, args.corpus, args.only, sets, args.questions)
    runs = {s: {name: MethodRun() for name in methods} for s in sets}
    facts = {repo.name: run_corpus_repo(repo, store_root, methods, runs, args.limit, args.all_files)
             for repo in repos}
    index_view = "whole root (--all-files)" if args.all_files else "code files only (bench rules)"
    corpus = str(args.corpus or DEFAULT_CORPUS)
    source = {QUESTION_SET: {"questions": str(args.questions)}} if args.questions else {}
    return {s: {"note": SET_NOTES[s] + f" Index view: {index_view}.", "corpus": corpus, **source.get(s, {}),
                "repos": {repo.name: {**facts[repo.name], "queries": len(repo.of_set(s))}
                          for repo in repos if repo.of_set(s)},
                "queries": corpus_queries_json(s, repos),
                "methods": {name: method_json(s, run) for name, run in runs[s].items()}}
            for s in sets}


def issue_repos_dir(explicit: Path | None) -> Path:
    """The folder holding the issue set's repositories: --issue-repos, else $KNOWCODE_ISSUE_REPOS."""
    folder = explicit or (Path(os.environ[ISSUE_REPOS_ENV]) if os.environ.get(ISSUE_REPOS_ENV) else None)
    if folder is None or not folder.is_dir():
        raise SystemExit(f"the issue set needs its repositories' git history: pass --issue-repos DIR or set "
                         f"{ISSUE_REPOS_ENV} (layout and clone commands: benchmarks/issue_corpus.py), or "
                         "leave the set out with --sets file questions")
    return folder.resolve()


def run_issues(args: argparse.Namespace, methods: dict[str, SearchFn], store_root: Path) -> dict[str, Any]:
    """The issue set: per repository, its base commits visited in order, each indexed and searched."""
    repos_dir = issue_repos_dir(args.issue_repos)
    instances: list[Instance] = select_instances(load_instances(find_bench_dir(args.bench) / ISSUES_FILE),
                                                 args.issues_only, args.issues_sample)
    runs = {name: MethodRun() for name in methods}
    long_methods = [name for name in methods if name in METHODS]
    facts: dict[str, Any] = {}
    for repo in dict.fromkeys(i.repo for i in instances):
        started = time.perf_counter()
        facts[repo] = run_issue_repo(repo, [i for i in instances if i.repo == repo], repos_dir, store_root,
                                     methods, runs, long_methods, args.limit)
        facts[repo]["seconds"] = round(time.perf_counter() - started, 1)
        log(f"[issues {repo}] done in {facts[repo]['seconds']:.0f}s")
    return {"note": SET_NOTES[ISSUE_SET], "issue_repos": str(repos_dir), "repos": facts,
            "queries": issue_queries_json(instances),
            "methods": {name: method_json(ISSUE_SET, run) for name, run in runs.items()}}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=SET_ORDER, default=list(SET_ORDER),
                        help="the benchmark sets to run (default: all)")
    parser.add_argument("--corpus", type=Path, help="a folder made by get_corpus.py (default: fetch into "
                        f"{DEFAULT_CORPUS.relative_to(HERE.parent)} when missing)")
    parser.add_argument("--bench", type=Path, help=f"the benchmark folder (default: ${BENCH_DIR_ENV}, "
                        "else ../bench or ../../shared/bench next to the repository)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="file/questions sets: run only these repos")
    parser.add_argument("--questions", type=Path, metavar="DIR",
                        help="questions set: read them from DIR instead of bench/questions (the held-out "
                        "set: benchmarks/data/questions_heldout)")
    parser.add_argument("--issue-repos", type=Path, metavar="DIR",
                        help=f"issue set: the folder of git repositories (default: ${ISSUE_REPOS_ENV})")
    parser.add_argument("--issues-only", nargs="+", metavar="REPO",
                        help="issue set: only these repositories (owner/name or name)")
    parser.add_argument("--issues-sample", type=int, metavar="N",
                        help="issue set: N instances, a fixed round robin over the repositories")
    parser.add_argument("--methods", nargs="+", metavar="METHOD", choices=sorted(KNOWN),
                        help=f"run only these methods (default: {', '.join(METHODS)})")
    parser.add_argument("--ablation", action="store_true",
                        help=f"also run the ablations: {', '.join(ABLATIONS)}")
    parser.add_argument("--limit", type=int, default=CUTOFF, help="results asked for per query")
    parser.add_argument("--out", type=Path, default=RESULTS / "quality.json")
    parser.add_argument("--markdown", type=Path, default=RESULTS / "quality.md")
    parser.add_argument("--store-root", type=Path, help="where work trees and indexes go, reused by the next "
                        "run (default: a temporary folder)")
    parser.add_argument("--all-files", action="store_true",
                        help="file/questions sets: index the whole root, not only the benchmark's code files")
    args = parser.parse_args(argv)
    if args.limit < 1:
        parser.error("--limit must be at least 1")
    if args.issues_sample is not None and args.issues_sample < 1:
        parser.error("--issues-sample must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Run the chosen sets; print the tables and write the JSON and markdown results."""
    args = parse_args(argv)
    chosen = args.methods or [*METHODS, *(ABLATIONS if args.ablation else ())]
    methods = {name: KNOWN[name] for name in chosen}
    started = time.perf_counter()
    version = code_version()
    sets: dict[str, Any] = {}
    with store_folder(args.store_root) as store_root:
        corpus_sets = [s for s in (FILE_SET, QUESTION_SET) if s in args.sets]
        if corpus_sets:
            sets |= run_corpus_sets(args, corpus_sets, methods, store_root)
        if ISSUE_SET in args.sets:
            sets[ISSUE_SET] = run_issues(args, methods, store_root)
    result = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"), "code_version": version, "limit": args.limit,
        "line_chunk_chars": LINE_CHUNK_CHARS, "seconds": round(time.perf_counter() - started, 1),
        "ablations": [name for name in chosen if name in ABLATIONS],
        "sets": {name: sets[name] for name in SET_ORDER if name in sets},
    }
    markdown = render_markdown(result)
    print(markdown, end="")
    for path, text in ((args.out, dump_json(result) + "\n"), (args.markdown, markdown)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    log(f"wrote {args.out} and {args.markdown} ({result['seconds']:.0f}s)")


if __name__ == "__main__":
    main()
