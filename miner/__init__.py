"""Mining core: k-NN search (FAISS), margin scoring, candidate selection and evaluation (BUCC F1, xsim).

    from miner import MiningConfig, mine
    pairs = mine(src_vectors, tgt_vectors, MiningConfig(k=4, margin="ratio", selection="max", threshold=1.35))

    from miner import mine_texts
    pairs = mine_texts(german, english, "deu_Latn", "eng_Latn")     # texts in, MinedPair(score, cosine, ...) out

A library: it never imports Beam. The Beam jobs in pipelines/ call it.
"""

from importlib import import_module

from miner.blas import choose_openblas_kernels

choose_openblas_kernels()  # before any module of the package loads faiss, and with it faiss's OpenBLAS

# Loaded on first use: `import miner.config` or `miner.io` (training recipes, the pipeline's settings) must not load
# FAISS, so training runs where only torch is installed (a lent GPU machine) and commands start faster.
_EXPORTS = {"KnnConfig": "miner.index", "knn": "miner.neighbours", "margin": "miner.margin",
            "MiningConfig": "miner.mining", "mine": "miner.mining", "mine_texts": "miner.bitext",
            "MinedPair": "miner.bitext", "score_neighbours": "miner.mining",
            "Candidates": "miner.selection", "Pairs": "miner.selection", "select": "miner.selection",
            "xsim": "miner.xsim"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'miner' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
