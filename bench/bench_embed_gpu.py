"""Where an encoder's time goes: tokenising, the forward passes, and encode() as the embed stage calls it.

    python bench/bench_embed_gpu.py --sentences-file S --device cuda --output $OUT/embed_gpu.json   # a lent GPU
    python bench/bench_embed_gpu.py --per-language 100 --device cpu                                # a quick look

For each encoder (the student `models/cmlm-distilled`, the teacher `use-multilingual`, the default ensemble
`models/cmlm-ensemble` without a language, so both members run); all but the first figure are the best of
`--repeats` after a warm-up call over all sentences (every batch shape seen once):
  - first_call: one `encode()` over every sentence after a warm-up on 200 only (bench_use.py's protocol: the
    batch shapes not seen yet cost their first run);
  - encode_all: one `encode()` over every sentence (wall and process CPU seconds);
  - encode_chunks_N: `encode()` in chunks of N sentences (`--chunks`), as the embed stage's RunInference calls it
    (`embed.batch_size`, default 1024);
  - member_i (the ensemble): each member's own `encode()`;
  - tokenise: the encoder's tokenizer over every sentence; forward: the batches' forward passes alone, from
    token ids already made (transformer checkpoints and the teacher);
  - for the student, `--variants` with other batch settings (token_budget:batch_size), and the least cosine of
    their vectors to the default settings' vectors.
The student's model FLOPs utilisation: 2 x its parameters outside the embeddings x real (unpadded) tokens per
second of the forward passes, over `--peak-tflops` (989: the H100 / H200 dense bf16 figure). `--profile` prints
torch's profiler table (CPU and CUDA time by operator) for one student encode. Sentences: a file, one a line, or
the FLORES devtest of the teacher's 16 languages interleaved (bench_use.py's; dev pool: measuring only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

SPECS = {"student": REPO / "models" / "cmlm-distilled", "teacher": "use-multilingual",
         "ensemble": REPO / "models" / "cmlm-ensemble"}


def timed(call, repeats: int) -> dict:
    """Best wall time of `repeats` calls, with the CPU time of that call (after synchronising any GPU)."""
    import torch

    best = None
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        call()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if best is None or wall < best["wall_s"]:
            best = {"wall_s": round(wall, 4), "cpu_s": round(cpu, 4)}
    return best


def token_ids(encoder, texts: list[str]) -> list[list[int]]:
    if hasattr(encoder, "tokenizer") and hasattr(encoder.tokenizer, "encode_batch"):
        return [e.ids for e in encoder.tokenizer.encode_batch(texts)]
    return encoder.tokenize(texts)[0]


def forward_all(encoder, ids: list[list[int]]) -> None:
    from encoders.batching import token_budget_batches

    batches = token_budget_batches([len(row) for row in ids], encoder.token_budget, encoder.batch_size)
    if hasattr(encoder, "replicas"):
        for batch in batches:
            encoder._forward(encoder.replicas[0], [ids[i] for i in batch])
    else:
        import torch

        with torch.inference_mode():
            for batch in batches:
                encoder._forward([ids[i] for i in batch])


def non_embedding_parameters(encoder) -> int:
    model = encoder.replicas[0].model
    return sum(p.numel() for name, p in model.named_parameters() if "embeddings" not in name)


def measure(name: str, encoder, texts: list[str], args) -> dict:
    encoder.encode(texts[:200])  # bench_use.py's warm-up: most batch shapes not yet seen
    result = {"first_call": timed(lambda: encoder.encode(texts), 1)}
    vectors = encoder.encode(texts)
    result["encode_all"] = timed(lambda: encoder.encode(texts), args.repeats)
    for size in args.chunks:
        chunks = [texts[i:i + size] for i in range(0, len(texts), size)]
        result[f"encode_chunks_{size}"] = timed(lambda: [encoder.encode(c) for c in chunks], args.repeats)
    if name == "ensemble":
        for i, _ in enumerate(encoder.spec["members"]):
            result[f"member_{i}"] = timed(lambda: encoder.member(i).encode(texts), args.repeats)
    else:
        ids = token_ids(encoder, texts)
        result["tokenise"] = timed(lambda: token_ids(encoder, texts), args.repeats)
        result["forward"] = timed(lambda: forward_all(encoder, ids), args.repeats)
        result["tokens_per_sentence"] = round(sum(map(len, ids)) / len(ids), 2)
        if name == "student":
            tokens_per_s = sum(map(len, ids)) / result["forward"]["wall_s"]
            params = non_embedding_parameters(encoder)
            result["non_embedding_parameters"] = params
            result["mfu_forward"] = round(2 * params * tokens_per_s / (args.peak_tflops * 1e12), 6)
    for key, value in result.items():
        if isinstance(value, dict):
            value["sentences_per_s"] = round(len(texts) / value["wall_s"], 1)
    return result, vectors


def profile_table(encoder, texts: list[str]) -> str:
    import torch

    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profile:
        encoder.encode(texts)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    averages = profile.key_averages()
    tables = [averages.table(sort_by="self_cpu_time_total", row_limit=18)]
    if torch.cuda.is_available():
        tables.append(averages.table(sort_by="self_cuda_time_total", row_limit=12))
    return "\n".join(tables)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences-file", type=Path,
                        help="sentences to encode, one a line (default: FLORES devtest of the teacher's 16 languages)")
    parser.add_argument("--per-language", type=int, default=1012,
                        help="without --sentences-file: FLORES sentences a language (default 1012, all of devtest)")
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto (cuda where there is one)")
    parser.add_argument("--encoders", nargs="+", default=["student", "teacher", "ensemble"], choices=sorted(SPECS),
                        help="which to measure (default: all three)")
    parser.add_argument("--chunks", type=int, nargs="+", default=[1024],
                        help="sentences per encode() call, as embed.batch_size")
    parser.add_argument("--variants", nargs="*", default=[], help="student batch settings TOKENS:SENTENCES")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each figure, the best reported")
    parser.add_argument("--peak-tflops", type=float, default=989.0,
                        help="the device's dense bf16 peak for the student's MFU (default 989: H100 / H200)")
    parser.add_argument("--profile", action="store_true",
                        help="print torch's profiler table for one student encode()")
    parser.add_argument("--no-cudnn-attention", action="store_true",
                        help="torch.backends.cuda.enable_cudnn_sdp(False): torch's own attention kernels instead")
    parser.add_argument("--output", type=Path, help="write the figures there as JSON (default: print only)")
    args = parser.parse_args()

    import torch

    from encoders import load_encoder

    if args.no_cudnn_attention:
        torch.backends.cuda.enable_cudnn_sdp(False)
    from bench_use import read_sentences

    texts = read_sentences(args)  # the file's lines, or FLORES of the teacher's 16 languages interleaved
    report = {"sentences": len(texts), "device": args.device,
              "machine": {"cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
                          "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
                          "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}}
    for name in args.encoders:
        encoder = load_encoder(str(SPECS[name]), device=args.device)
        report[name], vectors = measure(name, encoder, texts, args)
        print(name, json.dumps(report[name]), flush=True)
        if name == "student":
            for variant in args.variants:
                budget, size = (int(x) for x in variant.split(":"))
                other = load_encoder(str(SPECS[name]), device=args.device, token_budget=budget, batch_size=size)
                key = f"student@{variant}"
                report[key], others = measure(name, other, texts, args)
                report[key]["min_cosine_to_default"] = float((others * vectors).sum(axis=1).min())
                print(key, json.dumps(report[key]), flush=True)
            if args.profile:
                print(profile_table(encoder, texts), flush=True)
    if args.output:
        args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    try:
        main()
    except ValueError as err:  # a device or setting the machine cannot give (--device cuda without a GPU)
        raise SystemExit(f"error: {err}") from None
