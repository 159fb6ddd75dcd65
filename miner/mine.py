"""Mine bitext from two sentence files: the bundled example by default.

    python -m miner.mine                                   # configs/mine_sample.yaml: the bundled de-en example
    python -m miner.mine --src a.de --tgt b.en --src-lang de --tgt-lang en --format lines --encoder char-ngram
    python -m miner.mine --embeddings EMB_DIR --set mining.threshold=1.06 --k 16 --selection union

Sentences are mined over their unique texts (a repeated text is embedded and matched once). Writes, atomically:
  OUTPUT/{src}-{tgt}.tsv.gz    score<TAB>source<TAB>target, best first (no header, no quoting; tabs and line
                               breaks of any kind inside texts become spaces: miner.io.tsv_field)
  OUTPUT/{src}-{tgt}.parquet   score, cosine, texts, languages, ids, and how often each text occurred
  OUTPUT/report.json           settings, counts, score range, and P/R/F1 when a gold file is configured
Paths inside a config file are relative to that file; paths given as flags are relative to where you run.
"""

from __future__ import annotations

import argparse
import gzip
import logging
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from miner import bucc
from miner.cli import (
    VectorSource,
    add_settings_arguments,
    add_vector_arguments,
    mining_config,
    settings_from_args,
)
from miner.config import ConfigError, section
from miner.console import exit_status, setup_logging
from miner.histograms import score_histogram
from miner.io import (
    InputFormatError,
    atomic_output,
    check_output_folder,
    path_argument,
    read_lines,
    tsv_field,
    write_json,
)
from miner.languages import check_code, yaml_bool_hint
from miner.margin import TINY_POOLS
from miner.mining import MiningConfig, mine
from miner.pair_filters import KEEP, PairFilter
from miner.selection import Pairs
from miner.thresholds import for_pair, language_name

log = logging.getLogger("miner.mine")
DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "mine_sample.yaml"
INPUT_FLAGS = ("src", "tgt", "src_lang", "tgt_lang", "gold", "format")
FORMATS = ("bucc", "lines")


def read_side(path: Path, fmt: str) -> bucc.Sentences:
    """`bucc`: id<TAB>sentence lines. `lines`: one sentence per line, id = line number; blank lines skipped."""
    if fmt == "bucc":
        try:
            return bucc.read_sentences(path)
        except InputFormatError as err:
            if f"{path}:1: expected 'id<TAB>sentence'" not in str(err):
                raise
            raise InputFormatError(f"{err} (a file of one sentence a line: --format lines)") from None
    if fmt != "lines":
        raise ConfigError(f"input.format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    lines = read_lines(path)
    kept = np.array([i for i, text in enumerate(lines) if text.strip()], dtype=np.int64)
    if len(kept) < len(lines):
        log.info("%s: skipped %d blank lines", path, len(lines) - len(kept))
    if not len(kept):
        raise InputFormatError(f"{path}: no sentences")
    return bucc.Sentences(path, [str(i + 1) for i in kept], [lines[i] for i in kept], kept, len(lines))


def resolve_inputs(settings: dict, config_path: Path | None, args: argparse.Namespace) -> dict:
    inputs = section(settings, "input")
    unknown = sorted(set(inputs) - set(INPUT_FLAGS))
    if unknown:  # a misspelt `gold_file:` was ignored, and the run scored nothing
        raise ConfigError(f"input: unknown setting(s) {', '.join(unknown)}; known: {', '.join(INPUT_FLAGS)}")
    base = config_path.parent if config_path else Path.cwd()
    for key in ("src", "tgt", "gold"):
        if inputs.get(key):
            inputs[key] = Path(os.path.relpath((base / inputs[key]).resolve()))
    for key in INPUT_FLAGS:
        if getattr(args, key) is not None:
            inputs[key] = getattr(args, key)
    if args.src is not None and args.gold is None:
        inputs.pop("gold", None)  # a configured gold file belongs to the configured inputs
    for key in ("src_lang", "tgt_lang"):
        if isinstance(inputs.get(key), bool):  # `src_lang: no` is not missing: YAML read Norwegian as false
            raise ConfigError(f"input.{key} {inputs[key]!r} is not a language code{yaml_bool_hint(inputs[key])}")
    missing = [k for k in ("src", "tgt", "src_lang", "tgt_lang") if not inputs.get(k)]
    if missing:
        raise ConfigError(f"missing input setting(s): {', '.join(missing)} (in the config's input section or as flags)")
    inputs.setdefault("format", "bucc")
    for key in ("src_lang", "tgt_lang"):
        check_code(str(inputs[key]), key.replace("_", "-"))
    return inputs


def bitext_table(pairs: Pairs, src: bucc.Sentences, tgt: bucc.Sentences, src_unique, tgt_unique,
                 langs: tuple[str, str]) -> pa.Table:
    src_rows, tgt_rows = src_unique.rows[pairs.src], tgt_unique.rows[pairs.tgt]
    src_copies, tgt_copies = Counter(src.texts), Counter(tgt.texts)
    return pa.table({
        "score": pa.array(pairs.margin, pa.float32()),
        "cosine": pa.array(pairs.cos, pa.float32()),
        # typed: with no pair, untyped lists made columns of type null that other pairs' files do not join with
        "src_text": pa.array([src.texts[r] for r in src_rows], pa.string()),
        "tgt_text": pa.array([tgt.texts[r] for r in tgt_rows], pa.string()),
        "src_lang": pa.array([langs[0]] * len(pairs), pa.string()),
        "tgt_lang": pa.array([langs[1]] * len(pairs), pa.string()),
        "src_id": pa.array([src.ids[r] for r in src_rows], pa.string()),  # first occurrence of a repeated text
        "tgt_id": pa.array([tgt.ids[r] for r in tgt_rows], pa.string()),
        "src_copies": pa.array([src_copies[src.texts[r]] for r in src_rows], pa.int32()),
        "tgt_copies": pa.array([tgt_copies[tgt.texts[r]] for r in tgt_rows], pa.int32()),
    })


def write_bitext(table: pa.Table, output: Path, name: str) -> list[Path]:
    tsv, parquet = output / f"{name}.tsv.gz", output / f"{name}.parquet"
    with atomic_output(tsv) as handle, gzip.GzipFile(fileobj=handle, mode="wb", mtime=0, filename="") as gz:
        for score, s, t in zip(table["score"].to_pylist(), table["src_text"].to_pylist(),
                               table["tgt_text"].to_pylist()):
            gz.write(f"{score:.6f}\t{tsv_field(s)}\t{tsv_field(t)}\n".encode())
    with atomic_output(parquet) as handle:
        pq.write_table(table, handle, compression="zstd")
    return [tsv, parquet]


def filter_pairs(pairs: Pairs, pair_filter: PairFilter | None, src, tgt, src_unique, tgt_unique,
                 langs: tuple[str, str]) -> Pairs:
    """The pairs that pass the pair filter's rules (miner.pair_filters); its counts say what each rule dropped."""
    if pair_filter is None or not len(pairs):
        return pairs
    keep = np.fromiter((pair_filter.check(src.texts[s], tgt.texts[t], *langs) is KEEP
                        for s, t in zip(src_unique.rows[pairs.src], tgt_unique.rows[pairs.tgt])),
                       dtype=bool, count=len(pairs))
    return pairs.subset(keep)


def run(inputs: dict, source: VectorSource, config: MiningConfig, output: Path,
        pair_filter: PairFilter | None = None) -> dict:
    src, tgt = read_side(Path(inputs["src"]), inputs["format"]), read_side(Path(inputs["tgt"]), inputs["format"])
    # read before the mining: a gold file that cannot be read was found after the bitext had been written
    gold = bucc.read_gold(Path(inputs["gold"]), src, tgt) if inputs.get("gold") else None
    src_unique, tgt_unique = bucc.unify(src), bucc.unify(tgt)
    log.info("embedding %d + %d unique sentences with %s", len(src_unique.texts), len(tgt_unique.texts),
             source.describe())
    config = for_pair(config, language_name(str(inputs["src_lang"]), src.texts[:1000]),
                      language_name(str(inputs["tgt_lang"]), tgt.texts[:1000]), source.encoder_spec)
    src_vectors = source.vectors(src, src_unique.rows, inputs["src_lang"])
    tgt_vectors = source.vectors(tgt, tgt_unique.rows, inputs["tgt_lang"])
    sides = (src, src_unique.rows, inputs["src_lang"]), (tgt, tgt_unique.rows, inputs["tgt_lang"])
    pairs = mine(src_vectors, tgt_vectors, config, (str(src.path), str(tgt.path)), source.code,
                 *source.rescoring(*sides), **source.refining(*sides))
    langs = (inputs["src_lang"], inputs["tgt_lang"])
    pairs = filter_pairs(pairs, pair_filter, src, tgt, src_unique, tgt_unique, langs)
    name = "-".join(langs)
    written = write_bitext(bitext_table(pairs, src, tgt, src_unique, tgt_unique, langs), output, name)
    report = {
        "pair": name, "source": str(src.path), "target": str(tgt.path),
        "settings": {**config.describe(len(src_unique.texts), len(tgt_unique.texts)), **source.describe()},
        "sentences": {langs[0]: {"lines": len(src), "unique": len(src_unique.texts)},
                      langs[1]: {"lines": len(tgt), "unique": len(tgt_unique.texts)}},
        "pairs": len(pairs),
        "pair_filter": pair_filter.report() if pair_filter else None,
        "score_range": [float(pairs.margin.min()), float(pairs.margin.max())] if len(pairs) else None,
        "score_histogram": score_histogram(pairs.margin),  # what each threshold would keep (--plot draws it)
        "outputs": [str(p) for p in [*written, output / "report.json"]],
    }
    if gold is not None:
        candidates = bucc.candidates_to_ids(pairs, src_unique, tgt_unique, gold)
        report["gold"] = {"file": str(inputs["gold"]), **bucc.score_at(candidates, -np.inf)}
    write_json(output / "report.json", report)
    return report


def format_summary(report: dict) -> str:
    s = report["settings"]
    lines = [f"mined {report['pair']}: " + ", ".join(f"{n['lines']} {lang} sentences ({n['unique']} unique)"
                                                   for lang, n in report["sentences"].items()),
             f"  {report['pairs']} pairs (k={s['k']} margin={s['margin']} selection={s['selection']} "
             f"threshold={s['threshold']} index={s['index']})"]
    if report.get("pair_filter"):
        dropped = report["pair_filter"]["dropped"]
        lines.append("  pair filter dropped " + (", ".join(f"{n} ({reason})" for reason, n in dropped.items())
                                                 if dropped else "nothing"))
    if report["score_range"]:
        lines.append(f"  margin range {report['score_range'][0]:.4f} .. {report['score_range'][1]:.4f}")
    if report["pairs"] and all(n["unique"] < TINY_POOLS for n in report["sentences"].values()):
        lines.append(f"  both sides under {TINY_POOLS} sentences, where margins rank unrelated pairs high too: check "
                     "the pairs (docs/evaluation.md, Both pools tiny)")
    if "gold" in report:
        g = report["gold"]
        unscored = report["pairs"] - g["extracted"]
        lines.append(f"  against {g['file']}: P {100 * g['precision']:.1f}  R {100 * g['recall']:.1f}  "
                     f"F1 {100 * g['f1']:.1f}  ({g['correct']} of {g['gold']} gold pairs found"
                     + (f"; {unscored} mined pair(s) with a repeated text not scored, by the BUCC rule)"
                        if unscored else ")"))
    lines.append("  wrote " + ", ".join(report["outputs"]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m miner.mine", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_settings_arguments(parser, DEFAULT_CONFIG)
    add_vector_arguments(parser)
    for flag in INPUT_FLAGS:
        parser.add_argument(f"--{flag.replace('_', '-')}", dest=flag,
                            type=path_argument if flag in ("src", "tgt", "gold") else str,
                            help=f"input {flag} (overrides the config's input.{flag})")
    parser.add_argument("--output", type=path_argument,
                        help="output folder (default: the config's output, or ./output)")
    parser.add_argument("--plot", metavar="FILE.png", type=path_argument,
                        help="also draw how many pairs each margin threshold keeps (needs matplotlib)")
    parser.add_argument("-v", "--verbose", action="store_true", help="also log debug lines")
    args = parser.parse_args(argv)
    setup_logging(args.verbose)

    def command() -> None:
        settings = settings_from_args(args)
        inputs = resolve_inputs(settings, args.config, args)
        output = args.output or Path(settings.get("output") or "output")
        check_output_folder(output)  # before the mining, not after it
        pair_filter = PairFilter.from_settings(settings.get("pair_filter"))
        report = run(inputs, VectorSource.from_args(args, settings), mining_config(settings), output, pair_filter)
        print(format_summary(report))
        if args.plot:  # after the outputs: a plot that cannot be drawn must not cost them
            from miner.plots import plot_pairs_by_threshold

            plot_pairs_by_threshold({report["pair"]: report["score_histogram"]}, report["settings"].get("threshold"),
                                    f"pairs mined from {report['source']}", args.plot)
            print(f"  drew the pairs each threshold keeps: {args.plot}")

    return exit_status(command)


if __name__ == "__main__":
    sys.exit(main())
