"""The real BUCC-style files in ../shared/data/dev/bucc-style, parsed and scored with embeddings made here.

The vectors are synthetic on purpose (no encoder is needed to test the protocol): each gold pair shares a random
direction plus noise, every other sentence gets its own direction. Mining must then find the gold pairs, so
the figures test the parsing, the id mapping and the protocol on real files, not an encoder.
"""

import numpy as np
import pytest

from miner import bucc
from miner.cli import VectorSource
from miner.evaluate import bucc_report
from miner.mining import MiningConfig
from miner.vectors import EmbeddingError

PAIRS = ("de-en", "fr-en", "ru-en", "zh-en")


def planted_embeddings(corpus: bucc.BuccCorpus, out_dir, dim=64, noise=0.2, seed=0):
    rng = np.random.default_rng(seed)
    src_row = {i: r for r, i in enumerate(corpus.src.ids)}
    tgt_row = {i: r for r, i in enumerate(corpus.tgt.ids)}
    src = rng.normal(size=(len(corpus.src), dim))
    tgt = rng.normal(size=(len(corpus.tgt), dim))
    # identical texts get identical vectors, as any encoder would give them
    for side in (corpus.src, corpus.tgt):
        matrix = src if side is corpus.src else tgt
        first = {}
        for row, text in enumerate(side.texts):
            matrix[row] = matrix[first.setdefault(text, row)]
    for s, t in sorted(corpus.gold):
        shared = rng.normal(size=dim)
        src[src_row[s]] = shared + noise * rng.normal(size=dim)
        tgt[tgt_row[t]] = shared + noise * rng.normal(size=dim)
    np.save(out_dir / f"{corpus.src.path.name}.npy", src.astype(np.float32))
    np.save(out_dir / f"{corpus.tgt.path.name}.npy", tgt.astype(np.float32))


@pytest.mark.parametrize("pair", PAIRS)
def test_bucc_style_dev_parsed_and_scored(shared_data, tmp_path, pair):
    corpus_dir = shared_data / "dev" / "bucc-style"
    corpus = bucc.load_corpus(corpus_dir, pair, "dev")
    assert len(corpus.gold) == 200 and len(corpus.src) > 2000 and len(corpus.tgt) > 5000
    planted_embeddings(corpus, tmp_path)
    report, curve = bucc_report(corpus_dir, pair, "dev", VectorSource(tmp_path), MiningConfig())
    counts, result = report["counts"], report["result"]
    reachable = 200 - counts["gold_pairs_with_ambiguous_text"]
    # every reachable gold pair is found, and the planted pairs stand far above the rest
    assert report["oracle"]["correct"] == reachable
    assert report["oracle"]["precision"] == 1.0
    assert result["correct"] >= reachable - 2 and result["precision"] >= 0.98
    assert report["settings"]["threshold_protocol"].startswith("2-fold")
    assert len(curve["f1"]) == counts["candidates"]


def test_misaligned_embeddings_name_both_files(shared_data, tmp_path):
    corpus_dir = shared_data / "dev" / "bucc-style"
    corpus = bucc.load_corpus(corpus_dir, "de-en", "dev")
    planted_embeddings(corpus, tmp_path)
    np.save(tmp_path / "de-en.dev.de.npy", np.ones((10, 64), np.float32))
    with pytest.raises(EmbeddingError, match=r"de-en.dev.de.npy has 10 rows but .*de-en.dev.de has \d+ lines"):
        bucc_report(corpus_dir, "de-en", "dev", VectorSource(tmp_path), MiningConfig())
