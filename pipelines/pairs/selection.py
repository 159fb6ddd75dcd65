"""Step 4 of the pairs stage: each sentence's best candidate (forward for sources, backward for targets), the two
directions' choices joined by pair and kept as the selection mode says (miner.selection's modes); `max` (greedy
one-to-one) over a language pair's bests at or above its threshold, four numbers a candidate, never texts or
vectors: on one worker, or, for a pair that could have more than `mining.one_to_one_rows` candidates, in rounds
across workers (OneToOne)."""

from __future__ import annotations

import dataclasses
from collections import Counter
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


# `pairs` counters a language pair (`below_threshold:deu_Latn-eng_Latn`): its selected candidates left out by the
# similarity floor (min_cosine) and by the margin threshold, what the summary gives where a pair has no pairs
BELOW = ("below_min_cosine", "below_threshold")


def count_below(pair: tuple[str, str], what: str, n: int) -> None:
    if n:
        Metrics.counter("pairs", f"{what}:{'-'.join(pair)}").inc(n)


def chosen_by_mode(mode: str, chosen_by: np.ndarray) -> np.ndarray:
    """Which pairs a selection mode keeps, from the directions that chose each (bit 1 forward, bit 2 backward)."""
    forward, backward = (chosen_by & 1) > 0, (chosen_by & 2) > 0
    return {"forward": forward, "backward": backward, "intersect": forward & backward}.get(mode, forward | backward)


@th.with_output_types(th.Tuple[th.Any, th.Any])
class Select(beam.DoFn):
    """One source shard's best candidates, both directions -> the pairs the selection mode keeps, once each: (pair,
    block), or for `max`, (pair, (source shard, block)) (OneToOne's account); a block for every source shard, an
    empty one too.

    `max` keeps every candidate at or above the pair's threshold here; the one-to-one pass comes after, per
    language pair. Leaving out the candidates below the threshold first changes no pair it keeps: the greedy pass
    takes candidates best first, so whether one at or above the threshold is taken turns on better ones only, all
    above it too. The pass then holds a pair's likely translations, not every sentence's best guess."""

    def __init__(self, mode: str, thresholds: dict, min_cosine: float | None = None):
        self.mode, self.thresholds, self.min_cosine = mode, thresholds, min_cosine   # thresholds: by pair
        self.kept = Metrics.counter("pairs", "selected")

    def process(self, element):
        (pair, shard), blocks = element
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
            count_below(pair, "below_min_cosine", int(low.sum()))
            keep &= ~low
        threshold = self.thresholds[pair]
        if threshold is not None:
            below = keep & (unique.score < threshold)
            count_below(pair, "below_threshold", int(below.sum()))
            keep &= ~below
        self.kept.inc(int(keep.sum()))
        kept = unique.take(np.flatnonzero(keep))
        # every source shard's block, an empty one too: `max`'s OneToOne checks it has them all, and every pair
        # reaches the writer, which then writes a pair without pairs too (pipelines.pairs.stage.every_pair_written)
        yield pair, ((shard, kept) if self.mode == "max" else kept)


def one_to_one(element, thresholds: dict) -> Iterable[tuple]:
    """The greedy one-to-one pass of `max` selection (miner.selection) over one language pair's candidates, then
    the pair's threshold (`thresholds`: by pair; Select left out the candidates below it already, where it knew it)."""
    pair, blocks = element
    threshold = thresholds[pair]
    candidates = PairBlock.concat(list(blocks))
    # the pass over the candidates best first (margin, then source, then target), as dense int32 sentence numbers:
    # the order and 8 bytes a candidate travel, not a sorted copy of the block (25)
    order = np.lexsort((candidates.tgt, candidates.src, -candidates.score))
    src, tgt = dense_ids(candidates.src)[order], dense_ids(candidates.tgt)[order]
    score = candidates.score[order]
    accepted = order[np.sort(greedy_one_to_one(Pairs(src, tgt, score, score)))]
    del src, tgt, score
    if threshold is not None:
        accepted = accepted[candidates.score[accepted] >= threshold]
    yield pair, candidates.take(accepted)   # none accepted: an empty block carries the pair on (every_pair_written)


def dense_ids(refs: np.ndarray) -> np.ndarray:
    """Each reference's rank among the distinct ones (np.unique's inverse) as int32, a language pair's sentences
    being far fewer than 2^31: by one sort and a running count, 25 bytes a reference at the peak where np.unique
    takes 57."""
    order = np.argsort(refs)
    ranked = refs[order]
    new = np.empty(len(refs), dtype=np.int32)
    new[:1] = 0
    np.not_equal(ranked[1:], ranked[:-1], out=new[1:], casting="unsafe")
    del ranked
    ranks = np.empty(len(refs), dtype=np.int32)
    ranks[order] = np.cumsum(new, dtype=np.int32)
    return ranks


# Rounds of the spread one-to-one pass before what is left goes to one worker: on real candidates a handful of
# rounds leave nothing (miner.selection.greedy_one_to_one, the same rule on one machine)
SPREAD_ROUNDS = 8


class OneToOne(beam.PTransform):
    """`max` selection's greedy one-to-one pass per language pair, then its threshold: (pair, (source shard,
    PairBlock)), as Select gives them, -> (pair, the accepted pairs). A pair in `spread` (one that could have more
    candidates than a worker should hold) goes in rounds: a candidate that comes first (margin, then source, then
    target reference) among the remaining ones of both its sentences is one the sequential pass accepts, and every
    candidate sharing a sentence with it is one it rejects; each round finds them by target shard (the best at each
    target) and by source shard (the best at each source, and the accepting), and the sentences taken leave with
    their candidates. After SPREAD_ROUNDS rounds the rest (on real data, nothing) is passed on one worker, whose
    result on it completes the sequential pass's: the same pairs as the one-worker pass (tested). The threshold
    applies to the accepted pairs either way (Select has left out the candidates below it already, where it knew
    it).

    Either way the pass takes a pair's blocks from every source shard in `shards` (pair -> its source language's
    shard numbers) once, or stops with an error naming the pair: a group a runner delivered short or twice would
    change which pairs are accepted. The rounds also account for every candidate (CheckAccount)."""

    def __init__(self, thresholds: dict, spread: set, shards: dict):
        super().__init__()
        self.thresholds, self.spread = thresholds, set(spread)
        self.shards = {pair: sorted(numbers) for pair, numbers in shards.items()}

    def expand(self, pairs):
        """`pairs`: Select's blocks, one for every source shard of every pair (a pair none of whose blocks arrives
        is found missing at the end: pipelines.pairs.stage.every_pair_written)."""
        spread, thresholds, shards = self.spread, self.thresholds, self.shards
        if not spread:
            return (pairs | "PerLanguagePair" >> beam.GroupByKey()
                    | "Greedy" >> beam.FlatMap(whole_pair_one_to_one, thresholds, shards))
        on_one_worker = (pairs | "OneWorker" >> beam.Filter(lambda e: e[0] not in spread)
                         | "PerLanguagePair" >> beam.GroupByKey()
                         | "Greedy" >> beam.FlatMap(whole_pair_one_to_one, thresholds, shards))
        in_rounds = self._in_rounds(pairs | "Spread" >> beam.Filter(lambda e: e[0] in spread))
        return (on_one_worker, in_rounds) | "Accepted" >> beam.Flatten()

    def _in_rounds(self, selected):
        """The spread pairs' blocks -> the pairs accepted, once the account of every candidate is checked."""
        entered = selected | "Entered" >> beam.MapTuple(lambda pair, block: (pair, (block[0], len(block[1]))))
        edges = selected | "Edges" >> beam.MapTuple(lambda pair, block: (pair, block[1]))
        # an empty block a source shard, so that a pair the rounds accept nothing of goes on (every_pair_written)
        none_yet = selected | "NoneYet" >> beam.MapTuple(lambda pair, block: (pair, block[1].take(NO_ROWS)))
        accepted, settled, taken = [], [], None
        for index in range(SPREAD_ROUNDS):
            round_accepted, round_settled, edges, taken = _one_round(edges, taken, f"Round{index}")
            accepted.append(round_accepted)
            settled += round_settled
        rest = _by_target(edges, taken, "Rest") | "RestUntaken" >> beam.ParDo(Rest()).with_outputs(SETTLED,
                                                                                                  main="edges")
        settled.append(rest[SETTLED])
        accepted.append(rest.edges | "RestPerLanguagePair" >> beam.GroupByKey()
                        | "RestGreedy" >> beam.FlatMap(one_to_one, self.thresholds))
        checked = ({"entered": entered, "settled": settled | "Settled" >> beam.Flatten()}
                   | "Account" >> beam.CoGroupByKey() | "CheckAccount" >> beam.FlatMap(check_account, self.shards))
        return ((*accepted, none_yet) | "SpreadAccepted" >> beam.Flatten()
                | "AtThreshold" >> beam.FlatMap(at_threshold, self.thresholds)  # one_to_one's own, for the rounds'
                | "AfterAccount" >> beam.FlatMap(after_account, beam.pvalue.AsDict(checked)))


def whole_pair_one_to_one(element, thresholds: dict, shards: dict) -> Iterable[tuple]:
    """one_to_one over a pair's blocks as Select gives them, (source shard, block), once every source shard's
    block is there once."""
    pair, selected = element
    selected = list(selected)
    check_shards(pair, [shard for shard, _ in selected], shards[pair])
    yield from one_to_one((pair, [block for _, block in selected]), thresholds)


def check_shards(pair: tuple, received: list[int], expected: list[int]) -> None:
    """An error naming the pair and the shards unless `received` holds each of the `expected` source shards once."""
    if sorted(received) == expected:
        return
    counts = Counter(received)
    wrong = [f"{what} {numbers}" for what, numbers in (
        ("missing", sorted(set(expected) - set(counts))),
        ("received more than once", sorted(shard for shard, n in counts.items() if n > 1)),
        ("not of the language", sorted(set(counts) - set(expected)))) if numbers]
    raise RuntimeError(f"{'-'.join(pair)}: the one-to-one pass needs the selected candidates of each of its "
                       f"{len(expected)} source shards once; shards {'; '.join(wrong)}: the runner delivered a group "
                       "incomplete or twice")


def _by_target(edges, taken, name: str):
    """Candidates, with the targets taken in the round before, grouped by target shard."""
    grouped = edges | f"{name}ByTarget" >> beam.FlatMap(by_target_shard)
    if taken is not None:
        grouped = (grouped, taken) | f"{name}WithTaken" >> beam.Flatten()
    return grouped | f"{name}PerTargetShard" >> beam.GroupByKey()


def _one_round(edges, taken, name: str) -> tuple:
    """One round: (accepted, [settled counts], candidates left, targets taken)."""
    at_target = _by_target(edges, taken, name) | f"{name}BestAtTarget" >> beam.ParDo(BestAtTarget()).with_outputs(
        SETTLED, main="edges")
    found = (at_target.edges
             | f"{name}PerSourceShard" >> beam.GroupByKey()
             | f"{name}Accept" >> beam.ParDo(AcceptDominant()).with_outputs(
                 AcceptDominant.ACCEPTED, AcceptDominant.TAKEN, SETTLED, main="edges"))
    return (found[AcceptDominant.ACCEPTED], [at_target[SETTLED], found[SETTLED]], found.edges,
            found[AcceptDominant.TAKEN])


def at_threshold(element, thresholds: dict) -> Iterable[tuple]:
    """(pair, accepted pairs) -> those at or above the pair's threshold (all, without one)."""
    pair, block = element
    threshold = thresholds[pair]
    yield pair, block if threshold is None else block.take(np.flatnonzero(block.score >= threshold))


EDGES, TAKEN_TARGETS = "edges", "taken"
NO_ROWS = np.empty(0, dtype=np.int64)


def by_target_shard(element) -> Iterable[tuple]:
    """(pair, candidates) -> ((pair, target shard), ("edges", those pointing into it))."""
    pair, block = element
    for shard, rows in by_shard(block.tgt):
        yield (pair, shard), (EDGES, block.take(rows))


def _first_of_each(vertex: np.ndarray, score: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Whether each candidate comes first among those of its `vertex`: margin descending, then `other` ascending
    (the one-worker pass's order: margin, source, target; a vertex's candidates share it)."""
    order = np.lexsort((other, -score, vertex))
    first = np.zeros(len(vertex), dtype=bool)
    first[order[np.r_[True, vertex[order][1:] != vertex[order][:-1]]]] = True
    return first


def _split(element) -> tuple[PairBlock | None, np.ndarray]:
    """A target shard's group: its candidates (None: none) and the targets taken in the round before."""
    _, values = element
    blocks = [v for kind, v in values if kind == EDGES]
    taken = [v for kind, v in values if kind == TAKEN_TARGETS]
    edges = PairBlock.concat(blocks) if blocks else None
    return edges, np.concatenate(taken) if taken else np.empty(0, np.int64)


def untaken(element) -> tuple[tuple, PairBlock | None, int]:
    """A target shard's group -> (pair, its candidates whose targets were not taken or None, how many were)."""
    (pair, _), _ = element
    edges, taken = _split(element)
    if edges is None:
        return pair, None, 0
    left = edges.take(np.flatnonzero(~np.isin(edges.tgt, taken)))
    return pair, left if len(left) else None, len(edges) - len(left)


# The spread pass's account: every candidate that enters ends accepted, rejected or passed on to the one-worker
# rest, once; (pair, how many) of each, summed and set against the candidates that entered (CheckAccount)
SETTLED = "settled"


@th.with_output_types(th.Any)  # tagged outputs besides: not the main output's type
class Rest(beam.DoFn):
    """The candidates the rounds left (their taken targets left out), counted: `pairs/one_to_one_rest`."""

    def __init__(self):
        self.rest = Metrics.counter("pairs", "one_to_one_rest")

    def process(self, element):
        pair, edges, rejected = untaken(element)
        settled = rejected + (len(edges) if edges is not None else 0)
        if settled:
            yield beam.pvalue.TaggedOutput(SETTLED, (pair, settled))
        if edges is not None:
            self.rest.inc(len(edges))
            yield pair, edges


@th.with_output_types(th.Any)  # tagged outputs besides: not the main output's type
class BestAtTarget(beam.DoFn):
    """A target shard's remaining candidates (the targets taken in the round before left out) -> each with whether
    it comes first among its target's, keyed by source shard."""

    def process(self, element):
        pair, edges, rejected = untaken(element)
        if rejected:
            yield beam.pvalue.TaggedOutput(SETTLED, (pair, rejected))
        if edges is not None:
            first = _first_of_each(edges.tgt, edges.score, edges.src)
            for shard, rows in by_shard(edges.src):
                yield (pair, shard), (edges.take(rows), first[rows])


@th.with_output_types(th.Any)  # tagged outputs besides: not the main output's type
class AcceptDominant(beam.DoFn):
    """A source shard's candidates with their targets' verdicts -> the accepted ones (first at both sentences), the
    targets they take (keyed by target shard, for the next round's groups), and the candidates left (those of
    neither a taken source, all of them here, nor a target taken here)."""

    ACCEPTED, TAKEN = "accepted", "taken"

    def process(self, element):
        (pair, _), parts = element
        parts = list(parts)
        edges = PairBlock.concat([block for block, _ in parts])
        first_at_target = np.concatenate([flags for _, flags in parts])
        accept = first_at_target & _first_of_each(edges.src, edges.score, edges.tgt)
        accepted = edges.take(np.flatnonzero(accept))
        if len(accepted):
            yield beam.pvalue.TaggedOutput(self.ACCEPTED, (pair, accepted))
            for shard, rows in by_shard(accepted.tgt):
                yield beam.pvalue.TaggedOutput(self.TAKEN, ((pair, shard), (TAKEN_TARGETS, accepted.tgt[rows])))
        left = ~(np.isin(edges.src, accepted.src) | np.isin(edges.tgt, accepted.tgt))
        if not left.all():  # accepted, or rejected for a sentence taken here
            yield beam.pvalue.TaggedOutput(SETTLED, (pair, int((~left).sum())))
        if left.any():
            yield pair, edges.take(np.flatnonzero(left))


def check_account(element, shards: dict) -> Iterable[tuple]:
    """(pair, {"entered": [(source shard, n)], "settled": [n]}) -> (pair, True) where every source shard's block
    entered the rounds once and every candidate that entered was settled once; else an error naming the pair: a
    group that a runner delivered short or twice would have changed which pairs the pass accepts."""
    pair, counts = element
    blocks = list(counts["entered"])
    check_shards(pair, [shard for shard, _ in blocks], shards[pair])
    entered, settled = sum(n for _, n in blocks), sum(counts["settled"])
    if entered != settled:
        raise RuntimeError(f"{'-'.join(pair)}: the one-to-one pass in rounds settled {settled} of the {entered} "
                           "candidates that entered it: the runner delivered a group incomplete or twice")
    yield pair, True


def after_account(element, checked: dict) -> Iterable[tuple]:
    """The accepted pairs, passed on once their pair's account is checked (the side input waits for it)."""
    if element[0] not in checked:
        raise RuntimeError(f"{'-'.join(element[0])}: accepted pairs without a checked account")
    yield element
