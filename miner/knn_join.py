"""k-NN as a join: inverted lists as grouping keys (../shared/docs/METHODS.md §10).

    nlist, nprobe = join_plan(config, n_database)          # 1 list = exact search (small databases)
    centroids = train_quantizer(sample, nlist, config)      # once per database language, on a bounded sample
    db_lists = assign(database, centroids, 1)               # each database row: its one list
    q_lists = assign(queries, centroids, nprobe)            # each query: its nprobe nearest lists
    for list_id, rows in rows_by_list(q_lists): ...         # what a pipeline keys by and groups
    shape = join_layout(nlist, nprobe, n_queries, n_database, max_rows)  # or groups of lists per key, as the stage does
    part = list_topk(queries, query_refs, database, database_refs, k)   # exact, inside one group
    best = merge_topk([part, ...], k)                       # each query's k best over all its lists

A coarse quantizer (k-means centroids, the one an IVF index trains) partitions the database; searching with nprobe
compares a query with the rows of its nprobe nearest lists only. Done as a join, every database row is read once,
each query travels nprobe times, and the rows of one list are compared with all the queries that probe it at once,
exactly: the similarities are exact, as Flat search gives them, so no rescoring read is needed. With nprobe = nlist
the result is exact search. Neighbours are named by int64 references the caller gives each row, and ties are broken
by the smaller reference, so the result does not depend on how rows were grouped, split or ordered.

Vectors are the stored rows (float16 or float32); each group makes them unit float32 rows itself (row by row, so
the same bits as normalising the whole shard). Packed sign codes of 64, 256, 1,024 or 4,096 bits are compared as
they are, by Hamming distance, which gives their widened rows' exact products (list_topk's `packed_signs`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import faiss
import numpy as np

from encoders.binary import exact_products
from miner.index import (
    KMEANS_SEED,
    IndexConfigError,
    KnnConfig,
    default_factory,
    ivf_lists,
    rescore,
    trained_index,
)
from miner.sizes import HoldsArrays
from miner.vectors import unit_rows

# Training vectors per list: k-means needs a few dozen per centroid (faiss warns below 39 and subsamples above
# 256); 64 keeps training (whose cost grows as nlist^2 in one level, nlist^1.5 in two: knn.two_level_lists) a
# small part of the stage. recall@k measured with it: docs/benchmarks.md.
TRAIN_ROWS_PER_LIST = 64
# From this many lists, a quantizer's lists are numbered cell by cell (list_order).
CELL_ORDER_LISTS = 4096
# Floats of one similarity block (queries x database rows) in list_topk: bounds its memory to ~64 MB (twice that
# where _argmax_topk picks from a reordered copy).
BLOCK_FLOATS = 1 << 24
# The same on a device (torch): 1 GB of similarities per block, a few percent of a data-centre GPU's memory.
DEVICE_BLOCK_FLOATS = 1 << 28
# merge_topk's keys: a similarity's descending_key above a reference's rank, each 32 bits; a missing entry's key
# sorts after every entry.
RANKS = 1 << 32
NO_ENTRY = np.uint64(np.iinfo(np.uint64).max)
# The most a float32 dot product of unit rows of d values can be off, as a multiple of d units in the last place
# (2^-24): gamma_d = d u / (1 - d u) for any summation order (Higham, Accuracy and Stability, 3.1), and 1% more
# for unit rows' norms, which are 1 only to their own rounding. The matrix product and the pair-by-pair rescoring
# each err by at most that.
DOT_ERROR_ULPS = 1.01
# Up to this many places a row's candidates are picked by repeated argmax on the host, at any width (k passes over
# the block: 1.1-12x faster than numpy's partition or torch's topk for k = 4-8 on rows of 40 to 100,000 columns,
# level with them at k = 16; docs/benchmarks.md).
ARGMAX_MAX_K = 16
# More places: rows of up to this many columns by numpy's partition and two masks (on rows of a hundred to a few
# hundred columns, 3-6x faster than torch's topk and no slower on rows crowded with ties); wider rows by torch's
# topk, faster there.
PARTITION_MAX_COLUMNS = 400


def join_nprobe(nlist: int) -> int:
    """The lists a query probes by default: a quarter of them, at least 128. Measured on the default encoder's
    vectors of 160k training sentences in many languages (bench/bench_ivf_recall.py, docs/benchmarks.md), recall@4
    against exact search reaches 0.98 only there: IVF256 needs 128 probes (0.992 at 40k and 0.994 at 150k
    vectors; 64 give 0.972 / 0.978), IVF1024 256 (0.991 at 40k; 128 give 0.973). Real sentence vectors spread
    out, unlike topic clusters. The lists are compared by GEMM, so a quarter of them costs about a quarter of exact
    search; set knn.nprobe lower to trade recall for cost at web scale (docs/pipeline.md)."""
    return min(nlist, max(128, nlist // 4))


def join_plan(config: KnnConfig, n_database: int) -> tuple[int, int]:
    """(nlist, nprobe) for searching a database of `n_database` rows; nlist 1 is exact search.

    Exact below `config.exact_below` rows (auto), for a Flat factory, and for a database with fewer rows than the
    factory's lists (there is nothing to partition)."""
    if config.index == "auto" and n_database < config.exact_below:
        return 1, 1
    factory = default_factory(max(n_database, config.exact_below)) if config.index == "auto" else config.index
    nlist = ivf_lists(factory)
    if nlist is None or nlist > n_database:
        return 1, 1
    return nlist, join_nprobe(nlist) if config.nprobe == "auto" else min(config.nprobe, nlist)


def training_rows(nlist: int, config: KnnConfig) -> int:
    return min(config.train_sample, TRAIN_ROWS_PER_LIST * nlist)


def train_quantizer(sample: np.ndarray, nlist: int, config: KnnConfig, name: str = "sample") -> np.ndarray:
    """The nlist k-means centroids [nlist, d] (float32) an inner-product IVF index trains on `sample`'s unit rows:
    the same partition faiss's IVF search probes."""
    if nlist == 1:
        return np.zeros((1, sample.shape[1]), dtype=np.float32)
    index = trained_index(sample.shape[1], f"IVF{nlist},Flat", config, unit_rows(sample, name))
    centroids = faiss.extract_index_ivf(index).quantizer.reconstruct_n(0, nlist)
    return centroids[list_order(centroids)]


def list_order(centroids: np.ndarray) -> np.ndarray:
    """The order the join numbers a quantizer's lists in, so that a query's nearest lists mostly fall in few groups
    of consecutive lists (join_layout): spatial_order, and from CELL_ORDER_LISTS lists cell by cell. There the
    lists are first clustered into sqrt(nlist) cells (spherical k-means over the centroids, fixed seed), the cells
    taken in the spatial order of their centroids and each cell's lists in spatial order: spatial_order's halving
    cuts through clusters that k-means keeps whole. On real sentence vectors at IVF4096, nprobe 16, a query's
    lists fall in 8.55 groups of 12 lists against 9.49 (6.55 against 7.28 groups of 32; bench/bench_list_ranges.py);
    at IVF1024 the two orders were level in a throwaway run (docs/benchmarks.md). Only the numbering changes, not
    what a list holds, so neither do the neighbours."""
    if len(centroids) < CELL_ORDER_LISTS:
        return spatial_order(centroids)
    points = np.ascontiguousarray(centroids, dtype=np.float32)
    kmeans = faiss.Kmeans(points.shape[1], math.isqrt(len(points)), niter=20, seed=KMEANS_SEED, spherical=True,
                          min_points_per_centroid=1)
    kmeans.train(points)
    cell = kmeans.index.search(points, 1)[1].ravel()
    members = [np.flatnonzero(cell == c) for c in np.unique(cell)]  # a cell no list is nearest to has no place
    means = np.stack([centroids[rows].mean(axis=0) for rows in members])
    return np.concatenate([members[c][spatial_order(centroids[members[c]])] for c in spatial_order(means)])


def spatial_order(points: np.ndarray, power_steps: int = 20) -> np.ndarray:
    """An order of `points` in which neighbours in space are mostly neighbours in the order: recursive halving at
    the median of the leading principal direction (found by power iteration from a fixed start, so the order is
    the same on every run).

    The join groups consecutive lists (join_layout), and a query travels once to each group it probes: on
    real sentence vectors a query's 16 nearest of 512 lists fall in 12.8 of 32 groups numbered without order, in
    this order in 6.6 (bench/bench_list_ranges.py, docs/benchmarks.md). Which rows a list holds does not change,
    so neither do the neighbours."""
    order = np.arange(len(points))
    spans = [(0, len(points))]
    while spans:
        start, stop = spans.pop()
        if stop - start < 3:
            continue
        members = points[order[start:stop]]
        # widened once: each product with the float64 direction would widen float32 rows again (2.3x the time)
        centred = (members - members.mean(axis=0)).astype(np.float64)
        direction = np.full(points.shape[1], 1 / np.sqrt(points.shape[1]), dtype=np.float64)
        for _ in range(power_steps):
            direction = centred.T @ (centred @ direction)
            direction /= max(np.linalg.norm(direction), 1e-30)
        order[start:stop] = order[start:stop][np.argsort(centred @ direction, kind="stable")]
        middle = (start + stop) // 2
        spans += [(start, middle), (middle, stop)]
    return order


def assign(vectors: np.ndarray, centroids: np.ndarray, nprobe: int, name: str = "vectors",
           unit: bool = False) -> np.ndarray:
    """The `nprobe` lists nearest to each row (int64 [n, nprobe], nearest first); with one list, list 0. `unit`
    says the rows are unit_rows' already (made once for several assignments and comparisons of the same rows).

    A quantizer trained for another dimension is an error naming `name`, never a wrong neighbour list."""
    if vectors.ndim != 2 or vectors.shape[1] != centroids.shape[1]:
        raise IndexConfigError(f"{name}: {vectors.shape[-1]}-d vectors, but the quantizer was trained on "
                               f"{centroids.shape[1]}-d vectors")
    if len(centroids) == 1:
        return np.zeros((len(vectors), 1), dtype=np.int64)
    quantizer = faiss.IndexFlatIP(centroids.shape[1])
    quantizer.add(np.ascontiguousarray(centroids, dtype=np.float32))
    _, lists = quantizer.search(vectors if unit else unit_rows(vectors, name), min(nprobe, len(centroids)))
    return lists


def rows_by_list(lists: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(list id, the rows assigned to it, ascending) for each list that has rows, by list id."""
    for list_id, rows, _ in rows_by_group(lists, 1):
        yield list_id, rows


@dataclass(frozen=True)
class JoinLayout:
    """How one direction of the join is cut into work items: groups of `lists_per_group` consecutive lists, each
    with its lists' database rows and the queries that probe them, and each group's queries cut into
    `query_blocks` blocks (by a hash of the reference, `blocks`), each block meeting all of the group's database
    rows."""

    lists_per_group: int
    query_blocks: int

    def groups(self, nlist: int) -> int:
        return -(-nlist // self.lists_per_group)

    def rows_shipped(self, nlist: int, nprobe: int, n_queries: int, n_database: int) -> int:
        """The rows this layout ships, at most (shipped_rows, join_layout's count)."""
        return int(shipped_rows(n_queries, n_database, self.groups(nlist), min(nprobe, nlist), self.query_blocks))


def shipped_rows(n_queries: int, n_database: int, groups, probes: int, query_blocks):
    """Rows a layout ships, at most: each query once to each group it probes (at most min(groups, probes) of
    them), each database row once to each query block of its group. `groups` and `query_blocks`: numbers, or
    arrays of them, one a candidate layout."""
    return n_queries * np.minimum(groups, probes) + n_database * query_blocks


def wave_of(group: int, groups: int, waves: int) -> int:
    """The wave a group (of a direction's `groups`) is compared in: waves of consecutive groups, as even as they
    divide."""
    return group * waves // groups


def join_layout(nlist: int, nprobe: int, n_queries: int, n_database: int, max_rows: int) -> JoinLayout:
    """The layout that ships the fewest rows with about `max_rows` rows on a side of each work item.

    A query travels once to each group it probes (at most min(groups, nprobe) of them), a database row once to
    each query block of its group. Many small groups of one block each ship each database row once and each query
    up to nprobe times: right where a query probes a few of very many lists (10^6 sentences a language at nprobe
    16: 12 lists a group, 17 rows shipped a sentence). Few large groups whose queries come in blocks ship each
    query once a group and each database row once a block: right where nprobe is a large share of nlist (the
    default's quarter) or the database is not large: 29,000 German sentences against 11,500 English ones at
    IVF1024, nprobe 256 shipped each English query to 61 groups of 17 lists, 2 kB each, where one group and one
    block ship it once. Counted with the bound min(groups, nprobe) (real vectors probe fewer groups: lists are
    numbered in spatial order); among layouts that ship as few, the one with the largest groups (fewer elements).
    The comparisons inside a group stay per list, so the neighbours do not depend on the layout."""
    probes = min(nprobe, nlist)
    size = np.arange(1, nlist + 1, dtype=np.int64)  # lists a group
    groups = -(-nlist // size)
    per_list = n_queries * probes / nlist  # in floats: at 10^11 queries the integer product would overflow
    queries = np.minimum(n_queries, np.ceil(size * per_list)).astype(np.int64)  # distinct queries a group, at most
    query_blocks = np.maximum(1, -(-queries // max_rows))
    shipped = shipped_rows(n_queries, n_database, groups, probes, query_blocks)
    fits = (size == 1) | (size * n_database <= max_rows * nlist)  # a group's database rows, about, within max_rows
    shipped = np.where(fits, shipped, np.iinfo(np.int64).max)
    best = np.flatnonzero(shipped == shipped.min())[-1]
    return JoinLayout(int(size[best]), int(query_blocks[best]))


def rows_by_group(lists: np.ndarray, group_lists: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(group id, the rows assigned to its lists, each one's list) for each group of `group_lists` consecutive
    lists that has rows, by group id; within a group, ordered by list, then row (a row probing two of its lists
    appears twice)."""
    flat = lists.ravel()
    rows = np.repeat(np.arange(len(lists)), lists.shape[1])
    # by list, then row: a stable sort of the lists alone (rows ascend as repeated); list numbers narrowed to 16
    # bits where they fit take numpy's radix sort, 6x faster than lexsort on 160k memberships
    narrow = np.uint16 if 0 <= flat.min(initial=0) and flat.max(initial=0) < 1 << 16 else np.int64
    order = np.argsort(flat.astype(narrow), kind="stable")
    flat, rows = flat[order], rows[order]
    groups = flat // group_lists
    bounds = np.flatnonzero(np.diff(groups)) + 1
    for chunk_groups, chunk_rows, chunk_lists in zip(np.split(groups, bounds), np.split(rows, bounds),
                                                     np.split(flat, bounds)):
        if len(chunk_rows):
            yield int(chunk_groups[0]), chunk_rows, chunk_lists


def blocks(refs: np.ndarray, n_blocks: int) -> np.ndarray:
    """Which of `n_blocks` sub-blocks of a hot list each row goes to: a hash of its reference, so any worker
    places a row the same way without knowing the others, and the blocks come out about equal."""
    if n_blocks == 1:
        return np.zeros(len(refs), dtype=np.int64)
    mixed = (np.asarray(refs, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)
    return ((mixed * np.uint64(n_blocks)) >> np.uint64(32)).astype(np.int64)


def block_count(rows: int, max_rows: int) -> int:
    return max(1, -(-rows // max_rows))


@dataclass(frozen=True)
class Neighbours(HoldsArrays):
    """Queries' best neighbours: queries [m] (references, ascending and unique after a merge), sims [m, k]
    descending, refs [m, k]; unfilled slots hold -inf and -1."""

    queries: np.ndarray
    sims: np.ndarray
    refs: np.ndarray

    @classmethod
    def none(cls, queries: np.ndarray, k: int) -> Neighbours:
        """`queries` with no neighbour yet: what makes every query appear in a merge, even one whose lists were
        all empty."""
        n = len(queries)
        return cls(np.asarray(queries, dtype=np.int64), np.full((n, k), -np.inf, np.float32),
                   np.full((n, k), -1, np.int64))

    def found(self) -> np.ndarray:
        return (self.refs >= 0).sum(axis=1)


def list_topk(queries: np.ndarray, query_refs: np.ndarray, database: np.ndarray, database_refs: np.ndarray,
              k: int, device: str | None = None, unit: bool = False, exact: bool = False,
              packed_signs: bool = False) -> Neighbours:
    """Each query's k best database rows by exact cosine, ties broken by the smaller reference. `unit` says both
    are unit float32 rows already (miner.vectors.unit_rows works row by row, so normalising a group's rows once
    gives the bits normalising each list's would: a query probes many lists).

    A matrix product over unit rows finds the candidates (in blocks of bounded memory): numpy's BLAS when `device`
    is None, else torch on that device ("cuda", or "cpu" to run that path without a GPU): each row's k best by the
    product, and every column within close_call of the k-th (rare). Their similarities are then computed pair by
    pair with miner.index.rescore, whose result does not depend on which other rows share the block or which
    device found them, and the k best by those are kept: the k best by rescored similarity over all the columns,
    so a neighbour and its similarity are the same bits however the lists were grouped, split or compared.
    `exact` says the rows' dot products are exact in any summation order (widened sign codes:
    encoders.binary.exact_products): the product's values are those bits already, and the k best are taken from
    it directly. `packed_signs` says both are packed sign codes of such a width (uint8 rows, not
    widened): their similarities are then counted from Hamming distances on the host (_hamming_candidates), the
    same bits."""
    database_refs = np.asarray(database_refs, dtype=np.int64)
    out = Neighbours.none(query_refs, k)
    take = min(k, len(database))
    if take == 0:
        return out
    if packed_signs:
        for block, top, sims in _hamming_candidates(queries, database, database_refs, take):
            _keep_best(out, block, top, sims, database_refs, take)
        return out
    if unit:
        unit_queries, unit_database = queries, database
    else:
        unit_queries, unit_database = unit_rows(queries, "queries"), unit_rows(database, "database")
    close = 0.0 if exact else close_call(unit_database.shape[1])
    if device is None:
        candidates = _numpy_candidates(unit_queries, unit_database, database_refs, take, close)
    else:
        candidates = _torch_candidates(unit_queries, unit_database, database_refs, take, close, device)
    for block, top, values in candidates:
        sims = values if exact else rescore(unit_queries[block], unit_database, np.maximum(top, 0), unit=True)
        _keep_best(out, block, top, np.where(top >= 0, sims, -np.inf), database_refs, take)
    return out


def close_call(dim: int) -> float:
    """How far below a row's k-th best product value a column may lie and still be among its k best by the exact
    similarity: twice the most the product and the rescoring can differ, each being off by at most DOT_ERROR_ULPS
    d ulps (a k-th best rescored value lies within one difference of the product's k-th, and any of the k best
    within one more). Columns within it are rescored too, so the k kept are the k best by rescored similarity over
    all the columns, whatever block found them."""
    unit_error = DOT_ERROR_ULPS * dim * 2.0**-24
    return 4 * unit_error / (1 - unit_error)


def _with_close_calls(block: slice, top: np.ndarray, values: np.ndarray, floor: np.ndarray, crowded: np.ndarray,
                      crowded_sims: np.ndarray) -> Iterator[tuple[np.ndarray | slice, np.ndarray, np.ndarray]]:
    """A block's candidates; for its `crowded` rows (more columns at or above their `floor`, the k-th best value
    less close_call, than the k picked: rare for float rows), all of those columns instead, padded with -1 to the
    widest such row. `crowded_sims`: those rows of the block's products."""
    if not len(crowded):
        yield block, top, values
        return
    rows = np.arange(block.start, block.stop)
    clear = np.ones(len(rows), dtype=bool)
    clear[crowded] = False
    yield rows[clear], top[clear], values[clear]
    near, columns = np.nonzero(crowded_sims >= floor[crowded])
    place = np.arange(len(near)) - np.searchsorted(near, near)
    wide = np.full((len(crowded), place.max() + 1), -1, dtype=np.int64)
    wide[near, place] = columns
    yield rows[crowded], wide, np.take_along_axis(crowded_sims, np.maximum(wide, 0), axis=1)


def _keep_best(out: Neighbours, block: slice | np.ndarray, top: np.ndarray, sims: np.ndarray, refs: np.ndarray,
               take: int) -> None:
    """A block's candidates into `out`, best first, ties by the smaller reference (the order repeated argmax picks
    exact similarities in already: then no sort)."""
    refs = refs[top]
    if not before_the_next(sims, refs).all():
        order = np.lexsort((refs, -sims), axis=1)
        sims, refs = np.take_along_axis(sims, order, axis=1), np.take_along_axis(refs, order, axis=1)
    out.sims[block, :take], out.refs[block, :take] = sims[:, :take], refs[:, :take]


def _numpy_candidates(unit_queries: np.ndarray, unit_database: np.ndarray, refs: np.ndarray, fetch: int,
                      close: float = 0.0) -> Iterator[tuple[np.ndarray | slice, np.ndarray, np.ndarray]]:
    """(query rows, each one's candidate columns, the product's values there), block by block, with the close
    calls of _with_close_calls."""
    step = max(1, BLOCK_FLOATS // len(unit_database))
    for start in range(0, len(unit_queries), step):
        block = slice(start, min(start + step, len(unit_queries)))
        sims = unit_queries[block] @ unit_database.T
        if close and fetch <= ARGMAX_MAX_K and fetch < sims.shape[1]:  # the usual case: best first, and the next
            top, values, runner_up = _argmax_topk_in_place(sims, refs, fetch)
            floor = values[:, -1:] - np.float32(close)
            crowded = np.flatnonzero(runner_up >= floor[:, 0])
            crowded_sims = picks_restored(sims, crowded, top, values)
        else:
            top = _topk_rows(sims, refs, fetch)
            values = np.take_along_axis(sims, top, axis=1)
            floor = values.min(axis=1, keepdims=True) - np.float32(close)
            crowded = np.flatnonzero((sims >= floor).sum(axis=1) > fetch) if close else np.empty(0, dtype=np.int64)
            crowded_sims = sims[crowded]
        yield from _with_close_calls(block, top, values, floor, crowded, crowded_sims)


def _hamming_candidates(queries: np.ndarray, database: np.ndarray, refs: np.ndarray,
                        fetch: int) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """_numpy_candidates for packed sign codes of d = 4^m bits: the similarity of two rows is (d - 2 hamming) / d,
    which is exactly what their widened unit rows' float32 product gives (encoders.binary.exact_products), counted
    by faiss's popcount over 64-bit words (`faiss.hammings`) without widening: 13x faster than the product on this
    machine's CPU for a list of 160 rows against 2,500 queries (docs/benchmarks.md), and 32x less memory a row."""
    dim = 8 * database.shape[1]

    def similarity(distances: np.ndarray) -> np.ndarray:  # the widened unit rows' product, to the bit
        return (dim - 2 * distances).astype(np.float32) / np.float32(dim)

    queries, database = np.ascontiguousarray(queries), np.ascontiguousarray(database)
    step = max(1, BLOCK_FLOATS // len(database))
    for start in range(0, len(queries), step):
        block = queries[start:start + step]
        distances = np.empty((len(block), len(database)), dtype=np.int32)
        faiss.hammings(faiss.swig_ptr(block), faiss.swig_ptr(database), len(block), len(database),
                       database.shape[1], faiss.swig_ptr(distances))
        if fetch <= ARGMAX_MAX_K and fetch < len(database):  # nearest by distance, no float block: 1.4-3.6x faster
            top = _argmax_topk(distances, refs, fetch, smallest=True)
        else:
            top = _topk_rows(similarity(distances), refs, fetch)
        yield slice(start, start + len(block)), top, similarity(np.take_along_axis(distances, top, axis=1))


def hamming_countable(code: str | None, packed_width: int) -> bool:
    """Whether rows of this code and packed width (bytes) go through _hamming_candidates: sign codes whose widened
    products are exact (the same bits either way) and whose width faiss counts in 64-bit words."""
    return exact_products(code, 8 * packed_width) and packed_width % 8 == 0


def _torch_candidates(unit_queries: np.ndarray, unit_database: np.ndarray, refs: np.ndarray, fetch: int,
                      close: float, device: str) -> Iterator[tuple[np.ndarray | slice, np.ndarray, np.ndarray]]:
    """The numpy path's candidates from a torch matrix product on `device` (full float32, no TF32), selected
    there by the same _topk_rows; only the crowded rows' products come to the host."""
    import torch

    with exact_float32(torch):
        database = torch.from_numpy(unit_database).to(device)
        step = max(1, DEVICE_BLOCK_FLOATS // len(unit_database))
        for start in range(0, len(unit_queries), step):
            block = slice(start, min(start + step, len(unit_queries)))
            sims = torch.from_numpy(unit_queries[block]).to(device) @ database.T
            top = _topk_rows(sims, refs, fetch)
            values = torch.take_along_dim(sims, torch.from_numpy(top).to(device), dim=1)
            floor = values.min(dim=1, keepdim=True).values - close
            crowded = ((sims >= floor).sum(dim=1) > fetch).nonzero().flatten() if close else floor[:0, 0].long()
            yield from _with_close_calls(block, top, values.cpu().numpy(), floor.cpu().numpy(),
                                         crowded.cpu().numpy(), sims[crowded].cpu().numpy())


@contextmanager
def exact_float32(torch):
    """Full-precision float32 matrix products inside: TF32 (allowed by some callers, e.g. training) keeps 10
    mantissa bits: products off by far more than close_call allows for."""
    saved = torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved[0])
        torch.backends.cuda.matmul.allow_tf32 = saved[1]


def compare_device(config: KnnConfig) -> str | None:
    """Where a worker compares its lists: "cuda" when torch sees a GPU (knn.gpu auto or true), else None (numpy).
    knn.gpu true without one is an error, not a silent CPU run."""
    if config.gpu is False:
        return None
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        return "cuda"
    if config.gpu is True:
        raise IndexConfigError("knn.gpu is true but torch sees no CUDA device for the k-NN join's comparisons")
    return None


def _topk_rows(sims, refs: np.ndarray, k: int) -> np.ndarray:
    """Column indices of each row's k best, by similarity then smaller reference among rows tied at the k-th (in
    no particular order within a row: callers rescore and sort them).

    `sims` is a numpy array or a torch tensor on any device. On the host, the few places a join asks (k up to
    ARGMAX_MAX_K) take _argmax_topk at any width; more places take _partition_topk on rows of up to
    PARTITION_MAX_COLUMNS columns, torch's topk on wider ones (1.3-1.5x faster than numpy's argpartition there,
    docs/benchmarks.md), as device tensors do. topk picks arbitrarily among values tied with the k-th best: such
    crowded rows are selected again on the host, all at once (_untied_topk). Float vectors crowd a row rarely;
    binary codes, whose similarities take d + 1 values, crowd most rows."""
    import torch

    if k >= sims.shape[1]:
        return np.broadcast_to(np.arange(sims.shape[1]), tuple(sims.shape)).copy()
    if isinstance(sims, np.ndarray) and k <= ARGMAX_MAX_K:
        return _argmax_topk(sims, refs, k)
    if isinstance(sims, np.ndarray) and sims.shape[1] <= PARTITION_MAX_COLUMNS:
        return _partition_topk(sims, refs, k)
    matrix = torch.from_numpy(np.ascontiguousarray(sims)) if isinstance(sims, np.ndarray) else sims
    values, top = torch.topk(matrix, k, dim=1, sorted=False)
    kth = values.min(dim=1, keepdim=True).values
    if isinstance(sims, np.ndarray):  # numpy counts a boolean matrix 10x faster than torch on the CPU
        crowded = np.flatnonzero((sims >= kth.numpy()).sum(axis=1) > k)
    else:
        crowded = ((matrix >= kth).sum(dim=1) > k).nonzero().flatten().cpu().numpy()
    top = top.cpu().numpy()
    if len(crowded):
        index = torch.from_numpy(crowded).to(matrix.device)
        top[crowded] = _untied_topk(matrix[index].cpu().numpy(), kth[index].cpu().numpy(), refs, k)
    return top


def _argmax_topk(sims: np.ndarray, refs: np.ndarray, k: int, smallest: bool = False,
                 runner_up: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """_topk_rows on the host by k passes of a row-wise argmax, each taking the best column left: numpy's argmax
    returns the first of tied maxima, which is the smaller reference once columns are in reference order (the join's
    lists arrive so). Each pass reads the block once, where a partition and its tie masks read it several times:
    1.8-12x faster at k = 4 on rows of 40-400 columns (docs/benchmarks.md). A row's columns come out best first.
    `smallest` picks the k smallest values instead (integer distances: argmin, with no pass to make them floats);
    `runner_up` also gives each row's best value left after its k (one more pass)."""
    order = np.argsort(refs, kind="stable") if np.any(refs[1:] < refs[:-1]) else None
    left = sims[:, order] if order is not None else sims.copy()
    rows = np.arange(len(left))
    top = np.empty((len(left), k), dtype=np.int64)
    pick = left.argmin if smallest else left.argmax
    taken = _extreme(left.dtype, largest=smallest)
    for place in range(k):
        best = pick(axis=1)
        top[:, place] = best
        left[rows, best] = taken
    top = top if order is None else order[top]
    return (top, left.min(axis=1) if smallest else left.max(axis=1)) if runner_up else top


def _argmax_topk_in_place(sims: np.ndarray, refs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """_argmax_topk(..., runner_up=True) on a float block it may write, with the picked values: (columns, their
    values, the best value left). The passes mark the picked entries of the block itself (-inf), which spares a
    copy of the block (a tenth of the picking), and leave them so: the caller needs a few rows' products after
    (the crowded rows), which picks_restored gives back, not the whole block's. Entries are read and marked through
    the block's flat index, and the runner-up taken by one more argmax: 0.93 against 1.15 ms for a list's 2,500
    queries by 160 rows (fancy indexing by rows and columns, and a max, which is slower than argmax along rows).
    Where columns are not in reference order the picking works on the reordered copy it makes anyway, and the
    block is left as it was."""
    if np.any(refs[1:] < refs[:-1]):
        top, runner_up = _argmax_topk(sims, refs, k, runner_up=True)
        return top, np.take_along_axis(sims, top, axis=1), runner_up
    if not sims.flags.c_contiguous:  # its flat index would be a copy the passes mark instead: mark one copy
        sims = np.ascontiguousarray(sims)
    n = len(sims)
    flat, starts = sims.reshape(-1), np.arange(n) * sims.shape[1]
    top = np.empty((n, k), dtype=np.int64)
    values = np.empty((n, k), dtype=sims.dtype)
    for place in range(k):
        best = sims.argmax(axis=1)
        at = starts + best
        top[:, place], values[:, place] = best, flat[at]
        flat[at] = -np.inf
    return top, values, flat[starts + sims.argmax(axis=1)]


def picks_restored(sims: np.ndarray, rows: np.ndarray, top: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A copy of `rows` of a block _argmax_topk_in_place picked from, with their picked values back in place."""
    picked = sims[rows]
    picked[np.arange(len(rows))[:, None], top[rows]] = values[rows]
    return picked


def _extreme(dtype: np.dtype, largest: bool):
    """The value a taken column is set to, so that no later pass picks it again."""
    if np.issubdtype(dtype, np.floating):
        return np.inf if largest else -np.inf
    return np.iinfo(dtype).max if largest else np.iinfo(dtype).min


def _partition_topk(sims: np.ndarray, refs: np.ndarray, k: int) -> np.ndarray:
    """_topk_rows on the host without a sort: every column above the row's k-th best value, then as many of those
    equal to it as there are places left, in column order, which is made reference order first (the join's lists
    arrive ascending by reference, so the permutation is rarely needed). A row's columns come out ascending."""
    order = np.argsort(refs, kind="stable") if np.any(refs[1:] < refs[:-1]) else None
    if order is not None:
        sims = sims[:, order]
    n = sims.shape[1]
    kth = np.partition(sims, n - k, axis=1)[:, n - k, None]
    above, tied = sims > kth, sims == kth
    places = k - above.sum(axis=1)
    crowded = np.flatnonzero(tied.sum(axis=1) > places)
    take = above | tied
    if len(crowded):  # the first `places` tied columns of each crowded row
        ties = tied[crowded]
        take[crowded] = above[crowded] | (ties & (np.cumsum(ties, axis=1) <= places[crowded, None]))
    columns = np.nonzero(take)[1].reshape(len(sims), k)
    return columns if order is None else order[columns]


def _untied_topk(sims: np.ndarray, kth: np.ndarray, refs: np.ndarray, k: int) -> np.ndarray:
    """Each row's k best columns by similarity, then smaller reference, among the columns at or above its k-th
    best value `kth` [m, 1]: the few candidates of all rows sorted together."""
    rows, columns = np.nonzero(sims >= kth)
    order = np.lexsort((refs[columns], -sims[rows, columns], rows))
    rows, columns = rows[order], columns[order]
    place = np.arange(len(rows)) - np.searchsorted(rows, rows)
    keep = place < k
    top = np.empty((len(sims), k), dtype=np.int64)
    top[rows[keep], place[keep]] = columns[keep]
    return top


def merge_topk(parts: Iterable[Neighbours], k: int) -> Neighbours:
    """Each query's k best over all `parts` (a query may appear in several, once in each), by similarity descending
    then reference ascending. A database row reaches a query through one group only, so nothing is counted twice.

    Each entry becomes one uint64 key, the similarity's descending_key above its reference's rank, so the order is
    one sort of each query's few entries (a row of a dense [queries, entries] table): 2.4x faster than sorting all
    entries by query, similarity and reference on the 10k benchmark's binary codes, whose ties made that a lexsort
    of most entries (docs/benchmarks.md). A query in one part only, with its k entries in that order already (as
    list_topk gives them), is taken as it is: most of a list group's queries probe one of its lists."""
    parts = list(parts)
    if parts and {p.refs.shape[1] for p in parts} == {k}:
        return _merge_where_several(parts, k)
    return _merge_sorted(parts, k)


def _merge_where_several(parts: list[Neighbours], k: int) -> Neighbours:
    """merge_topk for parts of k entries a row: the rows of queries found in one part, in order already, are kept
    as they are; the other queries' rows are merged by _merge_sorted."""
    every = np.concatenate([p.queries for p in parts])
    sims, refs = np.concatenate([p.sims for p in parts]), np.concatenate([p.refs for p in parts])
    queries, first, inverse, counts = np.unique(every, return_index=True, return_inverse=True, return_counts=True)
    alone = counts == 1
    alone[alone] = in_merge_order(sims[first[alone]], refs[first[alone]])
    found = Neighbours(queries, sims[first], refs[first])
    if alone.all():
        return found
    to_merge, ends = ~alone[inverse], np.cumsum([len(p.queries) for p in parts])
    rest = _merge_sorted([Neighbours(p.queries[at], p.sims[at], p.refs[at]) for p, at in
                          ((p, to_merge[end - len(p.queries):end]) for p, end in zip(parts, ends))], k)
    found.sims[~alone], found.refs[~alone] = rest.sims, rest.refs
    return found


def before_the_next(sims: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """[m, width - 1]: whether each entry of a row comes before the next by similarity descending, then reference
    ascending (the neighbours' order)."""
    before, after = np.s_[:, :-1], np.s_[:, 1:]
    return (sims[before] > sims[after]) | ((sims[before] == sims[after]) & (refs[before] < refs[after]))


def in_merge_order(sims: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """Whether each row's entries are in merge_topk's order: before_the_next's, the missing entries (reference -1)
    last."""
    ordered = before_the_next(sims, refs) & (refs[:, :-1] >= 0)
    return (ordered | (refs[:, 1:] < 0)).all(axis=1)


def _merge_sorted(parts: list[Neighbours], k: int) -> Neighbours:
    """merge_topk by one sort of each query's entries in a dense [queries, entries] table of one-key entries."""
    queries = np.unique(np.concatenate([p.queries for p in parts]))
    rows = [np.searchsorted(queries, p.queries) for p in parts]
    ranks = ReferenceRanks(np.concatenate([p.refs[p.refs >= 0] for p in parts]))
    width = np.zeros(len(queries), dtype=np.int64)
    for part, at in zip(parts, rows):
        check_one_row_each(at)
        width[at] += part.refs.shape[1]
    keys = np.full((len(queries), int(width.max(initial=0))), NO_ENTRY, dtype=np.uint64)
    sims = np.full(keys.shape, -np.inf, dtype=np.float32)
    filled = np.zeros(len(queries), dtype=np.int64)  # each query's entries placed so far
    for part, at in zip(parts, rows):
        place = at[:, None], filled[at, None] + np.arange(part.refs.shape[1])
        keys[place] = merge_keys(part.sims, ranks.of(part.refs), part.refs >= 0)
        sims[place] = part.sims
        filled[at] += part.refs.shape[1]
    best = np.argsort(keys, axis=1)[:, :k]
    kept, found = np.take_along_axis(keys, best, axis=1), Neighbours.none(queries, k)
    real = kept != NO_ENTRY
    found.sims[:, : best.shape[1]][real] = np.take_along_axis(sims, best, axis=1)[real]
    found.refs[:, : best.shape[1]][real] = ranks.named(kept[real] & np.uint64(RANKS - 1))
    return found


def check_one_row_each(rows: np.ndarray) -> None:
    """A part names each query once (parts come ascending, so most are checked without a sort)."""
    if np.any(rows[1:] <= rows[:-1]) and len(np.unique(rows)) != len(rows):
        raise ValueError("a part names one query twice")


class ReferenceRanks:
    """Numbers below 2^32 that order as the given references do, for the low half of merge_topk's keys: the
    distance from the smallest reference where they all lie within 2^32 of it (no search), else the rank among
    the distinct references."""

    def __init__(self, refs: np.ndarray):
        self.low = int(refs.min(initial=0))
        self.names = np.unique(refs) if int(refs.max(initial=0)) - self.low >= RANKS - 1 else None
        if self.names is not None and len(self.names) >= RANKS - 1:
            raise ValueError(f"{len(self.names)} references in one merge: more than its keys rank")

    def of(self, refs: np.ndarray) -> np.ndarray:
        ranks = refs - self.low if self.names is None else np.searchsorted(self.names, refs)
        return ranks.astype(np.uint64)  # a missing reference's (-1) is masked by the caller

    def named(self, ranks: np.ndarray) -> np.ndarray:
        ranks = ranks.astype(np.int64)
        return ranks + self.low if self.names is None else self.names[ranks]


def descending_key(sims: np.ndarray) -> np.ndarray:
    """int64 in [0, 2^32) that orders float32 similarities descending (larger similarity, smaller key); -0.0 and
    0.0 are one key, as they compare equal. The float's bits with the negative ones' magnitude bits flipped order
    as the floats do (NaN is not a similarity here)."""
    bits = (np.asarray(sims, dtype=np.float32) + np.float32(0)).view(np.int32)
    ascending = np.where(bits < 0, bits ^ np.int32(0x7FFFFFFF), bits).astype(np.int64) + (1 << 31)
    return (1 << 32) - 1 - ascending


def merge_keys(sims: np.ndarray, ranks: np.ndarray, real: np.ndarray) -> np.ndarray:
    """merge_topk's keys: each similarity's descending_key above its reference's rank (below RANKS), NO_ENTRY where
    `real` is false."""
    keys = (descending_key(sims).astype(np.uint64) << np.uint64(32)) | ranks.astype(np.uint64, copy=False)
    return np.where(real, keys, NO_ENTRY)


def similarity_of_key(keys: np.ndarray) -> np.ndarray:
    """The float32 similarities whose descending_key is the high half of merge keys (0.0 for -0.0, the one float
    the key does not keep apart)."""
    ascending = (1 << 32) - 1 - (keys >> np.uint64(32)).astype(np.int64) - (1 << 31)
    bits = ascending.astype(np.int32)
    return np.where(bits < 0, bits ^ np.int32(0x7FFFFFFF), bits).view(np.float32)


def smallest_of_both(a: list[np.ndarray], b: list[np.ndarray]) -> list[np.ndarray]:
    """Row by row, the k smallest of two ascending runs of k keys each (a[j], b[j]: the j-th column), ascending:
    the i-th is min(a_i, b_i, max(a_(j-1), b_(i-j)) for 0 < j <= i), since the first i + 1 of the union are some
    j of a's and i + 1 - j of b's. k^2 elementwise passes over whole columns, where a sort works row by row."""
    merged = []
    for i in range(len(a)):
        best = np.minimum(a[i], b[i])
        for j in range(1, i + 1):
            np.minimum(best, np.maximum(a[j - 1], b[i - j]), out=best)
        merged.append(best)
    return merged


class SmallestKeys:
    """Each of `rows` rows' k best entries so far, as merge keys (a similarity's descending_key above a reference's
    rank: one uint64 orders entries by similarity descending, then reference ascending) in k ascending columns.
    Parts of k entries a row, best first, merge in by smallest_of_both on the rows they name: the cost of a part
    is a few passes over its rows, with nothing held but the table. The result is merge_topk's over the same
    parts (tested)."""

    def __init__(self, rows: int, k: int):
        self.columns = [np.full(rows, NO_ENTRY, dtype=np.uint64) for _ in range(k)]
        self.seen = np.zeros(rows, dtype=bool)

    def add(self, rows: np.ndarray, sims: np.ndarray, ranks: np.ndarray) -> None:
        """Entries for `rows` (distinct): their similarities and references' ranks (below 2^32; -1 for none), k a
        row, best first."""
        if sims.shape[1] != len(self.columns):
            raise ValueError(f"a part of {sims.shape[1]} neighbours merged into a table of {len(self.columns)}")
        keys = merge_keys(sims, np.maximum(ranks, 0), ranks >= 0)
        if np.any(keys[:, 1:] < keys[:, :-1]):
            keys = np.sort(keys, axis=1)
        merged = smallest_of_both([column[rows] for column in self.columns], list(keys.T))
        for column, best in zip(self.columns, merged):
            column[rows] = best
        self.seen[rows] = True

    def best(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(similarities [m, k], ranks [m, k]) of `rows`, best first; -inf and -1 where a row has fewer entries."""
        keys = np.stack([column[rows] for column in self.columns], axis=1)
        real = keys != NO_ENTRY
        sims = np.where(real, similarity_of_key(keys), np.float32(-np.inf))
        ranks = np.where(real, (keys & np.uint64(RANKS - 1)).astype(np.int64), -1)
        return sims, ranks


def merge_rows(a: Neighbours, b: Neighbours) -> Neighbours:
    """Row i's k best of a's and b's row i (the same queries, in the same order), by similarity descending then
    reference ascending: merge_topk's order, done row-wise on [m, 2k] with no sort over all the entries."""
    sims, refs = np.concatenate([a.sims, b.sims], axis=1), np.concatenate([a.refs, b.refs], axis=1)
    order = np.lexsort((refs, -sims), axis=1)[:, : a.sims.shape[1]]
    return Neighbours(a.queries, np.take_along_axis(sims, order, axis=1), np.take_along_axis(refs, order, axis=1))


class TopKTable(HoldsArrays):
    """Each query's k best so far, in a dense table indexed by a row number the caller gives each query (its row
    in its shard): parts are merged into it row-wise as they arrive (merge_rows), so memory stays one shard's
    table and the cost of a part is that of its rows. `neighbours()` gives merge_topk's result over every part."""

    def __init__(self, k: int):
        self.k = k
        self.queries = np.full(0, -1, dtype=np.int64)
        self.sims = np.full((0, k), -np.inf, dtype=np.float32)
        self.refs = np.full((0, k), -1, dtype=np.int64)

    def add(self, rows: np.ndarray, part: Neighbours) -> TopKTable:
        if part.sims.shape[1] != self.k:
            raise ValueError(f"a part of {part.sims.shape[1]} neighbours merged into a table of {self.k}")
        self._grow(int(rows.max(initial=-1)) + 1)
        check_one_row_each(rows)
        held = Neighbours(part.queries, self.sims[rows], self.refs[rows])
        merged = merge_rows(held, part)
        self.queries[rows], self.sims[rows], self.refs[rows] = part.queries, merged.sims, merged.refs
        return self

    def neighbours(self) -> Neighbours:
        seen = self.queries >= 0
        return Neighbours(self.queries[seen], self.sims[seen], self.refs[seen])

    def _grow(self, size: int) -> None:
        extra = size - len(self.queries)
        if extra > 0:
            self.queries = np.concatenate([self.queries, np.full(extra, -1, np.int64)])
            self.sims = np.concatenate([self.sims, np.full((extra, self.k), -np.inf, np.float32)])
            self.refs = np.concatenate([self.refs, np.full((extra, self.k), -1, np.int64)])


def knn_by_lists(queries: np.ndarray, unit_database: np.ndarray, k: int, centroids: np.ndarray, nprobe: int,
                 batch_rows: int, name: str = "queries") -> tuple[np.ndarray, np.ndarray]:
    """IVF k-NN on one machine by the join's comparisons: each list's queries against its rows in one product
    (list_topk), merged into a table per batch of `batch_rows` queries (SmallestKeys). miner.neighbours.knn's way
    for `IVF<n>,Flat` with lists of JOIN_MIN_ROWS_PER_LIST rows or more, where it beats faiss's IVF search (which
    scans a list for each query one vector at a time) by a product a list: 0.27-0.30x its CPU at 156-195 rows a list
    of 256-d vectors, 0.82-0.85x at 29-88 of 1,024-d ones (bench/bench_library_knn.py). A query whose lists hold
    fewer than k rows is searched over all rows (that search searched its whole batch again, so a query's neighbours
    depended on the batch it came in). Returns (similarities, row ids) [n_queries, k], best first, ties to the
    smaller id; the same neighbours and bits as the Beam stage's join over the same centroids. Queries are made unit
    rows a batch at a time (memory)."""
    db_members = dict(rows_by_list(assign(unit_database, centroids, 1, unit=True)))  # each list's rows ascending
    sims = np.empty((len(queries), k), dtype=np.float32)
    ids = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), batch_rows):
        batch = unit_rows(queries[start:start + batch_rows], name)
        best = SmallestKeys(len(batch), k)
        for list_id, q_rows in rows_by_list(assign(batch, centroids, nprobe, unit=True)):
            db_rows = db_members.get(list_id)
            if db_rows is not None:
                found = list_topk(batch[q_rows], q_rows, unit_database[db_rows], db_rows, k, unit=True)
                best.add(q_rows, found.sims, found.refs)
        part_sims, part_ids = best.best(np.arange(len(batch)))
        short = np.flatnonzero((part_ids < 0).any(axis=1))
        if len(short):
            found = list_topk(batch[short], short, unit_database, np.arange(len(unit_database)), k, unit=True)
            part_sims[short], part_ids[short] = found.sims, found.refs
        sims[start:start + len(batch)], ids[start:start + len(batch)] = part_sims, part_ids
    return sims, ids


def search_by_lists(queries: np.ndarray, database: np.ndarray, k: int, centroids: np.ndarray, nprobe: int,
                    max_rows: int | None = None, device: str | None = None) -> Neighbours:
    """The join on one machine: what the Beam stage computes, for tests and benchmarks. Row numbers are the
    references; lists above `max_rows` rows are split into blocks as the stage splits them."""
    q_refs, db_refs = np.arange(len(queries), dtype=np.int64), np.arange(len(database), dtype=np.int64)
    db_members = dict(rows_by_list(assign(database, centroids, 1, "database")))
    parts = [Neighbours.none(q_refs, min(k, len(database)))]
    for list_id, q_rows in rows_by_list(assign(queries, centroids, nprobe, "queries")):
        db_rows = db_members.get(list_id)
        if db_rows is None:
            continue
        limit = max_rows or max(len(q_rows), len(db_rows))
        q_block = blocks(q_refs[q_rows], block_count(len(q_rows), limit))
        db_block = blocks(db_refs[db_rows], block_count(len(db_rows), limit))
        for a in np.unique(q_block):
            for b in np.unique(db_block):
                qs, ds = q_rows[q_block == a], db_rows[db_block == b]
                parts.append(list_topk(queries[qs], q_refs[qs], database[ds], db_refs[ds], k, device))
    return merge_topk(parts, min(k, len(database)))
