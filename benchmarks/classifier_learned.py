"""Would learned cue weights carry further than hand-written ones? (issue 13; an experiment, not shipped)

A multinomial logistic regression over binary word uni- and bigrams is a table of weighted patterns (one
per n-gram and type), which is what the spec's classifier is. Its decision values are added, times
``--weight``, to the hand-written cues' scores. Two measurements:

* leave one author out: for each labelled set (old, v2 ... v10), the model is trained on every other set's
  tuning half and scored on this set's held-out half, so it has never seen its author;
* the model trained on every tuning half (v11's and v12's included), scored on the v11 and v12 held-out
  halves and on the shared span-level questions (accuracy only: they are a test set).

Needs scikit-learn, which KnowCode does not depend on (``pip install scikit-learn``).

    python benchmarks/classifier_learned.py [--weight 0 0.5 1 2] [--shared-questions DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from classifier_accuracy import (
    DATA,
    RESULTS,
    Labelled,
    default_shared_folder,
    load_queries,
    load_shared_questions,
)

from knowcode.llm.query_classifier import TIE_BREAK_ORDER, classify

# each author's halves, by name; the first set's files carry no suffix
AUTHORS = {"old": "", **{f"v{n}": f"_v{n}" for n in range(2, 13)}}
SPAN_STYLE = ("v11", "v12")  # the held-out span-level questions' labels, in the shared questions' style
C = 1.0  # the regression's inverse L2 strength: 0.3-3 all read within 0.005 leave-one-author-out
ORDER = [task.value for task in TIE_BREAK_ORDER]


def halves(suffix: str) -> tuple[Labelled, Labelled]:
    """An author's tuning and held-out halves."""
    if not suffix:
        return (load_queries(DATA / "classifier_queries.jsonl"),
                load_queries(DATA / "classifier_queries_holdout.jsonl"))
    return (load_queries(DATA / f"classifier_queries{suffix}_tuning.jsonl"),
            load_queries(DATA / f"classifier_queries{suffix}_holdout.jsonl"))


def fit(rows: Labelled) -> Any:
    """The bag-of-n-grams regression, fitted on (query, task) rows."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(CountVectorizer(ngram_range=(1, 2), binary=True, token_pattern=r"(?u)\b\w+\b"),
                          LogisticRegression(C=C, max_iter=5000))
    return model.fit([query for query, _ in rows], [task.value for _, task in rows])


def accuracy(model: Any, rows: Labelled, weight: float) -> float:
    """Share of rows whose label is the type with the highest cue score + weight x decision value."""
    values = model.decision_function([query for query, _ in rows])
    classes = list(model.classes_)
    right = 0
    for (query, task), value in zip(rows, values, strict=True):
        classification = classify(query)
        chosen = classification.task_type.value
        if weight:
            cues = {t.value: score for t, score in classification.scores.items()}
            combined = {t: cues.get(t, 0.0) + weight * value[classes.index(t)] for t in classes}
            chosen = max(combined, key=lambda t: (combined[t], -ORDER.index(t)))
        right += chosen == task.value
    return round(right / len(rows), 4)


def main(argv: Sequence[str] | None = None) -> None:
    """Run both measurements for every weight; print and write them."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--weight", type=float, nargs="+", default=[0.0, 0.5, 1.0, 2.0])
    parser.add_argument("--shared-questions", type=Path, default=None, metavar="DIR")
    parser.add_argument("--out", type=Path, default=RESULTS / "classifier_learned.json")
    args = parser.parse_args(argv)
    split = {name: halves(suffix) for name, suffix in AUTHORS.items()}
    earlier = [name for name in split if name not in SPAN_STYLE]  # scored below, by a model that saw the rest
    loao: dict[str, dict[str, float]] = {}
    for name in earlier:
        model = fit([row for other in earlier if other != name for row in split[other][0]])
        loao[name] = {str(w): accuracy(model, split[name][1], w) for w in args.weight}
        print(f"leave out {name}: {loao[name]}", flush=True)
    held = sum(len(split[name][1]) for name in earlier)
    pooled = {str(w): round(sum(loao[name][str(w)] * len(split[name][1]) for name in earlier) / held, 4)
              for w in args.weight}
    model = fit([row for tuning, _ in split.values() for row in tuning])
    result: dict[str, Any] = {"c": C, "leave_one_author_out": loao, "leave_one_author_out_pooled": pooled}
    for name in SPAN_STYLE:
        result[f"{name}_holdout"] = {str(w): accuracy(model, split[name][1], w) for w in args.weight}
    shared = args.shared_questions or default_shared_folder()
    if shared is not None and shared.is_dir():
        result["shared_questions"] = {str(w): accuracy(model, load_shared_questions(shared), w)
                                      for w in args.weight}
    print(json.dumps({k: v for k, v in result.items() if k != "leave_one_author_out"}, indent=1))
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
