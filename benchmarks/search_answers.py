"""The answers `KnowCode.search` gives, written as JSON, so two installs can be compared byte for byte.

A speed change must not change a ranking: run this with each install's interpreter over the same
indexed corpus and compare the files (``cmp``). The queries are the latency queries of
search_latency.py and snippets of the store's own chunk texts (every `--stride`-th chunk in id order,
cut to windows of several lengths: short word queries, long questions, report-sized text, the chunk's
first identifier as a symbol query), each asked at limits 10 and 50. Each answer is its mode, errors
and every field of every hit, scores as repr'd floats. The script runs itself with PYTHONHASHSEED=0:
installs before 2026-12-02 summed a long question's coverage weights over a set of words, whose order
(so the sum's last bit) changed with the hash seed of each process; `math.fsum` now makes it exact.

    python benchmarks/search_answers.py --corpus DIR --store DIR --out FILE [--stride 70]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import asdict
from pathlib import Path

from search_latency import QUERIES

import knowcode

LIMITS = (10, 50)
# Words per snippet: short (the latency queries' 2-6 tokens), a question long enough for every
# long-question signal (12+ tokens), and past QUESTION_TOKENS (a report).
WINDOWS = (3, 7, 16, 45)
HASH_SEED = "0"  # any fixed seed: both installs must sum a set's floats in the same order
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def snippets(store_dir: Path, corpus: Path, stride: int) -> list[str]:
    """Queries cut from every `stride`-th chunk's text: word windows of each length, and its first
    identifier."""
    kc = knowcode.open(corpus, store=store_dir)
    store = kc.open_store()
    rows = store.connection.execute("SELECT text FROM chunks ORDER BY id").fetchall()
    store.close()
    kc.close()
    found: list[str] = []
    for number, (text,) in enumerate(rows[::stride]):
        words = _WORD.findall(text)
        if not words:
            continue
        size = WINDOWS[number % len(WINDOWS)]
        start = (number * 7) % max(1, len(words) - size + 1)
        found.append(" ".join(words[start:start + size]))
        if number % 5 == 0:
            found.append(words[0].strip("."))
    return list(dict.fromkeys(q for q in found if q.strip()))


def main() -> None:
    """Ask every query at each limit and write the answers."""
    if os.environ.get("PYTHONHASHSEED") != HASH_SEED:
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": HASH_SEED})
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="the indexed folder")
    parser.add_argument("--store", type=Path, required=True, help="its store")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    parser.add_argument("--stride", type=int, default=70, help="every n-th chunk gives snippets")
    args = parser.parse_args()
    queries = [*QUERIES, *snippets(args.store, args.corpus, args.stride)]
    kc = knowcode.open(args.corpus, store=args.store)
    answers = []
    for query in queries:
        for limit in LIMITS:
            hits = kc.search(query, limit=limit)
            fields = [{key: repr(value) if isinstance(value, float) else value
                       for key, value in asdict(hit).items()} for hit in hits]
            answers.append({"query": query, "limit": limit, "mode": hits.mode.value,
                            "errors": list(hits.errors), "hits": fields})
    kc.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(answers, indent=1) + "\n")
    print(f"{len(queries)} queries x {len(LIMITS)} limits -> {args.out}")


if __name__ == "__main__":
    main()
