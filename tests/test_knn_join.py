"""k-NN as a join (miner/knn_join.py): with every list probed it is exact search, with fewer it finds what faiss's
IVF search over the same quantizer finds; splitting hot lists, grouping and merging change nothing."""

import faiss
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miner.index import IndexConfigError, KnnConfig
from miner.knn_join import (
    ARGMAX_MAX_K,
    PARTITION_MAX_COLUMNS,
    JoinLayout,
    Neighbours,
    SmallestKeys,
    TopKTable,
    _argmax_topk,
    _argmax_topk_in_place,
    _topk_rows,
    assign,
    compare_device,
    join_layout,
    join_plan,
    list_order,
    list_topk,
    merge_topk,
    picks_restored,
    rows_by_group,
    rows_by_list,
    search_by_lists,
    spatial_order,
    train_quantizer,
)
from miner.neighbours import knn
from miner.vectors import unit_rows


def clustered(rng, n, d=32, centres=20):
    means = rng.standard_normal((centres, d)).astype(np.float32)
    rows = means[rng.integers(0, centres, n)] + 0.3 * rng.standard_normal((n, d)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return clustered(rng, 300), clustered(rng, 2000), rng


def test_all_lists_probed_is_exact_search(data):
    queries, database, _ = data
    centroids = train_quantizer(database, 16, KnnConfig())
    found = search_by_lists(queries, database, 4, centroids, nprobe=16)
    sims, ids = knn(queries, database, 4, KnnConfig(index="Flat"))
    np.testing.assert_array_equal(found.refs, ids)
    np.testing.assert_allclose(found.sims, sims, rtol=3e-7, atol=0)  # faiss's BLAS: within an ulp
    np.testing.assert_array_equal(found.queries, np.arange(len(queries)))


def test_fewer_lists_find_what_faiss_ivf_finds_over_the_same_quantizer(data):
    queries, database, _ = data
    config = KnnConfig(index="IVF16,Flat", nprobe=3)
    centroids = train_quantizer(database, 16, config)
    found = search_by_lists(queries, database, 4, centroids, nprobe=3)
    quantizer = faiss.IndexFlatIP(database.shape[1])
    quantizer.add(centroids)
    index = faiss.IndexIVFFlat(quantizer, database.shape[1], 16, faiss.METRIC_INNER_PRODUCT)
    index.add(database)
    index.nprobe = 3
    _, ids = index.search(queries, 4)
    assert (found.refs == ids).mean() > 0.999  # equal up to the order of exact ties
    assert (found.refs != knn(queries, database, 4, KnnConfig(index="Flat"))[1]).any()  # not exact search


def test_splitting_hot_lists_changes_nothing(data):
    queries, database, _ = data
    centroids = train_quantizer(database, 4, KnnConfig())
    whole = search_by_lists(queries, database, 4, centroids, nprobe=2)
    split = search_by_lists(queries, database, 4, centroids, nprobe=2, max_rows=50)
    np.testing.assert_array_equal(split.refs, whole.refs)
    np.testing.assert_array_equal(split.sims, whole.sims)


def test_a_list_far_larger_than_the_rest_is_split_into_bounded_blocks():
    from miner.knn_join import block_count, blocks

    refs = np.arange(100_000, dtype=np.int64) * 7 + (3 << 32)
    assigned = blocks(refs, block_count(len(refs), 10_000))
    counts = np.bincount(assigned)
    assert len(counts) == 10 and counts.max() < 10_600  # about the bound, whatever the references


def test_ties_go_to_the_smaller_reference_however_rows_are_grouped():
    query = np.array([[1.0, 0.0]], np.float32)
    database = np.array([[1.0, 0.0]] * 5 + [[0.0, 1.0]], np.float32)
    refs = np.array([50, 40, 30, 20, 10, 5], np.int64)
    whole = list_topk(query, np.array([7]), database, refs, 3)
    assert whole.refs.tolist() == [[10, 20, 30]]
    parts = [list_topk(query, np.array([7]), database[rows], refs[rows], 3) for rows in ([0, 1, 5], [2, 3, 4])]
    merged = merge_topk(parts, 3)
    np.testing.assert_array_equal(merged.refs, whole.refs)


@pytest.mark.parametrize("device", [None, "cpu"])
def test_near_ties_are_all_rescored_so_the_k_best_are_those_of_the_exact_similarities(device, monkeypatch):
    """Rows whose products with a query lie within the rounding of the matrix product (copies of one row nudged in
    its last bits) may come out of the product in any order: every one of them is rescored, so the k kept are the
    k best by the rescored similarity over all the rows (ties by the smaller reference), in any blocking and on
    either path. Keeping only k + a few of the product's best would miss some."""
    from miner import knn_join
    from miner.index import rescore

    rng = np.random.default_rng(11)
    queries = unit_rows(rng.standard_normal((60, 64)).astype(np.float32), "queries")
    copies = np.repeat(queries[:3], 40, axis=0) + rng.standard_normal((120, 64)).astype(np.float32) * 2e-7
    database = unit_rows(np.concatenate([copies, rng.standard_normal((80, 64)).astype(np.float32)]), "database")
    refs = rng.permutation(1_000)[:200].astype(np.int64)
    every = rescore(queries, database, np.broadcast_to(np.arange(200), (60, 200)).copy(), unit=True)
    want = np.array([refs[np.lexsort((refs, -row))[:4]] for row in every])
    found = list_topk(queries, np.arange(60), database, refs, 4, device, unit=True)
    np.testing.assert_array_equal(found.refs, want)
    assert found.sims.tobytes() == np.take_along_axis(every, np.argsort(refs)[np.searchsorted(np.sort(refs), want)],
                                                      axis=1).tobytes()
    monkeypatch.setattr(knn_join, "BLOCK_FLOATS", 7 * len(database))  # 7 queries a block
    np.testing.assert_array_equal(list_topk(queries, np.arange(60), database, refs, 4, device, unit=True).refs, want)


def test_codes_crowded_with_ties_pick_the_smaller_reference_in_every_row():
    """Sign codes' similarities take few values, so most rows tie at the k-th best: every row's pick is the
    (similarity, then smaller reference) order's, as a row-by-row sort gives it."""
    from encoders import binary

    rng = np.random.default_rng(3)
    codes = [np.packbits(rng.standard_normal((n, 16)) > 0, axis=1) for n in (300, 200)]
    queries, database = (binary.unit_rows(c, "sign") for c in codes)
    refs = rng.permutation(10_000)[:200].astype(np.int64)
    found = list_topk(queries, np.arange(300), database, refs, 4)
    sims = queries @ database.T
    want = np.array([refs[np.lexsort((refs, -row))[:4]] for row in sims])
    np.testing.assert_array_equal(found.refs, want)


@pytest.mark.parametrize("bits", [256, 1024])
def test_exact_sign_codes_skip_the_rescoring_and_give_its_bits_in_any_blocking(bits, monkeypatch):
    """Widened sign codes of 4^m bits have dot products exact in float32 (encoders.binary.exact_products): the
    matrix product's values are taken as they are, and they are the rescored path's bits, neighbours and order,
    whichever block of queries a row was compared in and on either path (numpy, or torch as on a GPU worker)."""
    from encoders import binary
    from miner import knn_join

    rng = np.random.default_rng(bits)
    base = rng.standard_normal((40, bits))
    codes = [np.packbits(base[rng.integers(0, 40, n)] + 0.8 * rng.standard_normal((n, bits)) > 0, axis=1)
             for n in (250, 180)]
    queries, database = (binary.unit_rows(c, "sign") for c in codes)
    refs = rng.permutation(10_000)[:180].astype(np.int64)
    rescored = list_topk(queries, np.arange(250), database, refs, 4, unit=True)
    exact = list_topk(queries, np.arange(250), database, refs, 4, unit=True, exact=True)
    monkeypatch.setattr(knn_join, "BLOCK_FLOATS", 7 * len(database))  # 7 queries a block
    blocked = list_topk(queries, np.arange(250), database, refs, 4, unit=True, exact=True)
    on_torch = list_topk(queries, np.arange(250), database, refs, 4, "cpu", unit=True, exact=True)
    # packed, counted by Hamming distance: blocked as above, and in one block
    packed_blocked = list_topk(codes[0], np.arange(250), codes[1], refs, 4, packed_signs=True)
    monkeypatch.setattr(knn_join, "BLOCK_FLOATS", 1 << 24)
    packed = list_topk(codes[0], np.arange(250), codes[1], refs, 4, packed_signs=True)
    for found in (exact, blocked, on_torch, packed_blocked, packed):
        np.testing.assert_array_equal(found.refs, rescored.refs)
        assert found.sims.tobytes() == rescored.sims.tobytes()
    assert len(np.unique(rescored.sims)) < rescored.sims.size  # ties were there to break


def test_exact_products_are_sign_codes_of_a_power_of_four_bits():
    from encoders.binary import exact_products

    assert [d for d in range(1, 5000) if exact_products("sign", d)] == [1, 4, 16, 64, 256, 1024, 4096]
    assert not exact_products("threshold", 1024) and not exact_products(None, 1024)


def test_codes_are_counted_by_hamming_distance_only_where_the_bits_are_the_same():
    """faiss counts whole 64-bit words: 64, 256, 1,024 and 4,096-bit sign codes; the rest are widened."""
    from miner.knn_join import hamming_countable

    assert [d for d in range(8, 5000, 8) if hamming_countable("sign", d // 8)] == [64, 256, 1024, 4096]
    assert not hamming_countable("threshold", 128) and not hamming_countable(None, 128)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.sampled_from([3, 17, 120, PARTITION_MAX_COLUMNS + 37]),
       st.sampled_from([1, 2, 4, 7, 12, ARGMAX_MAX_K, ARGMAX_MAX_K + 5]), st.sampled_from([2, 5, 1000]), st.booleans())
def test_candidates_are_each_rows_best_then_smaller_reference_on_every_selection_path(seed, rows, columns, k,
                                                                                     levels, sorted_refs):
    """Repeated argmax (narrow rows, few places), the partition (narrow rows, many places) and torch's topk (wide
    rows) pick the same set as a full sort by (similarity descending, reference ascending), with few distinct
    values (ties everywhere) or many."""
    rng = np.random.default_rng(seed)
    sims = (rng.integers(-levels, levels + 1, (rows, columns)) / levels).astype(np.float32)
    sims[rng.random(sims.shape) < 0.05] = -0.0  # -0.0 ties with 0.0, as in the sort
    refs = np.arange(columns, dtype=np.int64) * 3 if sorted_refs else rng.permutation(columns * 3)[:columns]
    picked = _topk_rows(sims, refs, k)
    want = np.array([np.sort(np.lexsort((refs, -row))[:k]) for row in sims])
    np.testing.assert_array_equal(np.sort(picked, axis=1), want)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.sampled_from([9, 17, 160]), st.sampled_from([1, 4, 8]),
       st.sampled_from([2, 5, 1000]), st.booleans())
def test_picking_in_the_block_gives_the_copys_picks_and_the_rows_back_as_they_were(seed, rows, columns, k, levels,
                                                                                    sorted_refs):
    """The join's usual path marks the product block itself instead of a copy: the same columns, values (bits,
    -0.0 included) and runner-up as picking from a copy, and any rows given back by picks_restored with the bytes
    they had (fewer places than columns, as the join asks)."""
    rng = np.random.default_rng(seed)
    sims = (rng.integers(-levels, levels + 1, (rows, columns)) / levels).astype(np.float32)
    sims[rng.random(sims.shape) < 0.05] = -0.0
    refs = np.arange(columns, dtype=np.int64) * 3 if sorted_refs else rng.permutation(columns * 3)[:columns]
    before = sims.copy()
    want_top, want_runner_up = _argmax_topk(sims, refs, k, runner_up=True)
    top, values, runner_up = _argmax_topk_in_place(sims, refs, k)
    np.testing.assert_array_equal(top, want_top)
    assert values.tobytes() == np.take_along_axis(before, want_top, axis=1).tobytes()
    np.testing.assert_array_equal(runner_up, want_runner_up)  # compared with >=: 0.0 and -0.0 alike
    some = np.flatnonzero(rng.random(rows) < 0.5)
    assert picks_restored(sims, some, top, values).tobytes() == before[some].tobytes()
    strided = np.asfortranarray(before)  # a block whose flat index is not a view of it
    top, values, runner_up = _argmax_topk_in_place(strided, refs, k)
    np.testing.assert_array_equal(top, want_top)
    np.testing.assert_array_equal(runner_up, want_runner_up)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.sampled_from([1, 3, 4]), st.sampled_from([2, 9, 10**6]),
       st.booleans(), st.booleans())
def test_the_merge_keeps_each_querys_best_by_similarity_then_smaller_reference(seed, n_parts, k, levels, wide_refs,
                                                                              full_width):
    """merge_topk gives, for every query, the first k of its entries over all parts as np.lexsort((refs, -sims))
    orders them, the similarities' bits included: ties on similarity (few levels), -0.0 beside 0.0, missing
    entries (-1, -inf), references past 32 bits, parts narrower than k; with parts all k wide, the queries in one
    part keep their row only where it is in that order already (here rows come in any order)."""
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(n_parts):
        queries = np.sort(rng.choice(60, rng.integers(1, 60), replace=False)).astype(np.int64) * 7
        width = k if full_width else int(rng.integers(1, k + 1))
        sims = (rng.integers(-levels, levels + 1, (len(queries), width)) / levels).astype(np.float32)
        sims[rng.random(sims.shape) < 0.05] = -0.0
        refs = rng.choice(10**6, sims.shape, replace=False).astype(np.int64) << (33 if wide_refs else 0)
        refs[rng.random(refs.shape) < 0.1] = -1
        sims[refs < 0] = -np.inf
        parts.append(Neighbours(queries, sims, refs))
    merged = merge_topk(parts, k)
    queries = np.concatenate([np.repeat(p.queries, p.refs.shape[1]) for p in parts])
    sims, refs = (np.concatenate([getattr(p, name).ravel() for p in parts]) for name in ("sims", "refs"))
    assert merged.queries.tolist() == sorted(set(queries.tolist()))
    for row, query in enumerate(merged.queries):
        at = np.flatnonzero((queries == query) & (refs >= 0))
        best = at[np.lexsort((refs[at], -sims[at]))][:k]
        np.testing.assert_array_equal(merged.refs[row, : len(best)], refs[best])
        np.testing.assert_array_equal(merged.sims[row, : len(best)].view(np.int32), sims[best].view(np.int32))
        assert (merged.refs[row, len(best):] == -1).all() and (merged.sims[row, len(best):] == -np.inf).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.sampled_from([1, 3, 4, 7]), st.sampled_from([2, 9, 10**6]),
       st.booleans())
def test_the_key_table_merges_parts_as_merge_topk_does(seed, n_parts, k, levels, in_order):
    """SmallestKeys, parts of k entries a row merged in as they come, gives merge_topk's neighbours over the same
    parts, the similarities' bits included (-0.0 read as 0.0, the one difference the keys allow): ties on
    similarity (few levels), missing entries, rows out of order, queries that found nothing."""
    rng = np.random.default_rng(seed)
    parts, table = [], SmallestKeys(60, k)
    for _ in range(n_parts):
        rows = rng.choice(60, rng.integers(1, 60), replace=False)
        sims = (rng.integers(-levels, levels + 1, (len(rows), k)) / levels).astype(np.float32)
        ranks = rng.choice(2**32 - 1, sims.shape, replace=False).astype(np.int64)
        ranks[rng.random(ranks.shape) < 0.1] = -1
        sims[ranks < 0] = -np.inf
        if in_order:
            order = np.lexsort((np.where(ranks < 0, 2**32, ranks), -sims), axis=1)
            sims, ranks = np.take_along_axis(sims, order, axis=1), np.take_along_axis(ranks, order, axis=1)
        parts.append(Neighbours(np.sort(rows), sims[np.argsort(rows)], ranks[np.argsort(rows)]))
        table.add(rows, sims, ranks)
    expected = merge_topk(parts, k)
    assert np.flatnonzero(table.seen).tolist() == expected.queries.tolist()
    sims, ranks = table.best(expected.queries)
    np.testing.assert_array_equal(ranks, expected.refs)
    assert sims.tobytes() == (expected.sims + np.float32(0)).tobytes()


def test_a_part_of_another_width_is_refused_by_the_key_table():
    with pytest.raises(ValueError, match="a part of 3 neighbours merged into a table of 4"):
        SmallestKeys(10, 4).add(np.arange(2), np.zeros((2, 3), np.float32), np.zeros((2, 3), np.int64))


def test_a_query_alone_in_a_part_keeps_its_row_when_in_order():
    """The rows merge_topk keeps as they are (a query in one part, in order) are those rows, bit for bit."""
    ordered = Neighbours(np.array([1, 2]), np.array([[0.9, 0.9, -np.inf], [0.5, -0.0, 0.0]], np.float32),
                         np.array([[4, 6, -1], [3, 1, 2]]))
    unordered = Neighbours(np.array([5]), np.full((1, 3), 0.1, np.float32), np.array([[9, 8, 7]]))
    merged = merge_topk([ordered, unordered], 3)
    assert merged.queries.tolist() == [1, 2, 5]
    assert merged.refs.tolist() == [[4, 6, -1], [3, 1, 2], [7, 8, 9]]  # -0.0 and 0.0 tie: by reference
    assert merged.sims[:2].tobytes() == ordered.sims.tobytes()


def test_a_part_naming_one_query_twice_is_an_error():
    part = Neighbours(np.array([3, 3]), np.zeros((2, 1), np.float32), np.array([[1], [2]]))
    with pytest.raises(ValueError, match="twice"):
        merge_topk([part], 1)


def test_merge_keeps_every_query_and_pads_missing_neighbours():
    empty = Neighbours.none(np.array([3, 1]), 2)
    part = Neighbours(np.array([1]), np.array([[0.9, 0.5]], np.float32), np.array([[8, 9]]))
    merged = merge_topk([empty, part], 2)
    assert merged.queries.tolist() == [1, 3]
    assert merged.refs.tolist() == [[8, 9], [-1, -1]] and merged.found().tolist() == [2, 0]


def test_the_dense_table_merges_parts_as_merge_topk_does_in_any_order():
    rng = np.random.default_rng(5)
    k, parts = 3, []
    for _ in range(12):  # parts over overlapping query subsets, with tied similarities across parts
        queries = np.sort(rng.choice(40, rng.integers(1, 40), replace=False)).astype(np.int64)
        sims = rng.integers(0, 6, (len(queries), k)).astype(np.float32) / 5
        sims = -np.sort(-sims, axis=1)
        refs = rng.choice(10_000, (len(queries), k), replace=False).astype(np.int64)
        refs[rng.random(refs.shape) < 0.1] = -1  # a list with fewer than k rows
        sims[refs < 0] = -np.inf
        parts.append(Neighbours(queries, sims, refs))
    parts.append(Neighbours.none(np.arange(45, dtype=np.int64), k))  # queries that found nothing
    expected = merge_topk(parts, k)
    for order in (range(len(parts)), reversed(range(len(parts)))):
        table = TopKTable(k)
        for i in order:
            table.add(parts[i].queries, parts[i])
        found = table.neighbours()
        for name in ("queries", "sims", "refs"):
            np.testing.assert_array_equal(getattr(found, name), getattr(expected, name))


def test_rows_by_group_keeps_consecutive_lists_together_ordered_by_list_then_row():
    lists = np.array([[0, 3], [1, 2], [3, 0], [4, 1]])  # 4 rows, 2 probes each
    grouped = [(g, rows.tolist(), row_lists.tolist()) for g, rows, row_lists in rows_by_group(lists, 2)]
    assert grouped == [(0, [0, 2, 1, 3], [0, 0, 1, 1]), (1, [1, 0, 2], [2, 3, 3]), (2, [3], [4])]
    assert [len(rows) for _, rows, _ in rows_by_group(lists, 5)] == [8]


def test_lists_are_numbered_so_that_neighbours_in_space_are_neighbours_in_the_order():
    rng = np.random.default_rng(0)
    positions = rng.permutation(64).astype(np.float32)
    points = positions[:, None] * rng.standard_normal(8).astype(np.float32)  # on a line through the origin
    order = spatial_order(points)
    assert sorted(order.tolist()) == list(range(64))
    assert np.all(np.diff(positions[order]) > 0) or np.all(np.diff(positions[order]) < 0)
    centroids = train_quantizer(rng.standard_normal((4096, 16)).astype(np.float32), 64, KnnConfig())
    assert np.array_equal(spatial_order(centroids), np.arange(64))  # the quantizer's lists come in that order


def test_from_4096_lists_they_are_numbered_cell_by_cell_and_the_neighbours_do_not_change(data, monkeypatch):
    import miner.knn_join
    from miner.index import KMEANS_SEED

    queries, database, _ = data
    monkeypatch.setattr(miner.knn_join, "CELL_ORDER_LISTS", 64)  # as from 4096 lists, on a small quantizer
    centroids = database[np.random.default_rng(1).choice(len(database), 64, replace=False)]
    order = list_order(centroids)
    assert sorted(order.tolist()) == list(range(64)) and np.array_equal(order, list_order(centroids))
    kmeans = faiss.Kmeans(32, 8, niter=20, seed=KMEANS_SEED, spherical=True, min_points_per_centroid=1)
    kmeans.train(centroids)
    cell = kmeans.index.search(centroids, 1)[1].ravel()[order]
    assert np.count_nonzero(np.diff(cell)) == len(np.unique(cell)) - 1  # each cell's lists are consecutive
    assert not np.array_equal(order, spatial_order(centroids))
    by_cells = search_by_lists(queries, database, 4, centroids[order], nprobe=5)
    by_halving = search_by_lists(queries, database, 4, centroids[spatial_order(centroids)], nprobe=5)
    np.testing.assert_array_equal(by_cells.refs, by_halving.refs)
    np.testing.assert_array_equal(by_cells.sims, by_halving.sims)


def test_the_layout_ships_the_fewest_rows_within_max_rows_a_side():
    # a query probes a few of very many lists: groups of ~max_rows query rows, one block each (as before blocks)
    assert join_layout(4096, 16, 1_000_000, 1_000_000, 50_000) == JoinLayout(12, 1)  # 3,906 query rows a list
    assert join_layout(64, 16, 100, 100, 50_000) == JoinLayout(64, 1)  # never more than all the lists
    # nprobe a quarter of nlist: groups of ~max_rows database rows, their queries in blocks of ~max_rows
    assert join_layout(4096, 1024, 1_000_000, 1_000_000, 50_000) == JoinLayout(204, 20)  # 41 rows a sentence, not 1025
    # a database that fits one group: one group, every query shipped once (was 61 groups of 17 lists)
    assert join_layout(1024, 256, 11_535, 29_069, 50_000) == JoinLayout(1024, 1)
    assert join_layout(512, 16, 100_000, 100_000, 50_000) == JoinLayout(256, 2)  # 4 rows a sentence, not 17
    assert join_layout(65536, 1024, 10**11, 10**11, 50_000).query_blocks > 1  # no overflow at crawl scale


@pytest.mark.parametrize("nlist", [64, 70_000])  # list numbers narrowed to 16 bits for the sort, and too wide to be
def test_rows_by_group_orders_by_list_then_row_at_any_number_of_lists(nlist):
    lists = np.random.default_rng(6).integers(0, nlist, (500, 4))
    flat, rows = lists.ravel(), np.repeat(np.arange(500), 4)
    order = np.lexsort((rows, flat))
    got = [(rows_in, lists_in) for _, rows_in, lists_in in rows_by_group(lists, 3)]
    np.testing.assert_array_equal(np.concatenate([r for r, _ in got]), rows[order])
    np.testing.assert_array_equal(np.concatenate([g for _, g in got]), flat[order])


def test_rows_by_list_groups_every_probe():
    lists = np.array([[2, 0], [0, 1], [2, 1]])
    assert {k: v.tolist() for k, v in rows_by_list(lists)} == {0: [0, 1], 1: [1, 2], 2: [0, 2]}


def test_a_quantizer_of_another_dimension_is_an_error_naming_the_input(data):
    _, database, _ = data
    centroids = train_quantizer(database, 8, KnnConfig())
    with pytest.raises(IndexConfigError, match="shard-7.npy: 16-d vectors, but the quantizer was trained on 32-d"):
        assign(database[:, :16], centroids, 2, "shard-7.npy")


def test_rows_made_unit_once_are_assigned_as_the_rows_themselves(data):
    queries, database, _ = data
    centroids = train_quantizer(database, 8, KnnConfig())
    stored = queries.astype(np.float16) * 3  # not unit rows: assign makes them so
    np.testing.assert_array_equal(assign(unit_rows(stored, "q"), centroids, 3, "q", unit=True),
                                  assign(stored, centroids, 3, "q"))


def test_small_databases_are_searched_exactly():
    auto = KnnConfig()
    assert join_plan(auto, 9_999) == (1, 1)
    assert join_plan(auto, 50_000) == (1024, 256)  # a quarter of the lists: recall@4 >= 0.98 measured
    assert join_plan(auto, 200_000) == (4096, 1024)
    assert join_plan(KnnConfig(index="IVF256,Flat"), 50_000) == (256, 128)
    assert join_plan(KnnConfig(index="IVF1024,Flat"), 500) == (1, 1)  # fewer rows than lists
    assert join_plan(KnnConfig(index="Flat"), 10**6) == (1, 1)
    assert join_plan(KnnConfig(exact_below=100_000), 50_000) == (1, 1)
    assert join_plan(KnnConfig(index="IVF64,Flat", nprobe=8), 5_000) == (64, 8)


def test_fewer_database_rows_than_k(data):
    queries, database, _ = data
    found = search_by_lists(queries, database[:3], 4, np.zeros((1, 32), np.float32), 1)
    assert found.refs.shape == (len(queries), 3) and (found.found() == 3).all()


TORCH_DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not __import__("torch").cuda.is_available(), reason="no CUDA device: the torch path is tested on the CPU"))]


@pytest.mark.parametrize("device", TORCH_DEVICES)
def test_the_torch_path_finds_the_same_neighbours_with_the_same_bits(data, device):
    queries, database, _ = data
    centroids = train_quantizer(database, 8, KnnConfig())
    on_host = search_by_lists(queries, database.astype(np.float16), 4, centroids, nprobe=3)
    on_device = search_by_lists(queries, database.astype(np.float16), 4, centroids, nprobe=3, device=device)
    np.testing.assert_array_equal(on_device.refs, on_host.refs)
    np.testing.assert_array_equal(on_device.sims, on_host.sims)   # rescored on the host: the same bits


@pytest.mark.parametrize("device", TORCH_DEVICES)
def test_the_torch_path_breaks_ties_by_the_smaller_reference(device):
    query = np.array([[1.0, 0.0]], np.float32)
    database = np.array([[1.0, 0.0]] * 12 + [[0.0, 1.0]], np.float32)   # 12 ties: more than k + the spare places
    refs = np.arange(100, 87, -1, dtype=np.int64)
    found = list_topk(query, np.array([7]), database, refs, 3, device)
    assert found.refs.tolist() == [[89, 90, 91]]
    assert found.refs.tolist() == list_topk(query, np.array([7]), database, refs, 3).refs.tolist()


def test_lists_are_compared_on_a_gpu_only_when_one_is_there():
    import torch

    assert compare_device(KnnConfig(gpu=False)) is None
    if torch.cuda.is_available():
        assert compare_device(KnnConfig()) == "cuda"
    else:
        assert compare_device(KnnConfig()) is None
        with pytest.raises(IndexConfigError, match="knn.gpu is true but torch sees no CUDA device"):
            compare_device(KnnConfig(gpu=True))


def test_recall_at_the_default_nprobe_on_real_sentences(shared_data):
    """FLORES-200 devtest sentences (the dev pool, for measuring) embedded with the char-ngram baseline: at the
    plan chosen for the database's size, the join finds at least 98% of the exact 4 nearest neighbours. (The
    default encoder's vectors: bench/bench_ivf_recall.py, docs/benchmarks.md.)"""
    import gzip

    from encoders import load_encoder

    files = sorted((shared_data / "dev" / "flores200-devtest" / "devtest").glob("*.devtest.gz"))[::8]
    sentences = []
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            sentences.extend(line.strip() for line in handle if line.strip())
    vectors = load_encoder("char-ngram").encode(sentences)
    order = np.random.default_rng(0).permutation(len(vectors))
    queries, database = vectors[np.sort(order[:1000])], vectors[np.sort(order[1000:])]
    config = KnnConfig()
    nlist, nprobe = join_plan(config, len(database))
    assert nlist == 1024 and nprobe == 256
    rows = np.random.default_rng(1).choice(len(database), min(len(database), 64 * nlist), replace=False)
    centroids = train_quantizer(database[np.sort(rows)], nlist, config)
    found = search_by_lists(queries, database, 4, centroids, nprobe)
    _, exact = knn(queries, database, 4, KnnConfig(index="Flat"))
    recall = np.mean([len(np.intersect1d(a, b)) / 4 for a, b in zip(found.refs, exact)])
    assert recall >= 0.98, recall
