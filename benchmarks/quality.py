"""Search quality on the semble code-search benchmark: NDCG@10 per method, category and repo.

Each repo of the benchmark's registry subset is indexed with KnowCode's Python API, then every query
runs through every method. A method is a named configuration of the engine (or a baseline computed in
the same run); scoring follows bench/README.md exactly (see src/knowcode/evals/scoring.py). Indexing is
not timed; query latency is measured per call after one warm-up call.

    python benchmarks/quality.py                          # fetch the corpus into benchmarks/.corpus
    python benchmarks/quality.py --corpus DIR --only flask zod --methods bm25-baseline

Adding a method: put a callable `(kc, query, limit) -> hits` in METHODS, where each hit has `.path`,
`.start_line` and `.end_line`; e.g. `METHODS["no-dense"] = KnowCodeSearch(dense=False)` calls
`kc.search(query, limit=limit, dense=False)`. A callable may also define `prepare(kc)` (run before
timing) and `unavailable(kc) -> str | None` (a reason to skip the method).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import knowcode
from knowcode import AppConfig, KnowCode
from knowcode.evals.scoring import (
    CATEGORIES,
    CUTOFF,
    Hit,
    Query,
    ScoredQuery,
    Summary,
    load_annotations,
    mean_lines_per_hit,
    score_query,
    summarize,
)
from knowcode.retrieval.reranker import RankingSignals

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DEFAULT_CORPUS = HERE / ".corpus"
BENCH_DIR_ENV = "KNOWCODE_BENCH_DIR"
# Where the benchmark folder (README.md, corpora.json, annotations/, get_corpus.py) is looked for.
BENCH_CANDIDATES = (HERE.parent / "bench", HERE.parent.parent / "shared" / "bench")

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


# Methods


class HitLike(Protocol):
    """What a method returns per result: a root-relative path and a 1-based inclusive span."""

    @property
    def path(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...


SearchFn = Callable[[KnowCode, str, int], Sequence[HitLike]]


class KnowCodeSearch:
    """`search(query, limit)` of a KnowCode over the same index, optionally with another config.

    An ablation is a config: `KnowCodeSearch(replace(AppConfig(), hybrid_alpha=0.0))` is BM25 alone.
    Configs that keep the embedding provider share the index, so nothing is rebuilt.
    """

    def __init__(self, config: AppConfig | None = None) -> None:
        self.config = config
        self._engines: dict[Path, KnowCode] = {}

    def unavailable(self, kc: KnowCode) -> str | None:
        if not callable(getattr(kc, "search", None)):
            return "KnowCode.search(query, limit) does not exist yet in this build"
        return None

    def _engine(self, kc: KnowCode) -> KnowCode:
        if self.config is None:
            return kc
        if kc.store_dir not in self._engines:
            self._engines[kc.store_dir] = knowcode.open(kc.root, store=kc.store_dir, config=self.config)
        return self._engines[kc.store_dir]

    def __call__(self, kc: KnowCode, query: str, limit: int) -> Sequence[HitLike]:
        return self._engine(kc).search(query, limit=limit)


class Bm25Baseline:
    """Plain BM25 (`bm25s`, its default tokenizer, no stemmer) over the raw text of KnowCode's chunks.

    Independent of KnowCode's ranking: only the chunk boundaries are shared, so the comparison shows
    what the engine adds on the same units. Chunks that score 0 (no query term) are not returned.
    """

    def __init__(self) -> None:
        self._indexes: dict[Path, tuple[Any, list[Hit]]] = {}

    def unavailable(self, kc: KnowCode) -> str | None:
        try:
            import bm25s  # noqa: F401
        except ImportError:
            return "the bm25s package is not installed (pip install bm25s)"
        return None

    def prepare(self, kc: KnowCode) -> None:
        if kc.store_dir in self._indexes:
            return
        import bm25s

        store = kc.open_store()
        try:
            chunks = store.chunks()
        finally:
            store.close()
        retriever = bm25s.BM25()
        if chunks:
            retriever.index(bm25s.tokenize([c.text for c in chunks], show_progress=False),
                            show_progress=False)
        self._indexes[kc.store_dir] = (retriever, [Hit(c.path, c.start_line, c.end_line) for c in chunks])

    def __call__(self, kc: KnowCode, query: str, limit: int) -> Sequence[HitLike]:
        import bm25s

        self.prepare(kc)
        retriever, hits = self._indexes[kc.store_dir]
        tokens = bm25s.tokenize(query, return_ids=False, show_progress=False)[0]
        known = [token for token in tokens if token in retriever.vocab_dict]
        if not hits or not known:
            return []
        found, scores = retriever.retrieve([known], k=min(limit, len(hits)), show_progress=False)
        return [hits[int(i)] for i, score in zip(found[0], scores[0], strict=True) if score > 0]


METHODS: dict[str, SearchFn] = {
    "bm25-baseline": Bm25Baseline(),
    "knowcode": KnowCodeSearch(),
}


def _without(signal: str) -> AppConfig:
    return replace(AppConfig(), ranking=replace(RankingSignals(), **{signal: 1.0}))


# Ablations (--ablation): each leg alone, no ranking stage at all, and each ranking signal switched off.
ABLATIONS: dict[str, SearchFn] = {
    "sparse-only": KnowCodeSearch(replace(AppConfig(), hybrid_alpha=0.0)),
    "dense-only": KnowCodeSearch(replace(AppConfig(), hybrid_alpha=1.0)),
    "no-ranking": KnowCodeSearch(replace(AppConfig(), ranking=RankingSignals(
        **{name: 1.0 for name in RankingSignals.__dataclass_fields__}))),
    **{f"no-{name}": KnowCodeSearch(_without(name)) for name in RankingSignals.__dataclass_fields__},
}


def to_hit(result: HitLike) -> Hit:
    """Normalise one result to a Hit (`\\` in paths becomes `/`)."""
    return Hit(str(result.path).replace("\\", "/"), int(result.start_line), int(result.end_line))


def run_method(kc: KnowCode, query: str, method: str, limit: int = CUTOFF,
               methods: dict[str, SearchFn] | None = None) -> list[Hit]:
    """Run one query through the named method and return at most `limit` hits, best first."""
    search = (METHODS if methods is None else methods)[method]
    return [to_hit(result) for result in search(kc, query, limit)][:limit]


# Corpus


@dataclass(frozen=True)
class Repo:
    """One benchmark repo: its name, folder to index and queries."""

    name: str
    root: Path
    queries: list[Query]


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


def load_repos(bench: Path, corpus: Path | None, only: Sequence[str] | None) -> list[Repo]:
    """The repos to run, in corpora.json order, fetching the default corpus cache when needed."""
    entries = json.loads((bench / "corpora.json").read_text(encoding="utf-8"))
    known = [entry["name"] for entry in entries]
    unknown = sorted(set(only or ()) - set(known))
    if unknown:
        raise SystemExit(f"unknown repo(s) {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = [entry for entry in entries if not only or entry["name"] in only]
    folder = corpus if corpus is not None else DEFAULT_CORPUS
    missing = [e["name"] for e in chosen if not (folder / e["name"] / e["index_root"]).is_dir()]
    if missing and corpus is not None:
        raise SystemExit(f"{corpus} lacks {', '.join(missing)}: run "
                         f"`python3 {bench / 'get_corpus.py'} --dest {corpus}`")
    if missing:
        fetch_corpus(bench, folder, missing)
    return [Repo(e["name"], folder / e["name"] / e["index_root"],
                 load_annotations(bench / "annotations" / f"{e['name']}.json")) for e in chosen]


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


# Running


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


@dataclass
class MethodRun:
    """Everything one method produced over the repos it ran on."""

    scored: dict[str, list[ScoredQuery]] = field(default_factory=dict)
    hits: dict[str, list[list[Hit]]] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    skipped: str | None = None


def run_repo(repo: Repo, store_root: Path, methods: dict[str, SearchFn], runs: dict[str, MethodRun],
             limit: int, all_files: bool) -> dict[str, Any]:
    """Index one repo, run its queries through every method; returns the index facts."""
    kc = open_repo(repo, store_root, all_files=all_files)
    started = time.perf_counter()
    kc.index()
    index_seconds = time.perf_counter() - started
    stats = kc.stats()
    log(f"[{repo.name}] indexed {stats.files} files, {stats.chunks} chunks in {index_seconds:.1f}s")
    for name, search in methods.items():
        run = runs[name]
        if run.skipped is not None:
            continue
        unavailable = getattr(search, "unavailable", None)
        reason = unavailable(kc) if unavailable is not None else None
        if reason is not None:
            run.skipped = reason
            log(f"[{name}] skipped: {reason}")
            continue
        prepare = getattr(search, "prepare", None)
        if prepare is not None:
            prepare(kc)
        if repo.queries:
            run_method(kc, repo.queries[0].text, name, limit, methods)  # warm-up, not timed
        scored, hit_lists, seconds = [], [], []
        for query in repo.queries:
            started = time.perf_counter()
            hits = run_method(kc, query.text, name, limit, methods)
            seconds.append(time.perf_counter() - started)
            scored.append(score_query(query, hits))
            hit_lists.append(hits)
        run.scored[repo.name], run.hits[repo.name], run.seconds[repo.name] = scored, hit_lists, seconds
        log(f"[{repo.name}] {name}: NDCG@10 {statistics.fmean(q.ndcg for q in scored):.3f}")
    return {"files": stats.files, "lines": stats.lines, "chunks": stats.chunks,
            "index_seconds": round(index_seconds, 2)}


def _ms(values: Sequence[float], q: float) -> float | None:
    """The q-quantile in milliseconds (the median for 0.5, else nearest rank)."""
    if not values:
        return None
    if q == 0.5:
        return round(1000 * statistics.median(values), 2)
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def method_result(run: MethodRun, repos: Sequence[Repo]) -> dict[str, Any]:
    """The JSON record of one method: averages, per-repo numbers and every query's ranks and hits."""
    if run.skipped is not None:
        return {"status": "skipped", "reason": run.skipped}
    summary: Summary = summarize(run.scored)
    seconds = [s for values in run.seconds.values() for s in values]
    all_hits = [hit for lists in run.hits.values() for hits in lists for hit in hits]
    per_repo: dict[str, Any] = {}
    queries: list[dict[str, Any]] = []
    for repo in repos:
        if repo.name not in run.scored:
            continue
        repo_hits = [hit for hits in run.hits[repo.name] for hit in hits]
        per_repo[repo.name] = {
            "ndcg10": summary.repos[repo.name], "categories": summary.repo_categories[repo.name],
            "queries": len(repo.queries), "mean_lines_per_hit": mean_lines_per_hit(repo_hits),
            "latency_ms_p50": statistics.median(run.seconds[repo.name]) * 1000,
        }
        for query, scored, hits in zip(repo.queries, run.scored[repo.name], run.hits[repo.name], strict=True):
            queries.append({"repo": repo.name, "query": query.text, "category": query.category,
                            "ndcg10": scored.ndcg, "ranks": list(scored.ranks),
                            "targets": [t.path if not t.is_span else [t.path, t.start_line, t.end_line]
                                        for t in query.targets],
                            "hits": [list(hit) for hit in hits]})
    return {
        "status": "ok", "ndcg10": summary.overall, "categories": summary.categories, "repos": per_repo,
        "mean_lines_per_hit": mean_lines_per_hit(all_hits), "hits": len(all_hits),
        "latency_ms": {"p50": _ms(seconds, 0.5), "p95": _ms(seconds, 0.95),
                       "mean": round(1000 * statistics.fmean(seconds), 2) if seconds else None},
        "queries": queries,
    }


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render_markdown(result: dict[str, Any]) -> str:
    """The result tables: overall and per category, per repo, and skipped methods."""
    methods: dict[str, Any] = result["methods"]
    ok = {name: m for name, m in methods.items() if m["status"] == "ok"}
    lines = [
        "# Search quality: semble benchmark, registry subset",
        "",
        f"Measured {result['measured_at']}; {len(result['repos'])} repos, {result['queries']} queries; "
        f"NDCG@10 per bench/README.md; index view: {result['index_view']}; limit {result['limit']}.",
        "",
        "## Overall",
        "",
        "| method | NDCG@10 | " + " | ".join(CATEGORIES) + " | mean lines/hit | p50 ms | p95 ms |",
        "| --- | ---: | " + " | ".join("---:" for _ in CATEGORIES) + " | ---: | ---: | ---: |",
    ]
    for name, m in ok.items():
        cells = [_f(m["ndcg10"]), *(_f(m["categories"].get(c)) for c in CATEGORIES),
                 _f(m["mean_lines_per_hit"], 1), _f(m["latency_ms"]["p50"], 2), _f(m["latency_ms"]["p95"], 2)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Per repo (NDCG@10)", "",
              "| repo | queries | chunks | " + " | ".join(ok) + " |",
              "| --- | ---: | ---: | " + " | ".join("---:" for _ in ok) + " |"]
    for repo, facts in result["repos"].items():
        cells = [_f(m["repos"][repo]["ndcg10"]) if repo in m["repos"] else "-" for m in ok.values()]
        lines.append(f"| {repo} | {facts['queries']} | {facts['chunks']} | " + " | ".join(cells) + " |")
    skipped = {name: m["reason"] for name, m in methods.items() if m["status"] == "skipped"}
    if skipped:
        lines += ["", "## Skipped methods", ""]
        lines += [f"- {name}: {reason}" for name, reason in skipped.items()]
    return "\n".join(lines) + "\n"


@contextmanager
def store_folder(path: Path | None) -> Iterator[Path]:
    """The given store root, or a temporary one removed afterwards."""
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="knowcode-quality-") as tmp:
        yield Path(tmp)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark; print the tables and write the JSON and markdown results."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="a folder made by get_corpus.py (default: fetch into "
                        f"{DEFAULT_CORPUS.relative_to(HERE.parent)} when missing)")
    parser.add_argument("--bench", type=Path, help=f"the benchmark folder (default: ${BENCH_DIR_ENV}, "
                        "else ../bench or ../../shared/bench next to the repository)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these repos")
    parser.add_argument("--methods", nargs="+", metavar="METHOD", choices=sorted({*METHODS, *ABLATIONS}),
                        help=f"run only these methods (default: {', '.join(METHODS)})")
    parser.add_argument("--ablation", action="store_true",
                        help=f"also run the ablations: {', '.join(ABLATIONS)}")
    parser.add_argument("--limit", type=int, default=CUTOFF, help="results asked for per query")
    parser.add_argument("--out", type=Path, default=RESULTS / "quality.json")
    parser.add_argument("--markdown", type=Path, default=RESULTS / "quality.md")
    parser.add_argument("--store-root", type=Path, help="where per-repo indexes go (default: a temp dir)")
    parser.add_argument("--all-files", action="store_true",
                        help="index the whole root as KnowCode sees it, not only the benchmark's code files")
    args = parser.parse_args(argv)
    if args.limit < 1:
        parser.error("--limit must be at least 1")
    bench = find_bench_dir(args.bench)
    repos = load_repos(bench, args.corpus, args.only)
    known = {**METHODS, **ABLATIONS}
    chosen = args.methods or [*METHODS, *(ABLATIONS if args.ablation else ())]
    methods = {name: known[name] for name in chosen}
    runs = {name: MethodRun() for name in methods}
    facts: dict[str, dict[str, Any]] = {}
    with store_folder(args.store_root) as store_root:
        for repo in repos:
            facts[repo.name] = {"queries": len(repo.queries),
                                **run_repo(repo, store_root, methods, runs, args.limit, args.all_files)}
    result = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"), "bench": str(bench),
        "corpus": str(args.corpus or DEFAULT_CORPUS), "limit": args.limit,
        "index_view": "whole root (--all-files)" if args.all_files else "code files only (bench rules)",
        "queries": sum(len(repo.queries) for repo in repos), "repos": facts,
        "methods": {name: method_result(run, repos) for name, run in runs.items()},
    }
    markdown = render_markdown(result)
    print(markdown, end="")
    for path, text in ((args.out, json.dumps(result, indent=1) + "\n"), (args.markdown, markdown)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    log(f"wrote {args.out} and {args.markdown}")


if __name__ == "__main__":
    main()
