"""One encoder at several precisions, timed in turns in one process: what a number format buys on this CPU.

    taskset -c 1 python bench/bench_precision.py                                  # the default ensemble, fp32 vs
                                                                                  # bf16-mixed vs bf16
    python bench/bench_precision.py --encoder use-multilingual --precisions fp32 bf16-mixed

Sentences: the FLORES-200 devtest files (dev pool: measuring only) of the teacher's 16 languages, interleaved, as
bench/bench_use.py reads them. Every precision is loaded in this one process and warmed up on the first
`--warm-up` sentences (a worker that has seen its sentences' shapes: oneDNN, which runs bf16 products on CPUs,
builds a kernel for each new shape). The rest is cut into chunks of 1,024 and every chunk is embedded by each
precision in turn, the order reversed on every other chunk, so that a machine whose speed drifts during the run
(a shared VM's does by 30%: docs/benchmarks.md) slows every contender alike. Reported per precision: sentences per
CPU-second (user + system time of the process around its calls), the ratio to the first precision's, the range of
that ratio over chunks, and its vectors' cosine to the first precision's (min, mean, and how many below 0.9999).
One thread (`--threads`). Results go to bench/results/precision.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default="models/cmlm-ensemble", help="any spec load_encoder takes; folders "
                        "relative to the repository")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16-mixed", "bf16"],
                        help="the precisions compared, the first the reference (default fp32 bf16-mixed bf16)")
    parser.add_argument("--per-language", type=int, default=1012,
                        help="FLORES devtest sentences a language (default 1012, all of it)")
    parser.add_argument("--warm-up", type=int, default=8000,
                        help="sentences each precision embeds before timing (default 8000)")
    parser.add_argument("--chunk", type=int, default=1024, help="sentences a timed turn (default 1024)")
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads (default 1)")
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "precision.json",
                        help="the results' JSON")
    args = parser.parse_args()
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(args.threads)

    import numpy as np
    import torch

    from bench.bench_use import sentences
    from encoders import load_encoder
    from encoders.precision import cpu_has_native_bf16

    torch.set_num_threads(args.threads)
    texts = sentences(args.per_language)
    warm_up, timed = texts[: args.warm_up], texts[args.warm_up:]
    spec = str(REPO / args.encoder) if (REPO / args.encoder).exists() else args.encoder
    encoders = {p: load_encoder(spec, device="cpu", precision=p) for p in args.precisions}
    for encoder in encoders.values():
        encoder.encode(warm_up)
    cpu = {p: [] for p in encoders}
    vectors = {p: [] for p in encoders}
    chunks = [timed[i: i + args.chunk] for i in range(0, len(timed), args.chunk)]
    for n, chunk in enumerate(chunks):
        for precision in (args.precisions if n % 2 == 0 else args.precisions[::-1]):
            start = time.process_time()
            vectors[precision].append(encoders[precision].encode(chunk))
            cpu[precision].append(time.process_time() - start)
        print(f"chunk {n + 1}/{len(chunks)}: " + ", ".join(
            f"{p} {sum(map(len, chunks[:n + 1])) / sum(cpu[p]):.0f}" for p in args.precisions) + " sentences/CPU-s",
            flush=True)
    first = args.precisions[0]
    reference = np.concatenate(vectors[first])
    report = {"encoder": args.encoder, "sentences": len(timed), "warm_up": len(warm_up), "threads": args.threads,
              "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                          "native_bf16": cpu_has_native_bf16(),
                          "python": platform.python_version(), "torch": torch.__version__}}
    for precision in args.precisions:
        cosine = (np.concatenate(vectors[precision]) * reference).sum(1)
        per_chunk = np.array(cpu[first]) / np.array(cpu[precision])
        report[precision] = {
            "describe_precision": _described(encoders[precision]),
            "sentences_per_cpu_s": len(timed) / sum(cpu[precision]),
            f"speedup_over_{first}": sum(cpu[first]) / sum(cpu[precision]),
            "speedup_range_over_chunks": [float(per_chunk.min()), float(per_chunk.max())],
            f"cosine_to_{first}": {"min": float(cosine.min()), "mean": float(cosine.mean()),
                                   "below_0.9999": int((cosine < 0.9999).sum())}}
        r = report[precision]
        print(f"{precision:12s} {r['sentences_per_cpu_s']:7.0f} sentences/CPU-s  {r[f'speedup_over_{first}']:.2f}x "
              f"(chunks {per_chunk.min():.2f}-{per_chunk.max():.2f})  cosine to {first}: min {cosine.min():.6f} "
              f"mean {cosine.mean():.7f}, {int((cosine < 0.9999).sum())} of {len(timed)} below 0.9999")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def _described(encoder) -> str | list[str]:
    if hasattr(encoder, "member"):  # an ensemble: each member's precision (all ran, so all are loaded)
        return [encoder.member(i).describe()["precision"] for i in range(len(encoder.dims))]
    return encoder.describe()["precision"]


if __name__ == "__main__":
    main()
