"""Fitting PCR (encoders/language_removal.py) for an encoder: per language, a sample of sentences is embedded and the
first right singular vector of the matrix saved beside the model. A command of its own because it needs the encoders
package, which needs language_removal.

    python -m encoders.fit_pcr fit-pcr --encoder models/cmlm-distilled --input deu_Latn=de.txt --input eng_Latn=en.txt
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

from encoders.language_removal import PCR_FILE, PrincipalComponentRemoval

log = logging.getLogger("encoders.fit_pcr")


def fit_pcr_command(args: argparse.Namespace) -> None:
    from encoders import load_encoder
    from encoders.ensemble import is_ensemble
    from miner.console import plural
    from miner.io import read_lines

    if args.output is None and not Path(args.encoder).is_dir():
        raise ValueError(f"--encoder {args.encoder}: not a checkpoint folder, where PCR is saved by default; give "
                         f"--output")
    if is_ensemble(args.encoder):  # fitted at its default shares, and refused by it at load: a file of no use
        raise ValueError(f"--encoder {args.encoder}: an ensemble takes no language removal; fit PCR for a member")
    if args.sample < 2:
        raise ValueError(f"--sample must be 2 or more sentences a language, got {args.sample}")
    texts = {}
    for spec in args.input:  # every file read before the encoder loads
        language, _, path = spec.partition("=")
        if not path or not language:
            raise ValueError(f"--input {spec!r}: write LANGUAGE=FILE, e.g. deu_Latn=sentences.de.txt")
        if language in texts:  # the second file replaced the first: a language fitted on another's text
            raise ValueError(f"--input {language}= is given twice ({texts[language][1]}, {path}): one file a "
                             "language")
        texts[language] = ([line for line in read_lines(path) if line.strip()], path)
        if len(texts[language][0]) < 2:
            raise ValueError(f"{path}: {len(texts[language][0])} non-empty lines; PCR needs two sentences or more")
    encoder = load_encoder(args.encoder)
    rng = np.random.default_rng(args.seed)
    vectors = {}
    for language, (lines, path) in texts.items():
        sample = [lines[i] for i in sorted(rng.choice(len(lines), min(args.sample, len(lines)), replace=False))]
        vectors[language] = encoder.encode(sample, show_progress=sys.stderr.isatty())
        log.info("%s: %d sentences from %s", language, len(sample), path)
    output = args.output or Path(args.encoder) / PCR_FILE
    PrincipalComponentRemoval.fit(vectors).save(output)
    log.info("wrote %s (%d %s)", output, len(vectors), plural(len(vectors), "language"))


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging
    from miner.io import path_argument

    parser = argparse.ArgumentParser(prog="python -m encoders.fit_pcr", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    fit = commands.add_parser("fit-pcr", help="fit PCR per language and save it beside the model")
    fit.add_argument("--encoder", required=True, help="checkpoint folder")
    fit.add_argument("--input", action="append", required=True, help="LANGUAGE=FILE, one sentence per line")
    fit.add_argument("--sample", type=int, default=10000, help="sentences per language (default 10000)")
    fit.add_argument("--seed", type=int, default=0, help="which sentences are sampled (default 0)")
    fit.add_argument("--output", type=path_argument, help=f"default: <encoder>/{PCR_FILE}")
    args = parser.parse_args(argv)
    setup_logging()
    return exit_status(lambda: fit_pcr_command(args))


if __name__ == "__main__":
    sys.exit(main())
