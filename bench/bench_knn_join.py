"""The k-NN join's per-list comparisons on the host and on a GPU, with faiss's big_batch_search as the peer.

    python bench/bench_knn_join.py --sizes 20000 --threads 1          # a quick look, host only where no GPU
    python bench/bench_knn_join.py --sizes 320000 --rows-per-list 160 2560   # -> bench/results/knn_join.json

Two languages of N synthetic sentences each (bench_pairs_scaling.py's generator: vectors around topic centres,
half of the targets planted noisy translations of sources), d = 256, stored as float16 as the pipeline stores
them. For each list size, a quantizer of N / rows-per-list lists trained on 64 rows a list; each query probes
enough lists to meet about `--probe-rows` database rows (2,560 by default: the scaling benchmark's 16 lists of
160). Contenders, each searching both directions for k = 4 (wall time on this machine, `--threads` host threads:
all its cores by default):
  - join-host: miner.knn_join.search_by_lists, the Beam stage's per-list work (assignment, grouping, list_topk
    with numpy's BLAS, exact rescoring, the top-k merge) on one machine;
  - join-cuda: the same with list_topk's candidates found by torch on the GPU (rescoring and merging on the host);
  - big_batch_search: faiss.contrib's IVF join (queries bucketed by list, each list scanned once) over an IVF
    index on the same centroids with the same nprobe: the peer, k-NN only.
Each contender's neighbours are checked against exact search (torch, on the GPU when there is one): recall@4, and
the planted translations found first (recall@1). Results go to bench/results/knn_join.json; docs/benchmarks.md
quotes them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import sys
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
# BLAS and OpenMP (faiss) read their thread counts when they load: set them before numpy does
THREADS = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else os.cpu_count()
for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[variable] = str(THREADS)

import numpy as np
from planted_vectors import synthetic  # the scaling benchmark's data, same seed rule


def exact_neighbours(queries: np.ndarray, database: np.ndarray, k: int, device: str) -> np.ndarray:
    import torch

    from miner.knn_join import exact_float32

    with exact_float32(torch):
        db = torch.from_numpy(database).to(device)
        found = []
        for start in range(0, len(queries), 8192):
            sims = torch.from_numpy(queries[start:start + 8192]).to(device) @ db.T
            found.append(torch.topk(sims, k, dim=1).indices.cpu().numpy())
    return np.concatenate(found)


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def big_batch(queries: np.ndarray, database: np.ndarray, centroids: np.ndarray, nprobe: int, k: int) -> np.ndarray:
    import faiss
    from faiss.contrib.big_batch_search import big_batch_search

    quantizer = faiss.IndexFlatIP(database.shape[1])
    quantizer.add(centroids)
    index = faiss.IndexIVFFlat(quantizer, database.shape[1], len(centroids), faiss.METRIC_INNER_PRODUCT)
    index.add(database)
    index.nprobe = nprobe
    with contextlib.redirect_stdout(io.StringIO()):  # it prints per-list progress whatever `verbose` says
        return big_batch_search(index, queries, k)[1]


def join(queries: np.ndarray, stored: np.ndarray, centroids: np.ndarray, nprobe: int, k: int,
         device: str | None = None) -> np.ndarray:
    from miner.knn_join import search_by_lists

    return search_by_lists(queries, stored, k, centroids, nprobe, device=device).refs


def one_setting(src, tgt, planted, rows_per_list: int, args, device: str | None) -> dict:
    from miner.index import KnnConfig
    from miner.knn_join import train_quantizer, training_rows
    from miner.vectors import unit_rows

    n = len(src)
    nlist = 1 << max(0, round(np.log2(n / rows_per_list)))
    nprobe = min(nlist, max(1, round(args.probe_rows / rows_per_list)))
    config = KnnConfig(index=f"IVF{nlist},Flat")
    sample = np.random.default_rng(0).choice(n, min(n, training_rows(nlist, config)), replace=False)
    exact_device = device or "cpu"
    runs: dict[str, dict] = {}
    for direction, queries, database in (("fwd", src, tgt), ("bwd", tgt, src)):
        stored = database.astype(np.float16)
        unit_db = unit_rows(stored, "database")
        centroids, train_s = timed(train_quantizer, stored[np.sort(sample)], nlist, config)
        exact = exact_neighbours(queries, unit_db, args.k, exact_device)
        contenders = {"join-host": partial(join, queries, stored, centroids, nprobe, args.k),
                      "big_batch_search": partial(big_batch, queries, unit_db, centroids, nprobe, args.k)}
        if device:
            contenders["join-cuda"] = partial(join, queries, stored, centroids, nprobe, args.k, device)
        for name, run in contenders.items():
            ids, seconds = timed(run)
            entry = runs.setdefault(name, {"seconds": 0.0, "hits": 0, "planted": 0})
            entry["seconds"] += seconds
            entry["hits"] += sum(len(np.intersect1d(a, b)) for a, b in zip(ids, exact))
            if direction == "fwd":
                rows = np.array(list(planted.items()))
                entry["planted"] = float((ids[rows[:, 0], 0] == rows[:, 1]).mean())
            print(f"  {direction} {name:>16}: {seconds:7.2f} s", flush=True)
        runs.setdefault("quantizer training", {"seconds": 0.0})["seconds"] += train_s
    for name, entry in runs.items():
        if "hits" in entry:
            entry["recall_at_k"] = round(entry.pop("hits") / (2 * n * args.k), 4)
            entry["planted_recall_at_1"] = round(entry.pop("planted"), 4)
            entry["sentences_per_second"] = round(2 * n / entry["seconds"])
        entry["seconds"] = round(entry["seconds"], 2)
    base = runs["big_batch_search"]["seconds"]
    for name in ("join-host", "join-cuda"):
        if name in runs:
            runs[name]["vs_big_batch_search"] = round(base / runs[name]["seconds"], 2)
    return {"n_per_language": n, "nlist": nlist, "nprobe": nprobe, "rows_per_list": rows_per_list,
            "rows_compared_per_query": round(nprobe * n / nlist), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[320_000], help="sentences per language")
    parser.add_argument("--rows-per-list", type=int, nargs="+", default=[160, 2560],
                        help="list sizes to measure: N / this lists (default 160 and 2560)")
    parser.add_argument("--probe-rows", type=int, default=2560,
                        help="database rows compared per query: nprobe = this / rows-per-list (at least 1)")
    parser.add_argument("--dim", type=int, default=256, help="synthetic vectors' size (default 256)")
    parser.add_argument("--k", type=int, default=4, help="neighbours found a query (default 4)")
    parser.add_argument("--threads", type=int, default=THREADS, help="host threads (default: every core)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "knn_join.json",
                        help="the results' JSON")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else None
    report = {"command": " ".join(sys.argv), "machine": f"{platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores", "threads": args.threads,
              "gpu": torch.cuda.get_device_name(0) if device else None,
              "torch": torch.__version__, "dim": args.dim, "k": args.k, "settings": []}
    for n in args.sizes:
        src, tgt, planted = synthetic(n, args.dim, seed=n)
        for rows_per_list in args.rows_per_list:
            print(f"N {n}, about {rows_per_list} rows a list", flush=True)
            report["settings"].append(one_setting(src, tgt, planted, rows_per_list, args, device))
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for setting in report["settings"]:
        print(f"N {setting['n_per_language']}, IVF{setting['nlist']} nprobe {setting['nprobe']}:")
        for name, entry in setting["runs"].items():
            print(f"  {name:>18}: {json.dumps(entry)}")


if __name__ == "__main__":
    main()
