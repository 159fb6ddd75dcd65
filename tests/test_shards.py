"""Sharded k-NN: searching shard by shard and merging equals one search over the whole database."""

import numpy as np
import pytest

from miner.index import KnnConfig, knn, resolve_factory
from miner.shards import TopK, search_shard, shard_index, train_template


def unit(rng, n, d=32):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def sharded_search(queries, database, k, config, n_shards, factory, template):
    best = TopK.empty(len(queries), k)
    for rows in np.array_split(np.arange(len(database)), n_shards):
        index = shard_index(template, database[rows], factory, config)
        best = best.merge(search_shard(index, queries, database[rows], rows.astype(np.int64), k, factory, config))
    return best


@pytest.mark.parametrize("n_shards", [1, 3, 7])
def test_flat_shards_equal_one_exact_search(n_shards):
    rng = np.random.default_rng(0)
    queries, database = unit(rng, 50), unit(rng, 300)
    config = KnnConfig(index="Flat")
    template = train_template(None, 32, "Flat", config)
    best = sharded_search(queries, database, 4, config, n_shards, "Flat", template)
    sims, ids = knn(queries, database, 4, config)
    np.testing.assert_array_equal(best.refs, ids)
    np.testing.assert_allclose(best.sims, sims, rtol=1e-5)


def test_ivf_shards_from_one_template_equal_one_index():
    rng = np.random.default_rng(1)
    centres = unit(rng, 40)
    database = centres[rng.integers(0, 40, 2000)] + 0.05 * unit(rng, 2000)
    database /= np.linalg.norm(database, axis=1, keepdims=True)
    queries = database[:100] + 0.01 * unit(rng, 100)
    config = KnnConfig(index="IVF16,Flat", nprobe=16)  # every list: exact, so comparable with Flat
    factory = resolve_factory(config, len(database))  # from the whole database, not a shard
    template = train_template(database[:500], 32, factory, config)
    best = sharded_search(queries, database, 4, config, 4, factory, template)
    sims, ids = knn(queries, database, 4, KnnConfig(index="Flat"))
    np.testing.assert_array_equal(best.refs, ids)


def test_shard_smaller_than_k_is_padded_then_filled():
    rng = np.random.default_rng(2)
    queries, database = unit(rng, 5), unit(rng, 6)
    config = KnnConfig(index="Flat")
    template = train_template(None, 32, "Flat", config)
    best = sharded_search(queries, database, 4, config, 3, "Flat", template)  # shards of 2 rows
    assert (best.found() == 4).all()
    np.testing.assert_array_equal(best.refs, knn(queries, database, 4, config)[1])


def test_merge_breaks_ties_by_smaller_reference():
    a = TopK(np.array([[0.5, 0.4]], np.float32), np.array([[9, 3]]))
    b = TopK(np.array([[0.5, 0.1]], np.float32), np.array([[2, 7]]))
    merged = a.merge(b)
    np.testing.assert_array_equal(merged.refs, [[2, 9]])
