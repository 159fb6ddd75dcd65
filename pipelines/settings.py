"""The job's settings: a YAML file (configs/pipeline_sample.yaml by default) plus `--set section.key=value`.

Paths inside the file (input, lid.model, encoder, mining.threshold_offsets) are relative to the file; gs:// and
absolute paths are kept.
Each section is checked by the stage that uses it, so a typo fails before any data is read.
"""

from __future__ import annotations

import os
from pathlib import Path

from miner.config import ConfigError, load_config
from miner.languages import check_code, is_flores_name, is_language_name, yaml_bool_hint
from miner.thresholds import FROM_ENCODER
from pipelines import storage
from pipelines.storage import is_remote

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "pipeline_sample.yaml"
SECTIONS = {
    "input": str, "output": str, "languages": list, "pairs": str, "pivot": str,
    "read": dict, "extract": dict, "lid": dict, "split": dict, "filters": dict, "shards": dict,
    "encoder": str, "encoder_options": dict, "embed": dict, "mining": dict, "knn": dict, "gold": str,
    "pair_filter": (dict, bool), "bitext": dict,
}
PATH_KEYS = (("input",), ("gold",), ("encoder",), ("lid", "model"), ("mining", "threshold_offsets"))
PAIRINGS = ("pivot", "all")


def _given_in(key: str, config: str | Path | None, overrides: list[str]) -> str:
    """Where a top-level setting came from, for its error: the last --set that gave it, else the file."""
    given = [f"--set {o}" for o in overrides if o.partition("=")[0].split(".")[0].strip() == key]
    return given[-1] if given else str(config)


def load_settings(config: str | Path | None = DEFAULT_CONFIG, overrides: list[str] = ()) -> dict:
    settings = load_config(config, list(overrides))
    unknown = sorted(set(settings) - set(SECTIONS))
    if unknown:
        raise ConfigError(f"{_given_in(unknown[0], config, overrides)}: unknown setting(s) {', '.join(unknown)}; "
                          f"known: {', '.join(SECTIONS)}")
    for key, kind in SECTIONS.items():
        if settings.get(key) is not None and not isinstance(settings[key], kind):
            names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
            given = settings[key]
            hint = yaml_bool_hint(given) if kind is str or isinstance(given, bool) else "" if kind is not list else (
                f" (not a YAML list: a bracket or quote unclosed? e.g. --set '{key}=[deu_Latn, eng_Latn]')"
                if isinstance(given, str) and given.lstrip().startswith("[")
                else f" (on the command line: --set '{key}=[{given}]')")
            raise ConfigError(f"{_given_in(key, config, overrides)}: {key} must be a {names}, got "
                              f"{settings[key]!r}{hint}")
    if "output" in settings and not (settings["output"] or "").strip():  # `--set output=`: a run into the cwd
        raise ConfigError(f"{_given_in('output', config, overrides)}: output is empty: give a folder")
    for code in settings.get("languages") or []:
        check_language_name(code, "languages:")
    if settings.get("pivot") is not None:
        check_language_name(settings["pivot"], "pivot")
    if settings.get("pairs", "pivot") not in PAIRINGS:
        raise ConfigError(f"pairs must be one of {', '.join(PAIRINGS)}, got {settings['pairs']!r}")
    if config is not None:
        _resolve_paths(settings, Path(config).resolve().parent)
    return settings


def check_pairs_possible(settings: dict) -> None:
    """Languages listed so that the pairs stage can mine no pair (pivot pairs without the pivot among them, or one
    language): an error naming the fix, where the run mined nothing without a word. `languages: []` (every language
    found) is decided by the crawl."""
    languages = sorted(set(settings.get("languages") or []))
    if not languages:
        return
    pairing, pivot = settings.get("pairs", "pivot"), settings.get("pivot", "eng_Latn")
    if language_pairs(languages, pairing, pivot):
        return
    if pairing == "pivot" and pivot not in languages:
        raise ConfigError(f"pairs: pivot, but the pivot {pivot} is not among languages [{', '.join(languages)}]: "
                          f"add it to mine each with {pivot}, or set pairs: all to mine them with one another")
    raise ConfigError(f"languages [{', '.join(languages)}] make no pair to mine: list two languages or more "
                      "(or [] for every language found)")


def check_language_name(code, what: str) -> str:
    """A language of the pipeline's settings as its identifier labels sentences, ISO 639-3 and ISO 15924
    (`deu_Latn`): any other form (`de`, `deu`, `deu-Latn`, BCP 47's `de-DE`, `zh-Hant`) or a code neither registers
    (`deu_Latm`) would match no sentence, and the run would mine nothing in it without a word; so would a registered
    code the identifier never labels with (`cmn_Hans`, `nor_Latn`, `ara_Arab`: it labels zho_Hans, nob_Latn,
    arb_Arab, as FLORES-200 names them: miner.languages.is_flores_name). Each is an error with the name it likely
    means (did_you_mean: deu_Latn, zho_Hant), as lid.languages gives it. One that names no language at all
    (`../etc`) is refused as check_code refuses it: the languages name output files."""
    if isinstance(code, bool):  # Norwegian's `no`, read by YAML: quoted it is refused in turn, for nob_Latn
        raise ConfigError(f"{what} {code!r} is not a language{yaml_bool_hint(code)}"
                          + (": Norwegian is nob_Latn as sentences are labelled" if code is False else ""))
    if not is_language_name(code) and not did_you_mean(code):
        check_code(code, what)
    if not is_language_name(code):
        raise ConfigError(f"{what} {code!r} is not a language as sentences are labelled: an ISO 639-3 code and an "
                          f"ISO 15924 script, such as deu_Latn, zho_Hans or srp_Cyrl{did_you_mean(code)}")
    if not is_flores_name(code):  # a macrolanguage, or another name of one: no sentence is labelled with it
        raise ConfigError(f"{what} {code!r} is not a language as sentences are labelled: sentences take "
                          f"FLORES-200's name of a language (an individual language, not a macrolanguage or "
                          f"another code for it){did_you_mean(code)}")
    return code


def did_you_mean(code: str) -> str:
    """`; did you mean deu_Latn?` where the shipped identifier names the language `code` writes in another form."""
    from miner.io import InputFormatError
    from miner.languages import names_like
    from pipelines.text.langid import SHIPPED_MODEL, read_sidecar

    try:
        sidecar = read_sidecar(SHIPPED_MODEL) or {}
    except (InputFormatError, OSError):  # no hint is better than an error about another file in its place
        sidecar = {}
    like = names_like(code, sidecar.get("examples") or {})
    return f"; did you mean {' or '.join(like)}?" if like else ""


def _resolve_paths(settings: dict, base: Path) -> None:
    for keys in PATH_KEYS:
        node = settings
        for key in keys[:-1]:
            node = node.get(key) or {}
        value = node.get(keys[-1])
        if not isinstance(value, str) or not value or is_remote(value) or os.path.isabs(value):
            continue
        if keys == ("mining", "threshold_offsets") and value == FROM_ENCODER:
            continue
        if keys == ("lid", "model"):
            node[keys[-1]] = _resolve_lid(value, base)
            continue
        candidate = os.path.normpath(base / value)
        if keys == ("encoder",) and not os.path.exists(candidate):
            continue  # not a folder beside the config: a built-in encoder (char-ngram) or a hub id
        node[keys[-1]] = candidate


def _resolve_lid(value: str, base: Path) -> str:
    """Each model of a `lid.model` value (`A+B` combines two) resolved, built-in names (cmlm-lid, lid.176,
    combined) kept."""
    from pipelines.text.langid import BUILTIN_MODELS, COMBINED

    return "+".join(part if part in BUILTIN_MODELS or part == COMBINED or is_remote(part) or os.path.isabs(part)
                    else os.path.normpath(base / part) for part in value.split("+"))


def section(settings: dict, name: str) -> dict:
    value = settings.get(name) or {}
    return dict(value)


def language_pairs(languages: list[str], pairing: str, pivot: str) -> list[tuple[str, str]]:
    """(source, target) pairs to mine: every language with the pivot as target, or every pair (sorted)."""
    languages = sorted(set(languages))
    if pairing == "pivot":
        return [(lang, pivot) for lang in languages if lang != pivot] if pivot in languages else []
    return [(a, b) for i, a in enumerate(languages) for b in languages[i + 1:]]


def with_defaults(settings: dict, name: str, defaults: dict) -> dict:
    """Section `name` with `defaults` filled in; a key it does not know is an error naming the known ones."""
    values = dict(settings.get(name) or {})
    unknown = set(values) - set(defaults)
    if unknown:
        raise ValueError(f"{name}: unknown setting(s) {sorted(unknown)}; known: {sorted(defaults)}")
    return {**defaults, **values}


# -- the embed section --------------------------------------------------------------------------------------------

EMBED_DEFAULTS = {"batch_size": 1024, "dtype": "float16", "share_model": "auto", "binary_center": "language",
                  "binary_refine": False, "pack_partial_chunks": True}


def embed_settings(settings: dict) -> dict:
    """The embed section with its defaults, checked."""
    from encoders import binary

    values = with_defaults(settings, "embed", EMBED_DEFAULTS)
    batch = values["batch_size"]
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"embed.batch_size must be a positive whole number of sentences, got {batch!r}")
    if values["share_model"] not in ("auto", True, False):
        raise ValueError(f"embed.share_model must be auto, true or false, got {values['share_model']!r}")
    if values["dtype"] not in ("float16", "float32", binary.DTYPE):
        raise ValueError(f"embed.dtype must be float16, float32 or binary, got {values['dtype']!r}")
    if values["binary_center"] not in binary.CENTERS:
        raise ValueError(f"embed.binary_center must be one of {', '.join(binary.CENTERS)}, "
                         f"got {values['binary_center']!r}")
    if not isinstance(values["pack_partial_chunks"], bool):
        raise ValueError(f"embed.pack_partial_chunks must be true or false, got {values['pack_partial_chunks']!r}")
    if not isinstance(values["binary_refine"], bool):
        raise ValueError(f"embed.binary_refine must be true or false, got {values['binary_refine']!r}")
    if values["binary_refine"] and (values["dtype"] != binary.DTYPE or values["binary_center"] != "language"):
        raise ValueError("embed.binary_refine scores the pairs that sign codes select again: it needs "
                         "embed.dtype: binary with embed.binary_center: language")
    return values


def refines_pairs(settings: dict) -> bool:
    """Whether the embed stage keeps each sentence's turned float row beside its sign code, and the pairs stage
    scores the pairs the codes select again from them (encoders.binary.two_way_cosine). An encoder whose codes
    are not sign codes (a lens's threshold code) cannot: an error, not a setting quietly ignored."""
    if not embed_settings(settings)["binary_refine"]:
        return False
    if code_of(settings["encoder"]) != "sign":
        raise ValueError(f"embed.binary_refine: {settings['encoder']} gives {code_of(settings['encoder'])} codes, "
                         "and only sign codes are scored again from their float rows: leave it false")
    return True


def code_of(spec: str) -> str:
    """The binary code the encoder gives (encoders.binary_code), for a local folder or one staged on cloud
    storage (a remote runner's)."""
    from encoders import binary_code
    from encoders.lens import FILE as LENS_FILE
    from pipelines import storage

    if storage.is_remote(spec):
        return "threshold" if storage.exists(storage.join(spec, LENS_FILE)) else "sign"
    return binary_code(spec)


def centres_languages(settings: dict) -> bool:
    """Whether the embed stage makes sign codes of vectors less their language's mean (the shards then wait for
    the means)."""
    from encoders.binary import DTYPE

    values = embed_settings(settings)
    return (values["dtype"] == DTYPE and values["binary_center"] == "language"
            and code_of(settings["encoder"]) == "sign")


def binary_code_written(settings: dict) -> str | None:
    """Which binary code the embed stage writes (None: float vectors)."""
    from encoders.binary import DTYPE

    if embed_settings(settings)["dtype"] != DTYPE or not settings.get("encoder"):
        return None
    return "sign, less the language's mean" if centres_languages(settings) else code_of(settings["encoder"])


def mining_config(settings: dict):
    """The `mining` and `knn` sections as a miner.mining.MiningConfig, defaults filled in and checked."""
    from miner.mining import MiningConfig

    return MiningConfig.from_dict(section(settings, "mining"), section(settings, "knn"))


def threshold_offsets(settings: dict) -> dict[str, float]:
    """`mining.threshold_offsets` resolved to {language: offset} (miner.thresholds.resolve_offsets), files read
    through FileSystems: an encoder folder staged on cloud storage holds its thresholds.json there."""
    from miner.thresholds import resolve_offsets

    return resolve_offsets((settings.get("mining") or {}).get("threshold_offsets"), settings.get("encoder"),
                           storage.exists, storage.read_bytes)


# -- the bitext section -------------------------------------------------------------------------------------------

# A language pair's bitext is one Parquet and one TSV.gz file up to this many pairs; past it, parts of about this
# many by score range (pipelines/pairs/output.py), so the writer of a part holds that part, not the pair's bitext.
BITEXT_DEFAULTS = {"rows_per_part": 1_000_000}


def bitext_settings(settings: dict) -> dict:
    """The bitext section with its defaults, checked."""
    values = with_defaults(settings, "bitext", BITEXT_DEFAULTS)
    rows = values["rows_per_part"]
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ValueError(f"bitext.rows_per_part must be a positive whole number of pairs, got {rows!r}")
    return values
