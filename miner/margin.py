"""Margin scores (Artetxe & Schwenk 2019; ../shared/docs/METHODS.md §1).

Raw cosine is a poor mining score because it is not comparable across sentences: "hub" sentences are close to
everything. The margin divides (or subtracts) out how close each side is to its neighbourhood:

    fwd(x) = mean_{z in NN_k(x)} cos(x, z)       (x's k nearest targets; all of them when there are fewer than k)
    bwd(y) = mean_{z in NN_k(y)} cos(y, z)       (y's k nearest sources; likewise)
    margin(x, y) = f( cos(x, y), (fwd(x) + bwd(y)) / 2 )
    absolute: f(a, b) = a      distance: f(a, b) = a - b      ratio: f(a, b) = a / max(b, floor)

The ratio's floor. The ratio measures a pair against its neighbourhood, so it needs a neighbourhood mean that is
clearly a similarity. Cosines between unrelated directions in d dimensions scatter around 0 with standard deviation
1 / sqrt(d); a mean within two of those of zero (a language with fewer sentences than k, whose "neighbours" are
whatever is there; random or unrelated vectors) says nothing about scale, and dividing by it turned the least similar
pairs into the best (cosine 0.03 scored 31471). So the denominator is floored at `floor`, by default
2 / sqrt(d) (0.088 at d = 512; `ratio_floor` in the mining settings sets another, e.g. the cosine an encoder gives
unrelated sentences). Consequences: a pair whose cosine is at most the floor never scores above 1 (no better than its
neighbourhood, so no ratio threshold keeps it); every margin is at most 1 / floor; for fixed neighbourhoods the
margin still grows with the cosine; and neighbourhoods above the floor (all of them on real sentence vectors: the
lowest on the bundled sample is 0.21 at d = 512) score exactly as the unfloored ratio.
"""

from __future__ import annotations

import math

import numpy as np

MARGINS = ("ratio", "distance", "absolute")
# Standard deviations of a random cosine (1 / sqrt(d)) below which a neighbourhood mean is no scale for the ratio
RATIO_FLOOR_SIGMAS = 2.0


def check_margin(kind: str) -> None:
    if kind not in MARGINS:
        raise ValueError(f"unknown margin {kind!r}: choose one of {', '.join(MARGINS)}")


def default_ratio_floor(dim: int) -> float:
    """2 / sqrt(d): two standard deviations of the cosine between random directions in d dimensions."""
    return RATIO_FLOOR_SIGMAS / math.sqrt(dim)


def neighbourhood_mean(neighbour_sims: np.ndarray) -> np.ndarray:
    """fwd(x) or bwd(y): the mean cosine of each row's k nearest neighbours, shape [n]."""
    return neighbour_sims.mean(axis=1, dtype=np.float64).astype(np.float32)


def margin(cos: np.ndarray, mean_a: np.ndarray, mean_b: np.ndarray, kind: str = "ratio", *,
           floor: float) -> np.ndarray:
    """f(cos, (mean_a + mean_b) / 2), element-wise with numpy broadcasting; `floor` (> 0) bounds the ratio's
    denominator from below (module docstring)."""
    check_margin(kind)
    if kind == "absolute":
        return np.asarray(cos, dtype=np.float32).copy()
    neighbourhood = (np.asarray(mean_a, dtype=np.float32) + np.asarray(mean_b, dtype=np.float32)) / 2
    if kind == "distance":
        return (cos - neighbourhood).astype(np.float32)
    if not floor > 0:
        raise ValueError(f"the ratio margin's floor must be positive, got {floor!r}")
    # ratio: cos / max((fwd + bwd) / 2, floor)
    return (cos / np.maximum(neighbourhood, np.float32(floor))).astype(np.float32)


def candidate_margins(sims: np.ndarray, ids: np.ndarray, own_mean: np.ndarray, other_mean: np.ndarray,
                      kind: str = "ratio", *, floor: float) -> np.ndarray:
    """Margins of one direction's k-NN candidates: row i holds margin(i, ids[i, j]) for each neighbour j.

    `own_mean` is the neighbourhood mean of the query side (fwd for source queries), `other_mean` that of the
    side the ids point into.
    """
    return margin(sims, own_mean[:, None], other_mean[ids], kind, floor=floor)
