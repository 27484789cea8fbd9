"""The derived search indexes (BM25 and vectors) of one store generation: update, swap, load.

Each update writes a new folder ``search-<generation>-<nonce>/`` next to ``index.db``, then records
its name in the store's meta table in one transaction, then deletes older folders. A reader reads
the name from the meta table first, so it always loads a complete folder; a run that dies midway
leaves a stray folder that the next update deletes.

A folder is a list of segments (:mod:`knowcode.retrieval.segments`). An update costs what changed:
the new folder hard-links the previous segments, marks the rows of chunks that are gone and adds one
segment for the chunks that are new (only those are tokenized, counted and embedded); BM25 statistics
are collection-wide at query time, so the scores are those of an index built from scratch.
"""

from __future__ import annotations

import json
import secrets
import shutil
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from knowcode.errors import EmbeddingError, StoreError
from knowcode.indexing.indexer import CONTENT_GENERATION_KEY, EXTRACTION_VERSION_KEY
from knowcode.progress import Phase, ProgressCallback, no_progress
from knowcode.retrieval.embeddings import (
    EmbeddingProvider,
    EmbeddingProviderName,
    EmbeddingSpec,
    check_compatible,
)
from knowcode.retrieval.segments import (
    DEFAULT_POLICY,
    Manifest,
    MergePolicy,
    Segment,
    SegmentEntry,
    link_segment,
    load_generation,
    read_ids,
    read_vectors,
)
from knowcode.retrieval.sparse import Postings, SparseIndex
from knowcode.storage.store import Store
from knowcode.storage.vector_store import VectorStore

SEARCH_DIR_KEY = "search_dir"  # meta key: the folder holding the current search indexes
SEARCH_GENERATION_KEY = "search_generation"  # meta key: the content generation they were built from
SEARCH_PARAMS_KEY = "search_params"  # meta key: BM25 k1 and b, the embedded text length, the tokens' version
_SEARCH_PREFIX = "search-"
_LEGACY_DENSE = "dense"  # where a folder written before segments kept its vectors
_EMBEDDING_FILE = "embedding.json"
EMBED_BATCH = 1024  # chunks per provider call: bounds memory, amortises per-call overhead
_ID_BATCH = 500  # keeps `IN (...)` lists under SQLite's host-parameter limit
_TOKEN_BATCH = 1024  # chunks' tokens fetched from the store at a time while BM25 counts them
LOAD_ATTEMPTS = 3  # a reader re-reads the meta table when an update replaced the folder it was opening
# The dense leg embeds the head of each chunk's index text: its path, qualified name and first line or
# two (usually the signature). It then says *what and where* a chunk is, which BM25 over the whole
# text does not, and tokenizing (most of the embedding cost) gets ~4x cheaper. Measured on the public
# benchmark (hybrid NDCG@10 by head length): 100 -> 0.864, 160 -> 0.866, 200 -> 0.857, 256 -> 0.855,
# 400 -> 0.851, whole chunks -> 0.851.
DENSE_TEXT_CHARS = 160


@dataclass
class SearchIndex:
    """The loaded indexes of one generation; `dense` is None when vectors are off."""

    generation: int
    sparse: SparseIndex
    dense: VectorStore | None
    embedding: EmbeddingSpec | None


@dataclass(frozen=True)
class _Rows:
    """Chunks as the search indexes read them from the store, sorted by id: their ids, the heads of
    their index texts (what the dense leg embeds) and their tokens (a stream, read once by BM25)."""

    ids: list[str]
    heads: list[str]
    tokens: Iterable[str]


def _current_dir(store: Store, store_dir: Path) -> Path | None:
    name = store.meta().get(SEARCH_DIR_KEY)
    return store_dir / name if name else None


def _read_embedding(folder: Path) -> EmbeddingSpec | None:
    path = folder / _EMBEDDING_FILE
    return EmbeddingSpec(**json.loads(path.read_text())) if path.is_file() else None


def _all_rows(store: Store) -> _Rows:
    """Every chunk; the tokens are read from the store as BM25 counts them, so memory never holds
    every chunk's tokens (nor more of a text than its head) at once."""
    # substr counts characters, as Python's slicing does, so a head is text[:DENSE_TEXT_CHARS]
    rows = store.connection.execute("SELECT id, substr(index_text, 1, ?) FROM chunks ORDER BY id",
                                    (DENSE_TEXT_CHARS,)).fetchall()
    return _Rows([r[0] for r in rows], [r[1] for r in rows], _stream_tokens(store))


def _stream_tokens(store: Store) -> Iterator[str]:
    # in id order, as _all_rows reads the ids: the writer lock keeps the table still in between
    cursor = store.connection.execute("SELECT tokens FROM chunks ORDER BY id")
    while batch := cursor.fetchmany(_TOKEN_BATCH):  # fetchmany: one Python call a batch, not a row
        yield from (row[0] for row in batch)


def _rows_of(store: Store, chunk_ids: Sequence[str]) -> _Rows:
    found: dict[str, tuple[str, str]] = {}
    for start in range(0, len(chunk_ids), _ID_BATCH):
        batch = chunk_ids[start:start + _ID_BATCH]
        marks = ",".join("?" * len(batch))
        for cid, tokens, head in store.connection.execute(
                f"SELECT id, tokens, substr(index_text, 1, ?) FROM chunks WHERE id IN ({marks})",
                [DENSE_TEXT_CHARS, *batch]):
            found[cid] = (tokens, head)
    ids = sorted(found)
    return _Rows(ids, [found[c][1] for c in ids], [found[c][0] for c in ids])


def _embed(provider: EmbeddingProvider, rows: _Rows, reused: dict[str, np.ndarray],
           progress: ProgressCallback) -> VectorStore:
    """The vectors of `rows`: reused where known, embedded (the head of the text) where not."""
    # Rows are written into the matrix as they come: a dict of every vector and then a copy of it
    # held twice the vectors at the peak.
    matrix = np.zeros((len(rows.ids), provider.dimension), dtype=np.float32)
    missing: list[tuple[int, str]] = []
    for row, (cid, head) in enumerate(zip(rows.ids, rows.heads, strict=True)):
        known = reused.get(cid)
        if known is None:
            missing.append((row, head))
        else:
            matrix[row] = known
    if missing:
        progress(Phase.EMBED, 0, len(missing))
    for start in range(0, len(missing), EMBED_BATCH):
        batch = missing[start:start + EMBED_BATCH]
        embedded = provider.embed([head[:DENSE_TEXT_CHARS] for _, head in batch])
        if embedded.shape != (len(batch), matrix.shape[1]):  # numpy would broadcast one row over all
            raise EmbeddingError(f"the embedding provider returned {embedded.shape[0]} vectors of "
                                 f"{embedded.shape[-1]} dimensions for {len(batch)} texts, expected "
                                 f"{matrix.shape[1]} dimensions")
        matrix[[row for row, _ in batch]] = embedded
        progress(Phase.EMBED, start + len(batch), len(missing))
    return VectorStore(rows.ids, matrix)


def _build_segment(rows: _Rows, embedder: EmbeddingProvider | None, reused: dict[str, np.ndarray],
                   progress: ProgressCallback) -> Segment:
    """A new segment of `rows`; embedding (model load, Rust tokenizer) overlaps the BM25 count (numpy)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="knowcode-embed") as pool:
        vectors: Future[VectorStore] | None = (pool.submit(_embed, embedder, rows, reused, progress)
                                               if embedder is not None else None)
        postings = Postings.build(rows.tokens)
        return Segment(rows.ids, postings, vectors.result() if vectors is not None else None)


def _previous_vectors(previous: Path | None, manifest: Manifest | None, wanted: EmbeddingSpec | None,
                      chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """Vectors of the previous folder for a full build to reuse; nothing when it has none.

    :raises EmbeddingMismatchError: they come from another model, unless both are the shipped static
        model's (a release that ships a new one re-embeds every index it opens: locally, in seconds).
    """
    if previous is None or wanted is None or not previous.is_dir():
        return {}
    recorded = _read_embedding(previous)
    static = EmbeddingProviderName.STATIC.value
    if recorded is None or (recorded != wanted and recorded.provider == wanted.provider == static):
        return {}
    check_compatible(recorded, wanted)
    if manifest is not None and manifest.dense:
        stores = [read_vectors(previous, entry, read_ids(previous, entry)) for entry in manifest.segments]
        found: dict[str, np.ndarray] = {}
        for store in stores:
            found.update(store.vectors_for(chunk_ids))
        return found
    if (previous / _LEGACY_DENSE).is_dir():
        return VectorStore.load(previous / _LEGACY_DENSE).vectors_for(chunk_ids)
    return {}


@dataclass(frozen=True)
class _Plan:
    """What an update writes: the kept segments (with their new tombstones) and the one it adds."""

    kept: tuple[SegmentEntry, ...]
    added: Segment | None


def _incremental(store: Store, previous: Path, manifest: Manifest, embedder: EmbeddingProvider | None,
                 policy: MergePolicy, progress: ProgressCallback) -> _Plan | None:
    """The update that brings the previous segments up to date; None when a full build is due."""
    if not manifest.segments:
        return None
    # fetchall: iterating the store's cursor costs a Python call per row (~10 ms on 15k chunks)
    current = {row[0] for row in store.connection.execute("SELECT id FROM chunks").fetchall()}
    entries: list[SegmentEntry] = []
    live: list[list[str]] = []
    for entry in manifest.segments:
        ids = read_ids(previous, entry)
        deleted = set(entry.deleted)
        deleted.update(row for row, cid in enumerate(ids) if row not in deleted and cid not in current)
        entries.append(SegmentEntry(entry.name, entry.rows, tuple(sorted(deleted))))
        live.append([cid for row, cid in enumerate(ids) if row not in deleted])
    indexed = {cid for ids in live for cid in ids}
    added = sorted(current - indexed)
    main, deltas = entries[0], entries[1:]
    changed_rows = sum(e.rows for e in deltas) + len(added) + sum(len(e.deleted) for e in entries)
    if changed_rows > policy.rebuild_fraction * main.rows:
        return None
    if not added:
        return _Plan(tuple(entries), None)
    reused: dict[str, np.ndarray] = {}
    if len(deltas) + 1 > policy.max_deltas:  # fold the deltas and the new chunks into one delta
        added = sorted({*added, *(cid for ids in live[1:] for cid in ids)})
        if manifest.dense:
            for entry, ids in zip(manifest.segments[1:], live[1:], strict=True):
                reused.update(read_vectors(previous, entry, read_ids(previous, entry)).vectors_for(ids))
        entries = [main]
    return _Plan(tuple(entries), _build_segment(_rows_of(store, added), embedder, reused, progress))


def update_search_index(store: Store, store_dir: Path, *, embedder: EmbeddingProvider | None,
                        k1: float, b: float, rebuild_vectors: bool = False,
                        progress: ProgressCallback = no_progress,
                        policy: MergePolicy = DEFAULT_POLICY) -> bool:
    """Bring the search indexes up to date with the store, at the cost of what changed.

    :param store: the open, up-to-date store.
    :param store_dir: the store folder, where the search folders live.
    :param embedder: the dense provider, or None for BM25 only.
    :param k1: BM25 k1.
    :param b: BM25 b.
    :param rebuild_vectors: embed every chunk again (after a model change).
    :param progress: told of the search index update and of the chunks embedded (from the embedding thread).
    :param policy: when to append a segment, merge the deltas or build everything again.
    :return: True when a new generation was recorded.
    :raises EmbeddingMismatchError: the previous vectors come from another model and
        `rebuild_vectors` is not set.
    """
    meta = store.meta()
    generation = meta.get(CONTENT_GENERATION_KEY, "0")
    previous = _current_dir(store, store_dir)
    if previous is not None and not previous.is_dir():
        previous = None
    wanted = EmbeddingSpec.of(embedder) if embedder is not None else None
    # Tokens and vectors are only valid for the text and settings they came from: a change of k1, b,
    # the embedded text length or the extraction (parser, chunker, tokenizer) builds everything again.
    params = json.dumps({"k1": k1, "b": b, "dense_text_chars": DENSE_TEXT_CHARS,
                         "extraction_version": meta.get(EXTRACTION_VERSION_KEY, "")})
    manifest = Manifest.load(previous) if previous is not None else None  # None: written before segments
    same_setup = (previous is not None and manifest is not None and meta.get(SEARCH_PARAMS_KEY) == params
                  and _read_embedding(previous) == wanted and not rebuild_vectors)
    if same_setup and meta.get(SEARCH_GENERATION_KEY) == generation:
        return False
    progress(Phase.SEARCH_INDEX, 0, None)
    plan = (_incremental(store, previous, manifest, embedder, policy, progress)
            if same_setup and previous is not None and manifest is not None else None)
    if (plan is not None and previous is not None and manifest is not None and plan.added is None
            and plan.kept == manifest.segments):
        folder = previous  # no chunk changed (only the graph did): the folder stays current
    else:
        if plan is None:
            rows = _all_rows(store)
            # a vector is only valid for the text it embedded: a new text length embeds everything again
            recorded = json.loads(meta.get(SEARCH_PARAMS_KEY) or "{}")
            reuse = recorded.get("dense_text_chars") == DENSE_TEXT_CHARS and not rebuild_vectors
            reused = _previous_vectors(previous, manifest, wanted, rows.ids) if reuse else {}
            plan = _Plan((), _build_segment(rows, embedder, reused, progress) if rows.ids else None)
        folder = _write(store_dir, generation, previous, plan, k1=k1, b=b, embedder=embedder)
    with store.transaction():
        store.set_meta({SEARCH_DIR_KEY: folder.name, SEARCH_GENERATION_KEY: generation,
                        SEARCH_PARAMS_KEY: params})
    for stray in store_dir.glob(f"{_SEARCH_PREFIX}*"):
        if stray != folder and stray.is_dir():
            shutil.rmtree(stray, ignore_errors=True)
    live = sum(e.rows - len(e.deleted) for e in plan.kept) + (len(plan.added.chunk_ids) if plan.added else 0)
    progress(Phase.SEARCH_INDEX, live, live)
    return True


def _write(store_dir: Path, generation: str, previous: Path | None, plan: _Plan, *, k1: float, b: float,
           embedder: EmbeddingProvider | None) -> Path:
    """Write a new generation folder: links to the kept segments, the added one, the manifest."""
    folder = store_dir / f"{_SEARCH_PREFIX}{generation}-{secrets.token_hex(4)}"
    folder.mkdir(parents=True)
    for entry in plan.kept:
        assert previous is not None
        link_segment(previous, folder, entry)
    entries = list(plan.kept)
    if plan.added is not None:
        entries.append(plan.added.save(folder, main=not entries))
    if embedder is not None:
        (folder / _EMBEDDING_FILE).write_text(json.dumps(asdict(EmbeddingSpec.of(embedder))))
    Manifest(tuple(entries), k1, b, embedder is not None).save(folder)
    return folder


def load_search_index(store: Store, store_dir: Path) -> SearchIndex:
    """Load the current search indexes (postings memory-mapped, vectors in memory).

    :raises StoreError: no search index has been built yet.
    """
    for _ in range(LOAD_ATTEMPTS):
        meta = store.meta()
        name = meta.get(SEARCH_DIR_KEY)
        folder = store_dir / name if name else None
        if folder is None or not folder.is_dir():
            break
        try:
            manifest = Manifest.load(folder)
            if manifest is None:
                break
            sparse, dense = load_generation(folder, manifest)
            embedding = _read_embedding(folder)
        except FileNotFoundError:
            continue  # an update swapped the folder out while this read it: read the new one
        return SearchIndex(int(meta.get(SEARCH_GENERATION_KEY, "0")), sparse, dense, embedding)
    raise StoreError(f"no search index in {store_dir}: run `knowcode index` first")
