"""benchmarks/quality.py's results: the JSON record of each set and the markdown tables of all of them.

JSON (`quality.json`): `sets.<set>.methods.<method>` holds the averages and, under `queries`, every
query's figures, target ranks and hits (`[path, start, end]`, best first; issues also `hits_long`,
the limit-50 answer), sorted by query id so two runs diff line by line. `sets.<set>.queries` holds
each query's text (issues: the instance id, base commit and targets) once.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from corpus_sets import FILE_SET, QUESTION_SET, Repo
from issue_set import Instance
from methods import BASELINE, MAIN, MethodRun, QueryRecord
from set_scoring import macro_average, mean_metrics, non_code_share

from knowcode.evals.scoring import CATEGORIES, Query, Target, mean_lines_per_hit

ISSUE_SET = "issues"
SET_ORDER = (FILE_SET, QUESTION_SET, ISSUE_SET)
# Each set's headline figures, in table order: (metric key, label).
FILE_METRICS = (("ndcg10", "NDCG@10"),)
QUESTION_METRICS = (("ndcg10", "NDCG@10"), ("recall10", "Recall@10"), ("mrr10", "MRR@10"))
ISSUE_METRICS = (("file_acc1", "file Acc@1"), ("file_acc5", "file Acc@5"), ("file_acc10", "file Acc@10"),
                 ("fn_recall10", "fn Recall@10"), ("fn_acc10", "fn Acc@10"), ("fn_ndcg10", "fn NDCG@10"),
                 ("fn_mrr10", "fn MRR@10"), ("fn_recall50", "fn Recall@50"),
                 ("file_acc10_of50", "file Acc@10 of 50 hits"),
                 ("same_at_long", "top 10 of limit 50 = limit 10"),
                 ("non_code_share", "non-code share of hits"))
SET_METRICS = {FILE_SET: FILE_METRICS, QUESTION_SET: QUESTION_METRICS, ISSUE_SET: ISSUE_METRICS}
# The ablation table: one headline column per set (plus two more issue figures).
ABLATION_COLUMNS = ((FILE_SET, "ndcg10", "file NDCG@10"), (QUESTION_SET, "ndcg10", "questions NDCG@10"),
                    (ISSUE_SET, "fn_ndcg10", "issues fn NDCG@10"),
                    (ISSUE_SET, "fn_recall10", "issues fn R@10"),
                    (ISSUE_SET, "file_acc10", "issues file Acc@10"))


def _r(value: float) -> float:
    return round(value, 4)


def _ms(values: Sequence[float], q: float) -> float | None:
    """The q-quantile in milliseconds (the median for 0.5, else nearest rank)."""
    if not values:
        return None
    if q == 0.5:
        return round(1000 * statistics.median(values), 2)
    ordered = sorted(values)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def _record_json(record: QueryRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": record.id, "repo": record.repo, "category": record.category,
                             **{k: _r(v) for k, v in record.metrics.items()}, "ranks": record.ranks,
                             **record.extra, "hits": [list(hit) for hit in record.hits]}
    if record.hits_long is not None:
        entry["hits_long"] = [list(hit) for hit in record.hits_long]
    return entry


def method_json(set_name: str, run: MethodRun) -> dict[str, Any]:
    """One method's record on one set: averages (bench rules for the corpus sets, the mean over
    instances for issues), per repo, per category, latency and every query."""
    if run.skipped is not None:
        return {"status": "skipped", "reason": run.skipped}
    records = sorted(run.all_records(), key=lambda r: r.id)
    hits = [hit for record in records for hit in record.hits]
    if set_name == ISSUE_SET:
        overall = mean_metrics([r.metrics for r in records])
        overall["non_code_share"] = non_code_share(r.hits for r in records)
        repos = {repo: mean_metrics([r.metrics for r in rs]) for repo, rs in sorted(run.records.items())}
        categories: dict[str, dict[str, float]] = {}
    else:
        per_repo = {repo: [(r.category, r.metrics) for r in rs] for repo, rs in run.records.items()}
        summary = macro_average(per_repo, CATEGORIES)
        overall, repos, categories = summary.overall, summary.repos, summary.categories
    return {
        "status": "ok", **{k: _r(v) for k, v in overall.items()},
        "mean_lines_per_hit": round(mean_lines_per_hit(hits), 2), "hits": len(hits),
        "categories": {c: {k: _r(v) for k, v in m.items()} for c, m in categories.items()},
        "repos": {repo: {k: _r(v) for k, v in m.items()} for repo, m in repos.items()},
        "latency_ms": {"p50": _ms(run.seconds, 0.5), "p95": _ms(run.seconds, 0.95)},
        "queries": [_record_json(r) for r in records],
    }


def _target_json(target: Target) -> Any:
    return target.path if not target.is_span else [target.path, target.start_line, target.end_line]


def corpus_queries_json(set_name: str, repos: Sequence[Repo]) -> list[dict[str, Any]]:
    """The queries of a corpus set with their ids, text and targets."""
    def entry(repo: Repo, number: int, query: Query) -> dict[str, Any]:
        return {"id": f"{repo.name}#{number}", "repo": repo.name, "category": query.category,
                "query": query.text, "targets": [_target_json(t) for t in query.targets]}
    return [entry(repo, n, q) for repo in repos for n, q in enumerate(repo.of_set(set_name))]


def issue_queries_json(instances: Sequence[Instance]) -> list[dict[str, Any]]:
    """The issue instances run, with their base commits and targets (the text is in the issue set)."""
    return [{"id": i.instance_id, "repo": i.repo, "base_commit": i.base_commit, "created_at": i.created_at,
             "targets": [_target_json(t) for t in i.targets], "file_targets": list(i.file_targets)}
            for i in sorted(instances, key=lambda i: i.instance_id)]


def dump_json(value: Any, indent: str = "") -> str:
    """JSON with one line per query record (every `queries` list), indented elsewhere: small, and two
    runs diff query by query."""
    inner = indent + " "
    if isinstance(value, dict) and value:
        items = []
        for key, item in value.items():
            if key == "queries" and isinstance(item, list) and item:
                lines = ",\n".join(f"{inner} {json.dumps(q, separators=(',', ':'))}" for q in item)
                items.append(f"{inner}{json.dumps(key)}: [\n{lines}\n{inner}]")
            else:
                items.append(f"{inner}{json.dumps(key)}: {dump_json(item, inner)}")
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and value and any(isinstance(v, (dict, list)) for v in value):
        return "[\n" + ",\n".join(inner + dump_json(v, inner) for v in value) + f"\n{indent}]"
    return json.dumps(value)


def print_json_line(record: dict[str, Any], out: Path | None) -> None:
    """Print a run's record as one JSON line and append it to `out` when given: a JSON-lines file that
    runs of two codes, one after the other, add to."""
    line = json.dumps(record)
    if out is not None:
        with out.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
    print(line)


# Markdown


def _f(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "| --- | " + " | ".join("---:" for _ in header[1:]) + " |",
            *("| " + " | ".join(row) + " |" for row in rows)]


def _ok(methods: dict[str, Any]) -> dict[str, Any]:
    return {name: m for name, m in methods.items() if m["status"] == "ok"}


def headline(result: dict[str, Any]) -> list[str]:
    """All sets side by side: each set's figures for the baselines and KnowCode."""
    sets = result["sets"]
    names = [n for n in dict.fromkeys(n for s in sets.values() for n in _ok(s["methods"]))
             if not any(n == a for a in result.get("ablations", ()))]
    rows = []
    for set_name in (s for s in SET_ORDER if s in sets):
        methods = _ok(sets[set_name]["methods"])
        for key, label in (*SET_METRICS[set_name], ("mean_lines_per_hit", "mean lines per hit")):
            digits = 1 if key == "mean_lines_per_hit" else 3
            rows.append([f"{set_name}: {label}", *(_f(methods.get(n, {}).get(key), digits) for n in names)])
    return ["## All sets side by side", "", *_table(["set: figure", *names], rows)]


def set_section(set_name: str, data: dict[str, Any], ablations: Sequence[str]) -> list[str]:
    """One set's tables: overall (and per category) per method, then per repo."""
    methods = _ok(data["methods"])
    metrics = SET_METRICS[set_name]
    title = {FILE_SET: "File-level benchmark (bench/annotations)",
             QUESTION_SET: f"Span-level questions ({data.get('questions', 'bench/questions')})",
             ISSUE_SET: "Issue localization (bench/issues)"}[set_name]
    lines = ["", f"## {title}", "", data["note"], ""]
    categories = [c for c in CATEGORIES if any(c in m["categories"] for m in methods.values())]
    header = ["method", *(label for _, label in metrics), *(f"{c} NDCG@10" for c in categories),
              "lines/hit", "p50 ms", "p95 ms"]
    rows = [[name, *(_f(m.get(k)) for k, _ in metrics),
             *(_f(m["categories"].get(c, {}).get("ndcg10")) for c in categories),
             _f(m["mean_lines_per_hit"], 1), _f(m["latency_ms"]["p50"], 1), _f(m["latency_ms"]["p95"], 1)]
            for name, m in methods.items()]
    lines += _table(header, rows)
    key = "fn_ndcg10" if set_name == ISSUE_SET else "ndcg10"
    shown = [n for n in methods if n not in ablations]
    lines += ["", f"Per repo ({'fn ' if set_name == ISSUE_SET else ''}NDCG@10):", ""]
    # the issue set's cost per repository: files and chunks at the last commit, files parsed over all
    # visited commits, seconds spent indexing and in all
    cost = ("files", "chunks", "parsed_files", "index_seconds", "seconds") if set_name == ISSUE_SET else ()
    repo_rows = [[repo, str(facts.get("queries", facts.get("instances", ""))),
                  *(_f(methods[n]["repos"].get(repo, {}).get(key)) for n in shown),
                  *(str(facts.get(c, "-")) for c in cost)]
                 for repo, facts in data["repos"].items()]
    lines += _table(["repo", "queries", *shown, *(c.replace("_", " ") for c in cost)], repo_rows)
    return lines


def ablation_section(result: dict[str, Any]) -> list[str]:
    """One table: each ablation's headline figure on every set, with its difference to KnowCode."""
    sets = result["sets"]
    columns = [c for c in ABLATION_COLUMNS if c[0] in sets]
    rows = []
    for name in [MAIN, *result["ablations"]]:
        cells = []
        for set_name, key, _ in columns:
            method = sets[set_name]["methods"].get(name, {})
            base = sets[set_name]["methods"].get(MAIN, {}).get(key)
            value = method.get(key)
            known = value is not None and base is not None and name != MAIN
            delta = f" ({value - base:+.3f})" if known else ""
            cells.append(_f(value) + delta)
        rows.append([name, *cells])
    return ["", "## Ablation (difference to knowcode in parentheses)", "",
            *_table(["method", *(label for _, _, label in columns)], rows)]


def render_markdown(result: dict[str, Any]) -> str:
    """The headline table, each set's tables, the ablation table and any skipped methods."""
    lines = ["# Search quality: file-level, span-level and issue-localization benchmarks", "",
             f"Measured {result['measured_at']} at commit {result['code_version']['commit']} "
             f"(src tree {result['code_version']['src_tree']}); "
             f"limit {result['limit']}; "
             f"headline baseline `{BASELINE}` (plain bm25s over {result['line_chunk_chars']}-character line "
             "chunks of the same files).", "", *headline(result)]
    for set_name in (s for s in SET_ORDER if s in result["sets"]):
        lines += set_section(set_name, result["sets"][set_name], result["ablations"])
    if result.get("ablations"):
        lines += ablation_section(result)
    skipped = {f"{name} ({set_name})": m["reason"] for set_name, data in result["sets"].items()
               for name, m in data["methods"].items() if m["status"] == "skipped"}
    if skipped:
        lines += ["", "## Skipped methods", "", *(f"- {name}: {reason}" for name, reason in skipped.items())]
    return "\n".join(lines) + "\n"
