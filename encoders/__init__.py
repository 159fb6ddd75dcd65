"""Sentence encoders: text in, L2-normalised float32 vectors out.

    encoder = load_encoder("char-ngram")
    vectors = encoder.encode(["Guten Morgen.", "Good morning."])   # numpy [2, dim]

Encoders are named by a spec string. Built in today: `char-ngram[:DIM]`, a lexical baseline needing no model.
The multilingual CMLM encoder (transformer checkpoints) arrives with the encoders issue.
"""

from __future__ import annotations

from encoders.char_ngram import CharNgramEncoder

BUILTIN = {"char-ngram": CharNgramEncoder}


def load_encoder(spec: str):
    """An encoder from its spec: `char-ngram` or `char-ngram:512` (vector size)."""
    name, _, option = spec.partition(":")
    if name not in BUILTIN:
        raise ValueError(f"unknown encoder {spec!r}; built-in encoders: {', '.join(BUILTIN)}")
    if not option:
        return BUILTIN[name]()
    if not option.isdigit():
        raise ValueError(f"encoder {spec!r}: the part after ':' must be the vector size, e.g. {name}:512")
    return BUILTIN[name](int(option))
