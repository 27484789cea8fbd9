"""The best rows of a score array, in an order that does not depend on how the rows are laid out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def top_by_score(scores: npt.NDArray[np.floating], ids: Sequence[str], limit: int, *,
                 floor: float | None = None) -> list[tuple[str, float]]:
    """The `limit` highest scores with their ids, best first, ties by id; every row tied at the cut is
    considered, so the result is the same however the rows are ordered or split into segments.

    :param scores: one score per row.
    :param ids: the id of each row.
    :param limit: how many to return.
    :param floor: when set, only scores above it count.
    :return: (id, score) pairs.
    """
    if limit <= 0:
        return []
    candidates = np.flatnonzero(scores > floor) if floor is not None else np.arange(len(scores))
    if len(candidates) > limit:
        values = scores[candidates]
        cut = np.partition(values, len(values) - limit)[len(values) - limit]
        candidates = candidates[values >= cut]
    # best first by numpy; then each run of equal scores in id order, as sorting (-score, id) pairs
    # would give (it compared ~1,100 tuples for 150 rows: most of this function's time)
    values = scores[candidates]
    order = np.argsort(-values, kind="stable")
    best_first = values[order]
    ranked = best_first.tolist()
    found = list(map(ids.__getitem__, candidates[order].tolist()))
    if bool((best_first[1:] == best_first[:-1]).any()):  # ties are rare: most calls sort nothing here
        start = 0
        for end in range(1, len(ranked) + 1):
            if end == len(ranked) or ranked[end] != ranked[start]:
                if end - start > 1:
                    found[start:end] = sorted(found[start:end])
                start = end
    return list(zip(found[:limit], ranked[:limit], strict=True))
