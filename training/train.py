"""Train an encoder from a recipe: `python -m training.train --config configs/<recipe>.yaml`.

    python -m training.prepare                                          # data/train from ../shared/data/train
    python -m training.train --config configs/train_reference_cpu.yaml  # S3: CMLM, then CMLM + BR
    python -m training.train --config configs/train_reference_cpu.yaml --set stages.1.steps=200 --set run.threads=2
    python -m training.train --config ... --resume                      # continue from the newest checkpoint
    python -m training.train --config ... --check                       # read and check everything, train nothing
    python -m training.train --config ... --export                      # the encoder from the newest checkpoint
    torchrun --nproc_per_node 8 -m training.train --config configs/train_reference_gpu.yaml   # several GPUs

The recipe and every input are read and checked before the first step: unknown keys, missing files, inputs with no
usable example are errors; bad lines are counted skips. The encoder lands in <output>/encoder, loadable by
`miner.mine`, `miner.evaluate` and `encoders.encode`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
from pathlib import Path

import torch

from miner.io import path_argument
from training.config import as_dict, load_recipe

log = logging.getLogger("training")


def load_tokenizer(config):
    from transformers import AutoTokenizer

    from encoders.checkpoint import HUB_ID

    folder = config.model.init or config.model.tokenizer
    if not Path(folder).is_dir() and not HUB_ID.match(str(folder)):  # else transformers reads it as a hub id
        key = "model.init" if config.model.init else "model.tokenizer"
        raise ValueError(f"{key} {folder}: no such folder (a model another recipe writes: train that one first, as "
                         f"the recipe's header says, or --set {key}=<a folder>, e.g. models/cmlm-distilled)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, use_fast=True, trust_remote_code=False)
    except (OSError, ValueError) as err:
        raise ValueError(f"{folder}: cannot load a tokenizer ({err})") from None
    if not tokenizer.is_fast or tokenizer.mask_token_id is None or tokenizer.pad_token_id is None:
        raise ValueError(f"{folder}: training needs a fast tokenizer with [MASK] and [PAD] tokens")
    return tokenizer


def build_model(config, tokenizer):
    from training.model import TrainingModel, load_encoder_for_training, new_encoder, output_layer

    if config.lens.kind:
        return build_lens_model(config)
    if config.model.init:
        encoder = load_encoder_for_training(config.model.init, config.model)
    else:
        encoder = new_encoder(config.model, len(tokenizer), tokenizer.pad_token_id, config.seed)
    if encoder.config.vocab_size < len(tokenizer):
        raise ValueError(f"the tokenizer has {len(tokenizer)} tokens but the model only {encoder.config.vocab_size}")
    with torch.random.fork_rng():
        torch.manual_seed(config.seed)
        output, new_output = output_layer(config.model, encoder.config.hidden_size, config.model.init, config.seed)
        model = TrainingModel(encoder, config.model.projection_vectors, config.br.scale, config.br.learn_scale,
                              len(config.nli.labels), output, br_loss=config.br.loss)
    # a stacked encoder's pooled vectors moved, if only a little (its new layers are near-identities): its output
    # layer is fitted again before the first step, as a new one is (teacher cosine 0.78 after the fit, measured)
    model.output_is_new = new_output or hasattr(encoder, "stacked_from")
    return model


def build_lens_model(config):
    """A new lens (seed 001) over the frozen `model.init`: the only parameters the optimiser moves."""
    from encoders.lens import LensSpec, build_lens
    from training.model import TrainingModel, load_frozen_encoder

    encoder = load_frozen_encoder(config.model.init, config.model.max_seq_length)
    options = {k: v for k, v in dataclasses.asdict(config.lens).items() if k != "kind"}
    with torch.random.fork_rng():
        torch.manual_seed(config.seed)
        lens = build_lens(LensSpec(config.lens.kind, encoder.config.hidden_size, **options))
    model = TrainingModel(encoder, 1, config.br.scale, False, len(config.nli.labels), lens=lens,
                          br_loss=config.br.loss)
    model.output_is_new = False
    return model


def prepare_run(config):
    """Tokenizer, checked data and model: everything that can fail before the first step."""
    from training.data import load_training_data

    tokenizer = load_tokenizer(config)
    data = load_training_data(config, tokenizer)
    return tokenizer, data, build_model(config, tokenizer)


def resume_point(config, resume: bool) -> Path | None:
    from training import checkpoints

    found = checkpoints.latest(Path(config.output))
    if found and not resume:
        raise ValueError(f"{config.output} already holds checkpoints ({found.name}): pass --resume to continue "
                         f"that run, or choose another output")
    if resume and not found:
        log.warning("--resume: no checkpoint in %s, starting from the beginning", config.output)
    return found if resume else None


def run(config, resume: bool = False) -> Path | None:
    from training.trainer import Distributed, Trainer

    if config.run.threads:
        torch.set_num_threads(config.run.threads)
    dist = Distributed.setup(config.run.device)
    start = resume_point(config, resume)
    tokenizer, data, model = prepare_run(config)
    summary = data.summary()
    log.info("data: %d languages of documents (%d sentence pairs), %d language pairs of bitext (%d pairs), "
             "%d held-out pairs; skipped %s; %d language pairs with too few pairs; %d sentences cut at %d tokens",
             len(summary["documents"]), sum(d["pairs"] for d in summary["documents"].values()),
             len(summary["bitext"]), sum(summary["bitext"].values()), sum(summary["heldout"].values()),
             summary["skipped"] or "nothing", len(summary["few_pairs"]), summary["truncated"],
             config.model.max_seq_length)
    trainer = Trainer(config, data, tokenizer, model, dist)
    return trainer.run(start, fit_output=model.output_is_new)


def logged_evaluation(output: Path, global_step: int) -> dict:
    """The held-out figures the run logged at `global_step` (empty when it logged none there), so an encoder
    exported from a checkpoint carries the same record as one exported at the end of training."""
    log_path = output / "train_log.jsonl"
    found = {}
    if log_path.exists():
        for line in log_path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.strip() else {}
            if record.get("global_step") == global_step and any(k.startswith("xsim_error/") for k in record):
                found = {k: v for k, v in record.items() if k.startswith("xsim_error/") or k == "stage"}
    return found


def export_newest_checkpoint(config) -> Path:
    """<output>/encoder from the newest checkpoint, without training further: a run stopped early (or still
    running) gives a usable encoder. Only the tokenizer and the network are built; the data is not read."""
    from training import checkpoints
    from training.data import TrainingData
    from training.trainer import Trainer

    newest = checkpoints.latest(Path(config.output))
    if newest is None:
        raise ValueError(f"{config.output}: no checkpoint to export")
    position, saved = checkpoints.read_state(newest)
    differences = checkpoints.recipe_differences(saved, as_dict(config))
    if differences:  # the export would record this recipe's data and seed for weights another one trained
        raise ValueError(f"{newest}: the recipe differs from the one this checkpoint was written with "
                         f"({', '.join(differences)}); export with that recipe")
    tokenizer = load_tokenizer(config)
    model = build_model(config, tokenizer)
    checkpoints.load_model(newest, model)
    trainer = Trainer(config, TrainingData(), tokenizer, model)
    trainer.history.append({"exported_from": newest.name, "global_step": position.global_step,
                            **logged_evaluation(Path(config.output), position.global_step)})
    log.info("exporting %s (global step %d)", newest, position.global_step)
    return trainer.export()


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    parser = argparse.ArgumentParser(prog="python -m training.train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=path_argument, required=True, help="the recipe (YAML)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a setting, e.g. --set optimizer.lr=3e-4 or --set stages.0.steps=100")
    parser.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in the output")
    parser.add_argument("--check", action="store_true", help="read and check recipe and data, then stop")
    parser.add_argument("--export", action="store_true",
                        help="write <output>/encoder from the newest checkpoint and stop (no training)")
    parser.add_argument("-v", "--verbose", action="store_true", help="also log debug lines")
    args = parser.parse_args(argv)
    setup_logging(args.verbose)

    def command() -> None:
        config = load_recipe(args.config, args.overrides)
        if args.check:
            _, data, model = prepare_run(config)
            parameters = sum(p.numel() for p in model.encoder.parameters())
            print(json.dumps({"encoder_parameters": parameters, "steps": config.total_steps(), **data.summary()},
                             indent=2))
            return
        folder = export_newest_checkpoint(config) if args.export else run(config, args.resume)
        if folder:
            print(f"encoder: {folder}")

    return exit_status(command)


if __name__ == "__main__":
    raise SystemExit(main())
