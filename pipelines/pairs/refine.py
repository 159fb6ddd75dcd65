"""Step 4b of the pairs stage, with `embed.binary_refine` (sign codes): the selected pairs scored again, each side's
turned float row (read where it is stored) against the other side's signs (the only thing that travels), as
miner.mining.refine_pairs does on one machine; the threshold applies after."""

from __future__ import annotations

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from encoders import binary
from miner.margin import pair_margins
from miner.mining import MiningConfig
from pipelines.pairs.blocks import NO_SHARD, PairBlock, by_sentence_shard
from pipelines.pairs.selection import count_below
from pipelines.pairs.shards import ROW_MASK, read_language_shard, read_rotated

SIGNS, HALF = "_signs", "_half"   # carried while refining, dropped after


def refined_by_rows(manifest: dict, pairs: list[tuple[str, str]]) -> bool:
    """Whether the embed stage kept turned float rows beside every mined language's codes (embed.binary_refine)."""
    languages = {language for pair in pairs for language in pair}
    entries = [manifest["languages"][language] for language in languages if language in manifest["languages"]]
    return bool(entries) and all(shard.get("rotated") for entry in entries for shard in entry["shards"])


class RefineSide(beam.DoFn):
    """Pairs grouped by one side's embedding shard (the sentence shard's position) -> the pairs with that side's
    part of the two-way estimate (encoders.binary.two_way_cosine), the side's turned rows read from storage, never
    shuffled: first the target's stored sign codes are attached (`first`), then the source's rows meet them and
    leave their own signs (`middle`), then the target's rows meet those (`last`): the pair's similarity and margin
    are final, and `min_cosine` and the threshold apply. Only signs travel: d / 8 bytes a side of a selected pair."""

    def __init__(self, manifest: dict, side: str, step: str, uses: dict, kind: str = "ratio", floor: float = 0.0,
                 min_cosine: float | None = None, thresholds: dict | None = None):
        self.manifest, self.side, self.step, self.uses = manifest, side, step, uses  # uses: neighbourhoods by pair
        self.kind, self.floor, self.min_cosine = kind, floor, min_cosine
        self.thresholds = thresholds or {}   # by pair; a pair without one keeps every refined pair
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")
        self.refined = Metrics.counter("pairs", "refined")   # pairs scored again: two sign codes travelled each

    def process(self, element):
        (language, shard), blocks = element
        if shard == NO_SHARD:  # empty blocks: nothing to read or refine, their pairs go on
            yield from blocks
            return
        entry = self.manifest["languages"][language]
        if self.step == "first":  # the stored sign codes are these signs, at a sixteenth of the rows' bytes
            codes = read_language_shard(entry, shard, self.bytes_read)
            for pair, pairs in blocks:
                own = pairs.src if self.side == "src" else pairs.tgt
                yield pair, pairs.with_columns({SIGNS: codes[own & ROW_MASK]})
            return
        rows_all = read_rotated(entry, shard, self.bytes_read)
        for pair, pairs in blocks:
            rows = rows_all[(pairs.src if self.side == "src" else pairs.tgt) & ROW_MASK]
            half = binary.one_way(rows, pairs.carried[SIGNS])
            if self.step == "middle":
                yield pair, pairs.with_columns({SIGNS: binary.pack(rows > 0), HALF: half})
                continue
            cos = binary.both_ways(np.asarray(pairs.carried[HALF], np.float32), half, rows.shape[1])
            self.refined.inc(len(cos))
            score = pair_margins(cos, pairs.means[:, 0], pairs.means[:, 1], self.kind, floor=self.floor,
                                 use=self.uses[pair])
            carried = {name: column for name, column in pairs.carried.items() if name not in (SIGNS, HALF)}
            refined = PairBlock(pairs.src, pairs.tgt, score, cos, pairs.chosen_by, carried, pairs.means)
            keep = np.ones(len(refined), dtype=bool)
            if self.min_cosine is not None:
                low = cos < self.min_cosine
                count_below(pair, "below_min_cosine", int(low.sum()))
                keep &= ~low
            threshold = self.thresholds.get(pair)
            if threshold is not None:
                below = keep & (score < threshold)
                count_below(pair, "below_threshold", int(below.sum()))
                keep &= ~below
            yield pair, refined.take(np.flatnonzero(keep))   # none kept: the pair is still written


class RefinePairs(beam.PTransform):
    """(pair, PairBlock) selected by the codes -> the same pairs with similarities from each side's turned float
    rows against the other side's signs (miner.mining.refine_pairs, as the library does it on one machine), then
    `min_cosine` and the threshold; three groupings of the pairs, by target, source and target shard."""

    def __init__(self, manifest: dict, config: MiningConfig, floor: float, uses: dict, thresholds: dict):
        super().__init__()
        self.manifest, self.config, self.floor, self.uses = manifest, config, floor, uses  # uses: by pair
        self.thresholds = thresholds   # by pair

    def expand(self, pairs):
        config = self.config
        for name, side, step in (("Signs", "tgt", "first"), ("Half", "src", "middle"), ("Both", "tgt", "last")):
            pairs = (pairs
                     | f"Refine{name}ByShard" >> beam.FlatMap(by_sentence_shard(side))
                     | f"Refine{name}Group" >> beam.GroupByKey()
                     | f"Refine{name}" >> beam.ParDo(RefineSide(self.manifest, side, step, self.uses, config.margin,
                                                                self.floor, config.min_cosine, self.thresholds)))
        return pairs
