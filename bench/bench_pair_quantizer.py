"""Recall of the join's lists with one coarse quantizer per language (the pairs stage's) against one per language
pair: trained on both languages, or one language's used for both (tried for issue 23 and rejected,
docs/benchmarks.md, "One quantizer for both languages of a pair").

    python bench/bench_pair_quantizer.py --pairs deu_Latn zho_Hans --nlist 256 512      # the default encoder

A language pair's bitext from the train pool (data/train/bitext, written by `python -m training.prepare`) is
embedded both sides. Half of the xx side are the queries; the database is the English of the other half, with the
translations of a quarter of the queries planted in it, so most queries have no translation there, as in a crawl.
Recall@4 of exact search is what the lists reach: a true neighbour counts where its list is among the query's
nprobe, for the xx -> en direction (fwd) and back (bwd), with miner.knn_join's own train_quantizer and assign.
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import faiss  # noqa: E402, I001
import numpy as np

import miner  # noqa: F401  (first: it chooses the OpenBLAS kernels faiss loads, miner/blas.py)
from miner.index import KnnConfig
from miner.knn_join import assign, train_quantizer, training_rows
from miner.vectors import unit_rows

REPO = Path(__file__).resolve().parents[1]


def bitext(path: Path) -> tuple[list[str], list[str]]:
    xx, en = [], []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and parts[0] and parts[1]:
                xx.append(parts[0])
                en.append(parts[1])
    return xx, en


def reached(queries, database, centroids, nprobe: int, truth: np.ndarray) -> tuple[float, float]:
    """recall@k of the lists (the share of each query's exact k nearest whose list the query probes), and the
    database's largest list over the mean."""
    own = assign(database, centroids, 1)[:, 0]
    probes = assign(queries, centroids, nprobe)
    sizes = np.bincount(own, minlength=len(centroids))
    return float((own[truth][:, :, None] == probes[:, None, :]).any(axis=-1).mean()), sizes.max() / sizes.mean()


def sample(rows: np.ndarray, n: int, seed: int) -> np.ndarray:
    return rows[np.sort(np.random.default_rng(seed).choice(len(rows), min(n, len(rows)), replace=False))]


def measure(xx: np.ndarray, en: np.ndarray, nlists: list[int], nprobe: int) -> None:
    half = len(xx) // 2
    queries, database = xx[:half], np.concatenate([en[half:], en[: half // 2]])
    exact = faiss.IndexFlatIP(xx.shape[1])
    exact.add(database)
    fwd_truth = exact.search(queries, 4)[1]
    exact = faiss.IndexFlatIP(xx.shape[1])
    exact.add(queries)
    bwd_truth = exact.search(database, 4)[1]
    for nlist in nlists:
        rows, config = training_rows(nlist, KnnConfig()), KnnConfig()
        own_xx = train_quantizer(sample(queries, rows, 1), nlist, config)
        own_en = train_quantizer(sample(database, rows, 2), nlist, config)
        both = train_quantizer(np.concatenate([sample(queries, rows // 2, 3), sample(database, rows // 2, 4)]),
                               nlist, config)
        # (quantizer the xx queries probe = en database's lists, quantizer the en queries probe = xx's lists)
        ways = {"each language its own": (own_en, own_xx), "one, trained on both": (both, both),
                "English's for both": (own_en, own_en), "the other language's for both": (own_xx, own_xx)}
        for name, (for_en, for_xx) in ways.items():
            (fwd, en_lists), (bwd, xx_lists) = (reached(queries, database, for_en, nprobe, fwd_truth),
                                                reached(database, queries, for_xx, nprobe, bwd_truth))
            print(f"| IVF{nlist} | {name} | {fwd:.3f} | {bwd:.3f} | {en_lists:.2f} | {xx_lists:.2f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", nargs="+", default=["deu_Latn", "zho_Hans"], help="xx of xx-eng_Latn bitexts")
    parser.add_argument("--bitext", type=Path, default=REPO / "data" / "train" / "bitext",
                        help="the folder of xx-eng_Latn.tsv.gz bitexts (default data/train/bitext)")
    parser.add_argument("--encoder", default=str(REPO / "models" / "cmlm-ensemble"),
                        help="the encoder that embeds both sides (default models/cmlm-ensemble)")
    parser.add_argument("--nlist", type=int, nargs="+", default=[256, 512],
                        help="quantizer sizes, one run each (default 256 512)")
    parser.add_argument("--nprobe", type=int, default=16, help="lists a query probes (default 16)")
    args = parser.parse_args()
    from encoders import load_encoder

    encoder = load_encoder(args.encoder)
    for language in args.pairs:
        xx, en = bitext(args.bitext / f"{language}-eng_Latn.tsv.gz")
        vectors = [unit_rows(np.asarray(encoder.encode(texts, language=name), dtype=np.float32), name)
                   for texts, name in ((xx, language), (en, "eng_Latn"))]
        print(f"\n{language}-eng_Latn: {len(xx)} pairs, d = {vectors[0].shape[1]}, nprobe {args.nprobe}")
        print("| lists | quantizer | recall@4 xx -> en | en -> xx | largest list / mean, en | xx |\n"
              "| --- | --- | --- | --- | --- | --- |")
        measure(*vectors, args.nlist, args.nprobe)


if __name__ == "__main__":
    main()
