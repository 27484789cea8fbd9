"""The `knowcode` command line: parse arguments, call the facade, render the result.

Only typer and the few names the help text shows are imported up front; each command imports the
engine, the renderer and rich when it runs. `--help` then costs the interpreter and typer, and
`knowcode search` what the search needs (tests/unit/test_cli_imports.py names what stays out).

No ``from __future__ import annotations`` here: typer reads every command's annotations on every
run, and string annotations cost it a ``typing.get_type_hints`` evaluation of each (~7 ms a command).
"""

import os
import signal
import sys
from collections.abc import Iterator, MutableMapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import cache
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from knowcode import __version__, render
from knowcode.analysis.call_graph import MAX_DEPTH
from knowcode.errors import KnowCodeError
from knowcode.models import AnswerRoute, TaskType, Verbosity
from knowcode.progress import ProgressCallback, no_progress

if TYPE_CHECKING:
    from rich.console import Console

    from knowcode.engine import KnowCode

EXIT_BAD_INPUT = 2  # a missing path, a bad option or config: the caller can fix the call
EXIT_FAILURE = 1  # KnowCode could not do the job (store unreadable, newer schema, ...)
EXIT_INTERRUPTED = 130  # stopped by Ctrl-C (SIGINT): 128 + the signal number, as shells report it
EXIT_TERMINATED = 143  # stopped by SIGTERM (128 + 15) before the work was done

# `knowcode mcp --port`: the value of mcp_server.DEFAULT_HTTP_PORT (a test keeps them equal), which
# cannot be read here without importing the engine for every command's help.
MCP_DEFAULT_HTTP_PORT = 8765

# Plain help and usage errors (click's own formatting), not rich's panels: rendering them imported and
# drew rich, ~0.15 s of `knowcode --help` (0.09 s now, 0.25 s before on the same machine).
app = typer.Typer(help="KnowCode: index a repository and ask it for code, context and answers.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None)


@cache
def _stderr() -> "Console":
    """The console for errors and progress (rich is imported only when one is shown)."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True)  # never break a path across lines

RepoOption = Annotated[Path, typer.Option("--repo", help="Repository folder.", show_default="current folder")]
StoreOption = Annotated[Path | None, typer.Option("--store", help="Index folder (default: per-user cache).")]
ConfigOption = Annotated[Path | None, typer.Option("--config", help="Config file (default: knowcode.toml).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C: `finally` blocks run (the open transaction rolls back, parser workers
    stop), and a server that caught the signal and shut down gracefully returns normally (uvicorn.run
    absorbs the KeyboardInterrupt it re-raises)."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"knowcode {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Options of `knowcode` itself, before the command."""


def _fail(message: str, code: int) -> typer.Exit:
    from rich.markup import escape

    _stderr().print(f"[bold red]error:[/] {escape(message)}", highlight=False)  # "knowcode[mcp]" is no markup
    return typer.Exit(code)


@contextmanager
def _errors() -> Iterator[None]:
    """Map errors to a one-line message and an exit code instead of a traceback."""
    try:
        yield
    except (FileNotFoundError, NotADirectoryError, ValueError) as err:
        raise _fail(str(err), EXIT_BAD_INPUT) from None
    except KnowCodeError as err:
        raise _fail(str(err), EXIT_FAILURE) from None
    except KeyboardInterrupt as interrupt:
        terminated = isinstance(interrupt, Terminated)
        _stderr().print(f"{'terminated (SIGTERM)' if terminated else 'interrupted'}: stopped; the index is "
                        "as the last complete run left it", highlight=False)
        raise typer.Exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED) from None


# The query argument that stands for standard input: an issue report or a traceback is many lines, which
# a shell argument takes badly (`pbpaste | knowcode search -`, `knowcode context - < report.txt`).
STDIN_QUERY = "-"


def _query_text(query: str) -> str:
    """The query as given, or standard input's text for STDIN_QUERY (undecodable bytes replaced, as a
    pasted log may hold some); a terminal is told how to end it."""
    if query != STDIN_QUERY:
        return query
    if sys.stdin.isatty():
        _stderr().print("reading the query from the terminal; end it with Ctrl-D", highlight=False)
    return sys.stdin.buffer.read().decode("utf-8", "replace")


def _open(repo: Path, store: Path | None, config: Path | None,
          progress: ProgressCallback = no_progress) -> "KnowCode":
    from knowcode.engine import KnowCode

    return KnowCode.from_path(repo, store=store, config=config, progress=progress)


def _progress() -> AbstractContextManager[ProgressCallback]:
    """Progress rows on stderr for the command's long work (none off a terminal); use with `with`."""
    isatty = getattr(sys.stderr, "isatty", None)
    if not (callable(isatty) and isatty()):  # never drawn off a terminal (terminal_progress.draws_on)
        return nullcontext(no_progress)
    from knowcode.terminal_progress import TerminalProgress

    return TerminalProgress(_stderr())


@app.command()
def index(
    path: Annotated[Path | None, typer.Argument(help="Repository folder (same as --repo).")] = None,
    repo: RepoOption = Path("."),
    store: StoreOption = None,
    config: ConfigOption = None,
    rebuild_vectors: Annotated[bool, typer.Option(
        "--rebuild-vectors", help="Embed every chunk again (after changing the embedding model).")] = False,
    json: JsonOption = False,
) -> None:
    """Index a repository, or bring its index up to date (only changed files are parsed)."""
    with _errors(), _progress() as progress:
        report = _open(path or repo, store, config, progress).index(rebuild_vectors=rebuild_vectors)
    typer.echo(render.index_report_json(report) if json else render.index_report_text(report))


@app.command()
def stats(
    path: Annotated[Path | None, typer.Argument(help="Repository folder (same as --repo).")] = None,
    repo: RepoOption = Path("."),
    store: StoreOption = None,
    config: ConfigOption = None,
    json: JsonOption = False,
) -> None:
    """Show what the index holds: files, languages, entities, relationships, chunks."""
    with _errors(), _progress() as progress:
        result = _open(path or repo, store, config, progress).stats()
    typer.echo(render.to_json(result) if json else render.stats_text(result))


@app.command()
def search(
    query: Annotated[str, typer.Argument(
        help='Words, an identifier, or a "quoted exact name"; - reads it from stdin (an issue report).')],
    repo: RepoOption = Path(),
    limit: Annotated[int, typer.Option("--limit", "-k", help="Hits wanted (1-1000).")] = 10,
    store: StoreOption = None,
    config: ConfigOption = None,
    json: JsonOption = False,
    all_repos: Annotated[bool, typer.Option(
        "--all-repos",
        help="Search every repository of the shared [backend] (kind = \"milvus\").")] = False,
    repo_filter: Annotated[list[str] | None, typer.Option(
        "--repo-filter", help="Search only this repository of the shared [backend] (repeatable).")] = None,
) -> None:
    """Ranked code for a query: path:lines, entity and a short snippet per hit."""
    with _errors():
        query = _query_text(query)
    if all_repos or repo_filter:
        with _errors(), _progress() as progress:
            across = _open(repo, store, config, progress).search_repositories(query, limit, repo_filter)
        typer.echo(render.to_json(render.cross_repo_data(across)) if json else render.cross_repo_text(across))
        return
    with _errors(), _progress() as progress:
        results = _open(repo, store, config, progress).search(query, limit=limit)
    typer.echo(render.search_json(query, results) if json else render.search_text(results))


_TASK_CHOICES = ", ".join(["auto", *(t.value for t in TaskType)])
_VERBOSITY_CHOICES = ", ".join(v.value for v in Verbosity)


@app.command()
def context(
    query: Annotated[str, typer.Argument(
        help='The question, words, an identifier or a "quoted name"; - reads it from stdin.')],
    repo: RepoOption = Path(),
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Token budget (50-200000).")] = 6000,
    limit: Annotated[int, typer.Option("--limit", "-k", help="Ranked entities wanted (1-1000).")] = 3,
    task: Annotated[str, typer.Option("--task", help=f"Task type: {_TASK_CHOICES}.")] = "auto",
    verbosity: Annotated[str, typer.Option("--verbosity", help=f"{_VERBOSITY_CHOICES}.")] = "minimal",
    store: StoreOption = None,
    config: ConfigOption = None,
    json: JsonOption = False,
) -> None:
    """A token-budgeted context bundle for a query: Markdown (or JSON) ready for an agent's prompt."""
    with _errors():
        query = _query_text(query)
    with _errors(), _progress() as progress:
        bundle = _open(repo, store, config, progress).context(
            query, max_tokens=max_tokens, limit_entities=limit, task_type=task, verbosity=verbosity)
    level = bundle.verbosity
    typer.echo(render.context_json(bundle, level) if json else render.context_markdown(bundle, level))


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question about the code; - reads it from stdin.")],
    repo: RepoOption = Path(),
    task: Annotated[str, typer.Option("--task", help=f"Task type: {_TASK_CHOICES}.")] = "auto",
    store: StoreOption = None,
    config: ConfigOption = None,
    json: JsonOption = False,
) -> None:
    """Answer a question: locally from the index when verified and sufficient, else through the models
    configured in the llm table, in order (exit 1 when nothing answered; the code found is still printed)."""
    with _errors():
        question = _query_text(question)
    with _errors(), _progress() as progress:
        answer = _open(repo, store, config, progress).ask(question, task_type=task)
    typer.echo(render.to_json(render.answer_data(answer)) if json else render.answer_text(answer))
    if answer.route is AnswerRoute.NONE:
        raise typer.Exit(EXIT_FAILURE)


TargetArgument = Annotated[str, typer.Argument(
    help="An entity id, a qualified name (pkg.mod.Class.method), a unique name, or path[:line].")]
_DEPTH_HELP = f"Relationships to follow from the target (1-{MAX_DEPTH})."


@app.command()
def trace(
    target: TargetArgument,
    repo: RepoOption = Path(),
    direction: Annotated[str, typer.Option("--direction", help="callers, callees or both.")] = "both",
    depth: Annotated[int, typer.Option("--depth", help=_DEPTH_HELP)] = 2,
    store: StoreOption = None,
    config: ConfigOption = None,
    json: JsonOption = False,
) -> None:
    """The call graph around an entity: who calls it and what it calls, a few calls deep."""
    with _errors(), _progress() as progress:
        result = _open(repo, store, config, progress).trace_calls(target, direction=direction, depth=depth)
    typer.echo(render.to_json(result) if json else render.trace_text(result))


@app.command()
def impact(
    target: TargetArgument,
    repo: RepoOption = Path(),
    depth: Annotated[int, typer.Option("--depth", help=_DEPTH_HELP)] = 3,
    store: StoreOption = None,
    config: ConfigOption = None,
    json: JsonOption = False,
) -> None:
    """What a change to an entity can affect: callers, subclasses and importers, and theirs."""
    with _errors(), _progress() as progress:
        result = _open(repo, store, config, progress).impact(target, depth=depth)
    typer.echo(render.to_json(result) if json else render.impact_text(result))


@app.command("eval")
def eval_(
    repo: RepoOption = Path(),
    query_set: Annotated[Path | None, typer.Option(
        "--set", help="Annotated queries: a JSON list of {query, category, relevant, secondary}.",
        show_default="knowcode-eval.json in the repository")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="The routing artifact to write.",
        show_default=".knowcode/routing-eval.json in the repository")] = None,
    store: StoreOption = None,
    config: ConfigOption = None,
    json: JsonOption = False,
) -> None:
    """Measure local answers per task type on annotated queries; write the routing artifact to pin."""
    from knowcode.evals import (  # the LLM stack it loads (agent, providers) only this command needs
        DEFAULT_ARTIFACT_PATH,
        DEFAULT_QUERY_SET,
        MIN_ELIGIBLE_QUERIES,
        artifact_data,
        pin_lines,
        repo_relative,
        write_routing_artifact,
    )

    with _errors(), _progress() as progress:
        engine = _open(repo, store, config, progress)
        default_set = engine.root / DEFAULT_QUERY_SET
        if query_set is None and not default_set.is_file():
            raise FileNotFoundError(f"no query set: pass --set FILE or create {default_set}"
                                    " (a JSON list of {query, category, relevant, secondary}, the public "
                                    "benchmark's annotation format)")
        report = engine.evaluate(query_set or default_set)  # indexes first when needed
        path = out or engine.root / DEFAULT_ARTIFACT_PATH
        try:
            sha256 = write_routing_artifact(report, path)
        except OSError as err:
            raise _fail(f"cannot write the routing artifact {path}: {err.strerror or err}",
                        EXIT_BAD_INPUT) from None
    pinned = repo_relative(path, engine.root)
    if json:
        outcomes = [{"query": o.query, "task_type": o.task_type.value, "local_rung": o.local_rung,
                     "local_hit": o.local_hit, "bundle_hit": o.bundle_hit, "ndcg_at_10": o.ndcg_at_10}
                    for o in report.outcomes]
        typer.echo(render.to_json({"artifact": str(path), "routing_artifact": pinned, "sha256": sha256,
                                   "seconds": round(report.seconds, 2), "report": artifact_data(report),
                                   "queries": outcomes}))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(report.outcomes)} queries in {report.seconds:.1f}s", title_justify="left")
    table.add_column("task type")
    for column in ("queries", "eligible", "quality", "recall", "NDCG@10", "passes"):
        table.add_column(column, justify="right")
    for row in report.task_types:
        table.add_row(row.task_type.value, str(row.queries), str(row.local_eligible), f"{row.quality:.2f}",
                      f"{row.bundle_recall:.2f}", f"{row.ndcg_at_10:.3f}", "yes" if row.meets_floor else "no")
    Console(highlight=False).print(table)
    passing = ", ".join(task.value for task in report.passing_task_types) or "none"
    typer.echo(f"eligible: a rung's bundle reached sufficiency {report.sufficiency_bar:.2f}; quality: share "
               f"of eligible bundles holding a target; recall: the top rung's bundle, over all queries; "
               f"passes: >= {MIN_ELIGIBLE_QUERIES} eligible and quality >= {report.quality_floor:.2f}\n"
               f"local answers would be on for: {passing}\n"
               f"wrote {path}; pin it under [llm] in knowcode.toml:\n{pin_lines(pinned, sha256)}")


MAX_CONNECTIONS = 64  # concurrent connections `serve` accepts; uvicorn answers 503 beyond it


@app.command()
def serve(
    repo: RepoOption = Path(),
    store: StoreOption = None,
    config: ConfigOption = None,
    host: Annotated[str, typer.Option(
        "--host", help="Address to bind; anything but loopback needs KNOWCODE_API_TOKEN.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="TCP port.")] = 8000,
    watch: Annotated[bool, typer.Option(
        "--watch", help="Re-index changed files as they change (queries go on meanwhile).")] = False,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, help="Server processes answering requests side by side.",
        show_default="[server] workers, 1")] = None,
) -> None:
    """Serve the HTTP API under /api/v1 (OpenAPI at /docs) for one repository."""
    from knowcode.api_guard import TOKEN_ENV, server_token

    with _errors():
        token = server_token(host, os.environ.get(TOKEN_ENV))
    try:
        import uvicorn  # noqa: F401 - only checks that the extra is installed

        from knowcode.api import run

        if watch:
            import watchfiles  # noqa: F401 - only checks that the extra is installed
    except ImportError as err:
        raise _fail(f"`knowcode serve` needs the server extra ({err.name} is missing): "
                    "pip install 'knowcode[server]'", EXIT_FAILURE) from None
    with _errors(), _progress() as progress:
        engine = _open(repo, store, config)  # no progress for the re-indexing while it serves
        report = engine.index(progress)
    _stderr().print(render.index_report_text(report).splitlines()[0], highlight=False)
    processes = workers if workers is not None else engine.config.server.workers
    _stderr().print(f"serving {engine.root} at http://{host}:{port}/api/v1 (OpenAPI: /docs); "
                 f"auth: {'bearer token' if token else 'off, loopback only'}"
                 f"{f'; {processes} worker processes' if processes > 1 else ''}"
                 f"{'; watching for changes' if watch else ''}", highlight=False)
    # uvicorn shuts down gracefully on SIGTERM and SIGINT, then re-raises the signal: ours becomes a
    # KeyboardInterrupt, which uvicorn.run absorbs, so a stopped server returns here and exits 0
    # (with workers, uvicorn's supervisor takes both signals, stops the workers and returns).
    run(engine, token=token, host=host, port=port, watch=watch, workers=processes, config_file=config,
        limit_concurrency=MAX_CONNECTIONS)


@app.command("drop-repo")
def drop_repo(
    name: Annotated[str, typer.Argument(help="The repository's name in the shared [backend].")],
    repo: RepoOption = Path(),
    store: StoreOption = None,
    config: ConfigOption = None,
) -> None:
    """Delete a repository from the shared [backend] (its own index stays; indexing it re-adds it)."""
    from knowcode.search_backend import drop_repository, vector_dimension

    with _errors():
        kc = _open(repo, store, config)
        try:
            deleted = drop_repository(kc.config, name, vector_dimension(kc.embedder()))
        finally:
            kc.close()
    typer.echo(f"dropped {name} from the backend: {deleted} chunk{'' if deleted == 1 else 's'}")


@app.command()
def mcp(
    repo: Annotated[list[Path] | None, typer.Option(
        "--repo", help="Repository folder; repeat for several (the first is the default).",
        show_default="current folder")] = None,
    store: StoreOption = None,
    config: ConfigOption = None,
    transport: Annotated[str, typer.Option("--transport", help="stdio, or http (streamable HTTP at /mcp).")]
    = "stdio",
    host: Annotated[str, typer.Option("--host", help="HTTP address (loopback only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port.")] = MCP_DEFAULT_HTTP_PORT,
    watch: Annotated[bool, typer.Option(
        "--watch", help="Re-index changed files as they change, instead of on the next tool call.")] = False,
) -> None:
    """Serve search, context, call graphs and impact to AI coding agents over MCP (stdout: protocol only)."""
    from knowcode import mcp_server  # it imports the SDK only when the server starts

    with _errors():
        mcp_server.serve(repo or [Path()], store, config, transport=transport, host=host, port=port,
                         watch=watch)


# numpy's BLAS starts a thread per core when numpy is imported and keeps them spinning after each
# call. KnowCode's only BLAS call is the dense leg's matrix-vector product, which is memory-bound and
# already runs beside the sparse leg; on 2 cores the extra threads cost a warm `knowcode search`
# ~0.1 s of CPU (~0.05 s of numpy's import) and won nothing (benchmarks/cli_latency.py, README).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")  # pip's numpy wheels; conda's MKL


def single_threaded_blas(environ: MutableMapping[str, str]) -> None:
    """Ask numpy's BLAS for one thread, unless the caller chose a number; before numpy is imported.

    :param environ: the process environment (``os.environ``).
    """
    for variable in BLAS_THREAD_VARIABLES:
        environ.setdefault(variable, "1")


def main() -> None:
    """Console-script entry point."""
    single_threaded_blas(os.environ)  # nothing has imported numpy yet (tests/unit/test_cli_imports.py)
    signal.signal(signal.SIGTERM, _on_sigterm)
    app(prog_name="knowcode")


if __name__ == "__main__":
    main()
