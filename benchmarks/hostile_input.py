"""Time searching and indexing text that a pattern could take quadratic time on.

Reports paste minified code, base64 blobs, digit tables and long runs of punctuation. A regular
expression that tries a match at every character of such a run and scans the rest of it each time takes
seconds on 20,000 characters. This times, for each kind of run (`RUNS`):

- a query made of a short question and the run, classified and searched in an existing index
  (`--tree`, `--store`; median of `--repeats` searches);
- a cold `index()` of a tree holding each run in a Python, a JavaScript and a Markdown file (`--index`),
  and of one file of each parsed language holding every run (`--languages`).

Two codes are compared by running this with each on PYTHONPATH in turn (the JSON records which code ran):

    PYTHONPATH=OTHER/src python benchmarks/hostile_input.py --tree DIR/flask/tree --store DIR/flask/index \
        --index --out RESULTS.jsonl
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from report import print_json_line

import knowcode
from knowcode.indexing.languages import GRAMMARS
from knowcode.llm.query_classifier import classify

RUN_CHARS = 20_000  # a pasted blob of a report; quadratic patterns took 1-23 s on runs this long
RUNS: dict[str, Callable[[int], str]] = {
    "letters": lambda n: "a" * n,
    "digits": lambda n: "1" * n,
    "capitals": lambda n: "A" * n,
    "camel": lambda n: "aB" * (n // 2),
    "dotted": lambda n: "a." * (n // 2),
    "slashed": lambda n: "a/" * (n // 2),
    "hyphenated": lambda n: "a-" * (n // 2),
    "snake": lambda n: "a_" * (n // 2),
    "parens": lambda n: "a(" * (n // 2),
    "dot-slash": lambda n: "a./" * (n // 3),
    "line links": lambda n: "a#L1" * (n // 4),
    "quotes": lambda n: "a'" * (n // 2),
    "base64": lambda n: "".join(chr(65 + (i * 7919) % 26) if i % 5 else "+/"[i % 2] for i in range(n)),
}
QUESTION = "Why is my error handler skipped? "


def _median_ms(call: Callable[[], object], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        timings.append(1e3 * (time.perf_counter() - started))
    return round(statistics.median(timings), 1)


def _search_times(tree: Path, store: Path, chars: int, repeats: int) -> dict[str, dict[str, float]]:
    engine = knowcode.open(tree, store=store)
    engine.search(QUESTION, limit=10)  # warm: the index and the model are loaded once
    found = {}
    for kind, run in RUNS.items():
        query = QUESTION + run(chars)
        found[kind] = {"classify_ms": _median_ms(partial(classify, query), repeats),
                       "search_ms": _median_ms(partial(engine.search, query, limit=10), repeats)}
    engine.close()
    return found


def _write_runs(tree: Path, chars: int) -> None:
    """Each run in a Python, a JavaScript and a Markdown file, as a docstring, a comment and a string."""
    for kind, run in RUNS.items():
        text, name = run(chars), kind.replace(" ", "_")
        python = f'def f():\n    """{text}"""\n    return 1\n# {text}\nX = "{text}"\n'
        (tree / f"{name}.py").write_text(python)
        (tree / f"{name}.js").write_text(f'function f() {{ return "{text}"; }}\n// {text}\nvar x = 1;\n')
        (tree / f"{name}.md").write_text(f"# Title\n\n{text}\n")


def _write_languages(tree: Path, chars: int) -> None:
    """Every run, one per line, in one file of each parsed language: error recovery on such a file is
    where a grammar is slowest."""
    text = "x\n" + "\n".join(run(chars) for run in RUNS.values()) + "\n"
    for extension in sorted({extension for spec in GRAMMARS.values() for extension in spec.extensions}):
        (tree / f"runs{extension}").write_text(text)


def _index_time(chars: int, write: Callable[[Path, int], None]) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "tree"
        tree.mkdir()
        write(tree, chars)
        engine = knowcode.open(tree, store=Path(folder) / "index")
        started = time.perf_counter()
        engine.index()
        seconds = time.perf_counter() - started
        engine.close()
        return {"files": len(list(tree.iterdir())), "cold_index_s": round(seconds, 2)}


def main() -> None:
    """Time each kind of run and print (or append to --out) the result as JSON."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, help="a repository's work tree, to search in")
    parser.add_argument("--store", type=Path, help="its index folder")
    parser.add_argument("--index", action="store_true", help="also time a cold index of the runs' files")
    parser.add_argument("--languages", action="store_true",
                        help="also time a cold index of every run in one file of each parsed language")
    parser.add_argument("--chars", type=int, default=RUN_CHARS, help="characters of each run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="a JSON-lines file to append the result to")
    args = parser.parse_args()
    if (args.tree is None) != (args.store is None):
        raise SystemExit("--tree and --store go together")
    result: dict[str, object] = {"code": str(Path(knowcode.__file__).parent), "chars": args.chars,
                                 "repeats": args.repeats, "load_average": os.getloadavg()[0]}
    if args.tree is not None:
        result["search"] = _search_times(args.tree, args.store, args.chars, args.repeats)
    if args.index:
        result["index"] = _index_time(args.chars, _write_runs)
    if args.languages:
        result["languages"] = _index_time(args.chars, _write_languages)
    print_json_line(result, args.out)


if __name__ == "__main__":
    main()
