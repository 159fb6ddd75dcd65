"""xsim retrieval accuracy, by hand: 3 aligned pairs, one of which retrieves the wrong sentence."""

import numpy as np
import pytest

from miner.vectors import EmbeddingError
from miner.xsim import length_band, xsim

# src -> tgt: s0 -> t0 (right), s1 -> t1 (right), s2 -> t0 (wrong: s2 sits next to t0).
# tgt -> src: t0 -> s0 (right: cos 1 beats s2's 0.95), t1 -> s1, t2 -> s2 (its only neighbour above 0).
SRC = np.array([[1, 0, 0], [0, 1, 0], [0.95, 0, 0.312]], dtype=np.float32)
TGT = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)


def test_one_error_in_one_direction():
    report = xsim(SRC, TGT)
    assert report["src->tgt"]["errors"] == 1
    assert report["src->tgt"]["accuracy"] == pytest.approx(2 / 3)
    assert report["tgt->src"]["errors"] == 0


def test_identical_text_counts_as_correct():
    # If t0 and t2 are the same sentence, retrieving t0 for s2 is not an error.
    report = xsim(SRC, TGT, src_texts=["a", "b", "c"], tgt_texts=["x", "y", "x"])
    assert report["src->tgt"]["errors"] == 0


def test_margin_retrieval_runs_both_ways():
    report = xsim(SRC, TGT, margin="ratio", k=2)
    assert report["k"] == 2 and report["n"] == 3
    assert 0 <= report["src->tgt"]["errors"] <= 3


def test_misaligned_inputs():
    with pytest.raises(EmbeddingError, match="3 source vs 2 target"):
        xsim(SRC, TGT[:2])
    with pytest.raises(ValueError, match="both sides"):
        xsim(SRC, TGT, src_texts=["a", "b", "c"])


def test_length_bands_count_words():
    assert [length_band(t) for t in ("Open", "Open the file", "Open the file now", "one two three four five six "
                                     "seven eight", "one two three four five six seven eight nine")] == \
        ["1-3", "1-3", "4-8", "4-8", "9+"]
