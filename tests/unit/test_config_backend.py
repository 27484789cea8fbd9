"""The [backend] table: defaults, a milvus backend, and the one-line errors of a bad table."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowcode.config import AppConfig, BackendConfig, load_config


def test_the_default_backend_is_the_embedded_one() -> None:
    assert AppConfig().backend == BackendConfig()
    assert BackendConfig().kind == "embedded"


def test_a_milvus_table_is_read(tmp_path: Path) -> None:
    (tmp_path / "knowcode.toml").write_text(
        '[backend]\nkind = "milvus"\nuri = "http://milvus:19530"\ncollection = "org"\n'
        'token_env = "MILVUS_TOKEN"\nrepository = "acme/api"\ntimeout_seconds = 3\ndense_index = "HNSW"\n')
    backend = load_config(tmp_path).backend
    assert (backend.kind, backend.uri, backend.collection, backend.token_env, backend.repository,
            backend.timeout_seconds, backend.dense_index) == (
        "milvus", "http://milvus:19530", "org", "MILVUS_TOKEN", "acme/api", 3.0, "HNSW")


@pytest.mark.parametrize(("table", "message"), [
    ('kind = "qdrant"', "kind must be one of embedded, milvus"),
    ('kind = "milvus"', "needs a uri"),
    ('kind = "milvus"\nuri = "x.db"\ntimeout_seconds = 0', "timeout_seconds must be positive"),
    ('kind = "milvus"\nuri = "x.db"\ndense_index = "LSH"', "dense_index must be one of"),
    ('token = "secret"', "unknown setting(s) backend.token"),
])
def test_a_bad_table_is_one_error(tmp_path: Path, table: str, message: str) -> None:
    (tmp_path / "knowcode.toml").write_text(f"[backend]\n{table}\n")
    with pytest.raises(ValueError, match=r"^.*$") as caught:
        load_config(tmp_path)
    assert message in str(caught.value) and "\n" not in str(caught.value)
