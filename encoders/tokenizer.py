"""A cased multilingual WordPiece vocabulary, trained with `tokenizers`, and its coverage per language.

    python -m encoders.tokenizer build --input deu_Latn='train/de/*.txt.gz' --input eng_Latn=en.txt \\
        --vocab-size 32000 --output models/wordpiece-32k
    python -m encoders.tokenizer coverage --tokenizer models/wordpiece-32k --input deu_Latn=dev.de.txt

Languages are sampled with the CMLM smoothing exponent (METHODS §4): language l, holding n_l of N sentences, gets
a share proportional to (n_l / N) ** 0.3 of the training text, so small languages are upsampled (their lines
repeated) and large ones subsampled; without it a vocabulary is mostly English. The normaliser keeps case and
accents (a cased model), splits CJK characters one per token, and cleans control characters, as multilingual BERT
does. The output folder loads with `transformers.AutoTokenizer` (and thus in every encoder checkpoint).

Coverage reports, per language: the unknown-token rate ([UNK] tokens / all tokens), the share of sentences with at
least one [UNK], and tokens per word (fertility; high values mean the vocabulary barely covers the language).
"""

from __future__ import annotations

import argparse
import glob
import logging
import math
import sys
from pathlib import Path

import numpy as np

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
log = logging.getLogger("encoders.tokenizer")


def language_inputs(specs: list[str]) -> dict[str, list[Path]]:
    """`LANG=GLOB` arguments -> {language: files}; a pattern matching nothing is an error."""
    inputs: dict[str, list[Path]] = {}
    for spec in specs:
        language, _, pattern = spec.partition("=")
        if not language or not pattern:
            raise ValueError(f"--input {spec!r}: write LANGUAGE=FILE_OR_GLOB, e.g. deu_Latn='corpus/de/*.txt.gz'")
        files = sorted(Path(p) for p in glob.glob(pattern)) or ([Path(pattern)] if Path(pattern).exists() else [])
        if not files:
            raise ValueError(f"--input {spec!r}: no file matches {pattern}")
        inputs.setdefault(language, []).extend(files)
    return inputs


def read_language(files: list[Path]) -> list[str]:
    from miner.io import read_lines

    return [line for path in files for line in read_lines(path) if line.strip()]


def smoothed_sample_sizes(counts: dict[str, int], total: int, alpha: float = 0.3) -> dict[str, int]:
    """Lines to draw per language: `total` split in proportion to (n_l / N) ** alpha (at least one line each)."""
    shares = {lang: (n / sum(counts.values())) ** alpha for lang, n in counts.items()}
    norm = sum(shares.values())
    return {lang: max(1, round(total * share / norm)) for lang, share in shares.items()}


def smoothed_corpus(texts: dict[str, list[str]], total: int, alpha: float, seed: int) -> list[str]:
    """Training lines: each language's sample drawn without replacement while it lasts, then repeated."""
    rng = np.random.default_rng(seed)
    sizes = smoothed_sample_sizes({lang: len(lines) for lang, lines in texts.items()}, total, alpha)
    corpus = []
    for language in sorted(texts):
        lines, want = texts[language], sizes[language]
        picks = np.concatenate([rng.permutation(len(lines)) for _ in range(-(-want // len(lines)))])[:want]
        corpus.extend(lines[i] for i in picks)
        log.info("%s: %d lines available, %d drawn", language, len(lines), want)
    rng.shuffle(corpus)
    return corpus


def train_wordpiece(corpus: list[str], vocab_size: int, min_frequency: int = 2):
    """A `transformers.PreTrainedTokenizerFast` (BERT layout: [CLS] ... [SEP]) trained on `corpus`."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                      strip_accents=False, lowercase=False)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=SPECIAL_TOKENS, show_progress=sys.stderr.isatty(),
                                        limit_alphabet=6000)
    tokenizer.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    # The trainer numbers tokens of equal count in a hash order that changes from run to run (even on one thread);
    # WordPiece reads only the set (greedy longest match), so the special tokens first and the rest sorted make the
    # same vocabulary the same file. (Which merges a tie lets through can still change the set itself: on a tiny
    # corpus it does; 3,000 tokens over 87k lines came out the same file in every run.)
    learned = sorted(set(tokenizer.get_vocab()) - set(SPECIAL_TOKENS))
    tokenizer.model = models.WordPiece({token: i for i, token in enumerate([*SPECIAL_TOKENS, *learned])},
                                       unk_token="[UNK]", max_input_chars_per_word=100)
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", model_max_length=512)


def coverage(tokenizer, texts: dict[str, list[str]]) -> dict[str, dict]:
    """Per language: sentences, tokens, unknown-token rate, share of sentences with an [UNK], tokens per word."""
    backend, unk = tokenizer.backend_tokenizer, tokenizer.unk_token_id
    report = {}
    for language in sorted(texts):
        encodings = backend.encode_batch(texts[language], add_special_tokens=False)
        tokens = sum(len(e.ids) for e in encodings)
        unknown = sum(e.ids.count(unk) for e in encodings)
        words = sum(len(backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(t)))
                    for t in texts[language]) if backend.pre_tokenizer else tokens
        report[language] = {
            "sentences": len(encodings), "tokens": tokens,
            "unk_rate": unknown / max(tokens, 1),
            "sentences_with_unk": sum(unk in e.ids for e in encodings) / max(len(encodings), 1),
            "tokens_per_word": tokens / max(words, 1),
        }
    return report


def read_languages(specs: list[str]) -> dict[str, list[str]]:
    """Each `LANGUAGE=FILE_OR_GLOB`'s lines; a language with none is an error (a 0% unknown rate of no text went
    into the coverage mean)."""
    texts = {lang: read_language(files) for lang, files in language_inputs(specs).items()}
    empty = [lang for lang, lines in texts.items() if not lines]
    if empty:
        raise ValueError(f"no non-empty lines for {', '.join(empty)}")
    return texts


def format_coverage(report: dict[str, dict]) -> str:
    lines = [f"{'language':<12} {'sentences':>9} {'tokens':>9} {'unk %':>7} {'sent w/ unk %':>13} {'tok/word':>8}"]
    for language, row in report.items():
        lines.append(f"{language:<12} {row['sentences']:>9} {row['tokens']:>9} {100 * row['unk_rate']:>7.3f} "
                     f"{100 * row['sentences_with_unk']:>13.2f} {row['tokens_per_word']:>8.2f}")
    rates = [row["unk_rate"] for row in report.values()]
    lines.append(f"mean unk % over {len(rates)} languages: {100 * float(np.mean(rates)):.3f}")
    return "\n".join(lines)


def build_command(args: argparse.Namespace) -> None:
    from miner.io import check_output_folder, write_json

    for flag, value, least in (("--vocab-size", args.vocab_size, 10), ("--sample-lines", args.sample_lines, 1),
                               ("--min-frequency", args.min_frequency, 1)):
        if value is not None and value < least:  # -5 overflowed in Rust, 0 trained a vocabulary of nothing
            raise ValueError(f"{flag} must be {least} or more, got {value}")
    if not (math.isfinite(args.alpha) and args.alpha >= 0):
        raise ValueError(f"--alpha must be a number 0 or more (1: as the text comes, 0: languages alike), got "
                         f"{args.alpha}")
    check_output_folder(args.output)  # a file in the way, found before the training rather than after it
    texts = read_languages(args.input)
    total = args.sample_lines or sum(len(lines) for lines in texts.values())
    corpus = smoothed_corpus(texts, total, args.alpha, args.seed)
    tokenizer = train_wordpiece(corpus, args.vocab_size, args.min_frequency)
    args.output.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(args.output)
    report = coverage(tokenizer, texts)
    write_json(args.output / "coverage_train.json", {"alpha": args.alpha, "vocab_size": len(tokenizer),
                                                      "training_lines": len(corpus), "languages": report})
    print(format_coverage(report))
    log.info("wrote %s (%d tokens; coverage on the training text in coverage_train.json)", args.output,
             len(tokenizer))


def coverage_command(args: argparse.Namespace) -> None:
    from transformers import AutoTokenizer

    from miner.io import write_json

    if not (args.tokenizer / "tokenizer.json").is_file():  # else transformers takes the path for a hub id
        raise ValueError(f"--tokenizer {args.tokenizer}: no tokenizer.json there (a tokenizer folder, as "
                         "`encoders.tokenizer build` writes)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(args.tokenizer), use_fast=True, trust_remote_code=False)
    except (OSError, ValueError) as err:
        raise ValueError(f"{args.tokenizer / 'tokenizer.json'}: cannot be read ({str(err).splitlines()[0]})") \
            from None
    report = coverage(tokenizer, read_languages(args.input))
    print(format_coverage(report))
    if args.report:
        write_json(args.report, {"tokenizer": str(args.tokenizer), "languages": report})


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging
    from miner.io import path_argument

    parser = argparse.ArgumentParser(prog="python -m encoders.tokenizer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="train a WordPiece vocabulary")
    build.add_argument("--input", action="append", required=True, help="LANGUAGE=FILE_OR_GLOB (repeat)")
    build.add_argument("--output", type=path_argument, required=True, help="tokenizer folder to write")
    build.add_argument("--vocab-size", type=int, default=32000, help="WordPiece vocabulary size (default 32000)")
    build.add_argument("--min-frequency", type=int, default=2,
                       help="a piece seen fewer times is not learned (default 2)")
    build.add_argument("--alpha", type=float, default=0.3, help="language smoothing exponent (default 0.3)")
    build.add_argument("--sample-lines", type=int, help="training lines drawn in all (default: as many as given)")
    build.add_argument("--seed", type=int, default=0, help="which lines are drawn (default 0)")
    cover = commands.add_parser("coverage", help="unknown-token rate per language")
    cover.add_argument("--tokenizer", type=path_argument, required=True, help="tokenizer folder")
    cover.add_argument("--input", action="append", required=True, help="LANGUAGE=FILE_OR_GLOB (repeat)")
    cover.add_argument("--report", type=path_argument, help="also write the table as JSON")
    args = parser.parse_args(argv)
    setup_logging()
    return exit_status(lambda: (build_command if args.command == "build" else coverage_command)(args))


if __name__ == "__main__":
    sys.exit(main())
