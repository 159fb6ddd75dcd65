"""Blocks of arrays report the arrays' bytes as their size (miner/sizes.py): what Dask's workers read to decide
what to spill, where `sys.getsizeof` alone saw 56 bytes for any block."""

import sys

import numpy as np
import pyarrow as pa

from miner.knn_join import Neighbours, TopKTable
from miner.sizes import held_bytes
from pipelines.pairs.blocks import PairBlock
from pipelines.pairs.rows import ListRows


def test_held_bytes_counts_numpy_and_arrow_buffers_inside_containers():
    rows = np.zeros((1000, 256), dtype=np.float16)
    texts = pa.array(["a sentence"] * 1000)
    assert held_bytes(rows) == 512_000
    assert held_bytes(texts) == texts.nbytes > 10_000
    assert held_bytes({"rows": rows, "texts": [texts, (rows,)]}) == 2 * 512_000 + texts.nbytes
    assert held_bytes(7) == sys.getsizeof(7)
    assert held_bytes(np.ndarray) == sys.getsizeof(np.ndarray)  # a type is not an array, though it has nbytes


def test_the_blocks_the_pairs_stage_ships_report_their_arrays():
    refs = np.arange(100_000, dtype=np.int64)
    found = Neighbours.none(refs, 4)
    arrays = found.queries.nbytes + found.sims.nbytes + found.refs.nbytes
    assert arrays <= sys.getsizeof(found) < arrays + 1000

    rows = np.ones((100_000, 256), dtype=np.float16)
    lists = ListRows.of("q", np.arange(100_000, dtype=np.int64), np.arange(100_000), refs, rows)
    assert sys.getsizeof(lists) >= rows.nbytes + refs.nbytes

    texts = pa.array(["ein Satz"] * 100_000)
    pairs = PairBlock(refs, refs, np.zeros(100_000), np.zeros(100_000), np.ones(100_000, np.int8),
                      carried={"src_text": texts})
    assert sys.getsizeof(pairs) >= 2 * refs.nbytes + 2 * 800_000 + texts.nbytes

    table = TopKTable(4).add(np.arange(1000), Neighbours.none(np.arange(1000), 4))
    assert sys.getsizeof(table) >= 1000 * 4 * (4 + 8)
