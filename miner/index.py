"""k-nearest-neighbour search over unit sentence vectors with FAISS.

Inner product on unit vectors is cosine similarity, so every index uses METRIC_INNER_PRODUCT. Exact search
(`Flat`) is the default for small sets; larger sets get an IVF index chosen from the database size as production
miners do (docs: ../shared/docs/METHODS.md §8), and any FAISS index-factory string can be given instead.

Approximate indexes return approximate neighbours *and* approximate similarities (PQ and SQ codes), while the
margin is a ratio of small differences between similarities. So candidates from any non-Flat index are
rescored exactly against the original vectors and re-ranked before anyone computes a margin from them.

Queries are searched in batches and the database is added in batches, so memory is the index plus one batch.
Callers ask miner.neighbours.knn, which answers `IVF<n>,Flat` by the join's comparisons (miner.knn_join) where
its lists are large enough, and every other index here.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass, replace

import faiss
import numpy as np
from tqdm.auto import tqdm

from miner.vectors import iter_unit_batches, unit_rows

log = logging.getLogger(__name__)

# (database size below which the factory applies, factory), from METHODS §8. The two largest use compressed codes
# (SQ8, PQ64): exact rescoring from the original vectors restores the similarities the margin needs.
INDEX_BY_DATABASE_SIZE = (
    (10_000, "Flat"),
    (160_000, "IVF1024,Flat"),
    (700_000, "IVF4096,Flat"),
    (10_000_000, "IVF16384,Flat"),
    (500_000_000, "IVF65536,SQ8"),
    (float("inf"), "OPQ64,IVF262144,PQ64"),
)
# The join's work item, a side: the float32 rows (as compared) of `knn.max_list_rows: auto`; 50,000 rows at 1,024
# dimensions, the fixed default before it followed the width (docs/benchmarks.md, "The join's groups sized in bytes").
GROUP_SIDE_BYTES = 50_000 * 1_024 * 4
# A k-NN batch (`knn.batch_size: auto`): the float32 rows of 64 MiB, 16,384 at 1,024 dimensions (the fixed default
# before it followed the width), 32,768 at 512, 65,536 at 256: the library's IVF k-NN took 5-15% less CPU at 256 and
# 512 dimensions with them, the same neighbours and bits (docs/benchmarks.md, "Batches sized in bytes")
BATCH_BYTES = 16_384 * 1_024 * 4
# Floats gathered at once when rescoring (queries x candidates x dims): bounds rescoring memory to ~64 MB.
RESCORE_FLOATS_PER_CHUNK = 1 << 24


class IndexConfigError(ValueError):
    """An index setting that cannot work for this data."""


BYTE_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
              "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def parse_bytes(value, name: str) -> int:
    """A size in bytes from an integer or a string such as "4GiB", "500 MB" or "2e9"."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    number = r"\s*([0-9]+(?:\.[0-9]*)?(?:[eE][0-9]+)?)\s*([A-Za-z]*)\s*"
    match = re.fullmatch(number, value) if isinstance(value, str) else None
    if match and match.group(2).upper() in BYTE_UNITS:
        return int(float(match.group(1)) * BYTE_UNITS[match.group(2).upper()])
    raise IndexConfigError(f"{name} must be auto, a number of bytes or a size such as 4GiB, got {value!r}")


@dataclass(frozen=True)
class KnnConfig:
    """How neighbours are found; `auto` picks from the data (see the functions below)."""

    index: str = "auto"  # FAISS index-factory string ("Flat", "IVF4096,Flat", "OPQ64,IVF65536,PQ64") or auto
    nprobe: int | str = "auto"  # IVF lists visited per query
    rescore_factor: int | str = "auto"  # candidates fetched per wanted neighbour before exact rescoring
    batch_size: int | str = "auto"  # query (and add) batch rows: bounds memory; auto: BATCH_BYTES of rows (batch_rows)
    train_sample: int = 1_000_000  # most vectors an IVF/PQ index is trained on
    # auto: use every GPU faiss sees (and, in the Beam join, compare lists on a GPU torch sees); True: require
    # one; False: CPU only
    gpu: bool | str = "auto"
    seed: int = 0  # training-sample draw
    # IVF quantizers of this many lists or more train by two-level k-means (train_coarse_quantizer): its cost per
    # training row grows as sqrt(nlist) instead of nlist; 0 keeps faiss's one-level k-means for every size. Then
    # two_level_refine iterations of k-means over all lists start from its centroids (each costs a tenth of
    # faiss's training): on real sentence vectors 2 bring recall@4 to within 0.3 points of faiss's training at 3.3x
    # less CPU (IVF4096), where none lose 0.6-1.4 points (docs/benchmarks.md).
    two_level_lists: int = 4096
    two_level_refine: int = 2
    # The Beam pairs stage (k-NN as a join, miner/knn_join.py): languages below this many sentences are searched
    # exactly (auto index), and a work item holds about max_list_rows rows on a side (a list with more, one topic
    # dominating a crawl, is split into blocks of about that many), which bounds a worker's memory (rows x dims x 4
    # bytes, as compared). auto: the rows whose float32 vectors fill GROUP_SIDE_BYTES (for_width).
    exact_below: int = 10_000
    max_list_rows: int | str = "auto"
    # The join's grouping holds the vectors it ships (about nprobe copies of each query row) until its lists are
    # compared: past wave_bytes of them, the lists are grouped and compared in waves, each wave's rows sent only once
    # the wave before is compared, so that a cluster with less memory than the shuffle does not spill it to disk.
    # auto: a quarter of the worker memory of a DaskRunner's cluster, one wave on other runners (Dataflow's shuffle does
    # not live in the workers' memory); 0: one wave. Accepts bytes or "4GiB"-style sizes.
    wave_bytes: int | str = "auto"

    def __post_init__(self) -> None:
        for name in ("nprobe", "rescore_factor"):
            value = getattr(self, name)
            if value != "auto" and (not isinstance(value, int) or value < 1):
                raise IndexConfigError(f"knn.{name} must be 'auto' or a positive integer, got {value!r}")
        for name in ("two_level_lists", "two_level_refine"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise IndexConfigError(f"knn.{name} must be 0 or a positive integer, got {value!r}")
        sized_by_bytes = ("batch_size", "max_list_rows")  # auto: the rows of so many bytes (rows_filling)
        for name in ("batch_size", "train_sample", "exact_below", "max_list_rows"):
            value = getattr(self, name)
            if name in sized_by_bytes and value == "auto":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                auto = " or 'auto'" if name in sized_by_bytes else ""
                raise IndexConfigError(f"knn.{name} must be a positive integer{auto}, got {value!r}")
        if self.wave_bytes != "auto":
            object.__setattr__(self, "wave_bytes", parse_bytes(self.wave_bytes, "knn.wave_bytes"))
        if self.gpu not in ("auto", True, False):
            raise IndexConfigError(f"knn.gpu must be auto, true or false, got {self.gpu!r}")
        if not isinstance(self.index, str) or not self.index:
            raise IndexConfigError(f"knn.index must be auto or a FAISS index-factory string, got {self.index!r}")
        if self.index != "auto":
            check_factory_syntax(self.index)

    def batch_rows(self, dim: int) -> int:
        """Rows of a k-NN batch of `dim`-dimensional vectors: `batch_size`, or for auto the rows whose float32 vectors
        fill BATCH_BYTES."""
        return self.batch_size if self.batch_size != "auto" else rows_filling(BATCH_BYTES, dim)

    def for_width(self, dim: int) -> KnnConfig:
        """This config with `max_list_rows: auto` made the rows of `dim` dimensions whose float32 vectors (a work
        item's rows as compared) fill GROUP_SIDE_BYTES: the same memory at every width, 50,000 rows at the default
        encoder's 1,024 (the fixed value before), 200,000 at 256. A number stays as it is."""
        if self.max_list_rows != "auto":
            return self
        return replace(self, max_list_rows=rows_filling(GROUP_SIDE_BYTES, dim))


def rows_filling(size: int, dim: int) -> int:
    """The rows of `dim` dimensions whose float32 vectors fill `size` bytes (at least one)."""
    return max(1, size // (4 * max(1, dim)))


def default_factory(n_database: int) -> str:
    return next(factory for limit, factory in INDEX_BY_DATABASE_SIZE if n_database < limit)


def ivf_lists(factory: str) -> int | None:
    match = re.search(r"IVF(\d+)", factory)
    return int(match.group(1)) if match else None


def default_nprobe(nlist: int) -> int:
    # About 1/64 of the lists, at least 8, at most 128 (production miners' setting for huge indexes). Measured
    # on real sentence vectors (docs/benchmarks.md): IVF4096 at nprobe 64 finds 94% of the exact 4 neighbours,
    # 5x faster than exact search; 1/32 reaches 95% but only 2x faster, because scanning lists runs far fewer
    # FLOP/s than the GEMM behind Flat search.
    return min(nlist, max(8, min(128, nlist // 64)))


def resolve_nprobe(config: KnnConfig, factory: str) -> int:
    nlist = ivf_lists(factory)
    return default_nprobe(nlist) if config.nprobe == "auto" else min(config.nprobe, nlist)


def stores_exact_vectors(factory: str) -> bool:
    """True when the index keeps raw float vectors, so its similarities are already exact."""
    return factory.split(",")[-1].strip() == "Flat" and not factory.startswith(("OPQ", "PCA"))


@functools.lru_cache(maxsize=64)
def check_factory_syntax(factory: str) -> None:
    """A factory string FAISS cannot parse is an error when the settings are read, not when the first language
    passes knn.exact_below (which a crawl's run may reach hours in). Parsed at a width most factories divide
    (3,840); what depends on the real width (PQ's M dividing d) is checked where the index is built."""
    try:
        faiss.index_factory(3840, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        if "could not parse" in str(err):
            raise IndexConfigError(f"knn.index {factory!r}: FAISS cannot parse it as an index-factory string "
                                   "(such as Flat, IVF4096,Flat or OPQ64,IVF65536,PQ64)") from None


def resolve_factory(config: KnnConfig, n_database: int) -> str:
    factory = default_factory(n_database) if config.index == "auto" else config.index
    nlist = ivf_lists(factory)
    if nlist is not None and nlist > n_database:
        raise IndexConfigError(
            f"index {factory!r} has {nlist} lists but the database has only {n_database} vectors; "
            "use fewer lists or knn.index=Flat"
        )
    return factory


def use_gpu(config: KnnConfig) -> bool:
    n_gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    if config.gpu is True and n_gpus == 0:
        raise IndexConfigError("knn.gpu is true but faiss sees no GPU (is faiss-gpu installed?)")
    return config.gpu is not False and n_gpus > 0


def build_index(database: np.ndarray, config: KnnConfig, name: str = "database") -> faiss.Index:
    """Train (on a bounded sample) and populate an inner-product index over the unit rows of `database`."""
    factory = resolve_factory(config, database.shape[0])
    index = trained_index(database.shape[1], factory, config, training_sample(database, factory, config, name))
    return populate(index, database, factory, config, name)


def trained_index(dim: int, factory: str, config: KnnConfig, sample: np.ndarray | None = None) -> faiss.Index:
    """An empty inner-product index of `factory`, trained on `sample` (unit rows) when the factory needs training.

    The Beam pairs stage uses only the coarse quantizer such an index trains (miner/knn_join.py)."""
    try:
        index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        raise IndexConfigError(f"FAISS cannot build {factory!r} for {dim}-d vectors: {err}") from None
    if not index.is_trained:
        if sample is None:
            raise IndexConfigError(f"index {factory!r} needs training vectors")
        sample = np.ascontiguousarray(sample, dtype=np.float32)
        try:
            train_coarse_quantizer(index, sample, config)
            index.train(sample)  # what is left: nothing for IVF Flat, the codes of SQ / PQ
        except RuntimeError as err:  # faiss's own check (a PQ code book wants 256 rows per centroid set, say)
            raise IndexConfigError(f"index {factory!r} cannot be trained on {len(sample)} vectors: "
                                   f"{faiss_message(err)}; a smaller index, or Flat") from None
    return index


def faiss_message(err: RuntimeError) -> str:
    """The sentence of a faiss error, without the C++ file, line and function it names."""
    text = str(err).strip()
    found = re.search(r"failed: (.+)$", text, re.S) or re.search(r"\.(?:cpp|h):\d+: (.+)$", text, re.S)
    return (found.group(1) if found else text).strip()


# k-means seeds of the two-level training: fixed, so a quantizer's centroids are the same on every run
KMEANS_SEED = 1234


def train_coarse_quantizer(index: faiss.Index, sample: np.ndarray, config: KnnConfig) -> None:
    """Give an untrained IVF index of `config.two_level_lists` or more lists its centroids by two-level k-means
    (a no-op for other indexes, whose `train` does it all).

    faiss's IVF training runs k-means over all nlist centroids: 10 iterations x rows x nlist dot products, and with
    the training rows growing as nlist (64 per list in the pairs stage) its cost grows as nlist^2: 0.65 of the
    pairs stage's CPU at 10^6 sentences per language (IVF8192, docs/benchmarks.md). Two levels, as
    faiss.contrib.clustering.two_level_clustering does for L2: sqrt(nlist) coarse clusters, then each cluster's
    rows split into a share of the nlist centroids proportional to its rows; a row is then compared with about
    2 sqrt(nlist) centroids per iteration. That function asserts L2 training for IVF and fails on a coarse cluster
    given no sub-centroids, hence this version for the inner-product (spherical) quantizers used here.
    `config.two_level_refine` iterations of k-means over all lists then start from those centroids."""
    if not config.two_level_lists:
        return
    index = faiss.downcast_index(index)
    if isinstance(index, faiss.IndexPreTransform):  # OPQ / PCA first: the quantizer sees their output
        for i in range(index.chain.size()):
            transform = index.chain.at(i)
            if not transform.is_trained:
                transform.train(sample)
            sample = transform.apply(sample)
        index = faiss.downcast_index(index.index)
    if not isinstance(index, faiss.IndexIVF) or index.nlist < config.two_level_lists or index.quantizer.ntotal:
        return
    spherical = index.metric_type == faiss.METRIC_INNER_PRODUCT
    centroids = two_level_centroids(sample, index.nlist, spherical=spherical)
    if config.two_level_refine:  # a few iterations over all lists: what the split between clusters missed
        kmeans = faiss.Kmeans(sample.shape[1], index.nlist, niter=config.two_level_refine, seed=KMEANS_SEED,
                              spherical=spherical)
        kmeans.train(sample, init_centroids=centroids)
        centroids = kmeans.centroids
    index.quantizer.reset()
    index.quantizer.add(centroids)
    index.quantizer.is_trained = True


def two_level_centroids(sample: np.ndarray, nlist: int, spherical: bool = True, niter: int = 10,
                        seed: int = KMEANS_SEED) -> np.ndarray:
    """nlist k-means centroids [nlist, d] of `sample` found in two levels (train_coarse_quantizer says why).

    Sub-centroids are shared among coarse clusters in proportion to their rows (cumulative rounding, so they add
    up to nlist exactly and a cluster never gets more centroids than rows); a cluster given none has its rows
    covered by its neighbours' centroids. Seeds are fixed, so the centroids are the same on every run."""
    n, d = sample.shape
    if n < nlist:
        raise IndexConfigError(f"{nlist} lists need at least {nlist} training vectors, got {n}")
    n_coarse = max(1, int(np.sqrt(nlist)))
    coarse = faiss.Kmeans(d, n_coarse, niter=25, seed=seed, spherical=spherical)
    coarse.train(sample)
    _, cluster = coarse.index.search(sample, 1)
    cluster = cluster.ravel()
    order = np.argsort(cluster, kind="stable")
    sizes = np.bincount(cluster, minlength=n_coarse)
    shares = np.diff(np.cumsum(sizes) * nlist // n, prepend=0)
    parts, start = [], 0
    for c in range(n_coarse):
        rows, start = sample[order[start:start + sizes[c]]], start + sizes[c]
        if shares[c] == 0:
            continue
        fine = faiss.Kmeans(d, int(shares[c]), niter=niter, seed=seed + 1 + c, spherical=spherical,
                            min_points_per_centroid=1)
        fine.train(np.ascontiguousarray(rows))
        parts.append(fine.centroids)
    return np.ascontiguousarray(np.vstack(parts), dtype=np.float32)


def populate(index: faiss.Index, database: np.ndarray, factory: str, config: KnnConfig,
             name: str = "database") -> faiss.Index:
    """Add the unit rows of `database` to a trained `index` (moved to the GPUs first when faiss sees any)."""
    if use_gpu(config):
        # Clone after training: the shards then share one coarse quantizer (training a sharded clone would
        # give each GPU its own clustering).
        index = faiss.index_cpu_to_all_gpus(index, _gpu_cloner_options())
    for _, rows in iter_unit_batches(database, name, config.batch_rows(database.shape[1])):
        try:
            index.add(rows)
        except RuntimeError as err:  # IDMap, which wants ids of its own
            raise IndexConfigError(f"index {factory!r} cannot take vectors as the miner adds them: "
                                   f"{faiss_message(err)}") from None
    if ivf_lists(factory) is not None:
        _set_nprobe(index, resolve_nprobe(config, factory))
    log.info("%s: %s index over %d x %d vectors", name, factory, *database.shape)
    return index


def search(
    index: faiss.Index,
    queries: np.ndarray,
    database: np.ndarray,
    k: int,
    config: KnnConfig,
    names: tuple[str, str] = ("queries", "database"),
    factory: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Batched search of `index` (built over `database`), exact rescoring for approximate indexes.

    `factory` is the index's factory string when it was not resolved from `database`'s own size (a shard of a
    larger database)."""
    factory = factory or resolve_factory(config, database.shape[0])
    exact = factory == "Flat"
    fetch = k if exact else min(database.shape[0], k * _rescore_factor(config, factory))
    sims = np.empty((queries.shape[0], k), dtype=np.float32)
    ids = np.empty((queries.shape[0], k), dtype=np.int64)
    batch = config.batch_rows(queries.shape[1])
    batches = iter_unit_batches(queries, names[0], batch)
    total = -(-queries.shape[0] // batch)
    # Progress on a terminal only (disable=None); logs get the per-stage lines instead of carriage returns.
    for start, rows in tqdm(batches, total=total, desc=f"k-NN {names[0]} -> {names[1]}",
                            disable=True if total < 2 else None):
        batch_sims, batch_ids = index.search(rows, fetch)
        if (batch_ids < 0).any():
            batch_sims, batch_ids = _search_all_lists(index, rows, fetch, factory, config)
        if not exact:
            batch_sims = rescore(rows, database, batch_ids, names[1])
        batch_sims, batch_ids = sorted_rows(batch_sims, batch_ids)
        sims[start : start + len(rows)] = batch_sims[:, :k]
        ids[start : start + len(rows)] = batch_ids[:, :k]
    return sims, ids


def rescore(queries: np.ndarray, database: np.ndarray, ids: np.ndarray, name: str = "database",
            unit: bool = False) -> np.ndarray:
    """Exact cos(query_i, database[ids[i, j]]) for unit `queries`, in chunks of bounded memory; `unit` says the
    database rows are unit float32 rows already (unit_rows works row by row, so the bits are the same).

    Each pair's dot product is faiss's `fvec_inner_product` of the two rows alone, so its bits do not depend on
    which other pairs share the call; `fvec_inner_products_by_idx` reads the unit rows where they are: 8x faster
    than gathering them for an einsum (2,500 queries x 8 candidates among 160 rows, docs/benchmarks.md)."""
    out = np.empty(ids.shape, dtype=np.float32)
    if unit:
        database = np.ascontiguousarray(database, dtype=np.float32)
    step = max(1, RESCORE_FLOATS_PER_CHUNK // (ids.shape[1] * database.shape[1]))
    for start in range(0, len(ids), step):
        chunk = slice(start, start + step)
        at = np.ascontiguousarray(ids[chunk], dtype=np.int64)
        rows = database
        if not unit:  # the candidates' rows made unit, each named by its place
            rows = unit_rows(database[at.ravel()], name)
            at = np.arange(at.size, dtype=np.int64).reshape(at.shape)
        _inner_products_by_index(out[chunk], np.ascontiguousarray(queries[chunk], dtype=np.float32), rows, at)
    return out


def _inner_products_by_index(out: np.ndarray, queries: np.ndarray, rows: np.ndarray, at: np.ndarray) -> None:
    """out[i, j] = queries[i] . rows[at[i, j]] (faiss; every argument a contiguous array held by the caller)."""
    if not (out.flags.c_contiguous and rows.flags.c_contiguous and rows.dtype == np.float32):
        raise ValueError("inner products by index need contiguous float32 arrays")
    faiss.fvec_inner_products_by_idx(faiss.swig_ptr(out), faiss.swig_ptr(queries), faiss.swig_ptr(rows),
                                     faiss.swig_ptr(at), queries.shape[1], len(queries), at.shape[1])


def sorted_rows(sims: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Similarity descending, then id ascending: the same neighbours in the same order on every run and index.
    order = np.lexsort((ids, -sims), axis=1)
    return np.take_along_axis(sims, order, axis=1), np.take_along_axis(ids, order, axis=1)


def _search_all_lists(index, rows, fetch, factory, config):
    # An IVF query whose nprobe lists hold fewer than `fetch` vectors gets -1 ids. Searching the batch again
    # over every list always finds min(fetch, n) neighbours; it is rare (tiny lists), so the cost is acceptable.
    log.info("some queries found fewer than %d neighbours in their nprobe lists: searching all lists", fetch)
    _set_nprobe(index, ivf_lists(factory))
    try:
        return index.search(rows, fetch)
    finally:
        _set_nprobe(index, resolve_nprobe(config, factory))


def _rescore_factor(config: KnnConfig, factory: str) -> int:
    if config.rescore_factor != "auto":
        return config.rescore_factor
    # Raw-vector IVF lists rank exactly within the lists searched; compressed codes misrank near neighbours.
    return 1 if stores_exact_vectors(factory) else 4


def training_sample(database: np.ndarray, factory: str, config: KnnConfig, name: str) -> np.ndarray | None:
    n = database.shape[0]
    if factory == "Flat":
        return None  # nothing to train
    if n <= config.train_sample:
        rows = np.arange(n)
    else:
        rows = np.sort(np.random.default_rng(config.seed).choice(n, config.train_sample, replace=False))
    return unit_rows(database[rows], name)


def _set_nprobe(index: faiss.Index, nprobe: int) -> None:
    space = faiss.GpuParameterSpace() if _is_gpu_index(index) else faiss.ParameterSpace()
    space.set_index_parameter(index, "nprobe", nprobe)


def _is_gpu_index(index: faiss.Index) -> bool:
    return type(faiss.downcast_index(index)).__name__.startswith("Gpu")


def _gpu_cloner_options():
    options = faiss.GpuMultipleClonerOptions()
    options.shard = True  # split the database across GPUs rather than replicating it
    return options
