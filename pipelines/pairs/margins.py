"""Step 3 of the pairs stage: each candidate's ratio (or distance) margin, margin(x, y) = f(cos(x, y), (fwd(x) +
bwd(y)) / 2) with fwd and bwd the means of each side's k similarities (miner.margin; METHODS §1), or over the
small side's means alone where one language's pool is small, or many times smaller, and the other's is not
(miner.margin, "Small pools", "Unequal pools").
A candidate needs the other side's mean, so candidates meet the means by key: the only place the two directions
meet."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import apache_beam as beam
import numpy as np
from apache_beam import typehints as th

from miner.margin import neighbourhood_mean, pair_margins
from miner.mining import MiningConfig
from pipelines.pairs.blocks import CandidateBlock, MeanBlock, by_shard
from pipelines.pairs.plan import vector_width


def to_margin_join(element) -> Iterable[tuple]:
    """A query shard's k-NN table -> its queries' means, keyed by the shard, and its candidates, keyed by the
    shard of the neighbour each points at (in the other direction's keys): the margin of a candidate (x, y) needs
    the query's mean, which travels with it, and the neighbour's, which lives with the neighbour's own table."""
    (pair, side, shard), table = element
    if not (table.refs >= 0).all():
        raise RuntimeError(f"{pair} {side} shard {shard}: a k-NN table with unfilled neighbours reached the margins")
    means = neighbourhood_mean(table.sims)
    yield (pair, side, shard), MeanBlock(table.queries, means)
    k = table.sims.shape[1]
    candidates = CandidateBlock(np.repeat(table.queries, k), table.refs.ravel(), table.sims.ravel(),
                                np.repeat(means, k))
    other = "tgt" if side == "src" else "src"
    for neighbour_shard, rows in by_shard(candidates.refs):
        yield (pair, other, neighbour_shard), candidates.take(rows)


@th.with_output_types(th.Any)
class ScoreCandidates(beam.DoFn):
    """(pair, side, shard) with its sentences' means and the candidates pointing at them -> the candidates'
    margins (miner.margin), keyed by the query shard they belong to. A candidate pointing at a sentence whose mean
    did not arrive is an error naming the shard, never a margin over a wrong mean."""

    def __init__(self, kind: str, floor: float, uses: dict[tuple[str, str], str]):
        self.kind, self.floor, self.uses = kind, floor, uses   # uses: neighbourhoods_by_pair

    def process(self, element):
        (pair, side, shard), blocks = element
        blocks = list(blocks)
        mean_blocks = [b for b in blocks if isinstance(b, MeanBlock)]
        candidates = [b for b in blocks if isinstance(b, CandidateBlock)]
        if not candidates:
            return
        refs = np.concatenate([b.refs for b in mean_blocks]) if mean_blocks else np.empty(0, np.int64)
        means = np.concatenate([b.means for b in mean_blocks]) if mean_blocks else np.empty(0, np.float32)
        order = np.argsort(refs, kind="stable")
        refs, means = refs[order], means[order]
        found = CandidateBlock.concat(candidates)
        at = np.minimum(np.searchsorted(refs, found.refs), max(len(refs) - 1, 0))
        if not len(refs) or (refs[at] != found.refs).any():
            raise RuntimeError(f"{pair} {side} shard {shard}: candidates point at sentences whose neighbourhood "
                               "mean did not arrive: the runner delivered the group incomplete")
        # the neighbours are this side's sentences, the queries the other side's
        src_means, tgt_means = (means[at], found.query_means) if side == "src" else (found.query_means, means[at])
        scores = pair_margins(found.sims, src_means, tgt_means, self.kind, floor=self.floor, use=self.uses[pair])
        scored = dataclasses.replace(found, scores=scores, ref_means=means[at])
        query_side = "tgt" if side == "src" else "src"
        for query_shard, rows in by_shard(scored.queries):
            yield (pair, query_side, query_shard), scored.take(rows)


def neighbourhoods_by_pair(manifest: dict, pairs: list[tuple[str, str]], config: MiningConfig) -> dict:
    """Each pair's miner.margin.neighbourhoods, from its two languages' sizes."""
    rows = {lang: entry["rows"] for lang, entry in manifest["languages"].items()}
    return {pair: config.neighbourhoods(rows[pair[0]], rows[pair[1]]) for pair in pairs}


def ratio_floor(config: MiningConfig, manifest: dict) -> float:
    """The ratio margin's floor, from the vectors' dimension (one encoder: the same in every language)."""
    return config.floor_for(vector_width(manifest))
