"""The approximate vector graph against brute force: recall@10, query latency and build time.

Reads the vectors of an indexed store (`--store DIR`, any `knowcode index` store with vectors), builds
the graph KnowCode builds for large segments (storage/ann_index.py) and a variant of it, and asks both
it and brute force for the 10 nearest chunks of: the benchmark's standard-library questions and the
embedded first halves of the heads of `--sampled` random chunks. Recall@10 is the
share of brute force's 10 that the graph's search (candidates re-scored exactly, as `VectorStore`
does) returns. Latencies are medians over all queries, one thread, on this machine.

    python benchmarks/ann_recall.py --store DIR [--sampled 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from knowcode.retrieval.embeddings import StaticEmbeddingProvider
from knowcode.retrieval.search_index import DENSE_TEXT_CHARS, load_search_index
from knowcode.storage import Store
from knowcode.storage import ann_index as ann
from knowcode.storage.vector_store import VectorStore

RESULTS = Path(__file__).parent / "results"
QUESTIONS = (  # the standard-library questions of benchmarks/search_latency.py
    "how are http cookies parsed", "JSONDecoder", "thread pool executor shutdown",
    "parse command line arguments", "email header encoding", "how does asyncio schedule callbacks",
    "ZipFile", "tarfile extraction filter", "logging handler that rotates files", "urllib.parse.urlsplit",
    "xml element tree iteration", "csv dialect sniffing", "dataclass field defaults", "Path.glob",
    "socket timeout handling", "sqlite3 row factory", "decimal rounding modes", "unittest test discovery",
)


def _measure(store: VectorStore, queries: np.ndarray, truth: list[set[str]]) -> dict[str, float]:
    found, times = [], []
    for query in queries:
        started = time.perf_counter()
        hits = store.search(query, 10)
        times.append((time.perf_counter() - started) * 1000)
        found.append({cid for cid, _ in hits})
    recall = statistics.mean(len(f & t) / len(t) for f, t in zip(found, truth, strict=True))
    return {"recall_at_10": round(recall, 4), "p50_ms": round(statistics.median(times), 3)}


def main() -> None:
    """Load the store's vectors, build the graphs, measure, print and record."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="an indexed store with vectors")
    parser.add_argument("--sampled", type=int, default=300, help="random chunks whose heads are queries")
    parser.add_argument("--out", type=Path, default=RESULTS / "ann_recall.json")
    args = parser.parse_args()
    store = Store.open(args.store, create=False)
    index = load_search_index(store, args.store)
    if index.dense is None:
        raise SystemExit("error: the store has no vectors")
    exact = VectorStore(index.dense.chunk_ids, index.dense.matrix)
    texts = dict(store.connection.execute("SELECT id, index_text FROM chunks").fetchall())
    store.close()
    rng = np.random.default_rng(0)
    sampled = [exact.chunk_ids[i] for i in rng.choice(len(exact.chunk_ids), args.sampled, replace=False)]
    embedder = StaticEmbeddingProvider()
    heads = [texts[cid][:DENSE_TEXT_CHARS // 2] for cid in sampled]
    queries = embedder.embed([*QUESTIONS, *heads], query=True)
    truth = [{cid for cid, _ in exact.search(q, 10)} for q in queries]
    methods: dict[str, dict[str, float]] = {"brute force": _measure(exact, queries, truth)}
    variants: dict[str, dict[str, object]] = {
        "knowcode graph": {}, "f32 graph, expansion_add 128": {"ANN_DTYPE": "f32", "ANN_EXPANSION_ADD": 128}}
    for name, overrides in variants.items():
        saved = {key: getattr(ann, key) for key in overrides}
        for key, value in overrides.items():
            setattr(ann, key, value)
        try:
            started = time.perf_counter()
            graph = ann.AnnIndex.build(exact.matrix)
            build = time.perf_counter() - started
        finally:
            for key, value in saved.items():
                setattr(ann, key, value)
        approximate = VectorStore.join([(exact, set())], graph)
        methods[name] = {**_measure(approximate, queries, truth), "build_seconds": round(build, 2)}
    result = {"measured_at": time.strftime("%Y-%m-%d %H:%M"), "store": str(args.store),
              "rows": len(exact.chunk_ids), "dimension": int(exact.matrix.shape[1]), "queries": len(queries),
              "settings": {"dtype": ann.ANN_DTYPE, "connectivity": ann.ANN_CONNECTIVITY,
                           "expansion_add": ann.ANN_EXPANSION_ADD,
                           "expansion_search": ann.ANN_EXPANSION_SEARCH,
                           "oversample": ann.ANN_OVERSAMPLE, "min_rows": ann.ANN_MIN_ROWS},
              "methods": methods}
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
