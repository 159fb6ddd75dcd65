"""k-NN over a database split into shards, for mining sets no single machine holds.

    template = train_template(sample, factory, config)          # once per language, on a bounded sample
    index = shard_index(template, shard_vectors, factory, config)   # once per shard
    best = TopK.empty(len(queries), k)
    for shard in shards:                                           # one shard in memory at a time
        best = best.merge(search_shard(shard_index_of(shard), queries, shard.vectors, shard.refs, k, ...))

The k nearest neighbours over the whole database are the k best of the union of each shard's k best, so
searching shard by shard and merging gives exactly what one index over everything gives (for Flat; for IVF, the
same neighbours as one index trained on the same sample). Neighbours are named by `refs`, int64 references the
caller gives each database row (the pipeline packs language shard and row into one).
"""

from __future__ import annotations

from dataclasses import dataclass

import faiss
import numpy as np

from miner.index import KnnConfig, populate, search, trained_index


@dataclass(frozen=True)
class TopK:
    """Each query's best neighbours so far: sims [n, k] descending, refs [n, k] (-1 where none yet)."""

    sims: np.ndarray
    refs: np.ndarray

    @classmethod
    def empty(cls, n_queries: int, k: int) -> TopK:
        return cls(np.full((n_queries, k), -np.inf, dtype=np.float32), np.full((n_queries, k), -1, dtype=np.int64))

    def merge(self, other: TopK) -> TopK:
        """The k best of both, by similarity descending then reference ascending (the order `miner.index` uses,
        so the result does not depend on how the database was sharded)."""
        k = self.sims.shape[1]
        sims = np.concatenate([self.sims, other.sims], axis=1)
        refs = np.concatenate([self.refs, other.refs], axis=1)
        # unfilled slots (-inf) go last whatever their reference
        order = np.lexsort((np.where(refs < 0, np.iinfo(np.int64).max, refs), -sims), axis=1)[:, :k]
        return TopK(np.take_along_axis(sims, order, axis=1), np.take_along_axis(refs, order, axis=1))

    def found(self) -> np.ndarray:
        """How many neighbours each query has (fewer than k only when the database is smaller than k)."""
        return (self.refs >= 0).sum(axis=1)


def train_template(sample: np.ndarray | None, dim: int, factory: str, config: KnnConfig) -> bytes:
    """An empty trained index, serialised: what every shard of one language starts from."""
    return faiss.serialize_index(trained_index(dim, factory, config, sample)).tobytes()


def shard_index(template: bytes, vectors: np.ndarray, factory: str, config: KnnConfig, name: str = "shard"):
    """A copy of the trained template filled with one shard's unit vectors."""
    index = faiss.deserialize_index(np.frombuffer(template, dtype=np.uint8))
    return populate(index, vectors, factory, config, name)


def search_shard(index, queries: np.ndarray, vectors: np.ndarray, refs: np.ndarray, k: int, factory: str,
                 config: KnnConfig, names: tuple[str, str] = ("queries", "shard")) -> TopK:
    """The k best rows of one shard for every query, with exact similarities, as references."""
    k_here = min(k, len(vectors))
    sims, ids = search(index, queries, vectors, k_here, config, names, factory=factory)
    result = TopK(sims, refs[ids])
    if k_here < k:  # a shard smaller than k: pad, the merge fills the slots from other shards
        result = TopK.empty(len(queries), k).merge(result)
    return result
