"""The index version: retrieval settings and formats change it, repository content does not."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import knowcode
from knowcode.config import AppConfig
from knowcode.evals import fingerprint, index_version, index_version_parts
from knowcode.indexing.indexer import PARSER_OUTPUT_VERSION
from knowcode.indexing.tokenizer import TOKENIZER_VERSION
from knowcode.storage.store import SCHEMA_VERSION
from tests.conftest import write_tree


def test_index_version_ignores_repository_content(sample_repo: Path, tmp_path: Path) -> None:
    engine = knowcode.open(sample_repo, store=tmp_path / "store")
    engine.ensure_indexed()
    before = index_version(engine)
    write_tree(sample_repo, {"pkg/extra.py": "def added():\n    return 2\n"})
    engine.index()
    assert index_version(engine) == before
    engine.close()


@pytest.mark.parametrize("change", [
    {"hybrid_alpha": 0.5}, {"bm25_k1": 1.5}, {"bm25_b": 0.5}, {"reranker_provider": "voyage"},
    {"reranker_model": "rerank-x"}, {"reranker_top_k_multiplier": 3}, {"embedding_provider": "none"},
])
def test_index_version_changes_with_retrieval_settings(sample_repo: Path, tmp_path: Path,
                                                       change: dict[str, Any]) -> None:
    base = knowcode.open(sample_repo, store=tmp_path / "a")
    changed = knowcode.open(sample_repo, store=tmp_path / "b",
                            config=dataclasses.replace(AppConfig(), **change))
    assert index_version(base) != index_version(changed)


def test_index_version_changes_with_a_ranking_signal(sample_repo: Path, tmp_path: Path) -> None:
    config = AppConfig()
    changed = dataclasses.replace(config, ranking=dataclasses.replace(config.ranking, docstring=1.0))
    assert (index_version(knowcode.open(sample_repo, store=tmp_path / "a", config=config))
            != index_version(knowcode.open(sample_repo, store=tmp_path / "b", config=changed)))


def test_parts_name_the_formats_and_the_embedding(sample_repo: Path, tmp_path: Path) -> None:
    engine = knowcode.open(sample_repo, store=tmp_path / "store")
    parts = index_version_parts(engine)
    assert (parts["schema_version"], parts["parser_output_version"], parts["tokenizer_version"]) == (
        SCHEMA_VERSION, PARSER_OUTPUT_VERSION, TOKENIZER_VERSION)
    assert parts["embedding"]["provider"] == "static" and parts["embedding"]["dimension"] > 0
    assert parts["token_encoding"] == "cl100k"
    assert index_version(engine) == fingerprint(parts)


def test_the_fingerprint_is_canonical() -> None:
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})
    assert len(fingerprint({})) == 64
