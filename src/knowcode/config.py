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
from typing import Any, TypeVar

import platformdirs

from knowcode.analysis.token_counter import DEFAULT_ENCODING
from knowcode.indexing.scanner import DEFAULT_MAX_FILE_BYTES
from knowcode.retrieval.hybrid_index import DEFAULT_HYBRID_ALPHA
from knowcode.retrieval.reranker import DEFAULT_TOP_K_MULTIPLIER, RankingSignals
from knowcode.retrieval.sparse import BM25_B, BM25_K1

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

T = TypeVar("T")
CONFIG_FILE_NAME = "knowcode.toml"
CACHE_DIR_ENV = "KNOWCODE_CACHE_DIR"  # overrides the per-user cache folder that holds the indexes


@dataclass(frozen=True)
class AppConfig:
    """Settings of one KnowCode instance; unknown keys in a config file are an error."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES  # scanner: larger files are skipped
    parse_workers: int = 0  # processes that parse files; 0 means one per CPU core
    hybrid_alpha: float = DEFAULT_HYBRID_ALPHA  # spec: Hybrid fusion — weight of the dense leg
    bm25_k1: float = BM25_K1  # sparse leg saturation
    bm25_b: float = BM25_B  # sparse leg length normalisation
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


def _typed(value: Any, default: Any, key: str, source: Path) -> Any:
    """Check one setting against its default's type; a table fills a nested settings dataclass."""
    if dataclasses.is_dataclass(default) and not isinstance(default, type):
        if not isinstance(value, dict):
            raise ValueError(f"setting {key} in {source} must be a table, not {value!r}")
        return _build(type(default), value, source, f"{key}.")
    expected = type(default)
    if isinstance(value, int) and not isinstance(value, bool) and expected is float:
        value = float(value)
    if not isinstance(value, expected) or isinstance(value, bool) != (expected is bool):
        raise ValueError(f"setting {key} in {source} must be {expected.__name__}, not {value!r}")
    return value


def _build(cls: type[T], table: dict[str, Any], source: Path, prefix: str = "") -> T:
    defaults = cls()
    names = [f.name for f in dataclasses.fields(defaults)]  # type: ignore[arg-type]
    unknown = sorted(set(table) - set(names))
    if unknown:
        raise ValueError(f"unknown setting(s) {', '.join(prefix + u for u in unknown)} in {source}; "
                         f"known: {', '.join(prefix + n for n in names)}")
    values = {key: _typed(value, getattr(defaults, key), prefix + key, source)
              for key, value in table.items()}
    return cls(**values)


def _from_table(table: dict[str, Any], source: Path) -> AppConfig:
    return _build(AppConfig, table, source)


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


def default_store_dir(root: Path) -> Path:
    """The per-user cache folder for a repository's index, keyed by its absolute path."""
    base = Path(os.environ.get(CACHE_DIR_ENV) or platformdirs.user_cache_dir("knowcode"))
    resolved = root.resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:16]
    return base / "indexes" / f"{resolved.name or 'root'}-{digest}"
