"""What a `knowcode` command imports: heavy modules stay out of the commands that do not use them.

Each case runs in a fresh interpreter (the test process has imported everything already) and reads
back its ``sys.modules``. No timing: a module that is imported is a cost, whatever the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE_REPO, write_tree

MARKER = "--- modules ---"
# Runs the CLI's main() with the given argv, then prints the modules it imported.
RUN_CLI = f"""
import json, os, sys
from knowcode.cli import main
sys.argv = ["knowcode", *sys.argv[1:]]
try:
    main()
except SystemExit as stop:
    code = stop.code
print({MARKER!r})
blas = os.environ.get("OPENBLAS_NUM_THREADS")
print(json.dumps({{"exit": code, "modules": sorted(sys.modules), "blas": blas}}))
"""

# Never needed to print the help or to answer a search: the servers, the LLM stack, model2vec (the
# static model is read directly), token counting (context budgets only) and typer's pydantic layer.
NEVER_FOR_SEARCH = ("knowcode.mcp_server", "knowcode.api", "knowcode.llm", "knowcode.evals",
                    "knowcode.analysis.context_synthesizer", "mcp", "fastapi", "uvicorn", "httpx", "openai",
                    "anthropic", "watchfiles", "model2vec", "joblib", "tiktoken", "pydantic",
                    "multiprocessing")
# Also never needed for `--help` (nor to import the CLI): the engine and everything under it.
NEVER_FOR_HELP = (*NEVER_FOR_SEARCH, "knowcode.engine", "knowcode.config", "knowcode.retrieval",
                  "knowcode.indexing", "numpy", "bm25s", "tokenizers", "tree_sitter", "pathspec")


def loaded(modules: list[str], banned: tuple[str, ...]) -> list[str]:
    """The banned packages (or any of their submodules) among the imported modules."""
    return sorted({name for name in banned for module in modules
                   if module == name or module.startswith(f"{name}.")})


def run_cli_report(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """Run the CLI in a fresh interpreter: its output, and its exit code, imported modules and BLAS
    thread setting."""
    done = subprocess.run([sys.executable, "-c", RUN_CLI, *argv], cwd=cwd, capture_output=True, text=True,
                          check=False, timeout=300, env=env)
    output, _, tail = done.stdout.rpartition(MARKER)
    assert tail, done.stderr
    report: dict[str, Any] = json.loads(tail)
    return output, report


def run_cli(*argv: str, cwd: Path) -> tuple[int, str, list[str]]:
    """Run the CLI in a fresh interpreter: its exit code, its output, the modules it imported."""
    output, report = run_cli_report(*argv, cwd=cwd)
    return report["exit"], output, report["modules"]


def test_importing_the_cli_loads_no_engine(tmp_path: Path) -> None:
    script = "import json, sys, knowcode.cli; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          check=True, timeout=300)
    modules = json.loads(done.stdout)
    assert "knowcode.cli" in modules
    assert loaded(modules, (*NEVER_FOR_HELP, "rich")) == []


@pytest.mark.parametrize("argv", [["--help"], ["search", "--help"], ["--version"]])
def test_help_loads_no_engine(tmp_path: Path, argv: list[str]) -> None:
    code, output, modules = run_cli(*argv, cwd=tmp_path)
    assert code in (0, None)
    assert "knowcode" in output
    assert loaded(modules, (*NEVER_FOR_HELP, "rich")) == []  # plain help: rich draws progress and errors only


def test_warm_search_loads_only_the_search(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", SAMPLE_REPO)
    store = ["--store", str(tmp_path / "store")]
    code, _, _ = run_cli("index", str(repo), *store, cwd=tmp_path)
    assert code in (0, None)
    code, output, modules = run_cli("search", "slugify", "--repo", str(repo), *store, cwd=tmp_path)
    assert code in (0, None)
    assert "pkg/util.py" in output  # it really searched, with both legs
    assert {"numpy", "tokenizers", "knowcode.retrieval.static_encoder"} <= set(modules)
    # rich draws progress and errors: neither shows for a search whose stderr is not a terminal; the
    # sparse leg is numpy, so bm25s (a test reference) and its tqdm and asyncio stay out; the index is
    # current, so nothing is parsed: the parser stack stays out too
    assert loaded(modules, (*NEVER_FOR_SEARCH, "rich", "bm25s", "tqdm", "asyncio", "tree_sitter",
                            "knowcode.indexing.file_parser", "knowcode.indexing.parser",
                            "knowcode.indexing.chunker")) == []
    assert [module for module in modules if module.startswith("tree_sitter_")] == []  # no grammar wheel


def test_context_loads_token_counting_but_no_server(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", SAMPLE_REPO)
    code, output, modules = run_cli("context", "how is text slugified", "--repo", str(repo), "--store",
                                    str(tmp_path / "store"), cwd=tmp_path)
    assert code in (0, None)
    assert "sufficiency: " in output
    assert {"tiktoken", "knowcode.analysis.context_synthesizer"} <= set(modules)
    assert loaded(modules, ("knowcode.mcp_server", "knowcode.api", "mcp", "fastapi", "uvicorn", "model2vec",
                            "pydantic")) == []


def test_a_missing_extra_still_names_the_install_command(tmp_path: Path) -> None:
    # `serve` imports its server stack only when it runs; hidden from it, the command says what to install.
    script = ("import sys\nsys.modules['uvicorn'] = None\n"  # None in sys.modules: the import fails
              + RUN_CLI.replace('sys.argv = ["knowcode", *sys.argv[1:]]', 'sys.argv = ["knowcode", "serve"]'))
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          check=False, timeout=300)
    assert "pip install 'knowcode[server]'" in done.stderr
    assert '"exit": 1' in done.stdout


@pytest.mark.parametrize(("preset", "expected"), [(None, "1"), ("2", "2")])
def test_the_cli_asks_blas_for_one_thread_unless_told(tmp_path: Path, preset: str | None,
                                                       expected: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    _, report = run_cli_report("--version", cwd=tmp_path, env=env)
    assert report["blas"] == expected
