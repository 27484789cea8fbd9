"""Chunks of many repositories in one Milvus collection (a server, a cluster, or a milvus-lite file).

One row per chunk: its text, its tokens (our tokenizer's output, space-joined), the BM25 sparse vector
Milvus derives from those tokens, the dense vector the repository's own index holds, and where it comes
from (repository, commit, path, lines, entity id, kind, content generation). A second, small collection
records each repository (its root, store folder, commit, generation, chunk count).

BM25 statistics are the engine's: a BM25 function over the tokens field, through a whitespace analyzer
(so the terms are exactly our tokenizer's), with the index's k1 and b. Milvus keeps the document
frequencies, the document count and the average length over every segment of a shard and applies them at
query time, so inserts and deletes in one repository re-weight every other repository's scores as a
from-scratch BM25 over the union would. The collection has one shard for that reason (see
docs/milvus.md: with several shards, each keeps its own statistics). Scores are bm25s' (Lucene's
variant) times (k1 + 1), a constant that changes no ranking.

pymilvus is imported lazily: it is the optional ``knowcode[milvus]`` extra.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from knowcode.errors import KnowCodeError

if TYPE_CHECKING:
    from pymilvus import MilvusClient

INSTALL_HINT = "pip install 'knowcode[milvus]'"
KEY_SEPARATOR = ":"  # primary key = repository + ":" + chunk id (chunk ids are hex, repository names free)
# VARCHAR limits of Milvus (bytes); longer values are cut at a character boundary.
MAX_TEXT_BYTES = 65_535
MAX_PATH_BYTES = 4_096
MAX_NAME_BYTES = 512
# Rows per insert request: Milvus caps one request at 64 MiB by default; 256-float vectors plus up to
# ~6 KB of text and tokens per chunk keep 1,000 rows near 8 MiB.
INSERT_BATCH = 1_000
# Rows per query page when listing a repository's chunk keys (Milvus caps offset + limit at 16,384).
QUERY_PAGE = 16_384
HEX_DIGITS = "0123456789abcdef"  # chunk ids are blake2b hex digests (indexing/entity_ids.py)
# Milvus' own BM25 index parameter defaults are these too; ours come from the config (bm25_k1, bm25_b).
SPARSE_INDEX = "SPARSE_INVERTED_INDEX"
# pymilvus pings every 10 s even without calls; the milvus-lite 2.5 server allows gRPC's default (one
# ping per 5 minutes without calls) and answers more with GOAWAY "too_many_pings", which dropped the
# connection mid-ingest (seen in benchmarks/scale.py). Milvus servers allow pymilvus' own pace.
LITE_GRPC_OPTIONS = {"grpc.keepalive_time_ms": 300_000, "grpc.keepalive_permit_without_calls": False}
# Build and search parameters of the approximate dense indexes: common starting points from Milvus'
# index documentation, not tuned here (FLAT, the default, is exact and takes none). IVF_FLAT scans
# nprobe of nlist clusters (~3%); HNSW's ef must be at least the number of hits asked for.
DENSE_INDEX_PARAMS: dict[str, dict[str, int]] = {"HNSW": {"M": 16, "efConstruction": 200},
                                                 "IVF_FLAT": {"nlist": 1024}}
IVF_NPROBE = 32
HNSW_MIN_EF = 64


def dense_search_params(index_type: str, limit: int) -> dict[str, int]:
    """The search parameters of a dense index type for `limit` hits."""
    if index_type == "HNSW":
        return {"ef": max(HNSW_MIN_EF, limit)}
    if index_type == "IVF_FLAT":
        return {"nprobe": IVF_NPROBE}
    return {}


# Loading 190k chunks from a milvus-lite file took ~15 s on 2 busy cores (benchmarks/scale.py); a
# cluster loading segments after a restart can take minutes.
LOAD_TIMEOUT_SECONDS = 600.0
# Opening a milvus-lite file starts its server process, which pymilvus waits for within the connect's
# timeout: 3.4 s on a quiet machine, 28.7 s on 2 cores at load average 9-11 (measured 2026-12-01),
# where the request timeout (10 s by default) failed every connect. A server URI keeps the request timeout.
LITE_START_TIMEOUT_SECONDS = 120.0
# milvus-lite counts its server started once the process has lived 0.5 s, but under load it opens its
# socket later, and the first request is then refused at once (pymilvus's CONNECT_FAILED, status 2)
# rather than waited for: seen in tests at load average 4-6. The connect is retried for as long as the
# slowest start measured above takes to listen.
LITE_NOT_LISTENING_CODE = 2
LITE_LISTEN_SECONDS = 30.0
LITE_LISTEN_POLL_SECONDS = 0.25
REPOS_SUFFIX = "_repos"  # the repository registry's collection: <collection>_repos
_REGISTRY_DIM = 2  # Milvus requires a vector field in every collection; the registry's is a placeholder


class BackendError(KnowCodeError):
    """The search backend could not be reached, or refused a request."""


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """One chunk's searchable form, as it is written to the backend."""

    chunk_id: str
    path: str
    start_line: int
    end_line: int
    entity_id: str
    kind: str
    text: str
    tokens: str
    vector: Sequence[float]


@dataclass(frozen=True, slots=True)
class RepositoryRecord:
    """A repository in the backend's registry."""

    name: str
    root: str
    store: str
    commit: str
    generation: int
    chunks: int
    lines: int
    updated_at: float


@dataclass(frozen=True, slots=True)
class BackendHit:
    """A chunk a leg found: where it is and its score in that leg."""

    repository: str
    chunk_id: str
    score: float
    path: str
    start_line: int
    end_line: int
    entity_id: str
    kind: str


HIT_FIELDS = ["repo", "path", "start_line", "end_line", "entity_id", "kind"]


def primary_key(repository: str, chunk_id: str) -> str:
    """The row key of a chunk: unique across repositories (two repositories may share a file)."""
    return f"{repository}{KEY_SEPARATOR}{chunk_id}"


def _cut(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, at a character boundary."""
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", errors="ignore")


def _cut_tokens(tokens: str, limit: int) -> str:
    """Space-joined tokens cut to `limit` bytes at a token boundary (a cut token would be a new term)."""
    if len(tokens.encode("utf-8")) <= limit:
        return tokens
    head = _cut(tokens, limit)
    return head[:head.rfind(" ")] if " " in head else ""


def quote(value: str) -> str:
    """A string literal for a Milvus filter expression."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def repository_filter(repositories: Sequence[str] | None) -> str:
    """A filter expression keeping the given repositories (empty: no filter)."""
    if not repositories:
        return ""
    if len(repositories) == 1:
        return f"repo == {quote(repositories[0])}"
    return f"repo in [{', '.join(quote(r) for r in repositories)}]"


def _import_pymilvus() -> Any:
    try:
        import pymilvus
    except ImportError as err:
        raise BackendError(f"the milvus backend needs pymilvus: {INSTALL_HINT}") from err
    return pymilvus


class MilvusChunkStore:
    """The chunk collection and the repository registry on one Milvus deployment."""

    def __init__(self, client: MilvusClient, collection: str, *, dimension: int, k1: float, b: float,
                 dense_index: str, timeout: float) -> None:
        self.client = client
        self.collection = collection
        self.registry = collection + REPOS_SUFFIX
        self.dimension = dimension
        self.k1 = k1
        self.b = b
        self.dense_index = dense_index
        self.timeout = timeout

    @classmethod
    def connect(cls, uri: str, collection: str, *, token: str = "", dimension: int, k1: float, b: float,
                dense_index: str = "FLAT", timeout: float = 10.0) -> MilvusChunkStore:
        """Connect and create the collections when they are missing.

        :param uri: a Milvus server (``http://host:19530``) or a milvus-lite file path.
        :param collection: the chunk collection's name.
        :param token: ``user:password`` or an API key; empty for none.
        :param dimension: the dense vectors' length.
        :param k1: BM25 k1 (fixed when the collection is created).
        :param b: BM25 b (fixed when the collection is created).
        :param dense_index: the dense field's index type.
        :param timeout: seconds per request.
        :return: the store.
        :raises BackendError: pymilvus is missing, the server cannot be reached, or the collection
            exists with another dimension or other BM25 parameters.
        """
        pymilvus = _import_pymilvus()
        local = "://" not in uri  # a milvus-lite file
        start = max(timeout, LITE_START_TIMEOUT_SECONDS) if local else timeout
        retry_until = time.monotonic() + LITE_LISTEN_SECONDS
        while True:
            try:
                client = pymilvus.MilvusClient(uri=uri, token=token, timeout=start,
                                               grpc_options=LITE_GRPC_OPTIONS if local else {})
                break
            except Exception as err:
                refused = getattr(err, "code", None) == LITE_NOT_LISTENING_CODE
                if local and refused and time.monotonic() < retry_until:
                    time.sleep(LITE_LISTEN_POLL_SECONDS)
                    continue
                hint = (" (a milvus-lite file is opened by one process at a time: is another one using it? "
                        "Several processes need a Milvus server)") if local else ""
                raise BackendError(f"cannot reach Milvus at {uri}: {_reason(err)}{hint}") from err
        store = cls(client, collection, dimension=dimension, k1=k1, b=b, dense_index=dense_index,
                    timeout=timeout)
        store._guard("prepare the collections", store._ensure_collections)
        # A collection is searched once loaded; loading a large one (reopening a milvus-lite file, a
        # cluster after a restart) takes longer than one query may: do it here, with its own limit.
        store._guard("load the collection", client.load_collection, collection, timeout=LOAD_TIMEOUT_SECONDS)
        return store

    def close(self) -> None:
        """Close the connection."""
        self.client.close()

    def _guard(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a client call; any failure becomes one BackendError line naming what was being done."""
        try:
            return call(*args, **kwargs)
        except BackendError:
            raise
        except Exception as err:
            raise BackendError(f"Milvus could not {what} ({self.collection}): {_reason(err)}") from err

    def _ensure_collections(self) -> None:
        pymilvus = _import_pymilvus()
        data_type, function, function_type = pymilvus.DataType, pymilvus.Function, pymilvus.FunctionType
        if self.client.has_collection(self.collection, timeout=self.timeout):
            self._check_existing()
        else:
            schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
            schema.add_field("pk", data_type.VARCHAR, is_primary=True, max_length=MAX_NAME_BYTES)
            schema.add_field("repo", data_type.VARCHAR, max_length=MAX_NAME_BYTES)
            schema.add_field("commit", data_type.VARCHAR, max_length=64)
            schema.add_field("path", data_type.VARCHAR, max_length=MAX_PATH_BYTES)
            schema.add_field("start_line", data_type.INT64)
            schema.add_field("end_line", data_type.INT64)
            schema.add_field("entity_id", data_type.VARCHAR, max_length=MAX_NAME_BYTES)
            schema.add_field("kind", data_type.VARCHAR, max_length=64)
            schema.add_field("generation", data_type.INT64)
            schema.add_field("text", data_type.VARCHAR, max_length=MAX_TEXT_BYTES)
            schema.add_field("tokens", data_type.VARCHAR, max_length=MAX_TEXT_BYTES, enable_analyzer=True,
                             analyzer_params={"tokenizer": "whitespace"})
            schema.add_field("sparse", data_type.SPARSE_FLOAT_VECTOR)
            schema.add_field("dense", data_type.FLOAT_VECTOR, dim=self.dimension)
            schema.add_function(function(name="bm25", function_type=function_type.BM25,
                                         input_field_names=["tokens"], output_field_names=["sparse"]))
            index = self.client.prepare_index_params()
            index.add_index("sparse", index_type=SPARSE_INDEX, metric_type="BM25",
                            params={"bm25_k1": self.k1, "bm25_b": self.b})
            index.add_index("dense", index_type=self.dense_index, metric_type="IP",
                            params=DENSE_INDEX_PARAMS.get(self.dense_index, {}))
            index.add_index("repo", index_type="INVERTED")
            # One shard: BM25 statistics are kept per shard, and must be global (module docstring).
            self.client.create_collection(self.collection, schema=schema, index_params=index,
                                          num_shards=1, timeout=self.timeout)
        if not self.client.has_collection(self.registry, timeout=self.timeout):
            schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
            schema.add_field("name", data_type.VARCHAR, is_primary=True, max_length=MAX_NAME_BYTES)
            for name in ("root", "store"):
                schema.add_field(name, data_type.VARCHAR, max_length=MAX_PATH_BYTES)
            schema.add_field("commit", data_type.VARCHAR, max_length=64)
            for name in ("generation", "chunks", "lines"):
                schema.add_field(name, data_type.INT64)
            schema.add_field("updated_at", data_type.DOUBLE)
            schema.add_field("placeholder", data_type.FLOAT_VECTOR, dim=_REGISTRY_DIM)
            index = self.client.prepare_index_params()
            index.add_index("placeholder", index_type="FLAT", metric_type="L2")
            self.client.create_collection(self.registry, schema=schema, index_params=index,
                                          timeout=self.timeout)

    def _check_existing(self) -> None:
        """Refuse a collection made for other vectors or other BM25 parameters: mixing would be silent."""
        described = self.client.describe_collection(self.collection, timeout=self.timeout)
        dims = [f.get("params", {}).get("dim") for f in described.get("fields", [])
                if f.get("name") == "dense"]
        if dims and int(dims[0]) != self.dimension:
            raise BackendError(f"collection {self.collection} holds {dims[0]}-dimension vectors, the "
                               f"embedding model gives {self.dimension}: use another [backend] collection")
        params = self.client.describe_index(self.collection, "sparse", timeout=self.timeout)
        recorded = (float(params.get("bm25_k1", self.k1)), float(params.get("bm25_b", self.b)))
        if recorded != (self.k1, self.b):
            raise BackendError(f"collection {self.collection} scores BM25 with k1={recorded[0]} "
                               f"b={recorded[1]}, the config says k1={self.k1} b={self.b}: use another "
                               "[backend] collection")

    # --- writing -----------------------------------------------------------------------------------

    def chunk_ids(self, repository: str) -> set[str]:
        """The chunk ids a repository has in the collection.

        :raises BackendError: Milvus failed.
        """
        prefix = len(repository) + len(KEY_SEPARATOR)
        return {pk[prefix:] for pk in self._guard("list chunk keys", self._keys, repository)}

    def _keys(self, repository: str, prefix: str = "") -> Iterator[str]:
        """A repository's keys, one query per page. Chunk ids are hex hashes: a page that comes back
        full is split by the next hex digit (no query iterator: milvus-lite cannot give it a timestamp,
        and pymilvus then logs a warning on every sync)."""
        expression = repository_filter([repository])
        if prefix:
            expression += f" and pk like {quote(primary_key(repository, prefix) + '%')}"
        rows = self.client.query(self.collection, filter=expression, output_fields=["pk"], limit=QUERY_PAGE,
                                 timeout=self.timeout)
        if len(rows) < QUERY_PAGE:
            yield from (row["pk"] for row in rows)
            return
        for digit in HEX_DIGITS:
            yield from self._keys(repository, prefix + digit)

    def insert(self, repository: str, commit: str, generation: int, rows: Iterable[ChunkRow]) -> int:
        """Insert chunks of one repository (ids it does not hold yet: see chunk_ids).

        :return: rows written.
        :raises BackendError: Milvus failed.
        """
        written = 0
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append({"pk": primary_key(repository, row.chunk_id), "repo": repository,
                          "commit": _cut(commit, 64), "path": _cut(row.path, MAX_PATH_BYTES),
                          "start_line": row.start_line, "end_line": row.end_line,
                          "entity_id": _cut(row.entity_id, MAX_NAME_BYTES), "kind": _cut(row.kind, 64),
                          "generation": generation, "text": _cut(row.text, MAX_TEXT_BYTES),
                          "tokens": _cut_tokens(row.tokens, MAX_TEXT_BYTES), "dense": list(row.vector)})
            if len(batch) >= INSERT_BATCH:
                written += self._write(batch)
                batch = []
        if batch:
            written += self._write(batch)
        return written

    def _write(self, batch: list[dict[str, Any]]) -> int:
        # insert, not upsert (which deletes first: ~2x slower): callers write only ids the repository
        # lacks, so a run interrupted after some batches writes the rest next time.
        self._guard("write chunks", self.client.insert, self.collection, batch, timeout=self.timeout)
        return len(batch)

    def delete(self, repository: str, chunk_ids: Iterable[str]) -> int:
        """Delete chunks of one repository by id.

        :return: ids asked to delete.
        :raises BackendError: Milvus failed.
        """
        keys = [primary_key(repository, c) for c in chunk_ids]
        for start in range(0, len(keys), INSERT_BATCH):
            self._guard("delete chunks", self.client.delete, self.collection,
                        ids=keys[start:start + INSERT_BATCH], timeout=self.timeout)
        return len(keys)

    def drop_repository(self, repository: str) -> None:
        """Delete every chunk of a repository and its registry entry.

        :raises BackendError: Milvus failed.
        """
        self._guard("delete a repository", self.client.delete, self.collection,
                    filter=repository_filter([repository]), timeout=self.timeout)
        self._guard("delete a repository", self.client.delete, self.registry, ids=[repository],
                    timeout=self.timeout)

    def record(self, entry: RepositoryRecord) -> None:
        """Write a repository's registry entry.

        :raises BackendError: Milvus failed.
        """
        row = {"name": entry.name, "root": _cut(entry.root, MAX_PATH_BYTES),
               "store": _cut(entry.store, MAX_PATH_BYTES), "commit": _cut(entry.commit, 64),
               "generation": entry.generation, "chunks": entry.chunks, "lines": entry.lines,
               "updated_at": entry.updated_at, "placeholder": [0.0] * _REGISTRY_DIM}
        self._guard("record a repository", self.client.upsert, self.registry, [row], timeout=self.timeout)

    def repositories(self) -> dict[str, RepositoryRecord]:
        """Every repository in the registry, by name.

        :raises BackendError: Milvus failed.
        """
        rows = self._guard("read the repository registry", self.client.query, self.registry,
                           filter='name != ""', output_fields=["*"], limit=QUERY_PAGE, timeout=self.timeout)
        return {row["name"]: RepositoryRecord(row["name"], row["root"], row["store"], row["commit"],
                                              int(row["generation"]), int(row["chunks"]), int(row["lines"]),
                                              float(row["updated_at"])) for row in rows}

    def flush(self) -> None:
        """Seal what was written, so it is persisted (milvus-lite) and searchable from every client."""
        self._guard("flush", self.client.flush, self.collection, timeout=self.timeout)

    def count(self, repositories: Sequence[str] | None = None) -> int:
        """Rows in the collection (or of some repositories).

        :raises BackendError: Milvus failed.
        """
        rows = self._guard("count rows", self.client.query, self.collection,
                           filter=repository_filter(repositories), output_fields=["count(*)"],
                           timeout=self.timeout)
        return int(rows[0]["count(*)"])

    # --- searching ---------------------------------------------------------------------------------

    def search_sparse(self, tokens: Sequence[str], limit: int,
                      repositories: Sequence[str] | None = None) -> list[BackendHit]:
        """BM25 over the collection (global statistics), best first; zero scores are not returned.

        :param tokens: the query through our tokenizer.
        :param limit: hits wanted.
        :param repositories: keep only these repositories (None: all).
        :raises BackendError: Milvus failed or timed out.
        """
        if not tokens or limit <= 0:
            return []
        result = self._guard("search the sparse leg", self.client.search, self.collection,
                             data=[" ".join(tokens)], anns_field="sparse", limit=limit,
                             filter=repository_filter(repositories), output_fields=HIT_FIELDS,
                             search_params={"metric_type": "BM25"}, timeout=self.timeout)
        return _hits(result[0])

    def search_dense(self, vector: Sequence[float], limit: int,
                     repositories: Sequence[str] | None = None) -> list[BackendHit]:
        """Nearest chunks by inner product, best first.

        :raises BackendError: Milvus failed or timed out.
        """
        if limit <= 0:
            return []
        result = self._guard("search the dense leg", self.client.search, self.collection,
                             data=[list(vector)], anns_field="dense", limit=limit,
                             filter=repository_filter(repositories), output_fields=HIT_FIELDS,
                             search_params={"metric_type": "IP",
                                            "params": dense_search_params(self.dense_index, limit)},
                             timeout=self.timeout)
        return _hits(result[0])


def _hits(rows: Iterable[Any]) -> list[BackendHit]:
    hits = []
    for row in rows:
        entity = row["entity"]
        repository = entity["repo"]
        chunk_id = str(row["id"])[len(repository) + len(KEY_SEPARATOR):]
        hits.append(BackendHit(repository, chunk_id, float(row["distance"]), entity["path"],
                               int(entity["start_line"]), int(entity["end_line"]), entity["entity_id"],
                               entity["kind"]))
    # Milvus orders ties arbitrarily; the embedded legs break them by row. Order by score, then key.
    hits.sort(key=lambda h: (-h.score, h.repository, h.chunk_id))
    return hits


def _reason(err: Exception) -> str:
    """The first line of an error's message (pymilvus errors carry code and message, gRPC ones a status
    code and details)."""
    details, code = getattr(err, "details", None), getattr(err, "code", None)
    if callable(details) and callable(code):
        return f"{getattr(code(), 'name', code())}: {details()}"
    message = getattr(err, "message", None) or str(err) or type(err).__name__
    return str(message).strip().splitlines()[0] if str(message).strip() else type(err).__name__


def now() -> float:
    """Wall-clock time for registry entries."""
    return time.time()
