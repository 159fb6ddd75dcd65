"""Mining one language pair: k-NN both ways, margin scores, selection.

    pairs = mine(src_vectors, tgt_vectors, MiningConfig(k=4, margin="ratio", selection="max"))

The result holds row indices into the two inputs; mapping them back to texts is the caller's job.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, fields

import numpy as np

from encoders.binary import cosine_estimate, two_way_cosine
from miner.index import KnnConfig, resolve_factory
from miner.margin import MARGINS, default_ratio_floor, neighbourhood_mean, neighbourhoods, pair_margins, pool_shift
from miner.neighbours import knn, knn_refined
from miner.selection import SELECTIONS, Candidates, Pairs, select
from miner.thresholds import check_offsets
from miner.vectors import check_same_dim

log = logging.getLogger(__name__)

# Binary codes' nearest rescored by float vectors: 16 for k = 4 (the Hamming short list's recall of the float
# k-NN is what it buys; docs/evaluation.md, binary vectors).
RESCORE_CANDIDATES = 16


# MiningConfig(..., **BOTH_MEANS): both neighbourhood means at every size, as the margin was published; the size
# rules (one_sided_below, one_sided_ratio) off, for measures that must not depend on the sets' sizes
BOTH_MEANS = {"one_sided_below": 0, "one_sided_ratio": 0}
# The margin of every pair where a sentence's neighbourhood is its candidate alone (k = 1, or one sentence a side):
# its neighbourhood mean is that pair's cosine, so no ratio margin passes 1 nor distance margin 0, and a threshold
# above keeps nothing, in every language
ALONE_MARGIN = {"ratio": 1.0, "distance": 0.0}


@dataclass(frozen=True)
class MiningConfig:
    k: int = 4  # neighbours per sentence (4 is the reference BUCC setting; web miners use 16)
    margin: str = "ratio"
    selection: str = "max"
    threshold: float | None = None  # keep pairs with margin >= threshold; None keeps every selected pair
    # Candidates with a lower cosine are never pairs, whatever their margin: the ratio margin of unrelated
    # sentences grows large where a neighbourhood is tiny or dissimilar (a language with a handful of sentences).
    # Depends on the encoder, like the threshold; None: no floor.
    min_cosine: float | None = None
    # The ratio margin's smallest denominator (miner/margin.py): auto is 2 / sqrt(d), the noise level of cosines in
    # d dimensions; a number sets it (e.g. the cosine the encoder gives unrelated sentences).
    ratio_floor: float | str = "auto"
    # A pair whose one language has fewer sentences than this, and the other at least as many, takes its margins
    # over the small language's neighbourhoods alone (miner/margin.py, "Small pools"); 0 or None: both always.
    one_sided_below: int | None = 1000
    # ... and so does a pair whose other language has at least this many times its sentences (and at least
    # one_sided_below): a crawl's English beside its other languages (miner/margin.py, "Unequal pools"); 0 or None: off.
    # Above the BUCC sets' 1.9-2.7, so pools of like size keep both means.
    one_sided_ratio: float | None = 4.0
    # One-sided margins' threshold moves by pool_slope * ln(L / L0), L the large pool's sentences held within
    # pool_sizes = [L0, L1] (miner.margin.pool_shift; measured on the train pool's WMT sets up to L1)
    pool_slope: float = -0.035
    pool_sizes: tuple[int, int] = (2000, 60000)
    # Per-language moves of the threshold for callers that know the languages (the pipeline, miner.mine,
    # mine_texts; miner/thresholds.py): None, "encoder" (the encoder folder's thresholds.json), a file, or a
    # {language: offset} mapping. `mine` itself, given vectors alone, applies no offset (only pool_threshold).
    threshold_offsets: str | dict | None = field(default=None, hash=False)
    # The Beam pairs stage's `max` selection: a language pair that could have more candidates than this (one a
    # sentence of either side) passes them in rounds across workers rather than on one (pipelines/pairs/selection.py,
    # OneToOne: the same pairs); a worker holds about 103 bytes a candidate
    one_to_one_rows: int = 10_000_000
    knn: KnnConfig = field(default_factory=KnnConfig)

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"mining.k must be a positive integer, got {self.k!r}")
        if self.margin not in MARGINS:
            raise ValueError(f"mining.margin must be one of {', '.join(MARGINS)}, got {self.margin!r}")
        if self.selection not in SELECTIONS:
            raise ValueError(f"mining.selection must be one of {', '.join(SELECTIONS)}, got {self.selection!r}")
        for name in ("threshold", "min_cosine"):     # NaN compares false: a NaN threshold would keep no pair
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"mining.{name} must be a number, got {value!r}")
            if value is not None and not math.isfinite(value):
                raise ValueError(f"mining.{name} must be a finite number, got {value!r}")
        if self.margin == "absolute" and self.threshold is not None and self.threshold > 1:
            raise ValueError(f"mining.threshold {self.threshold} keeps no pair with margin absolute (a cosine, at "
                             "most 1); thresholds such as 1.35 are the ratio margin's: give one below 1")
        if self.margin == "distance" and self.threshold is not None and self.threshold > 1:
            log.warning("mining.threshold %s with margin distance (a cosine less its neighbourhoods' mean) keeps "
                        "almost no pair; thresholds such as 1.35 are the ratio margin's", self.threshold)
        below = self.one_sided_below
        if below is not None and (isinstance(below, bool) or not isinstance(below, int) or below < 0):
            raise ValueError(f"mining.one_sided_below must be a sentence count (0 or more), got {below!r}")
        ratio = self.one_sided_ratio
        if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, (int, float))
                                  or not (ratio == 0 or ratio > 1) or not math.isfinite(ratio)):
            raise ValueError(f"mining.one_sided_ratio must be a number above 1 (0 or None: off), got {ratio!r}")
        slope = self.pool_slope
        if isinstance(slope, bool) or not isinstance(slope, (int, float)) or not math.isfinite(slope):
            raise ValueError(f"mining.pool_slope must be a finite number, got {slope!r}")
        sizes = self.pool_sizes
        if (not isinstance(sizes, (list, tuple)) or len(sizes) != 2
                or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in sizes) or sizes[0] > sizes[1]):
            raise ValueError(f"mining.pool_sizes must be two sentence counts [L0, L1], 1 <= L0 <= L1, got {sizes!r}")
        object.__setattr__(self, "pool_sizes", tuple(sizes))   # a YAML list, kept hashable
        offsets = self.threshold_offsets
        if isinstance(offsets, dict):
            check_offsets(offsets, "mining.threshold_offsets")
        elif offsets is not None and (not isinstance(offsets, str) or not offsets):
            raise ValueError(f"mining.threshold_offsets must be 'encoder', a file or a mapping of language to "
                             f"offset, got {offsets!r}")
        rows = self.one_to_one_rows
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise ValueError(f"mining.one_to_one_rows must be a positive whole number of candidates, got {rows!r}")
        floor = self.ratio_floor
        if floor != "auto" and (isinstance(floor, bool) or not isinstance(floor, (int, float)) or not floor > 0
                                or not math.isfinite(floor)):
            raise ValueError(f"mining.ratio_floor must be 'auto' or a positive finite number, got {floor!r}")
        if self.min_cosine is not None and self.min_cosine > 1:
            raise ValueError(f"mining.min_cosine {self.min_cosine:g} is above every cosine (at most 1): no pair would "
                             "be kept")
        bound = ALONE_MARGIN.get(self.margin)
        if self.k == 1 and bound is not None and self.threshold is not None and self.threshold > bound:
            raise ValueError(f"mining.k 1 with the {self.margin} margin scores no pair above {bound:g}, so "
                             f"mining.threshold {self.threshold:g} would keep none: use k 2 or more (4 is the "
                             f"tuned setting), the absolute margin, or a threshold of at most {bound:g}")

    def floor_for(self, dim: int) -> float:
        """The ratio margin's floor for vectors of `dim` dimensions."""
        return default_ratio_floor(dim) if self.ratio_floor == "auto" else float(self.ratio_floor)

    def neighbourhoods(self, n_src: int, n_tgt: int) -> str:
        """Whose neighbourhood means make the margins of n_src x n_tgt sentences (miner.margin.neighbourhoods)."""
        return neighbourhoods(n_src, n_tgt, self.one_sided_below, self.one_sided_ratio)

    def pool_threshold(self, threshold: float | None, n_src: int, n_tgt: int) -> float | None:
        """`threshold` (this config's, or a pair's) moved for the pool one-sided margins were taken in
        (miner.margin.pool_shift); None stays None. A small pool (under one_sided_below) keeps it: in a crawl
        those are mostly misidentified fragments, where precision is what the threshold is for."""
        if threshold is None or min(n_src, n_tgt) < (self.one_sided_below or 0):
            return threshold
        use = self.neighbourhoods(n_src, n_tgt)
        return float(threshold) + pool_shift(n_src, n_tgt, use, self.pool_slope, self.pool_sizes)

    @classmethod
    def from_dict(cls, mining: dict, knn_settings: dict | None = None) -> MiningConfig:
        _check_keys(mining, cls, "mining", exclude={"knn"})
        _check_keys(knn_settings or {}, KnnConfig, "knn")
        return cls(**mining, knn=KnnConfig(**(knn_settings or {})))

    def describe(self, n_src: int | None = None, n_tgt: int | None = None) -> dict:
        """The settings to publish beside any figure mined with them; with the set sizes, the index resolved."""
        index = self.knn.index
        if index == "auto" and n_src and n_tgt:
            fwd, bwd = resolve_factory(self.knn, n_tgt), resolve_factory(self.knn, n_src)
            index = fwd if fwd == bwd else f"{fwd} (source->target), {bwd} (target->source)"
        return {
            "k": self.k,
            "margin": self.margin,
            "selection": self.selection,
            "threshold": self.threshold,
            "min_cosine": self.min_cosine,
            "ratio_floor": self.ratio_floor,
            "one_sided_below": self.one_sided_below,
            "one_sided_ratio": self.one_sided_ratio,
            "pool_slope": self.pool_slope,
            "pool_sizes": list(self.pool_sizes),
            "threshold_offsets": self.threshold_offsets,
            "index": index,
            "nprobe": self.knn.nprobe,
        }


def score_neighbours(src: np.ndarray, tgt: np.ndarray, config: MiningConfig = MiningConfig(),
                     names: tuple[str, str] = ("source", "target"), code: str | None = None,
                     exact: tuple[np.ndarray, np.ndarray] | None = None, candidates: int = RESCORE_CANDIDATES,
                     ) -> tuple[Candidates, Candidates]:
    """Forward (source -> target) and backward (target -> source) k-NN candidates with their margins. `code`:
    the rows are a binary code's unit rows (encoders.binary), whose similarities become cosine estimates first;
    `exact`: the float vectors of those rows (source's, target's), which rank and score the `candidates` nearest by
    the code instead (miner.neighbours.knn_refined), so margins are the float vectors' own."""
    check_same_dim(src, names[0], tgt, names[1])
    started = time.perf_counter()
    if exact is not None:
        fwd_sims, fwd_ids = knn_refined(src, tgt, config.k, candidates, exact, config.knn, names)
        bwd_sims, bwd_ids = knn_refined(tgt, src, config.k, candidates, exact[::-1], config.knn, names[::-1])
    else:
        fwd_sims, fwd_ids = knn(src, tgt, config.k, config.knn, names)
        bwd_sims, bwd_ids = knn(tgt, src, config.k, config.knn, names[::-1])
        if code:
            fwd_sims, bwd_sims = cosine_estimate(fwd_sims, code), cosine_estimate(bwd_sims, code)
    fwd_mean, bwd_mean = neighbourhood_mean(fwd_sims), neighbourhood_mean(bwd_sims)
    floor = config.floor_for(src.shape[1])
    use = config.neighbourhoods(len(src), len(tgt))
    forward = Candidates(fwd_ids, pair_margins(fwd_sims, fwd_mean[:, None], bwd_mean[fwd_ids], config.margin,
                                               floor=floor, use=use), fwd_sims)
    backward = Candidates(bwd_ids, pair_margins(bwd_sims, fwd_mean[bwd_ids], bwd_mean[:, None], config.margin,
                                                floor=floor, use=use), bwd_sims)
    log.info("k-NN and margins for %d x %d sentences in %.1fs", len(src), len(tgt), time.perf_counter() - started)
    return forward, backward


def mine(src: np.ndarray, tgt: np.ndarray, config: MiningConfig = MiningConfig(),
         names: tuple[str, str] = ("source", "target"), code: str | None = None,
         exact: tuple[np.ndarray, np.ndarray] | None = None, candidates: int = RESCORE_CANDIDATES,
         refine: tuple[np.ndarray, np.ndarray] | None = None) -> Pairs:
    """Sentence pairs (row indices into src and tgt) with their margins, best first (`code`, `exact`,
    `candidates`: score_neighbours). `refine`, for sign codes: each side's encoders.binary.rotated_rows (the
    float vectors the codes were made from); the selected pairs' similarities then become the two-way estimate
    (refine_pairs) before the threshold."""
    forward, backward = score_neighbours(src, tgt, config, names, code, exact, candidates)
    threshold = config.pool_threshold(config.threshold, len(src), len(tgt))
    bound = ALONE_MARGIN.get(config.margin)
    if len(src) == 1 and len(tgt) == 1 and bound is not None and threshold is not None and threshold > bound:
        log.warning("one sentence on each side: its %s margin is %g whatever the two say, so threshold %g keeps "
                    "nothing; score single pairs by cosine (mining.margin: absolute) or mine them among others",
                    config.margin, bound, threshold)
    if refine is None:
        pairs = select(forward, backward, config.selection, threshold, config.min_cosine)
    else:
        if code != "sign":
            raise ValueError(f"refining selected pairs needs sign codes, not {code or 'float vectors'}")
        pairs = refine_pairs(select(forward, backward, config.selection, None, config.min_cosine),
                             forward, backward, refine, config, names)
    log.info("%s selection kept %d pairs (threshold %s)", config.selection, len(pairs), threshold)
    return pairs


def refine_pairs(pairs: Pairs, forward: Candidates, backward: Candidates, rotated: tuple[np.ndarray, np.ndarray],
                 config: MiningConfig, names: tuple[str, str] = ("source", "target")) -> Pairs:
    """The selected pairs with each similarity from one side's float row against the other's code, both ways
    (encoders.binary.two_way_cosine), and margins over the codes' own neighbourhoods, then `min_cosine` and the
    threshold. The k-NN and the neighbourhood means stay the codes': a float row is read only for a selected pair,
    and only the other side's 1-bit code has to meet it (the pipeline's cost model, docs/pipeline.md)."""
    for rows, ids, name in ((rotated[0], forward.ids, names[0]), (rotated[1], backward.ids, names[1])):
        if len(rows) != len(ids):
            raise ValueError(f"{name}: {len(rows)} float rows to refine pairs over {len(ids)} codes")
    cos = two_way_cosine(rotated[0][pairs.src], rotated[1][pairs.tgt])
    fwd_mean, bwd_mean = neighbourhood_mean(forward.cos), neighbourhood_mean(backward.cos)
    margins = pair_margins(cos, fwd_mean[pairs.src], bwd_mean[pairs.tgt], config.margin,
                           floor=config.floor_for(rotated[0].shape[1]),
                           use=config.neighbourhoods(len(forward.ids), len(backward.ids)))
    refined = Pairs(pairs.src, pairs.tgt, margins, cos)
    threshold = config.pool_threshold(config.threshold, len(forward.ids), len(backward.ids))
    return refined.at_least_cosine(config.min_cosine).above(threshold).sorted()


def _check_keys(settings: dict, cls: type, section: str, exclude: set = frozenset()) -> None:
    known = {f.name for f in fields(cls)} - set(exclude)
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"unknown {section} setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
