"""AppConfig: every setting and its default in one place, read from knowcode.toml or pyproject.toml.

Precedence: an explicit ``--config FILE``, else ``knowcode.toml`` in the repository root, else the
``[tool.knowcode]`` table of its ``pyproject.toml``, else the defaults below.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, get_args, get_type_hints

import platformdirs

from knowcode.analysis.token_counter import DEFAULT_ENCODING
from knowcode.indexing.scanner import DEFAULT_MAX_FILE_BYTES
from knowcode.retrieval.hybrid_index import DEFAULT_HYBRID_ALPHA
from knowcode.retrieval.relevance_feedback import DEFAULT_FEEDBACK_WEIGHT
from knowcode.retrieval.report_query import TITLE_REPEATS
from knowcode.retrieval.reranker import DEFAULT_TOP_K_MULTIPLIER, RankingSignals
from knowcode.retrieval.sparse import BM25_B, BM25_K1
from knowcode.safety import split_host
from knowcode.storage.lock import DEFAULT_LOCK_TIMEOUT_SECONDS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

T = TypeVar("T")
CONFIG_FILE_NAME = "knowcode.toml"
CACHE_DIR_ENV = "KNOWCODE_CACHE_DIR"  # overrides the per-user cache folder that holds the indexes
PROVIDER_KINDS = ("openai", "anthropic", "gemini")  # [llm] models: the protocols the LLM leg speaks
# spec: Local-vs-LLM routing -- a bundle answers locally only at or above max(threshold, floor). The knee
# measured by benchmarks/answer_routing.py (284 public-benchmark queries): at 0.8 the first sufficient
# bundle holds the annotated code for 94.9% of the 89% of queries it takes, as often as the largest bundle
# does (95.1%); bars of 0.5-0.7 accept one-entity bundles and fall to 82-88%.
DEFAULT_SUFFICIENCY_THRESHOLD = 0.8
# spec: routing_quality_floor -- the evaluated quality (bundle recall) a task type needs for local answers;
# 0.8 is the bundle-recall goal of the synthesis issue.
DEFAULT_ROUTING_QUALITY_FLOOR = 0.8


@dataclass(frozen=True)
class ModelConfig:
    """One model the LLM leg may call, in failover order (an entry of ``[llm] models``)."""

    name: str = ""  # the model name the server knows (e.g. "qwen2.5-coder", "gpt-4.1-mini")
    provider: str = "openai"  # openai (any OpenAI-compatible server), anthropic or gemini
    base_url: str = ""  # the API root; empty = the provider's public API
    api_key_env: str = ""  # the environment variable holding the key; empty = send no key (local servers)
    rpm: int = 0  # client-side requests per minute; 0 = no limit
    rpd: int = 0  # client-side requests per rolling day; 0 = no limit
    timeout_seconds: float = 60.0  # one request; on expiry the next model is tried
    max_output_tokens: int = 1024  # the answer's length cap, sent with every request

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError("an [llm] model needs a name")
        if self.provider not in PROVIDER_KINDS:
            raise ValueError(f"model {self.name!r}: provider must be one of {', '.join(PROVIDER_KINDS)}, "
                             f"not {self.provider!r}")
        if self.rpm < 0 or self.rpd < 0:
            raise ValueError(f"model {self.name!r}: rpm and rpd must be >= 0 (0 = no limit)")
        if self.timeout_seconds <= 0 or self.max_output_tokens < 1:
            raise ValueError(f"model {self.name!r}: timeout_seconds and max_output_tokens must be positive")


@dataclass(frozen=True)
class LLMConfig:
    """The ``[llm]`` table: answering locally or through models (spec: Local-vs-LLM routing)."""

    models: tuple[ModelConfig, ...] = ()  # tried in order; the next one on 429, quota, timeout or error
    sufficiency_threshold: float = DEFAULT_SUFFICIENCY_THRESHOLD
    routing_quality_floor: float = DEFAULT_ROUTING_QUALITY_FLOOR
    # spec: force-cleared at config load; only a verified routing artifact (knowcode eval) repopulates it
    local_answer_task_types: tuple[str, ...] = ()
    routing_artifact: str = ""  # the file `knowcode eval --out` wrote; relative to the repository root
    routing_artifact_sha256: str = ""  # its SHA-256 as `knowcode eval` printed it; pins it against edits
    telemetry: bool = True  # one JSON line per `ask` in the index folder; never sent anywhere

    def __post_init__(self) -> None:
        for name in ("sufficiency_threshold", "routing_quality_floor"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"[llm] {name} must be between 0 and 1, not {getattr(self, name)}")


@dataclass(frozen=True)
class ServerConfig:
    """The ``[server]`` table: the hosts `knowcode serve` answers for besides this machine's own names,
    and how the servers answer queries side by side and notice changes."""

    # Host names (or name:port) the HTTP API answers for besides localhost, the loopback addresses and
    # the address a request arrived at, e.g. a LAN name or a reverse proxy's public name. A name
    # without a port is allowed on any port; Origins with these hosts may make requests too.
    allowed_hosts: tuple[str, ...] = ()
    # `knowcode serve`: processes answering requests (each with its own read-only facades). One keeps
    # the footprint of a local tool; benchmarks/serve_load.py measures what more buy (README: HTTP load).
    workers: int = 1
    # Queries each server process answers at once, on read-only facades of their own (`serve` and
    # `mcp`); 0 = one per core, at least two (readers.auto_readers).
    query_threads: int = 0
    # `knowcode mcp` without --watch when no file watcher can run (watchfiles missing, the OS watch
    # limit reached): the tree is walked for changes at most this often, so a call costs its query,
    # not a walk (389 ms per call on 5k files, issue 12); changes are seen at most this late.
    recheck_interval_seconds: float = 2.0

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"[server] workers must be at least 1, not {self.workers}")
        if self.query_threads < 0:
            raise ValueError(f"[server] query_threads must be >= 0 (0: one per core), "
                             f"not {self.query_threads}")
        if self.recheck_interval_seconds < 0:
            raise ValueError("[server] recheck_interval_seconds must be >= 0 (0: walk the tree on every "
                             f"call), not {self.recheck_interval_seconds}")
        for entry in self.allowed_hosts:
            if split_host(entry) is None:
                raise ValueError(f"[server] allowed_hosts: {entry!r} is not a host name or address with an "
                                 "optional port (e.g. 'devbox.lan' or 'devbox.lan:8000'; no scheme or path)")


BACKEND_KINDS = ("embedded", "milvus")  # [backend] kind: where the chunks' searchable form lives
# A Milvus call that takes longer fails the leg (the embedded index answers instead): a warm query on a
# loaded collection answers in milliseconds, a cold one (collection being loaded) in seconds.
DEFAULT_BACKEND_TIMEOUT_SECONDS = 10.0
DENSE_INDEX_KINDS = ("FLAT", "HNSW", "IVF_FLAT", "AUTOINDEX")  # [backend] dense_index: Milvus index types


@dataclass(frozen=True)
class BackendConfig:
    """The ``[backend]`` table: the search backend the chunks' searchable form is also written to."""

    kind: str = "embedded"  # embedded (the per-repository BM25 + vector files, the default) or milvus
    uri: str = ""  # milvus: a server ("http://milvus.internal:19530") or a milvus-lite file ("/data/kc.db")
    collection: str = "knowcode_chunks"  # milvus: the collection every repository's chunks go to
    token_env: str = ""  # milvus: the environment variable holding the token ("user:password" or a key)
    repository: str = ""  # this repository's name in the backend; empty = the folder's name
    timeout_seconds: float = DEFAULT_BACKEND_TIMEOUT_SECONDS  # milvus: one request; then it fails
    dense_index: str = "FLAT"  # milvus: FLAT is exact (the embedded ranking); HNSW for large clusters

    def __post_init__(self) -> None:
        if self.kind not in BACKEND_KINDS:
            raise ValueError(f"[backend] kind must be one of {', '.join(BACKEND_KINDS)}, not {self.kind!r}")
        if self.kind == "milvus" and not self.uri.strip():
            raise ValueError("[backend] kind = \"milvus\" needs a uri (a server URL or a milvus-lite file "
                             "path)")
        if self.timeout_seconds <= 0:
            raise ValueError(f"[backend] timeout_seconds must be positive, not {self.timeout_seconds}")
        if self.dense_index not in DENSE_INDEX_KINDS:
            raise ValueError(f"[backend] dense_index must be one of {', '.join(DENSE_INDEX_KINDS)}, "
                             f"not {self.dense_index!r}")


@dataclass(frozen=True)
class AppConfig:
    """Settings of one KnowCode instance; unknown keys in a config file are an error."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES  # scanner: larger files are skipped
    # processes that parse files; 0: one per CPU core once a run's files reach indexer.PARALLEL_MIN_BYTES,
    # else none (the indexing process parses them itself)
    parse_workers: int = 0
    # how long an indexing run waits for another run on the same store to finish before it gives up
    index_lock_timeout_seconds: float = DEFAULT_LOCK_TIMEOUT_SECONDS
    hybrid_alpha: float = DEFAULT_HYBRID_ALPHA  # spec: Hybrid fusion — weight of the dense leg
    bm25_k1: float = BM25_K1  # sparse leg saturation
    bm25_b: float = BM25_B  # sparse leg length normalisation
    # long questions: the weight of the terms pseudo-relevance feedback adds to the sparse leg's query,
    # as a share of the question's (retrieval/relevance_feedback.py); 0 switches it off
    query_feedback: float = DEFAULT_FEEDBACK_WEIGHT
    # issue reports: further copies of the title line in the sparse leg's query (retrieval/report_query.py);
    # 0 switches it off
    report_title_repeats: int = TITLE_REPEATS
    reranker_top_k_multiplier: int = DEFAULT_TOP_K_MULTIPLIER  # spec: Reranking — limit x 5 reranked
    embedding_provider: str = "static"  # static (shipped model2vec), openai, voyage, or none
    embedding_model: str = ""  # remote providers: the model name (voyage default: voyage-code-3)
    embedding_base_url: str = ""  # remote providers: the API root
    embedding_api_key_env: str = ""  # remote providers: the environment variable holding the key
    embedding_dimension: int = 0  # remote providers: vector size; 0 = learn it from the first reply
    reranker_provider: str = "none"  # spec: Reranking — none (signal scoring only) or voyage (cross-encoder)
    reranker_model: str = ""  # voyage: the rerank model; empty = rerank-2.5
    reranker_base_url: str = ""  # voyage: the API root; empty = https://api.voyageai.com/v1
    reranker_api_key_env: str = ""  # voyage: the environment variable holding the key; empty = VOYAGE_API_KEY
    ranking: RankingSignals = field(default_factory=RankingSignals)  # [ranking] table: signal factors
    token_encoding: str = DEFAULT_ENCODING  # context budgets are counted in this encoding (offline cl100k)
    llm: LLMConfig = field(default_factory=LLMConfig)  # [llm] table: answering and its models
    server: ServerConfig = field(default_factory=ServerConfig)  # [server] table: `knowcode serve`
    backend: BackendConfig = field(default_factory=BackendConfig)  # [backend] table: embedded or milvus

    def __post_init__(self) -> None:
        timeout = self.index_lock_timeout_seconds
        if timeout < 0:
            raise ValueError(f"index_lock_timeout_seconds must be >= 0 (0: do not wait), not {timeout}")
        if self.report_title_repeats < 0:
            raise ValueError(f"report_title_repeats must be >= 0 (0: off), not {self.report_title_repeats}")


def _read_table(path: Path, table: tuple[str, ...]) -> dict[str, Any]:
    try:
        data: Any = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read config file {path}: {err}") from err
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"config file {path} is not valid TOML: {err}") from err
    for key in table:
        data = data.get(key, {}) if isinstance(data, dict) else {}
    return data if isinstance(data, dict) else {}


def _typed(value: Any, default: Any, key: str, source: Path, hint: Any) -> Any:
    """Check one setting against its field: a table fills a nested settings dataclass, an array a tuple
    of checked items, anything else must have the type of the field's default."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise ValueError(f"setting {key} in {source} must be a table, not {value!r}")
        return _build(hint, value, source, f"{key}.")
    if isinstance(default, tuple):
        if not isinstance(value, list):
            raise ValueError(f"setting {key} in {source} must be an array, not {value!r}")
        item_type = get_args(hint)[0]
        return tuple(_typed(item, None, f"{key}[{i}]", source, item_type) for i, item in enumerate(value))
    expected = hint if default is None else type(default)
    if isinstance(value, int) and not isinstance(value, bool) and expected is float:
        value = float(value)
    if not isinstance(value, expected) or isinstance(value, bool) != (expected is bool):
        raise ValueError(f"setting {key} in {source} must be {expected.__name__}, not {value!r}")
    return value


def _default(spec: dataclasses.Field[Any]) -> Any:
    return spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default


def _build(cls: type[T], table: dict[str, Any], source: Path, prefix: str = "") -> T:
    fields = {spec.name: spec for spec in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(table) - set(fields))
    if unknown:
        raise ValueError(f"unknown setting(s) {', '.join(prefix + u for u in unknown)} in {source}; "
                         f"known: {', '.join(prefix + n for n in fields)}")
    hints = get_type_hints(cls)
    values = {key: _typed(value, _default(fields[key]), prefix + key, source, hints[key])
              for key, value in table.items()}
    try:
        return cls(**values)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from err


def _from_table(table: dict[str, Any], source: Path) -> AppConfig:
    config = _build(AppConfig, table, source)
    # spec: local_answer_task_types is force-cleared at config load -- a hand-written list never enables
    # local answers; llm/routing_policy.py repopulates it from a verified evaluation artifact only.
    return dataclasses.replace(config, llm=dataclasses.replace(config.llm, local_answer_task_types=()))


def load_config(root: Path, config_file: Path | None = None) -> AppConfig:
    """Read the configuration for a repository.

    :param root: the repository root, searched for knowcode.toml and pyproject.toml.
    :param config_file: an explicit config file; wins over anything in the root.
    :return: the configuration, defaults filled in.
    :raises FileNotFoundError: the explicit config file does not exist.
    :raises ValueError: a config file is unreadable, not TOML, or has unknown or mistyped keys.
    """
    if config_file is not None:
        if not config_file.is_file():
            raise FileNotFoundError(f"config file not found: {config_file}")
        return _from_table(_read_table(config_file, ()), config_file)
    if (root / CONFIG_FILE_NAME).is_file():
        return _from_table(_read_table(root / CONFIG_FILE_NAME, ()), root / CONFIG_FILE_NAME)
    if (root / "pyproject.toml").is_file():
        return _from_table(_read_table(root / "pyproject.toml", ("tool", "knowcode")),
                           root / "pyproject.toml")
    return AppConfig()


def cache_dir() -> Path:
    """The per-user cache folder (``KNOWCODE_CACHE_DIR`` overrides it)."""
    return Path(os.environ.get(CACHE_DIR_ENV) or platformdirs.user_cache_dir("knowcode"))


def default_store_dir(root: Path) -> Path:
    """The per-user cache folder for a repository's index, keyed by its absolute path."""
    resolved = root.resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:16]
    return cache_dir() / "indexes" / f"{resolved.name or 'root'}-{digest}"


def rate_limit_path() -> Path:
    """The LLM request log shared by every repository and process: rate limits belong to an API account."""
    return cache_dir() / "llm-requests.sqlite"
