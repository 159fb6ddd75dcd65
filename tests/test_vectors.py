"""Bad embeddings are errors that name the input and the row, never silently wrong scores."""

import numpy as np
import pytest

from miner.mining import mine
from miner.neighbours import knn
from miner.vectors import (
    FAST_WIDEN_MIN_VALUES,
    EmbeddingError,
    check_finite,
    float32_copy,
    load_embeddings,
    normalized,
    unit_rows,
)


def good(n=6, d=4, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_unit_rows_are_a_new_array_with_the_quotients_bits(dtype):
    """unit_rows divides its own float32 copy in place: the caller's rows are left as they were (float32 rows
    included), and each value is the row's float32 value over its norm, as a division into a new array gives."""
    rows = good(n=50, d=16).astype(dtype)
    kept = rows.copy()
    unit = unit_rows(rows, "rows")
    assert unit.dtype == np.float32 and unit is not rows and rows.tobytes() == kept.tobytes()
    wide = kept.astype(np.float32)
    assert unit.tobytes() == (wide / np.sqrt(np.einsum("ij,ij->i", wide, wide))[:, None]).tobytes()


def test_float16_rows_widen_to_numpys_bits_for_every_value():
    """Every one of the 2^16 float16 values (subnormals, both zeros, the infinities) widens to the float32 numpy
    gives, NaNs to NaNs; also from a read-only and from a strided source, and in rows too few for the fast path."""
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(256, 256)
    assert every.size >= FAST_WIDEN_MIN_VALUES
    expected = every.astype(np.float32)
    read_only = every.copy()
    read_only.flags.writeable = False
    for source in (every, read_only, every[:, ::2], every[:8, :8]):
        wide, want = float32_copy(source), np.asarray(source).astype(np.float32)
        assert wide.dtype == np.float32 and wide.shape == source.shape and np.shares_memory(wide, source) is False
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(wide), nan)
        assert wide[~nan].view(np.uint32).tolist() == want[~nan].view(np.uint32).tolist()
    assert np.isnan(expected).sum() == 2 * (2**10 - 1)  # all NaN patterns seen, none lost


def test_a_large_float16_block_is_made_unit_with_numpys_bits_and_its_bad_row_named():
    rows = good(n=2000, d=16, seed=3).astype(np.float16)
    wide = rows.astype(np.float32)
    assert unit_rows(rows, "rows").tobytes() == (wide / np.sqrt(np.einsum("ij,ij->i", wide, wide))[:, None]).tobytes()
    rows[1500, 3] = np.inf
    with pytest.raises(EmbeddingError, match="shard: row 1500 contains NaN or infinite"):
        unit_rows(rows, "shard")


def test_nan_row_named():
    x = good()
    x[3, 1] = np.nan
    with pytest.raises(EmbeddingError, match="source: row 3 contains NaN"):
        mine(x, good(seed=1))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_stored_float16_row_that_is_not_finite_is_named(bad):
    """Float16 rows are checked by their exponent bits: NaN and both infinities are caught, the largest finite
    values and subnormals are not."""
    x = good(n=8).astype(np.float16)
    x[0, 0], x[1, 1], x[2, 2] = np.finfo(np.float16).max, -np.finfo(np.float16).max, np.float16(6e-8)
    check_finite(x, "shard")
    x[5, 2] = bad
    with pytest.raises(EmbeddingError, match="shard: row 5 contains NaN or infinite"):
        check_finite(x, "shard")


def test_zero_row_named():
    y = good()
    y[4] = 0
    with pytest.raises(EmbeddingError, match="target: row 4 is a zero vector"):
        mine(good(), y)


def test_a_row_of_tiny_values_keeps_its_direction():
    """Squares of float32 values near 1e-30 underflow to 0: such a row has a direction, not a zero norm."""
    from miner.vectors import unit_rows

    rows = np.array([[3e-30, 4e-30, 0.0], [0.6, 0.8, 0.0]], dtype=np.float32)
    unit = unit_rows(rows, "tiny")
    np.testing.assert_allclose(unit[0], unit[1], rtol=1e-6)
    assert rows[0, 0] == np.float32(3e-30)  # the input is left as it was


def test_bad_row_in_a_later_batch_has_its_global_row_number():
    x = good(n=50)
    x[37] = np.inf
    with pytest.raises(EmbeddingError, match="row 37"):
        normalized(x, "big", batch_size=8)


def test_dimension_mismatch():
    with pytest.raises(EmbeddingError, match="dimension mismatch: source has 4-d vectors, target has 5-d"):
        mine(good(d=4), good(d=5))


@pytest.mark.parametrize("bad, message", [
    (np.zeros((0, 4), np.float32), "no vectors"),
    (np.zeros(4, np.float32), "2-D"),
    (np.zeros((3, 4), np.int32), "dtype int32"),
    ([[1.0, 0.0]], "numpy array"),
])
def test_unusable_matrices(bad, message):
    with pytest.raises(EmbeddingError, match=message):
        knn(bad, good(), 1)


def test_load_embeddings_refuses_pickles_and_missing_files(tmp_path):
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(EmbeddingError, match="objects.npy: not a readable .npy"):
        load_embeddings(tmp_path / "objects.npy")
    with pytest.raises(EmbeddingError, match="not found"):
        load_embeddings(tmp_path / "missing.npy")


def test_load_embeddings_memory_maps(tmp_path):
    np.save(tmp_path / "e.npy", good().astype(np.float16))
    matrix = load_embeddings(tmp_path / "e.npy")
    assert isinstance(matrix, np.memmap) and matrix.dtype == np.float16
    assert np.linalg.norm(normalized(matrix, "e"), axis=1) == pytest.approx(1, abs=1e-6)


@pytest.mark.parametrize("content", [b"", b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"])
def test_empty_and_truncated_npy_files_are_named(tmp_path, content):
    path = tmp_path / "broken.npy"
    path.write_bytes(content)
    with pytest.raises(EmbeddingError, match="broken.npy: not a readable .npy array"):
        load_embeddings(path)
