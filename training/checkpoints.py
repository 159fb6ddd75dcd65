"""Training checkpoints: everything an exact resume needs, written atomically, never unpickled.

    <output>/checkpoints/step-00001000/
        model.safetensors   the training network (encoder and heads; the tied MLM weights stored once)
        optimizer.pt        optimiser and schedule state: tensors and numbers only, read with weights_only=True
        state.json          where the run is: stage, next step in it, global step, and the recipe it ran

The data position and the random state need nothing more: every batch and every dropout mask is seeded from
(seed, rank, stage, step) (training/batches.py), so the step counter *is* the position.
A checkpoint folder is written under a temporary name and renamed into place, so a run killed while saving
leaves the previous checkpoint intact; only the newest `keep` are kept.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

PREFIX = "step-"


@dataclass
class Position:
    stage: int = 0  # index into the recipe's stages
    step: int = 0  # next optimiser step within that stage
    global_step: int = 0  # steps done over all stages


def checkpoint_dir(output: Path) -> Path:
    return Path(output) / "checkpoints"


def save(output: Path, model, optimizer, schedule, position: Position, recipe: dict, keep: int) -> Path:
    from safetensors.torch import save_model

    root = checkpoint_dir(output)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{PREFIX}{position.global_step:08d}"
    staging = Path(tempfile.mkdtemp(dir=root, prefix=f".{final.name}."))
    try:
        save_model(model, str(staging / "model.safetensors"))
        torch.save({"optimizer": optimizer.state_dict(), "schedule": schedule.state_dict()},
                   staging / "optimizer.pt")
        (staging / "state.json").write_text(json.dumps(
            {"stage": position.stage, "step": position.step, "global_step": position.global_step,
             "recipe": recipe}, indent=2) + "\n", encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        os.replace(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    for old in sorted(root.glob(f"{PREFIX}*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest(output: Path) -> Path | None:
    found = sorted(p for p in checkpoint_dir(output).glob(f"{PREFIX}*") if (p / "state.json").exists())
    return found[-1] if found else None


class CheckpointFileError(ValueError):
    """A checkpoint file that is not what `save` writes (damaged, edited, another program's); names the file."""


def read_state(folder: Path) -> tuple[Position, dict]:
    path = folder / "state.json"
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointFileError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(state, dict):
        raise CheckpointFileError(f"{path}: expected a JSON object, got {type(state).__name__}")
    for key in ("stage", "step", "global_step"):
        value = state.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CheckpointFileError(f"{path}: {key} must be a whole number >= 0, got {value!r}")
    if not isinstance(state.get("recipe"), dict):
        raise CheckpointFileError(f"{path}: no recipe (an object)")
    return Position(state["stage"], state["step"], state["global_step"]), state["recipe"]


def load_model(folder: Path, model) -> None:
    from safetensors.torch import load_model as load

    missing, unexpected = load(model, str(folder / "model.safetensors"), strict=False)
    if missing or unexpected:
        raise ValueError(f"{folder}: checkpoint does not fit this recipe's model "
                         f"(missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]})")


def load_optimizer(folder: Path, optimizer, schedule) -> None:
    import pickle

    from encoders.checkpoint import error_reason

    path = folder / "optimizer.pt"
    try:  # weights_only refuses a pickle of anything but tensors and numbers: an error, never run
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as err:
        raise CheckpointFileError(f"{path}: not a plain tensor file ({type(err).__name__}); optimiser state is "
                                  "read as tensors and numbers only, never as code") from None
    if not (isinstance(state, dict) and all(isinstance(state.get(key), dict) for key in ("optimizer", "schedule"))):
        raise CheckpointFileError(f"{path}: not an optimiser and schedule state (a dictionary of both)")
    try:
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise CheckpointFileError(f"{path}: does not fit this run's optimiser ({error_reason(err)})") from None


def recipe_differences(saved: dict, current: dict) -> list[str]:
    """Settings that change what is trained (everything but `run`, which says how and where). A setting added to
    the recipe since the checkpoint was saved, left empty (None, [] or {}), changes nothing: that run resumes."""
    return sorted(key for key in set(saved) | set(current)
                  if key not in ("run", "output") and _without_new_empty(saved.get(key), current.get(key))
                  != saved.get(key))


def _without_new_empty(saved, current):
    if not (isinstance(saved, dict) and isinstance(current, dict)):
        return current
    return {key: _without_new_empty(saved.get(key), value) for key, value in current.items()
            if key in saved or value not in (None, [], {})}
