"""k-NN search: exact results, index choice by size, batching, dtypes, and ANN + rescoring == exact search."""

import faiss
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from miner.index import (
    IndexConfigError,
    KnnConfig,
    default_factory,
    default_nprobe,
    rescore,
    resolve_factory,
    stores_exact_vectors,
    trained_index,
    two_level_centroids,
    use_gpu,
)
from miner.knn_join import knn_by_lists
from miner.neighbours import JOIN_MIN_ROWS_PER_LIST, knn
from miner.vectors import unit_rows


def unit(a):
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)


def clustered(rng, n, d, clusters=8, noise=0.3):
    centres = rng.normal(size=(clusters, d))
    return unit(centres[rng.integers(0, clusters, n)] + noise * rng.normal(size=(n, d)))


def brute_force(q, db, k):
    sims = unit(q) @ unit(db).T
    order = np.lexsort((np.broadcast_to(np.arange(db.shape[0]), sims.shape), -sims), axis=1)[:, :k]
    return np.take_along_axis(sims, order, axis=1), order


@pytest.mark.parametrize("n, factory", [
    (1, "Flat"), (9_999, "Flat"), (10_000, "IVF1024,Flat"), (159_999, "IVF1024,Flat"),
    (160_000, "IVF4096,Flat"), (700_000, "IVF16384,Flat"), (10_000_000, "IVF65536,SQ8"),
    (500_000_000, "OPQ64,IVF262144,PQ64"),
])
def test_default_index_by_corpus_size(n, factory):
    assert default_factory(n) == factory


def test_default_nprobe_scales_with_lists_and_is_capped():
    assert default_nprobe(1024) == 16
    assert default_nprobe(4096) == 64
    assert default_nprobe(65536) == 128
    assert default_nprobe(4) == 4


def test_exact_storage_detection():
    assert stores_exact_vectors("Flat") and stores_exact_vectors("IVF1024,Flat")
    assert not stores_exact_vectors("IVF1024,PQ64") and not stores_exact_vectors("OPQ64,IVF1024,Flat")


def test_flat_matches_brute_force():
    rng = np.random.default_rng(0)
    q, db = clustered(rng, 300, 24), clustered(rng, 500, 24)
    sims, ids = knn(q, db, 5)
    want_sims, want_ids = brute_force(q, db, 5)
    assert (ids == want_ids).all()
    assert sims == pytest.approx(want_sims, abs=1e-5)


def test_ties_broken_by_smaller_id():
    db = np.array([[1, 0], [0, 1], [1, 0], [1, 0]], dtype=np.float32)
    _, ids = knn(np.array([[1, 0]], dtype=np.float32), db, 3)
    assert ids.tolist() == [[0, 2, 3]]


def test_batches_float16_and_unnormalised_input_give_the_same_neighbours():
    rng = np.random.default_rng(1)
    q, db = clustered(rng, 257, 16), clustered(rng, 311, 16)
    sims, ids = knn(q, db, 4)
    scaled = q * rng.uniform(0.1, 10, size=(len(q), 1)).astype(np.float32)
    b_sims, b_ids = knn(scaled, db.astype(np.float16), 4, KnnConfig(batch_size=7))
    assert (ids == b_ids).mean() > 0.99  # float16 rounding may swap near-ties
    assert b_sims == pytest.approx(sims, abs=2e-3)


def test_batches_fill_the_same_bytes_at_every_width_and_give_the_same_bits_as_any_batch():
    """knn.batch_size auto: the rows of 64 MiB of float32 vectors (16,384 at 1,024 dimensions, as the fixed default
    was); the neighbours and their similarity bits are those of any other batch, exact and IVF alike."""
    assert [KnnConfig().batch_rows(d) for d in (1024, 512, 256)] == [16_384, 32_768, 65_536]
    assert KnnConfig(batch_size=100).batch_rows(256) == 100
    rng = np.random.default_rng(4)
    q, db = clustered(rng, 900, 32), clustered(rng, 2000, 32)
    for index in ("Flat", "IVF16,Flat"):
        sims, ids = knn(q, db, 4, KnnConfig(index=index, nprobe=4))
        b_sims, b_ids = knn(q, db, 4, KnnConfig(index=index, nprobe=4, batch_size=97))
        assert np.array_equal(ids, b_ids) and np.array_equal(sims.view(np.int32), b_sims.view(np.int32))


def test_k_larger_than_database():
    rng = np.random.default_rng(2)
    sims, ids = knn(clustered(rng, 5, 8), clustered(rng, 3, 8), 10)
    assert ids.shape == (5, 3) and sorted(ids[0].tolist()) == [0, 1, 2]


def test_ivf_queries_with_too_few_neighbours_in_their_lists_are_searched_again():
    rng = np.random.default_rng(3)
    q, db = clustered(rng, 40, 16), clustered(rng, 64, 16)
    sims, ids = knn(q, db, 20, KnnConfig(index="IVF8,Flat", nprobe=1))
    assert (ids >= 0).all()
    assert (ids == brute_force(q, db, 20)[1]).all()


@given(st.integers(0, 10_000), st.sampled_from([8, 32]), st.integers(60, 800), st.sampled_from([1, 4, 9]),
       st.sampled_from([2, 8, 16]), st.sampled_from([1, 3, 8]), st.sampled_from([7, 1000]), st.booleans())
def test_ivf_flat_gives_each_querys_best_among_the_rows_of_its_lists_whatever_its_batch(seed, d, n, k, nlist,
                                                                                     nprobe, batch_size, spread):
    """knn answers `IVF<n>,Flat` with lists of JOIN_MIN_ROWS_PER_LIST rows or more by the join's comparisons
    (miner.knn_join.knn_by_lists), which knn_by_lists gives at any list size: each query's k best by exact
    similarity (rescore's bits, ties to the smaller id) among the rows of the nprobe lists nearest it, or among all
    rows where those lists hold fewer than k; the same in batches of 7 as in one (faiss's IVF search, used before
    and for smaller lists, searches a whole batch over every list when one of its queries is short of neighbours).
    `spread`: clusters far apart, so that lists hold few rows and queries fall short."""
    rng = np.random.default_rng(seed)
    q, db = clustered(rng, 50, d, noise=0.05 if spread else 0.3), clustered(rng, n, d)
    q[::7] = db[rng.integers(0, n, len(q[::7]))]  # exact copies: ties at the top
    config = KnnConfig(index=f"IVF{nlist},Flat", nprobe=nprobe, batch_size=batch_size)
    if n >= JOIN_MIN_ROWS_PER_LIST * nlist:
        sims, ids = knn(q, db, k, config)
    else:  # below the size knn takes the join at: the join itself
        index = trained_index(d, f"IVF{nlist},Flat", config, unit_rows(db, "db"))  # held: its quantizer is its own
        centroids = faiss.extract_index_ivf(index).quantizer.reconstruct_n(0, nlist)
        sims, ids = knn_by_lists(q, unit_rows(db, "db"), k, centroids, nprobe, batch_size)
    unit_q, unit_db = unit_rows(q, "q"), unit_rows(db, "db")
    index = trained_index(d, f"IVF{nlist},Flat", config, unit_db)  # held: the quantizer is the index's
    quantizer = faiss.extract_index_ivf(index).quantizer
    db_lists = quantizer.search(unit_db, 1)[1][:, 0]
    probes = quantizer.search(unit_q, nprobe)[1]
    for i in range(len(q)):
        rows = np.flatnonzero(np.isin(db_lists, probes[i]))
        rows = rows if len(rows) >= k else np.arange(n)
        row_sims = rescore(unit_q[i:i + 1], unit_db, rows[None], unit=True)[0]
        best = np.lexsort((rows, -row_sims))[:k]
        assert ids[i].tolist() == rows[best].tolist() and sims[i].tobytes() == row_sims[best].tobytes()


index_cases = st.tuples(
    st.integers(0, 10_000),                          # seed
    st.sampled_from([8, 16, 32]),                    # dims
    st.integers(40, 160),                            # database size
    st.integers(1, 8),                               # k
    st.sampled_from(["IVF4,Flat", "IVF8,Flat", "IVF4,PQ4x4", "IVF8,SQ8", "PCA8,IVF4,Flat"]),
    st.sampled_from([0, 4]),                         # two_level_lists: one-level or two-level quantizer
)


@given(index_cases)
def test_approximate_index_with_rescoring_equals_exact_search(case):
    """With every list probed and every vector fetched as a candidate, rescoring must restore exact k-NN."""
    seed, d, n, k, factory, two_level_lists = case
    rng = np.random.default_rng(seed)
    q, db = clustered(rng, 30, d), clustered(rng, n, d)
    config = KnnConfig(index=factory, nprobe=8, rescore_factor=n, two_level_lists=two_level_lists)
    sims, ids = knn(q, db, k, config)
    want_sims, want_ids = brute_force(q, db, k)
    assert sims == pytest.approx(want_sims, abs=1e-5)
    assert (ids == want_ids).all()


def test_rescore_is_exact_cosine():
    rng = np.random.default_rng(4)
    q, db = clustered(rng, 10, 12), clustered(rng, 50, 12)
    ids = rng.integers(0, 50, size=(10, 6))
    expected = np.einsum("qd,qkd->qk", q, unit(db)[ids])
    assert rescore(q, db * 3.0, ids) == pytest.approx(expected, abs=1e-6)


def test_a_rescored_similarity_has_the_same_bits_whatever_else_is_rescored_with_it():
    """What the join's grouping-independence rests on: a pair's value depends on its two rows alone, not on the
    other queries, candidates or their order in the call, nor on whether the rows arrive unit already."""
    from miner.vectors import unit_rows

    rng = np.random.default_rng(5)
    q, db = unit(clustered(rng, 200, 64)), clustered(rng, 300, 64).astype(np.float16)
    ids = rng.integers(0, 300, size=(200, 8))
    whole = rescore(q, db, ids)
    np.testing.assert_array_equal(rescore(q, unit_rows(db, "database"), ids, unit=True), whole)
    np.testing.assert_array_equal(rescore(q[50:90], db, ids[50:90, ::-1])[:, ::-1], whole[50:90])
    np.testing.assert_array_equal(rescore(q[7:8], db, ids[7:8, 2:3]), whole[7:8, 2:3])


def test_too_many_lists_for_the_data_is_a_clear_error():
    with pytest.raises(IndexConfigError, match="only 100 vectors"):
        resolve_factory(KnnConfig(index="IVF1024,Flat"), 100)


def test_bad_factory_string_is_a_clear_error_when_the_settings_are_read():
    # not when the first language passes knn.exact_below, which a crawl's run may reach hours in
    for bad in ("NotAnIndex", "IVFabc,Flat"):
        with pytest.raises(IndexConfigError, match=f"knn.index '{bad}': FAISS cannot parse it"):
            KnnConfig(index=bad)
    with pytest.raises(IndexConfigError, match="knn.index must be auto or a FAISS index-factory string"):
        KnnConfig(index="")


def test_a_factory_the_vectors_width_does_not_fit_is_a_clear_error_where_it_is_built():
    # PQ7 parses (3,840 is no multiple of 7 either, but only the real width decides): built at d = 8, it fails
    rng = np.random.default_rng(5)
    with pytest.raises(IndexConfigError, match="FAISS cannot build 'PQ7'"):
        knn(clustered(rng, 4, 8), clustered(rng, 4, 8), 1, KnnConfig(index="PQ7"))


def coarse_quantizer_centroids(index):
    quantizer = faiss.extract_index_ivf(index).quantizer
    return quantizer.reconstruct_n(0, quantizer.ntotal)


def kmeans_fit(rows, centroids):
    """Mean cosine of each row to its nearest centroid: what spherical k-means maximises."""
    return float((rows @ unit(centroids).T).max(axis=1).mean())


@pytest.mark.parametrize("factory", ["IVF64,Flat", "IVF64,SQ8", "PCA16,IVF64,Flat"])
def test_large_quantizers_train_in_two_levels_as_well_as_in_one(factory):
    rng = np.random.default_rng(7)
    rows = clustered(rng, 64 * 64, 32, clusters=40, noise=0.5)
    two = trained_index(32, factory, KnnConfig(two_level_lists=64, two_level_refine=0), rows)
    one = trained_index(32, factory, KnnConfig(two_level_lists=0), rows)
    assert two.is_trained and faiss.extract_index_ivf(two).quantizer.ntotal == 64
    centroids = coarse_quantizer_centroids(two)
    refined = coarse_quantizer_centroids(trained_index(32, factory, KnnConfig(two_level_lists=64), rows))
    if factory == "IVF64,Flat":  # no transform before the quantizer: its centroids are two_level_centroids'
        assert np.array_equal(centroids, two_level_centroids(rows, 64))
        for trained in (centroids, refined):  # spherical, as faiss's IP training
            assert np.allclose(np.linalg.norm(trained, axis=1), 1, atol=1e-5)
        assert kmeans_fit(rows, centroids) >= kmeans_fit(rows, coarse_quantizer_centroids(one)) - 0.01
        assert kmeans_fit(rows, refined) >= kmeans_fit(rows, centroids) - 1e-4  # k-means steps never fit worse
    assert not np.array_equal(refined, centroids)
    assert np.array_equal(refined, coarse_quantizer_centroids(trained_index(32, factory, KnnConfig(two_level_lists=64),
                                                                            rows)))
    below = trained_index(32, factory, KnnConfig(two_level_lists=128), rows)  # under the threshold: one level
    assert np.array_equal(coarse_quantizer_centroids(below), coarse_quantizer_centroids(one))


def test_a_coarse_cluster_too_small_for_a_centroid_of_its_own_still_gives_nlist_centroids():
    rng = np.random.default_rng(8)
    big, outliers = clustered(rng, 1000, 16, clusters=6), unit(-np.ones((3, 16)) + 0.01 * rng.normal(size=(3, 16)))
    centroids = two_level_centroids(np.vstack([big, outliers]), 64)  # 3 rows x 64 / 1003 rounds to no centroid
    assert centroids.shape == (64, 16) and np.isfinite(centroids).all()
    with pytest.raises(IndexConfigError, match="at least 64 training vectors"):
        two_level_centroids(big[:63], 64)


@pytest.mark.parametrize("field, value", [("nprobe", 0), ("rescore_factor", "many"), ("gpu", "yes"),
                                          ("batch_size", 0), ("two_level_lists", -1), ("two_level_lists", True),
                                          ("two_level_refine", -2), ("two_level_refine", 1.5),
                                          ("max_list_rows", 0), ("max_list_rows", "many"), ("batch_size", "many")])
def test_invalid_settings_rejected(field, value):
    with pytest.raises(IndexConfigError):
        KnnConfig(**{field: value})


def test_the_joins_rows_a_side_fill_the_same_bytes_at_every_width():
    """max_list_rows: auto bounds a join work item's side by the bytes of its float32 rows: 50,000 rows at 1,024
    dimensions (the fixed default before), four times as many at a quarter of the width; a number stays."""
    assert KnnConfig().for_width(1024).max_list_rows == 50_000
    assert KnnConfig().for_width(256).max_list_rows == 200_000 and KnnConfig().for_width(512).max_list_rows == 100_000
    assert KnnConfig(max_list_rows=8).for_width(256).max_list_rows == 8


@pytest.mark.skipif(hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0, reason="a GPU is present")
def test_cpu_fallback_and_required_gpu():
    assert use_gpu(KnnConfig()) is False  # auto falls back to CPU
    with pytest.raises(IndexConfigError, match="no GPU"):
        use_gpu(KnnConfig(gpu=True))


def _codes_and_floats(n: int, dim: int = 64, seed: int = 0):
    floats = unit(np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32))
    return _codes_from(floats), floats


def test_a_short_list_as_long_as_the_database_gives_the_float_vectors_own_neighbours():
    from miner.neighbours import knn_refined

    (src_codes, src), (tgt_codes, tgt) = _codes_and_floats(50), _codes_and_floats(80, seed=1)
    sims, ids = knn_refined(src_codes, tgt_codes, 4, 80, (src, tgt))
    exact_sims, exact_ids = knn(src, tgt, 4, KnnConfig(index="Flat"))
    np.testing.assert_array_equal(ids, exact_ids)
    np.testing.assert_allclose(sims, exact_sims, atol=1e-6)


def test_a_short_list_is_ranked_by_the_float_vectors_not_by_the_code():
    from miner.neighbours import knn_refined

    (src_codes, src), (tgt_codes, tgt) = _codes_and_floats(200), _codes_and_floats(300, seed=1)
    _, code_ids = knn(src_codes, tgt_codes, 8, KnnConfig(index="Flat"))
    sims, ids = knn_refined(src_codes, tgt_codes, 3, 8, (src, tgt))
    assert all(set(row) <= set(candidates) for row, candidates in zip(ids, code_ids))  # from the short list only
    np.testing.assert_allclose(sims, np.einsum("qd,qkd->qk", src, tgt[ids]), atol=1e-6)  # exact cosines
    assert (np.diff(sims, axis=1) <= 0).all() and (ids[:, 0] != code_ids[:, 0]).any()  # reordered somewhere


def test_rescoring_refuses_float_vectors_that_do_not_match_the_codes():
    from miner.neighbours import knn_refined

    codes, floats = _codes_and_floats(20)
    with pytest.raises(ValueError, match="database: 19 float vectors to rescore 20 codes"):
        knn_refined(codes, codes, 2, 8, (floats, floats[:19]))
    with pytest.raises(IndexConfigError, match="at least k = 4 candidates"):
        knn_refined(codes, codes, 4, 2, (floats, floats))


def test_mining_binary_codes_with_rescored_short_lists_scores_margins_on_the_float_vectors():
    from miner.mining import MiningConfig, mine

    (src_codes, src), (tgt_codes, tgt) = _codes_and_floats(60), _codes_and_floats(60, seed=1)
    tgt[:30] = unit(src[:30] + 0.3 * tgt[:30])  # half of them translations
    tgt_codes = _codes_from(tgt)
    config = MiningConfig(k=4, selection="max")
    floats = mine(src, tgt, config)
    rescored = mine(src_codes, tgt_codes, config, code="sign", exact=(src, tgt), candidates=60)
    estimated = mine(src_codes, tgt_codes, config, code="sign")
    np.testing.assert_array_equal(rescored.src, floats.src)
    np.testing.assert_array_equal(rescored.tgt, floats.tgt)
    np.testing.assert_allclose(rescored.margin, floats.margin, rtol=1e-5)
    np.testing.assert_allclose(rescored.cos, floats.cos, atol=1e-6)
    shared = min(len(estimated), len(floats))
    assert not np.allclose(estimated.cos[:shared], floats.cos[:shared], atol=1e-3)  # what rescoring changes


def _codes_from(floats):
    from encoders import binary

    return binary.unit_rows(binary.pack(binary.sign_bits(floats)), "sign")


@pytest.mark.parametrize("value, expected", [("auto", "auto"), (0, 0), (123, 123), ("4GiB", 4 * 2**30),
                                             ("500 MB", 500_000_000), ("2e9", 2_000_000_000), ("1.5GB", 1_500_000_000)])
def test_wave_bytes_takes_auto_a_byte_count_or_a_size(value, expected):
    assert KnnConfig(wave_bytes=value).wave_bytes == expected


@pytest.mark.parametrize("value", [-1, True, 1.5, "lots", "4 parsecs", "1.5.3", ""])
def test_a_wave_size_that_is_not_one_is_an_error_naming_the_setting(value):
    with pytest.raises(IndexConfigError, match="knn.wave_bytes"):
        KnnConfig(wave_bytes=value)
