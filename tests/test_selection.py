"""Selection modes on hand-written candidates, and the vectorised greedy pass against the sequential rule.

Forward candidates (source -> its k = 2 targets, margins)   Backward candidates (target -> its 2 sources)
  x0: y0 1.30, y1 1.00                                        y0: x0 1.30, x1 1.20
  x1: y0 1.20, y2 1.10                                        y1: x0 1.00, x2 0.90
  x2: y2 1.05, y1 0.90                                        y2: x1 1.10, x2 1.05
Forward bests: (x0,y0) 1.30, (x1,y0) 1.20, (x2,y2) 1.05.  Backward bests: (x0,y0) 1.30, (x1,y2) 1.10, (x0,y1) 1.00.
max: pool by margin (x0,y0) (x0,y0) (x1,y0) (x1,y2) (x2,y2) (x0,y1): take (x0,y0); skip its copy; (x1,y0) y0 taken;
     take (x1,y2); (x2,y2) y2 taken; (x0,y1) x0 taken.  ->  (x0,y0), (x1,y2)
intersect: (x0,y0) only (y0's best is x0, but y2's best is x1, not x2).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from miner.selection import Candidates, Pairs, greedy_one_to_one, select, unique_pairs

FORWARD = Candidates(np.array([[0, 1], [0, 2], [2, 1]]),
                     np.array([[1.30, 1.00], [1.20, 1.10], [1.05, 0.90]], dtype=np.float32),
                     np.array([[0.9, 0.7], [0.8, 0.75], [0.72, 0.6]], dtype=np.float32))
BACKWARD = Candidates(np.array([[0, 1], [0, 2], [1, 2]]),
                      np.array([[1.30, 1.20], [1.00, 0.90], [1.10, 1.05]], dtype=np.float32),
                      np.array([[0.9, 0.8], [0.7, 0.6], [0.75, 0.72]], dtype=np.float32))


@pytest.mark.parametrize("mode, threshold, expected", [
    ("forward", None, [(0, 0), (1, 0), (2, 2)]),
    ("backward", None, [(0, 0), (1, 2), (0, 1)]),
    ("intersect", None, [(0, 0)]),
    ("max", None, [(0, 0), (1, 2)]),
    ("union", None, [(0, 0), (1, 0), (1, 2), (2, 2), (0, 1)]),
    ("union", 1.1, [(0, 0), (1, 0), (1, 2)]),
    ("max", 1.2, [(0, 0)]),
    ("forward", 5.0, []),
])
def test_modes_by_hand(mode, threshold, expected):
    pairs = select(FORWARD, BACKWARD, mode, threshold)
    assert list(zip(pairs.src.tolist(), pairs.tgt.tolist())) == expected


@pytest.mark.parametrize("mode, expected", [
    ("max", [(0, 0), (1, 2)]),  # (1, 2) at cosine 0.8 ... and every pair at or above 0.75 stays
    ("union", [(0, 0), (1, 0), (1, 2)]),
    ("forward", [(0, 0), (1, 0)]),
])
def test_min_cosine_drops_low_cosine_candidates_before_selection(mode, expected):
    pairs = select(FORWARD, BACKWARD, mode, None, min_cosine=0.75)
    assert list(zip(pairs.src.tolist(), pairs.tgt.tolist())) == expected
    assert pairs.cos.min() >= 0.75


def test_min_cosine_frees_sentences_for_the_one_to_one_pass():
    # source 0's best (margin 2.0, cosine 0.2) would take target 0 from source 1 (margin 1.5, cosine 0.9)
    forward = Candidates(np.array([[0], [0]]), np.array([[2.0], [1.5]], dtype=np.float32),
                         np.array([[0.2], [0.9]], dtype=np.float32))
    backward = Candidates(np.array([[1]]), np.array([[1.5]], dtype=np.float32), np.array([[0.9]], dtype=np.float32))
    plain = select(forward, backward, "max")
    floored = select(forward, backward, "max", min_cosine=0.5)
    assert list(zip(plain.src.tolist(), plain.tgt.tolist())) == [(0, 0)]
    assert list(zip(floored.src.tolist(), floored.tgt.tolist())) == [(1, 0)]


def test_results_sorted_by_margin_with_cosines_carried():
    pairs = select(FORWARD, BACKWARD, "union")
    assert pairs.margin.tolist() == sorted(pairs.margin.tolist(), reverse=True)
    assert pairs.cos.tolist() == pytest.approx([0.9, 0.8, 0.75, 0.72, 0.7])


def test_unknown_mode():
    with pytest.raises(ValueError, match="unknown selection"):
        select(FORWARD, BACKWARD, "best")


def sequential_greedy(pool: Pairs) -> list[int]:
    """The specification: one candidate at a time, by margin descending, pool order on ties."""
    taken_src, taken_tgt, accepted = set(), set(), []
    for i in sorted(range(len(pool)), key=lambda i: (-pool.margin[i], i)):
        if pool.src[i] not in taken_src and pool.tgt[i] not in taken_tgt:
            taken_src.add(pool.src[i])
            taken_tgt.add(pool.tgt[i])
            accepted.append(i)
    return accepted


pools = st.integers(1, 120).flatmap(lambda m: st.tuples(
    st.lists(st.integers(0, 15), min_size=m, max_size=m),
    st.lists(st.integers(0, 15), min_size=m, max_size=m),
    st.lists(st.sampled_from([0.5, 0.9, 1.0, 1.05, 1.1, 1.2, 2.0]), min_size=m, max_size=m),  # many ties
))


@given(pools)
def test_vectorised_greedy_equals_sequential(pool_lists):
    src, tgt, score = (np.array(v) for v in pool_lists)
    pool = Pairs(src, tgt, score.astype(np.float32), score.astype(np.float32))
    assert sorted(greedy_one_to_one(pool).tolist()) == sorted(sequential_greedy(pool))


def test_greedy_handles_long_conflict_chains():
    # (s0,t0) > (s0,t1) > (s1,t1) > (s1,t2) > ...: every other candidate wins, one round at a time.
    n = 200
    src = np.repeat(np.arange(n), 2)[:-1]
    tgt = np.repeat(np.arange(n), 2)[1:]
    pool = Pairs(src, tgt, np.linspace(2, 1, len(src), dtype=np.float32), np.zeros(len(src), np.float32))
    assert sorted(greedy_one_to_one(pool).tolist()) == sequential_greedy(pool)


def test_greedy_and_unique_on_empty_pool():
    empty = Pairs(*(np.empty(0, dtype=t) for t in (np.int64, np.int64, np.float32, np.float32)))
    assert len(greedy_one_to_one(empty)) == 0
    assert len(unique_pairs(empty)) == 0


def test_unique_pairs_keeps_highest_margin():
    pairs = Pairs(np.array([1, 1, 0]), np.array([2, 2, 0]), np.array([0.5, 0.7, 0.6], np.float32),
                  np.zeros(3, np.float32))
    kept = unique_pairs(pairs)
    assert list(zip(kept.src.tolist(), kept.tgt.tolist(), kept.margin.tolist())) == [
        (1, 2, pytest.approx(0.7)), (0, 0, pytest.approx(0.6))]
