"""Similarity-search accuracy (xsim; Tatoeba/FLORES style, ../shared/docs/METHODS.md §3).

For N aligned pairs (row i of the source matrix translates row i of the target matrix), each source retrieves
its best target, by cosine (`absolute`) or by margin over its k nearest (`ratio`, `distance`), and is correct when
that target is its own translation. Both directions are reported. When the texts are given, a retrieved sentence
whose text equals the reference's text also counts as correct: corpora repeat short sentences, and retrieving an
identical copy is not an error.
"""

from __future__ import annotations

import numpy as np

from miner.index import KnnConfig
from miner.margin import check_margin
from miner.mining import RESCORE_CANDIDATES, MiningConfig, score_neighbours
from miner.neighbours import knn, knn_refined
from miner.vectors import EmbeddingError, check_same_dim


def retrieve(src: np.ndarray, tgt: np.ndarray, margin: str, k: int, knn_config: KnnConfig,
             exact: tuple[np.ndarray, np.ndarray] | None = None, candidates: int = RESCORE_CANDIDATES):
    """Best target for every source and best source for every target (`exact`, `candidates`: binary codes'
    short lists rescored by float vectors, miner.mining.score_neighbours)."""
    if margin == "absolute":
        if exact is None:
            forward = knn(src, tgt, 1, knn_config, ("source", "target"))
            backward = knn(tgt, src, 1, knn_config, ("target", "source"))
        else:
            forward = knn_refined(src, tgt, 1, candidates, exact, knn_config, ("source", "target"))
            backward = knn_refined(tgt, src, 1, candidates, exact[::-1], knn_config, ("target", "source"))
        return forward[1][:, 0], backward[1][:, 0]
    forward, backward = score_neighbours(src, tgt, MiningConfig(k=k, margin=margin, knn=knn_config),
                                         exact=exact, candidates=candidates)
    return forward.best()[0], backward.best()[0]


LENGTH_BANDS = ((3, "1-3"), (8, "4-8"), (None, "9+"))  # words: UI labels and captions, phrases, sentences


def length_band(text: str) -> str:
    """`1-3`, `4-8` or `9+` words (a pair's band is its English side's)."""
    words = len(text.split())
    return next(name for most, name in LENGTH_BANDS if most is None or words <= most)


def correct_rows(predicted: np.ndarray, result_texts=None) -> np.ndarray:
    """Per query, whether it retrieved its own row (or, with `result_texts`, a copy of that row's text)."""
    gold = np.arange(len(predicted))
    correct = predicted == gold
    if result_texts is not None:
        correct |= np.fromiter((result_texts[p] == result_texts[g] for p, g in zip(predicted, gold)),
                               dtype=bool, count=len(gold))
    return correct


def direction_report(predicted: np.ndarray, result_texts=None) -> dict:
    """Errors of one direction; with `result_texts`, retrieving a copy of the reference text is correct."""
    errors = int((~correct_rows(predicted, result_texts)).sum())
    return {"errors": errors, "accuracy": 1 - errors / len(predicted), "error_rate": errors / len(predicted)}


def check_aligned(src: np.ndarray, tgt: np.ndarray, src_texts=None, tgt_texts=None) -> None:
    """Row i of src translates row i of tgt: the same width and count, and texts for both sides or neither."""
    check_same_dim(src, "source", tgt, "target")
    if len(src) != len(tgt):
        raise EmbeddingError(f"xsim needs aligned pairs: {len(src)} source vs {len(tgt)} target vectors")
    if (src_texts is None) != (tgt_texts is None):
        raise ValueError("give texts for both sides or for neither")


def xsim(src: np.ndarray, tgt: np.ndarray, margin: str = "absolute", k: int = 4,
         knn_config: KnnConfig = KnnConfig(), src_texts=None, tgt_texts=None,
         exact: tuple[np.ndarray, np.ndarray] | None = None, candidates: int = RESCORE_CANDIDATES) -> dict:
    check_aligned(src, tgt, src_texts, tgt_texts)
    check_margin(margin)
    fwd, bwd = retrieve(src, tgt, margin, k, knn_config, exact, candidates)
    return {
        "n": len(src),
        "margin": margin,
        "k": k if margin != "absolute" else 1,
        "src->tgt": direction_report(fwd, tgt_texts),
        "tgt->src": direction_report(bwd, src_texts),
    }
