"""Step 4 of the pairs stage: each sentence's best candidate (forward for sources, backward for targets), the two
directions' choices joined by pair and kept as the selection mode says (miner.selection's modes); `max` (greedy
one-to-one) over a language pair's bests, two numbers a sentence, never its texts or vectors."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import apache_beam as beam
import numpy as np
from apache_beam import typehints as th
from apache_beam.metrics import Metrics

from miner.selection import Pairs, greedy_one_to_one
from pipelines.pairs.blocks import CandidateBlock, PairBlock, by_shard


@th.with_output_types(th.Any)
class BestCandidates(beam.DoFn):
    """A query shard's scored candidates -> each query's best (highest margin, then highest cosine, then smaller
    reference: deterministic), as pairs keyed by (pair, source shard), where the two directions' choices meet.
    Every query of the shard must be there: a shard with fewer is an error, never a bitext from partial groups."""

    def __init__(self, manifest: dict, keep_means: bool = False):
        self.manifest, self.keep_means = manifest, keep_means   # means: for refining pairs (RefinePairs)

    def process(self, element):
        (pair, side, shard), blocks = element
        found = CandidateBlock.concat(list(blocks))
        order = np.lexsort((found.refs, -found.sims, -found.scores, found.queries))
        queries = found.queries[order]
        first = order[np.r_[True, queries[1:] != queries[:-1]]]
        query_lang = pair[0] if side == "src" else pair[1]
        expected = self.manifest["languages"][query_lang]["shards"][shard]["rows"]
        if len(first) != expected:
            raise RuntimeError(f"{pair} {side} shard {shard}: {len(first)} of its {expected} queries have "
                               "candidates: the runner delivered the group incomplete")
        best = found.take(first)
        src, tgt = (best.queries, best.refs) if side == "src" else (best.refs, best.queries)
        chosen = np.full(len(src), 1 if side == "src" else 2, dtype=np.int8)
        means = None
        if self.keep_means:
            own, other = best.query_means, best.ref_means
            means = np.stack([own, other] if side == "src" else [other, own], axis=1)
        pairs = PairBlock(src, tgt, best.scores, best.sims, chosen, means=means)
        for src_shard, rows in by_shard(src):
            yield (pair, src_shard), pairs.take(rows)


def chosen_by_mode(mode: str, chosen_by: np.ndarray) -> np.ndarray:
    """Which pairs a selection mode keeps, from the directions that chose each (bit 1 forward, bit 2 backward)."""
    forward, backward = (chosen_by & 1) > 0, (chosen_by & 2) > 0
    return {"forward": forward, "backward": backward, "intersect": forward & backward}.get(mode, forward | backward)


@th.with_output_types(th.Tuple[th.Any, th.Any])
class Select(beam.DoFn):
    """One source shard's best candidates, both directions -> the pairs the selection mode keeps, once each.

    `max` keeps every candidate at or above the pair's threshold here; the one-to-one pass comes after, per
    language pair. Leaving out the candidates below the threshold first changes no pair it keeps: the greedy pass
    takes candidates best first, so whether one at or above the threshold is taken turns on better ones only, all
    above it too. The pass then holds a pair's likely translations, not every sentence's best guess."""

    def __init__(self, mode: str, thresholds: dict, min_cosine: float | None = None):
        self.mode, self.thresholds, self.min_cosine = mode, thresholds, min_cosine   # thresholds: by pair
        self.kept = Metrics.counter("pairs", "selected")
        self.below_floor = Metrics.counter("pairs", "below_min_cosine")

    def process(self, element):
        (pair, _), blocks = element
        found = PairBlock.concat(list(blocks))
        # forward first: a pair both directions chose has the same margin and cosine either way (the margin's
        # mean is symmetric, the cosine rescored pair by pair); which one is kept must not depend on the runner
        order = np.lexsort((found.chosen_by, found.tgt, found.src))
        src, tgt = found.src[order], found.tgt[order]
        starts = np.flatnonzero(np.r_[True, (src[1:] != src[:-1]) | (tgt[1:] != tgt[:-1])])
        unique = found.take(order[starts])
        unique = dataclasses.replace(unique, chosen_by=np.bitwise_or.reduceat(found.chosen_by[order], starts))
        keep = chosen_by_mode(self.mode, unique.chosen_by)
        if self.min_cosine is not None:  # before one-to-one, as miner.selection does
            low = keep & (unique.sim < self.min_cosine)
            self.below_floor.inc(int(low.sum()))
            keep &= ~low
        threshold = self.thresholds[pair]
        if threshold is not None:
            keep &= unique.score >= threshold
        self.kept.inc(int(keep.sum()))
        if keep.any():
            yield pair, unique.take(np.flatnonzero(keep))


def one_to_one(element, thresholds: dict) -> Iterable[tuple]:
    """The greedy one-to-one pass of `max` selection (miner.selection) over one language pair's candidates, then
    the pair's threshold (`thresholds`: by pair; Select left out the candidates below it already, where it knew it)."""
    pair, blocks = element
    threshold = thresholds[pair]
    candidates = PairBlock.concat(list(blocks)).best_first()
    _, src_dense = np.unique(candidates.src, return_inverse=True)
    _, tgt_dense = np.unique(candidates.tgt, return_inverse=True)
    accepted = np.sort(greedy_one_to_one(Pairs(src_dense, tgt_dense, candidates.score, candidates.sim)))
    if threshold is not None:
        accepted = accepted[candidates.score[accepted] >= threshold]
    if len(accepted):
        yield pair, candidates.take(accepted)
