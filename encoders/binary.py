"""Binary sentence vectors: one bit a dimension, packed 8 to a byte (16x fewer bytes than float16).

Two codes, and the similarity each is compared with:

    sign       b_i = [(H D v)_i > 0], any encoder   sim(a, b) = 1 - 2 hamming(a, b) / d      (the cosine of the +-1
                                                                                               vectors)
    threshold  b_i = [u_i > tau], a lens's ReLU +   sim(a, b) = |a & b| / sqrt(|a| |b|)       (the cosine of the 0/1
               max-pool features u (seed 001:                                                  vectors: sparse codes
               tau = 1.0, ~2.5% of units on)                                                   agree on what is on)

`sign` first removes the mean vector m_L of the sentences' language, when one is given (`center`): every
sentence of a language shares a component (its language's direction, about 6% of a unit vector's energy with the
default ensemble), which spends bits on what all of them have in common. On the train pool's held-out sets
(121 NTREX languages against English, 117 languages of short pairs) it took the sign code's loss against float
vectors from 3.2 to 1.5 points of xsim accuracy and from 2.8 to 1.7 (docs/evaluation.md, binary vectors). The
pipeline's embed stage measures m_L over all of a language's sentences in the crawl (`embed.binary_center:
language`, the default), summed in fixed point (`fixed_point_sum`) so that the mean, and so every bit, is the same
whichever worker summed which shard; `miner.evaluate` over each evaluated set. `encode(dtype="binary")` codes one
call's sentences with no language mean (an encoder does not see the collection).

`sign` then turns the vector by a fixed randomised Hadamard rotation (D: seeded random signs, H: the Walsh-
Hadamard matrix / sqrt(d); plain signs when d is not a power of two). The rotation keeps angles, and it spreads
each direction over all bits: without it, an ensemble member weighted 0 for a language gives a block of constant
bits, which adds a per-sentence bias to every Hamming similarity (figures: docs/evaluation.md, binary vectors).

Both similarities are cosines of a fixed real vector per code, so `unit_rows` turns packed codes into unit float
rows and every k-NN index, margin and threshold downstream works unchanged: binary vectors are what is stored and
shuffled, and are widened only where two blocks are compared. A threshold code with no unit on has no direction:
`threshold_bits` never makes one (a sentence with no unit over tau keeps its strongest unit), and `unit_rows` names
the row of one read from a file.
"""

from __future__ import annotations

import functools
import logging

import numpy as np

log = logging.getLogger(__name__)

SIGN_SEED = 20200727  # fixed forever: codes written by one run must compare with codes written by the next
CODES = ("sign", "threshold")
DTYPE = "binary"  # what encode(dtype=...) and the pipeline's embed.dtype call packed codes
CENTERS = ("language", "none")  # embed.binary_center: remove each language's mean before the sign code, or not
FIXED_POINT = float(1 << 24)   # fixed_point_sum's unit: float32's precision, so no vector's sum loses a bit


class BinaryVectorError(ValueError):
    """Packed codes that cannot be compared: wrong dtype or width, or a threshold code with no unit on."""


def pack(bits: np.ndarray) -> np.ndarray:
    """[n, d] booleans -> [n, d / 8] uint8 (d a multiple of 8), first dimension in the highest bit."""
    bits = np.asarray(bits, dtype=bool)
    if bits.ndim != 2 or bits.shape[1] % 8:
        raise BinaryVectorError(f"binary vectors need a 2-D array whose width is a multiple of 8, got {bits.shape}")
    return np.packbits(bits, axis=1)


def sign_bits(vectors: np.ndarray, center: np.ndarray | None = None) -> np.ndarray:
    """The sign code: [(H D (v - m))_i > 0] (module docstring), computed in float64; `center` is m (none: 0)."""
    return _rotated(vectors, center) > 0


def _rotated(vectors: np.ndarray, center: np.ndarray | None) -> np.ndarray:
    """H D (v - m), float64, H unnormalised (the scale does not change a sign); v - m where d is not a power of 2."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if center is not None:
        center = np.asarray(center, dtype=np.float64)
        if center.shape != vectors.shape[1:]:
            raise BinaryVectorError(f"a mean vector of shape {center.shape} cannot centre vectors of width "
                                    f"{vectors.shape[1]}")
        vectors = vectors - center
    dim = vectors.shape[1]
    if dim & (dim - 1):
        return vectors
    return (vectors * _random_signs(dim)) @ _hadamard(dim)


def rotated_rows(vectors: np.ndarray, center: np.ndarray | None = None) -> np.ndarray:
    """The unit float32 rows whose signs are the sign code (`sign_bits` with the same `center`): where float
    vectors are kept beside the codes, what `two_way_cosine` compares with the other side's code."""
    return _unit_rows32(_rotated(vectors, center))


def sign_code_and_rows(vectors: np.ndarray, center: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`pack(sign_bits(vectors, center))` and `rotated_rows(vectors, center)` from one rotation (the embed stage
    writes both with `embed.binary_refine`)."""
    rotated = _rotated(vectors, center)
    return pack(rotated > 0), _unit_rows32(rotated)


def _unit_rows32(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def two_way_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a_i, b_i) for paired `rotated_rows`, each row's float values against the other row's signs, both ways:

        c = (<a, sign b> + <b, sign a>) / 2 * sqrt(pi / (2 d))

    After the random rotation a unit vector's coordinates are close to Gaussian of variance 1/d, and for jointly
    Gaussian x, y of correlation rho, E[x sign y] = sqrt(2 / pi) rho sd(x): each inner product estimates the
    cosine with the noise of one side's signs only, where two codes' Hamming similarity carries both. Mining uses
    it for the pairs it selects (miner.mining.mine, `refine`): on the train pool's held-out news it took the codes'
    mining F1 from 60.2 to 63.4 against float vectors' 63.3 (docs/evaluation.md, binary vectors)."""
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    if a.shape != b.shape or a.ndim != 2:
        raise BinaryVectorError(f"two_way_cosine pairs rows of one shape, got {a.shape} and {b.shape}")
    return both_ways(one_way(a, pack(b > 0)), one_way(b, pack(a > 0)), a.shape[1])


def one_way(rows: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """<r_i, s_i>: turned float rows against the other side's signs, packed (`pack(rows > 0)` of its rows): half
    of `two_way_cosine`, which the pipeline computes where each side's rows are stored."""
    check_packed(signs, "signs", np.asarray(rows).shape[1])
    values = np.where(np.unpackbits(signs, axis=1) > 0, 1.0, -1.0).astype(np.float32)
    return np.einsum("ij,ij->i", np.asarray(rows, dtype=np.float32), values)


def both_ways(a_against_b: np.ndarray, b_against_a: np.ndarray, dim: int) -> np.ndarray:
    """The two `one_way` halves of a pair as the cosine's estimate (`two_way_cosine`)."""
    total = np.asarray(a_against_b, dtype=np.float32) + np.asarray(b_against_a, dtype=np.float32)
    return (total * np.float32(np.sqrt(np.pi / (2 * dim)) / 2)).astype(np.float32)


def fixed_point_sum(vectors: np.ndarray) -> np.ndarray:
    """Column sums of float vectors in fixed point (int64, units of 2^-24): integers add up to the same sum in any
    order, so a language's mean built from shards summed on different workers, in any grouping, is the same bits
    on every runner and every run (float sums are not). Unit vectors' components are at most 1, so 2^39 rows fit."""
    return np.rint(np.asarray(vectors, dtype=np.float64) * FIXED_POINT).astype(np.int64).sum(axis=0)


def mean_from_sum(total: np.ndarray, count: int) -> np.ndarray:
    """The mean vector (float64) from `fixed_point_sum`s added up over `count` rows."""
    if count <= 0:
        raise BinaryVectorError("a language mean needs at least one vector")
    return np.asarray(total, dtype=np.float64) / (FIXED_POINT * count)


def language_mean(vectors: np.ndarray) -> np.ndarray:
    """The mean of one language's vectors, as the pipeline computes it (fixed point: `fixed_point_sum`)."""
    return mean_from_sum(fixed_point_sum(vectors), len(vectors))


@functools.cache
def _random_signs(dim: int) -> np.ndarray:
    return np.where(np.random.default_rng(SIGN_SEED).random(dim) < 0.5, -1.0, 1.0)


@functools.cache
def _hadamard(dim: int) -> np.ndarray:
    """Sylvester's construction, unnormalised: the scale does not change a sign."""
    matrix = np.ones((1, 1))
    while matrix.shape[0] < dim:
        matrix = np.block([[matrix, matrix], [matrix, -matrix]])
    return matrix


def threshold_bits(features: np.ndarray, tau: float) -> np.ndarray:
    """The threshold code [u_i > tau] of non-negative features (a lens's ReLU + max-pool). A row with no unit over
    tau keeps its strongest unit instead: seed 001's code leaves such a sentence with no direction, so it could
    never be compared or mined (short sentences, whose maximum runs over few tokens, are the ones it happens to)."""
    features = np.asarray(features)
    bits = features > tau
    silent = np.flatnonzero(~bits.any(axis=1) & (features.max(axis=1) > 0))  # all-zero features: no direction
    if len(silent):
        bits[silent, features[silent].argmax(axis=1)] = True
        log.info("threshold code: %d of %d sentences had no unit over %g and keep their strongest unit",
                 len(silent), len(bits), tau)
    return bits


def is_binary(dtype) -> bool:
    """Whether an `encode(dtype=...)` asks for packed codes (a numpy dtype never does)."""
    return isinstance(dtype, str) and dtype == DTYPE


def as_dtype(vectors: np.ndarray, dtype) -> np.ndarray:
    """What an encoder's `encode(dtype=...)` returns: float rows cast, or packed sign codes for "binary"."""
    if is_binary(dtype):
        return pack(sign_bits(vectors))
    if np.dtype(dtype).kind != "f":  # int8 or bool would truncate unit rows to zeros and ones without a word
        raise ValueError(f"dtype: float16, float32, float64 or 'binary', got {np.dtype(dtype).name}")
    return vectors.astype(dtype, copy=False)


def cosine_estimate(sims: np.ndarray, code: str) -> np.ndarray:
    """What a code's similarity says of the float cosine, so that margins, thresholds and `min_cosine` tuned on
    float vectors hold: sign codes, SimHash's estimate (the angle is pi h / d, so cos = sin(pi s / 2)); threshold
    codes, the set cosine itself. Both are monotone: neighbours do not change, only the numbers margins use."""
    if code != "sign":
        return sims
    with np.errstate(invalid="ignore"):  # unfilled neighbour slots hold -inf, and keep it
        return np.where(np.isneginf(sims), sims, np.sin(np.float32(np.pi / 2) * sims)).astype(sims.dtype)


def exact_products(code: str | None, dim: int) -> bool:
    """Whether dot products of `unit_rows` of this code are exact in float32 whatever the summation order: sign
    codes whose widened values +-1 / sqrt(dim) are powers of two (dim = 4^m: 256, 1,024, 4,096 bits), so every
    product is +-1 / dim and every partial sum a multiple of it within [-1, 1]. A matrix product then gives each
    similarity the same bits as a pair-by-pair sum, however rows are blocked or grouped, and nothing need be
    recomputed (miner.knn_join.list_topk). Threshold codes divide by sqrt(|a| |b|) and float vectors round."""
    return code == "sign" and dim >= 1 and (dim & (dim - 1)) == 0 and dim.bit_length() % 2 == 1


def check_packed(packed: np.ndarray, name: str, dim: int | None = None) -> None:
    if not isinstance(packed, np.ndarray) or packed.dtype != np.uint8 or packed.ndim != 2:
        raise BinaryVectorError(f"{name}: binary vectors are a 2-D uint8 array, got "
                                f"{getattr(packed, 'dtype', type(packed).__name__)} {getattr(packed, 'shape', '')}")
    if dim is not None and packed.shape[1] * 8 != dim:
        raise BinaryVectorError(f"{name}: binary vectors of {packed.shape[1] * 8} bits, expected {dim}")


@functools.lru_cache(maxsize=8)
def _sign_byte_values(dim: int) -> np.ndarray:
    """[256, 8] float32: the +-1 / sqrt(dim) values of each byte's bits, most significant first (np.packbits)."""
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)
    table = (2 * bits - 1) / np.sqrt(np.float32(dim))
    table.flags.writeable = False
    return table


def unit_rows(packed: np.ndarray, code: str, name: str = "binary vectors", first_row: int = 0) -> np.ndarray:
    """float32 unit rows whose dot products are the code's similarity (module docstring)."""
    check_packed(packed, name)
    if code == "sign":  # one gather: each byte's 8 values at once (2x unpacking and scaling, the same bits)
        return _sign_byte_values(packed.shape[1] * 8)[packed].reshape(len(packed), -1)
    bits = np.unpackbits(packed, axis=1).astype(np.float32)
    if code != "threshold":
        raise BinaryVectorError(f"binary code {code!r} is not one of {', '.join(CODES)}")
    on = bits.sum(axis=1)
    if (on == 0).any():
        row = first_row + int(np.flatnonzero(on == 0)[0])
        raise BinaryVectorError(f"{name}: row {row} has no unit on (a threshold code with no direction)")
    return bits / np.sqrt(on)[:, None]
