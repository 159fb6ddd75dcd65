"""Benchmark of the mining core: k-NN search, margin scoring and selection at 100k x 100k, d = 768.

    python bench/bench_mining.py                       # the figures in docs/benchmarks.md
    python bench/bench_mining.py --n 20000 --quick     # a smoke run

Vectors are clustered (real embeddings are: IVF recall on uniform random vectors is meaningless): 1,000 cluster
centres, each sentence a centre plus noise (same-cluster cosine ~0.5), and half of the targets are noisy
copies of a source ("translations", cosine ~0.9). Per stage: wall time and peak resident memory above the
stage's start (Linux: VmHWM after resetting it through /proc/self/clear_refs).

Peers, in the same run:
- exact search: torch, chunked matmul + topk (what sentence-transformers' semantic_search does);
- scoring + max selection: a per-candidate Python loop, the way LASER's mine_bitexts.py and the
  sentence-transformers bitext-mining example compute margins and the greedy one-to-one pass.
IVF at the default factory and nprobe: build time, search time, recall@k against exact, speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from contextlib import contextmanager
from pathlib import Path

import faiss  # noqa: E402, I001
import numpy as np

import miner  # noqa: F401  (first: it chooses the OpenBLAS kernels faiss loads, miner/blas.py)
from miner.index import KnnConfig, build_index, default_factory, default_nprobe, ivf_lists, search
from miner.margin import candidate_margins, default_ratio_floor, neighbourhood_mean
from miner.neighbours import knn
from miner.selection import Candidates, select


def clustered_pairs(n: int, dim: int, clusters: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sigma = float(1 / np.sqrt(dim))  # noise of norm ~1 around unit centres (a Python float keeps float32)
    centres = rng.normal(size=(clusters, dim)).astype(np.float32) * sigma

    def sentences(count):
        out = centres[rng.integers(0, clusters, count)]
        out += rng.normal(scale=sigma, size=(count, dim)).astype(np.float32)
        return out

    src = sentences(n)
    translated = rng.permutation(n)[: n // 2]
    tgt = np.concatenate([src[translated] + rng.normal(scale=0.5 * sigma, size=(n // 2, dim)).astype(np.float32),
                          sentences(n - n // 2)])
    for matrix in (src, tgt):
        faiss.normalize_L2(matrix)
    return src, tgt


def rss_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field))


@contextmanager
def measured(results: dict, name: str):
    """Record wall seconds and peak extra memory (MiB) of the block under results[name]."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # reset VmHWM to the current RSS
    except OSError:
        pass
    before = rss_kib("VmRSS")
    started = time.perf_counter()
    yield
    results[name] = {"seconds": round(time.perf_counter() - started, 3),
                     "peak_extra_mib": round((rss_kib("VmHWM") - before) / 1024, 1)}
    print(f"{name:42s} {results[name]['seconds']:9.2f} s {results[name]['peak_extra_mib']:9.1f} MiB", flush=True)


def torch_knn(queries: np.ndarray, database: np.ndarray, k: int, batch: int = 4096):
    import torch

    db = torch.from_numpy(database)
    sims, ids = [], []
    with torch.inference_mode():
        for start in range(0, len(queries), batch):
            top = torch.topk(torch.from_numpy(queries[start : start + batch]) @ db.T, k, dim=1)
            sims.append(top.values.numpy())
            ids.append(top.indices.numpy())
    return np.concatenate(sims), np.concatenate(ids)


def loop_scoring_and_max(src, tgt, fwd_sims, fwd_ids, bwd_sims, bwd_ids):
    """The per-candidate loops of the reference scripts: margin per (sentence, neighbour), then a greedy pass."""
    fwd_mean, bwd_mean = fwd_sims.mean(axis=1), bwd_sims.mean(axis=1)

    def scores(x, y, ids, x_mean, y_mean):
        out = np.zeros(ids.shape)
        for i in range(ids.shape[0]):
            for j in range(ids.shape[1]):
                out[i, j] = x[i].dot(y[ids[i, j]]) / ((x_mean[i] + y_mean[ids[i, j]]) / 2)
        return out

    fwd_scores = scores(src, tgt, fwd_ids, fwd_mean, bwd_mean)
    bwd_scores = scores(tgt, src, bwd_ids, bwd_mean, fwd_mean)
    fwd_best = fwd_ids[np.arange(len(src)), fwd_scores.argmax(axis=1)]
    bwd_best = bwd_ids[np.arange(len(tgt)), bwd_scores.argmax(axis=1)]
    pool_src = np.concatenate([np.arange(len(src)), bwd_best])
    pool_tgt = np.concatenate([fwd_best, np.arange(len(tgt))])
    pool_score = np.concatenate([fwd_scores.max(axis=1), bwd_scores.max(axis=1)])
    seen_src, seen_tgt, pairs = set(), set(), []
    for i in np.argsort(-pool_score, kind="stable"):
        s, t = pool_src[i], pool_tgt[i]
        if s not in seen_src and t not in seen_tgt:
            seen_src.add(s)
            seen_tgt.add(t)
            pairs.append((int(s), int(t)))
    return pairs


def recall_at_k(approx_ids: np.ndarray, exact_ids: np.ndarray) -> float:
    hits = sum(len(np.intersect1d(a, e)) for a, e in zip(approx_ids, exact_ids))
    return hits / exact_ids.size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="sentences per side")
    parser.add_argument("--dim", type=int, default=768, help="vector size (default 768)")
    parser.add_argument("--k", type=int, default=4, help="neighbours in the margin (default 4)")
    parser.add_argument("--clusters", type=int, default=1000, help="cluster centres the vectors are drawn around")
    parser.add_argument("--seed", type=int, default=0, help="the vectors' random seed")
    parser.add_argument("--quick", action="store_true", help="skip the nprobe sweep")
    parser.add_argument("--out", type=Path, default=Path("bench/results/mining.json"), help="the results' JSON")
    args = parser.parse_args()

    results: dict = {}
    print(f"{args.n} x {args.n} vectors, d = {args.dim}, k = {args.k}, faiss threads {faiss.omp_get_max_threads()}")
    src, tgt = clustered_pairs(args.n, args.dim, args.clusters, args.seed)
    exact = KnnConfig(index="Flat")

    with measured(results, "search exact (faiss Flat), src->tgt"):
        fwd_sims, fwd_ids = knn(src, tgt, args.k, exact)
    with measured(results, "search exact (faiss Flat), tgt->src"):
        bwd_sims, bwd_ids = knn(tgt, src, args.k, exact)
    with measured(results, "peer: search exact (torch mm+topk), src->tgt"):
        peer_sims, peer_ids = torch_knn(src, tgt, args.k)
    results["torch_matches_faiss"] = float((peer_ids == fwd_ids).mean())

    with measured(results, "scoring (means + ratio margins, both ways)"):
        fwd_mean, bwd_mean = neighbourhood_mean(fwd_sims), neighbourhood_mean(bwd_sims)
        floor = default_ratio_floor(src.shape[1])
        forward = Candidates(fwd_ids, candidate_margins(fwd_sims, fwd_ids, fwd_mean, bwd_mean, floor=floor), fwd_sims)
        backward = Candidates(bwd_ids, candidate_margins(bwd_sims, bwd_ids, bwd_mean, fwd_mean, floor=floor), bwd_sims)
    for mode in ("max", "intersect", "union"):
        with measured(results, f"selection {mode}"):
            pairs = select(forward, backward, mode)
        if mode == "max":
            ours_max = set(zip(pairs.src.tolist(), pairs.tgt.tolist()))
    with measured(results, "peer: loop scoring + greedy max"):
        loop_pairs = loop_scoring_and_max(src, tgt, fwd_sims, fwd_ids, bwd_sims, bwd_ids)
    results["loop_max_equals_ours"] = set(loop_pairs) == ours_max
    results["max_pairs"] = len(ours_max)

    factory = default_factory(args.n)
    if ivf_lists(factory) is None:  # under 10,000 rows the library searches exactly: no IVF part to time
        factory = "IVF64,Flat"
    nprobe = default_nprobe(ivf_lists(factory))
    ivf = KnnConfig(index=factory)
    with measured(results, f"IVF build ({factory}: train + add), tgt"):
        tgt_index = build_index(tgt, ivf, "target")
    with measured(results, f"IVF search nprobe={nprobe}, src->tgt"):
        ivf_sims, ivf_ids = search(tgt_index, src, tgt, args.k, ivf)
    with measured(results, f"IVF build ({factory}: train + add), src"):
        src_index = build_index(src, ivf, "source")
    with measured(results, f"IVF search nprobe={nprobe}, tgt->src"):
        ivf_bwd_sims, ivf_bwd_ids = search(src_index, tgt, src, args.k, ivf)
    results["ivf"] = {
        "factory": factory, "nprobe": nprobe,
        "recall_at_k": {"src->tgt": recall_at_k(ivf_ids, fwd_ids), "tgt->src": recall_at_k(ivf_bwd_ids, bwd_ids)},
    }
    ivf_fwd_mean, ivf_bwd_mean = neighbourhood_mean(ivf_sims), neighbourhood_mean(ivf_bwd_sims)
    ivf_pairs = select(Candidates(ivf_ids, candidate_margins(ivf_sims, ivf_ids, ivf_fwd_mean, ivf_bwd_mean,
                                                                  floor=floor), ivf_sims),
                       Candidates(ivf_bwd_ids, candidate_margins(ivf_bwd_sims, ivf_bwd_ids, ivf_bwd_mean,
                                                                 ivf_fwd_mean, floor=floor), ivf_bwd_sims), "max")
    ivf_max = set(zip(ivf_pairs.src.tolist(), ivf_pairs.tgt.tolist()))
    results["ivf"]["max_pairs_agreement_with_exact"] = len(ivf_max & ours_max) / len(ivf_max | ours_max)

    if not args.quick:  # the same trained index, other probe counts
        sweep = {}
        for probes in (4, 8, 16, 32, 64):
            config = KnnConfig(index=factory, nprobe=probes)
            faiss.ParameterSpace().set_index_parameter(tgt_index, "nprobe", probes)
            started = time.perf_counter()
            _, ids = search(tgt_index, src, tgt, args.k, config)
            sweep[probes] = {"seconds": round(time.perf_counter() - started, 2),
                             "recall_at_k": recall_at_k(ids, fwd_ids)}
            print(f"  nprobe {probes:4d}: {sweep[probes]['seconds']:7.2f} s  recall@{args.k} "
                  f"{sweep[probes]['recall_at_k']:.4f}", flush=True)
        results["ivf"]["nprobe_sweep_src->tgt_search_only"] = sweep

    search_exact = results["search exact (faiss Flat), src->tgt"]["seconds"] + \
        results["search exact (faiss Flat), tgt->src"]["seconds"]
    scoring_selection = results["scoring (means + ratio margins, both ways)"]["seconds"] + \
        results["selection max"]["seconds"]
    ivf_search = sum(v["seconds"] for name, v in results.items() if name.startswith("IVF "))
    results["summary"] = {
        "scoring_plus_max_selection_share_of_exact_search": scoring_selection / search_exact,
        "faiss_flat_speedup_over_torch": results["peer: search exact (torch mm+topk), src->tgt"]["seconds"]
        / results["search exact (faiss Flat), src->tgt"]["seconds"],
        "vectorised_speedup_over_loops": results["peer: loop scoring + greedy max"]["seconds"] / scoring_selection,
        "ivf_speedup_over_exact_including_build": search_exact / ivf_search,
    }
    results["machine"] = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                          "faiss": faiss.__version__, "numpy": np.__version__,
                          "n": args.n, "dim": args.dim, "k": args.k}
    print(json.dumps(results["summary"], indent=2))
    print(json.dumps(results["ivf"], indent=2, default=str))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
