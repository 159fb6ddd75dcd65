"""Mined pairs counted by margin: each pair's `score_histogram` in the pipeline's manifest and report, the parts of
a large pair merged into one, and the curve a user reads a threshold off (how many pairs each threshold keeps)."""

from __future__ import annotations

from collections import Counter

import numpy as np

# The width of the bins a pair's margins are counted in for its report: fine enough to read a threshold off, and a
# few hundred bins at most for any margin (ratio margins of 1-3, cosines of 0-1)
HISTOGRAM_WIDTH = 0.01


def score_histogram(scores: np.ndarray) -> list[list]:
    """[[a bin's lower edge, the pairs in it], ...] by edge ascending, for the bins of HISTOGRAM_WIDTH that hold
    pairs: what a threshold would keep, without reading the bitext."""
    bins, counts = np.unique(np.floor(np.asarray(scores, np.float64) / HISTOGRAM_WIDTH).astype(np.int64),
                             return_counts=True)
    return [[round(b * HISTOGRAM_WIDTH, 6), n] for b, n in zip(bins.tolist(), counts.tolist())]


def merged_histograms(histograms) -> list[list]:
    """score_histograms as one (a pair's parts; the language pairs of a run together)."""
    counts = sum((Counter(dict(histogram)) for histogram in histograms), Counter())
    return [[edge, counts[edge]] for edge in sorted(counts)]


def pairs_kept_curve(histogram) -> tuple[list[float], list[int]]:
    """A score histogram ([[bin's lower edge, pairs], ...] or (edge, pairs) tuples, ascending) -> (edges, pairs at or
    above each edge)."""
    edges = [edge for edge, _ in histogram]
    kept, total = [], 0
    for _, n in reversed(histogram):
        total += n
        kept.append(total)
    return edges, kept[::-1]
