"""Removing language identity from sentence vectors, optionally, at encode time (METHODS §7).

- PCR (seeds 000/002): per language, the first right singular vector c of that language's embedding matrix is
  the direction that says "this is German"; remove it, v' = v - (v.c) c, and renormalise. Fitted on a sample per
  language and saved beside the model as `pcr.safetensors` (one tensor per language label).
- Meaning projection (seed 003): the single-layer meaning head MLP_M of an autoencoder trained on a frozen encoder
  (training/ exports it); v' = act(W v + b), renormalised. Saved as `meaning_projection.safetensors`.

    python -m encoders.fit_pcr fit-pcr --encoder models/cmlm-distilled --input deu_Latn=de.txt --input eng_Latn=en.txt

Language labels are free strings, but they must be the same at fitting and encoding (the pipeline uses
ISO 639-3 plus script, e.g. `deu_Latn`).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

PCR_FILE = "pcr.safetensors"
MEANING_FILE = "meaning_projection.safetensors"
ACTIVATIONS = {"identity": lambda x: x, "tanh": np.tanh, "relu": lambda x: np.maximum(x, 0)}

log = logging.getLogger("encoders.language_removal")


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), np.finfo(np.float32).tiny)


class PrincipalComponentRemoval:
    kind = "pcr"

    def __init__(self, components: dict[str, np.ndarray]):
        self.components = {lang: np.asarray(c, dtype=np.float32) for lang, c in components.items()}
        widths = {len(c) for c in self.components.values()}
        if len(widths) > 1:
            raise ValueError(f"PCR components of different sizes: {sorted(widths)}")
        self.input_dim = self.output_dim = widths.pop() if widths else 0

    @classmethod
    def fit(cls, vectors_by_language: dict[str, np.ndarray]) -> PrincipalComponentRemoval:
        components = {}
        for language, vectors in vectors_by_language.items():
            if len(vectors) < 2:
                raise ValueError(f"PCR for {language}: need at least 2 vectors, got {len(vectors)}")
            gram = vectors.astype(np.float64).T @ vectors.astype(np.float64)  # d x d: cheaper than an n x d SVD
            _, eigenvectors = np.linalg.eigh(gram)
            first = eigenvectors[:, -1]  # = first right singular vector of the n x d matrix
            components[language] = first * np.sign(first[np.argmax(np.abs(first))])  # a deterministic sign
        return cls(components)

    def apply(self, vectors: np.ndarray, language: str | None) -> np.ndarray:
        c = self.component(language)
        return _unit_rows(vectors - np.outer(vectors @ c, c)).astype(np.float32)

    def component(self, language: str | None) -> np.ndarray:
        """The direction fitted for `language`, named as at fit time or in another form of the same language
        (`de`, `deu`, `ger`, `de-AT` for a `deu_Latn` component, as the ensemble reads names) where that picks one;
        a name with a script matches that script, or a component fitted under a bare code (`srp_Latn` is not
        `srp_Cyrl`)."""
        if language is None:
            raise ValueError("PCR removes a per-language direction: say which language the sentences are in")
        if language in self.components:
            return self.components[language]
        from miner.languages import language_parts

        wanted, script, _ = language_parts(language)
        fitted = {name: language_parts(name)[:2] for name in self.components}
        same = sorted(name for name, (base, its) in fitted.items()  # one fitted under a bare code fits any script
                      if base == wanted and (script is None or its in (None, script)))
        if len(same) == 1:
            return self.components[same[0]]
        raise ValueError(f"PCR has no component for language {language!r}"
                         + (f" (it could be any of {', '.join(same)}: name one)" if same else "")
                         + f"; fitted: {', '.join(sorted(self.components))}")

    def save(self, path: Path) -> None:
        _save(path, self.components, {"kind": self.kind})

    @classmethod
    def load(cls, path: Path) -> PrincipalComponentRemoval:
        tensors, _ = _load(path)
        return cls(tensors)


class MeaningProjection:
    kind = "meaning"

    def __init__(self, weight: np.ndarray, bias: np.ndarray, activation: str = "identity"):
        if activation not in ACTIVATIONS:
            raise ValueError(f"meaning projection activation {activation!r} is not one of {', '.join(ACTIVATIONS)}")
        if weight.ndim != 2 or bias.shape != (weight.shape[0],):
            raise ValueError(f"meaning projection needs weight [out, in] and bias [out], got {weight.shape}, "
                             f"{bias.shape}")
        self.weight, self.bias, self.activation = weight.astype(np.float32), bias.astype(np.float32), activation
        self.output_dim, self.input_dim = weight.shape

    def apply(self, vectors: np.ndarray, language: str | None = None) -> np.ndarray:
        return _unit_rows(ACTIVATIONS[self.activation](vectors @ self.weight.T + self.bias)).astype(np.float32)

    def save(self, path: Path) -> None:
        _save(path, {"weight": self.weight, "bias": self.bias}, {"kind": self.kind, "activation": self.activation})

    @classmethod
    def load(cls, path: Path) -> MeaningProjection:
        tensors, metadata = _load(path)
        if set(tensors) != {"weight", "bias"}:
            raise ValueError(f"{path}: expected tensors 'weight' and 'bias', found {sorted(tensors)}")
        return cls(tensors["weight"], tensors["bias"], metadata.get("activation", "identity"))


def load_language_removal(folder: Path, kind: str | None, dim: int):
    """None, or the PCR / meaning projection saved beside the model in `folder`, checked against `dim`."""
    if kind in (None, "none"):
        return None
    files = {"pcr": (PCR_FILE, PrincipalComponentRemoval, "python -m encoders.fit_pcr fit-pcr"),
             "meaning": (MEANING_FILE, MeaningProjection, "training/ (the meaning/language autoencoder stage)")}
    if kind not in files:
        raise ValueError(f"language removal {kind!r} is not one of none, pcr, meaning")
    name, cls, maker = files[kind]
    path = Path(folder) / name
    if not path.exists():
        raise ValueError(f"{path}: missing; {kind} needs it beside the model (made by {maker})")
    removal = cls.load(path)
    if removal.input_dim != dim:
        raise ValueError(f"{path}: made for vectors of size [{removal.input_dim}], but the encoder gives {dim}")
    return removal


def _save(path: Path, tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    from safetensors.numpy import save

    from miner.io import atomic_output

    with atomic_output(path) as handle:
        handle.write(save({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in tensors.items()}, metadata))


def _load(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="np") as handle:
            return {key: handle.get_tensor(key) for key in handle.keys()}, dict(handle.metadata() or {})
    except Exception as err:  # safetensors raises its own error types for truncated or foreign files
        raise ValueError(f"{path}: not a readable safetensors file ({err})") from None
