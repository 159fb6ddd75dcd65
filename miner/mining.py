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
from miner.index import KnnConfig, knn, knn_refined, resolve_factory
from miner.margin import MARGINS, default_ratio_floor, neighbourhood_mean, neighbourhoods, pair_margins
from miner.selection import SELECTIONS, Candidates, Pairs, select
from miner.thresholds import check_offsets
from miner.vectors import check_same_dim

log = logging.getLogger(__name__)

# Binary codes' nearest rescored by float vectors: 16 for k = 4 (the Hamming short list's recall of the float
# k-NN is what it buys; docs/evaluation.md, binary vectors).
RESCORE_CANDIDATES = 16


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
    # Per-language moves of the threshold for callers that know the languages (the pipeline, miner.mine,
    # mine_texts; miner/thresholds.py): None, "encoder" (the encoder folder's thresholds.json), a file, or a
    # {language: offset} mapping. `mine` itself, given vectors alone, applies `threshold` as it is.
    threshold_offsets: str | dict | None = field(default=None, hash=False)
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
        below = self.one_sided_below
        if below is not None and (isinstance(below, bool) or not isinstance(below, int) or below < 0):
            raise ValueError(f"mining.one_sided_below must be a sentence count (0 or more), got {below!r}")
        offsets = self.threshold_offsets
        if isinstance(offsets, dict):
            check_offsets(offsets, "mining.threshold_offsets")
        elif offsets is not None and (not isinstance(offsets, str) or not offsets):
            raise ValueError(f"mining.threshold_offsets must be 'encoder', a file or a mapping of language to "
                             f"offset, got {offsets!r}")
        floor = self.ratio_floor
        if floor != "auto" and (isinstance(floor, bool) or not isinstance(floor, (int, float)) or not floor > 0
                                or not math.isfinite(floor)):
            raise ValueError(f"mining.ratio_floor must be 'auto' or a positive finite number, got {floor!r}")

    def floor_for(self, dim: int) -> float:
        """The ratio margin's floor for vectors of `dim` dimensions."""
        return default_ratio_floor(dim) if self.ratio_floor == "auto" else float(self.ratio_floor)

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
    the code instead (miner.index.knn_refined), so margins are the float vectors' own."""
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
    use = neighbourhoods(len(src), len(tgt), config.one_sided_below)
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
    if refine is None:
        pairs = select(forward, backward, config.selection, config.threshold, config.min_cosine)
    else:
        if code != "sign":
            raise ValueError(f"refining selected pairs needs sign codes, not {code or 'float vectors'}")
        pairs = refine_pairs(select(forward, backward, config.selection, None, config.min_cosine),
                             forward, backward, refine, config, names)
    log.info("%s selection kept %d pairs (threshold %s)", config.selection, len(pairs), config.threshold)
    return pairs


def refine_pairs(pairs: Pairs, forward: Candidates, backward: Candidates, rotated: tuple[np.ndarray, np.ndarray],
                 config: MiningConfig, names: tuple[str, str] = ("source", "target")) -> Pairs:
    """The selected pairs with each similarity from one side's float row against the other's code, both ways
    (encoders.binary.two_way_cosine), and margins over the codes' own neighbourhoods, then `min_cosine` and the
    threshold. The k-NN and the neighbourhood means stay the codes': a float row is read only for a selected pair,
    and only the other side's 1-bit code has to meet it (the pipeline's cost model, docs/pipeline.md)."""
    from miner.margin import neighbourhoods, pair_margins

    for rows, ids, name in ((rotated[0], forward.ids, names[0]), (rotated[1], backward.ids, names[1])):
        if len(rows) != len(ids):
            raise ValueError(f"{name}: {len(rows)} float rows to refine pairs over {len(ids)} codes")
    cos = two_way_cosine(rotated[0][pairs.src], rotated[1][pairs.tgt])
    fwd_mean, bwd_mean = neighbourhood_mean(forward.cos), neighbourhood_mean(backward.cos)
    margins = pair_margins(cos, fwd_mean[pairs.src], bwd_mean[pairs.tgt], config.margin,
                           floor=config.floor_for(rotated[0].shape[1]),
                           use=neighbourhoods(len(forward.ids), len(backward.ids), config.one_sided_below))
    refined = Pairs(pairs.src, pairs.tgt, margins, cos)
    return refined.at_least_cosine(config.min_cosine).above(config.threshold).sorted()


def _check_keys(settings: dict, cls: type, section: str, exclude: set = frozenset()) -> None:
    known = {f.name for f in fields(cls)} - set(exclude)
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"unknown {section} setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
