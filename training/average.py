r"""Average the weights of encoders that share one lineage: a weight-space ensemble.

    python -m training.average --models models/distill-mix-gpu/encoder models/cmlm-distilled --weights 0.7 0.3 \
        --output models/distill-mix-averaged

Interpolating a fine-tuned network with the one it was fine-tuned from (WiSE-FT, Wortsman et al. 2022, "Robust
fine-tuning of zero-shot models"; model soups, Wortsman et al. 2022) keeps much of what the fine-tune gained and
much of what the start knew, at no inference cost: one network, not two. It works only between networks that
started from one another (the same architecture, tokenizer and lineage); this checks the first two and records
the sources and their weights in the output's `average.json`. Which weight to ship is a held-out choice (as
docs/training.md makes it), not this command's.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shutil
import tempfile
from pathlib import Path

from miner.io import check_output_folder

log = logging.getLogger("training.average")

SAME_FILES = ("config.json", "tokenizer.json", "modules.json")  # must be identical for the average to mean anything


class AverageError(ValueError):
    """Folders that cannot be averaged, named with the reason."""


def weight_files(folder: Path) -> list[Path]:
    """The folder's safetensors files, relative to it (the encoder and a Dense layer, if any)."""
    return sorted(p.relative_to(folder) for p in folder.rglob("*.safetensors"))


def check_compatible(folders: list[Path]) -> list[Path]:
    """The weight files every folder has, after checking that the folders are one architecture and tokenizer."""
    first = folders[0]
    for folder in folders:
        if not (folder / "config.json").is_file():
            raise AverageError(f"{folder}: not an encoder folder (no config.json)")
    files = weight_files(first)
    if not files:
        raise AverageError(f"{first}: no .safetensors weights")
    for folder in folders[1:]:
        for name in SAME_FILES:
            a, b = first / name, folder / name
            if a.is_file() != b.is_file() or (a.is_file() and _comparable(a) != _comparable(b)):
                raise AverageError(f"{folder / name}: differs from {a}; only encoders of one architecture and "
                                   f"tokenizer can be averaged")
        if weight_files(folder) != files:
            raise AverageError(f"{folder}: weight files {[str(p) for p in weight_files(folder)]} differ from "
                               f"{first}'s {[str(p) for p in files]}")
    return files


def _comparable(path: Path):
    """config.json without the fields that record how it was saved (dtype, library version), else the bytes."""
    if path.name != "config.json":
        return path.read_bytes()
    config = json.loads(path.read_text(encoding="utf-8"))
    for key in ("dtype", "torch_dtype", "transformers_version"):
        config.pop(key, None)
    return config


def average_tensors(paths: list[Path], weights: list[float]) -> dict:
    """sum_i w_i * theta_i per tensor, in float32, cast back to the first file's dtype."""
    import torch
    from safetensors.torch import load_file

    states = [load_file(str(path)) for path in paths]
    names = set(states[0])
    for path, state in zip(paths[1:], states[1:]):
        if set(state) != names:
            missing = sorted(names ^ set(state))[:5]
            raise AverageError(f"{path}: tensors differ from {paths[0]} (e.g. {missing})")
    out = {}
    for name, first in states[0].items():
        for path, state in zip(paths[1:], states[1:]):
            if state[name].shape != first.shape:
                raise AverageError(f"{path}: tensor {name} has shape {tuple(state[name].shape)}, "
                                   f"{paths[0]} has {tuple(first.shape)}")
        if not first.is_floating_point():
            out[name] = first
            continue
        total = sum(w * state[name].to(torch.float32) for w, state in zip(weights, states))
        if not torch.isfinite(total).all():
            raise AverageError(f"{name}: not finite in the average of {[str(p) for p in paths]}")
        out[name] = total.to(first.dtype).contiguous()
    return out


def average(folders: list[Path], weights: list[float], output: Path) -> Path:
    """Write the weighted average of `folders` to `output` (staged beside it, renamed into place)."""
    from safetensors.torch import save_file

    from miner.io import DIR_MODE, FILE_MODE, file_sha256

    if len(folders) < 2 or len(folders) != len(weights):
        raise AverageError("give two or more --models and one --weights value for each")
    if not all(math.isfinite(w) and w >= 0 for w in weights) or abs(sum(weights) - 1.0) > 1e-6:
        raise AverageError(f"--weights must be non-negative and sum to 1, got {weights}")
    if output.exists():
        raise AverageError(f"{output}: exists; remove it or choose another --output")
    check_output_folder(output.parent)  # a file in the way of its folder
    files = check_compatible(folders)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=output.parent, prefix=f".{output.name}."))
    try:
        shutil.copytree(folders[0], staging, dirs_exist_ok=True)
        for relative in files:
            averaged = average_tensors([folder / relative for folder in folders], weights)
            save_file(averaged, str(staging / relative), metadata={"format": "pt"})
        record = {"method": "weighted average of weights (WiSE-FT / model soup)",
                  "sources": [{"folder": str(folder), "weight": weight,
                               "sha256": {str(f): file_sha256(folder / f) for f in files}}
                              for folder, weight in zip(folders, weights)]}
        (staging / "average.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        for path in [staging, *staging.rglob("*")]:  # mkdtemp and safetensors write owner-only
            path.chmod(DIR_MODE if path.is_dir() else FILE_MODE)
        os.replace(staging, output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return output


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging
    from miner.io import path_argument

    parser = argparse.ArgumentParser(prog="python -m training.average", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=path_argument, nargs="+", required=True, help="encoder folders of one lineage")
    parser.add_argument("--weights", type=float, nargs="+", required=True, help="one per model, summing to 1")
    parser.add_argument("--output", type=path_argument, required=True,
                        help="the averaged encoder's folder (must not exist)")
    args = parser.parse_args(argv)
    setup_logging()

    def command() -> None:
        log.info("averaged encoder written to %s", average(args.models, args.weights, args.output))

    return exit_status(command)


if __name__ == "__main__":
    raise SystemExit(main())
