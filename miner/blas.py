"""Which OpenBLAS kernels faiss's products run on.

faiss-cpu's wheels bundle their own OpenBLAS (0.3.15, 2021), which does not know the CPUs released since: on an
Intel Sapphire Rapids Xeon (AVX-512 with AMX) it falls back to its Prescott kernels (SSE3), and every product faiss
computes (k-means training, flat and IVF search, the coarse quantizer) runs several times slower than the CPU
allows: the k-NN join's list assignment took 4.3x, IVF training 4.0x the CPU time of the SkylakeX kernels
(`bench/bench_assign.py`; docs/benchmarks.md, "faiss's products on a CPU its OpenBLAS does not know"). OpenBLAS
chooses its kernels when the library loads, from OPENBLAS_CORETYPE where that is set; so before faiss is first
imported, a CPU with the AVX-512 extensions the SkylakeX kernels use gets them, unless the user chose a core type.
Child processes (Dask's workers) inherit the choice. numpy's own OpenBLAS, a newer one, picks SkylakeX on such CPUs
by itself.
"""

from __future__ import annotations

import os

SKYLAKEX_FLAGS = frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl"})


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux lists them (empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def choose_openblas_kernels(environ=os.environ, flags: frozenset[str] | None = None) -> str | None:
    """Set OPENBLAS_CORETYPE=SkylakeX where the CPU has those extensions and no core type was chosen; the type set,
    or None."""
    if "OPENBLAS_CORETYPE" in environ or not SKYLAKEX_FLAGS <= (cpu_flags() if flags is None else flags):
        return None
    environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    return "SkylakeX"
