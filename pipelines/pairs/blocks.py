"""What steps 3-5 of the pairs stage travel as: blocks of rows (numpy arrays, Arrow columns for texts), one Beam
element per (direction, shard) and per pair of shards where a join needs it, so the runner's per-element cost is
paid per block, not per sentence, and the arithmetic is the library's, on arrays."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from miner.knn_join import rows_by_list
from miner.sizes import HoldsArrays
from pipelines import layout

# Sentence columns carried into the bitext, per side (src_text, src_url, ...)
CARRIED = ("text", "url", "document_id", "paragraph_index", "sentence_index", "copies")


@dataclass(frozen=True)
class MeanBlock(HoldsArrays):
    """Queries of one shard and their neighbourhood means (fwd(x) for sources, bwd(y) for targets)."""

    refs: np.ndarray
    means: np.ndarray


@dataclass(frozen=True)
class CandidateBlock(HoldsArrays):
    """k-NN candidates (query, neighbour) with their similarity and the query's own mean; after scoring,
    `scores` holds each candidate's margin and `ref_means` the neighbour's mean."""

    queries: np.ndarray
    refs: np.ndarray
    sims: np.ndarray
    query_means: np.ndarray
    scores: np.ndarray | None = None
    ref_means: np.ndarray | None = None

    def take(self, rows: np.ndarray) -> CandidateBlock:
        return CandidateBlock(*(None if a is None else a[rows] for a in astuple_shallow(self)))

    @staticmethod
    def concat(blocks: list[CandidateBlock]) -> CandidateBlock:
        fields = zip(*(astuple_shallow(b) for b in blocks))
        return CandidateBlock(*(None if parts[0] is None else np.concatenate(parts) for parts in fields))


def astuple_shallow(block) -> tuple:
    return tuple(getattr(block, f.name) for f in dataclasses.fields(block))


def by_shard(refs: np.ndarray) -> Iterable[tuple[int, np.ndarray]]:
    """(shard, the rows whose reference lies in it, ascending) for each shard `refs` point into."""
    return rows_by_list((refs >> layout.ROW_BITS)[:, None])


@dataclass(frozen=True)
class PairBlock(HoldsArrays):
    """Sentence pairs as parallel arrays: source and target references, margin, cosine, which directions chose
    each pair (bit 1 forward, bit 2 backward), and once attached, each side's carried columns (src_text, ...: Arrow
    arrays, which are taken, joined and shuffled as buffers, not as Python objects a value; numpy arrays while
    refining); `means`, [n, 2]: each side's neighbourhood mean, which refining a pair's similarity needs for its
    margin."""

    src: np.ndarray
    tgt: np.ndarray
    score: np.ndarray
    sim: np.ndarray
    chosen_by: np.ndarray
    carried: dict = dataclasses.field(default_factory=dict)
    means: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.src)

    def take(self, rows: np.ndarray) -> PairBlock:
        return PairBlock(self.src[rows], self.tgt[rows], self.score[rows], self.sim[rows], self.chosen_by[rows],
                         {name: take_column(column, rows) for name, column in self.carried.items()},
                         None if self.means is None else self.means[rows])

    def with_columns(self, columns: dict) -> PairBlock:
        return dataclasses.replace(self, carried={**self.carried, **columns})

    @staticmethod
    def concat(blocks: list[PairBlock]) -> PairBlock:
        names = set(blocks[0].carried) if blocks else set()
        if any(set(b.carried) != names for b in blocks):
            raise ValueError("pair blocks with different columns cannot be joined")
        arrays = [np.concatenate([getattr(b, f) for b in blocks]) for f in ("src", "tgt", "score", "sim",
                                                                                "chosen_by")]
        means = (np.concatenate([b.means for b in blocks])
                 if blocks and all(b.means is not None for b in blocks) else None)
        return PairBlock(*arrays, {name: concat_columns([b.carried[name] for b in blocks]) for name in sorted(names)},
                         means)

    def best_first(self) -> PairBlock:
        """By margin descending, then source and target reference: the bitext's order."""
        return self.take(np.lexsort((self.tgt, self.src, -self.score)))


def take_column(column: np.ndarray | pa.Array, rows: np.ndarray) -> np.ndarray | pa.Array:
    return column[rows] if isinstance(column, np.ndarray) else pc.take(column, pa.array(rows, pa.int64()))


def concat_columns(columns: list[np.ndarray | pa.Array]) -> np.ndarray | pa.Array:
    """One column from blocks' pieces; Arrow pieces of a column a shard has only nulls of (type null) take the
    others' type, as one list of Python values would."""
    if isinstance(columns[0], np.ndarray):
        return np.concatenate(columns)
    typed = [c.type for c in columns if c.type != pa.null()]
    return pa.concat_arrays([c.cast(typed[0]) if typed else c for c in columns])


def empty_pairs() -> PairBlock:
    return PairBlock(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32),
                     np.empty(0, np.float32), np.empty(0, np.int8),
                     {f"{side}_{c}": pa.nulls(0) for side in ("src", "tgt") for c in CARRIED})


# The shard an empty block is keyed by: the steps after a grouping by sentence shard pass it on as it is, reading
# nothing; it carries its pair to the writer (pipelines.pairs.stage.every_pair_written).
NO_SHARD = -1


def by_sentence_shard(side: str):
    """(pair, pairs) -> the pairs split by the sentence shard of one side, keyed by (language, shard); an empty
    block keyed by (language, NO_SHARD)."""
    def split(element):
        pair, pairs = element
        language = pair[0] if side == "src" else pair[1]
        if not len(pairs):
            yield (language, NO_SHARD), (pair, pairs)
        for shard, rows in by_shard(pairs.src if side == "src" else pairs.tgt):
            yield (language, shard), (pair, pairs.take(rows))
    return split
