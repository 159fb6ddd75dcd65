"""The number formats an encoder runs in: `auto`, `fp32`, `bf16`, `fp16` and `bf16-mixed`.

    precision = resolve_precision("auto", torch.device("cpu"))   # bf16-mixed on an AMX Xeon, fp32 on an AVX2 EPYC
    model.to(precision.weights)
    with precision.autocast(device):
        output = model(...)

`bf16` and `fp16` cast the weights, so every activation between layers is rounded too: on a GPU that is the fast
path. `bf16-mixed` keeps the weights and the activations between layers in fp32 and runs only the matrix products in
bf16 (torch.autocast; products accumulate in fp32). On a CPU with native bf16 (AMX, AVX512-BF16) the default
ensemble runs at 1.9x its fp32 speed with its fp32 vectors to a cosine of 0.9999 (one sentence in 16,192 at
0.99973), where pure bf16 puts 17 in 14,192 below that (docs/benchmarks.md, "The embed stage in bf16-mixed on a CPU
with native bf16"). A CPU without native bf16 emulates it, slower than fp32: `auto` gives it fp32.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from miner.blas import cpu_flags


@dataclass(frozen=True)
class Precision:
    """`weights`: the dtype the parameters are cast to; `compute`: autocast's dtype for matrix products, if mixed."""

    weights: torch.dtype
    compute: torch.dtype | None = None

    @property
    def name(self) -> str:
        """What describe() reports: `float32`, `bfloat16`, `float16` or `bfloat16-mixed`."""
        dtype = self.compute or self.weights
        return str(dtype).removeprefix("torch.") + ("-mixed" if self.compute else "")

    def autocast(self, device: torch.device, rows: int | None = None):
        """A context that runs the matrix products within in `compute`; nothing for a plain precision. `rows`: the
        fewest rows a product within multiplies (a batch's tokens); on a CPU, bf16 products of fewer rows than
        SMALL_PRODUCT_ROWS_PER_THREAD a thread run on one thread."""
        if self.compute is None:
            return contextlib.nullcontext()
        autocast = torch.autocast(device.type, dtype=self.compute)
        if device.type != "cpu" or rows is None or rows >= SMALL_PRODUCT_ROWS_PER_THREAD * torch.get_num_threads():
            return autocast
        stack = contextlib.ExitStack()
        stack.enter_context(one_intra_op_thread())
        stack.enter_context(autocast)
        return stack


# oneDNN's bf16 products split their inner dimension among threads when the rows are few, so their last bits follow
# the thread count (a Dask worker runs one thread, the DirectRunner's process as many as cores, and a job's bytes
# must not follow its runner): on a 2-core AMX Xeon, inner 512 by 37-191 rows (`bench/bf16_thread_determinism.py`),
# which a small language's chunk of 8 sentences meets in the teacher's input projection. Below this many rows a
# thread, such products run on one thread (few rows: no time lost); the bound grows with the threads because
# oneDNN splits the work to give each thread some.
SMALL_PRODUCT_ROWS_PER_THREAD = 128


@contextlib.contextmanager
def one_intra_op_thread():
    """torch's CPU operations on one intra-op thread within, the count restored after. The count is the calling
    thread's (OpenMP's, which torch's CPU builds use: measured, a count set in one thread leaves another's as it
    was), so replicas encoding from threads of their own (TransformerEncoder) each set and restore their own."""
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


PRECISIONS = {"fp32": Precision(torch.float32), "bf16": Precision(torch.bfloat16),
              "fp16": Precision(torch.float16), "bf16-mixed": Precision(torch.float32, torch.bfloat16)}


def cpu_has_native_bf16() -> bool:
    """AVX512-BF16 or AMX: bf16 matrix work is then about twice as fast as fp32 (measured: docs/benchmarks.md)."""
    return not cpu_flags().isdisjoint({"avx512_bf16", "amx_bf16"})


def resolve_precision(precision: str, device: torch.device) -> Precision:
    """`auto`: bf16 on GPUs that have it (else fp16), bf16-mixed on CPUs with native bf16, else fp32."""
    if precision == "auto":
        if device.type == "cuda":
            return PRECISIONS["bf16" if torch.cuda.is_bf16_supported() else "fp16"]
        return PRECISIONS["bf16-mixed" if device.type == "cpu" and cpu_has_native_bf16() else "fp32"]
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of auto, {', '.join(PRECISIONS)}")
    return PRECISIONS[precision]
