"""A raised threshold over a finished pairs stage (pipelines.job runs the stage so where a higher
`mining.threshold` is the one change since it finished): the bitext at the higher threshold holds exactly the
finished bitext's rows at or above each pair's new threshold, in every selection mode (the greedy one-to-one pass's
choices above a threshold turn on better candidates only; the other modes decide each pair alone). So the rows are
read back and filtered, no k-NN join, and written as the stage writes them (WriteBitextParts: its files and parts
by score range are what a run of the whole stage at the higher threshold writes, byte for byte)."""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.metrics import Metrics

from pipelines import layout, storage
from pipelines.pairs.blocks import CARRIED, PairBlock, empty_pairs
from pipelines.pairs.output import WriteBitextParts
from pipelines.pairs.selection import count_below


def finished_rows(table: pa.Table, first: int) -> PairBlock:
    """A finished bitext part's rows as the stage's pairs, numbered from `first` in the file's order (best first):
    sorted again by score and then that number (PairBlock.best_first), they keep it."""
    rows = np.arange(first, first + table.num_rows, dtype=np.int64)
    carried = {f"{side}_{column}": table[f"{side}_{column}"].combine_chunks()
               for side in ("src", "tgt") for column in CARRIED}
    return PairBlock(rows, np.zeros_like(rows), table["score"].to_numpy().astype(np.float32, copy=False),
                     table["cosine"].to_numpy().astype(np.float32, copy=False), np.zeros(len(rows), np.int8), carried)


def rows_at_or_above(task: tuple, thresholds: dict, passed: tuple[str, ...] = ()) -> list[tuple]:
    """(pair, its finished Parquet files in part order) -> (pair, its rows at or above its new threshold in
    `thresholds`), a part at a time, and an empty block: a pair left without pairs is written too. The rows below are
    counted in the pair's `below_threshold` counter, as the stage counts what its threshold leaves out, and taken
    off the `pairs` counters in `passed` (those the finished run counted them in as they passed a step after the
    threshold: `selected`, `filter/kept`), so the counters are a whole run's at the new threshold. The
    thresholds travel with the function, not in the elements, so each keeps the type the stage's selection compares
    with (a numpy float is compared in its own precision, a Python float in the scores')."""
    pair, files = task
    threshold = thresholds[pair]
    out, first, dropped = [(pair, empty_pairs())], 0, 0
    for path in files:
        block = finished_rows(storage.read_parquet(path), first)
        first += len(block)
        keep = block.score >= threshold  # the comparison Select and the one-to-one pass make
        dropped += int((~keep).sum())
        if keep.any():
            out.append((pair, block.take(np.flatnonzero(keep))))
    count_below(pair, "below_threshold", dropped)
    for name in passed if dropped else ():
        Metrics.counter("pairs", name).dec(dropped)
    return out


def carried_counter(counter: tuple) -> None:
    """One of the finished run's counters, counted again in this run: the bitext rests on that run's k-NN join."""
    namespace, name, value = counter
    Metrics.counter(namespace, name).inc(value)


class FilterFinished(beam.PTransform):
    """PBegin -> the stage's per-pair summaries, from the finished bitext (`finished`: its manifest's entries by
    pair name) at each pair's new threshold (`thresholds`: by pair); the finished run's counters (`counters`, its
    manifest's) carried over, but what a resume kept, with the rows the new threshold leaves out moved from the
    counters they passed to `below_threshold` (rows_at_or_above; `refined`: the finished run's Select counted every
    candidate, the threshold applying after refinement, so `selected` stays).

    The bitext holds the candidates that passed every step, so a candidate between the two thresholds that the
    finished run's one-to-one pass or pair filter left out is not seen: where there were any (none in the sample),
    `selected`, the filter's drop counters and `below_threshold` differ from a whole run's by them. The bitext
    itself is a whole run's either way."""

    def __init__(self, finished: dict, thresholds: dict, counters: dict, output: str, rows_per_part: int,
                 refined: bool = False):
        super().__init__()
        self.finished, self.thresholds, self.counters = finished, thresholds, counters
        self.output, self.rows_per_part = output, rows_per_part
        counted = self.counters.get("pairs") or {}
        self.passed = tuple(name for name in ("selected", "filter/kept")
                            if counted.get(name) and not (refined and name == "selected"))

    def expand(self, begin):
        tasks = [(pair, [part["parquet"] for part in layout.bitext_parts(self.finished["-".join(pair)])])
                 for pair in sorted(self.thresholds)]
        carried = [(namespace, name, value) for namespace, names in sorted(self.counters.items())
                   for name, value in sorted(names.items()) if value and not name.startswith("resumed_")]
        _ = (begin | "Counters" >> beam.Create(carried, reshuffle=False) | "Carried" >> beam.Map(carried_counter))
        most = max((entry["pairs"] for entry in self.finished.values()), default=0)
        return (begin
                | "Finished" >> beam.Create(tasks, reshuffle=False)
                | "AtOrAbove" >> beam.FlatMap(rows_at_or_above, self.thresholds, self.passed)
                | "Write" >> WriteBitextParts(self.output, self.rows_per_part, most))
