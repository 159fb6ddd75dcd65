"""The objects a job's process holds for its whole life (the modules of Beam, numpy, faiss, pyarrow ... ~300k
objects) kept out of Python's cyclic garbage collector's full passes.

A full (generation 2) collection visits every tracked object, and CPython 3.11 starts one whenever a quarter as
many objects as it holds have survived into that generation since the last: a Beam stage's bundles, protos and
rows do that, so one full pass lands in a run, or not, by where the counts stand. One cost 0.17 s of CPU in the
pairs stage at 10^4 sentences a language, 14% of it (bench/bench_pairs_scaling.py; docs/benchmarks.md, "Fewer
instructions at 10^4"), and whether it came made the stage's figure jump between runs. `gc.freeze()` moves
the objects alive now into a permanent generation that collections skip; they are still freed when nothing
refers to them, and only a reference cycle among them that becomes garbage later is never reclaimed: so it runs
once a process, after the first stage is built (its modules are imported by then), not at every stage (a test
process runs hundreds, and each freeze would keep the cycles of earlier ones for good).
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_once() -> None:
    """gc.freeze() the first time this process calls it; nothing after."""
    global _frozen
    if not _frozen:
        gc.freeze()
        _frozen = True
