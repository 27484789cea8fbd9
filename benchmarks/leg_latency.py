"""The two legs alone, this code against another checkout's, paired in one process on the same chunks.

Loads the chunks of an indexed store (`--store DIR`), builds this code's sparse leg and the one of
`--baseline-src` (the `src` folder of another checkout, e.g. a worktree of main) from the same tokens,
and the dense leg of both over the store's vectors, then times each query on all four in turn, so
the machine's load falls on all of them alike. Also counts the queries whose top-10 sparse ids agree.

    python benchmarks/leg_latency.py --store DIR --baseline-src ../wt-base/src [--repeats 30]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from knowcode.retrieval.embeddings import StaticEmbeddingProvider
from knowcode.retrieval.search_index import load_search_index
from knowcode.retrieval.sparse import Postings, SparseIndex, SparseSegment
from knowcode.storage import Store
from knowcode.storage.vector_store import VectorStore

RESULTS = Path(__file__).parent / "results"
QUERIES = (  # the standard-library questions of benchmarks/search_latency.py
    "how are http cookies parsed", "JSONDecoder", "thread pool executor shutdown",
    "parse command line arguments", "email header encoding", "how does asyncio schedule callbacks",
    "ZipFile", "tarfile extraction filter", "logging handler that rotates files", "urllib.parse.urlsplit",
    "xml element tree iteration", "csv dialect sniffing", "dataclass field defaults", "Path.glob",
    "socket timeout handling", "sqlite3 row factory", "decimal rounding modes", "unittest test discovery",
)


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    """Build the four legs, time them query by query, print and record the medians."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="an indexed store with vectors")
    parser.add_argument("--baseline-src", type=Path, required=True, help="the src folder to compare with")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--out", type=Path, default=RESULTS / "leg_latency.json")
    args = parser.parse_args()
    store = Store.open(args.store, create=False)
    rows = store.connection.execute("SELECT id, tokens FROM chunks ORDER BY id").fetchall()
    index = load_search_index(store, args.store)
    store.close()
    if index.dense is None:
        raise SystemExit("error: the store has no vectors")
    ids, tokens = [r[0] for r in rows], [r[1] for r in rows]
    base_sparse = _module("baseline_sparse", args.baseline_src / "knowcode/retrieval/sparse.py")
    base_vectors = _module("baseline_vector_store", args.baseline_src / "knowcode/storage/vector_store.py")
    with tempfile.TemporaryDirectory() as tmp:
        base_sparse.SparseIndex.build(ids, tokens).save(Path(tmp) / "baseline")
        Postings.build(tokens).save(Path(tmp), "segment")
        legs: dict[str, tuple[Any, bool]] = {  # (leg, takes the query vector)
            "sparse, baseline": (base_sparse.SparseIndex.load(Path(tmp) / "baseline"), False),
            "sparse, this code": (SparseIndex([SparseSegment(ids, Postings.load(Path(tmp), "segment"))]),
                                  False),
            "dense, baseline": (base_vectors.VectorStore(index.dense.chunk_ids, index.dense.matrix), True),
            "dense, this code": (VectorStore(index.dense.chunk_ids, index.dense.matrix), True),
        }
        vectors = StaticEmbeddingProvider().embed(list(QUERIES), query=True)
        samples: dict[str, list[float]] = {name: [] for name in legs}
        agree = sum([c for c, _ in legs["sparse, baseline"][0].search(q, 10)]
                    == [c for c, _ in legs["sparse, this code"][0].search(q, 10)] for q in QUERIES)
        for _ in range(args.repeats):
            for query, vector in zip(QUERIES, vectors, strict=True):
                for name, (leg, dense) in legs.items():
                    search: Callable[[Any, int], object] = leg.search
                    started = time.perf_counter()
                    search(vector if dense else query, 30)
                    samples[name].append((time.perf_counter() - started) * 1000)
    result = {"measured_at": time.strftime("%Y-%m-%d %H:%M"), "store": str(args.store), "chunks": len(ids),
              "baseline_src": str(args.baseline_src), "queries": len(QUERIES), "repeats": args.repeats,
              "sparse_top10_ids_agree": f"{agree}/{len(QUERIES)}",
              "p50_ms": {name: round(statistics.median(values), 3) for name, values in samples.items()}}
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
