"""What Dask's workers count Beam's values as: imported only where `dask.distributed` is installed (the runner's
client, and every worker through the plugin below).

A Dask worker decides what to spill to disk by `dask.sizeof`. A grouping's elements travel through Dask's shuffle
as (key, WindowedValue), because Beam's GroupByKey reifies each value's windows before grouping, and a
WindowedValue, a Cython type, has no `__sizeof__` of its own: `dask.sizeof` saw its 186-byte header, not the
blocks of rows inside it. At 250,000 float16 sentences a language a worker of the pairs stage held 2.8 GB while
shuffling, of which Dask counted 0.4 GB, so it spilled nothing and at 10^6 sentences 4 GiB workers were killed
(docs/benchmarks.md, "Float16 at 10^6 on 4 GiB workers").
"""

from __future__ import annotations

import sys

from apache_beam.utils.windowed_value import WindowedValue
from dask.sizeof import sizeof
from distributed import WorkerPlugin


def windowed_value_size(value: WindowedValue) -> int:
    return sys.getsizeof(value) + sizeof(value.value)


def register() -> None:
    """Size WindowedValues by their value (idempotent: a later registration replaces the same function)."""
    sizeof.register(WindowedValue)(windowed_value_size)


class BeamValueSizes(WorkerPlugin):
    """Registers the sizes above on every worker of the cluster, those that join or restart later too (a worker
    can hold shuffled data before it has run a bundle of its own)."""

    name = "cmlm-miner-beam-value-sizes"

    def setup(self, worker) -> None:
        register()
