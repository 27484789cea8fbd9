"""Int8 codes of a vector matrix, for an exact brute-force search that reads a quarter of the bytes.

The float32 scan reads the whole matrix for every query (21k x 256: 22 MB, memory-bound). Here each
row ``x`` is also kept as int8 codes ``c`` with a scale ``s`` (``x ~ s * c``, ``s = max|x| / 127``),
the length of its rounding error ``r = |x - s * c|`` and its own length ``|x|``; the query ``q`` is
coded the same way (``q ~ t * d``). By Cauchy-Schwarz, the exact score lies within

    ``|q . x - s * t * (c . d)| <= |t * d| * r + |q - t * d| * |x|``, and ``|x| <= max |x|`` over all rows

of the integer dot product's estimate (plus the float32 rounding of the exact scan). So the rows whose
upper bound reaches the k-th largest lower bound hold the exact top k, ties at the cut included: only
those (~575 of 21k for the top 150) are scored again, exactly, from the float32 rows. The result is the
exact top k, found from a 5.5 MB scan (numkong's SIMD int8 kernel) instead of a 22 MB one.

A row's codes depend on that row alone, so codes of segments joined or built from scratch agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

CODE_LIMIT = 127  # the largest int8 code: symmetric codes, so -x is coded as -c
# Slack on the bounds for rounding: the codes' float32 scales and the float32 arithmetic of the bounds
# themselves are off by a few float32 epsilons per dimension at most (d eps |x| |q| is the textbook
# bound on a d-term float32 dot product), and the slack covers four times that.
ROUNDING_SLACK_PER_DIMENSION = 4 * float(np.finfo(np.float32).eps)
# Selecting the k-th largest lower bound: a whole partition of 21k values cost ~0.2 ms, a third of the
# scan. Every 16th value is sampled, and the sample's value that ~4 k rows of all should reach is the
# threshold (rows are in chunk-id order, hashes, so a sample is an even spread of the scores).
SAMPLE_STRIDE = 16
SAMPLE_MARGIN = 4
_CODES_FILE = "codes.npy"  # file name endings, after the stem given to save/load
_FACTORS_FILE = "codes-factors.npy"

FloatMatrix = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]


def _codes_of(matrix: FloatMatrix) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """Each row's int8 codes and scale (an all-zero row: codes 0, scale 0)."""
    peaks = np.abs(matrix).max(axis=1) if matrix.shape[1] else np.zeros(len(matrix), dtype=np.float32)
    scales = (peaks / CODE_LIMIT).astype(np.float32)
    safe = np.where(scales > 0, scales, 1).astype(np.float32)
    codes = np.rint(matrix / safe[:, None]).astype(np.int8)
    return codes, scales


def _kth_largest(values: npt.NDArray[np.floating], k: int) -> float:
    """The k-th largest value (1 <= k < len(values)), selected among the values at or above a threshold
    that a strided sample says leaves about SAMPLE_MARGIN x k of them; over all values when fewer than k
    pass it. Either way the exact k-th largest, in a third of a whole partition's time."""
    rows = len(values)
    sample = values[::SAMPLE_STRIDE]
    rank = min(len(sample), SAMPLE_MARGIN * k // SAMPLE_STRIDE + 1)
    if rank < len(sample):
        threshold = np.partition(sample, len(sample) - rank)[len(sample) - rank]
        above = values[values >= threshold]
        if len(above) >= k:
            return float(np.partition(above, len(above) - k)[len(above) - k])
    return float(np.partition(values, rows - k)[rows - k])


@dataclass(frozen=True)
class Quantized:
    """Int8 codes of a matrix's rows with what bounds their error: row i is ~ ``scales[i] * codes[i]``,
    off by ``errors[i]`` in length; ``norms[i]`` is the row's length."""

    codes: npt.NDArray[np.int8]
    scales: npt.NDArray[np.float32]
    errors: npt.NDArray[np.float32]
    norms: npt.NDArray[np.float32]

    @classmethod
    def of(cls, matrix: FloatMatrix) -> Quantized:
        """The codes of every row of a float32 matrix.

        :param matrix: one vector per row.
        :return: its codes, scales, error lengths and row lengths.
        """
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        codes, scales = _codes_of(matrix)
        residual = matrix - codes * scales[:, None]
        errors = np.sqrt(np.einsum("ij,ij->i", residual, residual)).astype(np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)).astype(np.float32)
        return cls(codes, scales, errors, norms)

    def save(self, directory: Path, stem: str) -> None:
        """Write the codes and their per-row factors (``<stem>.codes.npy``, ``<stem>.codes-factors.npy``)."""
        np.save(directory / f"{stem}.{_CODES_FILE}", self.codes)
        np.save(directory / f"{stem}.{_FACTORS_FILE}", np.stack([self.scales, self.errors, self.norms]))

    @classmethod
    def load(cls, directory: Path, stem: str, rows: int) -> Quantized | None:
        """Read saved codes; None when there are none (a segment written before codes were) or they do
        not hold `rows` rows.

        :param directory: the folder `save` wrote into.
        :param stem: the name given to `save`.
        :param rows: the rows of the matrix they must code.
        """
        codes_path, factors_path = directory / f"{stem}.{_CODES_FILE}", directory / f"{stem}.{_FACTORS_FILE}"
        if not codes_path.is_file() or not factors_path.is_file():
            return None
        codes = np.load(codes_path)
        factors = np.load(factors_path)
        if codes.dtype != np.int8 or len(codes) != rows or factors.shape != (3, rows):
            return None
        scales, errors, norms = (np.ascontiguousarray(row, dtype=np.float32) for row in factors)
        return cls(codes, scales, errors, norms)

    def rows(self, keep: npt.NDArray[np.bool_]) -> Quantized:
        """The codes of the rows where `keep` is true, in order."""
        return Quantized(self.codes[keep], self.scales[keep], self.errors[keep], self.norms[keep])

    @classmethod
    def concatenate(cls, parts: list[Quantized], width: int) -> Quantized:
        """The codes of several matrices stacked in order (`width`: the vectors' length, for none)."""
        if not parts:
            empty = np.zeros(0, dtype=np.float32)
            return cls(np.zeros((0, width), dtype=np.int8), empty, empty, empty)
        return cls(np.concatenate([p.codes for p in parts]), np.concatenate([p.scales for p in parts]),
                   np.concatenate([p.errors for p in parts]), np.concatenate([p.norms for p in parts]))

    def candidates(self, query: FloatMatrix, limit: int) -> IntArray:
        """The rows that may be among the `limit` best by exact dot product with the query (every row
        of the exact top `limit`, ties at the cut included, is among them), ascending.

        :param query: the query vector (float32).
        :param limit: how many best rows the caller will keep (1 or more).
        :return: row numbers.
        """
        import numkong  # imported here: only a search needs the kernel, not every command

        rows = len(self.codes)
        if limit >= rows:
            return np.arange(rows, dtype=np.int64)
        query_codes, query_scales = _codes_of(query.reshape(1, -1))
        step = float(query_scales[0])
        if step == 0:  # a zero query: every row scores 0, all tie
            return np.arange(rows, dtype=np.int64)
        coded_query = query_codes[0].astype(np.float32) * step
        longest = float(self.norms.max())
        # Every bound in units of the query's step (so the estimate is the integer dot product times the
        # row's scale): the row's own term |t d| r_i, and one for all rows, |q - t d| max|x| + slack.
        own = float(np.linalg.norm(coded_query)) / step
        shared = (float(np.linalg.norm(query - coded_query)) * longest
                  + ROUNDING_SLACK_PER_DIMENSION * len(query) * float(np.linalg.norm(query)) * longest) / step
        # integer dot products, in float32: exact below 1,040 dimensions (d * 127^2 < 2^24); past that
        # rounded by at most eps/2 of |x| |q| in score units, which the slack's d x 4 eps covers
        estimate = np.asarray(numkong.cdist(query_codes, self.codes, metric="dot", out_dtype="float32"),
                              dtype=np.float32)[0]
        estimate *= self.scales
        spread = self.errors * np.float32(own)
        cut = _kth_largest(estimate - spread, limit) - 2 * shared  # the k-th largest lower bound, and room
        estimate += spread
        return np.flatnonzero(estimate >= cut).astype(np.int64)
