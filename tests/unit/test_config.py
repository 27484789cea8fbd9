"""AppConfig loading: defaults, precedence of config sources, validation, and the default store folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowcode.config import CACHE_DIR_ENV, AppConfig, LLMConfig, ModelConfig, default_store_dir, load_config
from knowcode.indexing.scanner import DEFAULT_MAX_FILE_BYTES


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- defaults and precedence ----------------------------------------------------------------------


def test_defaults_without_any_config_file(tmp_path: Path) -> None:
    config = load_config(tmp_path)
    assert config == AppConfig()
    assert config.max_file_bytes == DEFAULT_MAX_FILE_BYTES
    assert config.parse_workers == 0


def test_pyproject_tool_knowcode_table(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n\n[tool.knowcode]\nmax_file_bytes = 2048\n')
    assert load_config(tmp_path) == AppConfig(max_file_bytes=2048)


def test_pyproject_without_knowcode_table_gives_defaults(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n\n[tool.ruff]\nline-length = 100\n')
    assert load_config(tmp_path) == AppConfig()


def test_pyproject_ignores_other_tools_keys(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.other]\nunknown_key = 1\n[tool.knowcode]\nparse_workers = 2\n")
    assert load_config(tmp_path) == AppConfig(parse_workers=2)


def test_knowcode_toml_wins_over_pyproject(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.knowcode]\nmax_file_bytes = 1\nparse_workers = 7\n")
    write(tmp_path / "knowcode.toml", "max_file_bytes = 4096\n")
    # knowcode.toml replaces the pyproject table entirely: nothing is merged from it
    assert load_config(tmp_path) == AppConfig(max_file_bytes=4096)


def test_explicit_config_file_wins(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.knowcode]\nmax_file_bytes = 1\n")
    write(tmp_path / "knowcode.toml", "max_file_bytes = 2\n")
    explicit = write(tmp_path / "elsewhere" / "custom.toml", "max_file_bytes = 3\nparse_workers = 4\n")
    assert load_config(tmp_path, explicit) == AppConfig(max_file_bytes=3, parse_workers=4)


def test_explicit_config_file_is_read_as_a_flat_table(tmp_path: Path) -> None:
    explicit = write(tmp_path / "custom.toml", "[tool.knowcode]\nmax_file_bytes = 3\n")
    with pytest.raises(ValueError, match="tool"):
        load_config(tmp_path, explicit)


def test_empty_knowcode_toml_gives_defaults(tmp_path: Path) -> None:
    write(tmp_path / "knowcode.toml", "")
    assert load_config(tmp_path) == AppConfig()


# --- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("file_name", ["knowcode.toml", "pyproject.toml"])
def test_unknown_key_is_an_error_naming_the_key(tmp_path: Path, file_name: str) -> None:
    body = "max_file_bytes = 10\ncolour_scheme = 'dark'\n"
    write(tmp_path / file_name, "[tool.knowcode]\n" + body if file_name == "pyproject.toml" else body)
    with pytest.raises(ValueError, match="colour_scheme") as info:
        load_config(tmp_path)
    assert file_name in str(info.value)


@pytest.mark.parametrize(("line", "key"), [
    ('max_file_bytes = "big"', "max_file_bytes"),
    ("max_file_bytes = 1.5", "max_file_bytes"),
    ("parse_workers = [1, 2]", "parse_workers"),
    ("parse_workers = true", "parse_workers"),  # bool is an int subclass in Python, still rejected
    ("max_file_bytes = false", "max_file_bytes"),
])
def test_wrong_type_is_an_error(tmp_path: Path, line: str, key: str) -> None:
    write(tmp_path / "knowcode.toml", line + "\n")
    with pytest.raises(ValueError, match=key):
        load_config(tmp_path)


@pytest.mark.parametrize(("line", "value"), [("report_title_repeats = 0", 0),
                                             ("report_title_repeats = 2", 2)])
def test_report_title_repeats_is_read(tmp_path: Path, line: str, value: int) -> None:
    write(tmp_path / "knowcode.toml", line + "\n")
    assert load_config(tmp_path).report_title_repeats == value


def test_negative_report_title_repeats_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "knowcode.toml", "report_title_repeats = -1\n")
    with pytest.raises(ValueError, match="report_title_repeats must be >= 0"):
        load_config(tmp_path)


def test_invalid_toml_is_a_value_error(tmp_path: Path) -> None:
    write(tmp_path / "knowcode.toml", "max_file_bytes = = 3\n")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_config(tmp_path)


def test_invalid_pyproject_is_a_value_error(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.knowcode\n")
    with pytest.raises(ValueError, match=r"pyproject\.toml"):
        load_config(tmp_path)


def test_non_utf8_config_is_a_value_error(tmp_path: Path) -> None:
    (tmp_path / "knowcode.toml").write_bytes(b"max_file_bytes = 1 # \xff\xfe\n")
    with pytest.raises(ValueError, match="cannot read"):
        load_config(tmp_path)


def test_missing_explicit_file_is_file_not_found(tmp_path: Path) -> None:
    write(tmp_path / "knowcode.toml", "max_file_bytes = 2\n")  # not a fallback for a missing explicit file
    with pytest.raises(FileNotFoundError, match=r"nope\.toml"):
        load_config(tmp_path, tmp_path / "nope.toml")


def test_explicit_folder_is_file_not_found(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path, tmp_path / "conf")


# --- default store folder -------------------------------------------------------------------------


def test_default_store_dir_honours_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(cache))
    repo = tmp_path / "repo"
    repo.mkdir()
    store = default_store_dir(repo)
    assert store.parent == cache / "indexes"
    assert store.name.startswith("repo-")
    assert not store.exists()  # computing the folder creates nothing


def test_default_store_dir_differs_per_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    first, second = tmp_path / "a" / "repo", tmp_path / "b" / "repo"  # same folder name, other path
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    assert default_store_dir(first) != default_store_dir(second)


def test_default_store_dir_is_stable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(tmp_path)
    assert default_store_dir(repo) == default_store_dir(repo)
    assert default_store_dir(Path("repo")) == default_store_dir(repo)  # relative path, same root
    assert default_store_dir(repo / "sub" / "..") == default_store_dir(repo)


def test_default_store_dir_without_env_var_uses_user_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    store = default_store_dir(tmp_path)
    assert store.parent.name == "indexes"
    assert not store.is_relative_to(tmp_path)
    monkeypatch.setenv(CACHE_DIR_ENV, "")  # empty means unset
    assert default_store_dir(tmp_path) == store


# --- the [llm] table ------------------------------------------------------------------------------

ISSUE_MODELS = """[llm]
models = [
  { name = "qwen2.5-coder", provider = "openai", base_url = "http://127.0.0.1:11434/v1", api_key_env = "OLLAMA_API_KEY", rpm = 30, rpd = 1000 },
  { name = "gpt-4.1-mini", provider = "openai", api_key_env = "OPENAI_API_KEY" },
]
"""  # noqa: E501 - the shape the answering issue requires, verbatim


def test_llm_models_in_failover_order_with_defaults_filled_in(tmp_path: Path) -> None:
    write(tmp_path / "knowcode.toml", ISSUE_MODELS)
    models = load_config(tmp_path).llm.models
    assert models == (
        ModelConfig(name="qwen2.5-coder", provider="openai", base_url="http://127.0.0.1:11434/v1",
                    api_key_env="OLLAMA_API_KEY", rpm=30, rpd=1000),
        ModelConfig(name="gpt-4.1-mini", provider="openai", api_key_env="OPENAI_API_KEY"),
    )
    assert models[1].rpm == 0 and models[1].timeout_seconds == 60.0 and models[1].base_url == ""


def test_llm_table_in_pyproject(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", ISSUE_MODELS.replace("[llm]", "[tool.knowcode.llm]")
          + "sufficiency_threshold = 0.9\n")
    llm = load_config(tmp_path).llm
    assert [m.name for m in llm.models] == ["qwen2.5-coder", "gpt-4.1-mini"]
    assert llm.sufficiency_threshold == 0.9


def test_local_answer_task_types_are_cleared_at_load(tmp_path: Path) -> None:
    write(tmp_path / "knowcode.toml", '[llm]\nlocal_answer_task_types = ["locate", "explain"]\n')
    assert load_config(tmp_path).llm == LLMConfig()


@pytest.mark.parametrize(("body", "words"), [
    ('models = [{ name = "m", provider = "ollama" }]', ("provider", "openai, anthropic, gemini", "'ollama'")),
    ('models = [{ provider = "openai" }]', ("needs a name",)),
    ('models = [{ name = "m", rpm = -1 }]', ("rpm and rpd",)),
    ('models = [{ name = "m", rpm = "30" }]', ("llm.models[0].rpm", "int")),
    ('models = [{ name = "m", timeout_seconds = 0 }]', ("timeout_seconds",)),
    ('models = [{ name = "m", colour = "red" }]', ("llm.models[0].colour",)),
    ('models = ["gpt-4.1-mini"]', ("llm.models[0]", "table")),
    ('models = { name = "m" }', ("llm.models", "array")),
    ("sufficiency_threshold = 1.5", ("sufficiency_threshold", "between 0 and 1")),
    ("local_answer_task_types = [1]", ("local_answer_task_types[0]", "str")),
])
def test_bad_llm_settings_are_errors_naming_the_setting(tmp_path: Path, body: str,
                                                        words: tuple[str, ...]) -> None:
    write(tmp_path / "knowcode.toml", "[llm]\n" + body + "\n")
    with pytest.raises(ValueError) as info:
        load_config(tmp_path)
    assert all(word in str(info.value) for word in words), str(info.value)
    assert "knowcode.toml" in str(info.value)


def test_server_concurrency_and_recheck_settings_are_read(tmp_path: Path) -> None:
    (tmp_path / "knowcode.toml").write_text(
        "[server]\nworkers = 2\nquery_threads = 3\nrecheck_interval_seconds = 5\n", encoding="utf-8")
    server = load_config(tmp_path).server
    assert (server.workers, server.query_threads, server.recheck_interval_seconds) == (2, 3, 5.0)
    defaults = AppConfig().server
    assert (defaults.workers, defaults.query_threads, defaults.recheck_interval_seconds) == (1, 0, 2.0)


@pytest.mark.parametrize(("line", "message"), [
    ("workers = 0", "workers must be at least 1"), ("query_threads = -1", "query_threads must be >= 0"),
    ("recheck_interval_seconds = -1", "recheck_interval_seconds must be >= 0"), ("workers = 1.5", "int"),
])
def test_server_concurrency_settings_are_checked(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "knowcode.toml").write_text(f"[server]\n{line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_config(tmp_path)
