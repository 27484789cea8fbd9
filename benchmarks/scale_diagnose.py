"""Why cross-repository search loses to per-repository search: each losing query's NDCG@10 loss, split.

Runs on a collection that benchmarks/scale.py built (its --work folder: milvus.db and the stores), without
ingesting again. For each of the benchmark's file-level queries it searches the query's repository alone
(the filtered search, the reference) and all repositories, then splits a loss (filtered - all) into
three parts that add up to it:

- **copies**: hits from other repositories whose text is the same as a chunk of the query's repository
  (byte-identical after trimming whitespace, or near-identical: token-set Jaccard >= NEAR_IDENTICAL),
  i.e. vendored copies. Measured as the NDCG@10 gained by removing those hits from the list.
- **siblings**: the other repositories' remaining hits (similar code, not copies): the NDCG@10 gained
  by removing them too.
- **ranking**: what is left, filtered - (the all-repositories list with every foreign hit removed):
  the query's own repository's answers ranked lower or missing when its candidates come from the
  global pool. Split again by whether the target file was in the global fused pool at all.

A losing query is counted under its largest part.

    python benchmarks/scale_diagnose.py --corpus /work/corpus --work /tmp/kc-scale [--out FILE]

Results: a JSON file (default benchmarks/results/scale_diagnosis.json) with the counts and every
losing query.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from corpus_sets import RESULTS, find_bench_dir, load_repos, log

import knowcode
from knowcode import AppConfig
from knowcode.config import BackendConfig
from knowcode.evals.scoring import Hit, Query, hit_matches, score_query
from knowcode.retrieval.cross_repo import CrossRepoResults, CrossRepoSearch, RepositoryHit
from knowcode.search_backend import open_cross_repo_search
from knowcode.storage.store import Store

# Token-set Jaccard from which two chunks count as copies: a vendored file edited a little (an import
# rewritten to the vendor path) stays above it; two functions that merely look alike fall below.
NEAR_IDENTICAL = 0.8
LOSS_EPSILON = 1e-9  # a query "loses" when its all-repositories NDCG@10 is lower by more than this


def _tokens(text: str) -> frozenset[str]:
    return frozenset(text.split())


class Copies:
    """Whether a chunk of one repository is a copy of some chunk of another (text from their stores)."""

    def __init__(self, stores: Path) -> None:
        self.stores = stores
        self._texts: dict[str, tuple[set[str], list[frozenset[str]]]] = {}

    def _repository(self, name: str) -> tuple[set[str], list[frozenset[str]]]:
        if name not in self._texts:
            store = Store.open(self.stores / name, create=False)
            try:
                rows = store.connection.execute("SELECT text FROM chunks").fetchall()
            finally:
                store.close()
            self._texts[name] = ({r[0].strip() for r in rows}, [_tokens(r[0]) for r in rows])
        return self._texts[name]

    def kind(self, text: str, repository: str) -> str | None:
        """"identical", "near-identical" or None: how `text` (a chunk of another repository) matches."""
        exact, token_sets = self._repository(repository)
        if text.strip() in exact:
            return "identical"
        words = _tokens(text)
        if not words:
            return None
        for other in token_sets:
            if len(other) * NEAR_IDENTICAL <= len(words) <= len(other) / NEAR_IDENTICAL:
                union = len(words | other)
                if union and len(words & other) / union >= NEAR_IDENTICAL:
                    return "near-identical"
        return None


def _ndcg(query: Query, hits: Sequence[RepositoryHit], repository: str) -> float:
    """NDCG@10 of a list where another repository's hit is a miss."""
    return score_query(query, [Hit(r.hit.path if r.repository == repository else "\0", r.hit.start_line,
                                   r.hit.end_line) for r in hits]).ndcg


def _in_pool(query: Query, pool: Sequence[tuple[str, str]], repository: str) -> bool:
    return any(hit_matches(t, Hit(path, 1, 1)) for t in query.targets
               for repo, path in pool if repo == repository)


class _Capture:
    """Keeps each repository's own ranked hits of the last search, before the merge cuts the list."""

    def __init__(self, search: CrossRepoSearch) -> None:
        self.lists: dict[str, list[RepositoryHit]] = {}
        original = search._ranker

        def ranker(repository: str) -> Any:
            found = original(repository)
            if found is not None and not getattr(found.orchestrator, "_captured", False):
                retrieve = found.orchestrator.retrieve

                def captured(*args: Any, **kwargs: Any) -> Any:
                    result = retrieve(*args, **kwargs)
                    self.lists[repository] = [RepositoryHit(repository, h) for h in result.hits]
                    return result

                found.orchestrator.retrieve = captured  # type: ignore[method-assign]
                found.orchestrator._captured = True  # type: ignore[attr-defined]
            return found

        search._ranker = ranker  # type: ignore[method-assign]


def _key(hit: RepositoryHit) -> tuple[str, str, str]:
    return hit.repository, hit.hit.chunk_id, hit.hit.entity_id


def _merge(search: CrossRepoSearch, query: str, lists: dict[str, list[RepositoryHit]],
           leave_out: frozenset[tuple[str, str, str]] = frozenset()) -> list[RepositoryHit]:
    """The hits merged as CrossRepoSearch merges them (by score, a named repository's scaled), less those
    whose _key is in `leave_out`."""
    kept = [r for hits in lists.values() for r in hits if _key(r) not in leave_out]
    merged = search._named_first(query, kept)
    merged.sort(key=lambda r: (-r.hit.score, r.repository, r.hit.path, r.hit.start_line))
    return merged


def diagnose(search: CrossRepoSearch, repos: Sequence[Any], copies: Copies) -> dict[str, Any]:
    """Search every query filtered and across all repositories, and split each loss."""
    capture = _Capture(search)
    records: list[dict[str, Any]] = []
    filtered_by: dict[str, list[float]] = {}
    all_by: dict[str, list[float]] = {}
    for repo in repos:
        for query in repo.queries:
            one = search.search(query.text, 10, [repo.name])
            capture.lists = {}
            every: CrossRepoResults = search.search(query.text, 10)
            f = score_query(query, [Hit(r.hit.path, r.hit.start_line, r.hit.end_line) for r in one.hits]).ndcg
            a = _ndcg(query, every.hits, repo.name)
            filtered_by.setdefault(repo.name, []).append(f)
            all_by.setdefault(repo.name, []).append(a)
            if f - a <= LOSS_EPSILON:
                continue
            own = capture.lists.get(repo.name, [])
            merged = _merge(search, query.text, capture.lists)
            # The foreign hits that rank above the own repository's last hit: those that displace it.
            last = max((i for i, r in enumerate(merged) if r.repository == repo.name),
                       default=len(merged) - 1)
            foreign = [(i, r) for i, r in enumerate(merged[:last + 1]) if r.repository != repo.name]
            kinds = {_key(r): copies.kind(r.hit.text, repo.name) for _, r in foreign}
            copied = frozenset(k for k, v in kinds.items() if v is not None)
            n_copies = _ndcg(query, _merge(search, query.text, capture.lists, copied)[:10], repo.name)
            n_own = _ndcg(query, own, repo.name)
            parts = {"copies": n_copies - a, "siblings": n_own - n_copies, "ranking": f - n_own}
            records.append({
                "repository": repo.name, "query": query.text, "filtered": round(f, 4), "all": round(a, 4),
                "parts": {k: round(v, 4) for k, v in parts.items()},
                "cause": max(parts, key=lambda k: parts[k]),
                "target_in_pool": _in_pool(query, every.pool, repo.name),
                "foreign": [{"rank": i + 1, "repository": r.repository, "path": r.hit.path,
                             "copy": kinds[_key(r)]} for i, r in foreign if i < 10],
            })
    causes = {c: sum(1 for r in records if r["cause"] == c) for c in ("copies", "siblings", "ranking")}
    queries = sum(len(v) for v in filtered_by.values())
    return {
        "queries": queries, "losing": len(records), "by_cause": causes,
        "ranking_target_not_in_pool": sum(1 for r in records if r["cause"] == "ranking"
                                          and not r["target_in_pool"]),
        "loss_by_part_per_query": {p: round(sum(r["parts"][p] for r in records) / queries, 4)
                                   for p in ("copies", "siblings", "ranking")},
        "foreign_hits_in_top10": {
            str(kind): sum(1 for r in records for h in r["foreign"] if h["copy"] == kind)
            for kind in ("identical", "near-identical", None)},
        "ndcg10": {"filtered": round(statistics.fmean(statistics.fmean(v) for v in filtered_by.values()), 4),
                   "all": round(statistics.fmean(statistics.fmean(v) for v in all_by.values()), 4)},
        "ndcg10_by_repository": {n: {"filtered": round(statistics.fmean(filtered_by[n]), 4),
                                     "all": round(statistics.fmean(all_by[n]), 4)} for n in filtered_by},
        "losing_queries": records,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--bench", type=Path)
    parser.add_argument("--work", type=Path, required=True, help="scale.py's --work folder (already built)")
    parser.add_argument("--collection", default="scale")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per Milvus request")
    parser.add_argument("--out", type=Path, default=RESULTS / "scale_diagnosis.json")
    args = parser.parse_args()
    work = args.work.resolve()
    repos = load_repos(find_bench_dir(args.bench), args.corpus, None)
    milvus = AppConfig(backend=BackendConfig(kind="milvus", uri=str(work / "milvus.db"),
                                             collection=args.collection, timeout_seconds=args.timeout))
    first = repos[0].name
    kc = knowcode.open(work / "trees" / first, store=work / "stores" / first, config=AppConfig())
    kc._fresh = True  # built by scale.py: no up-to-date check
    embedder = kc.embedder()
    search = open_cross_repo_search(milvus, embedder)
    started = time.perf_counter()
    try:
        result = diagnose(search, repos, Copies(work / "stores"))
    finally:
        search.close()
        kc.close()
    result["seconds"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    log(json.dumps({k: v for k, v in result.items() if k not in ("losing_queries", "ndcg10_by_repository")},
                   indent=2))


if __name__ == "__main__":
    main()
