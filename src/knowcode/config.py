"""AppConfig: every setting and its default in one place, read from knowcode.toml or pyproject.toml.

Precedence: an explicit ``--config FILE``, else ``knowcode.toml`` in the repository root, else the
``[tool.knowcode]`` table of its ``pyproject.toml``, else the defaults below.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from knowcode.indexing.scanner import DEFAULT_MAX_FILE_BYTES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

CONFIG_FILE_NAME = "knowcode.toml"
CACHE_DIR_ENV = "KNOWCODE_CACHE_DIR"  # overrides the per-user cache folder that holds the indexes
# Below this many files to parse, starting worker processes costs more than it saves.
PARALLEL_PARSE_MIN_FILES = 64


@dataclass(frozen=True)
class AppConfig:
    """Settings of one KnowCode instance; unknown keys in a config file are an error."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES  # scanner: larger files are skipped
    parse_workers: int = 0  # processes that parse files; 0 means one per CPU core


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


def _from_table(table: dict[str, Any], source: Path) -> AppConfig:
    names = {f.name: f for f in dataclasses.fields(AppConfig)}
    unknown = sorted(set(table) - set(names))
    if unknown:
        raise ValueError(f"unknown setting(s) {', '.join(unknown)} in {source}; known: {', '.join(names)}")
    for key, value in table.items():
        expected = type(getattr(AppConfig(), key))
        if not isinstance(value, expected) or isinstance(value, bool) != (expected is bool):
            raise ValueError(f"setting {key} in {source} must be {expected.__name__}, not {value!r}")
    return AppConfig(**table)


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
