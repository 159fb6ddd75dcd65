"""What a checkpoint folder holds, read without running any of its code.

Three layouts load:
- a sentence-transformers folder: `modules.json` lists a Transformer, then Pooling, optional Dense layers and an
  optional Normalize; each module's config says what it does (LaBSE: CLS pooling, a tanh Dense, Normalize);
- a plain transformers folder (`config.json`, weights, tokenizer), e.g. a BERT-family model a user downloaded:
  mean pooling, the CMLM inference recipe (METHODS §4);
- our own checkpoints, which are sentence-transformers folders (see `encoders.model.save_encoder`).
Vectors always leave the encoder L2-normalised, whatever the folder says: mining compares them by cosine.

Only data is read: JSON configs and safetensors weights (or a `.bin` through `torch.load(weights_only=True)`).
A folder whose config asks for custom code (`auto_map`) is refused: we never pass `trust_remote_code`. config.json's
layer count and sizes must be those of the safetensors weights (their headers), before transformers builds the model.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

# Encoder-only transformer families that `AutoModel` builds from transformers' own code.
SUPPORTED_MODEL_TYPES = frozenset({
    "bert", "roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "distilbert", "electra", "mpnet",
    "deberta", "deberta-v2", "ernie", "rembert", "modernbert", "nomic_bert", "megatron-bert",
})
POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len_tokens", "lasttoken")
# `pooler`: the model's own pooler head (BERT: tanh(W h_CLS + b)), what plain-transformers LaBSE folders expect.
OVERRIDE_POOLING_MODES = (*POOLING_MODES, "pooler")
LEGACY_POOLING_KEYS = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token",
                       "max": "pooling_mode_max_tokens", "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
                       "lasttoken": "pooling_mode_lasttoken"}
DENSE_ACTIVATIONS = ("identity", "tanh", "relu", "gelu")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "sentencepiece.bpe.model", "spiece.model", "vocab.json")
_LAYER = re.compile(r"(?:^|\.)layers?\.(\d+)\.")      # encoder.layer.3. (BERT family), layers.3. (ModernBERT)
_EMBEDDING = re.compile(r"(?:^|\.)(?:word|tok)_embeddings\.weight$")
# the embedding table's width where it is not the hidden size (projected up to it)
_EMBEDDING_WIDTH = {"electra": ("embedding_size",), "rembert": ("input_embedding_size",),
                    "deberta-v2": ("embedding_size",)}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be loaded; the message names the folder and the missing or bad part."""


@dataclass(frozen=True)
class DenseLayer:
    """A sentence-transformers Dense module: y = activation(W x + b)."""

    weights: Path
    in_features: int
    out_features: int
    bias: bool
    activation: str


@dataclass(frozen=True)
class CheckpointLayout:
    folder: Path
    transformer: Path  # the folder holding config.json, weights and tokenizer
    model_type: str
    pooling: str = "mean"
    dense: tuple[DenseLayer, ...] = field(default_factory=tuple)
    max_seq_length: int | None = None


def read_checkpoint(folder: str | Path, pooling: str | None = None) -> CheckpointLayout:
    """The layout of a checkpoint folder; `pooling` overrides what the folder says (or the mean default)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: not a folder (an encoder checkpoint is a folder with config.json)")
    modules = folder / "modules.json"
    layout = _read_sentence_transformers(folder, modules) if modules.exists() else _read_plain(folder)
    if pooling is not None:
        if pooling not in OVERRIDE_POOLING_MODES:
            raise CheckpointError(f"pooling {pooling!r} is not one of {', '.join(OVERRIDE_POOLING_MODES)}")
        layout = CheckpointLayout(**{**layout.__dict__, "pooling": pooling})
    return layout


def _read_plain(folder: Path) -> CheckpointLayout:
    return CheckpointLayout(folder=folder, transformer=folder, model_type=_check_transformer(folder))


def _read_sentence_transformers(folder: Path, modules_file: Path) -> CheckpointLayout:
    modules = _json(modules_file)
    if not isinstance(modules, list) or not modules or not all(isinstance(m, dict) for m in modules):
        raise CheckpointError(f"{modules_file}: expected a non-empty list of modules (objects with type and path)")
    transformer, pooling, dense, max_len = None, "cls", [], None
    for position, module in enumerate(sorted(modules, key=lambda m: m.get("idx", 0))):
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        where = f"{modules_file} module {position} ({kind or 'no type'})"
        path = _inside(folder, module.get("path", ""), f"{where}: path")
        if kind == "Transformer":
            if position != 0:
                raise CheckpointError(f"{where}: the Transformer must be the first module")
            transformer = path
            max_len = _st_max_seq_length(path, folder)
        elif kind == "Pooling":
            pooling = _st_pooling(path / "config.json", where)
        elif kind == "Dense":
            dense.append(_st_dense(path, where))
        elif kind == "Normalize":
            pass  # vectors always leave the encoder L2-normalised: mining compares them by cosine
        else:
            raise CheckpointError(f"{where}: unsupported sentence-transformers module; supported: Transformer, "
                                  "Pooling, Dense, Normalize")
    if transformer is None:
        raise CheckpointError(f"{modules_file}: no Transformer module")
    return CheckpointLayout(folder=folder, transformer=transformer, model_type=_check_transformer(transformer),
                            pooling=pooling, dense=tuple(dense), max_seq_length=max_len)


def _check_transformer(folder: Path) -> str:
    config = _object(folder / "config.json")
    if "auto_map" in config:
        raise CheckpointError(f"{folder / 'config.json'}: the model needs custom code (auto_map); "
                              "cmlm-miner never runs code from checkpoints (no trust_remote_code)")
    model_type = config.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise CheckpointError(f"{folder / 'config.json'}: unknown or unsupported architecture {model_type!r}; "
                              f"supported encoder families: {', '.join(sorted(SUPPORTED_MODEL_TYPES))}")
    if not any((folder / name).exists() for name in WEIGHT_FILES):
        raise CheckpointError(f"{folder}: no model weights (looked for {', '.join(WEIGHT_FILES)})")
    shards = _safetensors_files(folder)
    for weights in shards:
        check_safetensors(weights)
    if shards:
        _check_sizes(folder, config, _tensor_shapes(shards))
    _check_implied_size(folder, config, shards or sorted(folder.glob("pytorch_model*.bin")))
    if not any((folder / name).exists() for name in TOKENIZER_FILES):
        raise CheckpointError(f"{folder}: no tokenizer files (looked for {', '.join(TOKENIZER_FILES)})")
    return model_type


def _check_sizes(folder: Path, config: dict, shapes: dict[str, list[int]]) -> None:
    """config.json's sizes against the tensors the weights hold (their headers): transformers builds the model
    config.json describes before it reads a weight, so `num_hidden_layers: 100000` or a vocabulary of billions
    allocated without bound, to be refused only after."""
    where = folder / "config.json"
    layers = {int(match[1]) for name in shapes for match in [_LAYER.search(name)] if match}
    count = _size(config, where, "num_hidden_layers", "n_layers")
    if count != len(layers):
        raise CheckpointError(f"{where}: {count} layers, but the weights in {folder} hold {len(layers)}: "
                              "another model's config.json, or weights cut short?")
    embedding = next((shape for name, shape in shapes.items() if _EMBEDDING.search(name)), None)
    if embedding is None or len(embedding) != 2:
        raise CheckpointError(f"{folder}: the weights hold no word embedding table (word_embeddings.weight)")
    width = _size(config, where, *_EMBEDDING_WIDTH.get(config.get("model_type"), ()), "hidden_size", "dim")
    if embedding != [_size(config, where, "vocab_size"), width]:
        raise CheckpointError(f"{folder}: the weights have other shapes than config.json gives (a vocabulary of "
                              f"{config['vocab_size']} by {width}; the weights embed {embedding[0]} by "
                              f"{embedding[1]}): another model's config.json?")
    first = {size for name, shape in shapes.items() if (match := _LAYER.search(name)) and match[1] == "0"
             for size in shape}
    for keys in (("hidden_size", "dim"), ("intermediate_size", "hidden_dim")):
        value = _size(config, where, *keys)
        if value not in first:
            raise CheckpointError(f"{folder}: the weights have other shapes than config.json gives ({keys[0]} "
                                  f"{value}; the first layer's sizes: {', '.join(map(str, sorted(first)))}): "
                                  "another model's config.json?")


def _first(config: dict, *keys: str) -> int:
    value = next((config[key] for key in keys if key in config), 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _check_implied_size(folder: Path, config: dict, weights: list[Path]) -> None:
    """A config.json whose model would hold far more parameters than the weights files have bytes is refused
    before transformers builds it (and allocates it): a pytorch_model.bin has no header to compare shapes with,
    and position tables are not among the shapes _check_sizes compares (`max_position_embeddings: 10**9`). The
    estimate counts a transformer layer's projections (4 h^2 + 2 h i) and the embedding tables; a real model holds
    at least a byte a parameter, so twice the bytes on disk bounds it with room."""
    hidden = _first(config, "hidden_size", "dim", "n_embd")
    inner = _first(config, "intermediate_size", "hidden_dim", "n_inner")
    layers = _first(config, "num_hidden_layers", "n_layers", "n_layer")
    rows = sum(_first(config, key) for key in ("vocab_size", "max_position_embeddings", "n_positions",
                                                "type_vocab_size"))
    implied = layers * (4 * hidden * hidden + 2 * hidden * inner) + rows * hidden
    on_disk = sum(path.stat().st_size for path in weights if path.is_file())
    if on_disk and implied > 2 * on_disk:  # (weights behind a .bin index elsewhere: transformers checks them)
        raise CheckpointError(f"{folder / 'config.json'}: describes a model of about {implied:,} parameters, but the "
                              f"weights in {folder} hold {on_disk:,} bytes: another model's config.json, or one "
                              "made to exhaust memory")


def _size(config: dict, where: Path, *keys: str) -> int:
    """The first of `keys` config.json gives, a whole number >= 1."""
    key = next((key for key in keys if key in config), keys[0])
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CheckpointError(f"{where}: {key} must be a whole number >= 1, got {value!r}")
    return value


def _tensor_shapes(files: list[Path]) -> dict[str, list[int]]:
    """Every tensor's shape from the safetensors headers (8 bytes of length, then JSON), no tensor read; the files
    were checked whole (check_safetensors)."""
    shapes = {}
    for path in files:
        with open(path, "rb") as handle:
            header = json.loads(handle.read(int.from_bytes(handle.read(8), "little")))
        shapes.update((name, list(entry["shape"])) for name, entry in header.items() if name != "__metadata__")
    return shapes


def _st_max_seq_length(path: Path, folder: Path) -> int | None:
    for candidate in (path / "sentence_bert_config.json", folder / "sentence_bert_config.json"):
        if candidate.exists():
            value = _object(candidate).get("max_seq_length")
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise CheckpointError(f"{candidate}: max_seq_length must be a whole number of tokens, got {value!r}")
            return value or None
    return None


def _st_pooling(config_file: Path, where: str) -> str:
    config = _object(config_file)
    mode = config.get("pooling_mode")  # sentence-transformers >= 5 writes one string ...
    if mode is None:  # ... older versions one boolean per mode
        modes = [m for m, key in LEGACY_POOLING_KEYS.items() if config.get(key)]
        if len(modes) != 1:
            raise CheckpointError(f"{where}: {config_file} must enable exactly one pooling mode of "
                                  f"{', '.join(POOLING_MODES)} (found {modes or 'none'})")
        mode = modes[0]
    if isinstance(mode, list) or mode not in POOLING_MODES:
        raise CheckpointError(f"{where}: pooling {mode!r} is not supported; supported: {', '.join(POOLING_MODES)}")
    return mode


def _st_dense(path: Path, where: str) -> DenseLayer:
    config = _object(path / "config.json")
    activation = str(config.get("activation_function", "torch.nn.modules.linear.Identity")).rsplit(".", 1)[-1].lower()
    if activation not in DENSE_ACTIVATIONS:
        raise CheckpointError(f"{where}: Dense activation {activation!r} is not supported "
                              f"({', '.join(DENSE_ACTIVATIONS)})")
    weights = next((path / n for n in ("model.safetensors", "pytorch_model.bin") if (path / n).exists()), None)
    if weights is None:
        raise CheckpointError(f"{where}: {path} has no model.safetensors or pytorch_model.bin")
    if weights.suffix == ".safetensors":
        check_safetensors(weights)
    try:
        return DenseLayer(weights, int(config["in_features"]), int(config["out_features"]),
                          bool(config.get("bias", True)), activation)
    except (KeyError, TypeError, ValueError) as err:
        raise CheckpointError(f"{where}: {path / 'config.json'} needs in_features and out_features ({err})") from None


def _safetensors_files(folder: Path) -> list[Path]:
    """The transformer's safetensors weights: model.safetensors, or the shards its index lists."""
    if (folder / "model.safetensors").exists():
        return [folder / "model.safetensors"]
    index = folder / "model.safetensors.index.json"
    if not index.exists():
        return []
    weight_map = _object(index).get("weight_map")
    if not isinstance(weight_map, dict):
        raise CheckpointError(f"{index}: no weight_map")
    return [_inside(folder, name, f"{index}: weight_map file") for name in sorted(set(map(str, weight_map.values())))]


def _inside(folder: Path, entry, where: str) -> Path:
    """folder / entry, where a file in the folder names `entry`: it must stay in the folder (no `..` out of it, no
    absolute path), or loading the folder would read another folder's weights or configs. Judged on the names, not
    through symbolic links: the hub's cache links a snapshot's files to blobs outside it."""
    relative = os.path.normpath(entry) if isinstance(entry, str) else None
    if relative is None or os.path.isabs(relative) or relative == ".." or relative.startswith(".." + os.sep):
        raise CheckpointError(f"{where} {entry!r} is not inside {folder}")
    return folder / relative


def check_safetensors(path: Path) -> None:
    """A weights file that safetensors can open and whose tensors its bytes cover (the library checks both from the
    header, without reading the tensors): a cut or damaged copy is named here, when the encoder is checked before
    any work, and not by the loader inside a stage."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="np"):
            pass
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing (the weights' index lists it)") from None
    except (SafetensorError, OSError) as err:
        raise CheckpointError(f"{path}: not a whole safetensors file ({err}); copy or download it again") from None


def check_finite(tensors, where: str | Path) -> None:
    """Every (name, tensor) in `tensors` holds finite values: NaN weights gave NaN vectors, and the run exited 0."""
    import torch

    for name, tensor in tensors:
        if not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"{where}: tensor {name} holds NaN or infinite values")


def read_description(path: Path, format_name: str, error: type[CheckpointError], what: str) -> dict:
    """A folder's JSON description (ensemble.json, lens.json) whose `format` must be `format_name`; anything else
    is `error`, naming the file."""
    try:
        description = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise error(f"{path}: cannot be read as JSON ({err})") from None
    if not isinstance(description, dict) or description.get("format") != format_name:
        raise error(f"{path}: not {what} (format must be {format_name!r})")
    return description


def _object(path: Path) -> dict:
    """A JSON file that must hold an object (a module's configuration)."""
    value = _json(path)
    if not isinstance(value, dict):
        raise CheckpointError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing (is this an encoder checkpoint folder?)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{path}: not valid JSON ({err})") from None


def error_reason(err: BaseException) -> str:
    """An exception in one line, for a CheckpointError's brackets: its type and its message's first line."""
    text = str(err)
    return f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"


def check_hub_id(model_id: str, timeout_s: float = 10.0) -> None:
    """Before any work: `model_id`, which names no local folder, is a hub model that is cached here or that the hub
    knows (its metadata only, nothing downloaded). Where the id's first part is a local folder, it is a mistyped
    path far more often than a hub id: that is said at once, with the folder's closest names, and the hub is not
    asked."""
    import difflib

    parent = Path(model_id).parent
    if parent.is_dir() and str(parent) not in ("", "."):
        near = difflib.get_close_matches(Path(model_id).name, sorted(p.name for p in parent.iterdir()), n=3)
        raise CheckpointError(f"{model_id}: no such folder" + (f" (in {parent}/: {', '.join(near)}?)" if near else "")
                              + f"; {parent}/ is a local folder, so this is not taken for a hub id")
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(model_id, "config.json"), str):
        return
    try:
        from huggingface_hub import HfApi

        HfApi().model_info(model_id, timeout=timeout_s)
    except Exception as err:  # offline, unknown id, gated repo: all end the same way for the user
        raise CheckpointError(f"{model_id}: not a local folder, and the hub model could not be found "
                              f"({error_reason(err)})") from None


def resolve_hub_id(model_id: str) -> Path:
    """Download (or find in the local cache) a hub model's data files, never its code or pickles."""
    try:
        from huggingface_hub import snapshot_download
        return Path(snapshot_download(model_id, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model",
                                                                "*/*.json", "*/*.safetensors"]))
    except Exception as err:  # offline, unknown id, gated repo: all end the same way for the user
        raise CheckpointError(f"{model_id}: not a local folder, and the hub model could not be fetched "
                              f"({error_reason(err)})") from None
