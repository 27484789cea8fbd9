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
    rows = candidates.tolist()
    ranked = sorted(zip((-scores[candidates]).tolist(), (ids[row] for row in rows), strict=True))
    return [(cid, -negative) for negative, cid in ranked[:limit]]
