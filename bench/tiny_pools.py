"""Mining where both languages have few sentences (`pairs: all` over a crawl's small languages): pools of n
sentences a side drawn from the train pool's held-out NTREX documents (data/train/heldout-news, in no training
set), a `--gold-share` of the source sentences with their translation among the target's and the rest unrelated
held-out sentences of the same news, mined with the margin as the pipeline takes it there (both neighbourhood
means: neither pool is the larger scale; miner/margin.py) at several thresholds and similarity floors.

    python -m training.prepare                              # data/train/heldout-news, once
    python bench/tiny_pools.py                              # 12 languages against English, 30 draws a size
    python bench/tiny_pools.py --gold-share 0 --sizes 10 30 --thresholds 1.35 1.65 --min-cosines 0.29 0.4

`junk / 100` is the wrong pairs per 100 source sentences drawn: with `--gold-share 0` (a crawl's misidentified
fragments, the usual small pools) every pair is wrong. Measuring only: nothing here sets a default.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from miner.mining import MiningConfig, mine  # noqa: E402

LANGUAGES = ["afr_Latn", "deu_Latn", "nld_Latn", "rus_Cyrl", "zho_Hans", "fra_Latn", "ell_Grek", "hin_Deva",
             "vie_Latn", "tur_Latn", "pol_Latn", "swh_Latn"]


def held_out_vectors(folder: Path, languages: list[str], encoder_spec: str, cache: Path | None) -> dict:
    """Each language's held-out news vectors and English's (the same documents in every language: row i of each
    translates row i of English), cached by encoder and text."""
    texts = {}
    for language in languages:
        with gzip.open(folder / f"{language}-eng_Latn.tsv.gz", "rt", encoding="utf-8") as lines:
            rows = [line.rstrip("\n").split("\t") for line in lines]
        texts[language], texts["eng_Latn"] = [r[0] for r in rows], [r[1] for r in rows]
    key = hashlib.sha256("\n".join([encoder_spec, *(t for v in texts.values() for t in v)]).encode()).hexdigest()
    path = cache / f"tiny-pools-{key[:16]}.npz" if cache else None
    if path and path.exists():
        return dict(np.load(path, allow_pickle=False))
    from encoders import load_encoder

    encoder = load_encoder(encoder_spec)
    vectors = {language: encoder.encode(sentences, language=language).astype(np.float32)
               for language, sentences in texts.items()}
    if path:
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, **vectors)
    return vectors


def measure(vectors: dict, languages: list[str], n: int, gold_share: float, draws: int,
            config: MiningConfig) -> tuple[list[float], list[float], int, int]:
    """The cosines of the right and of the wrong pairs mined over `draws` draws a language, the gold pairs and the
    source sentences drawn."""
    right, wrong, gold, drawn = [], [], 0, 0
    english = vectors["eng_Latn"]
    for language in languages:
        source = vectors[language]
        for draw in range(draws):
            rng = np.random.default_rng([draw, n, int(1000 * gold_share)])
            rows = rng.choice(len(source), n, replace=False)
            translated = int(round(gold_share * n))  # the first `translated` rows' translations are in the pool
            unrelated = rng.permutation(np.setdiff1d(np.arange(len(english)), rows))[: n - translated]
            columns = np.concatenate([rows[:translated], unrelated]).astype(np.int64)
            if len(columns) == 0:
                continue
            pairs = mine(source[rows], english[columns], config)
            for s, t, cosine in zip(pairs.src.tolist(), pairs.tgt.tolist(), pairs.cos.tolist()):
                (right if rows[s] == columns[t] else wrong).append(cosine)
            gold, drawn = gold + translated, drawn + n
    return right, wrong, gold, drawn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--heldout-news", type=Path, default=REPO / "data" / "train" / "heldout-news")
    parser.add_argument("--encoder", default=str(REPO / "models" / "cmlm-ensemble"))
    parser.add_argument("--languages", nargs="+", default=LANGUAGES)
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 5, 10, 20, 30, 50, 96])
    parser.add_argument("--gold-share", type=float, nargs="+", default=[0.0, 0.3])
    parser.add_argument("--draws", type=int, default=30)
    parser.add_argument("--thresholds", type=float, nargs="+", default=[1.35, 1.45, 1.55, 1.65])
    parser.add_argument("--min-cosines", type=float, nargs="+", default=[0.29, 0.4, 0.5],
                        help="similarity floors, each applied at the first threshold")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/cmlm-bench-cache"))
    args = parser.parse_args(argv)
    vectors = held_out_vectors(args.heldout_news, args.languages, args.encoder, args.cache)
    rules = ([(threshold, args.min_cosines[0]) for threshold in args.thresholds]
             + [(args.thresholds[0], floor) for floor in args.min_cosines[1:]])
    print("| gold share | sentences a side | threshold | min cosine | pairs | P | R | junk / 100 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for share in args.gold_share:
        for n in args.sizes:
            for threshold, floor in rules:
                config = MiningConfig(k=min(args.k, n), threshold=threshold, min_cosine=floor)
                right, wrong, gold, drawn = measure(vectors, args.languages, n, share, args.draws, config)
                pairs = len(right) + len(wrong)
                precision = f"{100 * len(right) / pairs:.1f}" if pairs else "-"
                recall = f"{100 * len(right) / gold:.1f}" if gold else "-"
                print(f"| {share:g} | {n} | {threshold:g} | {floor:g} | {pairs} | {precision} | {recall} | "
                      f"{100 * len(wrong) / max(drawn, 1):.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
