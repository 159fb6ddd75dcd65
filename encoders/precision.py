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

    def autocast(self, device: torch.device):
        """A context that runs the matrix products within in `compute`; nothing for a plain precision."""
        if self.compute is None:
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=self.compute)


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
