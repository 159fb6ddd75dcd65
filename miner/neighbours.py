"""k nearest neighbours by cosine: the one entry point (`knn`, and `knn_refined` for binary codes with float vectors
beside them) over faiss's indexes (miner.index) and the join's comparisons (miner.knn_join).

`IVF<n>,Flat` with lists of JOIN_MIN_ROWS_PER_LIST rows or more is answered by the join's comparisons, every other
index by faiss's search with exact rescoring; both give each row's neighbours best first, ties to the smaller id,
with exact similarities (docs/benchmarks.md, "The library's IVF k-NN by the join").
"""

from __future__ import annotations

import re

import faiss
import numpy as np

from miner.index import (
    IndexConfigError,
    KnnConfig,
    build_index,
    ivf_lists,
    rescore,
    resolve_factory,
    resolve_nprobe,
    search,
    sorted_rows,
    trained_index,
    training_sample,
    use_gpu,
)
from miner.knn_join import knn_by_lists
from miner.vectors import check_same_dim, unit_rows

# The factories knn answers by the join's comparisons (the lists' raw vectors, an exact coarse quantizer), where
# the lists average at least JOIN_MIN_ROWS_PER_LIST rows. bench/bench_library_knn.py, training included: on the
# default encoder's 1,024-d vectors (IVF1024, nprobe 16) the join took 1.02x faiss's IVF search's CPU at 8 rows a
# list, 0.96x at 10, 0.90x at 12 and 0.82-0.85x at 29-88; on 256-d vectors 0.27-0.30x at 156-195. From 8 rows the
# default factories (IVF1024 from 10,000 rows) always take the join (docs/benchmarks.md).
JOINED_FACTORY = re.compile(r"IVF\d+,Flat")
JOIN_MIN_ROWS_PER_LIST = 8


def knn(
    queries: np.ndarray,
    database: np.ndarray,
    k: int,
    config: KnnConfig = KnnConfig(),
    names: tuple[str, str] = ("queries", "database"),
) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest database rows of every query row by cosine.

    Returns (similarities float32 [n_queries, k'], ids int64 [n_queries, k']) with k' = min(k, n_database),
    each row sorted by similarity descending, ties broken by smaller id. Similarities are exact for every index.
    """
    check_same_dim(queries, names[0], database, names[1])
    if k < 1:
        raise IndexConfigError(f"k must be at least 1, got {k}")
    k = min(k, database.shape[0])
    factory = resolve_factory(config, database.shape[0])
    if (JOINED_FACTORY.fullmatch(factory) and database.shape[0] >= JOIN_MIN_ROWS_PER_LIST * ivf_lists(factory)
            and not use_gpu(config)):
        return _knn_by_lists(queries, database, k, factory, config, names)
    index = build_index(database, config, names[1])
    return search(index, queries, database, k, config, names)


def _knn_by_lists(queries: np.ndarray, database: np.ndarray, k: int, factory: str, config: KnnConfig,
                  names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """knn for `IVF<n>,Flat` without faiss's list scan: the index's coarse quantizer trained as build_index trains
    it, then the join's comparisons (miner.knn_join.knn_by_lists)."""
    index = trained_index(database.shape[1], factory, config, training_sample(database, factory, config, names[1]))
    centroids = faiss.extract_index_ivf(index).quantizer.reconstruct_n(0, ivf_lists(factory))
    return knn_by_lists(queries, unit_rows(database, names[1]), k, centroids, resolve_nprobe(config, factory),
                        config.batch_rows(queries.shape[1]), names[0])


def knn_refined(queries: np.ndarray, database: np.ndarray, k: int, candidates: int,
                exact: tuple[np.ndarray, np.ndarray], config: KnnConfig = KnnConfig(),
                names: tuple[str, str] = ("queries", "database")) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest by `exact` float vectors (queries', database's) among the `candidates` nearest by `queries`
    and `database` (a binary code's unit rows): a short list from the codes, ranked by exact cosines, as `knn`
    returns them. Only a caller holding both the codes and the float vectors can ask for it."""
    for rows, (code_rows, name) in zip(exact, ((queries, names[0]), (database, names[1]))):
        if rows.shape[0] != code_rows.shape[0]:
            raise ValueError(f"{name}: {rows.shape[0]} float vectors to rescore {code_rows.shape[0]} codes")
    if candidates < k:
        raise IndexConfigError(f"rescoring needs at least k = {k} candidates, got {candidates}")
    _, ids = knn(queries, database, candidates, config, names)
    # the database's float rows made unit once (not each time a short list gathers them), named by their own row
    unit_queries, unit_database = unit_rows(exact[0], names[0]), unit_rows(exact[1], names[1])
    sims, ids = sorted_rows(rescore(unit_queries, unit_database, ids, names[1], unit=True), ids)
    return sims[:, :k], ids[:, :k]
