"""Reading a language's embedding shards as the pairs stage compares them: each shard checked where it is read,
binary codes widened (or kept packed) and rows made unit rows, once a row."""

from __future__ import annotations

import io

import numpy as np

from encoders import binary
from miner.knn_join import Neighbours, hamming_countable
from miner.vectors import check_finite, check_matrix, unit_rows
from pipelines import layout, storage

ROW_MASK = (1 << layout.ROW_BITS) - 1  # a reference's row in its shard


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


def language_refs(entry: dict) -> np.ndarray:
    """Every row's reference (layout.pack) across a language's shards, ascending."""
    return np.concatenate([layout.shard_refs(shard, info["rows"]) for shard, info in enumerate(entry["shards"])]
                          or [np.zeros(0, np.int64)])


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


def compared_rows(rows: np.ndarray, code: str | None, name: str, packed: bool) -> np.ndarray:
    """Rows as compared: binary codes packed (checked), else unit float32 rows, once per row (a query is a member
    of several lists); row by row, so the same bits per row however they are batched."""
    if packed:
        binary.check_packed(rows, name)
        return rows
    return unit_rows(comparable(rows, code, name), name)


def read_rotated(entry: dict, shard: int, bytes_read=None) -> np.ndarray:
    """A shard's turned float rows (float16 on disk, float32 here), checked as embedding shards are."""
    path = entry["shards"][shard].get("rotated")
    if path is None:
        raise RuntimeError(f"{entry['shards'][shard]['embeddings']}: no turned float rows beside these codes: embed "
                           "again with embed.binary_refine: true")
    return read_shard(path, entry["dim"], bytes_read).astype(np.float32)
