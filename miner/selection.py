"""Candidate selection ("retrieval"): which scored k-NN candidates become sentence pairs (METHODS.md §1).

- forward: each source keeps its best-margin target; backward: each target keeps its best-margin source.
- intersect: (x, y) only when y is x's forward best and x is y's backward best.
- max (reference BUCC setting): forward and backward bests pooled, taken greedily by margin, one-to-one.
- union (web-scale mining): every forward and backward best, no one-to-one constraint, duplicate pairs removed.

A threshold keeps pairs with margin >= threshold. Results are sorted by margin descending; ties by source then
target index, so a rerun gives the same pairs in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SELECTIONS = ("forward", "backward", "intersect", "max", "union")


@dataclass(frozen=True)
class Candidates:
    """One direction's k-NN: row i's neighbours `ids[i]` (indices into the other side) with their scores."""

    ids: np.ndarray  # int64 [n, k]
    margins: np.ndarray  # float32 [n, k]
    cos: np.ndarray  # float32 [n, k]

    def best(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(best neighbour, its margin, its cosine) per row; the first (most similar) neighbour wins ties."""
        column = self.margins.argmax(axis=1)[:, None]
        return tuple(np.take_along_axis(a, column, axis=1)[:, 0] for a in (self.ids, self.margins, self.cos))


@dataclass(frozen=True)
class Pairs:
    """Selected sentence pairs as parallel arrays: source index, target index, margin, cosine."""

    src: np.ndarray
    tgt: np.ndarray
    margin: np.ndarray
    cos: np.ndarray

    def __len__(self) -> int:
        return len(self.src)

    def subset(self, keep: np.ndarray) -> Pairs:
        return Pairs(self.src[keep], self.tgt[keep], self.margin[keep], self.cos[keep])

    def above(self, threshold: float | None) -> Pairs:
        return self if threshold is None else self.subset(self.margin >= threshold)

    def at_least_cosine(self, floor: float | None) -> Pairs:
        return self if floor is None else self.subset(self.cos >= floor)

    def sorted(self) -> Pairs:
        return self.subset(np.lexsort((self.tgt, self.src, -self.margin)))

    @staticmethod
    def concat(*parts: Pairs) -> Pairs:
        return Pairs(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("src", "tgt", "margin", "cos")))


def select(forward: Candidates, backward: Candidates, mode: str = "max", threshold: float | None = None,
           min_cosine: float | None = None) -> Pairs:
    """Pairs chosen from forward (source -> target) and backward (target -> source) candidates. A candidate whose
    cosine is below `min_cosine` is never a pair (and, in `max`, takes no sentence from another candidate)."""
    fwd_tgt, fwd_margin, fwd_cos = forward.best()
    bwd_src, bwd_margin, bwd_cos = backward.best()
    fwd = Pairs(np.arange(len(fwd_tgt)), fwd_tgt, fwd_margin, fwd_cos)
    bwd = Pairs(bwd_src, np.arange(len(bwd_src)), bwd_margin, bwd_cos)
    if mode == "forward":
        pairs = fwd
    elif mode == "backward":
        pairs = bwd
    elif mode == "intersect":
        pairs = fwd.subset(bwd_src[fwd_tgt] == fwd.src)
    elif mode == "max":
        pool = Pairs.concat(fwd, bwd).at_least_cosine(min_cosine)
        pairs = pool.subset(greedy_one_to_one(pool))
    elif mode == "union":
        pairs = unique_pairs(Pairs.concat(fwd, bwd).above(threshold))
    else:
        raise ValueError(f"unknown selection {mode!r}: choose one of {', '.join(SELECTIONS)}")
    return pairs.at_least_cosine(min_cosine).above(threshold).sorted()


def greedy_one_to_one(pool: Pairs) -> np.ndarray:
    """Indices of `pool` accepted by the greedy one-to-one pass, vectorised.

    The sequential rule: walk candidates by margin descending (pool order on ties) and accept one unless its
    source or target is already taken. Done in rounds instead: a candidate that comes first among the remaining
    ones for both its source and its target is accepted by the sequential pass (nothing earlier can take either
    side), and every remaining candidate sharing a side with it is rejected (it comes later). Accept all such
    candidates at once, drop their conflicts, repeat. The leading candidate always qualifies, so each round
    makes progress; on real data a handful of rounds suffice.
    """
    in_order = len(pool) < 2 or bool(np.all(pool.margin[1:] <= pool.margin[:-1]))  # a pool best first already
    order = np.arange(len(pool)) if in_order else np.lexsort((np.arange(len(pool)), -pool.margin))
    accepted = []
    position_type = np.int32 if len(pool) < 2**31 else np.int64  # positions in the pool: half the memory
    src_first = np.full(pool.src.max(initial=-1) + 1, len(pool), dtype=position_type)
    tgt_first = np.full(pool.tgt.max(initial=-1) + 1, len(pool), dtype=position_type)
    src_taken = np.zeros(len(src_first), dtype=bool)
    tgt_taken = np.zeros(len(tgt_first), dtype=bool)
    alive = order
    while len(alive):
        src, tgt = pool.src[alive], pool.tgt[alive]
        position = np.arange(len(alive), dtype=position_type)
        np.minimum.at(src_first, src, position)
        np.minimum.at(tgt_first, tgt, position)
        wins = (src_first[src] == position) & (tgt_first[tgt] == position)
        src_first[src] = tgt_first[tgt] = len(pool)  # reset only the entries this round touched
        accepted.append(alive[wins])
        src_taken[src[wins]] = True
        tgt_taken[tgt[wins]] = True
        alive = alive[~(src_taken[src] | tgt_taken[tgt])]
    return np.concatenate(accepted) if accepted else np.empty(0, dtype=np.int64)


def unique_pairs(pairs: Pairs) -> Pairs:
    """Drop repeated (source, target) pairs, keeping the highest margin of each."""
    ranked = pairs.sorted()
    _, first = np.unique(np.stack([ranked.src, ranked.tgt], axis=1), axis=0, return_index=True)
    return ranked.subset(np.sort(first))
