"""Per-language threshold offsets: one margin threshold, moved for each language by how its pairs score.

A margin threshold is tuned on a few language pairs (the dev pool's de/fr/ru/zh-en for the default encoder) and
then applied to every pair a crawl holds. But an encoder separates translations from near misses less well in some
languages than others: where the default ensemble gives the student all the weight (Czech, Hindi, Greek ...), its
true pairs' margins sit lower, and at the shared threshold recall fell to 15-59% on the train pool's WMT sets
while the teacher's languages kept 75-96% (docs/evaluation.md, "Thresholds per language"). So an encoder can carry
an offset per language, measured on held-out data (`python -m training.thresholds`), and a pair is mined at

    threshold(src, tgt) = mining.threshold + offset(src) + offset(tgt)        (a language without one: 0)

where offset(L) = s * (t*(L) - mean over the reference languages of t*), t*(L) is L's best-F1 threshold against
English on the same held-out sets (English, the pivot of those sets, has 0) and s the part of that move taken
(0.5 for the default encoder: the rest would cost more precision than it gains recall). The reference languages
are the ones the shared threshold was tuned on, and keep it (0).

The file (`thresholds.json` beside an encoder's files; `mining.threshold_offsets: encoder` reads it):

    {"format": "cmlm-threshold-offsets/1", "reference": ["deu_Latn", ...], "offsets": {"ces_Latn": -0.055, ...},
     ...}   # plus how they were measured: free-form, for people
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import posixpath
from pathlib import Path

from miner.languages import flores_names, is_flores_name, is_language_name, language_code

FILE = "thresholds.json"
FORMAT = "cmlm-threshold-offsets/1"
FROM_ENCODER = "encoder"  # mining.threshold_offsets: the encoder folder's file, where it has one


class ThresholdOffsetsError(ValueError):
    """Offsets that cannot be used; the message names the file (or setting) and the bad entry."""


def check_offsets(offsets, where: str) -> dict[str, float]:
    """{language: offset} with every key a `lang_Script` name as pairs name their languages (FLORES-200's:
    `zho_Hans`, not `cmn_Hans`, whose offset no pair would look up) and every value a finite number, or an error."""
    if not isinstance(offsets, dict):
        raise ThresholdOffsetsError(f"{where}: offsets must be a mapping of language to number, got "
                                    f"{type(offsets).__name__}")
    for language, offset in offsets.items():
        if not isinstance(language, str) or not is_language_name(language):
            raise ThresholdOffsetsError(f"{where}: {language!r} is not a language name (lang_Script, e.g. deu_Latn)")
        if not is_flores_name(language):  # pairs look their languages up by language_code's name: never applied
            raise ThresholdOffsetsError(f"{where}: {language!r} is not how pairs name the language (FLORES-200's "
                                        f"names): write {' or '.join(flores_names(language))}")
        if isinstance(offset, bool) or not isinstance(offset, (int, float)) or not math.isfinite(offset):
            raise ThresholdOffsetsError(f"{where}: the offset of {language} must be a finite number, got {offset!r}")
    return {language: float(offset) for language, offset in sorted(offsets.items())}


def parse_offsets(content: bytes | str, where: str) -> dict[str, float]:
    """The offsets of a `thresholds.json` file's content (`where` names the file in errors), checked."""
    try:
        data = json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ThresholdOffsetsError(f"{where}: not a readable JSON file ({error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ThresholdOffsetsError(f"{where}: not a threshold offsets file (format {FORMAT!r} expected)")
    return check_offsets(data.get("offsets"), where)


def read_offsets(path: str | Path, exists=os.path.isfile, read=lambda path: Path(path).read_bytes()
                 ) -> dict[str, float]:
    """The offsets of a `thresholds.json` file, checked; `exists` and `read` reach it (local files by default, the
    pipeline's FileSystems for cloud storage)."""
    if not exists(str(path)):
        raise ThresholdOffsetsError(f"{path}: file not found")
    try:
        content = read(str(path))
    except OSError as error:
        raise ThresholdOffsetsError(f"{path}: cannot be read ({error})") from None
    return parse_offsets(content, str(path))


def resolve_offsets(setting, encoder_spec: str | None, exists=os.path.isfile,
                    read=lambda path: Path(path).read_bytes()) -> dict[str, float]:
    """`mining.threshold_offsets` -> {language: offset}: None or {} (none), `encoder` (the encoder folder's file
    where it has one, else none: a built-in, a hub id), a path to such a file, or the mapping itself; `exists` and
    `read` as read_offsets'."""
    if setting is None:
        return {}
    if setting == FROM_ENCODER:
        path = posixpath.join(str(encoder_spec), FILE) if encoder_spec else None
        return read_offsets(path, exists, read) if path and exists(path) else {}
    if isinstance(setting, str):
        return read_offsets(setting, exists, read)
    return check_offsets(setting, "mining.threshold_offsets")


def pair_threshold(threshold: float | None, offsets: dict[str, float], src: str, tgt: str) -> float | None:
    """The threshold a pair is mined at (module docstring); None stays None (every selected pair kept)."""
    if threshold is None:
        return None
    return float(threshold) + offsets.get(src, 0.0) + offsets.get(tgt, 0.0)


def for_pair(config, src_lang: str | None, tgt_lang: str | None, encoder_spec: str | None):
    """A MiningConfig whose threshold is the pair's (`pair_threshold`); as it is without a threshold, offsets or
    both languages. Languages as the project names them (miner.languages.language_code)."""
    if config.threshold is None or not config.threshold_offsets or not src_lang or not tgt_lang:
        return config
    offsets = resolve_offsets(config.threshold_offsets, encoder_spec)
    return dataclasses.replace(config, threshold=pair_threshold(config.threshold, offsets, src_lang, tgt_lang))


def language_name(name: str, texts: list[str]) -> str:
    """`de` -> `deu_Latn` (its script from the texts where the name has none), to look its offset up; a name whose
    script the texts cannot tell stays as it is (and has no offset)."""
    try:
        return language_code(name, texts)
    except ValueError:
        return name
