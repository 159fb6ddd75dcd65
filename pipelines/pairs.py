"""The pairs stage: embeddings per language -> k-NN both ways -> margins -> selection -> bitext.

    python -m pipelines.pairs --output output             # after the embed stage; same flags as pipelines.mine

Per language pair (source, target), with the miner library doing the arithmetic (../shared/docs/METHODS.md §1):
  1. quantizer: per database language, the coarse quantizer (k-means centroids) of an IVF index of `knn.index`'s
     lists (auto: from the language's size), trained on a bounded sample; one list (exact search) below
     `knn.exact_below` sentences or with fewer sentences than lists;
  2. k-NN as a join (miner.knn_join, METHODS §10): each embedding shard is read once; each row is keyed by its
     list in its own language (as a database row) and by its nprobe nearest lists in the other language's
     quantizer (as a query); a group by (direction, group of lists, query block) brings each list's database rows
     and queries together, where they are compared exactly, list by list (each direction's groups and blocks are
     the layout that ships the fewest rows with about `knn.max_list_rows` rows on a side, join_layout; a query
     travels to a group once however many of its lists it probes; a list above that many database rows is split
     into blocks, which bounds a worker's memory); a small side goes to the other side's shards instead where that
     ships less (shard_routes: a crawl's long tail); a top-k combine keeps each query's k best across its lists.
     Similarities are exact; the rare query whose lists held fewer than k rows is searched exactly, counted. Where
     the rows shipped exceed `knn.wave_bytes`, the groups are sent and compared in waves, one after the other
     (join_waves), so that a cluster holds one wave's rows at a time;
  3. margins: fwd(x) and bwd(y) are the means of those k similarities; a candidate (x, y) needs the other side's
     mean, so candidates are joined with the means by key, the only place the two directions meet;
  4. selection: each sentence's best candidate (forward for sources, backward for targets), joined by (x, y):
     forward / backward / intersect / union are decided per pair; `max` (greedy one-to-one) takes the bests of a
     language pair together, two numbers per sentence, never its texts or vectors;
  4b. with `embed.binary_refine` (sign codes): the selected pairs scored again, each side's turned float row
     (read where it is stored) against the other side's signs (the only thing that travels), as
     miner.mining.refine_pairs does; the threshold applies after;
  5. output: texts and metadata joined from the sentence shards (one shard read per group), the pair filter's
     rules applied (miner.pair_filters: length ratio, numbers, URLs, identical sides, scripts; each drop counted
     by reason), sorted best first, written as Parquet and TSV.gz.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import apache_beam as beam
from apache_beam import typehints as th
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.metrics import Metrics

from encoders import binary
from miner.index import KnnConfig
from miner.knn_join import (
    JoinLayout,
    Neighbours,
    TopKTable,
    assign,
    block_count,
    blocks,
    compare_device,
    hamming_countable,
    join_layout,
    join_plan,
    list_topk,
    merge_topk,
    rows_by_group,
    rows_by_list,
    train_quantizer,
    training_rows,
    wave_of,
)
from miner.margin import margin as margin_of
from miner.margin import neighbourhood_mean
from miner.mining import MiningConfig
from miner.pair_filters import KEEP, PairFilter
from miner.selection import Pairs, greedy_one_to_one
from miner.sizes import HoldsArrays
from miner.vectors import check_finite, check_matrix, unit_rows
from pipelines import layout, storage
from pipelines.settings import embed_settings

log = logging.getLogger("pipelines.pairs")
# Sentence columns carried into the bitext, per side (src_text, src_url, ...)
ROW_MASK = (1 << layout.ROW_BITS) - 1  # a reference's row in its shard
CARRIED = ("text", "url", "document_id", "paragraph_index", "sentence_index", "copies")


def mining_config(settings: dict) -> MiningConfig:
    return MiningConfig.from_dict(dict(settings.get("mining") or {}), dict(settings.get("knn") or {}))


def read_shard(path: str, dim: int, bytes_read=None, code: str | None = None) -> np.ndarray:
    """An embedding shard's stored rows (float16 or float32, or packed binary codes when `code` is set; data,
    never pickles), checked: vectors of another dimension (bit count) than the language's, or a NaN or infinity,
    are an error naming the shard and row, never a wrong neighbour list."""
    data = storage.read_bytes(path)
    if bytes_read is not None:
        bytes_read.inc(len(data))
    matrix = np.load(io.BytesIO(data), allow_pickle=False)
    if code:
        binary.check_packed(matrix, path, dim)
    else:
        check_matrix(matrix, path, dim)
        check_finite(matrix, path)  # here, where the shard is known: a comparison would name only a group's row
    return matrix


def comparable(rows: np.ndarray, code: str | None, name: str = "vectors") -> np.ndarray:
    """Rows as they are compared: stored floats as they are; packed binary codes widened to the unit rows whose
    dot products are the code's similarity (encoders.binary). Codes travel packed and widen only here."""
    return binary.unit_rows(rows, code, name) if code else rows


def as_cosines(found: Neighbours, code: str | None) -> Neighbours:
    """Neighbours of binary codes with their similarities as cosine estimates (encoders.binary), as the library
    mines them: float thresholds and min_cosine hold."""
    return Neighbours(found.queries, binary.cosine_estimate(found.sims, code), found.refs) if code else found


def compared_packed(entry: dict, device: str | None = None) -> bool:
    """Whether a language's rows are compared as stored, packed, by Hamming distance: sign codes whose products
    are exact (miner.knn_join.hamming_countable), compared on the host."""
    code = entry.get("binary")
    return device is None and code is not None and hamming_countable(code, entry["dim"] // 8)


def read_language_shard(entry: dict, shard: int, bytes_read=None) -> np.ndarray:
    return read_shard(entry["shards"][shard]["embeddings"], entry["dim"], bytes_read, entry.get("binary"))


# -- 1. coarse quantizers ----------------------------------------------------------------------------------------

def training_sample(entry: dict, size: int, seed: int, bytes_read=None) -> np.ndarray:
    """Up to `size` stored rows drawn evenly across the language's shards, deterministically."""
    total = entry["rows"]
    take = min(size, total)
    picks = []
    rng = np.random.default_rng(seed)
    for shard in entry["shards"]:
        n = round(take * shard["rows"] / total)
        rows = np.sort(rng.choice(shard["rows"], min(n, shard["rows"]), replace=False))
        stored = read_shard(shard["embeddings"], entry["dim"], bytes_read, entry.get("binary"))
        picks.append(comparable(stored[rows], entry.get("binary"), shard["embeddings"]))
    return np.concatenate(picks)


class TrainQuantizer(beam.DoFn):
    """language -> (language, centroids [nlist, d]), written to index/<lang>/centroids.npy; one list (exact
    search) for a language below knn.exact_below rows or with fewer rows than the lists."""

    def __init__(self, manifest: dict, knn: KnnConfig, output: str):
        self.manifest, self.knn, self.output = manifest, knn, output
        self.exact = Metrics.counter("pairs", "languages_searched_exactly")
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")

    def process(self, language: str):
        entry = self.manifest["languages"][language]
        nlist, nprobe = join_plan(self.knn, entry["rows"])
        if nlist == 1:
            self.exact.inc()
            log.info("%s: %d sentences, searched exactly", language, entry["rows"])
            yield language, np.zeros((1, entry["dim"]), dtype=np.float32)
            return
        sample = training_sample(entry, training_rows(nlist, self.knn), self.knn.seed, self.bytes_read)
        centroids = train_quantizer(sample, nlist, self.knn, language)
        buffer = io.BytesIO()
        np.save(buffer, centroids, allow_pickle=False)
        storage.write_bytes(layout.quantizer_file(self.output, language), buffer.getvalue())
        log.info("%s: %d sentences in %d lists (trained on %d), queries probe %d", language, entry["rows"], nlist,
                 len(sample), nprobe)
        yield language, centroids


# -- 2. k-NN as a join: rows keyed by inverted list, compared exactly per list, k best merged per query ----------

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
    languages, shapes = manifest["languages"], {}
    for pair, side, query_lang, db_lang in directions(pairs):
        nlist, nprobe = join_plan(knn, languages[db_lang]["rows"])
        shapes[pair, side] = join_layout(nlist, nprobe, languages[query_lang]["rows"], languages[db_lang]["rows"],
                                         knn.max_list_rows)
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
    languages, routes, filled = manifest["languages"], {}, {}
    for pair, side, query_lang, db_lang in directions(pairs):
        query, database = languages[query_lang], languages[db_lang]
        options = []
        if query["rows"] <= knn.max_list_rows:
            options.append((query["rows"] * len(database["shards"]), TO_DATABASE, db_lang, query["rows"]))
        if database["rows"] <= knn.max_list_rows:
            options.append((database["rows"] * len(query["shards"]), TO_QUERIES, query_lang, database["rows"]))
        options = [option for option in options if option[0] < query["rows"] + database["rows"]]
        if not options:
            continue
        _, route, met, rows = min(options)
        loads = filled.setdefault((route, met), [])
        batch = next((b for b, load in enumerate(loads) if load + rows <= knn.max_list_rows), len(loads))
        if batch == len(loads):
            loads.append(0)
        loads[batch] += rows
        routes[pair, side] = (route, batch)
    return routes


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


@dataclass(frozen=True)
class ListRows(HoldsArrays):
    """Rows of one kind, "q" (queries) or "db" (database rows), for some lists of one direction: each row once
    (`refs`, stored `rows`) and its memberships ordered by list, `list_ids` ascending with `counts` memberships each
    (run-length) and `members` the row each membership is (an index into refs). A query that probes three of the
    group's lists travels once, with three memberships of 4 bytes each."""

    kind: str
    list_ids: np.ndarray
    counts: np.ndarray
    members: np.ndarray
    refs: np.ndarray
    rows: np.ndarray

    @classmethod
    def of(cls, kind: str, member_lists: np.ndarray, member_rows: np.ndarray, refs: np.ndarray,
           rows: np.ndarray) -> ListRows:
        """From each membership's list (ascending) and row (an index into refs and rows; rows no membership names
        are left out)."""
        used, members = used_rows(member_rows, len(refs))
        starts = np.flatnonzero(np.diff(member_lists, prepend=-1))  # run-length: the lists ascend
        counts = np.diff(starts, append=len(member_lists))
        return cls(kind, member_lists[starts], counts, members.astype(np.int32), refs[used], rows[used])

    def member_lists(self) -> np.ndarray:
        return np.repeat(self.list_ids, self.counts)

    def member_refs(self) -> np.ndarray:
        return self.refs[self.members]

    def take(self, keep: np.ndarray) -> ListRows:
        """The memberships where `keep` is true (a boolean per membership), with the rows they name."""
        return ListRows.of(self.kind, self.member_lists()[keep], self.members[keep], self.refs, self.rows)

    def with_rows(self, stored: np.ndarray) -> ListRows:
        """These memberships with their rows taken from their shard's stored rows (made without them: `rows` of
        width 0, as AssignShard hands a shard's memberships on)."""
        return dataclasses.replace(self, rows=stored[self.refs & ROW_MASK])


def used_rows(member_rows: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(member_rows, return_inverse=True) for indices into n_rows rows: by a mask of the rows where the
    memberships are not few beside them (20x faster than unique's sort on a shard's group), else by the sort."""
    if len(member_rows) * 8 < n_rows:
        return np.unique(member_rows, return_inverse=True)
    seen = np.zeros(n_rows, dtype=bool)
    seen[member_rows] = True
    used = np.flatnonzero(seen)
    position = np.empty(n_rows, dtype=np.int64)
    position[used] = np.arange(len(used))
    return used, position[member_rows]


class AssignShard(beam.DoFn):
    """(language, shard) -> where the shard's rows go, for every direction that uses them: ((language, shard),
    [((pair, side, group), ListRows)]), each group's memberships of kind "db" (each row in its one list of the
    language's own quantizer) or "q" (each row in its nprobe nearest lists of the other language's quantizer),
    without the rows themselves (SplitHotLists reads them again once the list sizes are known). The list sizes
    are a barrier: every shard is assigned before any group's rows move on, so what waits there is the memberships
    (tens of bytes a row), not the rows (at 10^6 float16 sentences a language, 16 GB held at once). A direction's
    small side that goes to the other's shards (shard_routes) is sent to each of them instead, with its rows,
    tagged with its route: ((route, that language, shard, batch), ((pair, side), ListRows)), and the other side
    not at all."""

    def __init__(self, manifest: dict, pairs: list, knn: KnnConfig):
        self.manifest, self.pairs, self.knn = manifest, pairs, knn
        self.routes, self.shapes = shard_routes(manifest, pairs, knn), join_shapes(manifest, pairs, knn)
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")
        self.copies = {"db": Metrics.counter("pairs", "database_rows_sent"),
                       "q": Metrics.counter("pairs", "query_rows_sent")}

    def process(self, task: tuple[str, int], centroids: dict):
        language, shard = task
        entry = self.manifest["languages"][language]
        info = entry["shards"][shard]
        rows = read_language_shard(entry, shard, self.bytes_read)  # what travels: binary codes stay packed
        refs = layout.pack(shard, np.arange(len(rows), dtype=np.int64))
        unit = comparable(rows, entry.get("binary"), info["embeddings"])
        # each row's own list, assigned once for every direction where this language is the database; as a query,
        # its nprobe nearest lists of the other language's quantizer
        own_lists = functools.cache(lambda: assign(unit, centroids[language], 1, info["embeddings"]))
        memberships = []

        def probed_lists(db_lang: str) -> np.ndarray:
            nprobe = join_plan(self.knn, self.manifest["languages"][db_lang]["rows"])[1]
            return assign(unit, centroids[db_lang], nprobe, info["embeddings"])

        for pair, side, query_lang, db_lang in directions(self.pairs):
            if (pair, side) in self.routes:
                route, batch = self.routes[pair, side]
                if route == TO_QUERIES and db_lang == language:
                    chunk = in_lists("db", own_lists(), len(centroids[db_lang]), refs, rows)
                    yield from self._to_shards(route, batch, (pair, side), query_lang, chunk)
                elif route == TO_DATABASE and query_lang == language:
                    chunk = in_lists("q", probed_lists(db_lang), len(centroids[db_lang]), refs, rows)
                    yield from self._to_shards(route, batch, (pair, side), db_lang, chunk)
                continue
            per_group = self.shapes[pair, side].lists_per_group
            if db_lang == language:
                memberships += self._keyed(pair, side, "db", own_lists(), per_group, refs, rows[:, :0])
            if query_lang == language:
                memberships += self._keyed(pair, side, "q", probed_lists(db_lang), per_group, refs, rows[:, :0])
        if memberships:
            yield (language, shard), memberships

    @staticmethod
    def _keyed(pair, side, kind, lists, per_group, refs, no_rows) -> list:
        return [((pair, side, group), ListRows.of(kind, member_lists, members, refs, no_rows))
                for group, members, member_lists in rows_by_group(lists, per_group)]

    def _to_shards(self, route, batch, direction, language, chunk):
        for shard in range(len(self.manifest["languages"][language]["shards"])):
            self.copies[chunk.kind].inc(len(chunk.refs))
            yield beam.pvalue.TaggedOutput(route, ((route, language, shard, batch), (direction, chunk)))


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


class CountByList(beam.CombineFn):
    """(list ids, counts) parts -> rows per list as a dense array indexed by list id (zero where none)."""

    def create_accumulator(self):
        return np.zeros(0, dtype=np.int64)

    def add_input(self, totals, part):
        list_ids, counts = part
        totals = _grown(totals, int(list_ids.max(initial=-1)) + 1)
        np.add.at(totals, list_ids, counts)
        return totals

    def merge_accumulators(self, parts):
        parts = list(parts)
        totals = np.zeros(max(len(p) for p in parts), dtype=np.int64)
        for part in parts:
            totals[: len(part)] += part
        return totals

    def extract_output(self, totals):
        return totals


def _grown(totals: np.ndarray, size: int) -> np.ndarray:
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
    return _grown(totals, places)[:places].reshape(-1, width)[list_ids]


def list_roles(n_queries: np.ndarray, n_database: np.ndarray, max_rows: int,
               query_blocks: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per list: compared (it has queries and database rows) and hot (compared, and above max_rows on a side; its
    queries count a block's share where its group takes them in blocks, which bound them already)."""
    compared = (n_queries > 0) & (n_database > 0)
    return compared, compared & ((n_queries > max_rows * query_blocks) | (n_database > max_rows))


class SplitHotLists(beam.DoFn):
    """A shard's memberships (AssignShard) -> what is compared, with the shard's rows read again: for each group,
    its lists' rows under the group's key, less the lists without queries or without database rows (nothing to
    compare) and the hot lists. A list with more than max_rows rows on a side
    is hot: it leaves the group and is split into blocks of about that many (by a hash of the row), and each query
    block meets each database block, so such a group holds at most ~2 x max_rows rows.

    Where the direction's groups take their queries in blocks (join_shapes), a query goes to its block's key (a hash
    of its reference) and the group's database rows to every block's.

    Keys: (pair, side, group, -1, query block, 0) for a group's ordinary lists, (pair, side, group, list, query
    block, database block) for a hot list's blocks. The list sizes (a side input) are checked against the manifest's row
    counts before use: a missing size would drop a list's rows without a trace, so an incomplete side input is an
    error, never fewer neighbours. In a join of several waves (KnnJoin.compared_in_waves) each wave has its own
    instance, which hands on its wave's groups only and reads a shard only where it has some."""

    def __init__(self, manifest: dict, pairs: list, knn: KnnConfig, wave: int = 0, waves: int = 1):
        self.manifest, self.pairs, self.knn = manifest, pairs, knn
        self.shapes, self.routes = join_shapes(manifest, pairs, knn), shard_routes(manifest, pairs, knn)
        self.wave, self.waves = wave, waves
        languages = manifest["languages"]
        self.groups = {(pair, side): self.shapes[pair, side].groups(join_plan(knn, languages[db]["rows"])[0])
                       for pair, side, _, db in directions(pairs)}
        self.copies = {"db": Metrics.counter("pairs", "database_rows_sent"),
                       "q": Metrics.counter("pairs", "query_rows_sent")}
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")
        self.checked = None

    def process(self, element, sizes: dict, *earlier_wave):
        """`earlier_wave`: with waves, the wave before's count of compared groups, only waited for."""
        (language, shard), memberships = element
        memberships = [group for group in memberships if self.in_wave(*group[0])]
        if not memberships:
            return
        stored = read_language_shard(self.manifest["languages"][language], shard, self.bytes_read)
        for group in memberships:
            for key, part in self.split(group, sizes):
                yield key, part.with_rows(stored)

    def in_wave(self, pair, side, group: int) -> bool:
        return self.waves == 1 or wave_of(group, self.groups[pair, side], self.waves) == self.wave

    def split(self, element, sizes: dict):
        """One group's memberships ((pair, side, group), ListRows) -> (key, part) for each part compared."""
        if self.checked is not sizes:
            self._check(sizes)
            self.checked = sizes
        for key, part in self._parts(element, sizes):
            self.copies[part.kind].inc(len(part.refs))  # what the grouping carries: each row once a key
            yield key, part

    def _parts(self, element, sizes: dict):
        (pair, side, group), chunk = element
        query_blocks = self.shapes[pair, side].query_blocks
        row_lists = chunk.member_lists()
        n_queries, n_database = (rows_in_lists(sizes, pair, side, kind, row_lists, query_blocks)
                                 for kind in ("q", "db"))
        compared, hot = list_roles(n_queries, n_database, self.knn.max_list_rows, query_blocks)
        if (compared & ~hot).any():
            yield from self._query_blocks(pair, side, group, chunk.take(compared & ~hot), query_blocks)
        for list_id in np.unique(row_lists[hot]):
            yield from self._blocks(pair, side, group, int(list_id), chunk.take(row_lists == list_id), sizes)

    @staticmethod
    def _query_blocks(pair, side, group, chunk, query_blocks):
        if query_blocks == 1:
            yield (pair, side, group, -1, 0, 0), chunk
        elif chunk.kind == "db":  # each block of the group's queries meets all of its database rows
            for block in range(query_blocks):
                yield (pair, side, group, -1, block, 0), chunk
        else:
            own_block = blocks(chunk.member_refs(), query_blocks)
            for block in np.unique(own_block):
                yield (pair, side, group, -1, int(block), 0), chunk.take(own_block == block)

    def _blocks(self, pair, side, group, list_id, chunk, sizes):
        query_blocks = self.shapes[pair, side].query_blocks
        n_queries, n_database = (int(rows_in_lists(sizes, pair, side, kind, np.array([list_id]), query_blocks)[0])
                                 for kind in ("q", "db"))
        mine, other = (n_queries, n_database) if chunk.kind == "q" else (n_database, n_queries)
        max_rows = self.knn.max_list_rows
        own_block = blocks(chunk.member_refs(), block_count(mine, max_rows))
        for block in np.unique(own_block):
            members = own_block == block
            for other_block in range(block_count(other, max_rows)):
                key = (int(block), other_block) if chunk.kind == "q" else (other_block, int(block))
                yield (pair, side, group, list_id, *key), chunk.take(members)

    def _check(self, sizes: dict) -> None:
        languages = self.manifest["languages"]
        for pair, side, query_lang, db_lang in directions(self.pairs):
            if (pair, side) in self.routes:
                continue
            nlist, nprobe = join_plan(self.knn, languages[db_lang]["rows"])
            expected = {"db": languages[db_lang]["rows"], "q": languages[query_lang]["rows"] * min(nprobe, nlist)}
            for kind, rows in expected.items():
                counted = int(sizes.get((pair, side, kind), np.zeros(0)).sum())
                if counted != rows:
                    raise RuntimeError(f"{query_lang} -> {db_lang}: the list sizes count {counted} {kind} rows, "
                                       f"{rows} expected: the runner gave an incomplete side input")


class CompareList(beam.DoFn):
    """The queries and database rows of one group of lists (or one block of a hot list) -> each query's k best
    among the rows of the lists it probed, exactly, compared list by list and merged, as one partial result per
    query shard: ((pair, side, query shard), Neighbours).

    A group must hold all of its lists' rows (the list sizes say how many): a group the runner delivered in parts
    would give its queries fewer candidates without a trace, so it is an error."""

    def __init__(self, manifest: dict, pairs: list, config: MiningConfig):
        self.manifest, self.config = manifest, config
        self.shapes = join_shapes(manifest, pairs, config.knn)
        self.similarities = Metrics.counter("pairs", "similarities_computed")
        self.split = Metrics.counter("pairs", "hot_list_blocks")
        self.largest = Metrics.distribution("pairs", "group_rows")
        self.device = None

    def setup(self):
        self.device = compare_device(self.config.knn)  # the worker's own: a GPU worker compares there
        if self.device:
            log.info("k-NN join: comparing lists on %s", self.device)

    def process(self, element, sizes: dict):
        (pair, side, group, hot_list, query_block, _), chunks = element
        chunks = list(chunks)
        query_lang, db_lang = pair if side == "src" else pair[::-1]
        entry = self.manifest["languages"][db_lang]
        code = entry.get("binary")
        packed = compared_packed(entry, self.device)
        queries = _stacked([c for c in chunks if c.kind == "q"], code, f"{query_lang} queries", packed)
        database = _stacked([c for c in chunks if c.kind == "db"], code, f"{db_lang} database rows", packed)
        if hot_list >= 0:
            self.split.inc()
        else:
            self._check_whole(pair, side, group, query_block, queries.lists, database.lists, sizes)
        self.largest.update(len(queries.refs) + len(database.refs))
        k = neighbours_wanted(self.manifest, self.config, db_lang)
        yield from by_query_shard(pair, side, compare_lists(queries, database, k, code, packed, self.device,
                                                            self.similarities))

    def _check_whole(self, pair, side, group, query_block, q_lists, db_lists, sizes):
        shape = self.shapes[pair, side]
        ids = np.arange(group * shape.lists_per_group, (group + 1) * shape.lists_per_group)
        by_block = rows_by_block(sizes, pair, side, "q", ids, shape.query_blocks)
        n_database = rows_in_lists(sizes, pair, side, "db", ids)
        compared, hot = list_roles(by_block.sum(axis=1), n_database, self.config.knn.max_list_rows, shape.query_blocks)
        ordinary = compared & ~hot
        for kind, held, counts in (("q", q_lists, by_block[:, query_block]), ("db", db_lists, n_database)):
            if not np.array_equal(held, np.repeat(ids[ordinary], counts[ordinary])):
                block = f" query block {query_block}" if shape.query_blocks > 1 else ""
                raise RuntimeError(f"{pair} {side} list group {group}{block}: the group holds {len(held)} {kind} "
                                   f"rows, its lists have {int(counts[ordinary].sum())}: the runner delivered the "
                                   "group incomplete or in parts")


# Entries of a group's lists held before they are merged into each query's k best so far: its queries probe up
# to nprobe of its lists (256 at IVF1024), so all the lists' entries at once would be queries x nprobe x k (1.2 GB
# for a shard of 100k queries). The merge is associative (each part keeps a query's k best, ties by reference),
# so the result does not depend on when it runs.
MERGE_ENTRIES = 1 << 22


def compare_lists(queries: GroupRows, database: GroupRows, k: int, code: str | None, packed: bool,
                  device: str | None, similarities) -> Neighbours | None:
    """Each query's k best among the rows of the lists it is a member of, list by list and merged (None where no
    list has both kinds); `similarities` counts the comparisons."""
    exact = packed or (database.rows is not None and binary.exact_products(code, database.rows.shape[1]))
    # database rows are named by their rank among the group's references while compared (the same order, so the
    # same ties), which keeps the merge's keys narrow whatever shards the references come from
    names = np.sort(database.refs)
    parts, held = [], 0
    for list_id in np.intersect1d(queries.lists, database.lists):  # a hot list's block may lack one kind
        (q_refs, q_rows), (db_refs, db_rows) = queries.of_list(list_id), database.of_list(list_id)
        similarities.inc(len(q_refs) * len(db_refs))
        found = list_topk(q_rows, q_refs, db_rows, np.searchsorted(names, db_refs), k, device, unit=True,
                          exact=exact, packed_signs=packed)
        parts.append(as_cosines(found, code))
        held += found.refs.size
        if held > MERGE_ENTRIES and len(parts) > 1:
            parts = [merge_topk(parts, k)]
            held = parts[0].refs.size
    if not parts:
        return None
    found = parts[0] if len(parts) == 1 else merge_topk(parts, k)  # a query may probe several of the lists
    return Neighbours(found.queries, found.sims, np.where(found.refs >= 0, names[np.maximum(found.refs, 0)], -1))


def in_lists(kind: str, lists: np.ndarray, nlist: int, refs: np.ndarray, rows: np.ndarray) -> ListRows:
    """`rows` as `kind` members of their `lists` (assign's [rows, probes]) among `nlist`, all in one group."""
    _, members, member_lists = next(rows_by_group(lists, nlist))
    return ListRows.of(kind, member_lists, members, refs, rows)


def by_query_shard(pair, side, found: Neighbours | None) -> Iterator[tuple]:
    """((pair, side, query shard), that shard's part of `found`) for each query shard `found` has queries of."""
    if found is None:
        return
    shards = found.queries >> layout.ROW_BITS
    for shard in np.unique(shards):
        at = shards == shard
        yield (pair, side, int(shard)), Neighbours(found.queries[at], found.sims[at], found.refs[at])


class CompareOnShard(beam.DoFn):
    """One shard against the small sides sent to it (shard_routes), read here once for all of them: its rows are
    the queries of the databases sent to it (TO_QUERIES), or the database rows, each in its own list, of the
    queries sent to it (TO_DATABASE) -> ((pair, side, query shard), Neighbours) for each direction: the neighbours
    in this shard, which the merge completes over the database's shards. What was sent must arrive whole (every
    row of its language, in as many lists as it probes): a side the runner delivered in parts is an error, never
    fewer neighbours."""

    def __init__(self, manifest: dict, config: MiningConfig):
        self.manifest, self.config = manifest, config
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")
        self.similarities = Metrics.counter("pairs", "similarities_computed")
        self.device = None

    def setup(self):
        self.device = compare_device(self.config.knn)

    def process(self, element, centroids: dict):
        (route, language, shard, _), parts = element
        by_direction = {}
        for direction, chunk in parts:
            by_direction.setdefault(direction, []).append(chunk)
        languages = self.manifest["languages"]
        entry = languages[language]
        name = entry["shards"][shard]["embeddings"]
        rows = read_language_shard(entry, shard, self.bytes_read)
        refs = layout.pack(shard, np.arange(len(rows), dtype=np.int64))
        # once for all the directions that share them: the shard's rows as compared, and in a database's lists
        unit, as_compared, in_database_lists = comparable(rows, entry.get("binary"), name), {}, {}
        for (pair, side), chunks in sorted(by_direction.items()):
            query_lang, db_lang = pair if side == "src" else pair[::-1]
            db_entry = languages[db_lang]
            code, packed = db_entry.get("binary"), compared_packed(db_entry, self.device)
            sent_lang = db_lang if route == TO_QUERIES else query_lang
            sent = _stacked(chunks, code, f"{sent_lang} rows sent to {language} shard {shard}", packed)
            self._check_whole(sent, sent_lang, language, shard, db_lang)
            if db_lang not in in_database_lists:  # a query's nprobe nearest lists, a database row's own
                probes = join_plan(self.config.knn, db_entry["rows"])[1]
                kind, nprobe = ("q", probes) if route == TO_QUERIES else ("db", 1)
                lists = assign(unit, centroids[db_lang], nprobe, name)
                in_database_lists[db_lang] = in_lists(kind, lists, len(centroids[db_lang]), refs, rows)
            here = in_database_lists[db_lang]  # every row is a member: its rows are the shard's, in order
            if (code, packed) not in as_compared:
                as_compared[code, packed] = compared_rows(rows, code, name, packed)
            own = _stacked([here], code, name, packed, as_compared[code, packed])
            queries, database = (own, sent) if route == TO_QUERIES else (sent, own)
            k = neighbours_wanted(self.manifest, self.config, db_lang)
            yield from by_query_shard(pair, side, compare_lists(queries, database, k, code, packed, self.device,
                                                                self.similarities))

    def _check_whole(self, sent: GroupRows, sent_lang: str, language: str, shard: int, db_lang: str) -> None:
        languages = self.manifest["languages"]
        nlist, nprobe = join_plan(self.config.knn, languages[db_lang]["rows"])
        each = 1 if sent_lang == db_lang else min(nprobe, nlist)  # a query is a member of the lists it probes
        expected, distinct = languages[sent_lang]["rows"], len(np.unique(sent.refs))
        if distinct != expected or len(sent.refs) != expected * each:
            raise RuntimeError(f"{language} shard {shard}: {sent_lang}'s rows arrived as {distinct} rows in "
                               f"{len(sent.refs)} lists' memberships, {expected} rows in {expected * each} expected: "
                               "the runner delivered them incomplete or twice")


@dataclass(frozen=True)
class GroupRows(HoldsArrays):
    """One kind's rows of a group, as compared: each row once as a unit float32 row (widened from its code where it
    is binary), and its memberships ordered by list, then reference (the group's order is Beam's, not defined)."""

    lists: np.ndarray
    refs: np.ndarray
    index: np.ndarray
    rows: np.ndarray | None

    def of_list(self, list_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(references, rows) of one list's memberships, ascending by reference."""
        at = slice(*np.searchsorted(self.lists, [list_id, list_id + 1]))
        return self.refs[at], self.rows[self.index[at]]


def _stacked(chunks: list[ListRows], code: str | None, name: str, packed: bool = False,
             as_compared: np.ndarray | None = None) -> GroupRows:
    """A group's rows of one kind; `packed` keeps binary codes packed (compared by Hamming distance), else each
    row is widened and made a unit row; `as_compared`: the chunks' rows so made already."""
    if not chunks:
        empty = np.empty(0, dtype=np.int64)
        return GroupRows(empty, empty, empty, None)
    starts = np.cumsum([0] + [len(c.refs) for c in chunks[:-1]])
    lists = np.concatenate([c.member_lists() for c in chunks])
    refs = np.concatenate([c.member_refs() for c in chunks])
    index = np.concatenate([c.members.astype(np.int64) + start for c, start in zip(chunks, starts)])
    order = np.lexsort((refs, lists))
    if as_compared is None:
        as_compared = compared_rows(np.concatenate([c.rows for c in chunks]), code, name, packed)
    return GroupRows(lists[order], refs[order], index[order], as_compared)


def compared_rows(rows: np.ndarray, code: str | None, name: str, packed: bool) -> np.ndarray:
    """Rows as compared: binary codes packed (checked), else unit float32 rows, once per row (a query is a member
    of several lists); row by row, so the same bits per row however they are batched."""
    if packed:
        binary.check_packed(rows, name)
        return rows
    return unit_rows(comparable(rows, code, name), name)


class MergeTopK(beam.CombineFn):
    """Each query's k best across the lists it probed, per query shard: the parts are merged row-wise into a dense
    table indexed by the query's row in its shard (miner.knn_join.TopKTable), so the accumulator is one shard's
    k-NN table and each part costs its own rows."""

    def create_accumulator(self):
        return None

    def add_input(self, table, part):
        table = table or TopKTable(part.sims.shape[1])
        return table.add(part.queries & ROW_MASK, part)

    def merge_accumulators(self, tables):
        tables = [t for t in tables if t is not None]
        if not tables:
            return None
        for other in tables[1:]:
            found = other.neighbours()
            tables[0].add(found.queries & ROW_MASK, found)
        return tables[0]

    def extract_output(self, table):
        return table.neighbours() if table is not None else None


class SplitShort(beam.DoFn):
    """A query shard's merged k-NN table -> the table of its queries that found k neighbours, and (the "short"
    output) the references of those whose probed lists held fewer than k rows, for exact search: never a
    neighbourhood mean over fewer neighbours."""

    SHORT = "short"

    def __init__(self):
        self.queries = Metrics.counter("pairs", "queries")

    def process(self, element):
        (pair, side, shard), table = element
        full = table.found() == table.sims.shape[1]
        self.queries.inc(int(full.sum()))
        if not full.all():
            yield beam.pvalue.TaggedOutput(self.SHORT, ((pair, side, shard), table.queries[~full]))
        if full.any():
            yield (pair, side, shard), Neighbours(table.queries[full], table.sims[full], table.refs[full])


# Output types on the DoFns whose process Beam would otherwise infer by reading its bytecode (trivial inference,
# at every pipeline construction: 64 ms for ExactSearch alone); each is the type Beam infers, so the same coders.
@th.with_output_types(th.Tuple[th.Tuple[th.Any, th.Any, th.Any], Neighbours])
class ExactSearch(beam.DoFn):
    """(pair, side, query shard) with the queries that found fewer than k neighbours in their lists -> their
    k-NN table from an exact pass over the other language's shards (one in memory at a time)."""

    def __init__(self, manifest: dict, config: MiningConfig):
        self.manifest, self.config = manifest, config
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")
        self.queries = Metrics.counter("pairs", "queries")
        self.short = Metrics.counter("pairs", "queries_searched_exactly_after_short_lists")

    def process(self, element):
        (pair, side, shard), query_refs = element
        query_lang, db_lang = pair if side == "src" else pair[::-1]
        self.short.inc(len(query_refs))
        log.warning("%s -> %s: %d queries of shard %d found fewer than k neighbours in their lists: exact search",
                    query_lang, db_lang, len(query_refs), shard)
        entry = self.manifest["languages"][query_lang]
        k = neighbours_wanted(self.manifest, self.config, db_lang)
        db_entry = self.manifest["languages"][db_lang]
        code = db_entry.get("binary")
        packed = compared_packed(db_entry)
        queries = compared_rows(read_language_shard(entry, shard, self.bytes_read)[query_refs & ROW_MASK],
                                entry.get("binary"), entry["shards"][shard]["embeddings"], packed)
        parts = []
        for number, info in enumerate(db_entry["shards"]):
            database = compared_rows(read_language_shard(db_entry, number, self.bytes_read), code,
                                     info["embeddings"], packed)
            refs = layout.pack(number, np.arange(len(database), dtype=np.int64))
            found = list_topk(queries, query_refs, database, refs, k, unit=not packed, packed_signs=packed)
            parts = [merge_topk([*parts, as_cosines(found, code)], k)]
        self.queries.inc(len(query_refs))
        yield (pair, side, shard), parts[0]


def no_neighbours_yet(shard: tuple) -> tuple:
    """(pair, side, shard, rows, k) -> the shard's queries with no neighbour yet, keyed for the merge."""
    pair, side, number, rows, k = shard
    return (pair, side, number), Neighbours.none(layout.pack(number, np.arange(rows, dtype=np.int64)), k)


class KnnJoin(beam.PTransform):
    """PBegin -> every sentence's k nearest neighbours in the other language of each pair, both directions, as
    k-NN tables per query shard: ((pair, side, query shard), Neighbours), side "src" for source queries. A shard
    may come as two tables (its queries found in their lists, and those searched exactly)."""

    def __init__(self, manifest: dict, pairs: list[tuple[str, str]], config: MiningConfig, output: str,
                 waves: int = 1):
        super().__init__()
        self.manifest, self.pairs, self.config, self.output, self.waves = manifest, pairs, config, output, waves

    def expand(self, begin):
        manifest, config = self.manifest, self.config
        languages = sorted({lang for pair in self.pairs for lang in pair})
        centroids = beam.pvalue.AsDict(begin | "Languages" >> beam.Create(languages)
                                       | "TrainQuantizer" >> beam.ParDo(TrainQuantizer(manifest, config.knn,
                                                                                      self.output)))
        shards = [(lang, s) for lang in languages for s in range(len(manifest["languages"][lang]["shards"]))]
        # reshuffle=False: SpreadShards is the one spread (Create's own would shuffle the same elements twice)
        assigned = (begin | "Shards" >> beam.Create(shards, reshuffle=False) | "SpreadShards" >> beam.Reshuffle()
                    | "Assign" >> beam.ParDo(AssignShard(manifest, self.pairs, config.knn), centroids)
                    .with_outputs(TO_QUERIES, TO_DATABASE, main="memberships"))
        memberships = assigned.memberships
        sizes = beam.pvalue.AsDict(memberships | "ListSize" >> beam.FlatMap(shard_list_sizes, join_shapes(
                                       manifest, self.pairs, config.knn))
                                   | "ListSizes" >> beam.CombinePerKey(CountByList()))
        k_of = {(pair, side): neighbours_wanted(manifest, config, db) for pair, side, _, db in
                directions(self.pairs)}
        # every query appears in the merge, also one whose lists were all empty (it then goes to exact search);
        # the empty tables are made on a worker: built here, they would be pickled into the pipeline's graph
        shard_sizes = [(pair, side, s, info["rows"], k_of[pair, side])
                       for pair, side, query_lang, _ in directions(self.pairs)
                       for s, info in enumerate(manifest["languages"][query_lang]["shards"])]
        # reshuffle=False: a cheap Map before a grouping has nothing to spread
        tables = ((begin | "QueryShards" >> beam.Create(shard_sizes, reshuffle=False)
                   | "AllQueries" >> beam.Map(no_neighbours_yet),
                   *self.compared_in_waves(memberships, sizes),
                   (assigned[TO_QUERIES], assigned[TO_DATABASE]) | "SentToShards" >> beam.Flatten()
                   | "ByShard" >> beam.GroupByKey()
                   | "CompareOnShards" >> beam.ParDo(CompareOnShard(manifest, config), centroids))
                  | "Parts" >> beam.Flatten()
                  | "MergeTopK" >> beam.CombinePerKey(MergeTopK())
                  | "SplitShort" >> beam.ParDo(SplitShort()).with_outputs(SplitShort.SHORT, main="found"))
        exact = tables[SplitShort.SHORT] | "ExactSearch" >> beam.ParDo(ExactSearch(manifest, config))
        return (tables.found, exact) | "AllNeighbours" >> beam.Flatten()

    def compared_in_waves(self, memberships, sizes) -> list:
        """The groups' rows sent (read again from their shards), grouped and compared: in one wave, or in waves
        of consecutive groups where each wave's rows are sent once the wave before is compared (its count of
        compared groups a side input that only makes it wait), so a cluster holds one wave's grouping at a time."""
        manifest, pairs, config, compared, earlier = self.manifest, self.pairs, self.config, [], []
        for wave in range(self.waves):
            name = f"{wave + 1}" if self.waves > 1 else ""
            if compared:
                earlier = [beam.pvalue.AsSingleton(compared[-1]
                                                   | f"Wave{wave}Compared" >> beam.combiners.Count.Globally())]
            compared.append(memberships
                            | f"Blocks{name}" >> beam.ParDo(SplitHotLists(manifest, pairs, config.knn, wave,
                                                                          self.waves), sizes, *earlier)
                            | f"ByListGroup{name}" >> beam.GroupByKey()
                            | f"Compare{name}" >> beam.ParDo(CompareList(manifest, pairs, config), sizes))
        return compared


# -- 3. margins --------------------------------------------------------------------------------------------------
# Everything from here travels as blocks of rows (numpy arrays), one Beam element per (direction, shard) and
# per pair of shards where a join needs it: the per-element cost of the runner is paid per block, not per
# sentence, and the arithmetic is the library's, on arrays.

@dataclass(frozen=True)
class MeanBlock(HoldsArrays):
    """Queries of one shard and their neighbourhood means (fwd(x) for sources, bwd(y) for targets)."""

    refs: np.ndarray
    means: np.ndarray


@dataclass(frozen=True)
class CandidateBlock(HoldsArrays):
    """k-NN candidates (query, neighbour) with their similarity and the query's own mean; after scoring,
    `scores` holds each candidate's margin and `ref_means` the neighbour's mean."""

    queries: np.ndarray
    refs: np.ndarray
    sims: np.ndarray
    query_means: np.ndarray
    scores: np.ndarray | None = None
    ref_means: np.ndarray | None = None

    def take(self, rows: np.ndarray) -> CandidateBlock:
        return CandidateBlock(*(None if a is None else a[rows] for a in astuple_shallow(self)))

    @staticmethod
    def concat(blocks: list[CandidateBlock]) -> CandidateBlock:
        fields = zip(*(astuple_shallow(b) for b in blocks))
        return CandidateBlock(*(None if parts[0] is None else np.concatenate(parts) for parts in fields))


def astuple_shallow(block) -> tuple:
    return tuple(getattr(block, f.name) for f in dataclasses.fields(block))


def by_shard(refs: np.ndarray) -> Iterable[tuple[int, np.ndarray]]:
    """(shard, the rows whose reference lies in it, ascending) for each shard `refs` point into."""
    return rows_by_list((refs >> layout.ROW_BITS)[:, None])


def to_margin_join(element) -> Iterable[tuple]:
    """A query shard's k-NN table -> its queries' means, keyed by the shard, and its candidates, keyed by the
    shard of the neighbour each points at (in the other direction's keys): the margin of a candidate (x, y) needs
    the query's mean, which travels with it, and the neighbour's, which lives with the neighbour's own table."""
    (pair, side, shard), table = element
    if not (table.refs >= 0).all():
        raise RuntimeError(f"{pair} {side} shard {shard}: a k-NN table with unfilled neighbours reached the margins")
    means = neighbourhood_mean(table.sims)
    yield (pair, side, shard), MeanBlock(table.queries, means)
    k = table.sims.shape[1]
    candidates = CandidateBlock(np.repeat(table.queries, k), table.refs.ravel(), table.sims.ravel(),
                                np.repeat(means, k))
    other = "tgt" if side == "src" else "src"
    for neighbour_shard, rows in by_shard(candidates.refs):
        yield (pair, other, neighbour_shard), candidates.take(rows)


@th.with_output_types(th.Any)
class ScoreCandidates(beam.DoFn):
    """(pair, side, shard) with its sentences' means and the candidates pointing at them -> the candidates'
    margins (miner.margin), keyed by the query shard they belong to. A candidate pointing at a sentence whose mean
    did not arrive is an error naming the shard, never a margin over a wrong mean."""

    def __init__(self, kind: str, floor: float):
        self.kind, self.floor = kind, floor

    def process(self, element):
        (pair, side, shard), blocks = element
        blocks = list(blocks)
        mean_blocks = [b for b in blocks if isinstance(b, MeanBlock)]
        candidates = [b for b in blocks if isinstance(b, CandidateBlock)]
        if not candidates:
            return
        refs = np.concatenate([b.refs for b in mean_blocks]) if mean_blocks else np.empty(0, np.int64)
        means = np.concatenate([b.means for b in mean_blocks]) if mean_blocks else np.empty(0, np.float32)
        order = np.argsort(refs, kind="stable")
        refs, means = refs[order], means[order]
        found = CandidateBlock.concat(candidates)
        at = np.minimum(np.searchsorted(refs, found.refs), max(len(refs) - 1, 0))
        if not len(refs) or (refs[at] != found.refs).any():
            raise RuntimeError(f"{pair} {side} shard {shard}: candidates point at sentences whose neighbourhood "
                               "mean did not arrive: the runner delivered the group incomplete")
        scores = margin_of(found.sims, found.query_means, means[at], self.kind, floor=self.floor)
        scored = dataclasses.replace(found, scores=scores, ref_means=means[at])
        query_side = "tgt" if side == "src" else "src"
        for query_shard, rows in by_shard(scored.queries):
            yield (pair, query_side, query_shard), scored.take(rows)


def refined_by_rows(manifest: dict, pairs: list[tuple[str, str]]) -> bool:
    """Whether the embed stage kept turned float rows beside every mined language's codes (embed.binary_refine)."""
    languages = {language for pair in pairs for language in pair}
    entries = [manifest["languages"][language] for language in languages if language in manifest["languages"]]
    return bool(entries) and all(shard.get("rotated") for entry in entries for shard in entry["shards"])


def ratio_floor(config: MiningConfig, manifest: dict) -> float:
    """The ratio margin's floor, from the vectors' dimension (one encoder: the same in every language)."""
    dims = {entry["dim"] for entry in manifest["languages"].values() if entry.get("rows") and entry.get("dim")}
    return config.floor_for(max(dims, default=1))


# -- 4. selection ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PairBlock(HoldsArrays):
    """Sentence pairs as parallel arrays: source and target references, margin, cosine, which directions chose
    each pair (bit 1 forward, bit 2 backward), and once attached, each side's carried columns (src_text, ...: Arrow
    arrays, which are taken, joined and shuffled as buffers, not as Python objects a value; numpy arrays while
    refining); `means`, [n, 2]: each side's neighbourhood mean, which refining a pair's similarity needs for its
    margin."""

    src: np.ndarray
    tgt: np.ndarray
    score: np.ndarray
    sim: np.ndarray
    chosen_by: np.ndarray
    carried: dict = dataclasses.field(default_factory=dict)
    means: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.src)

    def take(self, rows: np.ndarray) -> PairBlock:
        return PairBlock(self.src[rows], self.tgt[rows], self.score[rows], self.sim[rows], self.chosen_by[rows],
                         {name: take_column(column, rows) for name, column in self.carried.items()},
                         None if self.means is None else self.means[rows])

    def with_columns(self, columns: dict) -> PairBlock:
        return dataclasses.replace(self, carried={**self.carried, **columns})

    @staticmethod
    def concat(blocks: list[PairBlock]) -> PairBlock:
        names = set(blocks[0].carried) if blocks else set()
        if any(set(b.carried) != names for b in blocks):
            raise ValueError("pair blocks with different columns cannot be joined")
        arrays = [np.concatenate([getattr(b, f) for b in blocks]) for f in ("src", "tgt", "score", "sim",
                                                                                "chosen_by")]
        means = (np.concatenate([b.means for b in blocks])
                 if blocks and all(b.means is not None for b in blocks) else None)
        return PairBlock(*arrays, {name: concat_columns([b.carried[name] for b in blocks]) for name in sorted(names)},
                         means)

    def best_first(self) -> PairBlock:
        """By margin descending, then source and target reference: the bitext's order."""
        return self.take(np.lexsort((self.tgt, self.src, -self.score)))


def take_column(column: np.ndarray | pa.Array, rows: np.ndarray) -> np.ndarray | pa.Array:
    return column[rows] if isinstance(column, np.ndarray) else pc.take(column, pa.array(rows, pa.int64()))


def concat_columns(columns: list[np.ndarray | pa.Array]) -> np.ndarray | pa.Array:
    """One column from blocks' pieces; Arrow pieces of a column a shard has only nulls of (type null) take the
    others' type, as one list of Python values would."""
    if isinstance(columns[0], np.ndarray):
        return np.concatenate(columns)
    typed = [c.type for c in columns if c.type != pa.null()]
    return pa.concat_arrays([c.cast(typed[0]) if typed else c for c in columns])


@th.with_output_types(th.Any)
class BestCandidates(beam.DoFn):
    """A query shard's scored candidates -> each query's best (highest margin, then highest cosine, then smaller
    reference: deterministic), as pairs keyed by (pair, source shard), where the two directions' choices meet.
    Every query of the shard must be there: a shard with fewer is an error, never a bitext from partial groups."""

    def __init__(self, manifest: dict, keep_means: bool = False):
        self.manifest, self.keep_means = manifest, keep_means   # means: for refining pairs (RefinePairs)

    def process(self, element):
        (pair, side, shard), blocks = element
        found = CandidateBlock.concat(list(blocks))
        order = np.lexsort((found.refs, -found.sims, -found.scores, found.queries))
        queries = found.queries[order]
        first = order[np.r_[True, queries[1:] != queries[:-1]]]
        query_lang = pair[0] if side == "src" else pair[1]
        expected = self.manifest["languages"][query_lang]["shards"][shard]["rows"]
        if len(first) != expected:
            raise RuntimeError(f"{pair} {side} shard {shard}: {len(first)} of its {expected} queries have "
                               "candidates: the runner delivered the group incomplete")
        best = found.take(first)
        src, tgt = (best.queries, best.refs) if side == "src" else (best.refs, best.queries)
        chosen = np.full(len(src), 1 if side == "src" else 2, dtype=np.int8)
        means = None
        if self.keep_means:
            own, other = best.query_means, best.ref_means
            means = np.stack([own, other] if side == "src" else [other, own], axis=1)
        pairs = PairBlock(src, tgt, best.scores, best.sims, chosen, means=means)
        for src_shard, rows in by_shard(src):
            yield (pair, src_shard), pairs.take(rows)


def chosen_by_mode(mode: str, chosen_by: np.ndarray) -> np.ndarray:
    """Which pairs a selection mode keeps, from the directions that chose each (bit 1 forward, bit 2 backward)."""
    forward, backward = (chosen_by & 1) > 0, (chosen_by & 2) > 0
    return {"forward": forward, "backward": backward, "intersect": forward & backward}.get(mode, forward | backward)


@th.with_output_types(th.Tuple[th.Any, th.Any])
class Select(beam.DoFn):
    """One source shard's best candidates, both directions -> the pairs the selection mode keeps, once each.

    `max` keeps every candidate here; the one-to-one pass comes after, per language pair."""

    def __init__(self, mode: str, threshold: float | None, min_cosine: float | None = None):
        self.mode, self.threshold, self.min_cosine = mode, threshold, min_cosine
        self.kept = Metrics.counter("pairs", "selected")
        self.below_floor = Metrics.counter("pairs", "below_min_cosine")

    def process(self, element):
        (pair, _), blocks = element
        found = PairBlock.concat(list(blocks))
        # forward first: a pair both directions chose has the same margin and cosine either way (the margin's
        # mean is symmetric, the cosine rescored pair by pair); which one is kept must not depend on the runner
        order = np.lexsort((found.chosen_by, found.tgt, found.src))
        src, tgt = found.src[order], found.tgt[order]
        starts = np.flatnonzero(np.r_[True, (src[1:] != src[:-1]) | (tgt[1:] != tgt[:-1])])
        unique = found.take(order[starts])
        unique = dataclasses.replace(unique, chosen_by=np.bitwise_or.reduceat(found.chosen_by[order], starts))
        keep = chosen_by_mode(self.mode, unique.chosen_by)
        if self.min_cosine is not None:  # before one-to-one, as miner.selection does
            low = keep & (unique.sim < self.min_cosine)
            self.below_floor.inc(int(low.sum()))
            keep &= ~low
        if self.mode != "max" and self.threshold is not None:
            keep &= unique.score >= self.threshold
        self.kept.inc(int(keep.sum()))
        if keep.any():
            yield pair, unique.take(np.flatnonzero(keep))


def one_to_one(element, threshold: float | None) -> Iterable[tuple]:
    """The greedy one-to-one pass of `max` selection (miner.selection) over one language pair's candidates."""
    pair, blocks = element
    candidates = PairBlock.concat(list(blocks)).best_first()
    _, src_dense = np.unique(candidates.src, return_inverse=True)
    _, tgt_dense = np.unique(candidates.tgt, return_inverse=True)
    accepted = np.sort(greedy_one_to_one(Pairs(src_dense, tgt_dense, candidates.score, candidates.sim)))
    if threshold is not None:
        accepted = accepted[candidates.score[accepted] >= threshold]
    if len(accepted):
        yield pair, candidates.take(accepted)


# -- 4b. the selected pairs refined (embed.binary_refine) --------------------------------------------------------

SIGNS, HALF = "_signs", "_half"   # carried while refining, dropped after


def read_rotated(entry: dict, shard: int, bytes_read=None) -> np.ndarray:
    """A shard's turned float rows (float16 on disk, float32 here), checked as embedding shards are."""
    path = entry["shards"][shard].get("rotated")
    if path is None:
        raise RuntimeError(f"{entry['shards'][shard]['embeddings']}: no turned float rows beside these codes: embed "
                           "again with embed.binary_refine: true")
    return read_shard(path, entry["dim"], bytes_read).astype(np.float32)


class RefineSide(beam.DoFn):
    """Pairs grouped by one side's embedding shard (the sentence shard's position) -> the pairs with that side's
    part of the two-way estimate (encoders.binary.two_way_cosine), the side's turned rows read from storage, never
    shuffled: first the target's stored sign codes are attached (`first`), then the source's rows meet them and
    leave their own signs (`middle`), then the target's rows meet those (`last`): the pair's similarity and margin
    are final, and `min_cosine` and the threshold apply. Only signs travel: d / 8 bytes a side of a selected pair."""

    def __init__(self, manifest: dict, side: str, step: str, kind: str = "ratio", floor: float = 0.0,
                 min_cosine: float | None = None, threshold: float | None = None):
        self.manifest, self.side, self.step = manifest, side, step
        self.kind, self.floor, self.min_cosine, self.threshold = kind, floor, min_cosine, threshold
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")
        self.refined = Metrics.counter("pairs", "refined")   # pairs scored again: two sign codes travelled each

    def process(self, element):
        (language, shard), blocks = element
        entry = self.manifest["languages"][language]
        if self.step == "first":  # the stored sign codes are these signs, at a sixteenth of the rows' bytes
            codes = read_language_shard(entry, shard, self.bytes_read)
            for pair, pairs in blocks:
                own = pairs.src if self.side == "src" else pairs.tgt
                yield pair, pairs.with_columns({SIGNS: codes[own & ROW_MASK]})
            return
        rows_all = read_rotated(entry, shard, self.bytes_read)
        for pair, pairs in blocks:
            rows = rows_all[(pairs.src if self.side == "src" else pairs.tgt) & ROW_MASK]
            half = binary.one_way(rows, pairs.carried[SIGNS])
            if self.step == "middle":
                yield pair, pairs.with_columns({SIGNS: binary.pack(rows > 0), HALF: half})
                continue
            cos = binary.both_ways(np.asarray(pairs.carried[HALF], np.float32), half, rows.shape[1])
            self.refined.inc(len(cos))
            score = margin_of(cos, pairs.means[:, 0], pairs.means[:, 1], self.kind, floor=self.floor)
            carried = {name: column for name, column in pairs.carried.items() if name not in (SIGNS, HALF)}
            refined = PairBlock(pairs.src, pairs.tgt, score, cos, pairs.chosen_by, carried, pairs.means)
            keep = np.ones(len(refined), dtype=bool)
            if self.min_cosine is not None:
                keep &= cos >= self.min_cosine
            if self.threshold is not None:
                keep &= score >= self.threshold
            if keep.any():
                yield pair, refined.take(np.flatnonzero(keep))


class RefinePairs(beam.PTransform):
    """(pair, PairBlock) selected by the codes -> the same pairs with similarities from each side's turned float
    rows against the other side's signs (miner.mining.refine_pairs, as the library does it on one machine), then
    `min_cosine` and the threshold; three groupings of the pairs, by target, source and target shard."""

    def __init__(self, manifest: dict, config: MiningConfig, floor: float):
        super().__init__()
        self.manifest, self.config, self.floor = manifest, config, floor

    def expand(self, pairs):
        config = self.config
        for name, side, step in (("Signs", "tgt", "first"), ("Half", "src", "middle"), ("Both", "tgt", "last")):
            pairs = (pairs
                     | f"Refine{name}ByShard" >> beam.FlatMap(by_sentence_shard(side))
                     | f"Refine{name}Group" >> beam.GroupByKey()
                     | f"Refine{name}" >> beam.ParDo(RefineSide(self.manifest, side, step, config.margin, self.floor,
                                                                config.min_cosine, config.threshold)))
        return pairs


# -- 5. output ---------------------------------------------------------------------------------------------------

def by_sentence_shard(side: str):
    """(pair, pairs) -> the pairs split by the sentence shard of one side, keyed by (language, shard)."""
    def split(element):
        pair, pairs = element
        language = pair[0] if side == "src" else pair[1]
        for shard, rows in by_shard(pairs.src if side == "src" else pairs.tgt):
            yield (language, shard), (pair, pairs.take(rows))
    return split


class AttachSide(beam.DoFn):
    """Pairs grouped by one side's sentence shard -> the pairs with that side's text and metadata (the embed
    manifest names each embedding shard's sentence shard), the shard read once."""

    def __init__(self, manifest: dict, side: str):
        self.manifest, self.side = manifest, side

    def process(self, element):
        (language, shard), blocks = element
        path = self.manifest["languages"][language]["shards"][shard]["path"]
        table = storage.read_parquet(path, columns=list(CARRIED))
        columns = {c: table.column(c).combine_chunks() for c in CARRIED}
        for pair, pairs in blocks:
            rows = (pairs.src if self.side == "src" else pairs.tgt) & ROW_MASK
            yield pair, pairs.with_columns({f"{self.side}_{c}": take_column(columns[c], rows) for c in CARRIED})


class FilterPairs(beam.DoFn):
    """The pair filter's rules over each pair's two texts; every drop is a `pairs` counter named by its rule."""

    def __init__(self, settings):
        self.settings = settings
        self.kept = Metrics.counter("pairs", "filter/kept")

    def setup(self):
        self.chain = PairFilter.from_settings(self.settings)

    def process(self, element):
        pair, pairs = element
        keep, drops = [], {}
        texts = (pairs.carried["src_text"].to_pylist(), pairs.carried["tgt_text"].to_pylist())
        for row, (source, target) in enumerate(zip(*texts)):
            verdict = self.chain.check(source, target, *pair)
            if verdict is KEEP:
                keep.append(row)
            else:
                drops[verdict[1]] = drops.get(verdict[1], 0) + 1
        for reason, count in drops.items():
            Metrics.counter("pairs", f"filter/{reason}").inc(count)
        self.kept.inc(len(keep))
        if keep:
            yield pair, pairs.take(np.asarray(keep, dtype=np.int64))


@th.with_output_types(th.Dict[str, th.Any])
class WriteBitext(beam.DoFn):
    """One language pair's pairs, best first, to Parquet and TSV.gz (atomically); emits the pair's summary."""

    def __init__(self, output: str):
        self.output = output

    def process(self, element):
        (src_lang, tgt_lang), blocks = element
        pairs = PairBlock.concat([b for b in blocks if b is not None] or [empty_pairs()]).best_first()
        parquet, tsv = layout.bitext_files(self.output, src_lang, tgt_lang)
        table = bitext_table(pairs, src_lang, tgt_lang)
        storage.write_parquet(parquet, table)
        storage.write_bytes(tsv, tsv_gz(table))
        scores = table["score"].to_pylist()
        yield {"pair": f"{src_lang}-{tgt_lang}", "pairs": len(pairs), "parquet": parquet, "tsv": tsv,
               "score_range": [min(scores), max(scores)] if scores else None}


def empty_pairs() -> PairBlock:
    return PairBlock(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32),
                     np.empty(0, np.float32), np.empty(0, np.int8),
                     {f"{side}_{c}": pa.nulls(0) for side in ("src", "tgt") for c in CARRIED})


def bitext_table(pairs: PairBlock, src_lang: str, tgt_lang: str) -> pa.Table:
    columns = {"score": pa.array(pairs.score.tolist(), pa.float32()),
               "cosine": pa.array(pairs.sim.tolist(), pa.float32()),
               "src_lang": pa.array([src_lang] * len(pairs), pa.string()),
               "tgt_lang": pa.array([tgt_lang] * len(pairs), pa.string())}
    for side in ("src", "tgt"):
        for column in CARRIED:
            columns[f"{side}_{column}"] = pairs.carried[f"{side}_{column}"]
    return pa.table(columns)


def tsv_gz(table: pa.Table) -> bytes:
    """score<TAB>source<TAB>target lines (the LASER / CCMatrix layout), gzipped with no timestamp: same bytes on
    every run."""
    import gzip

    lines = "".join(f"{score:.6f}\t{s.replace(chr(9), ' ')}\t{t.replace(chr(9), ' ')}\n" for score, s, t in
                    zip(table["score"].to_pylist(), table["src_text"].to_pylist(), table["tgt_text"].to_pylist()))
    return gzip.compress(lines.encode("utf-8"), mtime=0)


# -- the stage ---------------------------------------------------------------------------------------------------

class MinePairs(beam.PTransform):
    """The whole stage over the embed stage's manifest: PBegin -> PCollection of per-pair summaries; the k-NN
    join's groups in waves of at most `wave_bytes` of rows shipped (0: one wave; join_waves)."""

    def __init__(self, manifest: dict, pairs: list[tuple[str, str]], settings: dict, wave_bytes: int = 0):
        super().__init__()
        self.manifest, self.pairs = manifest, pairs
        self.config, self.output = mining_config(settings), settings["output"]
        self.pair_filter = settings.get("pair_filter")
        float_bytes = 4 if embed_settings(settings)["dtype"] == "float32" else 2
        self.waves = join_waves(manifest, pairs, self.config.knn, wave_bytes, float_bytes)

    def expand(self, begin):
        config, manifest = self.config, self.manifest
        refine = refined_by_rows(manifest, self.pairs)
        threshold = None if refine else config.threshold   # refined pairs meet it once their margins are final
        neighbours = begin | "KnnJoin" >> KnnJoin(manifest, self.pairs, config, self.output, self.waves)
        pairs = (neighbours
                 | "ToMarginJoin" >> beam.FlatMap(to_margin_join)
                 | "JoinMeans" >> beam.GroupByKey()
                 | "Margins" >> beam.ParDo(ScoreCandidates(config.margin, ratio_floor(config, manifest)))
                 | "ByQueryShard" >> beam.GroupByKey()
                 | "Best" >> beam.ParDo(BestCandidates(manifest, keep_means=refine))
                 | "BySourceShard" >> beam.GroupByKey()
                 | "Select" >> beam.ParDo(Select(config.selection, threshold, config.min_cosine)))
        if config.selection == "max":
            pairs = (pairs | "PerLanguagePair" >> beam.GroupByKey()
                     | "OneToOne" >> beam.FlatMap(one_to_one, threshold))
        if refine:
            pairs = pairs | "RefinePairs" >> RefinePairs(manifest, config, ratio_floor(config, manifest))
        for side in ("src", "tgt"):
            pairs = (pairs
                     | f"BySentenceShard{side}" >> beam.FlatMap(by_sentence_shard(side))
                     | f"GroupShard{side}" >> beam.GroupByKey()
                     | f"Attach{side}" >> beam.ParDo(AttachSide(manifest, side)))
        if PairFilter.from_settings(self.pair_filter) is not None:
            pairs = pairs | "FilterPairs" >> beam.ParDo(FilterPairs(self.pair_filter))
        empty = begin | "AllPairs" >> beam.Create([(pair, None) for pair in self.pairs], reshuffle=False)  # a few
        return ((pairs, empty)
                | "WithEmpty" >> beam.Flatten()
                | "PerPair" >> beam.GroupByKey()
                | "Write" >> beam.ParDo(WriteBitext(self.output)))


class PairsStage:
    """The stage as pipelines.mine runs it: the embed stage's manifest in, bitext out."""

    @staticmethod
    def check(settings: dict) -> None:
        """Before any stage runs: the mining, knn and pair filter settings parse."""
        mining_config(settings)
        PairFilter.from_settings(settings.get("pair_filter"))

    def __init__(self, settings: dict, manifests: dict):
        from pipelines.settings import language_pairs

        if "embed" not in manifests:
            raise ValueError("the pairs stage needs the embed stage's output: run it first (--stages embed)")
        self.settings, self.embeddings = settings, manifests["embed"]
        self.waves = 1  # the k-NN join's, once the pipeline is built (with the runner's knn.wave_bytes)
        mining_config(settings)  # bad settings fail here, before a pipeline starts
        PairFilter.from_settings(settings.get("pair_filter"))
        found = [lang for lang, entry in self.embeddings["languages"].items() if entry["rows"]]
        wanted = settings.get("languages") or found
        self.pairs = language_pairs([lang for lang in wanted if lang in found], settings.get("pairs", "pivot"),
                                    settings.get("pivot", "eng_Latn"))
        missing = sorted(set(wanted) - set(found))
        if missing:
            log.warning("no sentences in %s: no pairs with them", ", ".join(missing))

    def __call__(self, pipeline):
        from pipelines.options import wave_bytes

        setting = mining_config(self.settings).knn.wave_bytes
        budget = wave_bytes(setting, pipeline.options)
        mine = MinePairs(self.embeddings, self.pairs, self.settings, budget)
        self.waves = mine.waves
        if self.waves > 1:
            log.info("pairs: the k-NN join's groups go in %d waves (knn.wave_bytes %s: %.1f GB a wave at most)",
                     self.waves, setting, budget / 1e9)
        return pipeline | "pairs/Mine" >> mine

    def manifest(self, entries: list[dict]) -> dict:
        config, rows = mining_config(self.settings), self.embeddings["languages"]
        for entry in entries:  # how each direction searched, resolved from the two languages' sizes
            src, tgt = entry["pair"].split("-")
            fwd, bwd = (search_plan(config.knn, rows[lang]["rows"]) for lang in (tgt, src))
            entry["index"] = fwd if fwd == bwd else f"{fwd} (source->target), {bwd} (target->source)"
        searched = sorted({lang for pair in self.pairs for lang in pair})  # the quantizers TrainQuantizer wrote
        quantizers = {lang: layout.quantizer_file(self.settings["output"], lang) for lang in searched
                      if join_plan(config.knn, rows[lang]["rows"])[0] > 1}
        return {"stage": "pairs", "settings": {**config.describe(), "pair_filter": self.settings.get("pair_filter")},
                "pairs": sorted(entries, key=lambda e: e["pair"]), "quantizers": quantizers,
                "join_waves": self.waves}


def main(argv: list[str] | None = None) -> int:
    import sys

    from pipelines.job import main as job_main

    return job_main(["--stages", "pairs", *(argv if argv is not None else sys.argv[1:])], {"pairs": PairsStage},
                    prog="python -m pipelines.pairs", description=__doc__)


if __name__ == "__main__":
    from pipelines.job import end_process

    end_process(main())
