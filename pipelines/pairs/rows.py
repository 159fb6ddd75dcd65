"""A k-NN join group's rows and their comparison, on arrays: the memberships that travel (ListRows: each row once,
its lists by run-length), a group's rows as compared (GroupRows), and each query's k best among the rows of the
lists it probed (compare_lists), exact and the same whatever the grouping."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from encoders import binary
from miner.knn_join import Neighbours, SmallestKeys, list_topk, rows_by_group
from miner.sizes import HoldsArrays
from pipelines import layout
from pipelines.pairs.shards import ROW_MASK, as_cosines, compared_rows


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


@dataclass(frozen=True)
class GroupRows(HoldsArrays):
    """One kind's rows of a group, as compared: each row once as a unit float32 row (widened from its code where it
    is binary), and its memberships ordered by list, then reference (the group's order is Beam's, not defined)."""

    lists: np.ndarray
    refs: np.ndarray
    index: np.ndarray
    rows: np.ndarray | None

    def of_list(self, list_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row numbers, references, rows) of one list's memberships, ascending by reference: a row's number is
        its place in `rows`, one for each row however many lists it is a member of."""
        at = slice(*np.searchsorted(self.lists, [list_id, list_id + 1]))
        return self.index[at], self.refs[at], self.rows[self.index[at]]

    def row_refs(self) -> np.ndarray:
        """Each row's reference, by row number."""
        refs = np.empty(len(self.rows), dtype=np.int64)
        refs[self.index] = self.refs
        return refs


def stacked(chunks: list[ListRows], code: str | None, name: str, packed: bool = False,
             as_compared: np.ndarray | None = None) -> GroupRows:
    """A group's rows of one kind; `packed` keeps binary codes packed (compared by Hamming distance), else each
    row is widened and made a unit row; `as_compared`: the chunks' rows so made already."""
    if not chunks:
        empty = np.empty(0, dtype=np.int64)
        return GroupRows(empty, empty, empty, None)
    starts = np.cumsum([0] + [len(c.refs) for c in chunks[:-1]])
    # a chunk's memberships come by list, then reference (a shard's rows by row), and shards' references do not
    # interleave: taken in the order of their references, a stable sort by list alone (a merge of sorted runs)
    # gives the order by list, then reference, 9x faster than a lexsort of both; checked, else the lexsort
    by_ref = sorted(range(len(chunks)), key=lambda c: int(chunks[c].refs.min(initial=0)))
    lists = np.concatenate([chunks[c].member_lists() for c in by_ref])
    refs = np.concatenate([chunks[c].member_refs() for c in by_ref])
    index = np.concatenate([chunks[c].members.astype(np.int64) + starts[c] for c in by_ref])
    order = np.argsort(lists, kind="stable")
    if not by_list_then_reference(lists[order], refs[order]):
        order = np.lexsort((refs, lists))
    if as_compared is None:
        as_compared = compared_rows(np.concatenate([c.rows for c in chunks]), code, name, packed)
    return GroupRows(lists[order], refs[order], index[order], as_compared)


def by_list_then_reference(lists: np.ndarray, refs: np.ndarray) -> bool:
    """Whether memberships are ordered by list, then strictly ascending reference."""
    return bool(np.all((lists[1:] > lists[:-1]) | ((lists[1:] == lists[:-1]) & (refs[1:] > refs[:-1]))))


def compare_lists(queries: GroupRows, database: GroupRows, k: int, code: str | None, packed: bool,
                  device: str | None, similarities) -> Neighbours | None:
    """Each query's k best among the rows of the lists it is a member of, list by list, each list's merged into a
    table of the group's queries as it comes (SmallestKeys: memory of one table, not of the lists' parts; None
    where no list has both kinds); `similarities` counts the comparisons."""
    exact = packed or (database.rows is not None and binary.exact_products(code, database.rows.shape[1]))
    # database rows are named by their rank among the group's references while compared (the same order, so the
    # same ties), which keeps the merge's keys narrow whatever shards the references come from
    names = np.sort(database.refs)
    compared = np.intersect1d(queries.lists, database.lists)  # a hot list's block may lack one kind
    if not len(compared):
        return None
    best = SmallestKeys(len(queries.rows), k)
    for list_id in compared:
        (q_at, q_refs, q_rows), (_, db_refs, db_rows) = queries.of_list(list_id), database.of_list(list_id)
        similarities.inc(len(q_refs) * len(db_refs))
        found = as_cosines(list_topk(q_rows, q_refs, db_rows, np.searchsorted(names, db_refs), k, device, unit=True,
                                     exact=exact, packed_signs=packed), code)
        best.add(q_at, found.sims, found.refs)
    rows = np.flatnonzero(best.seen)
    refs = queries.row_refs()[rows]
    order = np.argsort(refs)
    sims, ranks = best.best(rows[order])
    return Neighbours(refs[order], sims, np.where(ranks >= 0, names[np.maximum(ranks, 0)], -1))


def every_query(found: Neighbours | None, queries: np.ndarray, k: int) -> Neighbours:
    """`found` over all of `queries` (references, ascending), a query it lacks with no neighbour (-inf, -1): a
    direction's whole k-NN table where one comparison met all its queries' candidates (plan.whole_on_shard), so no
    merge has to add the queries whose lists were empty before they go to exact search."""
    table = Neighbours.none(queries, k)
    if found is not None:
        at = np.searchsorted(queries, found.queries)
        table.sims[at], table.refs[at] = found.sims, found.refs
    return table


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
