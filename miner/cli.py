"""Command-line pieces shared by `miner.mine` and `miner.evaluate`: mining settings and where vectors come from.

Settings come from a YAML file (`--config`), then `--set section.key=value` overrides, then the shorthand flags
(`--k 16` is `--set mining.k=16`).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import sys
from pathlib import Path

import numpy as np

from encoders.binary import CENTERS
from miner.bucc import Sentences
from miner.config import ConfigError, load_config, section
from miner.io import InputFormatError, path_argument
from miner.mining import MiningConfig
from miner.vectors import EmbeddingError, load_embeddings

SHORTHANDS = {  # flag -> (section, key, type)
    "k": ("mining", "k", int),
    "margin": ("mining", "margin", str),
    "selection": ("mining", "selection", str),
    "index": ("knn", "index", str),
    "nprobe": ("knn", "nprobe", int),
}


def add_settings_arguments(parser: argparse.ArgumentParser, default_config: Path | None = None) -> None:
    parser.add_argument("--config", type=path_argument, default=default_config, help="YAML settings file")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one setting, e.g. --set knn.index=IVF4096,Flat (repeatable)")
    for flag, (sect, key, kind) in SHORTHANDS.items():
        parser.add_argument(f"--{flag}", type=kind, help=f"shorthand for --set {sect}.{key}=...")


def add_vector_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--embeddings", type=path_argument, metavar="DIR",
                        help="precomputed vectors: DIR/<text file name>.npy, row i = line i")
    source.add_argument("--encoder", help="embed the texts with this encoder: a checkpoint folder, a hub id, "
                        "use-multilingual or char-ngram")
    parser.add_argument("--binary", action="store_true",
                        help="compare the encoder's binary vectors (encoders.binary: a lens's thresholded features, "
                        "else signs), as `embed.dtype: binary` mines, instead of its float vectors")
    parser.add_argument("--binary-center", choices=CENTERS, default="language",
                        help="sign codes of the vectors less their language's mean over each evaluated set, as the "
                        "pipeline makes them over a crawl (default), or of the vectors as they are")
    parser.add_argument("--rescore", type=rescore_value, metavar="K|pairs",
                        help="with --binary: rank each code's K nearest by their float vectors' cosine (kept beside "
                        "the codes, as one machine can; the pipeline's pairs stage compares the codes), so margins "
                        "are the float vectors' own; or `pairs`: the codes' k-NN and neighbourhoods, each selected "
                        "pair's similarity from each side's float vector against the other's code "
                        "(encoders.binary.two_way_cosine); in the suite, a rescored column beside each binary one")
    parser.add_argument("--no-language", action="store_true",
                        help="do not tell the encoder the texts' languages (an ensemble then uses its default "
                        "shares): what a caller of encode() without a language gets")
    from encoders.options import add_encoder_options  # argparse only: torch loads when an encoder is used

    add_encoder_options(parser)


# What miner.mine and miner.evaluate read of a config (the pipeline's own sections are pipelines.mine's): a section
# spelt otherwise (`minning:`) was dropped without a word, and the job ran on the defaults it meant to change
SECTIONS = ("input", "encoder", "encoder_options", "mining", "knn", "pair_filter", "output")


def settings_from_args(args: argparse.Namespace) -> dict:
    config = load_config(args.config, args.overrides)
    unknown = [name for name in config if name not in SECTIONS]
    if unknown:
        like = difflib.get_close_matches(unknown[0], SECTIONS, 1)
        raise ConfigError(f"{args.config or '--set'}: unknown setting(s) {', '.join(unknown)}"
                          + (f" (did you mean {like[0]}?)" if like else "") + f"; known: {', '.join(SECTIONS)} "
                          "(a pipeline config's other sections are read by python -m pipelines.mine)")
    for flag, (sect, key, _) in SHORTHANDS.items():
        value = getattr(args, flag)
        if value is not None:
            config.setdefault(sect, {})[key] = value
    return config


def mining_config(config: dict) -> MiningConfig:
    return MiningConfig.from_dict(section(config, "mining"), section(config, "knn"))


PAIRS = "pairs"  # --rescore pairs: the selected pairs' similarities refined (miner.mining.refine_pairs)


def rescore_value(text: str) -> int | str:
    """--rescore's value: a short list's length K (VectorSource.rescoring), or `pairs` (VectorSource.refining)."""
    if text == PAIRS:
        return PAIRS
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of candidates or {PAIRS!r}, not {text!r}") from None


def check_rows(selected: np.ndarray, lines: np.ndarray, path: Path, text_path: Path) -> None:
    """A precomputed vector that cannot be compared, named by its row in the `.npy` file and its line in the
    text (the rows the miner later sees are the text's unique sentences, whose numbers would mislead)."""
    finite = np.isfinite(selected).all(axis=1)
    bad = ~finite | ~selected.any(axis=1)
    if bad.any():
        at = int(np.flatnonzero(bad)[0])
        why = "contains NaN or infinite values" if not finite[at] else "is a zero vector (it has no direction)"
        raise EmbeddingError(f"{path}: row {int(lines[at])} (line {int(lines[at]) + 1} of {text_path}) {why}")


class VectorSource:
    """Vectors for lines of a text file: from `DIR/<file name>.npy`, or by running an encoder on the texts."""

    def __init__(self, embeddings_dir: Path | None = None, encoder_spec: str | None = None,
                 encoder_options: dict | None = None, pass_language: bool = True, binary: bool = False,
                 binary_center: str = "language", rescore: int | str | None = None):
        if (embeddings_dir is None) == (encoder_spec is None):
            raise ValueError("give either precomputed embeddings (--embeddings DIR) or an encoder (--encoder)")
        self.embeddings_dir, self.encoder_spec = embeddings_dir, encoder_spec
        self.encoder_options = encoder_options or {}
        self.pass_language = pass_language
        if binary_center not in CENTERS:
            raise ValueError(f"binary centre must be one of {', '.join(CENTERS)}, got {binary_center!r}")
        short_list = isinstance(rescore, int) and rescore >= 1
        if rescore is not None and (not binary or not (short_list or rescore == PAIRS)):
            raise ValueError("--rescore K|pairs needs --binary (the codes' K nearest, or the pairs they select, are "
                             f"rescored by the float vectors) and K >= 1, got {rescore}")
        self.binary, self.binary_center, self.rescore = binary, binary_center, rescore
        self._encoder = None
        # float vectors by (file, rows, language), kept once as_binary shares them or rescoring reads them again
        self._floats: dict | None = {} if rescore else None

    @classmethod
    def from_args(cls, args: argparse.Namespace, config: dict, rescore: bool = True) -> VectorSource:
        """--embeddings, else --encoder, else the config's `encoder` (a folder relative to the config file);
        `rescore`: whether --rescore is this source's (the suite's float source leaves it to its binary ones)."""
        if args.embeddings is not None:
            if getattr(args, "binary", False) or getattr(args, "rescore", None):
                raise ValueError("--binary needs --encoder: precomputed embeddings are compared as they are")
            return cls(embeddings_dir=args.embeddings)
        from encoders.options import encoder_options

        spec = args.encoder
        if spec is None and config.get("encoder"):
            spec = str(config["encoder"])
            beside_config = Path(args.config).parent / spec if getattr(args, "config", None) else None
            if beside_config is not None and beside_config.exists():
                spec = str(beside_config)
        return cls(encoder_spec=spec, encoder_options=encoder_options(args, section(config, "encoder_options")),
                   pass_language=not getattr(args, "no_language", False), binary=getattr(args, "binary", False),
                   binary_center=getattr(args, "binary_center", "language"),
                   rescore=getattr(args, "rescore", None) if rescore else None)

    def describe(self) -> dict:
        if self.encoder_spec:
            return {"encoder": self.encoder_spec, **self.encoder_options,
                    **({} if self.pass_language else {"language": "not given"}),
                    **({"vectors": f"binary ({self._code_name()})"} if self.binary else {}),
                    **({"rescored": "the selected pairs' similarities, each side's float vector against the "
                                    "other's code" if self.rescore == PAIRS
                        else f"float similarities of the {self.rescore} nearest by the code"}
                       if self.rescore else {})}
        return {"embeddings": str(self.embeddings_dir)}

    def vectors(self, sentences: Sentences, rows: np.ndarray, language: str | None = None) -> np.ndarray:
        """Vectors of the sentences at `rows` (indices into `sentences`); `language` matters only to encoders that
        use it (PCR, an ensemble's shares), and is withheld with --no-language."""
        if self.encoder_spec:
            language = language if self.pass_language else None
            texts = [sentences.texts[r] for r in rows]
            if self.binary:
                from encoders import binary

                if self._binary_code() == "sign":  # from the float vectors: one encoding serves every column
                    floats = self._float_vectors(sentences, rows, texts, language)
                    center = binary.language_mean(floats) if self.binary_center == "language" else None
                    packed = binary.pack(binary.sign_bits(floats, center))
                else:  # a lens's threshold code comes from its features, not its unit vectors
                    packed = self._load_encoder().encode(texts, language=language, dtype=binary.DTYPE,
                                                         show_progress=sys.stderr.isatty())
                return binary.unit_rows(packed, self._binary_code(), str(sentences.path))
            return self._float_vectors(sentences, rows, texts, language)
        path = self.embeddings_dir / f"{sentences.path.name}.npy"
        matrix = load_embeddings(path)
        if matrix.shape[0] != sentences.line_count:
            raise EmbeddingError(
                f"{path} has {matrix.shape[0]} rows but {sentences.path} has {sentences.line_count} lines: "
                "embeddings must be aligned line by line with their text file"
            )
        lines = sentences.lines_of(rows)
        selected = np.asarray(matrix[lines])
        check_rows(selected, lines, path, sentences.path)
        return selected

    def rescoring(self, *sides: tuple) -> tuple:
        """What mine / xsim / retrieve take after `code` when this source rescores its codes' short lists: the
        float vectors of each side's (sentences, rows, language) and the short list's length; else nothing."""
        if not self.rescore or self.rescore == PAIRS:
            return ()
        return tuple(self.exact_vectors(*side) for side in sides), self.rescore

    def refining(self, *sides: tuple) -> dict:
        """What mine takes as `refine` when this source rescores the pairs it selects (`--rescore pairs`): each
        side's float vectors turned as its codes were (encoders.binary.rotated_rows, less the same mean)."""
        if self.rescore != PAIRS:
            return {}
        from encoders import binary

        rows = []
        for side in sides:
            floats = self.exact_vectors(*side)
            rows.append(binary.rotated_rows(floats, binary.language_mean(floats) if self._centres() else None))
        return {"refine": tuple(rows)}

    def exact_vectors(self, sentences: Sentences, rows: np.ndarray, language: str | None = None) -> np.ndarray | None:
        """The float vectors behind `vectors`' codes when this source rescores (`rescore`), else None: kept from
        the encoding the codes came from, not encoded again."""
        if not self.rescore:
            return None
        language = language if self.pass_language else None
        return self._float_vectors(sentences, rows, [sentences.texts[r] for r in rows], language)

    def _float_vectors(self, sentences: Sentences, rows: np.ndarray, texts: list[str], language: str | None):
        if self._floats is None:  # nobody shares them: nothing to keep
            return self._encoded(sentences, rows, texts, language)
        key = (str(sentences.path), hashlib.sha256(np.ascontiguousarray(rows).tobytes()).hexdigest(), language)
        if key not in self._floats:
            self._floats[key] = self._encoded(sentences, rows, texts, language)
        return self._floats[key]

    def _encoded(self, sentences: Sentences, rows: np.ndarray, texts: list[str], language: str | None):
        """The encoder's vectors of `texts`; a sentence it cannot embed is named by its file and line."""
        from encoders import BadSentenceError
        from encoders.batching import describe_problems

        try:
            return self._load_encoder().encode(texts, language=language, show_progress=sys.stderr.isatty())
        except BadSentenceError as err:
            lines = sentences.lines_of(np.asarray(rows))
            raise InputFormatError(describe_problems("sentence(s)", [
                f"{sentences.path}:{int(lines[i]) + 1}: {why}" for i, why in err.problems.items()])) from None

    def _centres(self) -> bool:
        return self.binary_center == "language" and self._binary_code() == "sign"

    def _code_name(self) -> str:
        return f"{self._binary_code()} code" + (", less the language's mean" if self._centres() else "")

    def as_binary(self, center: str | None = None, rescore: int | None = None) -> VectorSource:
        """The same encoder (loaded once, its float vectors shared from here on), compared through its binary
        vectors; `center`: encoders.binary.CENTERS (default: this source's); `rescore`: exact_vectors."""
        if not self.encoder_spec:
            raise ValueError("binary vectors need an encoder (--encoder), not precomputed embeddings")
        other = VectorSource(encoder_spec=self.encoder_spec, encoder_options=self.encoder_options,
                             pass_language=self.pass_language, binary=True,
                             binary_center=center or self.binary_center, rescore=rescore)
        if self._floats is None:
            self._floats = {}
        other._encoder, other._floats = self._load_encoder(), self._floats
        return other

    @property
    def code(self) -> str | None:
        """The binary code compared (None: float vectors), which mining turns into cosine estimates."""
        return self._binary_code() if self.binary else None

    def _binary_code(self) -> str:
        return getattr(self._load_encoder(), "binary_code", "sign")

    def _load_encoder(self):
        if self._encoder is None:
            from encoders import load_encoder  # only the commands that embed need the encoders package

            self._encoder = load_encoder(self.encoder_spec, **self.encoder_options)
        return self._encoder
