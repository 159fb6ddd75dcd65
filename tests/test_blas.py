"""faiss's bundled OpenBLAS runs its SkylakeX kernels on CPUs it is too old to know (miner/blas.py)."""

import os
import subprocess
import sys

import pytest

from miner.blas import SKYLAKEX_FLAGS, choose_openblas_kernels, cpu_flags


def test_a_cpu_with_the_avx512_extensions_gets_the_skylakex_kernels_unless_the_user_chose():
    environ = {}
    assert choose_openblas_kernels(environ, SKYLAKEX_FLAGS | {"amx_bf16"}) == "SkylakeX"
    assert environ == {"OPENBLAS_CORETYPE": "SkylakeX"}
    chosen = {"OPENBLAS_CORETYPE": "Haswell"}
    assert choose_openblas_kernels(chosen, SKYLAKEX_FLAGS) is None and chosen == {"OPENBLAS_CORETYPE": "Haswell"}
    avx2_only = {}
    assert choose_openblas_kernels(avx2_only, frozenset({"avx2", "fma", "avx512f"})) is None and avx2_only == {}


FAISS_CORE = """
import ctypes, miner.index
maps = open("/proc/self/maps").read().split()
[path] = {word for word in maps if "faiss" in word and "libopenblas" in word} or [None]
if path is None:
    print("none")
else:
    corename = ctypes.CDLL(path).openblas_get_corename
    corename.restype = ctypes.c_char_p
    print(corename().decode())
"""


@pytest.mark.skipif(not SKYLAKEX_FLAGS <= cpu_flags(), reason="the CPU lacks the AVX-512 extensions of the "
                    "SkylakeX kernels (or is not read from Linux's /proc/cpuinfo)")
def test_faiss_runs_its_products_on_the_skylakex_kernels_here():
    """On a Sapphire Rapids Xeon faiss's OpenBLAS 0.3.15 chose its Prescott (SSE3) kernels, 5x slower."""
    core = subprocess.run([sys.executable, "-c", FAISS_CORE], capture_output=True, text=True, check=True,
                          env={k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}).stdout.strip()
    if core == "none":
        pytest.skip("this faiss does not bundle its own OpenBLAS")
    assert core == "SkylakeX"
