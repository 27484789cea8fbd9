"""Signals reported beside the spec's sufficiency score, never mixed into it.

* retrieval confidence: how far the top hit stands out from the second (relative score margin);
* leg agreement: the share of ranked hits that both the sparse and the dense leg found;
* index freshness: the bundle's files whose size or modification time on disk differs from the
  index (the indexer's own change test), or that are gone. Only the bundle's files are checked: a
  few ``stat`` calls, where a whole-repository walk would cost more than the rest of the query;
* reduction: the bundle's tokens against the tokens of the whole files its entities live in.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from knowcode.analysis.token_counter import TokenCounter
from knowcode.models import FileRecord, HitSource, RetrievalMode, SearchHit
from knowcode.storage.store import Store

_FILE_TOKENS_CACHE_SIZE = 4096  # whole-file token counts kept per (encoding, path, content hash)
_file_tokens: dict[tuple[str, str, str], int] = {}


def retrieval_confidence(hits: Sequence[SearchHit]) -> float:
    """``(score₁ - score₂) / score₁`` over the ranked hits, in [0, 1]; 1.0 for a lone hit, 0.0 for none."""
    if not hits:
        return 0.0
    first = hits[0].score
    if first <= 0.0:
        return 0.0
    if len(hits) == 1:
        return 1.0
    return min(1.0, max(0.0, (first - hits[1].score) / first))


def leg_agreement(hits: Sequence[SearchHit], mode: RetrievalMode) -> float | None:
    """The share of ranked hits found by both legs; None unless both legs ran (hybrid mode)."""
    if mode is not RetrievalMode.HYBRID or not hits:
        return None
    return sum(hit.source == HitSource.HYBRID.value for hit in hits) / len(hits)


def changed_since_index(store: Store, root: Path, paths: Iterable[str]) -> tuple[str, ...]:
    """The given indexed files whose size or mtime on disk differ from the index, or that are gone."""
    return changed_files(root, store.file_records_in(paths))


def changed_files(root: Path, records: Mapping[str, FileRecord]) -> tuple[str, ...]:
    """The recorded files whose size or mtime on disk differ from their records, or that are gone, by path.

    :param root: the repository root the records' paths are relative to.
    :param records: indexed file records by path (e.g. :meth:`Store.file_records`).
    :return: the changed paths.
    """
    base = os.fspath(root)  # joined as strings: a Path per file cost more than its stat
    changed = []
    for path in sorted(records):
        record = records[path]
        try:
            stat = os.stat(os.path.join(base, path))
        except OSError:
            changed.append(path)
            continue
        if (stat.st_size, stat.st_mtime) != (record.size, record.mtime):
            changed.append(path)
    return tuple(changed)


def whole_file_tokens(store: Store, root: Path, paths: Iterable[str], counter: TokenCounter) -> int:
    """Tokens of the given files read whole (what grep-and-read would spend); unreadable files count 0.

    Counts are cached by encoding, path and indexed content hash, so a warm query does not re-count.
    """
    total = 0
    for path, record in store.file_records_in(paths).items():
        key = (counter.name, path, record.content_hash)
        if key not in _file_tokens:
            try:
                text = (root / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if len(_file_tokens) >= _FILE_TOKENS_CACHE_SIZE:
                _file_tokens.clear()
            _file_tokens[key] = counter.count(text)
        total += _file_tokens[key]
    return total


def reduction_factor(bundle_tokens: int, baseline_tokens: int) -> float:
    """How many times fewer tokens the bundle spends than reading its files whole (0.0: empty bundle)."""
    return baseline_tokens / bundle_tokens if bundle_tokens else 0.0


def reduction_summary(bundle_tokens: int, baseline_tokens: int) -> str:
    """"N tokens instead of M (x-fold)"."""
    if not bundle_tokens:
        return f"0 tokens (the whole files would be {baseline_tokens})"
    factor = reduction_factor(bundle_tokens, baseline_tokens)
    if factor >= 1.0:
        return f"{bundle_tokens} tokens instead of {baseline_tokens} ({factor:.1f}x fewer)"
    return f"{bundle_tokens} tokens instead of {baseline_tokens} ({factor:.1f}x: the whole files are smaller)"
