"""Contextual lenses (seed 001): a small trained reduction over a frozen encoder's last-layer token vectors.

    encoder = load_encoder("models/lens-distilled-simple")       # a folder holding lens.json
    vectors = encoder.encode(["Guten Morgen.", "Good morning."])   # float32 [2, dim], unit rows, input order
    bits = encoder.encode(sentences, dtype="binary")               # packed uint8 [n, dim / 8] (encoders.binary)

The frozen encoder gives a matrix C = [c_1 .. c_T] (its last layer, one row per token); the lens maps it to one
vector. Two lenses, as the paper defines them:

    Simple:     u = max_t ReLU(W c_t)                                    one weight matrix W [dim x d]
    GatedConv:  E^l = f^l(W_E^l * E^{l-1} + b),  G^l = g^l(W_G^l * G^{l-1} + b),  E^0 = G^0 = C
                (*: a 1-D convolution over tokens; f = ReLU, g = ReLU below the last layer, f^L = tanh, g^L = sigmoid)
                F_t = G^L_t (.) E^L_t + W_S c_t                          gates, plus a skip connection
                u = max_t ReLU(W_R F_t)

InferLite's gating, simplified to one embedding type (the paper's "form of self-attention"). ReLU then max-pool
makes the features non-negative and sparse, which is what the paper's binary vectors threshold (at 1.0, about 2.5%
of units active). Padding never reaches a convolution or the maximum.

`lens.json` says what the folder holds; the weights are `lens.safetensors` (data only, never pickles):

    {"format": "cmlm-lens/1", "encoder": "../../cmlm-distilled",   # the frozen encoder, relative to this folder
     "kind": "simple", "input_dim": 256, "output_dim": 1024,         # gated-conv adds gate_dim, layers, kernel
     "binary_threshold": 1.0, "tokenizer_sha256": "..."}             # the tokenizer the lens was trained behind

A lens folder whose encoder is missing, gives vectors of another width, or tokenises differently from the one the
lens was trained behind is refused with the file named: any of them would give vectors silently wrong.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from encoders.checkpoint import TOKENIZER_FILES, CheckpointError, read_checkpoint, read_description
from miner.io import file_sha256

FILE = "lens.json"
WEIGHTS = "lens.safetensors"
FORMAT = "cmlm-lens/1"
KINDS = ("simple", "gated-conv")


class LensError(CheckpointError):
    """A lens folder that cannot be used; the message names the file and the bad part."""


@dataclass(frozen=True)
class LensSpec:
    kind: str
    input_dim: int
    output_dim: int = 1024
    gate_dim: int = 256  # gated-conv: channels of the encoder and controller stacks
    layers: int = 2  # gated-conv: convolution layers in each stack
    kernel: int = 3  # gated-conv: tokens each convolution sees
    binary_threshold: float = 1.0  # a unit of the ReLU + max-pool features is "on" above this

    def check(self, where: str) -> None:
        if self.kind not in KINDS:
            raise LensError(f"{where}: lens kind {self.kind!r} is not one of {', '.join(KINDS)}")
        sizes = {"input_dim": self.input_dim, "output_dim": self.output_dim, "gate_dim": self.gate_dim,
                 "layers": self.layers, "kernel": self.kernel}
        bad = [name for name, value in sizes.items() if not isinstance(value, int) or value < 1]
        if bad:
            raise LensError(f"{where}: {', '.join(bad)} must be positive integers")
        if self.output_dim % 8:
            raise LensError(f"{where}: output_dim {self.output_dim} must be a multiple of 8 (binary vectors pack "
                             "8 units a byte)")


def build_lens(spec: LensSpec):
    """A new lens network (torch loads here: reading a folder's description needs none)."""
    from encoders.lens_networks import GatedConvLens, SimpleLens

    spec.check("lens")
    return SimpleLens(spec) if spec.kind == "simple" else GatedConvLens(spec)


# -- folders -------------------------------------------------------------------------------------------------


def is_lens(folder: str | Path) -> bool:
    return (Path(folder) / FILE).is_file()


def tokenizer_fingerprint(encoder_folder: str | Path) -> str:
    """sha256 of the encoder's tokenizer file: a lens trained behind one tokenizer reads token vectors that mean
    nothing behind another."""
    layout = read_checkpoint(encoder_folder)
    for name in TOKENIZER_FILES:
        path = layout.transformer / name
        if path.is_file():
            return file_sha256(path)
    raise LensError(f"{encoder_folder}: no tokenizer file ({', '.join(TOKENIZER_FILES)})")


def save_lens(lens, folder: str | Path, encoder_folder: str | Path) -> Path:
    """Write lens.json (the encoder as a path relative to the lens folder) and lens.safetensors (float32)."""
    from safetensors.torch import save_file

    from miner.io import FILE_MODE

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    description = {"format": FORMAT, "encoder": os.path.relpath(Path(encoder_folder).resolve(), folder.resolve()),
                   **asdict(lens.spec), "tokenizer_sha256": tokenizer_fingerprint(encoder_folder)}
    state = {name: value.detach().float().contiguous().cpu() for name, value in lens.state_dict().items()}
    save_file(state, str(folder / WEIGHTS))
    (folder / FILE).write_text(json.dumps(description, indent=2) + "\n", encoding="utf-8")
    for path in (folder / WEIGHTS, folder / FILE):
        path.chmod(FILE_MODE)
    return folder


@dataclass(frozen=True)
class LensFolder:
    folder: Path
    encoder: Path  # the frozen encoder's folder
    spec: LensSpec
    tokenizer_sha256: str


def read_lens(folder: str | Path) -> LensFolder:
    """The checked description of a lens folder (JSON only; the weights load in `load_lens`)."""
    path = Path(folder) / FILE
    raw = read_description(path, FORMAT, LensError, "a lens description")
    fields = {name: raw[name] for name in LensSpec.__dataclass_fields__ if name in raw}
    try:
        spec = LensSpec(**fields)
    except TypeError as err:
        raise LensError(f"{path}: {err}") from None
    spec.check(str(path))
    encoder = raw.get("encoder")
    if not isinstance(encoder, str) or not encoder:
        raise LensError(f"{path}: 'encoder' must name the frozen encoder's folder")
    encoder_folder = Path(folder) / encoder
    if not encoder_folder.is_dir():
        raise LensError(f"{path}: its encoder {encoder!r} is not a folder (looked at {encoder_folder}); a lens "
                        "needs the frozen encoder it was trained on")
    return LensFolder(Path(folder), encoder_folder, spec, str(raw.get("tokenizer_sha256", "")))


def load_lens(description: LensFolder, hidden_size: int):
    """The lens network, checked against the encoder it reads: width and tokenizer."""
    where = description.folder / FILE
    if description.spec.input_dim != hidden_size:
        raise LensError(f"{where}: the lens reads {description.spec.input_dim}-d token vectors but its encoder "
                        f"{description.encoder} gives {hidden_size}-d ones")
    if description.tokenizer_sha256 != tokenizer_fingerprint(description.encoder):
        raise LensError(f"{where}: the lens was trained behind another tokenizer than {description.encoder}'s "
                        "(tokenizer_sha256 differs): its token vectors would be read wrongly")
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    lens = build_lens(description.spec)
    try:
        lens.load_state_dict(load_file(str(description.folder / WEIGHTS)))
    except (OSError, RuntimeError, SafetensorError) as err:
        raise LensError(f"{description.folder / WEIGHTS}: the weights do not load into a {description.spec.kind} "
                        f"lens ({str(err).splitlines()[0]})") from None
    return lens.eval()
