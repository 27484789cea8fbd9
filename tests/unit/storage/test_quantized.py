"""Int8 codes of vector rows: their candidates always hold the exact top k, and they are row-local."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowcode.storage.quantized import SAMPLE_STRIDE, Quantized, _kth_largest


def _unit_rows(rows: int, width: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((rows, width)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _exact_top(matrix: np.ndarray, query: np.ndarray, limit: int) -> set[int]:
    """The rows of the exact top `limit`, with every row tied with the last."""
    scores = matrix.astype(np.float64) @ query.astype(np.float64)
    cut = np.sort(scores)[::-1][limit - 1]
    return set(np.flatnonzero(scores >= cut).tolist())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("limit", [1, 10, 150])
def test_candidates_hold_the_exact_top_k(seed: int, limit: int) -> None:
    matrix = _unit_rows(3000, 64, seed)
    # near neighbours of the query, so the top of the ranking is crowded as with real embeddings
    query = matrix[seed] + 0.05 * _unit_rows(1, 64, seed + 100)[0]
    matrix[:40] = query + 0.01 * _unit_rows(40, 64, seed + 200)
    candidates = Quantized.of(matrix).candidates(query.astype(np.float32), limit)
    assert _exact_top(matrix, query, limit) <= set(candidates.tolist())
    assert len(candidates) < len(matrix)  # it does prune
    assert np.all(np.diff(candidates) > 0)


def test_tied_rows_at_the_cut_are_all_candidates() -> None:
    matrix = _unit_rows(500, 16, 1)
    matrix[100:110] = matrix[7]  # ten copies of one row: all tie
    candidates = set(Quantized.of(matrix).candidates(matrix[7], 3).tolist())
    assert {7, *range(100, 110)} <= candidates


def test_rows_of_any_length_and_zero_rows() -> None:
    matrix = _unit_rows(800, 32, 2) * np.linspace(0.1, 5, 800, dtype=np.float32)[:, None]
    matrix[5] = 0
    query = (3 * matrix[400]).astype(np.float32)
    candidates = Quantized.of(matrix).candidates(query, 20)
    assert _exact_top(matrix, query, 20) <= set(candidates.tolist())
    assert len(Quantized.of(matrix).candidates(np.zeros(32, dtype=np.float32), 20)) == 800  # all tie at 0


def test_a_limit_past_the_rows_takes_every_row() -> None:
    assert Quantized.of(_unit_rows(5, 8, 3)).candidates(_unit_rows(1, 8, 4)[0], 9).tolist() == [0, 1, 2, 3, 4]


def test_codes_are_row_local_so_subsets_and_stacks_agree() -> None:
    matrix = _unit_rows(50, 8, 5)
    whole = Quantized.of(matrix)
    keep = np.arange(50) % 3 != 0
    parts = [Quantized.of(matrix[:20]).rows(keep[:20]), Quantized.of(matrix[20:]).rows(keep[20:])]
    stacked = Quantized.concatenate(parts, 8)
    direct = Quantized.of(matrix[keep])
    for name in ("codes", "scales", "errors", "norms"):
        assert np.array_equal(getattr(stacked, name), getattr(direct, name))
        assert np.array_equal(getattr(whole.rows(keep), name), getattr(direct, name))
    assert len(Quantized.concatenate([], 8).codes) == 0


def test_errors_bound_each_rows_rounding() -> None:
    matrix = _unit_rows(100, 16, 6)
    coded = Quantized.of(matrix)
    rebuilt = coded.codes.astype(np.float32) * coded.scales[:, None]
    assert np.allclose(np.linalg.norm(matrix - rebuilt, axis=1), coded.errors, atol=1e-6)
    assert np.allclose(coded.norms, 1, atol=1e-5)
    assert np.abs(coded.codes).max() == 127


def test_save_and_load(tmp_path: Path) -> None:
    coded = Quantized.of(_unit_rows(30, 8, 7))
    coded.save(tmp_path, "seg.vectors")
    loaded = Quantized.load(tmp_path, "seg.vectors", 30)
    assert loaded is not None
    for name in ("codes", "scales", "errors", "norms"):
        assert np.array_equal(getattr(loaded, name), getattr(coded, name))
    assert Quantized.load(tmp_path, "seg.vectors", 31) is None  # codes of another matrix
    assert Quantized.load(tmp_path, "other.vectors", 30) is None  # none saved


@pytest.mark.parametrize("layout", ["random", "sampled rows hold the top", "ties"])
@pytest.mark.parametrize("k", [1, 7, 150])
def test_kth_largest_is_exact_whatever_the_sample_sees(layout: str, k: int) -> None:
    rng = np.random.default_rng(k)
    values = rng.standard_normal(5000).astype(np.float32)
    if layout == "sampled rows hold the top":  # the strided sample sees only the best values
        values[::SAMPLE_STRIDE] += 100
    elif layout == "ties":
        values = np.round(values)
    assert _kth_largest(values, k) == float(np.sort(values)[::-1][k - 1])


def test_wide_vectors_whose_integer_dots_pass_float32s_exact_range() -> None:
    matrix = _unit_rows(1500, 3072, 11)  # 3072 x 127^2 > 2^24: the kernel's float32 output rounds
    query = (matrix[3] + 0.02 * _unit_rows(1, 3072, 12)[0]).astype(np.float32)
    matrix[:30] = query + 0.005 * _unit_rows(30, 3072, 13)
    assert _exact_top(matrix, query, 25) <= set(Quantized.of(matrix).candidates(query, 25).tolist())
