"""Mining where one language has few sentences: the dev pool's BUCC-style sets with the non-English side cut to n
sentences (drawn at random, English whole), mined at the pipeline's threshold with both neighbourhood means
(`mining.one_sided_below 0`, `one_sided_ratio 0`: the margin as published) and with the default rules (miner/margin.py,
"Small pools", "Unequal pools").

    python bench/small_pools.py --bucc ../shared/data/dev/bucc-style                 # de/fr/ru/zh-en, 10 draws a size
    python bench/small_pools.py --bucc ../shared/data/dev/bucc-style --pairs de-en fr-en --sizes 30 100 1000 2000

Each size is `--draws` draws of n source sentences (seeded); a draw keeps the gold pairs of the sentences drawn, so
about 7% of them have their translation among the English. Precision, recall and F1 are over all draws' pairs
pooled; `junk / 100` is the wrong pairs per 100 source sentences drawn. The sets are measured, never trained on.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from miner.bucc import load_corpus, split_pair  # noqa: E402
from miner.languages import language_code  # noqa: E402
from miner.mining import BOTH_MEANS, MiningConfig, mine  # noqa: E402


def corpus_vectors(bucc: str, pair: str, encoder_spec: str, cache: Path | None, split: str = "dev"):
    """The corpus and both sides' vectors (cached in `cache` by encoder, pair and text)."""
    corpus = load_corpus(bucc, pair, split)
    texts = corpus.src.texts + corpus.tgt.texts
    key = hashlib.sha256("\n".join([encoder_spec, pair, *texts]).encode()).hexdigest()[:16]
    path = cache / f"{pair}-{key}.npz" if cache else None
    if path and path.exists():
        data = np.load(path, allow_pickle=False)
        return corpus, data["src"], data["tgt"]
    from encoders import load_encoder

    encoder = load_encoder(encoder_spec)
    src_lang, tgt_lang = split_pair(pair)
    src = encoder.encode(corpus.src.texts, language=language_code(src_lang, corpus.src.texts), show_progress=True)
    tgt = encoder.encode(corpus.tgt.texts, language=language_code(tgt_lang, corpus.tgt.texts), show_progress=True)
    if path:
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, src=src, tgt=tgt)
    return corpus, src, tgt


def measure(corpus, src: np.ndarray, tgt: np.ndarray, n: int, draws: int, config: MiningConfig) -> dict:
    """Pairs mined from `draws` random draws of n source sentences against the whole target side, pooled."""
    extracted = correct = gold = drawn = 0
    for draw in range(draws if n < len(src) else 1):
        rng = np.random.default_rng(1000 * draw + n)
        rows = np.sort(rng.choice(len(src), min(n, len(src)), replace=False))
        pairs = mine(src[rows], tgt, config)
        ids = {corpus.src.ids[i] for i in rows}
        gold += sum(1 for s, _ in corpus.gold if s in ids)
        extracted += len(pairs)
        correct += sum((corpus.src.ids[rows[s]], corpus.tgt.ids[t]) in corpus.gold
                       for s, t in zip(pairs.src.tolist(), pairs.tgt.tolist()))
        drawn += len(rows)
    precision, recall = correct / max(extracted, 1), correct / max(gold, 1)
    return {"pairs": extracted, "precision": precision, "recall": recall,
            "f1": 2 * precision * recall / max(precision + recall, 1e-12), "junk_per_100": 100 * (extracted - correct)
            / drawn}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bucc", required=True, help="folder of BUCC-format sets (the dev pool's bucc-style)")
    parser.add_argument("--encoder", default=str(Path(__file__).resolve().parent.parent / "models" / "cmlm-ensemble"),
                        help="the encoder spec (default models/cmlm-ensemble)")
    parser.add_argument("--pairs", nargs="+", default=["de-en", "fr-en", "ru-en", "zh-en"],
                        help="the sets' language pairs (default de-en fr-en ru-en zh-en)")
    parser.add_argument("--split", default="dev", help="the sets' split: <pair>.<split>.<lang> files")
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 10, 30, 100, 300, 1000, 2000, 10**9],
                        help="source sentences a draw (a size past the set's is the whole set, drawn once)")
    parser.add_argument("--draws", type=int, default=10, help="seeded draws of each size (default 10)")
    parser.add_argument("--threshold", type=float, default=1.35, help="the pipeline's mining.threshold")
    parser.add_argument("--min-cosine", type=float, default=0.29, help="the pipeline's mining.min_cosine")
    parser.add_argument("--k", type=int, default=4, help="neighbours in the margin (default 4)")
    parser.add_argument("--one-sided-below", type=int, default=MiningConfig().one_sided_below,
                        help="mining.one_sided_below of the rule's rows (the default's)")
    parser.add_argument("--cache", type=Path, default=None, help="a folder for the sets' vectors")
    args = parser.parse_args(argv)
    default = MiningConfig()
    rules = {"both means": BOTH_MEANS,
             "default rule" if args.one_sided_below == default.one_sided_below
             else f"one-sided below {args.one_sided_below}": {"one_sided_below": args.one_sided_below}}
    print("| pair | source sentences | rule | pairs | P | R | F1 | junk / 100 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for pair in args.pairs:
        corpus, src, tgt = corpus_vectors(args.bucc, pair, args.encoder, args.cache, args.split)
        for n in args.sizes:
            for rule, sides in rules.items():
                config = MiningConfig(k=args.k, threshold=args.threshold, min_cosine=args.min_cosine, **sides)
                r = measure(corpus, src, tgt, n, args.draws, config)
                size = n if n < len(src) else f"all {len(src)}"
                print(f"| {pair} | {size} | {rule} | {r['pairs']} | {100 * r['precision']:.1f} | "
                      f"{100 * r['recall']:.1f} | {100 * r['f1']:.1f} | {r['junk_per_100']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
