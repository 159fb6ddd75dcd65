"""The k-NN join's plan, the same on every worker: from the embed manifest, each direction's search (flat or IVF),
its groups of lists and query blocks (miner.knn_join.join_layout), the small sides sent to the other side's shards
instead (shard_routes) and the waves the groups go in; from the list sizes, how many rows each list holds, which
lists are compared and which are hot (split into blocks). No Beam here: the transforms in pipelines.pairs.join
read these."""

from __future__ import annotations

import numpy as np

from miner.index import KnnConfig
from miner.knn_join import JoinLayout, blocks, join_layout, join_plan
from miner.mining import MiningConfig


def vector_width(manifest: dict) -> int:
    """The vectors' dimensions (bits of a binary code): one encoder, so the same in every language with rows."""
    dims = {entry["dim"] for entry in manifest["languages"].values() if entry.get("rows") and entry.get("dim")}
    return max(dims, default=1)


def rows_a_side(knn: KnnConfig, manifest: dict) -> int:
    """About how many rows a side of a work item holds (`knn.max_list_rows`; auto resolved for the vectors' width,
    KnnConfig.for_width)."""
    return knn.for_width(vector_width(manifest)).max_list_rows


def directions(pairs: list[tuple[str, str]]) -> list[tuple[tuple[str, str], str, str, str]]:
    """(pair, side, query language, database language) for both directions of every pair; side "src" is
    source -> target."""
    return [(pair, side, *(pair if side == "src" else pair[::-1])) for pair in pairs for side in ("src", "tgt")]


def search_plan(knn: KnnConfig, n_database: int) -> str:
    """How a database of this size is searched, as the manifest records it: "Flat" or "IVF<nlist>,nprobe=<n>"."""
    nlist, nprobe = join_plan(knn, n_database)
    return "Flat" if nlist == 1 else f"IVF{nlist},nprobe={nprobe}"


def neighbours_wanted(manifest: dict, config: MiningConfig, database_language: str) -> int:
    return min(config.k, manifest["languages"][database_language]["rows"])


def join_shapes(manifest: dict, pairs: list, knn: KnnConfig) -> dict[tuple, JoinLayout]:
    """Each direction's groups of consecutive lists that travel and are compared together, and the blocks each
    group's queries come in (miner.knn_join.join_layout), by (pair, side): the same on every worker, from the
    manifest alone."""
    languages, shapes, max_rows = manifest["languages"], {}, rows_a_side(knn, manifest)
    for pair, side, query_lang, db_lang in directions(pairs):
        nlist, nprobe = join_plan(knn, languages[db_lang]["rows"])
        shapes[pair, side] = join_layout(nlist, nprobe, languages[query_lang]["rows"], languages[db_lang]["rows"],
                                         max_rows)
    return shapes


# How a small side of a direction goes to the other's shards instead of through the join (shard_routes)
TO_QUERIES, TO_DATABASE = "database_to_query_shards", "queries_to_database_shards"


def shard_routes(manifest: dict, pairs: list, knn: KnnConfig) -> dict:
    """The directions whose small side goes to the other side's shards, read where it arrives, instead of both
    through the join: each (pair, side) -> (route, batch). Either way a query meets the rows of the lists it
    probes, so the neighbours are the join's. TO_DATABASE: the queries (at most max_list_rows) go to each database
    shard; TO_QUERIES: the database rows (at most max_list_rows, each in its list) go to each query shard, whose
    rows are put in the lists they probe there. Taken where it ships fewer rows than the join's least, each row
    once (the cheaper route where both would). A crawl's long tail: without them every small language paired
    with English ships all of English's vectors twice over (the web pool: 87 pairs with 11,500 English sentences,
    2 kB each). The routes meeting one language's shards share batches of at most max_list_rows sent rows, so a
    shard is read once a batch."""
    languages, routes, filled, max_rows = manifest["languages"], {}, {}, rows_a_side(knn, manifest)
    for pair, side, query_lang, db_lang in directions(pairs):
        query, database = languages[query_lang], languages[db_lang]
        options = []
        if query["rows"] <= max_rows:
            options.append((query["rows"] * len(database["shards"]), TO_DATABASE, db_lang, query["rows"]))
        if database["rows"] <= max_rows:
            options.append((database["rows"] * len(query["shards"]), TO_QUERIES, query_lang, database["rows"]))
        options = [option for option in options if option[0] < query["rows"] + database["rows"]]
        if not options:
            continue
        _, route, met, rows = min(options)
        loads = filled.setdefault((route, met), [])
        batch = next((b for b, load in enumerate(loads) if load + rows <= max_rows), len(loads))
        if batch == len(loads):
            loads.append(0)
        loads[batch] += rows
        routes[pair, side] = (route, batch)
    return routes


def whole_on_shard(route: str, database: dict) -> bool:
    """Whether a direction sent by `route` meets all its queries' candidates in one shard's comparison: at its
    queries' own shard (TO_QUERIES), or at a database of one shard (TO_DATABASE). That comparison's table is then
    the direction's whole k-NN table for those queries: nothing is left to merge."""
    return route == TO_QUERIES or len(database["shards"]) == 1


def tables_whole_on_shards(manifest: dict, pairs: list, knn: KnnConfig) -> bool:
    """Whether every direction's k-NN tables come whole from the shards' comparisons (whole_on_shard): then the join
    has no merge of parts per query shard, which at 10^4 sentences a language is three bundles of Beam's own."""
    routes, languages = shard_routes(manifest, pairs, knn), manifest["languages"]
    return bool(pairs) and all((pair, side) in routes and whole_on_shard(routes[pair, side][0], languages[db_lang])
               for pair, side, _, db_lang in directions(pairs))


def join_waves(manifest: dict, pairs: list, knn: KnnConfig, wave_bytes: int, float_bytes: int = 2) -> int:
    """How many waves the join's groups are sent and compared in: the bytes of the rows it ships at most
    (JoinLayout.rows_shipped over the directions that go through it; float rows of `float_bytes` a value, codes
    of a bit) over `wave_bytes`, rounded up, and no more than a direction has groups; one where `wave_bytes` is 0."""
    if not wave_bytes:
        return 1
    languages, routes, shipped, most_groups = manifest["languages"], shard_routes(manifest, pairs, knn), 0, 1
    shapes = join_shapes(manifest, pairs, knn)
    for pair, side, query_lang, db_lang in directions(pairs):
        if (pair, side) in routes:
            continue
        nlist, nprobe = join_plan(knn, languages[db_lang]["rows"])
        rows = shapes[pair, side].rows_shipped(nlist, nprobe, languages[query_lang]["rows"],
                                               languages[db_lang]["rows"])
        entry = languages[db_lang]
        shipped += rows * (entry["dim"] // 8 if entry.get("binary") else entry["dim"] * float_bytes)
        most_groups = max(most_groups, shapes[pair, side].groups(nlist))
    return min(max(1, -(-shipped // wave_bytes)), most_groups)


def shard_list_sizes(element, shapes: dict) -> list:
    """A shard's memberships (AssignShard) -> list_sizes of each of its groups."""
    return [list_sizes(group, shapes) for group in element[1]]


def list_sizes(element, shapes: dict) -> tuple:
    """A chunk's rows per list; a direction's queries per list and query block (list * blocks + block), so that a
    block's group can be checked whole."""
    (pair, side, _), chunk = element
    query_blocks = shapes[pair, side].query_blocks
    if chunk.kind == "db" or query_blocks == 1:
        return (pair, side, chunk.kind), (chunk.list_ids, chunk.counts)
    places = chunk.member_lists() * query_blocks + blocks(chunk.member_refs(), query_blocks)
    return (pair, side, chunk.kind), np.unique(places, return_counts=True)


def grown(totals: np.ndarray, size: int) -> np.ndarray:
    """Per-list totals padded with zeros to at least `size` lists."""
    return totals if len(totals) >= size else np.concatenate([totals, np.zeros(size - len(totals), np.int64)])


def rows_in_lists(sizes: dict, pair, side, kind: str, list_ids: np.ndarray, query_blocks: int = 1) -> np.ndarray:
    """Rows of `kind` each list holds in this direction, from the list sizes (zero for a list with none); queries
    are counted by block where the direction's groups have several (`query_blocks`)."""
    return rows_by_block(sizes, pair, side, kind, list_ids, query_blocks).sum(axis=1)


def rows_by_block(sizes: dict, pair, side, kind: str, list_ids: np.ndarray, query_blocks: int = 1) -> np.ndarray:
    """[lists, query blocks]: each block's rows of `kind` in each list (one column where there are no blocks)."""
    totals = sizes.get((pair, side, kind), np.zeros(0, dtype=np.int64))
    width = query_blocks if kind == "q" else 1
    places = (int(np.max(list_ids, initial=-1)) + 1) * width
    return grown(totals, places)[:places].reshape(-1, width)[list_ids]


def list_roles(n_queries: np.ndarray, n_database: np.ndarray, max_rows: int,
               query_blocks: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per list: compared (it has queries and database rows) and hot (compared, and above max_rows on a side; its
    queries count a block's share where its group takes them in blocks, which bound them already)."""
    compared = (n_queries > 0) & (n_database > 0)
    return compared, compared & ((n_queries > max_rows * query_blocks) | (n_database > max_rows))
