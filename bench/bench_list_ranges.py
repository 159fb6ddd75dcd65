r"""How many ranges of consecutive lists a query's probes fall in: k-means' own list numbering against the orders
the pairs stage's quantizer numbers its lists in (miner.knn_join.list_order: spatial_order's recursive halving,
and from 4096 lists cell by cell). A query travels once to each range it probes, so this is the k-NN shuffle's
query copies per sentence.

    python bench/bench_list_ranges.py --vectors 'data/ensemble-cache/*/*.npy'    # any .npy sentence vectors
    python bench/bench_list_ranges.py --vectors flores-use.npy --per-file 300000 --database 186448 \
        --queries 20000 --nlist 4096 --ranges 12 32 64      # the FLORES vectors bench_ivf_recall.py saves

The vectors are split into a database (to train the quantizer on) and queries; both drawn at random from all
files, up to --per-file rows each.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from pathlib import Path

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from miner.index import KnnConfig
from miner.knn_join import assign, spatial_order, train_quantizer


def ranges_per_query(lists: np.ndarray, rank: np.ndarray, per_range: int) -> float:
    ranges = np.sort(rank[lists] // per_range, axis=1)
    return float(np.mean(1 + (np.diff(ranges, axis=1) != 0).sum(axis=1)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", required=True, help="a glob of .npy files of sentence vectors")
    parser.add_argument("--per-file", type=int, default=2000, help="rows drawn from each file at most")
    parser.add_argument("--database", type=int, default=60_000, help="rows the quantizer trains on")
    parser.add_argument("--queries", type=int, default=40_000, help="rows whose probes are counted")
    parser.add_argument("--nlist", type=int, default=512, help="the quantizer's lists (default 512)")
    parser.add_argument("--nprobe", type=int, default=16, help="lists a query probes (default 16)")
    parser.add_argument("--ranges", type=int, nargs="+", default=[8, 16, 32], help="lists per range")
    args = parser.parse_args()

    files = sorted(glob.glob(args.vectors))
    if not files:
        raise SystemExit(f"no files match {args.vectors}")
    vectors = np.concatenate([np.load(f, mmap_mode="r")[: args.per_file] for f in files]).astype(np.float32)
    np.random.default_rng(0).shuffle(vectors)
    database, queries = vectors[: args.database], vectors[args.database: args.database + args.queries]
    centroids = train_quantizer(database, args.nlist, KnnConfig())  # in list_order
    shuffled = np.random.default_rng(1).permutation(args.nlist)  # a numbering with no order, as k-means gives
    halving = np.empty(args.nlist, dtype=np.int64)
    halving[spatial_order(centroids)] = np.arange(args.nlist)  # each list's place in spatial_order alone
    lists = assign(queries, centroids, args.nprobe)
    print(f"{len(files)} files, {len(database)} database rows, {len(queries)} queries, d = {vectors.shape[1]}, "
          f"IVF{args.nlist}, nprobe {args.nprobe}")
    print("| lists per range | ranges a query probes, unordered numbering | spatial order | the quantizer's "
          "(list_order) |")
    print("| --- | --- | --- | --- |")
    for per_range in args.ranges:
        print(f"| {per_range} | {ranges_per_query(lists, shuffled, per_range):.2f} | "
              f"{ranges_per_query(lists, halving, per_range):.2f} | "
              f"{ranges_per_query(lists, np.arange(args.nlist), per_range):.2f} |")


if __name__ == "__main__":
    main()
