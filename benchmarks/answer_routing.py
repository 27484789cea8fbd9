"""Local-vs-LLM routing on the public benchmark: how right local answers are, per sufficiency bar.

For every query the task type comes from the classifier and every rung of the escalation ladder
(``llm/agent.py``) builds its bundle, recording the bundle's sufficiency, whether it holds an annotated
target (bench/README.md's path and line rules) and how long it took. From those rows, for each candidate
bar, a query is *local-eligible* when some rung reaches the bar, and its local answer is right when the
first such rung's bundle holds a target. The baseline, from the same rows, is answering every query
locally with the top rung's bundle (no gate): the gate is worth having only if it beats that.

The rows also carry the classifier's confidence. At the default bar, the queries at or above
:data:`CANDIDATE_MIN_CONFIDENCE` and those below it are reported apart, over all queries and over those
whose type the repository's own evaluation verified: what a confidence gate on local answers would keep
and turn away. ``ask`` has no such gate (it was measured with this split and not kept; README, "Query
classification").

Then ``knowcode eval``'s own routine (``run_routing_eval``, default configuration) runs on every repo,
giving the task types a routing artifact would verify there.

    python benchmarks/answer_routing.py --corpus DIR [--only flask ...]
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Sequence
from typing import Any

from corpus_sets import RESULTS, corpus_parser, find_bench_dir, load_repos, log, open_repo, store_folder

import knowcode
from knowcode import __version__
from knowcode.config import DEFAULT_ROUTING_QUALITY_FLOOR, LLMConfig
from knowcode.evals.routing_eval import QuerySet, bundle_holds_target, run_routing_eval
from knowcode.evals.scoring import Query
from knowcode.llm.agent import ESCALATION_LADDER
from knowcode.llm.query_classifier import classify
from knowcode.llm.routing_policy import local_bar
from knowcode.models import TaskType

BARS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95)  # candidate sufficiency bars around the default
# The confidence gate measured for issue 13 and not kept: 0.25 is where the held-out accuracy-by-confidence
# curve steps up (benchmarks/results/classifier_accuracy.json); the split shows what such a gate would cost.
CANDIDATE_MIN_CONFIDENCE = 0.25


def ladder_row(kc: knowcode.KnowCode, repo: str, query: Query) -> dict[str, Any]:
    """Every rung's bundle for a query: sufficiency, target held, milliseconds."""
    classification = classify(query.text)
    task = classification.task_type
    rungs = []
    for rung in ESCALATION_LADDER:
        started = time.perf_counter()
        bundle = kc.context(query.text, max_tokens=rung.max_tokens, limit_entities=rung.limit_entities,
                            task_type=task, verbosity=rung.verbosity, expand_deps=rung.expand_deps)
        rungs.append({"sufficiency": bundle.sufficiency_score, "hit": bundle_holds_target(bundle, query),
                      "ms": (time.perf_counter() - started) * 1000})
    return {"repo": repo, "query": query.text, "task_type": task.value,
            "confidence": round(classification.confidence, 4), "rungs": rungs}


def at_bar(rows: Sequence[dict[str, Any]], bar: float) -> dict[str, Any]:
    """Eligible share, precision of local answers and their latency when the bar is ``bar``."""
    eligible, right, latency = 0, 0, []
    for row in rows:
        elapsed = 0.0
        for rung in row["rungs"]:
            elapsed += rung["ms"]
            if rung["sufficiency"] >= bar:
                eligible += 1
                right += rung["hit"]
                latency.append(elapsed)
                break
    return {"queries": len(rows), "eligible": eligible,
            "eligible_share": round(eligible / len(rows), 3) if rows else None,
            "precision": round(right / eligible, 3) if eligible else None,
            "local_p50_ms": round(statistics.median(latency), 1) if latency else None}


def ungated(rows: Sequence[dict[str, Any]]) -> float | None:
    """Precision of answering every query locally with the top rung's bundle."""
    return round(statistics.fmean(row["rungs"][-1]["hit"] for row in rows), 3) if rows else None


def confidence_gate(rows: Sequence[dict[str, Any]], verified: dict[str, list[str]]) -> dict[str, Any]:
    """At the default bar: the queries a confidence gate at :data:`CANDIDATE_MIN_CONFIDENCE` would trust and
    those it would turn away, over every query and over the queries whose task type their repository's
    evaluation verified."""
    bar = local_bar(LLMConfig())

    def split(subset: Sequence[dict[str, Any]]) -> dict[str, Any]:
        trusted = [row for row in subset if row["confidence"] >= CANDIDATE_MIN_CONFIDENCE]
        unsure = [row for row in subset if row["confidence"] < CANDIDATE_MIN_CONFIDENCE]
        return {"trusted": at_bar(trusted, bar), "unsure": at_bar(unsure, bar)}

    on_verified = [row for row in rows if row["task_type"] in verified.get(row["repo"], [])]
    return {"min_confidence": CANDIDATE_MIN_CONFIDENCE, "bar": bar, "all": split(rows),
            "verified_types": split(on_verified)}


def main() -> None:
    """Run the benchmark and write benchmarks/results/answer_routing.json."""
    args = corpus_parser(__doc__, RESULTS / "answer_routing.json").parse_args()
    bench = find_bench_dir(args.bench)
    repos = load_repos(bench, args.corpus, args.only)
    rows: list[dict[str, Any]] = []
    verified: dict[str, list[str]] = {}
    with store_folder(args.store_root) as store_root:
        for repo in repos:
            kc = open_repo(repo, store_root)
            kc.index()
            rows += [ladder_row(kc, repo.name, query) for query in repo.queries]
            annotations = bench / "annotations" / f"{repo.name}.json"
            report = run_routing_eval(kc, QuerySet(annotations, "", tuple(repo.queries)),
                                      code_version=__version__)
            verified[repo.name] = [task.value for task in report.passing_task_types]
            log(f"[{repo.name}] verified for local answers: {', '.join(verified[repo.name]) or 'none'}")
    by_type = {task.value: [row for row in rows if row["task_type"] == task.value] for task in TaskType}
    result = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"), "knowcode_version": __version__,
        "queries": len(rows), "quality_floor": DEFAULT_ROUTING_QUALITY_FLOOR,
        "ungated_precision": {"all": ungated(rows), **{t: ungated(r) for t, r in by_type.items() if r}},
        "by_bar": {str(bar): {"all": at_bar(rows, bar),
                              **{t: at_bar(r, bar) for t, r in by_type.items() if r}} for bar in BARS},
        "confidence_gate": confidence_gate(rows, verified),
        "verified_task_types": verified,
        "rows": rows,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
