"""Segments of a search index: immutable folders of chunks, listed with their tombstones in a manifest.

A segment holds a fixed set of chunks: their ids (``<segment>.ids.json``, in row order), their BM25
postings (:class:`~knowcode.retrieval.sparse.Postings`) and, when vectors are on, their vectors
(``<segment>.vectors.npy``, with their int8 codes for the exact scan, ``<segment>.vectors.codes*.npy``,
unless the segment has an approximate graph). It is never changed once written. A generation's folder holds a
``manifest.json`` naming its segments and, for each, the rows deleted since it was written; an update
writes a new folder that links the segments it keeps (hard links: no bytes copied) beside the one it
adds, the Lucene way. The files of every segment sit side by side in the one folder: removing a
directory cost ~2-4 ms each on this machine's ext4, against ~0.01 ms for a file. When the segments added
since the last full build grow past a fraction of the main segment, the next update builds one new
segment from scratch (:class:`MergePolicy`).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from knowcode.retrieval.sparse import Postings, SparseIndex, SparseSegment
from knowcode.storage import ann_index
from knowcode.storage.ann_index import AnnIndex
from knowcode.storage.vector_store import VectorStore

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = 1  # bump when the manifest's or a segment's files change meaning
_SEGMENT_PREFIX = "seg-"
_IDS_FILE = "ids.json"  # file name endings, after the segment's name and a dot
_VECTORS_FILE = "vectors.npy"
_GRAPH_FILE = "graph.usearch"  # the approximate graph of a segment of at least ANN_MIN_ROWS rows


@dataclass(frozen=True)
class MergePolicy:
    """When an update appends a segment, merges the small ones, or rebuilds everything.

    Lucene's TieredMergePolicy merges once a tier holds 10 segments of similar size; KnowCode has two
    tiers, the main segment and the deltas.
    """

    # Rows in the deltas plus rows deleted anywhere, as a fraction of the main segment, past which the
    # next update rebuilds one segment. Deleted and superseded rows still cost a query their postings,
    # so this bounds the extra query work to ~20%; a one-file edit replaces ~0.1-0.3% of a 300k-line
    # repository's chunks, so a full build comes about every hundred such edits.
    rebuild_fraction: float = 0.2
    # Delta segments a query visits at most (Lucene's segments per tier): one more and they are merged
    # into one delta, which costs what they hold, at most rebuild_fraction of the main segment.
    max_deltas: int = 10


DEFAULT_POLICY = MergePolicy()


@dataclass(frozen=True)
class SegmentEntry:
    """One segment of a generation: its folder name, its row count and the rows deleted since."""

    name: str
    rows: int
    deleted: tuple[int, ...] = ()


@dataclass(frozen=True)
class Manifest:
    """A generation's segments (the main one first) and the BM25 parameters they are scored with."""

    segments: tuple[SegmentEntry, ...]
    k1: float
    b: float
    dense: bool
    format: int = MANIFEST_FORMAT

    def save(self, folder: Path) -> None:
        """Write the manifest into a generation folder."""
        data = {"format": self.format, "k1": self.k1, "b": self.b, "dense": self.dense,
                "segments": [{"name": s.name, "rows": s.rows, "deleted": list(s.deleted)}
                             for s in self.segments]}
        (folder / MANIFEST_FILE).write_text(json.dumps(data))

    @classmethod
    def load(cls, folder: Path) -> Manifest | None:
        """The manifest of a generation folder; None when there is none or it has another format.

        :raises FileNotFoundError: the folder itself is gone.
        """
        if not folder.is_dir():
            raise FileNotFoundError(folder)
        path = folder / MANIFEST_FILE
        if not path.is_file():
            return None
        data = json.loads(path.read_text())
        if data.get("format") != MANIFEST_FORMAT:
            return None
        segments = tuple(SegmentEntry(s["name"], s["rows"], tuple(s["deleted"])) for s in data["segments"])
        return cls(segments, data["k1"], data["b"], data["dense"])

    @property
    def rows(self) -> int:
        """Rows in all segments, deleted ones included."""
        return sum(s.rows for s in self.segments)


@dataclass
class Segment:
    """A segment's contents, as written or read; `vectors` is None when vectors are off."""

    chunk_ids: list[str]
    postings: Postings
    vectors: VectorStore | None = None
    name: str = field(default_factory=lambda: f"{_SEGMENT_PREFIX}{secrets.token_hex(6)}")

    def save(self, folder: Path, *, main: bool = True) -> SegmentEntry:
        """Write the segment into a generation folder.

        :param folder: the generation folder.
        :param main: it is the generation's first segment, the only one whose graph searches use.
        :return: its manifest entry.
        """
        self.postings.save(folder, self.name)
        if self.vectors is not None:
            vectors_file = f"{self.name}.{_VECTORS_FILE}"
            self.vectors.save(folder, vectors_file=vectors_file, with_ids=False)
            if main and len(self.chunk_ids) >= ann_index.ANN_MIN_ROWS:
                AnnIndex.build(self.vectors.matrix).save(folder / f"{self.name}.{_GRAPH_FILE}")
            else:  # scanned exactly: through its int8 codes
                self.vectors.save_codes(folder, vectors_file=vectors_file)
        (folder / f"{self.name}.{_IDS_FILE}").write_text(json.dumps(self.chunk_ids))
        return SegmentEntry(self.name, len(self.chunk_ids))


def read_ids(folder: Path, entry: SegmentEntry) -> list[str]:
    """The chunk ids of a segment, in row order.

    :raises FileNotFoundError: the segment is missing.
    """
    ids: list[str] = json.loads((folder / f"{entry.name}.{_IDS_FILE}").read_text())
    return ids


def read_vectors(folder: Path, entry: SegmentEntry, chunk_ids: list[str]) -> VectorStore:
    """The vectors of a segment (rows as `chunk_ids`), read into memory.

    :raises FileNotFoundError: the segment has no vectors.
    """
    return VectorStore.load(folder, chunk_ids, vectors_file=f"{entry.name}.{_VECTORS_FILE}")


def link_segment(source: Path, target: Path, entry: SegmentEntry) -> None:
    """Make a kept segment part of a new generation folder: hard links, or a copy where the file
    system has none.

    :param source: the generation folder that holds it.
    :param target: the new generation folder.
    :param entry: the segment.
    """
    for path in source.glob(f"{entry.name}.*"):
        try:
            os.link(path, target / path.name)
        except OSError:
            shutil.copy2(path, target / path.name)


def load_generation(folder: Path, manifest: Manifest) -> tuple[SparseIndex, VectorStore | None]:
    """The indexes a generation's segments make together: postings and vectors memory-mapped (the
    vectors' int8 codes and the live rows of segments with deletions read into memory).

    :raises FileNotFoundError: a segment is missing (the folder was replaced while being read).
    """
    sparse, dense = [], []
    for entry in manifest.segments:
        ids = read_ids(folder, entry)
        deleted = frozenset(entry.deleted)
        sparse.append(SparseSegment(ids, Postings.load(folder, entry.name), deleted))
        if manifest.dense:
            dense.append((read_vectors(folder, entry, ids), deleted))
    if not manifest.dense:
        return SparseIndex(sparse, k1=manifest.k1, b=manifest.b), None
    # Only the main segment is ever large enough for a graph (deltas are merged into a new main one
    # long before), so the graph of the first segment is the one a search uses.
    main_graph = folder / f"{manifest.segments[0].name}.{_GRAPH_FILE}" if manifest.segments else None
    graph = AnnIndex.load(main_graph) if main_graph is not None and main_graph.is_file() else None
    return SparseIndex(sparse, k1=manifest.k1, b=manifest.b), VectorStore.join(dense, graph)
