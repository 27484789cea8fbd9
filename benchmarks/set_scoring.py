"""Scoring of the span-level questions and the issue set, beside knowcode.evals.scoring's NDCG@10.

Span-level questions (bench/questions/README.md) use the file-level benchmark's rules as they are
(`score_query`: lenient path rule, one shared line is a match, NDCG@10 with IDCG over min(10,
targets)); this module adds Recall@10 (share of targets found) and MRR@10 (1 / rank of the first
target found, 0 if none).

Issue localization (bench/issues/README.md, "Scoring"), over the hits of one search:
- file level: the distinct files of the hits in order of first appearance; Acc@k = every
  `file_targets` path is among the first k files; Recall@k = the share that is. Ten hits hold ~5
  distinct files, so Acc@10 of a 10-hit answer is nearly Acc@5; the README's "ask for 10 and for 50"
  gives `file_acc10_of50`, Acc@10 over the first 10 files of the 50-hit answer (the file ranking the
  issue's BM25 figure of 0.70 describes);
- function level: a target's rank is the position of the first of the top 10 hits in the same file
  (exact path equality, repository-relative) that shares a line with it; Recall@10, Acc@10 (every
  target found), NDCG@10 (gain 1 at each found rank, a rank counted once even when it matches two
  targets, so a hit spanning a whole class cannot score above 1; IDCG over min(10, targets)) and MRR@10.
Issue figures are means over instances (the set is already stratified by repository).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from knowcode.evals.scoring import CUTOFF, Hit, Target, ndcg_from_ranks

FILE_ACC_KS = (1, 5, 10)  # bench/issues/README.md: file Acc@1/5/10

# Prose, configuration, translation and template files: a hit on one of these is "non-code" in the
# share reported for the issue set (issue #11: issue text pulls in README, CONTRIBUTING, issue
# templates, .po files, tox.ini). Matched on the lower-cased suffix; extension-less files by name.
NON_CODE_SUFFIXES = frozenset({
    ".md", ".markdown", ".rst", ".txt", ".text", ".adoc", ".po", ".pot", ".cfg", ".ini", ".toml",
    ".yml", ".yaml", ".json", ".xml", ".csv", ".tsv", ".html", ".htm", ".jinja", ".jinja2", ".j2",
    ".tmpl", ".tpl", ".mako", ".css", ".svg", ".in", ".tex", ".bib", ".inv", ".lock", ".conf",
})
NON_CODE_NAMES = frozenset({
    "readme", "license", "licence", "copying", "authors", "contributors", "contributing", "changelog",
    "changes", "history", "news", "notice", "install", "manifest", "codeowners", "todo",
})


def is_non_code(path: str) -> bool:
    """Whether a hit's file is prose, configuration, translation or a template (see the constants)."""
    name = PurePosixPath(path.replace("\\", "/")).name.lower()
    suffix = PurePosixPath(name).suffix
    return suffix in NON_CODE_SUFFIXES or (not suffix and name.lstrip(".") in NON_CODE_NAMES)


def non_code_share(hit_lists: Iterable[Sequence[Hit]], k: int = CUTOFF) -> float:
    """The share of all top-k hits that are non-code files; 0 when there are no hits."""
    flags = [is_non_code(hit.path) for hits in hit_lists for hit in hits[:k]]
    return sum(flags) / len(flags) if flags else 0.0


def recall(ranks: Sequence[int | None]) -> float:
    """The share of targets found (0 when there are none)."""
    return sum(rank is not None for rank in ranks) / len(ranks) if ranks else 0.0


def reciprocal_rank(ranks: Sequence[int | None]) -> float:
    """1 / the best rank found, 0 when no target was found."""
    found = [rank for rank in ranks if rank is not None]
    return 1.0 / min(found) if found else 0.0


def same_answer(short: Sequence[Hit], long: Sequence[Hit], k: int = CUTOFF) -> bool:
    """Whether the first k hits of a longer answer equal the k-hit answer (limit consistency)."""
    return list(long[:k]) == list(short[:k])


def distinct_files(hits: Sequence[Hit]) -> list[str]:
    """The hits' files in order of first appearance."""
    return list(dict.fromkeys(hit.path for hit in hits))


def file_ranks(file_targets: Sequence[str], hits: Sequence[Hit]) -> list[int | None]:
    """For each target file, its 1-based position among the distinct hit files (exact path), or None."""
    order = {path: rank for rank, path in enumerate(distinct_files(hits), start=1)}
    return [order.get(path) for path in file_targets]


def file_accuracy(file_targets: Sequence[str], hits: Sequence[Hit], k: int) -> float:
    """1.0 when every target file is among the first k distinct files of the hits, else 0.0."""
    ranks = file_ranks(file_targets, hits)
    return float(bool(ranks) and all(r is not None and r <= k for r in ranks))


def function_ranks(targets: Sequence[Target], hits: Sequence[Hit], k: int = CUTOFF) -> list[int | None]:
    """For each span target, the rank of the first top-k hit in the same file (exact path) sharing a line."""
    top = hits[:k]
    ranks: list[int | None] = []
    for target in targets:
        assert target.start_line is not None and target.end_line is not None
        ranks.append(next((rank for rank, hit in enumerate(top, start=1) if hit.path == target.path
                           and hit.start_line <= target.end_line and hit.end_line >= target.start_line),
                          None))
    return ranks


@dataclass(frozen=True, slots=True)
class IssueScore:
    """One issue's figures (see the module docstring) and the ranks they came from."""

    file_acc: dict[int, float]
    file_recall10: float
    fn_recall10: float
    fn_acc10: float
    fn_ndcg10: float
    fn_mrr10: float
    file_ranks: tuple[int | None, ...]
    fn_ranks: tuple[int | None, ...]

    def metrics(self) -> dict[str, float]:
        """The figures as a flat mapping (the keys of the result tables)."""
        return {**{f"file_acc{k}": v for k, v in self.file_acc.items()}, "file_recall10": self.file_recall10,
                "fn_recall10": self.fn_recall10, "fn_acc10": self.fn_acc10, "fn_ndcg10": self.fn_ndcg10,
                "fn_mrr10": self.fn_mrr10}


def score_issue(targets: Sequence[Target], file_targets: Sequence[str], hits: Sequence[Hit],
                k: int = CUTOFF) -> IssueScore:
    """Score the hits of one issue search at file and function level."""
    top = hits[:k]
    franks = file_ranks(file_targets, top)
    fn = function_ranks(targets, top, k)
    acc = {n: file_accuracy(file_targets, top, n) for n in FILE_ACC_KS}
    found = recall(fn)
    return IssueScore(acc, recall(franks), found,
                      float(bool(fn) and found == 1.0), ndcg_from_ranks(fn, len(targets), k),
                      reciprocal_rank(fn), tuple(franks), tuple(fn))


def mean_metrics(records: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each metric over records (each record maps metric -> value); {} when empty."""
    if not records:
        return {}
    return {name: statistics.fmean(r[name] for r in records) for name in records[0]}


@dataclass(frozen=True, slots=True)
class MacroSummary:
    """Metrics averaged the benchmark's way: per repo, then over repos; categories likewise."""

    overall: dict[str, float]
    repos: dict[str, dict[str, float]]
    categories: dict[str, dict[str, float]]


def macro_average(per_repo: Mapping[str, Sequence[tuple[str, Mapping[str, float]]]],
                  category_order: Sequence[str] = ()) -> MacroSummary:
    """Average (category, metrics) records: repo = mean of its queries, overall = mean of repos; a
    category = the mean within each repo having it, then over those repos (bench/README.md rules)."""
    repos = {name: mean_metrics([m for _, m in records]) for name, records in per_repo.items() if records}
    within: dict[str, list[dict[str, float]]] = {}
    for records in per_repo.values():
        by_category: dict[str, list[Mapping[str, float]]] = {}
        for category, metrics in records:
            by_category.setdefault(category, []).append(metrics)
        for category, values in by_category.items():
            within.setdefault(category, []).append(mean_metrics(values))
    order = {c: i for i, c in enumerate(category_order)}
    names = sorted(within, key=lambda c: (order.get(c, len(order)), c))
    return MacroSummary(mean_metrics(list(repos.values())), repos,
                        {c: mean_metrics(within[c]) for c in names})
