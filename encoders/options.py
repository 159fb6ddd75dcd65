"""Command-line options for transformer encoders, shared by every command that embeds (light: no torch import)."""

from __future__ import annotations

import argparse
import re

PRECISION_NAMES = ("fp32", "bf16", "fp16", "bf16-mixed")  # encoders.precision's, named here without torch
OPTION_NAMES = ("device", "precision", "token_budget", "batch_size", "max_seq_length", "pooling", "language_removal")
POOLINGS = ("mean", "cls", "max", "mean_sqrt_len_tokens", "lasttoken", "pooler")
LANGUAGE_REMOVALS = ("none", "pcr", "meaning")


def add_encoder_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("encoder options (transformer checkpoints)")
    group.add_argument("--device", help="auto (default: every GPU, else CPU), cpu, cuda, or cuda:0,cuda:1")
    group.add_argument("--precision", choices=("auto", *PRECISION_NAMES),
                       help="auto (default): bf16 on GPUs (fp16 on old ones), bf16-mixed (bf16 products over fp32 "
                       "weights) on CPUs with native bf16, else fp32")
    group.add_argument("--token-budget", type=int, help="padded tokens per batch (default 262144 GPU, 8192 CPU)")
    group.add_argument("--batch-size", type=int, help="sentences per batch at most (default 4096 GPU, 128 CPU)")
    group.add_argument("--max-seq-length", type=int, help="truncate sentences to this many tokens")
    group.add_argument("--pooling", choices=POOLINGS,
                       help="override the checkpoint's pooling; `pooler` uses the model's pooler head (plain "
                       "transformers LaBSE folders need it)")
    group.add_argument("--language-removal", choices=LANGUAGE_REMOVALS,
                       help="remove language identity: PCR or the meaning projection saved beside the model")


def encoder_options(args: argparse.Namespace, defaults: dict | None = None) -> dict:
    """The options given on the command line, over `defaults` (e.g. a config file's `encoder_options`)."""
    options = dict(defaults or {})
    unknown = set(options) - set(OPTION_NAMES)
    if unknown:
        raise ValueError(f"unknown encoder option(s) {', '.join(sorted(unknown))}; known: {', '.join(OPTION_NAMES)}")
    options.update({name: getattr(args, name) for name in OPTION_NAMES if getattr(args, name, None) is not None})
    _check_sizes(options, lambda name: f"--{name.replace('_', '-')}")
    if options.get("device") is not None:
        check_device(options["device"], "--device")
    return options


DEVICE = re.compile(r"auto|(cpu|mps|cuda(:\d+)?)(,(cpu|mps|cuda(:\d+)?))*")


def check_device(device, named: str) -> None:
    """A device torch will take (checked here, without torch: a bad name was found only once the embed stage
    loaded the encoder, after the extract stage had run)."""
    if not isinstance(device, str) or not DEVICE.fullmatch(device.replace(" ", "")):
        raise ValueError(f"{named} must be auto, cpu, cuda, cuda:0,cuda:1 (or mps), got {device!r}")


def _check_sizes(options: dict, named) -> None:
    """The batching options are whole numbers of 1 or more: 0 would read as the default, a negative fail only once
    encoding began. `named(option)`: how the error names it (a flag, a setting)."""
    from miner.config import check_number

    for name in ("token_budget", "batch_size", "max_seq_length"):
        if options.get(name) is not None:
            check_number(named(name), options[name], 1, whole=True)


def check_options(spec: str, options: dict | None) -> None:
    """`encoder_options` of a job checked before any stage, without loading the encoder: names, values, and for an
    ensemble the options its members share. Each was found only once the embed stage loaded the encoder, after the
    extract stage had run."""
    from pathlib import Path

    given = {name: value for name, value in (options or {}).items() if value is not None}
    unknown = set(given) - set(OPTION_NAMES)
    if unknown:
        raise ValueError(f"encoder_options: unknown option(s) {', '.join(sorted(unknown))}; known: "
                         f"{', '.join(OPTION_NAMES)}")
    _check_sizes(given, lambda name: f"encoder_options.{name}")
    for name, allowed in (("precision", ("auto", *PRECISION_NAMES)), ("pooling", POOLINGS),
                          ("language_removal", LANGUAGE_REMOVALS)):
        if name in given and given[name] not in allowed:
            raise ValueError(f"encoder_options.{name} must be one of {', '.join(allowed)}, got {given[name]!r}")
    if "device" in given:
        check_device(given["device"], "encoder_options.device")
    if Path(spec).is_dir():
        from encoders.ensemble import MEMBER_OPTIONS, is_ensemble

        taken = sorted(set(given) - set(MEMBER_OPTIONS))
        if is_ensemble(spec) and taken:
            raise ValueError(f"encoder_options: the ensemble {spec} does not take {', '.join(taken)} (it takes "
                             f"{', '.join(MEMBER_OPTIONS)}, passed to every member)")
