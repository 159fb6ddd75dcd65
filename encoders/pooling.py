"""From token vectors to one sentence vector: pooling, sentence-transformers Dense layers, normalisation.

Pooling matches sentence-transformers exactly (the same sums over the attention mask, special tokens included),
so a checkpoint gives the same vectors through either library.
"""

from __future__ import annotations

import torch

from encoders.checkpoint import CheckpointError, DenseLayer, check_finite


def pool(tokens: torch.Tensor, mask: torch.Tensor, mode: str) -> torch.Tensor:
    """[batch, length, dim] token vectors and a [batch, length] 0/1 mask (right padding) -> [batch, dim]."""
    if mode == "cls":
        return tokens[:, 0]
    if mode == "lasttoken":
        last = mask.sum(dim=1) - 1
        return tokens[torch.arange(tokens.shape[0], device=tokens.device), last]
    if mode == "max":
        return tokens.masked_fill(mask.unsqueeze(-1) == 0, float("-inf")).amax(dim=1)
    weights = mask.unsqueeze(-1).to(tokens.dtype)
    sums = (tokens * weights).sum(dim=1)
    counts = weights.sum(dim=1).clamp(min=1e-9)
    if mode == "mean":  # CMLM's inference pooling (METHODS §4: mean beats CLS and MAX)
        return sums / counts
    if mode == "mean_sqrt_len_tokens":
        return sums / counts.sqrt()
    raise ValueError(f"unknown pooling mode {mode!r}")


ACTIVATIONS = {"identity": torch.nn.Identity, "tanh": torch.nn.Tanh, "relu": torch.nn.ReLU, "gelu": torch.nn.GELU}


def load_dense(layer: DenseLayer) -> torch.nn.Sequential:
    """A Dense module's Linear + activation, from safetensors (or a .bin read with weights_only=True)."""
    if layer.weights.suffix == ".safetensors":
        from safetensors.torch import load_file
        state = load_file(str(layer.weights))
    else:
        import pickle

        try:  # weights_only refuses anything but tensors: a pickle that is more is an error, never run
            state = torch.load(layer.weights, map_location="cpu", weights_only=True)
        except (pickle.UnpicklingError, RuntimeError, EOFError) as err:
            raise CheckpointError(f"{layer.weights}: not a plain tensor file ({type(err).__name__}); weights are "
                                  "read as tensors only, never as code") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{layer.weights}: not a Dense layer's weights (a {type(state).__name__}, not a "
                              "dictionary of tensors)")
    check_finite(state.items(), layer.weights)
    linear = torch.nn.Linear(layer.in_features, layer.out_features, bias=layer.bias)
    try:
        linear.load_state_dict({key.removeprefix("linear."): value for key, value in state.items()})
    except RuntimeError as err:
        raise CheckpointError(f"{layer.weights}: weights do not match the Dense config ({err})") from None
    return torch.nn.Sequential(linear, ACTIVATIONS[layer.activation]())
