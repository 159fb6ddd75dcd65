"""Margin scores (Artetxe & Schwenk 2019; ../shared/docs/METHODS.md §1).

Raw cosine is a poor mining score because it is not comparable across sentences: "hub" sentences are close to
everything. The margin divides (or subtracts) out how close each side is to its neighbourhood:

    fwd(x) = mean_{z in NN_k(x)} cos(x, z)       (x's k nearest targets)
    bwd(y) = mean_{z in NN_k(y)} cos(y, z)       (y's k nearest sources)
    margin(x, y) = f( cos(x, y), (fwd(x) + bwd(y)) / 2 )
    absolute: f(a, b) = a      distance: f(a, b) = a - b      ratio: f(a, b) = a / b
"""

from __future__ import annotations

import numpy as np

MARGINS = ("ratio", "distance", "absolute")
# Smallest neighbourhood mean the ratio divides by: a mean <= 0 (vectors unlike anything) would flip the ratio's
# sign and turn the least similar pairs into the best ones.
MIN_RATIO_DENOMINATOR = 1e-6


def check_margin(kind: str) -> None:
    if kind not in MARGINS:
        raise ValueError(f"unknown margin {kind!r}: choose one of {', '.join(MARGINS)}")


def neighbourhood_mean(neighbour_sims: np.ndarray) -> np.ndarray:
    """fwd(x) or bwd(y): the mean cosine of each row's k nearest neighbours, shape [n]."""
    return neighbour_sims.mean(axis=1, dtype=np.float64).astype(np.float32)


def margin(cos: np.ndarray, mean_a: np.ndarray, mean_b: np.ndarray, kind: str = "ratio") -> np.ndarray:
    """f(cos, (mean_a + mean_b) / 2), element-wise with numpy broadcasting."""
    check_margin(kind)
    if kind == "absolute":
        return np.asarray(cos, dtype=np.float32).copy()
    neighbourhood = (mean_a + mean_b) / 2
    if kind == "distance":
        return (cos - neighbourhood).astype(np.float32)
    return (cos / np.maximum(neighbourhood, MIN_RATIO_DENOMINATOR)).astype(np.float32)


def candidate_margins(
    sims: np.ndarray, ids: np.ndarray, own_mean: np.ndarray, other_mean: np.ndarray, kind: str = "ratio"
) -> np.ndarray:
    """Margins of one direction's k-NN candidates: row i holds margin(i, ids[i, j]) for each neighbour j.

    `own_mean` is the neighbourhood mean of the query side (fwd for source queries), `other_mean` that of the
    side the ids point into.
    """
    return margin(sims, own_mean[:, None], other_mean[ids], kind)
