"""Dense-leg variants side by side: what text is embedded and which static model embeds it.

Every repo of the file-level benchmark (``bench/annotations/``) is parsed once; then, per variant, its
vectors are rebuilt (timed) and both sets run through two engines over the same index: dense only
(``hybrid_alpha = 1.0``) and the default hybrid. The span-level questions (``bench/questions/``) are
scored on the repos they cover. A variant is a text builder (chunk -> embedded text) and a model2vec
folder (None: the shipped model).

    python benchmarks/dense_variants.py --corpus /work/corpus --store-root /tmp/dv
    python benchmarks/dense_variants.py --corpus /work/corpus --variants head160 sigdoc-ids \\
        --model mpnet=/tmp/models/mpnet-256

The question set is also the set the variants were chosen on: read its numbers as tuning numbers.
Results: benchmarks/results/dense_variants.md (table and findings) and .json (per-query scores).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import knowcode
from knowcode import AppConfig
from knowcode.evals.scoring import Query, ScoredQuery, load_annotations, score_query, summarize
from knowcode.retrieval import search_index
from knowcode.retrieval.embeddings import StaticEmbeddingProvider
from knowcode.retrieval.search_index import DENSE_TEXT_CHARS
from knowcode.storage.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quality import find_bench_dir, load_repos, open_repo, run_method

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SPAN_REPOS = ("flask", "click", "httpx", "starlette", "express", "zod")

_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# Keywords and names of most languages that say nothing about what a chunk does.
_NOISE = frozenset({
    "self", "cls", "this", "def", "return", "if", "else", "elif", "for", "while", "in", "is", "not", "and",
    "or", "none", "true", "false", "null", "undefined", "import", "from", "as", "with", "try", "except",
    "finally", "raise", "class", "function", "const", "let", "var", "new", "async", "await", "yield",
    "pass", "lambda", "export", "default", "public", "private", "protected", "static", "void", "int",
    "str", "bool", "string", "number", "any", "of", "the", "to", "a", "an",
})
DOC_CHARS = 300  # the docstring's first paragraph, at most this long
IDENT_WORDS = 48  # distinct identifier words kept from a chunk's body


def _first_paragraph(doc: str) -> str:
    para = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0] if doc.strip() else ""
    return " ".join(para.split())[:DOC_CHARS]


def _words(text: str, seen: set[str], limit: int) -> list[str]:
    out: list[str] = []
    for ident in _IDENT.findall(text):
        for part in _PARTS.findall(ident) or [ident]:
            word = part.lower()
            if len(word) < 2 or word in _NOISE or word in seen:
                continue
            seen.add(word)
            out.append(word)
            if len(out) >= limit:
                return out
    return out


@dataclass(frozen=True)
class ChunkRow:
    """What a text builder sees of one chunk and its entity."""

    path: str
    index_text: str
    text: str
    kind: str
    qualified_name: str
    signature: str
    docstring: str


def head160(row: ChunkRow) -> str:
    """The shipped text: the first 160 characters of the index text."""
    return row.index_text[:160]


def sigdoc(row: ChunkRow) -> str:
    """Path, qualified name, signature and the docstring's first paragraph (head when no signature)."""
    if not row.signature:
        return row.index_text[:160]
    return "\n".join(p for p in (row.path, row.qualified_name, row.signature,
                                 _first_paragraph(row.docstring)) if p)


def _ids(row: ChunkRow, base: str, limit: int = IDENT_WORDS) -> str:
    seen = set(_words(base, set(), 10_000))
    return " ".join(_words(row.text, seen, limit))


def sigdoc_ids(row: ChunkRow) -> str:
    """sigdoc plus the chunk body's identifier words, split and deduplicated."""
    base = sigdoc(row)
    return f"{base}\n{_ids(row, base)}"


def head_doc_ids(row: ChunkRow) -> str:
    """The shipped head plus the docstring's first paragraph and the body's identifier words."""
    base = row.index_text[:160]
    doc = _first_paragraph(row.docstring)
    if doc and doc[:40] not in base:
        base = f"{base}\n{doc}"
    return f"{base}\n{_ids(row, base)}"


def head_doc(row: ChunkRow) -> str:
    """The shipped head plus the docstring's first paragraph."""
    base = row.index_text[:160]
    doc = _first_paragraph(row.docstring)
    return f"{base}\n{doc}" if doc and doc[:40] not in base else base


def head_ids(row: ChunkRow) -> str:
    """The shipped head plus up to 24 identifier words of the body."""
    base = row.index_text[:160]
    return f"{base}\n{_ids(row, base, 24)}"


TEXTS: dict[str, Callable[[ChunkRow], str]] = {
    "head160": head160, "sigdoc": sigdoc, "sigdoc-ids": sigdoc_ids, "head-doc": head_doc,
    "head-ids": head_ids, "head-doc-ids": head_doc_ids,
}


def dense_texts(store: Store, builder: Callable[[ChunkRow], str]) -> dict[str, str]:
    """What `builder` makes of each chunk of the store, by chunk id."""
    rows = store.connection.execute(
        "SELECT c.id, c.path, c.index_text, c.text, e.kind, e.qualified_name, e.signature, e.docstring "
        "FROM chunks c LEFT JOIN entities e ON e.id = c.entity_id").fetchall()
    return {r[0]: builder(ChunkRow(r[1], r[2], r[3], r[4] or "", r[5] or "", r[6] or "", r[7] or ""))
            for r in rows}


_EMBED = search_index._embed  # the real one, whatever is patched in later
WHOLE_TEXT = 1 << 30  # DENSE_TEXT_CHARS while a variant embeds: its texts are embedded whole


def embedding(texts: dict[str, str]) -> Callable[..., Any]:
    """`search_index._embed` embedding `texts` (by chunk id) instead of the heads the rows carry."""
    def embed(provider: Any, rows: Any, reused: dict[str, Any], progress: Any) -> Any:
        heads = [texts.get(cid, head) for cid, head in zip(rows.ids, rows.heads, strict=True)]
        return _EMBED(provider, replace(rows, heads=heads), reused, progress)
    return embed


@dataclass
class Variant:
    """One row of the table: a text builder and a model folder (None: the shipped model)."""

    name: str
    text: str
    model: Path | None


def _score(kc: knowcode.KnowCode, queries: Sequence[Query]) -> list[ScoredQuery]:
    return [score_query(q, run_method(kc, q.text, "x", 10, {"x": lambda k, t, n: k.search(t, limit=n)}))
            for q in queries]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--bench", type=Path)
    parser.add_argument("--store-root", type=Path, default=Path("/tmp/dense-variants"))
    parser.add_argument("--only", nargs="+")
    parser.add_argument("--variants", nargs="+", default=["head160"],
                        help="TEXT or TEXT@MODEL (MODEL a name given with --model)")
    parser.add_argument("--model", action="append", default=[], help="NAME=FOLDER of a model2vec model")
    parser.add_argument("--alphas", nargs="*", type=float, default=[],
                        help="further hybrid_alpha values to score (0.0: the sparse leg alone)")
    parser.add_argument("--out", type=Path, default=RESULTS / "dense_variants.json")
    args = parser.parse_args(argv)
    models = {name: Path(folder) for name, folder in (m.split("=", 1) for m in args.model)}
    variants = []
    for spec in args.variants:
        text, _, model = spec.partition("@")
        variants.append(Variant(spec, text, models[model] if model else None))
    bench = find_bench_dir(args.bench)
    repos = load_repos(bench, args.corpus, args.only)
    questions_dir = bench / "questions"
    load_seconds: dict[str, float] = {}
    for v in variants:
        started = time.perf_counter()
        StaticEmbeddingProvider(v.model).embed(["warm up"])
        load_seconds[v.name] = round(time.perf_counter() - started, 3)
    # results[variant][set][mode] -> {repo: [ScoredQuery]}
    results: dict[str, dict[str, dict[str, dict[str, list[ScoredQuery]]]]] = {
        v.name: {s: {m: {} for m in ("dense", "hybrid", *map(str, args.alphas))} for s in ("file", "span")}
        for v in variants}
    index_seconds: dict[str, float] = {v.name: 0.0 for v in variants}
    embed_seconds: dict[str, float] = {v.name: 0.0 for v in variants}
    chars: dict[str, list[int]] = {v.name: [] for v in variants}
    for repo in repos:
        search_index._embed = _EMBED
        search_index.DENSE_TEXT_CHARS = DENSE_TEXT_CHARS
        base = open_repo(repo, args.store_root)
        base.index()
        span_path = questions_dir / f"{repo.name}.json"
        span = load_annotations(span_path) if repo.name in SPAN_REPOS and span_path.is_file() else []
        for k, v in enumerate(variants):
            started = time.perf_counter()
            store = base.open_store()
            try:
                by_id = dense_texts(store, TEXTS[v.text])
            finally:
                store.close()
            texts_seconds = time.perf_counter() - started
            search_index._embed = embedding(by_id)
            search_index.DENSE_TEXT_CHARS = WHOLE_TEXT + k  # a distinct recorded value per variant
            config = replace(AppConfig(), embedding_model=str(v.model) if v.model else "")
            hybrid = knowcode.open(base.root, store=base.store_dir, config=config)
            dense = knowcode.open(base.root, store=base.store_dir, config=replace(config, hybrid_alpha=1.0))
            extra = [(str(a), knowcode.open(base.root, store=base.store_dir,
                                            config=replace(config, hybrid_alpha=a))) for a in args.alphas]
            provider = hybrid.embedder()
            assert provider is not None
            provider.embed(["warm up"])
            started = time.perf_counter()
            hybrid.index(rebuild_vectors=True)
            index_seconds[v.name] += time.perf_counter() - started + texts_seconds
            texts = list(by_id.values())
            started = time.perf_counter()
            provider.embed(texts)
            embed_seconds[v.name] += time.perf_counter() - started
            chars[v.name].extend(len(t) for t in texts)
            for set_name, queries in (("file", repo.queries), ("span", span)):
                if not queries:
                    continue
                for mode, kc in (("dense", dense), ("hybrid", hybrid), *extra):
                    results[v.name][set_name][mode][repo.name] = _score(kc, queries)
            r = results[v.name]
            print(f"[{repo.name}] {v.name}: file dense {_m(r['file']['dense'], repo.name)} hybrid "
                  f"{_m(r['file']['hybrid'], repo.name)}; span dense {_m(r['span']['dense'], repo.name)} "
                  f"hybrid {_m(r['span']['hybrid'], repo.name)}", file=sys.stderr, flush=True)
    search_index._embed = _EMBED
    search_index.DENSE_TEXT_CHARS = DENSE_TEXT_CHARS
    table: dict[str, Any] = {}
    for v in variants:
        r = results[v.name]
        table[v.name] = {
            "text": v.text, "model": str(v.model) if v.model else "shipped",
            "dense_span": summarize(r["span"]["dense"]).overall,
            "dense_file": summarize(r["file"]["dense"]).overall,
            "hybrid_span": summarize(r["span"]["hybrid"]).overall,
            "hybrid_file": summarize(r["file"]["hybrid"]).overall,
            "hybrid_span_categories": summarize(r["span"]["hybrid"]).categories,
            "hybrid_file_categories": summarize(r["file"]["hybrid"]).categories,
            "hybrid_file_repos": summarize(r["file"]["hybrid"]).repos,
            "hybrid_span_repos": summarize(r["span"]["hybrid"]).repos,
            "alphas": {a: {"span": summarize(r["span"][a]).overall, "file": summarize(r["file"][a]).overall}
                       for a in map(str, args.alphas)},
            "index_seconds": round(index_seconds[v.name], 2),
            "embed_seconds": round(embed_seconds[v.name], 2),
            "mean_chars": round(statistics.fmean(chars[v.name]), 1) if chars[v.name] else None,
            "model_load_seconds": load_seconds[v.name],
        }
    first = variants[0].name
    keys = [(set_name, mode) for set_name in ("span", "file") for mode in ("dense", "hybrid")]
    for name, t in table.items():  # paired differences against the first variant, same queries
        mine = results[name]
        t["vs_first"] = {f"{mode}_{s}": _paired(results[first][s][mode], mine[s][mode]) for s, mode in keys}
        t["per_query"] = {f"{mode}_{s}": [round(q.ndcg, 4) for repo in sorted(mine[s][mode])
                                          for q in mine[s][mode][repo]] for s, mode in keys}
    print("| variant | dense Q | dense F | hybrid Q | hybrid F | index s | embed s | chars | load s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, t in table.items():
        print(f"| {name} | {t['dense_span']:.3f} | {t['dense_file']:.3f} | {t['hybrid_span']:.3f} | "
              f"{t['hybrid_file']:.3f} | {t['index_seconds']:.1f} | {t['embed_seconds']:.1f} | "
              f"{t['mean_chars']} | {t['model_load_seconds']} |"
              + "".join(f" alpha {a}: Q {x['span']:.3f} F {x['file']:.3f};" for a, x in t["alphas"].items()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"measured_at": time.strftime("%Y-%m-%d %H:%M"), "variants": table},
                                   indent=1) + "\n", encoding="utf-8")


def _paired(a: dict[str, list[ScoredQuery]], b: dict[str, list[ScoredQuery]]) -> dict[str, float]:
    """Mean and standard error of b - a over the same queries, and how many went up and down."""
    diffs = [y.ndcg - x.ndcg for repo in sorted(a) for x, y in zip(a[repo], b[repo], strict=True)]
    if len(diffs) < 2:
        return {}
    return {"mean": round(statistics.fmean(diffs), 4),
            "stderr": round(statistics.stdev(diffs) / len(diffs) ** 0.5, 4),
            "up": sum(d > 1e-9 for d in diffs), "down": sum(d < -1e-9 for d in diffs)}


def _m(per_repo: dict[str, list[ScoredQuery]], repo: str) -> str:
    scored = per_repo.get(repo)
    return f"{statistics.fmean(q.ndcg for q in scored):.3f}" if scored else "-"


if __name__ == "__main__":
    main()
