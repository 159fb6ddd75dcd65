r"""The library's IVF k-NN (miner.neighbours.knn) against faiss's own IVF search over the same trained index: CPU
seconds (training included in both) and whether ids and similarity bits agree, per database size.

    python bench/bench_library_knn.py                                   # synthetic 256-d: 10^4 / IVF64, 10^5 / IVF512
    python bench/bench_library_knn.py --vectors english.npy --database 10000 30000 45000 60000 100000 \
        --queries 10000 --factory IVF1024,Flat       # real vectors: one matrix, queries drawn from the rows after the
                                                      # largest database (e.g. bench/threshold_offsets.py's --cache)

`knn` answers `IVF<n>,Flat` by the join's comparisons (miner.knn_join.knn_by_lists) where the lists average
JOIN_MIN_ROWS_PER_LIST rows or more, and by faiss's search below that; this times the join directly at every size,
so the sizes on both sides of that floor show why it is where it is (docs/benchmarks.md, "The library's IVF k-NN by
the join"). One thread (BLAS and OpenMP), as the sessions' other CPU benchmarks.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import miner  # noqa: E402, F401  (first: it chooses the OpenBLAS kernels faiss loads, miner/blas.py)
from miner.index import KnnConfig, build_index, ivf_lists, search  # noqa: E402

# knn's own join path, called at every size (knn itself keeps faiss's search below the floor)
from miner.neighbours import JOIN_MIN_ROWS_PER_LIST, _knn_by_lists  # noqa: E402

NAMES = ("queries", "database")


def cpu() -> float:
    return time.process_time()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=Path, help="an .npy matrix of real vectors (default: synthetic 256-d)")
    parser.add_argument("--database", type=int, nargs="+", default=[10_000, 100_000],
                        help="database sizes, one run each (default 10000 100000)")
    parser.add_argument("--queries", type=int, default=None, help="queries per size (default: as many as the database)")
    parser.add_argument("--factory", nargs="+", default=None,
                        help="one factory for every size, or one per size (default: IVF<n / 156>, a power of two)")
    parser.add_argument("--nprobe", type=int, default=16, help="lists a query probes (default 16)")
    parser.add_argument("--k", type=int, default=4, help="neighbours a query (default 4)")
    args = parser.parse_args()

    factories = args.factory or [f"IVF{1 << max(0, round(np.log2(n / 160)))},Flat" for n in args.database]
    factories = factories * len(args.database) if len(factories) == 1 else factories
    print("| database | factory | rows a list | queries | faiss's IVF search, CPU-s | the join, CPU-s | join / faiss "
          "| same ids | same similarity bits |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    flat = [factory for factory in factories if ivf_lists(factory) is None]
    if flat:  # the join compares lists: a factory without them has nothing to compare
        parser.error(f"--factory {flat[0]}: an IVF factory is needed (IVF1024,Flat ...)")
    for n, factory in zip(args.database, factories):
        m = args.queries or n
        if args.vectors is not None:
            matrix = np.load(args.vectors, mmap_mode="r")
            if len(matrix) < max(args.database) + m:
                raise SystemExit(f"{args.vectors}: {len(matrix)} rows, fewer than {max(args.database)} + {m}")
            database, queries = np.asarray(matrix[:n]), np.asarray(matrix[max(args.database):max(args.database) + m])
        else:
            from planted_vectors import synthetic

            database, queries, _ = synthetic(n, 256, 0)
            queries = queries[:m]
        config = KnnConfig(index=factory, nprobe=args.nprobe)
        if n == args.database[0]:  # once, untimed: imports (torch, which the join's widening uses) and first calls
            search(build_index(database, config), queries[:100], database, args.k, config)
            _knn_by_lists(queries[:100], database, args.k, factory, config, NAMES)
        start = cpu()
        want_sims, want_ids = search(build_index(database, config), queries, database, args.k, config)
        faiss_s = cpu() - start
        start = cpu()
        sims, ids = _knn_by_lists(queries, database, args.k, factory, config, NAMES)
        join_s = cpu() - start
        rows = n / ivf_lists(factory)
        print(f"| {n:,} | {factory} | {rows:.0f}{' (below the floor)' if rows < JOIN_MIN_ROWS_PER_LIST else ''} | "
              f"{m:,} | {faiss_s:.2f} | {join_s:.2f} | {join_s / faiss_s:.2f}x | {(ids == want_ids).all(1).mean():.5f} "
              f"| {(sims.view(np.uint32) == want_sims.view(np.uint32)).all(1).mean():.5f} |", flush=True)


if __name__ == "__main__":
    main()
