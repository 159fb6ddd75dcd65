"""Embed text files into `.npy` matrices aligned line by line with their input.

    python -m encoders.encode --encoder char-ngram --input sents.txt --output sents.npy
    python -m encoders.encode --encoder char-ngram --column 2 --output-dir emb/ corpus/de-en.dev.de corpus/de-en.dev.en

`--column N` embeds the N-th tab-separated field (BUCC files are `id<TAB>sentence`: use `--column 2`).
With `--output-dir`, each input F is written to DIR/<name of F>.npy, the name `miner.evaluate --embeddings DIR`
looks for.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

from encoders import load_encoder
from miner.cli import exit_status, setup_logging
from miner.io import InputFormatError, atomic_output, read_lines

log = logging.getLogger("encoders.encode")


def read_column(path: Path, column: int | None) -> list[str]:
    lines = read_lines(path)
    if column is None:
        return lines
    texts = []
    for number, line in enumerate(lines, start=1):
        fields = line.split("\t")
        if len(fields) < column:
            raise InputFormatError(f"{path}:{number}: no tab-separated field {column} in {line[:80]!r}")
        texts.append(fields[column - 1])
    return texts


def encode_file(encoder, source: Path, output: Path, column: int | None, dtype: str) -> int:
    texts = read_column(source, column)
    try:
        vectors = encoder.encode(texts)
    except ValueError as err:  # the encoder names the sentence index; name the file and line too
        raise InputFormatError(f"{source}: {err} (sentence index = line number - 1)") from None
    with atomic_output(output) as handle:
        np.save(handle, vectors.astype(dtype), allow_pickle=False)
    return len(texts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m encoders.encode", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", required=True, help="encoder spec, e.g. char-ngram")
    parser.add_argument("--input", type=Path, help="one text file (or give several positional inputs)")
    parser.add_argument("inputs", nargs="*", type=Path, help="text files to embed (with --output-dir)")
    parser.add_argument("--output", type=Path, help="output .npy for --input")
    parser.add_argument("--output-dir", type=Path, help="write DIR/<input name>.npy for every input")
    parser.add_argument("--column", type=int, help="embed this 1-based tab-separated field")
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    args = parser.parse_args(argv)
    setup_logging()

    inputs = ([args.input] if args.input else []) + args.inputs
    if not inputs or (args.output is None) == (args.output_dir is None) or (args.output and len(inputs) != 1):
        parser.error("give --input FILE --output OUT.npy, or --output-dir DIR with one or more inputs")

    def command() -> None:
        encoder = load_encoder(args.encoder)
        for source in inputs:
            output = args.output or args.output_dir / f"{source.name}.npy"
            started = time.perf_counter()
            n = encode_file(encoder, source, output, args.column, args.dtype)
            log.info("%s: %d sentences -> %s (%.1fs)", source, n, output, time.perf_counter() - started)

    return exit_status(command)

if __name__ == "__main__":
    sys.exit(main())
