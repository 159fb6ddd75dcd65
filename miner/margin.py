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

Small pools. A sentence's k nearest among a few hundred sentences are further away than among thousands, so a
neighbourhood mean taken in a small pool runs low and every margin over it runs high: on the dev pool's BUCC-style
sets, at the threshold tuned on whole sets (2,100-3,000 sentences a language against 5,600 English), cutting the
non-English side to 30-300 sentences took precision from 94-97% to 10-71% (bench/small_pools.py; a crawl's small
languages, mostly misidentified fragments, mined junk this way). Where one language of a pair has fewer than
`one_sided_below` sentences and the other at least that many, the margin takes the small language's sentences'
neighbourhoods alone, their k nearest in the large pool (`neighbourhoods`):

    margin(x, y) = f( cos(x, y), fwd(x) )    (a small source; bwd(y) for a small target)

Pools both small or both large keep both means, as published: where both are small neither is the better scale.
Where both hold under TINY_POOLS sentences, a sentence's k nearest are a large share of the other pool, its
neighbourhood mean that of unrelated text, and every margin over it runs high: 4.6-13.1 wrong pairs per 100
sentences where none is translated, and under ten sentences a side no threshold removes them (bench/tiny_pools.py;
docs/evaluation.md, "Both pools tiny"). The commands say so beside such a pair; no rule is applied, because the
right one depends on how much of the pools is translated, which a crawl does not tell.

Unequal pools. A crawl's English outnumbers most of its languages 10 to 1,000 times, and the small-pool effect holds
there too: y's k nearest among a language R times smaller than English run low and lift the margins over them. On
the train pool's WMT sets (n sentences of a language, a tenth of them with their English among R x n English; 24
languages), both means lost precision as R grew (the teacher's languages 88% at R = 2, 72% at R = 60),
while margins over the small side's neighbourhoods alone kept a better best F1 (66.6 against 63.1 at R = 60). So
a pair whose large pool has at least `one_sided_ratio` times the small one's sentences (and at least
`one_sided_below` of them) takes the small side's neighbourhoods too. Those margins have a scale of their own: fwd(x)
rises with the size L of the pool it is taken in, so the best threshold falls as L grows, the same in every language
(0.09 lower at L = 20,000 than at 2,000, spread 0.02-0.03 over languages) and whatever the small side's size
(250-2,000 sentences: the same best threshold at the same L). A one-sided pair is therefore mined at

    threshold + pool_slope * ln(L / L0)        (L held within pool_sizes = [L0, L1]: the range measured)

(`pool_shift`; docs/evaluation.md, "English that outnumbers the other language"). Small pools (under
`one_sided_below`) keep the threshold as it is: in a crawl they are mostly misidentified fragments, where the
threshold is there for precision, and any move down costs it.
"""

from __future__ import annotations

import math

import numpy as np

MARGINS = ("ratio", "distance", "absolute")
TINY_POOLS = 30  # sentences a side under which, both sides that small, margins rank unrelated pairs high too
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


def neighbourhoods(n_src: int, n_tgt: int, one_sided_below: int | None, one_sided_ratio: float | None = None
                   ) -> str:
    """Whose neighbourhood means make a pair's margins: "both" (fwd(x) and bwd(y)), or "src" (fwd(x) alone) or
    "tgt" (bwd(y) alone) where that side has fewer than `one_sided_below` sentences and the other at least that
    many, or where the other has at least `one_sided_ratio` times as many (and at least `one_sided_below`; module
    docstring; None or 0: that rule is off)."""
    small, large = min(n_src, n_tgt), max(n_src, n_tgt)
    below = bool(one_sided_below) and small < one_sided_below <= large
    outnumbered = bool(one_sided_ratio) and 0 < small and large >= one_sided_ratio * small \
        and large >= (one_sided_below or 0)
    if not (below or outnumbered):
        return "both"
    return "src" if n_src < n_tgt else "tgt"


def pool_shift(n_src: int, n_tgt: int, use: str, slope: float, sizes: tuple[int, int]) -> float:
    """How far a pair's threshold moves for the pool its one-sided margins' neighbourhoods were taken in:
    slope * ln(L / L0), L the large side's sentences held within `sizes` (L0, L1); 0 where both means count."""
    if use == "both" or not slope:
        return 0.0
    low, high = sizes
    pool = n_tgt if use == "src" else n_src
    # ln L: fwd(x), the mean of x's k nearest, rises about evenly per doubling of the pool (module docstring)
    return float(slope) * math.log(min(max(pool, low), high) / low)


def pair_margins(cos: np.ndarray, src_means: np.ndarray, tgt_means: np.ndarray, kind: str = "ratio", *,
                 floor: float, use: str = "both") -> np.ndarray:
    """margin() of pairs from each side's neighbourhood means, `use` (neighbourhoods) saying which of them count."""
    if use not in ("both", "src", "tgt"):
        raise ValueError(f"neighbourhoods must be both, src or tgt, got {use!r}")
    if use == "src":
        tgt_means = src_means
    elif use == "tgt":
        src_means = tgt_means
    return margin(cos, src_means, tgt_means, kind, floor=floor)


def candidate_margins(sims: np.ndarray, ids: np.ndarray, own_mean: np.ndarray, other_mean: np.ndarray,
                      kind: str = "ratio", *, floor: float) -> np.ndarray:
    """Margins of one direction's k-NN candidates: row i holds margin(i, ids[i, j]) for each neighbour j.

    `own_mean` is the neighbourhood mean of the query side (fwd for source queries), `other_mean` that of the
    side the ids point into.
    """
    return margin(sims, own_mean[:, None], other_mean[ids], kind, floor=floor)
