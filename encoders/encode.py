r"""Embed text files into `.npy` matrices aligned line by line with their input.

    python -m encoders.encode --encoder models/cmlm-distilled --input sents.txt --output sents.npy
    python -m encoders.encode --encoder models/cmlm-distilled --column 2 --output-dir emb/ \
        corpus/de-en.dev.de corpus/de-en.dev.en

`--column N` embeds the N-th tab-separated field (BUCC files are `id<TAB>sentence`: use `--column 2`).
With `--output-dir`, each input F is written to DIR/<name of F>.npy, the name `miner.evaluate --embeddings DIR`
looks for. Inputs are streamed: a first pass counts and checks the lines (an empty or undecodable line is reported
with its file and line number before any encoding), the second encodes chunk by chunk and appends to the output,
so files larger than memory work. The output appears only when complete.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from encoders import load_encoder
from encoders.batching import describe_problems, sentence_problem
from encoders.binary import DTYPE as BINARY
from encoders.binary import is_binary
from encoders.options import add_encoder_options, encoder_options
from miner.console import exit_status, plural, setup_logging
from miner.io import InputFormatError, atomic_output, iter_lines, path_argument

log = logging.getLogger("encoders.encode")


def iter_texts(path: Path, column: int | None) -> Iterator[str]:
    for number, line in enumerate(iter_lines(path), start=1):
        if column is None:
            yield line
            continue
        fields = line.split("\t")
        if len(fields) < column:
            raise InputFormatError(f"{path}:{number}: no tab-separated field {column} in {line[:80]!r}")
        yield fields[column - 1]


def check_texts(path: Path, column: int | None) -> int:
    """Number of lines; every line that cannot be embedded is reported (file:line: reason) before any work."""
    count, problems = 0, []
    for count, text in enumerate(iter_texts(path, column), start=1):
        problem = sentence_problem(text)
        if problem:
            problems.append(f"{path}:{count}: {problem}")
    if problems:
        raise InputFormatError(describe_problems("line(s)", problems))
    if count == 0:
        raise InputFormatError(f"{path}: no lines to embed")
    return count


def encode_file(encoder, source: Path, output: Path, *, column: int | None = None, dtype: str = "float32",
                language: str | None = None, chunk_lines: int = 20000, show_progress: bool = False,
                total: int | None = None) -> int:
    """Stream `source` through the encoder into `output` (.npy, rows in line order); returns the line count.
    `total`: the count `check_texts` gave, where the caller checked the file already."""
    from tqdm.auto import tqdm

    if chunk_lines < 1:  # 0 wrote a header for every row and no row
        raise ValueError(f"chunk_lines must be 1 or more, got {chunk_lines}")
    total = total if total is not None else check_texts(source, column)
    texts = iter_texts(source, column)
    stored, width = (np.dtype(np.uint8), encoder.dim // 8) if is_binary(dtype) else (np.dtype(dtype), encoder.dim)
    with atomic_output(output) as handle, tqdm(total=total, unit="sent", desc=source.name,
                                               disable=not show_progress) as bar:
        np.lib.format.write_array_header_1_0(handle, {"descr": np.lib.format.dtype_to_descr(stored),
                                                      "fortran_order": False, "shape": (total, width)})
        while chunk := list(itertools.islice(texts, chunk_lines)):
            vectors = encoder.encode(chunk, language=language, progress=bar.update, dtype=dtype)
            handle.write(np.ascontiguousarray(vectors, dtype=stored).tobytes())
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m encoders.encode", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", required=True,
                        help="models/cmlm-ensemble (the default encoder), use-multilingual, a checkpoint, ensemble "
                        "or lens folder, a hub id, or char-ngram[:DIM]")
    parser.add_argument("--input", type=path_argument, help="one text file (or give several positional inputs)")
    parser.add_argument("inputs", nargs="*", type=path_argument, help="text files to embed (with --output-dir)")
    parser.add_argument("--output", type=path_argument, help="output .npy for --input")
    parser.add_argument("--output-dir", type=path_argument, help="write DIR/<input name>.npy for every input")
    parser.add_argument("--column", type=int, help="embed this 1-based tab-separated field")
    parser.add_argument("--dtype", choices=("float32", "float16", BINARY), default="float32",
                        help="binary: packed binary vectors, uint8 [n, dim / 8] (encoders.binary)")
    parser.add_argument("--language", help="language of the sentences (deu_Latn, de ...): an ensemble's shares, "
                        "and --language-removal pcr, need it")
    parser.add_argument("--chunk-lines", type=int, default=20000, help="lines read and sorted at a time")
    add_encoder_options(parser)
    args = parser.parse_args(argv)
    setup_logging()

    inputs = ([args.input] if args.input else []) + args.inputs
    if not inputs or (args.output is None) == (args.output_dir is None) or (args.output and len(inputs) != 1):
        parser.error("give --input FILE --output OUT.npy, or --output-dir DIR with one or more inputs")

    names = [source.name for source in inputs]
    clash = next((name for name in names if names.count(name) > 1), None)
    if args.output_dir and clash:  # DIR/<name>.npy: the second file's vectors would replace the first's
        parser.error(f"two inputs are named {clash}: --output-dir writes one {clash}.npy; encode them in two runs")
    if args.column is not None and args.column < 1:  # 0 took the last field, -1 the one before it
        parser.error(f"--column is 1-based: 1 or more, got {args.column}")
    if args.chunk_lines < 1:
        parser.error(f"--chunk-lines must be 1 or more, got {args.chunk_lines}")
    outputs = {source: args.output or args.output_dir / f"{source.name}.npy" for source in inputs}

    def command() -> None:
        for source, output in outputs.items():  # before any file is embedded, as every line of every file is
            if output.is_dir():
                raise ValueError(f"--output {output} is a folder: give a .npy file's path")
            if output.exists() and output.resolve() == source.resolve():
                raise ValueError(f"{output}: the output would overwrite its own input")
        totals = {source: check_texts(source, args.column) for source in inputs}
        encoder = load_encoder(args.encoder, **encoder_options(args))
        for source, output in outputs.items():
            started = time.perf_counter()
            n = encode_file(encoder, source, output, column=args.column, dtype=args.dtype, language=args.language,
                            chunk_lines=args.chunk_lines, show_progress=sys.stderr.isatty(), total=totals[source])
            seconds = time.perf_counter() - started
            log.info("%s: %d %s -> %s (%.1fs, %.0f sentences/s)", source, n, plural(n, "sentence"), output, seconds,
                     n / seconds)
        stats = getattr(encoder, "stats", {})
        for key in sorted(k for k in stats if k.startswith("truncated")):
            member = key.partition(":")[2]
            log.info("truncated to the %s maximum length: %d of %d sentences", f"member {member}'s" if member
                     else "model's", stats[key], stats[key.replace("truncated", "sentences", 1)])

    return exit_status(command)


if __name__ == "__main__":
    sys.exit(main())
