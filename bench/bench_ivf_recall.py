r"""IVF recall and speed on embeddings of real sentences, against exact search, across nprobe.

    python bench/bench_ivf_recall.py                         # FLORES-200 devtest, all languages, char-ngram
    python bench/bench_ivf_recall.py --embeddings emb.npy    # any precomputed embedding matrix (or several)
    python bench/bench_ivf_recall.py --embeddings 'data/train/teacher/use-multilingual/chunk-*.npy' \
        --database 40000 140000 --factory IVF1024,Flat IVF4096,Flat   # the default encoder's vectors, per size
    python bench/bench_ivf_recall.py --encoder use-multilingual --save-embeddings flores-use.npy \
        --factory IVF1024,Flat IVF4096,Flat --train-per-list 64 --nprobe 16 64 256 \
        --quantizer one-level two-level two-level+1 two-level+2 two-level+4   # the quantizer's training, each way

Synthetic clusters flatter IVF (bench_mining.py sees recall 1.0 at any nprobe); real sentence vectors are
spread out. This embeds every sentence of ../shared/data/dev/flores200-devtest (~211k sentences in ~200
languages; the dev pool, used here for measuring only) with an encoder, holds out `--queries` random sentences
as queries, indexes the rest with the default factory for that size, and reports recall@k against exact search
for several nprobe values, with the search time of each. Until the CMLM encoder exists the encoder is the
char-ngram baseline, whose geometry differs from a neural encoder's: rerun with real embeddings when they exist.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import faiss  # noqa: E402, I001
import numpy as np

import miner  # noqa: F401  (first: it chooses the OpenBLAS kernels faiss loads, miner/blas.py)
from miner.index import KnnConfig, build_index, default_factory, default_nprobe, ivf_lists, search
from miner.neighbours import knn

REPO = Path(__file__).resolve().parents[1]
FLORES = REPO.parent / "shared" / "data" / "dev" / "flores200-devtest" / "devtest"


def flores_sentences(folder: Path) -> list[str]:
    sentences = []
    for path in sorted(folder.glob("*.devtest.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            sentences.extend(line.rstrip("\n") for line in handle if line.strip())
    return sentences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embeddings", nargs="+", help=".npy matrices (globs) instead of embedding FLORES, "
                        "concatenated in name order")
    parser.add_argument("--database", type=int, nargs="+", help="database sizes to measure (default: all but "
                        "the queries)")
    parser.add_argument("--factory", nargs="+", help="index factories (default: miner.index's for the size)")
    parser.add_argument("--nprobe", type=int, nargs="+", default=[4, 8, 16, 32, 64, 128],
                        help="lists searched a query, each measured")
    parser.add_argument("--train-per-list", type=int, default=256,
                        help="training vectors per inverted list (faiss's own cap is 256)")
    parser.add_argument("--quantizer", nargs="+", type=quantizer_training, default=["one-level"],
                        help="how the coarse quantizer trains: one-level (faiss's k-means over all lists), "
                        "two-level (miner.index.two_level_centroids, the default from knn.two_level_lists lists) or "
                        "two-level+N (then N iterations over all lists: knn.two_level_refine); each is measured")
    parser.add_argument("--save-embeddings", type=Path, help="write the embedded FLORES vectors here (.npy), to "
                        "measure again with --embeddings without embedding again")
    parser.add_argument("--encoder", default="char-ngram",
                        help="what embeds FLORES without --embeddings (any spec load_encoder takes)")
    parser.add_argument("--queries", type=int, default=20_000,
                        help="vectors drawn as queries; the rest are the database (default 20000)")
    parser.add_argument("--k", type=int, default=4, help="neighbours whose recall is measured (default 4)")
    parser.add_argument("--seed", type=int, default=0, help="the draw of the queries")
    parser.add_argument("--out", type=Path, default=Path("bench/results/ivf_recall.json"), help="the results' JSON")
    args = parser.parse_args()

    if args.embeddings:
        import glob

        paths = sorted(p for pattern in args.embeddings for p in glob.glob(pattern))
        vectors = np.concatenate([np.load(p, mmap_mode="r") for p in paths])
        source = f"{len(vectors)} vectors from {len(paths)} file(s) {paths[0]}..."
    else:
        from encoders import load_encoder

        sentences = flores_sentences(FLORES)
        started = time.perf_counter()
        vectors = load_encoder(args.encoder).encode(sentences)
        source = f"{len(sentences)} FLORES-200 devtest sentences, {args.encoder}"
        print(f"embedded {len(sentences)} sentences in {time.perf_counter() - started:.1f} s")
        if args.save_embeddings:
            np.save(args.save_embeddings, vectors)
    order = np.random.default_rng(args.seed).permutation(len(vectors))
    queries = np.asarray(vectors[np.sort(order[: args.queries])])
    rest = order[args.queries :]
    results = {"source": source, "queries": len(queries), "k": args.k, "runs": []}
    for size in args.database or [len(rest)]:
        database = np.asarray(vectors[np.sort(rest[:size])])
        started = time.perf_counter()
        _, exact_ids = knn(queries, database, args.k, KnnConfig(index="Flat"))
        exact_seconds = time.perf_counter() - started
        print(f"{len(queries)} queries, {len(database)} database vectors, d = {database.shape[1]}: "
              f"exact search {exact_seconds:.1f} s", flush=True)
        for factory in args.factory or [default_factory(len(database))]:
            for quantizer in args.quantizer:
                results["runs"].append(measure(queries, database, exact_ids, exact_seconds, factory, quantizer, args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")


def quantizer_training(text: str) -> str:
    name, _, refine = text.partition("+")
    if name not in ("one-level", "two-level") or (refine and (name == "one-level" or not refine.isdigit())):
        raise argparse.ArgumentTypeError(f"{text!r}: one-level, two-level or two-level+N")
    return text


def measure(queries, database, exact_ids, exact_seconds, factory, quantizer, args) -> dict:
    nlist = ivf_lists(factory)
    if nlist is None:  # Flat (the default under 10,000 rows) has no lists to probe: nothing to measure here
        raise SystemExit(f"--factory {factory}: an IVF factory is needed (IVF64,Flat ...): this measures how many "
                         "of the exact neighbours the probed lists hold")
    started, cpu = time.perf_counter(), time.process_time()
    refine = int(quantizer.partition("+")[2] or 0)
    index = build_index(database, KnnConfig(index=factory, train_sample=args.train_per_list * nlist,
                                            two_level_lists=nlist if quantizer.startswith("two-level") else 0,
                                            two_level_refine=refine))
    build_seconds, build_cpu = time.perf_counter() - started, time.process_time() - cpu
    # nlist x sum(list size^2) / N^2: 1 when lists are equal; the join's comparisons grow with it
    imbalance = faiss.extract_index_ivf(index).invlists.imbalance_factor()
    print(f"{factory} {quantizer}: built in {build_seconds:.1f} s ({build_cpu:.1f} CPU-s), list imbalance "
          f"{imbalance:.3f}", flush=True)
    run = {"database": len(database), "factory": factory, "quantizer": quantizer, "train_per_list": args.train_per_list,
           "default_nprobe": default_nprobe(nlist), "exact_search_seconds": round(exact_seconds, 2),
           "ivf_build_seconds": round(build_seconds, 2), "ivf_build_cpu_seconds": round(build_cpu, 2),
           "list_imbalance": round(imbalance, 4), "nprobe": {}}
    for nprobe in sorted({*args.nprobe, run["default_nprobe"]}):
        faiss.ParameterSpace().set_index_parameter(index, "nprobe", nprobe)
        started = time.perf_counter()
        _, ids = search(index, queries, database, args.k, KnnConfig(index=factory, nprobe=nprobe))
        seconds = time.perf_counter() - started
        recall = sum(len(np.intersect1d(a, e)) for a, e in zip(ids, exact_ids)) / exact_ids.size
        top1 = float((ids[:, 0] == exact_ids[:, 0]).mean())
        run["nprobe"][nprobe] = {"seconds": round(seconds, 2), "recall_at_k": round(recall, 4),
                                 "top1_agreement": round(top1, 4),
                                 "speedup_over_exact": round(exact_seconds / seconds, 1)}
        print(f"{len(database)} {factory} {quantizer} nprobe {nprobe:4d}: {seconds:6.2f} s  "
              f"recall@{args.k} {recall:.4f}  top-1 {top1:.4f}  x{exact_seconds / seconds:.1f}", flush=True)
    return run


if __name__ == "__main__":
    main()
