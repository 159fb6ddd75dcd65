"""Mining core: k-NN search (FAISS), margin scoring, candidate selection and evaluation (BUCC F1, xsim).

    from miner import MiningConfig, mine
    pairs = mine(src_vectors, tgt_vectors, MiningConfig(k=4, margin="ratio", selection="max", threshold=1.06))

A library: it never imports Beam. The Beam jobs in pipelines/ call it.
"""

from miner.index import KnnConfig, knn
from miner.margin import margin
from miner.mining import MiningConfig, mine, score_neighbours
from miner.selection import Candidates, Pairs, select
from miner.xsim import xsim

__all__ = ["Candidates", "KnnConfig", "MiningConfig", "Pairs", "knn", "margin", "mine", "score_neighbours",
           "select", "xsim"]
