"""Encoding throughput: cmlm-miner's encoder against sentence-transformers' `encode()`, same model, same sentences.

    python bench/bench_encode.py                       # 20k FLORES devtest sentences, 20 languages
    python bench/bench_encode.py --sentences 2000 --layers 2   # a quick look

Setup, all built here: a WordPiece vocabulary trained on the train pool (NTREX-128, never dev), and a BERT with
random weights (`--hidden`, `--layers`) saved as one of our checkpoints, which both libraries load. The sentences
are the first 1,000 lines of 20 FLORES-200 devtest languages (dev pool: measuring only), in mixed order as a
crawl would give them. Each contender runs in its own process (peak RSS is then its own), with the same batch size:
  - sentence-transformers `encode(batch_size=B)`, fp32 (the library's default);
  - ours, fp32, batch size B (token budget B x max length, so the budget never cuts a batch smaller);
  - ours, default precision (bf16 where the CPU has native bf16, else fp32), batch size B.
Faithfulness: cosine of each of our vectors to sentence-transformers' fp32 vector, and xsim accuracy (FLORES pairs
xx->en and back, among the benchmark sentences) and BUCC F1 (../shared/data/dev/bucc-style, 2-fold threshold) with
fp32 and with the default precision. Results go to bench/results/encode.json; docs/benchmarks.md quotes them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CMLM_SHARED", REPO.parent / "shared")) / "data"
FLORES = SHARED / "dev" / "flores200-devtest" / "devtest"
NTREX = SHARED / "train" / "ntrex-128" / "NTREX-128"
LANGUAGES = {  # FLORES code -> NTREX file code (for the vocabulary)
    "eng_Latn": "src.eng", "deu_Latn": "ref.deu", "fra_Latn": "ref.fra", "spa_Latn": "ref.spa", "ita_Latn": "ref.ita",
    "por_Latn": "ref.por", "nld_Latn": "ref.nld", "pol_Latn": "ref.pol", "tur_Latn": "ref.tur", "vie_Latn": "ref.vie",
    "rus_Cyrl": "ref.rus", "ukr_Cyrl": "ref.ukr", "ell_Grek": "ref.ell", "heb_Hebr": "ref.heb", "arb_Arab": "ref.arb",
    "hin_Deva": "ref.hin", "tha_Thai": "ref.tha", "kor_Hang": "ref.kor", "jpn_Jpan": "ref.jpn",
    "zho_Hans": "ref.zho-CN",
}
XSIM_PAIRS = ("deu_Latn", "fra_Latn", "rus_Cyrl", "zho_Hans")
BUCC_PAIRS = ("de-en", "fr-en", "ru-en", "zh-en")


def read_gz(path: Path) -> list[str]:
    import gzip

    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle]


def build_model(folder: Path, hidden: int, layers: int, max_len: int) -> None:
    from encoders.model import bert_config, new_encoder_model, save_encoder
    from encoders.tokenizer import smoothed_corpus, train_wordpiece

    texts = {lang: read_gz(NTREX / f"newstest2019-{code}.txt.gz") for lang, code in LANGUAGES.items()}
    tokenizer = train_wordpiece(smoothed_corpus(texts, 60000, 0.3, seed=0), vocab_size=32000)
    model = new_encoder_model(bert_config(len(tokenizer), hidden=hidden, layers=layers, max_positions=max_len))
    save_encoder(model, tokenizer, folder, max_seq_length=max_len)


def benchmark_sentences(per_language: int, total: int) -> tuple[list[str], dict[str, np.ndarray]]:
    """Sentences interleaved across languages (row r of language l at position r * L + l), and each language's
    positions, so aligned pairs can be scored afterwards."""
    texts = {lang: read_gz(FLORES / f"{lang}.devtest.gz")[:per_language] for lang in LANGUAGES}
    order = [(lang, row) for row in range(per_language) for lang in LANGUAGES][:total]
    positions = {lang: np.array([i for i, (other, _) in enumerate(order) if other == lang]) for lang in LANGUAGES}
    return [texts[lang][row] for lang, row in order], positions


def worker(args: argparse.Namespace) -> None:
    """One contender in its own process: load, warm up, encode everything once, report time and peak RSS."""
    import torch

    sentences = Path(args.sentences_file).read_text(encoding="utf-8").split("\n")
    started = time.perf_counter()
    if args.worker == "sentence-transformers":
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(args.model, device="cpu")
        model.encode(sentences[:64], batch_size=args.batch_size)
        loaded = time.perf_counter()
        vectors = model.encode(sentences, batch_size=args.batch_size, convert_to_numpy=True,
                               normalize_embeddings=True)
    else:
        from encoders import load_encoder

        precision = "fp32" if args.worker == "ours-fp32" else "auto"
        encoder = load_encoder(args.model, precision=precision, batch_size=args.batch_size,
                               token_budget=args.batch_size * args.max_len)
        encoder.encode(sentences[:64])
        loaded = time.perf_counter()
        vectors = encoder.encode(sentences)
    seconds = time.perf_counter() - loaded
    np.save(args.out, vectors.astype(np.float32), allow_pickle=False)
    print(json.dumps({"seconds": seconds, "load_seconds": loaded - started, "sentences": len(sentences),
                      "sentences_per_second": len(sentences) / seconds, "threads": torch.get_num_threads(),
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run_worker(name: str, model: Path, sentences_file: Path, out: Path, batch_size: int, max_len: int) -> dict:
    command = [sys.executable, __file__, "--worker", name, "--model", str(model), "--sentences-file",
               str(sentences_file), "--out", str(out), "--batch-size", str(batch_size), "--max-len", str(max_len)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    if result.returncode:
        raise RuntimeError(f"{name} failed:\n{result.stderr[-3000:]}")
    report = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"{name:>22}: {report['sentences_per_second']:8.1f} sentences/s  peak RSS {report['peak_rss_mib']:.0f} MiB",
          flush=True)
    return report


def xsim_figures(vectors: np.ndarray, positions: dict[str, np.ndarray]) -> dict:
    from miner.index import KnnConfig
    from miner.xsim import xsim

    figures = {}
    for lang in XSIM_PAIRS:
        src, tgt = positions[lang], positions["eng_Latn"]
        n = min(len(src), len(tgt))
        result = xsim(vectors[src[:n]], vectors[tgt[:n]], "absolute", 4, KnnConfig())
        figures[f"{lang}->eng_Latn"] = 100 * result["src->tgt"]["accuracy"]
        figures[f"eng_Latn->{lang}"] = 100 * result["tgt->src"]["accuracy"]
    return figures


def bucc_figures(model: Path, precision: str, batch_size: int, max_len: int) -> dict:
    from miner.cli import VectorSource
    from miner.evaluate import bucc_report
    from miner.mining import MiningConfig

    source = VectorSource(encoder_spec=str(model), encoder_options={"precision": precision, "batch_size": batch_size,
                                                                    "token_budget": batch_size * max_len})
    return {pair: 100 * bucc_report(SHARED / "dev" / "bucc-style", pair, "dev", source, MiningConfig())[0]
            ["result"]["f1"] for pair in BUCC_PAIRS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=20000, help="FLORES devtest sentences encoded (default 20000)")
    parser.add_argument("--hidden", type=int, default=384, help="the random BERT's hidden size (default 384)")
    parser.add_argument("--layers", type=int, default=6, help="the random BERT's layers (default 6)")
    parser.add_argument("--max-len", type=int, default=128, help="tokens a sentence is cut to (default 128)")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences a batch, for every contender")
    parser.add_argument("--skip-bucc", action="store_true", help="skip the BUCC F1 check of faithfulness")
    parser.add_argument("--work", type=Path, default=REPO / "bench" / "results" / "encode",
                        help="where the checkpoint, the sentences and each contender's vectors go")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--sentences-file", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    args.work.mkdir(parents=True, exist_ok=True)
    model = args.work / f"bert-h{args.hidden}-l{args.layers}"
    if not (model / "model.safetensors").exists():
        build_model(model, args.hidden, args.layers, args.max_len)
    sentences, positions = benchmark_sentences(-(-args.sentences // len(LANGUAGES)), args.sentences)
    sentences_file = args.work / "sentences.txt"
    sentences_file.write_text("\n".join(s.replace("\n", " ") for s in sentences), encoding="utf-8")
    print(f"{len(sentences)} sentences, model {model.name}, batch size {args.batch_size}, {os.cpu_count()} cores")

    runs, vectors = {}, {}
    for name in ("sentence-transformers", "ours-fp32", "ours"):
        runs[name] = run_worker(name, model, sentences_file, args.work / f"{name}.npy", args.batch_size, args.max_len)
        vectors[name] = np.load(args.work / f"{name}.npy")
    reference = vectors["sentence-transformers"]
    for name in ("ours-fp32", "ours"):
        cos = (vectors[name] * reference).sum(axis=1)
        runs[name].update(speedup=runs[name]["sentences_per_second"] / runs["sentence-transformers"][
            "sentences_per_second"], cosine_min=float(cos.min()), cosine_mean=float(cos.mean()))
        print(f"{name:>22}: {runs[name]['speedup']:.2f}x sentence-transformers, cosine to its fp32 vectors "
              f"min {cos.min():.5f} mean {cos.mean():.5f}")
    quality = {"xsim_fp32": xsim_figures(vectors["ours-fp32"], positions),
               "xsim_default": xsim_figures(vectors["ours"], positions)}
    if not args.skip_bucc:
        quality["bucc_f1_fp32"] = bucc_figures(model, "fp32", args.batch_size, args.max_len)
        quality["bucc_f1_default"] = bucc_figures(model, "auto", args.batch_size, args.max_len)
    for key, figures in quality.items():
        print(f"{key:>16}: " + "  ".join(f"{k} {v:.1f}" for k, v in figures.items()))
    report = {"command": " ".join(sys.argv), "machine": f"{platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores", "sentences": len(sentences), "model": model.name, "batch_size":
              args.batch_size, "max_len": args.max_len, "runs": runs, "quality": quality}
    (REPO / "bench" / "results").mkdir(exist_ok=True)
    (REPO / "bench" / "results" / "encode.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
