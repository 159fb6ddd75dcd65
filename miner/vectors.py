"""Sentence-embedding matrices: loading, validation and L2 normalisation.

Every k-NN and margin computation assumes unit-length float32 rows, so cos(x, y) = x . y. Inputs may be
float16 or float32, memory-mapped `.npy` files or in-memory arrays; they are validated and normalised one batch
at a time so that a large memory-mapped file never has to fit in memory as float32.

A NaN, an infinity or an all-zero row would silently produce wrong neighbours and wrong margins, so each is an
`EmbeddingError` naming the input and the row.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

DEFAULT_BATCH_SIZE = 16_384
FLOAT_DTYPES = (np.float16, np.float32, np.float64)
# A float16's exponent bits: all ones for NaN and the infinities only
FLOAT16_EXPONENT = np.uint16(0x7C00)
# From this many float16 values, float32_copy widens them with torch (below it, numpy's call costs less)
FAST_WIDEN_MIN_VALUES = 8192


class EmbeddingError(ValueError):
    """An embedding matrix that cannot be mined: wrong shape, dtype, non-finite or zero rows."""


def load_embeddings(path: str | Path, mmap: bool = True) -> np.ndarray:
    """Open a `.npy` matrix of sentence vectors (rows = sentences), memory-mapped by default.

    Pickled object arrays are refused: an embedding file is data, never code.
    """
    path = Path(path)
    try:
        matrix = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError:
        raise EmbeddingError(f"{path}: embedding file not found") from None
    except (ValueError, EOFError, OSError) as err:  # not .npy, pickled objects, empty or truncated
        raise EmbeddingError(f"{path}: not a readable .npy array ({type(err).__name__}: {err or 'empty file'})") \
            from None
    check_matrix(matrix, str(path))
    return matrix


def check_matrix(matrix: np.ndarray, name: str, dim: int | None = None) -> None:
    """Shape and dtype checks that are cheap enough to run on every input."""
    if not isinstance(matrix, np.ndarray):
        raise EmbeddingError(f"{name}: expected a numpy array, got {type(matrix).__name__}")
    if matrix.ndim != 2:
        raise EmbeddingError(f"{name}: expected a 2-D matrix (sentences x dims), got shape {matrix.shape}")
    if matrix.shape[0] == 0:
        raise EmbeddingError(f"{name}: no vectors (0 rows)")
    if matrix.shape[1] == 0:
        raise EmbeddingError(f"{name}: vectors have 0 dimensions")
    if matrix.dtype not in FLOAT_DTYPES:
        raise EmbeddingError(f"{name}: dtype {matrix.dtype} is not float16/float32/float64")
    if dim is not None and matrix.shape[1] != dim:
        raise EmbeddingError(f"{name}: vectors have {matrix.shape[1]} dimensions, expected {dim}")


def check_same_dim(a: np.ndarray, a_name: str, b: np.ndarray, b_name: str) -> None:
    check_matrix(a, a_name)
    check_matrix(b, b_name)
    if a.shape[1] != b.shape[1]:
        raise EmbeddingError(
            f"dimension mismatch: {a_name} has {a.shape[1]}-d vectors, {b_name} has {b.shape[1]}-d vectors"
        )


def check_finite(matrix: np.ndarray, name: str) -> None:
    """A NaN or an infinity anywhere in `matrix` is an error naming its first row (unit_rows finds the same
    from its norms, where it computes them anyway). Float16 rows (how embeddings are stored) by their exponent
    bits, all ones exactly for NaN and infinity: numpy's float16 isfinite is emulated, 4x slower on a shard."""
    if matrix.dtype == np.float16:
        bad = ((matrix.view(np.uint16) & FLOAT16_EXPONENT) == FLOAT16_EXPONENT).any(axis=-1)
    else:
        bad = ~np.isfinite(matrix).all(axis=-1)
    _raise_on_nonfinite(bad, name)


def _raise_on_nonfinite(bad: np.ndarray, name: str, first_row: int = 0) -> None:
    if bad.any():
        row = first_row + int(np.flatnonzero(bad)[0])
        raise EmbeddingError(f"{name}: row {row} contains NaN or infinite values")


def unit_rows(rows: np.ndarray, name: str, first_row: int = 0) -> np.ndarray:
    """Return `rows` as a float32 array of unit vectors (a new array); `first_row` is the index of rows[0] in its
    input."""
    rows = float32_copy(rows)  # a copy, divided in place: one float32 array where float16 rows made two
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    _raise_on_nonfinite(~np.isfinite(norms), name, first_row)
    zero = norms == 0
    if zero.any():
        _rescale_tiny_rows(rows, norms, zero)  # squares of values under ~1e-23 underflow float32: not zero rows
        zero = norms == 0
    if zero.any():
        row = first_row + int(np.flatnonzero(zero)[0])
        raise EmbeddingError(f"{name}: row {row} is a zero vector (it has no direction to compare)")
    rows /= norms[:, None]
    return rows


def _rescale_tiny_rows(rows: np.ndarray, norms: np.ndarray, zero: np.ndarray) -> None:
    """Rows whose norm underflowed to 0 but hold a value other than 0, scaled in place by their largest magnitude
    (a direction is all a unit row keeps), with their norms recomputed."""
    for i in np.flatnonzero(zero):
        scale = np.abs(rows[i]).max()
        if scale > 0:
            rows[i] /= scale
            norms[i] = np.sqrt(np.dot(rows[i], rows[i]))


def float32_copy(rows: np.ndarray) -> np.ndarray:
    """`rows` as a new float32 array. Float16 rows (how embeddings are stored) are widened by torch's vectorised
    conversion: numpy's is scalar (about 3 ns a value here, 4x torch's), and unit_rows widens every row of each
    k-NN group it compares. Widening is exact, so the bits are numpy's (tests/test_vectors.py, all 2^16 values)."""
    if rows.dtype != np.float16 or rows.size < FAST_WIDEN_MIN_VALUES:
        return np.array(rows, dtype=np.float32)
    import torch

    source = np.ascontiguousarray(rows)
    out = np.empty(source.shape, dtype=np.float32)
    with warnings.catch_warnings():  # a read-only source (a memory-mapped shard) is only read
        warnings.simplefilter("ignore", UserWarning)
        torch.from_numpy(out).copy_(torch.from_numpy(source))
    return out


def iter_unit_batches(
    matrix: np.ndarray, name: str, batch_size: int = DEFAULT_BATCH_SIZE
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (start_row, float32 unit rows) over `matrix`, one batch in memory at a time."""
    for start in range(0, matrix.shape[0], batch_size):
        yield start, unit_rows(matrix[start : start + batch_size], name, start)


def normalized(matrix: np.ndarray, name: str, batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
    """A float32 unit-row copy of the whole matrix (for sets small enough to hold)."""
    check_matrix(matrix, name)
    out = np.empty(matrix.shape, dtype=np.float32)
    for start, rows in iter_unit_batches(matrix, name, batch_size):
        out[start : start + len(rows)] = rows
    return out
