"""Whether bf16 matrix products on this CPU give the same bits on one torch thread and on two, by product shape.

    python bench/bf16_thread_determinism.py            # rows 1..300 and a few larger, the encoders' product shapes
    python bench/bf16_thread_determinism.py --threads 16 --max-rows 2500     # one thread against 16

The embed stage's bytes must not follow its runner (a Dask worker runs one torch thread, the DirectRunner's
process as many as cores). Under `bf16-mixed` (the CPU default where the CPU has native bf16, encoders/precision.py)
the matrix products run in oneDNN's bf16 kernels, whose split of the work can follow the thread count. This prints,
for each product shape the default ensemble uses, the row counts at which one thread and `--threads` disagree, and
whether they all lie under the rows below which the encoders run a batch on one thread
(encoders/precision.py: SMALL_PRODUCT_ROWS_PER_THREAD a thread), the bound measured on 2 cores and assumed to grow
with the threads. On a CPU without native bf16 the products are emulated (and the default is fp32): nothing to see.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from encoders.precision import SMALL_PRODUCT_ROWS_PER_THREAD  # noqa: E402

# (inner, outer) dimensions of the default ensemble's token-level products: the teacher's input projection and
# convolutions, the student's attention projections and feed-forward layers
SHAPES = {"teacher projection 512x768": (512, 768), "teacher convolution 256x512": (256, 512),
          "student attention 256x256": (256, 256), "student feed-forward in 256x512": (256, 512),
          "student feed-forward out 512x256": (512, 256)}


def disagreeing_rows(inner: int, outer: int, rows: list[int], threads: int) -> list[int]:
    weight = torch.randn(inner, outer, generator=torch.Generator().manual_seed(0))
    found = []
    for m in rows:
        inputs = torch.randn(m, inner, generator=torch.Generator().manual_seed(m))
        out = {}
        for count in (1, threads):
            torch.set_num_threads(count)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out[count] = (inputs @ weight).float().numpy()
        if not np.array_equal(out[1], out[threads]):
            found.append(m)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-rows", type=int, default=300,
                        help="row counts 1 to this are tried, then 512 to 4096 (default 300)")
    parser.add_argument("--threads", type=int, default=2, help="the count compared with one thread (default 2)")
    args = parser.parse_args()
    rows = list(range(1, args.max_rows + 1)) + [512, 1024, 2048, 4096]
    threads = torch.get_num_threads()
    try:
        result = {name: disagreeing_rows(*shape, rows, args.threads) for name, shape in SHAPES.items()}
    finally:
        torch.set_num_threads(threads)
    bound = SMALL_PRODUCT_ROWS_PER_THREAD * args.threads
    print(json.dumps({"torch": torch.__version__, "rows tried": f"1..{args.max_rows}, 512, 1024, 2048, 4096",
                      f"rows where one and {args.threads} threads disagree": result,
                      "rows under which a batch runs on one thread": bound,
                      "all under it": all(m < bound for found in result.values() for m in found)}, indent=1))


if __name__ == "__main__":
    main()
