"""Sentence encoders: text in, L2-normalised vectors out, one row per sentence in input order.

    encoder = load_encoder("use-multilingual")               # built in; a checkpoint folder; a hub id (org/name)
    vectors = encoder.encode(["Guten Morgen.", "Good morning."])   # numpy float32 [2, dim]

Specs:
- a folder: our CMLM checkpoints, any BERT-family transformers checkpoint with its tokenizer (mean pooling), or a
  sentence-transformers folder (its own pooling and Dense layers); see encoders.checkpoint;
- `org/name`: a hub model id, fetched (data files only) when no such local folder exists;
- `use-multilingual`: Google's multilingual Universal Sentence Encoder v3 (16 languages, 512-d), our torch port
  over the weights in the `use` extra; the teacher of our distilled students (encoders.use_multilingual);
- `char-ngram[:DIM]`: hashed character n-grams, a lexical baseline that needs no model;
- a folder holding `ensemble.json`: members' vectors weighted per language and concatenated (encoders.ensemble),
  the teacher where it is strong and the student elsewhere;
- a folder holding `lens.json`: a contextual lens (seed 001) over a frozen transformer's token vectors
  (encoders.lens), trained by `python -m training.train` with a lens recipe.
`encode(..., dtype="binary")` gives packed binary vectors for any of them (encoders.binary).

Modules: checkpoint (what a folder holds), transformer (the encoder), batching (validation, token-budget batches),
pooling, model (the CMLM inference network and how checkpoints are saved), tokenizer (WordPiece training and
coverage), language_removal (PCR and the meaning projection), ensemble (members weighted per language), lens
(contextual lenses), binary (packed binary vectors), encode (the command line).
"""

from __future__ import annotations

from pathlib import Path

from encoders.batching import BadSentenceError
from encoders.char_ngram import CharNgramEncoder
from encoders.checkpoint import HUB_ID, CheckpointError, check_hub_id, read_checkpoint
from encoders.ensemble import EnsembleEncoder, is_ensemble, named_member, read_ensemble
from encoders.lens import is_lens, read_lens

BUILTIN = {"char-ngram": CharNgramEncoder}
USE_MULTILINGUAL = "use-multilingual"

__all__ = ["BadSentenceError", "CheckpointError", "binary_code", "check_spec", "load_encoder"]


MAX_BUILTIN_DIM = 1 << 20  # char-ngram:100000000000 asked for terabytes


def check_spec(spec: str) -> None:
    """Raise, naming the problem, when `spec` cannot name an encoder here, without loading one: the built-in USE
    checks that its package is installed, a checkpoint folder that its layout reads (JSON only), a hub id that the
    model is cached or known to the hub (check_hub_id)."""
    if spec == USE_MULTILINGUAL:
        from encoders.use_multilingual import check_installed

        check_installed()
    elif spec.partition(":")[0] in BUILTIN:
        return
    elif Path(spec).is_dir() and is_ensemble(spec):
        ensemble = read_ensemble(spec)
        for member in ensemble["members"]:
            with named_member(ensemble["path"], member):
                check_spec(member)
    elif Path(spec).is_dir() and is_lens(spec):
        read_checkpoint(read_lens(spec).encoder)
    elif Path(spec).is_dir():
        read_checkpoint(spec)
    elif not HUB_ID.match(spec):
        raise _unknown(spec)
    else:
        check_hub_id(spec)


def binary_code(spec: str) -> str:
    """Which binary code `encode(dtype="binary")` gives for this spec (encoders.binary), without loading it: a
    lens thresholds its features, every other encoder takes signs."""
    return "threshold" if Path(spec).is_dir() and is_lens(spec) else "sign"


def _unknown(spec: str) -> CheckpointError:
    from miner.config import bundled_hint

    return CheckpointError(f"unknown encoder {spec!r}: no such folder, not a hub id (org/name), and not a built-in "
                           f"encoder ({', '.join([*BUILTIN, USE_MULTILINGUAL])}){bundled_hint(spec)}")


def load_encoder(spec: str, **options):
    """An encoder from its spec. Options (device, precision, token_budget, batch_size, max_seq_length, pooling,
    language_removal) apply to transformer checkpoints; the built-in baseline takes none."""
    name, _, option = spec.partition(":")
    if spec == USE_MULTILINGUAL:
        from encoders.use_multilingual import OPTIONS, UseMultilingualEncoder  # torch loads only when used

        given = {k: v for k, v in options.items() if v is not None}
        unsupported = sorted(set(given) - set(OPTIONS))
        if unsupported:
            raise ValueError(f"encoder {spec!r} does not take {', '.join(unsupported)} (it takes {', '.join(OPTIONS)})")
        return UseMultilingualEncoder(**given)
    if name in BUILTIN:
        if any(value is not None for value in options.values()):
            raise ValueError(f"encoder {name!r} takes no options (got {', '.join(options)})")
        if not option:
            return BUILTIN[name]()
        if not (option.isascii() and option.isdigit()) or not 2 <= int(option) <= MAX_BUILTIN_DIM:
            raise ValueError(f"encoder {spec!r}: the part after ':' must be the vector size, 2 to "
                             f"{MAX_BUILTIN_DIM:,}, e.g. {name}:512")
        return BUILTIN[name](int(option))
    if not Path(spec).exists() and not HUB_ID.match(spec):
        raise _unknown(spec)
    parent = Path(spec).parent
    if not Path(spec).exists() and str(parent) not in ("", ".") and parent.is_dir():
        check_hub_id(spec)  # `models/cmlm-distiled`: a mistyped folder, named so, not fetched from the hub
    if is_ensemble(spec):
        return EnsembleEncoder(spec, load_encoder, **options)
    from encoders.transformer import TransformerEncoder  # torch and transformers load only when a model is used

    given = {k: v for k, v in options.items() if v is not None}
    if is_lens(spec):
        if "pooling" in given:
            raise ValueError(f"encoder {spec!r} is a lens: its lens is its pooling (no pooling option)")
        lens = read_lens(spec)
        return TransformerEncoder(read_checkpoint(lens.encoder), lens=lens, **given)
    return TransformerEncoder.load(spec, **given)
