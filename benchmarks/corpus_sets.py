"""The two benchmark sets over the package corpus: file-level annotations and span-level questions.

Both use the corpus that bench/get_corpus.py unpacks (CORPUS/<name>/<index_root>) and the same
index per repo: a mirror of its code files by bench/README.md's rules (a hard-link view under
store_root/<name>/tree), so one index answers both sets. Target paths carry the upstream
`benchmark_root` prefix and are matched with the lenient path rule of knowcode.evals.scoring.

- file set (`bench/annotations/<name>.json`, 14 repos): NDCG@10, per category;
- questions set (`bench/questions/<name>.json`, 6 repos, line-span targets): NDCG@10, Recall@10,
  MRR@10, per category.

Also the corpus plumbing that tokens.py and answer_routing.py share (find_bench_dir, load_repos,
open_repo, corpus_parser, store_folder).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from methods import MethodRun, QueryRecord, SearchFn, prepare, release, run_method, unavailable
from set_scoring import recall, reciprocal_rank

import knowcode
from knowcode import AppConfig, KnowCode
from knowcode.evals.scoring import CUTOFF, Query, load_annotations, score_query

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DEFAULT_CORPUS = HERE / ".corpus"
BENCH_DIR_ENV = "KNOWCODE_BENCH_DIR"
# Where the benchmark folder (README.md, corpora.json, annotations/, get_corpus.py) is looked for.
BENCH_CANDIDATES = (HERE.parent / "bench", HERE.parent.parent / "shared" / "bench")
FILE_SET, QUESTION_SET = "file", "questions"
SET_FOLDERS = {FILE_SET: "annotations", QUESTION_SET: "questions"}

# bench/README.md, "What is indexed": code extensions only, these folders skipped at any depth.
CODE_EXTENSIONS = frozenset({
    ".py", ".js", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java", ".kt", ".kts", ".rb", ".php", ".c", ".h",
    ".cpp", ".hpp", ".cs", ".swift", ".scala", ".sbt", ".ex", ".exs", ".dart", ".lua", ".sql", ".sh",
    ".bash", ".zig", ".hs",
})
SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", "venv", ".tox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".cache", ".semble", "dist", "build", ".eggs",
})


def log(message: str) -> None:
    """Progress and steps go to stderr, so stdout holds only the result tables."""
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Repo:
    """One corpus repo: its name, folder to index, file-level queries and span-level questions."""

    name: str
    root: Path
    queries: list[Query]
    questions: list[Query] = field(default_factory=list)

    def of_set(self, name: str) -> list[Query]:
        """The repo's queries of one set."""
        return self.queries if name == FILE_SET else self.questions


def find_bench_dir(explicit: Path | None) -> Path:
    """The benchmark folder: --bench, else $KNOWCODE_BENCH_DIR, else the first known location."""
    candidates = [explicit] if explicit else ([Path(os.environ[BENCH_DIR_ENV])] if os.environ.get(
        BENCH_DIR_ENV) else list(BENCH_CANDIDATES))
    for candidate in candidates:
        if (candidate / "corpora.json").is_file() and (candidate / "annotations").is_dir():
            return candidate.resolve()
    raise SystemExit(f"benchmark folder not found (looked in {', '.join(map(str, candidates))}): "
                     f"pass --bench DIR or set {BENCH_DIR_ENV}")


def fetch_corpus(bench: Path, dest: Path, names: Sequence[str]) -> None:
    """Run the benchmark's get_corpus.py for the named repos into dest (pip and npm do the download)."""
    command = [sys.executable, str(bench / "get_corpus.py"), "--dest", str(dest), "--only", *names]
    log(f"[corpus] fetching {len(names)} repo(s) into {dest}: {' '.join(command)}")
    if subprocess.run(command, stdout=subprocess.DEVNULL, check=False).returncode != 0:
        raise SystemExit(f"get_corpus.py failed; run it by hand: {' '.join(command)}")


def load_repos(bench: Path, corpus: Path | None, only: Sequence[str] | None,
               sets: Sequence[str] = (FILE_SET,), questions: Path | None = None) -> list[Repo]:
    """The repos that have queries in the chosen sets, in corpora.json order, fetching the default
    corpus cache when needed; the span-level questions are read from `questions` when given (a held-out
    set in benchmarks/data), else from the bench folder, and the repositories from its own corpora.json
    when it has one (benchmarks/data/questions_langs: repositories outside the bench corpus)."""
    own_listing = questions / "corpora.json" if questions is not None else None
    if own_listing is not None and not own_listing.is_file():
        own_listing = None
    listing = own_listing or bench / "corpora.json"
    entries = json.loads(listing.read_text(encoding="utf-8"))
    known = [entry["name"] for entry in entries]
    unknown = sorted(set(only or ()) - set(known))
    if unknown:
        raise SystemExit(f"unknown repo(s) {', '.join(unknown)}; known: {', '.join(known)}")

    def queries(name: str, set_name: str) -> list[Query]:
        own = questions if questions is not None and set_name == QUESTION_SET else None
        path = (own or bench / SET_FOLDERS[set_name]) / f"{name}.json"
        return load_annotations(path) if set_name in sets and path.is_file() else []

    chosen = [(e, queries(e["name"], FILE_SET), queries(e["name"], QUESTION_SET)) for e in entries
              if not only or e["name"] in only]
    chosen = [(e, q, s) for e, q, s in chosen if q or s]
    folder = corpus if corpus is not None else DEFAULT_CORPUS
    missing = [e["name"] for e, _, _ in chosen if not (folder / e["name"] / e["index_root"]).is_dir()]
    if missing and own_listing:
        raise SystemExit(f"{folder} lacks {', '.join(missing)}: {listing.parent / 'README.md'} says how to "
                         "get them; pass that folder as --corpus")
    if missing and corpus is not None:
        raise SystemExit(f"{corpus} lacks {', '.join(missing)}: run "
                         f"`python3 {bench / 'get_corpus.py'} --dest {corpus}`")
    if missing:
        fetch_corpus(bench, folder, missing)
    return [Repo(e["name"], folder / e["name"] / e["index_root"], q, s) for e, q, s in chosen]


def code_view(root: Path, dest: Path) -> int:
    """Mirror root's code files (bench/README.md rules) into dest as hard links (copies if linking
    fails), so the index holds what the benchmark indexes at the same relative paths; returns the count."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    if (root / ".gitignore").is_file():
        shutil.copy2(root / ".gitignore", dest / ".gitignore")
    count = 0
    for current, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        for name in filenames:
            source = Path(current) / name
            if source.suffix not in CODE_EXTENSIONS or not source.is_file():
                continue
            target = dest / source.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)
            count += 1
    return count


def open_repo(repo: Repo, store_root: Path, *, all_files: bool = False) -> KnowCode:
    """A facade on the repo (default configuration, index under store_root/<name>/index): on a mirror of
    its code files (the benchmark's view, in store_root/<name>/tree), or on the whole root with
    `all_files`. Nothing is indexed yet."""
    tree = repo.root
    if not all_files:
        tree = store_root / repo.name / "tree"
        code_view(repo.root, tree)
    return knowcode.open(tree, store=store_root / repo.name / "index", config=AppConfig())


def corpus_parser(doc: str | None, out: Path) -> argparse.ArgumentParser:
    """The options of a benchmark over the corpus repos: --corpus, --bench, --only, --store-root, --out."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="a folder made by get_corpus.py")
    parser.add_argument("--bench", type=Path, help="the benchmark folder")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these repos")
    parser.add_argument("--store-root", type=Path, help="where per-repo indexes go (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=out)
    return parser


@contextmanager
def store_folder(path: Path | None) -> Iterator[Path]:
    """The given store root, or a temporary one removed afterwards."""
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="knowcode-quality-") as tmp:
        yield Path(tmp)


def query_metrics(set_name: str, query: Query,
                  hits: Sequence[Any]) -> tuple[dict[str, float], list[int | None]]:
    """A query's figures in its set (file: NDCG@10; questions: also Recall@10 and MRR@10) and ranks."""
    scored = score_query(query, hits)
    metrics = {"ndcg10": scored.ndcg}
    if set_name == QUESTION_SET:
        metrics |= {"recall10": recall(scored.ranks), "mrr10": reciprocal_rank(scored.ranks)}
    return metrics, list(scored.ranks)


def run_corpus_repo(repo: Repo, store_root: Path, methods: dict[str, SearchFn],
                    runs: dict[str, dict[str, MethodRun]], limit: int = CUTOFF,
                    all_files: bool = False) -> dict[str, Any]:
    """Index one repo once, run each set's queries through every method; returns the index facts.

    `runs[set][method]` collects the per-query records.
    """
    kc = open_repo(repo, store_root, all_files=all_files)
    started = time.perf_counter()
    kc.index()
    index_seconds = time.perf_counter() - started
    stats = kc.stats()
    log(f"[{repo.name}] indexed {stats.files} files, {stats.chunks} chunks in {index_seconds:.1f}s")
    for name, search in methods.items():
        if all(runs[s][name].skipped is not None for s in runs):
            continue
        reason = unavailable(search, kc)
        if reason is not None:
            for set_runs in runs.values():
                set_runs[name].skipped = reason
            log(f"[{name}] skipped: {reason}")
            continue
        prepare(search, kc)
        for set_name, set_runs in runs.items():
            queries = repo.of_set(set_name)
            if not queries:
                continue
            run_method(kc, queries[0].text, name, limit, methods)  # warm-up, not timed
            records = []
            for number, query in enumerate(queries):
                began = time.perf_counter()
                hits = run_method(kc, query.text, name, limit, methods)
                set_runs[name].seconds.append(time.perf_counter() - began)
                metrics, ranks = query_metrics(set_name, query, hits)
                records.append(QueryRecord(f"{repo.name}#{number}", repo.name, query.category, metrics,
                                           ranks, hits))
            set_runs[name].records[repo.name] = records
            mean = sum(r.metrics["ndcg10"] for r in records) / len(records)
            log(f"[{repo.name}] {set_name} {name}: NDCG@10 {mean:.3f}")
    for search in methods.values():
        release(search, kc)
    kc.close()
    return {"files": stats.files, "lines": stats.lines, "chunks": stats.chunks,
            "index_seconds": round(index_seconds, 2)}
