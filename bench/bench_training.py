r"""Training throughput and memory: our BR training step against sentence-transformers' MultipleNegativesRankingLoss
on the same model, batch and pairs, plus our CMLM and CMLM+BR steps; on a GPU, model FLOPs utilisation too.

    python -m training.prepare                 # data/train (the train pool only)
    python bench/bench_training.py             # the reference CPU recipe's model, 30 timed steps per run
    python bench/bench_training.py --recipe configs/train_reference_gpu.yaml --steps 50   # on a GPU machine

Each run is its own process (so peak RSS is its own), after 3 warm-up steps:
  - peer: sentence-transformers (our exported initial checkpoint loaded with `SentenceTransformer`), its
    MultipleNegativesRankingLoss (in-batch softmax, scale 20), torch AdamW, fp32, batch B pairs: the loop a user of
    that library writes (its Trainer adds data-loading overhead on top);
  - ours, BR, fp32 and at the recipe's precision (bf16 autocast where the CPU or GPU has it);
  - ours, CMLM and CMLM+BR at the recipe's precision.
tokens/s counts real (unpadded) tokens. MFU = 6 x non-embedding parameters x tokens/s / peak FLOP/s (GPU only; the
attention and MLM-head FLOPs are left out, so it is a lower bound; the peak is the card's dense bf16 figure from its
data sheet, 989 TFLOP/s for an H100 or H200 SXM). Results: bench/results/training.json.

`--runs` picks the contenders, e.g. the distilled student's GPU recipe (distillation and BR on one batch):
    python bench/bench_training.py --recipe configs/train_distill_gpu.yaml --steps 50 \
        --runs peer:br:fp32,ours:br:auto,ours:distill+br:auto
`--profile N` profiles N more steps of each of our runs: where a step's time goes (the device's busy time and
kernel count per step, the top device and host ops) and the host time to collate a step's batches. On a GPU:
    python bench/bench_training.py --recipe configs/train_distill_gpu.yaml --steps 30 --profile 5 \
        --runs ours:distill+br:auto --set model.init=null
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DENSE_BF16_PEAK = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L4": 121e12}  # data sheets, FLOP/s
DEFAULT_RUNS = "peer:br:fp32,ours:br:fp32,ours:br:auto,ours:cmlm:auto,ours:cmlm+br:auto"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load(recipe: Path, overrides: list[str]):
    from training.config import load_recipe
    from training.train import prepare_run
    from training.trainer import Distributed, Trainer

    config = load_recipe(recipe, overrides)
    tokenizer, data, model = prepare_run(config)
    return Trainer(config, data, tokenizer, model, Distributed.setup(config.run.device))


def run_ours(args) -> dict:
    from training.optim import build_optimizer

    objectives = args.objectives.split("+")
    overrides = [*args.set, f"run.precision={args.precision}", "output=/tmp/bench-training",
                 f"stages=[{{name: bench, objectives: [{', '.join(objectives)}], steps: {args.steps + 3}}}]"]
    trainer = load(args.recipe, overrides)
    if args.attention:  # the trainer picks eager on CPUs, sdpa on GPUs; a fourth field of --runs overrides it
        trainer.model.encoder.set_attn_implementation(args.attention)
    optimizer = build_optimizer(trainer.model, trainer.config.optimizer, 1e-4)
    for step in range(3):
        trainer._step(trainer.model, optimizer, objectives, 0, step)
    _sync(trainer.dist.device)
    tokens, start = 0, time.perf_counter()
    for step in range(3, 3 + args.steps):
        tokens += trainer._step(trainer.model, optimizer, objectives, 0, step)[1]
    _sync(trainer.dist.device)
    seconds = time.perf_counter() - start
    attention = trainer.model.encoder.config._attn_implementation
    result = _result(trainer, tokens, seconds, f"ours {args.objectives} {args.precision} {attention}")
    result["pairs_per_step"] = trainer.config.br.batch_size if "br" in objectives else None
    result["collate_ms_per_step"] = _collate_ms(trainer, objectives, args.steps)
    if args.profile:
        result["profile"] = _profile(trainer, optimizer, objectives, 3 + args.steps, args.profile)
    return result


def _collate_ms(trainer, objectives: list[str], steps: int) -> float:
    """Host time to draw and collate one step's batches (what the GPU waits for unless it overlaps)."""
    from training.batches import step_rng

    start = time.perf_counter()
    for step in range(steps):
        trainer.draw_batches(objectives, step_rng(trainer.config.seed, 0, 0, step))
    return 1000 * (time.perf_counter() - start) / steps


def _profile(trainer, optimizer, objectives: list[str], first: int, steps: int) -> dict:
    """`steps` training steps under torch.profiler: per step the wall time, the device's busy time (the sum of its
    kernels) and kernel count, and the ops that take the most device and host time: where a step's time goes."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = trainer.dist.device.type == "cuda"
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    _sync(trainer.dist.device)
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        for step in range(first, first + steps):
            trainer._step(trainer.model, optimizer, objectives, 0, step)
        _sync(trainer.dist.device)
        wall = time.perf_counter() - start
    events = prof.key_averages()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]

    def top(key: str, n: int = 12) -> list[dict]:
        ranked = sorted(events, key=lambda e: getattr(e, key), reverse=True)[:n]
        return [{"op": e.key[:80], "ms_per_step": getattr(e, key) / 1000 / steps, "calls_per_step": e.count / steps}
                for e in ranked if getattr(e, key) > 0]

    return {"steps": steps, "wall_ms_per_step": 1000 * wall / steps,
            "device_busy_ms_per_step": sum(k.device_time for k in kernels) / 1000 / steps if cuda else None,
            "kernels_per_step": len(kernels) / steps if cuda else None,
            "top_device_ops": top("self_device_time_total") if cuda else [],
            "top_host_ops": top("self_cpu_time_total")}


def run_peer(args) -> dict:
    """sentence-transformers' MNRL on the same pairs, the same initial weights and batch size, fp32."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    from training.batches import step_rng

    trainer = load(args.recipe, [*args.set, "output=/tmp/bench-training", "run.precision=fp32",
                                 "stages=[{name: bench, objectives: [br], steps: 10}]"])
    from encoders.model import save_encoder

    folder = save_encoder(trainer.model.encoder, trainer.tokenizer, Path("/tmp/bench-training-peer"),
                          max_seq_length=trainer.config.model.max_seq_length)
    device = trainer.dist.device
    model = SentenceTransformer(str(folder), device=str(device))
    model.train()
    loss_fn = MultipleNegativesRankingLoss(model, scale=trainer.config.br.scale)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sampler, tokenizer = trainer.samplers["br"], trainer.tokenizer

    def texts(picks, side):
        return [tokenizer.decode(getattr(sampler.bitext[g], side)[i], skip_special_tokens=True) for g, i in picks]

    batches = [sampler.draw(step_rng(0, 0, 0, step), trainer.config.br.batch_size) for step in range(3 + args.steps)]
    batches = [(texts(p, "src"), texts(p, "tgt")) for p in batches]  # decoding is set-up, not timed
    tokens, seconds = 0, 0.0
    for step, (src, tgt) in enumerate(batches):
        start = time.perf_counter()
        features = [{k: v.to(device) if hasattr(v, "to") else v for k, v in model.tokenize(side).items()}
                    for side in (src, tgt)]  # newer versions add non-tensor entries
        loss = loss_fn(features, None)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        _sync(device)
        if step >= 3:
            seconds += time.perf_counter() - start
            tokens += int(sum(f["attention_mask"].sum() for f in features))
    return _result(trainer, tokens, seconds, "sentence-transformers MNRL fp32")


def _result(trainer, tokens: int, seconds: float, name: str) -> dict:
    import torch

    encoder = trainer.model.encoder
    non_embedding = sum(p.numel() for n, p in encoder.named_parameters() if "embeddings" not in n)
    result = {"run": name, "tokens_per_s": tokens / seconds, "seconds": seconds, "tokens": tokens,
              "peak_rss_mib": peak_rss_mib(), "non_embedding_parameters": non_embedding}
    if trainer.dist.device.type == "cuda":
        card = torch.cuda.get_device_name(trainer.dist.device)
        peak = next((flops for key, flops in DENSE_BF16_PEAK.items() if key in card), None)
        result.update(gpu=card, peak_gpu_mib=torch.cuda.max_memory_allocated() / 2 ** 20)
        if peak:
            result["mfu"] = 6 * non_embedding * result["tokens_per_s"] / peak
    return result


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", type=Path, default=REPO / "configs" / "train_reference_cpu.yaml",
                        help="the recipe whose model and data are timed (default configs/train_reference_cpu.yaml)")
    parser.add_argument("--steps", type=int, default=30, help="steps timed, after 3 of warm-up (default 30)")
    parser.add_argument("--set", action="append", default=[
        "data.documents=['../data/train/documents/deu_Latn.txt.gz','../data/train/documents/eng_Latn.txt.gz']",
        "data.bitext=['../data/train/bitext/deu_Latn-eng_Latn.tsv.gz']", "data.heldout=[]"],
        help="a recipe override (repeatable; the default reads German and English only)")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one contender in this process
    parser.add_argument("--objectives", default="br", help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--attention", help=argparse.SUPPRESS)
    parser.add_argument("--runs", default=DEFAULT_RUNS,
                        help="contenders, comma-separated who:objectives:precision[:attention] (who: peer or ours; "
                        "attention: eager or sdpa, else the trainer's choice)")
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "training.json",
                        help="the results' JSON")
    parser.add_argument("--profile", type=int, default=0, metavar="STEPS",
                        help="also profile this many steps of each of our runs (torch.profiler): device busy time "
                        "and kernels per step, the top ops")
    args = parser.parse_args()
    args.set = [s.replace("'../data", f"'{REPO}/data") for s in args.set]
    if args.one:
        print(json.dumps(run_peer(args) if args.one == "peer" else run_ours(args)))
        return
    runs = [(*run.split(":"), "")[:4] for run in args.runs.split(",")]
    results = []
    for one, objectives, precision, attention in runs:
        command = [sys.executable, __file__, "--one", one, "--objectives", objectives, "--precision", precision,
                   *(["--attention", attention] if attention else []),
                   "--recipe", str(args.recipe), "--steps", str(args.steps), "--profile", str(args.profile),
                   *[f"--set={s}" for s in args.set]]
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        results.append(json.loads(output.strip().splitlines()[-1]))
        print(json.dumps(results[-1]), flush=True)
    peer = next((r["tokens_per_s"] for (who, *_), r in zip(runs, results) if who == "peer"), None)
    for (who, objectives, *_), result in zip(runs, results):
        result["steps_per_s"] = args.steps / result["seconds"]
        if peer and who == "ours" and objectives == "br":
            result["vs_peer"] = result["tokens_per_s"] / peer
    report = {"machine": f"{platform.processor() or platform.machine()}, {__import__('os').cpu_count()} cores",
              "recipe": str(args.recipe), "steps": args.steps, "results": results}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for r in results:
        extra = f" ({r['vs_peer']:.2f}x the peer)" if "vs_peer" in r else ""
        print(f"{r['run']:<36} {r['tokens_per_s']:>9.0f} tokens/s{extra}  peak RSS {r['peak_rss_mib']:.0f} MiB"
              + (f"  GPU {r['peak_gpu_mib']:.0f} MiB  MFU {100 * r['mfu']:.1f}%" if "mfu" in r else ""))
        if "profile" in r:
            p = r["profile"]
            busy = (f", device busy {p['device_busy_ms_per_step']:.1f} ms in {p['kernels_per_step']:.0f} kernels"
                    if p["device_busy_ms_per_step"] is not None else "")
            print(f"    a step: {p['wall_ms_per_step']:.1f} ms wall{busy}; collating its batches "
                  f"{r['collate_ms_per_step']:.1f} ms")
            for where in ("top_device_ops", "top_host_ops"):
                for op in p[where][:8]:
                    print(f"    {where[4:-4]:>6} {op['ms_per_step']:8.2f} ms/step "
                          f"{op['calls_per_step']:6.0f} calls  {op['op']}")


if __name__ == "__main__":
    main()
