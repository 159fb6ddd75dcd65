"""Objects that hold arrays report the arrays' bytes as their size.

`sys.getsizeof` counts an object's own header, not the numpy or Arrow buffers its attributes point to: a block of
100,000 float16 rows reads as 56 bytes. Engines that keep data in memory size it that way: Dask's workers decide
what to spill to disk by `dask.sizeof`, which falls back on `sys.getsizeof`, so blocks of the pairs stage's k-NN
join (gigabytes at 10^6 sentences a language) counted as nothing, were never spilled, and 4 GiB workers were
paused and killed at their memory limit instead (docs/benchmarks.md). The blocks that travel between a job's
steps take HoldsArrays, whose `__sizeof__` is the standard hook both of them read.
"""

from __future__ import annotations

import sys

import numpy as np


def held_bytes(value) -> int:
    """The bytes `value` holds: numpy and Arrow arrays by their buffers, containers by their items, anything else
    by `sys.getsizeof`."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, dict):
        return sum(held_bytes(item) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(held_bytes(item) for item in value)
    nbytes = getattr(type(value), "nbytes", None)  # pyarrow's arrays and tables (a property of the type)
    if nbytes is not None and not isinstance(value, type):
        return int(value.nbytes)
    return sys.getsizeof(value)


class HoldsArrays:
    """A mix-in: `sys.getsizeof(block)` (and so `dask.sizeof`) counts the arrays in the block's attributes."""

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + sum(held_bytes(value) for value in vars(self).values())
