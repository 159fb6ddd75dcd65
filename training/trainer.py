"""The training loop: stages in order, each with its objectives, optimiser and warm-up/decay schedule.

Per optimiser step: `accumulation` micro-batches per objective, drawn from (seed, rank, stage, step, micro);
forward under bf16 autocast on GPU; gradients clipped; one optimiser and schedule step. Every `log_every` steps a
line goes to <output>/train_log.jsonl (loss, MLM accuracy, BR in-batch accuracy, learning rate, tokens/s) and to
the log; every `eval_every` steps the held-out pairs are embedded and their xsim error logged; every
`checkpoint_every` steps (and at the end of each stage) a checkpoint is written. Under torchrun each rank draws its
own batches and DistributedDataParallel averages the gradients; rank 0 alone writes.
At the end the encoder is exported to <output>/encoder, a checkpoint folder every command of the project loads.
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from miner.io import atomic_output
from training import checkpoints
from training.batches import (
    BitextSampler,
    CmlmSampler,
    DistillSampler,
    NliSampler,
    SpecialTokens,
    batch_tokens,
    pad,
    step_rng,
)
from training.checkpoints import Position
from training.config import TrainConfig, as_dict
from training.optim import build_optimizer, build_schedule

log = logging.getLogger("training")


def _logged_step(line: str) -> float:
    """A log line's global step; a line a killed run left half-written counts as past every step (dropped)."""
    try:
        return json.loads(line).get("global_step", 0)
    except (json.JSONDecodeError, AttributeError):
        return math.inf


class TrainingDiverged(FloatingPointError, ValueError):
    """A loss went non-finite: the settings' doing (a learning rate too high, bad inputs), so the command ends with
    `error: ...` and exit status 2 (a ValueError to miner.console.exit_status), not a traceback."""


@dataclass
class Distributed:
    rank: int = 0
    world_size: int = 1
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @property
    def main(self) -> bool:
        return self.rank == 0

    @classmethod
    def setup(cls, device: str) -> Distributed:
        """torchrun sets WORLD_SIZE/RANK/LOCAL_RANK: join the group (NCCL on GPUs, gloo on CPUs)."""
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        cuda = torch.cuda.is_available() and device in ("auto", "cuda") or device.startswith("cuda")
        if cuda and not torch.cuda.is_available():
            raise ValueError(f"run.device {device}: torch sees no GPU on this machine (leave it auto: the CPU here)")
        if cuda:
            chosen = torch.device(device if device.startswith("cuda:") and world_size == 1 else f"cuda:{local_rank}")
            torch.cuda.set_device(chosen)
        else:
            chosen = torch.device("cpu")
        # said either way: a GPU recipe (batches of 1,024, a BERT-base) left at `auto` on a machine without a GPU
        # trained on the CPU without a word, a step a minute, or was killed for memory
        log.info("training on %s%s", chosen, " (run.device auto: torch sees no GPU)" if device == "auto" and not cuda
                 else "")
        if world_size > 1 and not torch.distributed.is_initialized():
            torch.distributed.init_process_group("nccl" if cuda else "gloo")
        return cls(int(os.environ.get("RANK", "0")), world_size, chosen)


def autocast(config: TrainConfig, device: torch.device):
    """bf16 autocast on GPU, and on CPUs with native bf16 (AVX512-BF16/AMX: 1.6x faster training measured on the
    reference recipe); fp32 elsewhere. Weights, optimiser state and the pooled vectors stay fp32."""
    from encoders.precision import cpu_has_native_bf16

    precision = config.run.precision
    if precision == "auto":
        precision = "bf16" if device.type == "cuda" or cpu_has_native_bf16() else "fp32"
    return torch.autocast(device.type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()


def to_device(batch: dict, device: torch.device) -> dict:
    """To the GPU from pinned memory, so the copy does not make the host wait for the GPU's queue to drain (a copy
    from pageable memory does): the host collates the next batch while this step's kernels run."""
    if device.type != "cuda":
        return dict(batch)
    return {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}


class Trainer:
    def __init__(self, config: TrainConfig, data, tokenizer, model, dist: Distributed | None = None):
        self.config, self.data, self.tokenizer = config, data, tokenizer
        self.dist = dist or Distributed()
        self.model = model.to(self.dist.device)
        if self.dist.device.type == "cpu" and any(p.requires_grad for p in model.encoder.parameters()):
            # torch's CPU flash-attention backward took 35% of a distillation step (bench/bench_training.py
            # --profile); the plain attention product trains 1.1-1.5x faster there (docs/benchmarks.md)
            model.encoder.set_attn_implementation("eager")
        self.output = Path(config.output)
        self.recipe = as_dict(config)
        special = SpecialTokens.of(tokenizer)
        self.special = special
        self.samplers = {}
        if data.documents:
            self.samplers["cmlm"] = CmlmSampler(data.documents, config.data.language_alpha, special,
                                                config.cmlm.mask_rate, config.cmlm.swap_rate)
        if data.bitext:
            self.samplers["br"] = BitextSampler(data.bitext, config.data.language_alpha, special)
        if data.nli:
            self.samplers["nli"] = NliSampler(*data.nli, special)
        if data.teacher is not None:
            self.samplers["distill"] = self._distill_sampler(data, special)
        self.batch_sizes = {"cmlm": config.cmlm.batch_size, "br": config.br.batch_size, "nli": config.nli.batch_size,
                            "distill": config.distill.batch_size}
        self.hard_negatives = None
        self.history: list[dict] = []  # every logged line, for callers and tests
        limit = config.run.time_limit_minutes
        self.deadline = time.monotonic() + 60 * limit if limit else None
        self.stopped_early = False
        self.interrupted = False  # Ctrl-C came in: stop after the step under way (_first_interrupt_stops_cleanly)

    # -- the run ---------------------------------------------------------------------------------------------

    def run(self, resume: Path | None = None, fit_output: bool = False) -> Path | None:
        """`fit_output`: the output layer is new, so fit it to the teacher before the first step (fresh runs)."""
        position = self._resume(resume) if resume else Position()
        if fit_output and not resume and "distill" in self.samplers and self.config.distill.init_pairs:
            self._fit_output_layer()
        if self.model.lens is not None and not resume:
            self._fit_lens_inputs()
        if self.dist.main:
            self.output.mkdir(parents=True, exist_ok=True)
            (self.output / "recipe.json").write_text(json.dumps(self.recipe, indent=2) + "\n", encoding="utf-8")
            self._log_up_to(position.global_step)
        with self._first_interrupt_stops_cleanly():
            for index in range(position.stage, len(self.config.stages)):
                start = position.step if index == position.stage else 0
                position = self._run_stage(index, start, position.global_step, resume if index == position.stage
                                           else None)
                resume = None
                if self.stopped_early:
                    break
        folder = self.export() if self.dist.main else None
        if self.interrupted:  # stopped cleanly, checkpointed and exported: now say so, as an interruption
            raise KeyboardInterrupt(f"stopped after the step Ctrl-C came in: checkpoint saved, encoder exported to "
                                    f"{folder}; --resume continues the schedule")
        return folder

    @contextmanager
    def _first_interrupt_stops_cleanly(self):
        """Ctrl-C once: the run stops after the step under way, as at run.time_limit_minutes (a checkpoint, the
        encoder exported), so nothing of the schedule is lost and --resume goes on bit for bit; Ctrl-C twice: at
        once. One process only (under torchrun every rank must stop at the same step), and the main thread only
        (where Python delivers signals)."""
        if self.dist.world_size > 1 or threading.current_thread() is not threading.main_thread():
            yield
            return

        def stop_after_this_step(signum, frame):
            self.interrupted = True
            signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C stops at once
            log.warning("Ctrl-C: stopping after this step with a checkpoint (Ctrl-C again to stop at once)")

        previous = signal.signal(signal.SIGINT, stop_after_this_step)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _resume(self, folder: Path) -> Position:
        position, saved = checkpoints.read_state(folder)
        differences = checkpoints.recipe_differences(saved, self.recipe)
        if differences:
            raise ValueError(f"{folder}: the recipe changed since this checkpoint ({', '.join(differences)}); "
                             f"resume with the recipe it was written with, or start a new output")
        checkpoints.load_model(folder, self.model)
        log.info("resuming from %s: stage %d (%s), step %d", folder, position.stage,
                 self.config.stages[position.stage].name if position.stage < len(self.config.stages) else "-",
                 position.step)
        return position

    def _run_stage(self, index: int, start: int, global_step: int, resume: Path | None) -> Position:
        stage = self.config.stages[index]
        lr = stage.lr if stage.lr is not None else self.config.optimizer.lr
        warmup = stage.warmup_steps if stage.warmup_steps is not None else self.config.optimizer.warmup_steps
        optimizer = build_optimizer(self.model, self.config.optimizer, lr)
        schedule = build_schedule(optimizer, warmup, stage.steps)
        if resume is not None and start > 0:
            checkpoints.load_optimizer(resume, optimizer, schedule)
        network = self._wrap(stage.objectives)
        if self.dist.main:
            log.info("stage %d/%d %s: %s for %d steps (from step %d), peak lr %g", index + 1,
                     len(self.config.stages), stage.name, "+".join(stage.objectives), stage.steps, start, lr)
        bar = self._progress(stage, start)
        window = {"tokens": 0, "time": time.perf_counter(), "values": {}}
        position = Position(index, start, global_step)
        for step in range(start, stage.steps):
            if "br" in stage.objectives and self.config.br.hard_negatives:
                self._refresh_hard_negatives(index, step)
            values, tokens = self._step(network, optimizer, stage.objectives, index, step)
            schedule.step()
            position = Position(index, step + 1, position.global_step + 1)
            window["tokens"] += tokens
            for key, value in values.items():
                window["values"].setdefault(key, []).append(value)
            bar.update(1)
            self._after_step(position, stage, optimizer, schedule, window, bar)
            if self._out_of_time() and position.step < stage.steps:
                self._check_finite(window, stage, position)
                return self._stop_early(position, stage, optimizer, schedule, bar)
        bar.close()
        if self.dist.main:
            checkpoints.save(self.output, self.model, optimizer, schedule, Position(index + 1, 0,
                             position.global_step), self.recipe, self.config.run.keep_checkpoints)
        return Position(index + 1, 0, position.global_step)

    def _out_of_time(self) -> bool:
        if self.interrupted:  # one process only (_first_interrupt_stops_cleanly): no collective needed
            return True
        if self.deadline is None:  # every rank reads the same config: none has a deadline, no collective needed
            return False
        late = time.monotonic() > self.deadline
        if self.dist.world_size > 1:  # every rank stops at the same step, or the next all-reduce hangs
            flag = torch.tensor([float(late)], device=self.dist.device)
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            late = bool(flag.item())
        return late

    def _stop_early(self, position: Position, stage, optimizer, schedule, bar) -> Position:
        """run.time_limit_minutes is up: checkpoint where we are; the caller exports; --resume goes on from here."""
        bar.close()
        self.stopped_early = True
        if self.dist.main:
            checkpoints.save(self.output, self.model, optimizer, schedule, position, self.recipe,
                             self.config.run.keep_checkpoints)
            why = "Ctrl-C" if self.interrupted else "run.time_limit_minutes reached"
            log.warning("%s at stage %s step %d of %d: checkpoint saved and the encoder exported as it is; --resume "
                        "continues the schedule", why, stage.name, position.step, stage.steps)
        return position

    def _wrap(self, objectives: list[str]):
        if self.dist.world_size == 1:
            return self.model
        from torch.nn.parallel import DistributedDataParallel

        # heads an objective leaves unused (the projection in a BR-only stage) must not stall the all-reduce
        return DistributedDataParallel(self.model, device_ids=[self.dist.device] if self.dist.device.type == "cuda"
                                       else None, find_unused_parameters=set(objectives) != {"cmlm", "br"})

    def _step(self, network, optimizer, objectives: list[str], stage: int, step: int):
        self.model.train()
        accumulation = self.config.optimizer.accumulation
        totals: dict[str, float] = {}
        tokens = 0
        for micro in range(accumulation):
            rng = step_rng(self.config.seed, self.dist.rank, stage, step, micro)
            torch.manual_seed(int(rng.integers(2 ** 62)))  # dropout: part of the step's seeded randomness
            batches = self.draw_batches(objectives, rng)
            distinct = {id(b): b for b in batches.values()}  # a shared batch counts and moves once
            tokens += sum(batch_tokens(b) for b in distinct.values())
            moved = {key: to_device(b, self.dist.device) for key, b in distinct.items()}
            batches = {name: moved[id(b)] for name, b in batches.items()}
            sync = micro == accumulation - 1 or self.dist.world_size == 1
            with (nullcontext() if sync else network.no_sync()), autocast(self.config, self.dist.device):
                out = network(batches, br_margin=self.config.br.margin, br_alpha=self.config.br.alpha,
                              distill_weight=self.config.distill.weight,
                              contrast_weight=self.config.distill.contrast_weight,
                              contrast_scale=self.config.distill.contrast_scale)
            (out["loss"] / accumulation).backward()
            for key, value in out.items():  # kept on the device: reading a value would wait for the GPU every step
                totals[key] = totals.get(key, 0.0) + value.detach().float() / accumulation
        if self.config.optimizer.grad_clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.optimizer.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return totals, tokens * self.dist.world_size

    def _check_finite(self, window: dict, stage, position: Position) -> dict[str, torch.Tensor]:
        """The logged window's losses are read (once per log line, and before every checkpoint, so no checkpoint
        holds weights a non-finite step moved): a non-finite one stops the run. Returns them, stacked per key."""
        if not window["values"]:
            return {}
        steps = len(next(iter(window["values"].values())))
        values = {key: torch.stack(v) for key, v in window["values"].items()}
        bad = {key: int((~torch.isfinite(v)).sum()) for key, v in values.items()}
        if any(bad.values()):
            first = position.step - steps + 1
            raise TrainingDiverged(f"stage {stage.name} steps {first}-{position.step}: non-finite loss "
                                     f"({', '.join(f'{k}: {n} steps' for k, n in bad.items() if n)}); lower the "
                                     f"learning rate or check the inputs")
        return values

    def draw_batches(self, objectives: list[str], rng: np.random.Generator) -> dict:
        """One micro-step's batch per objective, on the host; BR and distillation share one where they can."""
        shared = self._br_ranks_distill_batch(objectives)
        batches = {name: self._batch(name, rng) for name in objectives if not (shared and name == "br")}
        if shared:
            batches["br"] = batches["distill"]  # BR ranks the distillation batch's pairs: one forward pass
        return batches

    def _distill_sampler(self, data, special: SpecialTokens) -> DistillSampler:
        distill = self.config.distill
        contrast = distill.contrast_weight > 0
        neighbours = None
        if contrast and distill.contrast_hard:
            from training.hard_negatives import teacher_neighbours

            neighbours = teacher_neighbours(data.teacher, distill.contrast_hard, self.dist.device)
        return DistillSampler(data.bitext, self.config.data.language_alpha, special, data.teacher,
                              distill.contrast_bank if contrast else 0, neighbours, distill.contrast_same)

    def _br_ranks_distill_batch(self, objectives: list[str]) -> bool:
        """A stage training BR beside distillation ranks the distillation batch (unless hard negatives give BR
        batches of their own, or the two batch sizes differ)."""
        return ({"br", "distill"} <= set(objectives) and not self.config.br.hard_negatives
                and self.config.distill.batch_size == self.config.br.batch_size)

    def _batch(self, name: str, rng: np.random.Generator) -> dict:
        if name == "br" and self.hard_negatives is not None:
            return self.hard_negatives.batch(rng, self.batch_sizes["br"])
        return self.samplers[name].batch(rng, self.batch_sizes[name])

    def _after_step(self, position: Position, stage, optimizer, schedule, window: dict, bar) -> None:
        run = self.config.run
        if position.step % run.log_every == 0 or position.step == stage.steps:
            self._log(position, stage, optimizer, window, bar)
        elif run.checkpoint_every and position.step % run.checkpoint_every == 0:
            self._check_finite(window, stage, position)
        if run.eval_every and self.data.heldout and position.step % run.eval_every == 0 and self.dist.main:
            self._log_line({"global_step": position.global_step, "stage": stage.name, **self.evaluate()})
        if run.checkpoint_every and position.step % run.checkpoint_every == 0 and position.step < stage.steps \
                and self.dist.main:
            checkpoints.save(self.output, self.model, optimizer, schedule, position, self.recipe,
                             run.keep_checkpoints)

    def _log(self, position: Position, stage, optimizer, window: dict, bar) -> None:
        values = self._check_finite(window, stage, position)
        elapsed = time.perf_counter() - window["time"]
        line = {"global_step": position.global_step, "stage": stage.name, "step": position.step,
                **{k: float(v.mean()) for k, v in values.items()},
                "lr": optimizer.param_groups[0]["lr"], "tokens_per_s": window["tokens"] / max(elapsed, 1e-9)}
        window.update(tokens=0, time=time.perf_counter(), values={})
        if self.dist.main:
            bar.set_postfix({k: f"{line[k]:.3g}" for k in ("loss", "mlm_accuracy", "br_accuracy", "teacher_cosine")
                             if k in line})
            self._log_line(line)

    def _log_up_to(self, global_step: int) -> None:
        """Keep the log's lines of the steps this run starts after (none for a fresh run): a run stopped after its
        last checkpoint logged steps the resumed run takes again, and a fresh run's log began after a dead one's."""
        path = self.output / "train_log.jsonl"
        if not path.exists():
            return
        kept = [line for line in path.read_text(encoding="utf-8").splitlines() if _logged_step(line) <= global_step]
        with atomic_output(path, "w") as handle:
            handle.write("".join(f"{line}\n" for line in kept))

    def _log_line(self, line: dict) -> None:
        self.history.append(line)
        with open(self.output / "train_log.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
        log.info("%s", " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in line.items()))

    def _progress(self, stage, start: int):
        from tqdm.auto import tqdm

        return tqdm(total=stage.steps, initial=start, desc=stage.name, unit="step", dynamic_ncols=True,
                    disable=not (self.dist.main and sys.stderr.isatty()))

    @torch.no_grad()
    def _fit_output_layer(self, ridge: float = 1e-3) -> None:
        """Least squares from pooled vectors (both sides of `distill.init_pairs` pairs) to the teacher's vectors:
        W, b = argmin ||[P 1] [W; b] - T||^2 + ridge * mean(diag(P^T P)) ||W||^2."""
        sampler, count = self.samplers["distill"], self.config.distill.init_pairs
        rng = step_rng(self.config.seed, self.dist.rank, -1 % 2 ** 31, 0)
        batch = sampler.collate(sampler.draw(rng, count))
        self.model.eval()
        pooled = []
        for side in ("src", "tgt"):
            for start in range(0, count, 256):
                ids, mask = batch[f"{side}_ids"][start:start + 256], batch[f"{side}_mask"][start:start + 256]
                with autocast(self.config, self.dist.device):
                    pooled.append(self.model.embed(ids.to(self.dist.device), mask.to(self.dist.device)).double())
        x = torch.cat(pooled)
        x = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype, device=x.device)], dim=1)
        y = torch.cat([batch["teacher"], batch["teacher"]]).double().to(x.device)
        gram = x.T @ x
        penalty = ridge * gram.diagonal()[:-1].mean() * torch.eye(len(gram), dtype=x.dtype, device=x.device)
        penalty[-1, -1] = 0  # the bias is not shrunk
        solution = torch.linalg.solve(gram + penalty, x.T @ y)
        output = self.model.output
        output.weight.copy_(solution[:-1].T.to(output.weight.dtype))
        output.bias.copy_(solution[-1].to(output.bias.dtype))
        cosine = F.cosine_similarity((x @ solution).float(), y.float(), dim=-1).mean()
        log.info("output layer fitted to the teacher on %d pairs: mean cosine %.3f before the first step", count,
                 float(cosine))
        self.model.train()

    @torch.no_grad()
    def _fit_lens_inputs(self, pairs: int = 1024) -> None:
        """The lens's input statistics (encoders.lens_networks.Standardise) from both sides of `pairs` training
        pairs, through the frozen encoder, before the first step."""
        sampler = self.samplers["br"]
        batch = sampler.collate(sampler.draw(step_rng(self.config.seed, self.dist.rank, -2 % 2 ** 31, 0), pairs))
        tokens = []
        for side in ("src", "tgt"):
            for start in range(0, pairs, 256):
                ids = batch[f"{side}_ids"][start:start + 256].to(self.dist.device)
                mask = batch[f"{side}_mask"][start:start + 256].to(self.dist.device)
                states = self.model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
                tokens.append(states.float()[mask.bool()])
        self.model.lens.standardise.fit(torch.cat(tokens))
        log.info("lens inputs standardised on the token vectors of %d pairs", pairs)

    # -- checks and export -----------------------------------------------------------------------------------

    @torch.no_grad()
    def embed(self, sequences, batch_size: int = 256) -> np.ndarray:
        """Unit vectors for token id sequences, longest first in batches (eval mode, the exported computation)."""
        self.model.eval()
        order = np.argsort([-len(s) for s in sequences], kind="stable")
        width = (self.model.lens.spec.output_dim if self.model.lens is not None else
                 self.model.output.out_features if self.model.output is not None else
                 self.model.encoder.config.hidden_size)
        vectors = np.zeros((len(sequences), width), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            ids, mask = pad([sequences[i] for i in rows], self.special.pad)
            with autocast(self.config, self.dist.device):
                pooled = self.model.sentence_vectors(ids.to(self.dist.device), mask.to(self.dist.device))
            vectors[rows] = F.normalize(pooled.float(), dim=-1).cpu().numpy()
        self.model.train()
        return vectors

    def evaluate(self) -> dict:
        """xsim error (cosine, both directions) on every held-out language pair, and the mean."""
        from miner.xsim import xsim

        report = {}
        logging.getLogger("miner.index").setLevel(logging.WARNING)  # one Flat index per check: not news
        for pairs in self.data.heldout:
            src = self.embed([pairs.src[i] for i in range(len(pairs.src))])
            tgt = self.embed([pairs.tgt[i] for i in range(len(pairs.tgt))])
            result = xsim(src, tgt, "absolute", src_texts=pairs.texts[0], tgt_texts=pairs.texts[1])
            report[f"xsim_error/{pairs.name}"] = (result["src->tgt"]["error_rate"] +
                                                 result["tgt->src"]["error_rate"]) / 2
        if report:
            report["xsim_error/mean"] = float(np.mean(list(report.values())))
        return report

    def export(self) -> Path:
        import shutil

        from encoders.model import save_encoder

        folder = self.output / "encoder"
        # written beside it, then swapped in: a run killed while exporting leaves the encoder before it whole, never
        # new weights with the old training.json or half a folder (the same depth: a lens's relative path holds)
        staged, old = self.output / f".encoder.{os.getpid()}.tmp", self.output / f".encoder.{os.getpid()}.old"
        for leftover in (staged, old):
            shutil.rmtree(leftover, ignore_errors=True)
        dtype = torch.float16 if self.config.run.save_dtype == "float16" else None
        self.model.eval()
        if self.model.lens is not None:
            from encoders.lens import save_lens

            save_lens(self.model.lens, staged, self.config.model.init)
        else:
            save_encoder(self.model.encoder, self.tokenizer, staged,
                         max_seq_length=self.config.model.max_seq_length, dtype=dtype, dense=self.model.output)
        (staged / "training.json").write_text(json.dumps({
            "recipe": self.recipe, "data": self.data.summary(),
            "final": self.history[-1] if self.history else None}, indent=2) + "\n", encoding="utf-8")
        if folder.exists():
            folder.rename(old)
        staged.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
        log.info("encoder written to %s", folder)
        return folder

    def _refresh_hard_negatives(self, stage: int, step: int) -> None:
        from training.hard_negatives import HardNegativePool

        if step % self.config.br.hard_negative_refresh == 0 or self.hard_negatives is None:
            rng = step_rng(self.config.seed, self.dist.rank, stage, step, micro=-1 % 2 ** 31)
            self.hard_negatives = HardNegativePool.build(self, rng)
