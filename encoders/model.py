"""The CMLM inference network and how our checkpoints are written.

The inference network is a plain BERT encoder (transformers' `BertModel`, no pooler) with mean pooling: CMLM
trains extra heads (the projection MLP, the MLM head) but keeps only this at inference (METHODS §4), so those heads
live in training/. A checkpoint is a sentence-transformers folder: transformers' `config.json` and
`model.safetensors`, the tokenizer, and `modules.json` with a mean Pooling and a Normalize module. transformers,
sentence-transformers and cmlm-miner all load it, and the last two give the same vectors.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import torch

# Module type names as sentence-transformers has written them since v2: every version since reads them.
ST_MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]
# A distilled student: pooled vector -> a linear Dense layer to the teacher's width -> normalise.
ST_MODULES_DENSE = [
    *ST_MODULES[:2],
    {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
    {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"},
]


def bert_config(vocab_size: int, *, hidden: int = 384, layers: int = 6, heads: int | None = None,
                intermediate: int | None = None, max_positions: int = 256, pad_token_id: int = 0):
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                      num_attention_heads=heads or max(1, hidden // 64), intermediate_size=intermediate or 4 * hidden,
                      max_position_embeddings=max_positions, pad_token_id=pad_token_id)


def new_encoder_model(config, seed: int = 0) -> torch.nn.Module:
    """A freshly initialised inference network (deterministic for a seed)."""
    from transformers import BertModel

    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return BertModel(config, add_pooling_layer=False).eval()


@contextmanager
def transformers_quietly():
    """transformers' progress bars ("Loading weights") and its reports of a checkpoint's unused weights (a pooler
    head the encoders never use) off inside, as they were after: noise in a command's output, not news."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def save_encoder(model, tokenizer, folder: str | Path, *, max_seq_length: int | None = None,
                 dtype: torch.dtype | None = None, dense: torch.nn.Linear | None = None) -> Path:
    """Write a checkpoint folder (safetensors weights, optionally cast to `dtype`, e.g. torch.float16 to halve it);
    `dense`, a linear layer after pooling, becomes a sentence-transformers Dense module."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    to_save = model if dtype is None else _cast_copy(model, dtype)
    with transformers_quietly():
        to_save.save_pretrained(folder)  # safetensors: transformers' default format
    tokenizer.save_pretrained(folder)
    max_seq_length = max_seq_length or model.config.max_position_embeddings
    _write_json(folder / "modules.json", ST_MODULES_DENSE if dense is not None else ST_MODULES)
    if dense is not None:
        _save_dense(dense, folder / "2_Dense", dtype)
    _write_json(folder / "sentence_bert_config.json", {"max_seq_length": max_seq_length, "do_lower_case": False})
    _write_json(folder / "1_Pooling" / "config.json", {
        "word_embedding_dimension": model.config.hidden_size, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False})
    (folder / ("3_Normalize" if dense is not None else "2_Normalize")).mkdir(exist_ok=True)
    from miner.io import FILE_MODE

    for path in folder.rglob("*"):  # safetensors writes its file owner-only (0600): a shared model must be readable
        if path.is_file():
            path.chmod(FILE_MODE)
    return folder


def _save_dense(layer: torch.nn.Linear, folder: Path, dtype: torch.dtype | None) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = {f"linear.{name}": value.detach().to(dtype or value.dtype).contiguous().cpu()
             for name, value in layer.state_dict().items()}
    save_file(state, str(folder / "model.safetensors"))
    _write_json(folder / "config.json", {"in_features": layer.in_features, "out_features": layer.out_features,
                                         "bias": layer.bias is not None,
                                         "activation_function": "torch.nn.modules.linear.Identity"})


def _cast_copy(model, dtype: torch.dtype):
    import copy

    return copy.deepcopy(model).to(dtype)


def _write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
