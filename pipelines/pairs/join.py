"""Step 2 of the pairs stage as Beam transforms: every sentence's k nearest neighbours in the other language of each
pair, both directions, as a join (KnnJoin; ../shared/docs/METHODS.md §10). Quantizers per database language, rows
keyed by inverted list, groups of lists compared exactly (pipelines.pairs.rows), the k best merged per query shard;
the plan of groups, blocks, routes and waves is pipelines.pairs.plan's."""

from __future__ import annotations

import functools
import logging

import apache_beam as beam
import numpy as np
from apache_beam import typehints as th
from apache_beam.metrics import Metrics

import pipelines.pairs.plan as plan
from miner.console import PROGRESS_EVERY_S, Progress, plural
from miner.index import KnnConfig
from miner.knn_join import (
    Neighbours,
    TopKTable,
    block_count,
    blocks,
    compare_device,
    join_plan,
    list_topk,
    merge_topk,
    rows_by_group,
    train_quantizer,
    training_rows,
    wave_of,
)
from miner.mining import MiningConfig
from pipelines import layout, storage
from pipelines.options import spread
from pipelines.pairs.rows import (
    GroupRows,
    ListRows,
    by_query_shard,
    compare_lists,
    every_query,
    in_lists,
    stacked,
)
from pipelines.pairs.saved import ListAssignments, saved_quantizer
from pipelines.pairs.shards import (
    ROW_MASK,
    as_cosines,
    compared_packed,
    compared_rows,
    language_refs,
    read_language_shard,
    training_sample,
)

log = logging.getLogger("pipelines.pairs")


# -- coarse quantizers -------------------------------------------------------------------------------------------


class TrainQuantizer(beam.DoFn):
    """language -> (language, centroids [nlist, d]), written to index/<lang>/centroids.npy; one list (exact
    search) for a language below knn.exact_below rows or with fewer rows than the lists. `resume`: a quantizer a
    stopped run wrote whole is read, not trained again (pipelines.pairs.saved)."""

    def __init__(self, manifest: dict, knn: KnnConfig, output: str, resume: bool = False):
        self.manifest, self.knn, self.output, self.resume = manifest, knn, output, resume
        self.exact = Metrics.counter("pairs", "languages_searched_exactly")
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")
        self.resumed = Metrics.counter("pairs", "resumed_quantizers")

    def process(self, language: str):
        entry = self.manifest["languages"][language]
        nlist, nprobe = join_plan(self.knn, entry["rows"])
        if nlist == 1:
            self.exact.inc()
            log.info("%s: %s %s, searched exactly", language, f"{entry['rows']:,}", plural(entry["rows"], "sentence"))
            yield language, np.zeros((1, entry["dim"]), dtype=np.float32)
            return
        path = layout.quantizer_file(self.output, language)
        saved = saved_quantizer(path, nlist, entry["dim"]) if self.resume else None
        if saved is not None:
            self.resumed.inc()
            log.info("%s: %d sentences in %d lists, the quantizer a stopped run trained", language, entry["rows"],
                     nlist)
            yield language, saved
            return
        sample = training_sample(entry, training_rows(nlist, self.knn), self.knn.seed, self.bytes_read)
        centroids = train_quantizer(sample, nlist, self.knn, language)
        storage.write_npy(path, centroids)
        log.info("%s: %d sentences in %d lists (trained on %d), queries probe %d", language, entry["rows"], nlist,
                 len(sample), nprobe)
        yield language, centroids


# -- rows keyed by inverted list, compared exactly per list, k best merged per query ------------------------


# AssignShard's output of the small sides sent to the other side's shards, both routes in one: the route is in the
# key. Two tagged outputs flattened before their grouping made the FnApiRunner run the Flatten as a bundle of its
# own, which decoded and encoded every row sent once more (0.04 CPU-s of ~1.2 at 10^4 sentences a language).
SENT = "sent_to_shards"


class AssignShard(beam.DoFn):
    """(language, shard) -> where the shard's rows go, for every direction that uses them: ((language, shard),
    [((pair, side, group), ListRows)]), each group's memberships of kind "db" (each row in its one list of the
    language's own quantizer) or "q" (each row in its nprobe nearest lists of the other language's quantizer),
    without the rows themselves (SplitHotLists reads them again once the list sizes are known). The list sizes
    are a barrier: every shard is assigned before any group's rows move on, so what waits there is the memberships
    (tens of bytes a row), not the rows (at 10^6 float16 sentences a language, 16 GB held at once). A direction's
    small side that goes to the other's shards (plan.shard_routes) is sent to each of them instead, with its rows,
    keyed by its route (output SENT): ((route, that language, shard, batch), ((pair, side), ListRows)), and the
    other side not at all. Each assignment is saved as it is made, and read back where a stopped run saved it
    (`assignments`, pipelines.pairs.saved)."""

    def __init__(self, manifest: dict, pairs: list, knn: KnnConfig, assignments: ListAssignments):
        self.manifest, self.pairs, self.knn, self.assignments = manifest, pairs, knn, assignments
        self.routes, self.shapes = plan.shard_routes(manifest, pairs, knn), plan.join_shapes(manifest, pairs, knn)
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")
        self.copies = {"db": Metrics.counter("pairs", "database_rows_sent"),
                       "q": Metrics.counter("pairs", "query_rows_sent")}

    def process(self, task: tuple[str, int], centroids: dict):
        language, shard = task
        entry = self.manifest["languages"][language]
        info = entry["shards"][shard]
        rows = read_language_shard(entry, shard, self.bytes_read)  # what travels: binary codes stay packed
        refs = layout.shard_refs(shard, len(rows))
        # the rows as assigned, made once: each row's own list, assigned once for every direction where this
        # language is the database; as a query, its nprobe nearest lists of the other language's quantizer
        unit = functools.cache(lambda: compared_rows(rows, entry.get("binary"), info["embeddings"], packed=False))

        def lists_in(quantizer: str, nprobe: int) -> np.ndarray:
            return self.assignments.lists(language, shard, quantizer, centroids[quantizer], nprobe, unit, len(rows),
                                          info["embeddings"])

        own_lists = functools.cache(lambda: lists_in(language, 1))
        memberships = []

        def probed_lists(db_lang: str) -> np.ndarray:
            return lists_in(db_lang, join_plan(self.knn, self.manifest["languages"][db_lang]["rows"])[1])

        for pair, side, query_lang, db_lang in plan.directions(self.pairs):
            if (pair, side) in self.routes:
                route, batch = self.routes[pair, side]
                if route == plan.TO_QUERIES and db_lang == language:
                    chunk = in_lists("db", own_lists(), len(centroids[db_lang]), refs, rows)
                    yield from self._to_shards(route, batch, (pair, side), query_lang, chunk)
                elif route == plan.TO_DATABASE and query_lang == language:
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
            yield beam.pvalue.TaggedOutput(SENT, ((route, language, shard, batch), (direction, chunk)))


class CountByList(beam.CombineFn):
    """(list ids, counts) parts -> rows per list as a dense array indexed by list id (zero where none)."""

    def create_accumulator(self):
        return np.zeros(0, dtype=np.int64)

    def add_input(self, totals, part):
        list_ids, counts = part
        totals = plan.grown(totals, int(list_ids.max(initial=-1)) + 1)
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


class SplitHotLists(beam.DoFn):
    """A shard's memberships (AssignShard) -> what is compared, with the shard's rows read again: for each group,
    its lists' rows under the group's key, less the lists without queries or without database rows (nothing to
    compare) and the hot lists. A list with more than max_rows rows on a side
    is hot: it leaves the group and is split into blocks of about that many (by a hash of the row), and each query
    block meets each database block, so such a group holds at most ~2 x max_rows rows.

    Where the direction's groups take their queries in blocks (plan.join_shapes), a query goes to its block's key (a
    hash of its reference) and the group's database rows to every block's.

    Keys: (pair, side, group, -1, query block, 0) for a group's ordinary lists, (pair, side, group, list, query
    block, database block) for a hot list's blocks. The list sizes (a side input) are checked against the manifest's row
    counts before use: a missing size would drop a list's rows without a trace, so an incomplete side input is an
    error, never fewer neighbours. In a join of several waves (KnnJoin.compared_in_waves) each wave has its own
    instance, which hands on its wave's groups only and reads a shard only where it has some."""

    def __init__(self, manifest: dict, pairs: list, knn: KnnConfig, wave: int = 0, waves: int = 1):
        self.manifest, self.pairs, self.knn = manifest, pairs, knn
        self.shapes, self.routes = plan.join_shapes(manifest, pairs, knn), plan.shard_routes(manifest, pairs, knn)
        self.wave, self.waves, self.max_rows = wave, waves, plan.rows_a_side(knn, manifest)
        languages = manifest["languages"]
        self.groups = {(pair, side): self.shapes[pair, side].groups(join_plan(knn, languages[db]["rows"])[0])
                       for pair, side, _, db in plan.directions(pairs)}
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
        n_queries, n_database = (plan.rows_in_lists(sizes, pair, side, kind, row_lists, query_blocks)
                                 for kind in ("q", "db"))
        compared, hot = plan.list_roles(n_queries, n_database, self.max_rows, query_blocks)
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
        n_queries, n_database = (int(plan.rows_in_lists(sizes, pair, side, kind, np.array([list_id]), query_blocks)[0])
                                 for kind in ("q", "db"))
        mine, other = (n_queries, n_database) if chunk.kind == "q" else (n_database, n_queries)
        max_rows = self.max_rows
        own_block = blocks(chunk.member_refs(), block_count(mine, max_rows))
        for block in np.unique(own_block):
            members = own_block == block
            for other_block in range(block_count(other, max_rows)):
                key = (int(block), other_block) if chunk.kind == "q" else (other_block, int(block))
                yield (pair, side, group, list_id, *key), chunk.take(members)

    def _check(self, sizes: dict) -> None:
        languages = self.manifest["languages"]
        for pair, side, query_lang, db_lang in plan.directions(self.pairs):
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
        self.shapes = plan.join_shapes(manifest, pairs, config.knn)
        self.max_rows = plan.rows_a_side(config.knn, manifest)
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
        queries = stacked([c for c in chunks if c.kind == "q"], code, f"{query_lang} queries", packed)
        database = stacked([c for c in chunks if c.kind == "db"], code, f"{db_lang} database rows", packed)
        if hot_list >= 0:
            self.split.inc()
        else:
            self._check_whole(pair, side, group, query_block, queries.lists, database.lists, sizes)
        self.largest.update(len(queries.refs) + len(database.refs))
        k = plan.neighbours_wanted(self.manifest, self.config, db_lang)
        yield from by_query_shard(pair, side, compare_lists(queries, database, k, code, packed, self.device,
                                                            self.similarities))

    def _check_whole(self, pair, side, group, query_block, q_lists, db_lists, sizes):
        shape = self.shapes[pair, side]
        ids = np.arange(group * shape.lists_per_group, (group + 1) * shape.lists_per_group)
        by_block = plan.rows_by_block(sizes, pair, side, "q", ids, shape.query_blocks)
        n_database = plan.rows_in_lists(sizes, pair, side, "db", ids)
        compared, hot = plan.list_roles(by_block.sum(axis=1), n_database, self.max_rows, shape.query_blocks)
        ordinary = compared & ~hot
        for kind, held, counts in (("q", q_lists, by_block[:, query_block]), ("db", db_lists, n_database)):
            if not np.array_equal(held, np.repeat(ids[ordinary], counts[ordinary])):
                block = f" query block {query_block}" if shape.query_blocks > 1 else ""
                raise RuntimeError(f"{pair} {side} list group {group}{block}: the group holds {len(held)} {kind} "
                                   f"rows, its lists have {int(counts[ordinary].sum())}: the runner delivered the "
                                   "group incomplete or in parts")


class CompareOnShard(beam.DoFn):
    """One shard against the small sides sent to it (plan.shard_routes), read here once for all of them: its rows are
    the queries of the databases sent to it (plan.TO_QUERIES), or the database rows, each in its own list, of the
    queries sent to it (plan.TO_DATABASE) -> ((pair, side, query shard), Neighbours) for each direction: the neighbours
    in this shard, which the merge completes over the database's shards; where this comparison meets all of a
    direction's candidates (plan.whole_on_shard), its table holds every query, one that found none too. What was sent
    must arrive whole (every row of its language, in as many lists as it probes): a side the runner delivered in parts
    is an error, never fewer neighbours. Each worker logs the similarities it computed and their rate at most every
    `progress_every_s` seconds: the stage's long step. The shard's assignments are saved and read back as AssignShard's
    are (`assignments`)."""

    progress_every_s = PROGRESS_EVERY_S

    def __init__(self, manifest: dict, config: MiningConfig, assignments: ListAssignments):
        self.manifest, self.config, self.assignments = manifest, config, assignments
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")
        self.similarities = None
        self.device = None

    def setup(self):
        self.device = compare_device(self.config.knn)
        self.similarities = CountedWork(Metrics.counter("pairs", "similarities_computed"),
                                        Progress(log, "pairs", "similarities", every_s=self.progress_every_s))

    def process(self, element, centroids: dict):
        (route, language, shard, _), parts = element
        by_direction = {}
        for direction, chunk in parts:
            by_direction.setdefault(direction, []).append(chunk)
        languages = self.manifest["languages"]
        entry = languages[language]
        name = entry["shards"][shard]["embeddings"]
        rows = read_language_shard(entry, shard, self.bytes_read)
        refs = layout.shard_refs(shard, len(rows))
        # once for all the directions that share them: the shard's rows as compared (the unit rows assigned to
        # lists too, where this shard's code is the database's and is not compared packed), and in a database's lists
        own_code = entry.get("binary")
        as_compared, in_database_lists = {(own_code, False): compared_rows(rows, own_code, name, packed=False)}, {}
        unit = as_compared[own_code, False]
        for (pair, side), chunks in sorted(by_direction.items()):
            query_lang, db_lang = pair if side == "src" else pair[::-1]
            db_entry = languages[db_lang]
            code, packed = db_entry.get("binary"), compared_packed(db_entry, self.device)
            sent_lang = db_lang if route == plan.TO_QUERIES else query_lang
            sent = stacked(chunks, code, f"{sent_lang} rows sent to {language} shard {shard}", packed)
            self._check_whole(sent, sent_lang, language, shard, db_lang)
            if db_lang not in in_database_lists:  # a query's nprobe nearest lists, a database row's own
                probes = join_plan(self.config.knn, db_entry["rows"])[1]
                kind, nprobe = ("q", probes) if route == plan.TO_QUERIES else ("db", 1)
                lists = self.assignments.lists(language, shard, db_lang, centroids[db_lang], nprobe, lambda: unit,
                                               len(rows), name)
                in_database_lists[db_lang] = in_lists(kind, lists, len(centroids[db_lang]), refs, rows)
            here = in_database_lists[db_lang]  # every row is a member: its rows are the shard's, in order
            if (code, packed) not in as_compared:
                as_compared[code, packed] = compared_rows(rows, code, name, packed)
            own = stacked([here], code, name, packed, as_compared[code, packed])
            queries, database = (own, sent) if route == plan.TO_QUERIES else (sent, own)
            k = plan.neighbours_wanted(self.manifest, self.config, db_lang)
            found = compare_lists(queries, database, k, code, packed, self.device, self.similarities)
            if plan.whole_on_shard(route, db_entry):
                found = every_query(found, refs if route == plan.TO_QUERIES else language_refs(languages[query_lang]),
                                    k)
            yield from by_query_shard(pair, side, found)

    def _check_whole(self, sent: GroupRows, sent_lang: str, language: str, shard: int, db_lang: str) -> None:
        languages = self.manifest["languages"]
        nlist, nprobe = join_plan(self.config.knn, languages[db_lang]["rows"])
        each = 1 if sent_lang == db_lang else min(nprobe, nlist)  # a query is a member of the lists it probes
        expected, distinct = languages[sent_lang]["rows"], len(np.unique(sent.refs))
        if distinct != expected or len(sent.refs) != expected * each:
            raise RuntimeError(f"{language} shard {shard}: {sent_lang}'s rows arrived as {distinct} rows in "
                               f"{len(sent.refs)} lists' memberships, {expected} rows in {expected * each} expected: "
                               "the runner delivered them incomplete or twice")


class CountedWork:
    """A Beam counter whose increments also move a progress line (miner.console.Progress)."""

    def __init__(self, counter, progress: Progress):
        self.counter, self.progress = counter, progress

    def inc(self, n: int = 1) -> None:
        self.counter.inc(n)
        self.progress.add(n)


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


# Output types on the DoFns whose process Beam would otherwise infer by reading its bytecode (trivial inference,
# at every pipeline construction: 64 ms for the exact search's loop alone); each is the type Beam infers, so the
# same coders.
@th.with_output_types(th.Tuple[th.Tuple[th.Any, th.Any, th.Any], Neighbours])
class ShortSearchedExactly(beam.DoFn):
    """A query shard's k-NN table -> the table of its queries that found k neighbours and, where some found fewer
    (their probed lists held fewer than k rows), a second table of those from an exact pass over the other
    language's shards (one in memory at a time): never a neighbourhood mean over fewer neighbours. The rare exact
    search is here rather than in a ParDo of its own: Beam would fuse that into this one's bundle anyway, and the
    Flatten joining their outputs ran as a bundle of its own."""

    def __init__(self, manifest: dict, config: MiningConfig):
        self.manifest, self.config = manifest, config
        self.bytes_read = Metrics.counter("pairs", "embedding_bytes_read")
        self.queries = Metrics.counter("pairs", "queries")
        self.short = Metrics.counter("pairs", "queries_searched_exactly_after_short_lists")

    def process(self, element):
        key, table = element
        full = table.found() == table.sims.shape[1]
        self.queries.inc(int(full.sum()))
        if full.any():
            yield key, Neighbours(table.queries[full], table.sims[full], table.refs[full])
        if not full.all():
            yield key, self.searched_exactly(*key, table.queries[~full])

    def searched_exactly(self, pair, side, shard: int, query_refs: np.ndarray) -> Neighbours:
        query_lang, db_lang = pair if side == "src" else pair[::-1]
        self.short.inc(len(query_refs))
        log.warning("%s -> %s: %d queries of shard %d found fewer than k neighbours in their lists: exact search",
                    query_lang, db_lang, len(query_refs), shard)
        entry = self.manifest["languages"][query_lang]
        k = plan.neighbours_wanted(self.manifest, self.config, db_lang)
        db_entry = self.manifest["languages"][db_lang]
        code = db_entry.get("binary")
        packed = compared_packed(db_entry)
        queries = compared_rows(read_language_shard(entry, shard, self.bytes_read)[query_refs & ROW_MASK],
                                entry.get("binary"), entry["shards"][shard]["embeddings"], packed)
        parts = []
        for number, info in enumerate(db_entry["shards"]):
            database = compared_rows(read_language_shard(db_entry, number, self.bytes_read), code,
                                     info["embeddings"], packed)
            refs = layout.shard_refs(number, len(database))
            found = list_topk(queries, query_refs, database, refs, k, unit=not packed, packed_signs=packed)
            parts = [merge_topk([*parts, as_cosines(found, code)], k)]
        self.queries.inc(len(query_refs))
        return parts[0]


def no_neighbours_yet(shard: tuple) -> tuple:
    """(pair, side, shard, rows, k) -> the shard's queries with no neighbour yet, keyed for the merge."""
    pair, side, number, rows, k = shard
    return (pair, side, number), Neighbours.none(layout.shard_refs(number, rows), k)


class KnnJoin(beam.PTransform):
    """PBegin -> every sentence's k nearest neighbours in the other language of each pair, both directions, as
    k-NN tables per query shard: ((pair, side, query shard), Neighbours), side "src" for source queries. A shard
    may come as two tables (its queries found in their lists, and those searched exactly)."""

    def __init__(self, manifest: dict, pairs: list[tuple[str, str]], config: MiningConfig, output: str,
                 waves: int = 1, resume: bool = False):
        super().__init__()
        self.manifest, self.pairs, self.config, self.output, self.waves = manifest, pairs, config, output, waves
        self.resume = resume  # a stopped run's quantizers and assignments are read back (pipelines.pairs.saved)

    def expand(self, begin):
        manifest, config = self.manifest, self.config
        languages = sorted({lang for pair in self.pairs for lang in pair})
        # the languages' quantizers train, and the shards are assigned, on several workers where there are several
        # (options.spread); reshuffle=False: the Spread is each one's only shuffle
        trainings = spread(begin | "Languages" >> beam.Create(languages, reshuffle=False), "SpreadLanguages")
        quantizers = trainings | "TrainQuantizer" >> beam.ParDo(TrainQuantizer(manifest, config.knn, self.output,
                                                                              self.resume))
        centroids = beam.pvalue.AsDict(quantizers)
        shards = [(lang, s) for lang in languages for s in range(len(manifest["languages"][lang]["shards"]))]
        tasks = spread(begin | "Shards" >> beam.Create(shards, reshuffle=False), "SpreadShards")
        assignments = ListAssignments(self.output, self.resume)
        assigned = (tasks | "Assign" >> beam.ParDo(AssignShard(manifest, self.pairs, config.knn, assignments),
                                                    centroids)
                    .with_outputs(SENT, main="memberships"))
        # a route the plan gives no direction is left out of the pipeline: at 10^4 sentences a language every
        # direction goes to the shards, and the join's seven transforms were built and run on nothing
        routes = plan.shard_routes(manifest, self.pairs, config.knn)
        joined = any((pair, side) not in routes for pair, side, _, _ in plan.directions(self.pairs))
        compared = []
        if joined:
            memberships = assigned.memberships
            sizes = beam.pvalue.AsDict(memberships | "ListSize" >> beam.FlatMap(plan.shard_list_sizes,
                                                                                plan.join_shapes(manifest, self.pairs,
                                                                                                 config.knn))
                                       | "ListSizes" >> beam.CombinePerKey(CountByList()))
            compared += self.compared_in_waves(memberships, sizes)
        if routes:
            compared.append(assigned[SENT] | "ByShard" >> beam.GroupByKey()
                            | "CompareOnShards" >> beam.ParDo(CompareOnShard(manifest, config, assignments),
                                                              centroids))
        # where each query shard's table comes whole from one shard's comparison, there is nothing to merge
        whole = plan.tables_whole_on_shards(manifest, self.pairs, config.knn)
        tables = compared[0] if whole else self.merged(begin, compared)
        return tables | "ShortSearchedExactly" >> beam.ParDo(ShortSearchedExactly(manifest, config))

    def merged(self, begin, compared: list):
        """The comparisons' parts merged into one table per query shard, with every query in it (also one whose
        lists were all empty: it then goes to exact search)."""
        manifest, config = self.manifest, self.config
        k_of = {(pair, side): plan.neighbours_wanted(manifest, config, db) for pair, side, _, db in
                plan.directions(self.pairs)}
        # the empty tables are made on a worker: built here, they would be pickled into the pipeline's graph
        shard_sizes = [(pair, side, s, info["rows"], k_of[pair, side])
                       for pair, side, query_lang, _ in plan.directions(self.pairs)
                       for s, info in enumerate(manifest["languages"][query_lang]["shards"])]
        # reshuffle=False: a cheap Map before a grouping has nothing to spread
        return ((begin | "QueryShards" >> beam.Create(shard_sizes, reshuffle=False)
                 | "AllQueries" >> beam.Map(no_neighbours_yet),
                 *compared)
                | "Parts" >> beam.Flatten()
                | "MergeTopK" >> beam.CombinePerKey(MergeTopK()))

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
