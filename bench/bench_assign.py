"""The k-NN join's list assignment (miner.knn_join.assign: faiss's flat search over the centroids) against the way
the join compares lists (miner.knn_join.list_topk: numpy's BLAS for candidates, each rescored pair by pair).

    taskset -c 1 python bench/bench_assign.py                      # IVF8192, d = 256, shards of 20,000 rows
    python bench/bench_assign.py --lists 2048 --dim 1024 --shards 4
    OPENBLAS_CORETYPE=Prescott taskset -c 1 python bench/bench_assign.py   # the kernels faiss's OpenBLAS chose
                                                                   # on CPUs it does not know (miner/blas.py)

Each shard's rows (float16, as stored) are given their own list (k = 1, a database row) and their nprobe nearest
lists (a query) by each contender in turn, the order reversed every other shard, so that a machine whose speed
drifts slows both alike. Prints CPU seconds per contender, the ratio, and how often the two give the same lists
(as sets, and in the same order). One thread for BLAS and faiss, as a pairs-stage worker runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import faiss  # noqa: E402
import numpy as np  # noqa: E402

import miner  # noqa: E402, F401  (first: it chooses the OpenBLAS kernels faiss loads, miner/blas.py)
from miner.knn_join import assign, list_topk  # noqa: E402
from miner.vectors import unit_rows  # noqa: E402


def by_list_topk(vectors: np.ndarray, centroids: np.ndarray, nprobe: int) -> np.ndarray:
    """Each row's nprobe nearest centroids as the join finds a query's nearest rows in a list."""
    found = list_topk(unit_rows(vectors, "rows"), np.arange(len(vectors), dtype=np.int64), centroids,
                      np.arange(len(centroids), dtype=np.int64), nprobe, unit=True)
    return found.refs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lists", type=int, default=8192, help="the quantizer's lists (default 8192)")
    parser.add_argument("--nprobe", type=int, default=16, help="lists a query is assigned to (default 16)")
    parser.add_argument("--dim", type=int, default=256, help="synthetic vectors' size (default 256)")
    parser.add_argument("--rows", type=int, default=20_000, help="rows a shard")
    parser.add_argument("--shards", type=int, default=6, help="shards assigned, each contender in turn")
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(0)
    centroids = unit_rows(rng.standard_normal((args.lists, args.dim)).astype(np.float32), "centroids")
    by_faiss, by_list = "assign (faiss IndexFlatIP)", "list_topk (numpy BLAS, rescored)"
    contenders = {by_faiss: assign, by_list: by_list_topk}
    cpu = dict.fromkeys(contenders, 0.0)
    found = {name: [] for name in contenders}
    for shard in range(args.shards):
        rows = rng.standard_normal((args.rows, args.dim)).astype(np.float16)
        for name in (list(contenders) if shard % 2 == 0 else list(contenders)[::-1]):
            start = time.process_time()
            lists = [contenders[name](rows, centroids, k) for k in (1, args.nprobe)]
            cpu[name] += time.process_time() - start
            found[name].append(lists)
    faiss_lists, topk_lists = found[by_faiss], found[by_list]
    same_sets = np.mean([np.array_equal(np.sort(a[1], axis=1), np.sort(b[1], axis=1)) and np.array_equal(a[0], b[0])
                         for a, b in zip(faiss_lists, topk_lists)])
    same_rows = np.mean(np.concatenate([(np.sort(a[1], axis=1) == np.sort(b[1], axis=1)).all(axis=1)
                                        for a, b in zip(faiss_lists, topk_lists)]))
    same_order = np.mean(np.concatenate([(a[1] == b[1]).all(axis=1) for a, b in zip(faiss_lists, topk_lists)]))
    report = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "lists": args.lists, "nprobe": args.nprobe, "dim": args.dim, "rows": args.rows * args.shards,
              "cpu_seconds": {name: round(value, 2) for name, value in cpu.items()},
              "list_topk / assign": round(cpu[by_list] / cpu[by_faiss], 2),
              "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
              "rows with the same lists (as sets)": round(float(same_rows), 6),
              "rows with the same lists in the same order": round(float(same_order), 6),
              "shards with every row's lists the same": round(float(same_sets), 3)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
