"""Margins, worked out by hand on a 2 x 3 example, then checked through the real k-NN path.

cos(x_i, y_j) (k = 2):        y0    y1    y2
                        x0    0.8   0.4   0.1      fwd(x0) = (0.8 + 0.4) / 2 = 0.60
                        x1    0.5   0.6   0.3      fwd(x1) = (0.6 + 0.5) / 2 = 0.55
bwd(y0) = (0.8 + 0.5) / 2 = 0.65   bwd(y1) = (0.4 + 0.6) / 2 = 0.50   bwd(y2) = (0.1 + 0.3) / 2 = 0.20

pair      cos   (fwd + bwd) / 2            ratio              distance
(x0,y0)   0.8   (0.60 + 0.65) / 2 = 0.625  0.8 / 0.625 = 1.28      0.175
(x0,y1)   0.4   (0.60 + 0.50) / 2 = 0.550  0.4 / 0.55  = 0.72727  -0.150
(x1,y1)   0.6   (0.55 + 0.50) / 2 = 0.525  0.6 / 0.525 = 1.14286   0.075
(x1,y0)   0.5   (0.55 + 0.65) / 2 = 0.600  0.5 / 0.6   = 0.83333  -0.100
(x1,y2)   0.3   (0.55 + 0.20) / 2 = 0.375  0.3 / 0.375 = 0.8      -0.075
(x0,y2)   0.1   (0.60 + 0.20) / 2 = 0.400  0.1 / 0.4   = 0.25     -0.300
"""

import numpy as np
import pytest

from miner.margin import margin, neighbourhood_mean
from miner.mining import MiningConfig, mine, score_neighbours

COS = np.array([[0.8, 0.4, 0.1], [0.5, 0.6, 0.3]])
EXPECTED = {  # (source, target): (cos, ratio, distance)
    (0, 0): (0.8, 1.28, 0.175), (0, 1): (0.4, 0.4 / 0.55, -0.15), (1, 1): (0.6, 0.6 / 0.525, 0.075),
    (1, 0): (0.5, 0.5 / 0.6, -0.1), (1, 2): (0.3, 0.8, -0.075), (0, 2): (0.1, 0.25, -0.3),
}


def vectors_with_cosines(cos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit x_i = e_i and unit y_j whose first coordinates are cos[:, j]: then x_i . y_j = cos[i, j] exactly."""
    n_src, n_tgt = cos.shape
    x = np.eye(n_src, n_src + n_tgt)
    y = np.zeros((n_tgt, n_src + n_tgt))
    y[:, :n_src] = cos.T
    y[np.arange(n_tgt), n_src + np.arange(n_tgt)] = np.sqrt(1 - (cos ** 2).sum(axis=0))
    return x.astype(np.float32), y.astype(np.float32)


def test_margin_formulas_on_scalars():
    assert margin(np.float32(0.8), 0.6, 0.65, "ratio") == pytest.approx(1.28)
    assert margin(np.float32(0.8), 0.6, 0.65, "distance") == pytest.approx(0.175)
    assert margin(np.float32(0.8), 0.6, 0.65, "absolute") == pytest.approx(0.8)
    with pytest.raises(ValueError, match="unknown margin"):
        margin(np.float32(0.8), 0.6, 0.65, "cosine")


def test_neighbourhood_mean():
    assert neighbourhood_mean(np.array([[0.8, 0.4], [0.6, 0.5]])) == pytest.approx([0.6, 0.55])


@pytest.mark.parametrize("kind, column", [("absolute", 0), ("ratio", 1), ("distance", 2)])
def test_candidate_margins_match_hand_computation(kind, column):
    x, y = vectors_with_cosines(COS)
    forward, backward = score_neighbours(x, y, MiningConfig(k=2, margin=kind))
    for i in range(2):
        for j, value in zip(forward.ids[i], forward.margins[i]):
            assert value == pytest.approx(EXPECTED[(i, int(j))][column], abs=1e-5)
    for j in range(3):
        for i, value in zip(backward.ids[j], backward.margins[j]):
            assert value == pytest.approx(EXPECTED[(int(i), j)][column], abs=1e-5)


def test_forward_and_backward_neighbours_by_hand():
    x, y = vectors_with_cosines(COS)
    forward, backward = score_neighbours(x, y, MiningConfig(k=2))
    assert forward.ids.tolist() == [[0, 1], [1, 0]]
    assert backward.ids.tolist() == [[0, 1], [1, 0], [1, 0]]
    assert forward.cos == pytest.approx(np.array([[0.8, 0.4], [0.6, 0.5]]), abs=1e-6)


@pytest.mark.parametrize("selection, threshold, expected", [
    ("forward", None, [(0, 0), (1, 1)]),
    ("backward", None, [(0, 0), (1, 1), (1, 2)]),
    ("intersect", None, [(0, 0), (1, 1)]),
    ("max", None, [(0, 0), (1, 1)]),
    ("union", None, [(0, 0), (1, 1), (1, 2)]),
    ("union", 1.2, [(0, 0)]),
    ("max", 1.2, [(0, 0)]),
])
def test_selection_on_hand_example(selection, threshold, expected):
    x, y = vectors_with_cosines(COS)
    pairs = mine(x, y, MiningConfig(k=2, selection=selection, threshold=threshold))
    assert list(zip(pairs.src.tolist(), pairs.tgt.tolist())) == expected
    assert pairs.margin.tolist() == pytest.approx([EXPECTED[p][1] for p in expected], abs=1e-5)


def test_ratio_never_divides_by_a_non_positive_neighbourhood():
    # Vectors unlike anything (neighbourhood mean <= 0) must not flip the ratio's sign and rank first.
    scores = margin(np.array([0.1, -0.2], dtype=np.float32), np.array([-0.3, 0.5]), np.array([-0.3, 0.5]))
    assert np.isfinite(scores).all()
    assert scores[1] < 0 < scores[0]
