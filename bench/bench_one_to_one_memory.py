"""The memory of `max` selection's one-worker one-to-one pass (pipelines.pairs.selection.one_to_one): the peak
bytes a candidate it allocates beyond the grouped candidates it is given, by tracemalloc (numpy reports its
buffers to it), over random candidate graphs of the sizes given, in eight blocks as Select sends them.

    python bench/bench_one_to_one_memory.py                     # 10^6 candidates
    python bench/bench_one_to_one_memory.py --candidates 100000 1000000 3000000

Half of the candidates are accepted on these graphs (sources and targets drawn from as many sentences as there
are candidates); the accepted pairs' block is part of the peak.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from miner.sizes import held_bytes
from pipelines import layout
from pipelines.pairs.blocks import PairBlock
from pipelines.pairs.selection import one_to_one


def candidates(n: int, seed: int = 0) -> list[PairBlock]:
    """n distinct (source, target) candidates over n sentences a side, in eight blocks."""
    rng = np.random.default_rng(seed)
    keys = np.unique(np.stack([rng.integers(0, n, n), rng.integers(0, n, n)], axis=1), axis=0)
    score = rng.uniform(1.0, 2.0, len(keys)).astype(np.float32)
    whole = PairBlock(layout.pack(0, keys[:, 0]), layout.pack(0, keys[:, 1]), score, score.copy(),
                      np.ones(len(keys), np.int8))
    return [whole.take(np.arange(part, len(keys), 8)) for part in range(8)]


def measure(n: int) -> dict:
    blocks = candidates(n)
    count = sum(len(block) for block in blocks)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    [(_, accepted)] = one_to_one((("src", "tgt"), blocks), {("src", "tgt"): None})
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    digest = hashlib.sha256(accepted.src.tobytes() + accepted.tgt.tobytes()).hexdigest()[:12]
    grouped = sum(held_bytes(block) for block in blocks)
    return {"candidates": count, "accepted": len(accepted), "own_peak_bytes_per_candidate": round(peak / count, 1),
            "grouped_bytes_per_candidate": round(grouped / count, 1), "accepted_sha256": digest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, nargs="+", default=[1_000_000],
                        help="candidate counts, one random graph each (default 1000000)")
    args = parser.parse_args()
    for n in args.candidates:
        print(measure(n))


if __name__ == "__main__":
    main()
