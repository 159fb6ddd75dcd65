r"""Mining F1 per language at the shared threshold and at each language's (miner/thresholds.py), beside the best
threshold's (oracle), on sets built as BUCC is: n sentences of a language, of which g have their English
translation hidden among 2n English sentences (`--ratio`: another multiple of n, as a crawl's English outnumbers
its other languages).

    python bench/threshold_offsets.py --wmt ../shared/data/train/wmt-news          # train pool: WMT/TICO test sets
    python bench/threshold_offsets.py --flores ../shared/data/dev/flores200-devtest/devtest \
        --english ../shared/data/dev/bucc-style/de-en.dev.en                       # dev pool: measured, never tuned

--wmt: each language's English-paired WMT test sets (newstest, newssyscomb; line-aligned, deduplicated), n =
min(2,000, pairs), g = min(200, n / 10), the English distractors drawn from every pair's English that translates
none of the language's sentences; 3 draws. A second split for the offsets, which were measured on NTREX-128's
held-out documents (training.thresholds): other sentences, other domains, other set sizes.
--flores: FLORES-200 devtest, n = 1,012 a language, g = 101 drawn per draw; English distractors from `--english`
lines (BUCC-format `id<TAB>text`, or plain; one file or several) that are not FLORES devtest sentences.
Mining is the pipeline's (ratio margin, k = 4, `max`, `mining.min_cosine`, one-sided margins where English outnumbers
the language `--one-sided-ratio` times), the threshold `--threshold` moved by the encoder's offsets and, for one-sided
margins, by the English pool's size (`--pool-slope`). Rows: P / R / F1 pooled over the draws; the means over the
languages the offsets name.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from miner.index import KnnConfig  # noqa: E402
from miner.io import read_lines  # noqa: E402
from miner.languages import language_code  # noqa: E402
from miner.mining import MiningConfig, mine  # noqa: E402
from miner.thresholds import FILE, pair_threshold, read_offsets  # noqa: E402

ENGLISH = "eng_Latn"
# WMT's directory names (xxx-eng) whose language the project names otherwise, or whose sets are not news
SKIP = ("multi30k",)


def wmt_pairs(root: Path, limit: int) -> tuple[dict[str, list[tuple[str, str]]], list[str]]:
    """Per language, up to `limit` of its English pairs (seeded shuffle), and every English sentence of the sets."""
    index = dict(line.rstrip("\n").split("\t") for line in open(root / "INDEX.tsv", encoding="utf-8")
                 if not line.startswith("original_path"))
    by_language: dict[str, list[tuple[str, str]]] = {}
    english: set[str] = set()
    for original, stored in sorted(index.items()):
        found = re.fullmatch(r"testsets/([a-z]{3})(?:_[A-Za-z]+)?-eng/(.+)\.([a-z]{3})", original)
        if not found or found.group(3) == "eng" or any(skip in original for skip in SKIP):
            continue
        english_file = index.get(f"testsets/{found.group(1)}-eng/{found.group(2)}.eng")
        if not english_file:
            continue
        xs, es = read_lines(root / stored), read_lines(root / english_file)
        if len(xs) != len(es):
            continue
        language = language_code(found.group(3), xs[:200])
        by_language.setdefault(language, []).extend((x.strip(), e.strip()) for x, e in zip(xs, es))
        english.update(e.strip() for e in es if e.strip())
    pairs = {}
    for language, rows in sorted(by_language.items()):
        seen_x, seen_e, kept = set(), set(), []
        for x, e in rows:
            if len(x) >= 3 and len(e) >= 3 and x not in seen_x and e not in seen_e:
                seen_x.add(x), seen_e.add(e), kept.append((x, e))
        order = np.random.default_rng(11).permutation(len(kept))
        pairs[language] = [kept[i] for i in order[:limit]]
    return pairs, sorted(english)


def flores_pairs(root: Path, english_files: list[Path]) -> tuple[dict[str, list[tuple[str, str]]], list[str]]:
    """Per FLORES language, its 1,012 sentences with their English; the distractor English (not FLORES)."""
    flores_english = [line.strip() for line in read_lines(root / f"{ENGLISH}.devtest.gz")]
    pairs = {path.name.split(".")[0]: list(zip((line.strip() for line in read_lines(path)), flores_english))
             for path in sorted(root.glob("*.devtest.gz")) if not path.name.startswith(ENGLISH)}
    known = set(flores_english)
    others = {line.split("\t", 1)[-1].strip() for path in english_files for line in read_lines(path)} - known
    return pairs, sorted(flores_english) + sorted(text for text in others if text)


@functools.cache
def loaded(encoder_spec: str):
    """The encoder, loaded once for every set this run embeds."""
    from encoders import load_encoder

    return load_encoder(encoder_spec)


def vectors(encoder_spec: str, texts: list[str], language: str, cache: Path | None) -> np.ndarray:
    key = hashlib.sha256("\n".join([encoder_spec, language, *texts]).encode()).hexdigest()[:16]
    path = cache / f"{language}-{key}.npy" if cache else None
    if path and path.exists():
        return np.load(path, allow_pickle=False)
    found = loaded(encoder_spec).encode(texts, language=language)
    if path:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, found)
    return found


def measure(src: np.ndarray, english: np.ndarray, gold_rows: np.ndarray, excluded: np.ndarray, n: int, g: int,
            thresholds: dict[str, float], config: MiningConfig, draws: int, ratio: float = 2.0
            ) -> dict[str, list[int]]:
    """Counts (extracted, correct, gold) at each named threshold and at each draw's best-F1 threshold."""
    counts = {name: [0, 0, 0] for name in [*thresholds, "oracle"]}
    pool = np.setdiff1d(np.arange(len(english)), excluded)
    for draw in range(draws):
        rng = np.random.default_rng(draw)
        rows = rng.choice(len(src), n, replace=False)
        targets = np.concatenate([gold_rows[rows[:g]], rng.choice(pool, int(ratio * n) - g, replace=False)])
        pairs = mine(src[rows], english[targets], config)
        correct = (pairs.src == pairs.tgt) & (pairs.src < g)
        f1 = 2 * np.cumsum(correct) / (np.arange(1, len(correct) + 1) + g)
        best = pairs.margin[int(np.argmax(f1))] if len(f1) else np.inf
        for name, threshold in [*thresholds.items(), ("oracle", best)]:
            keep = pairs.margin >= threshold
            counts[name][0] += int(keep.sum())
            counts[name][1] += int((correct & keep).sum())
            counts[name][2] += g
    return counts


def prf(extracted: int, correct: int, gold: int) -> tuple[float, float, float]:
    p, r = 100 * correct / max(extracted, 1), 100 * correct / max(gold, 1)
    return p, r, 2 * p * r / max(p + r, 1e-9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--wmt", type=Path, help="the train pool's wmt-news folder")
    source.add_argument("--flores", type=Path, help="the dev pool's FLORES-200 devtest folder (measuring only)")
    parser.add_argument("--english", type=Path, nargs="+", help="with --flores: English distractor lines (files)")
    parser.add_argument("--encoder", default=str(Path(__file__).resolve().parent.parent / "models" / "cmlm-ensemble"),
                        help="the encoder spec (default models/cmlm-ensemble)")
    parser.add_argument("--threshold", type=float, default=1.35, help="the pipeline's mining.threshold")
    parser.add_argument("--min-cosine", type=float, default=0.29, help="the pipeline's mining.min_cosine")
    parser.add_argument("--draws", type=int, default=3, help="seeded draws of each language's set (default 3)")
    parser.add_argument("--ratio", type=float, default=2.0,
                        help="English sentences per sentence of the language (BUCC's is about 2; a crawl's 10-1000)")
    parser.add_argument("--one-sided-below", type=int, default=MiningConfig().one_sided_below,
                        help="mining.one_sided_below (0: both neighbourhood means at every size)")
    parser.add_argument("--one-sided-ratio", type=float, default=MiningConfig().one_sided_ratio,
                        help="mining.one_sided_ratio (0: off, as before the rule)")
    parser.add_argument("--pool-slope", type=float, default=MiningConfig().pool_slope,
                        help="mining.pool_slope (0: one-sided thresholds do not follow the pool's size)")
    parser.add_argument("--index", default="auto", help="knn.index (Flat: exact search, faster here than training "
                                                         "an IVF index per draw)")
    parser.add_argument("--max-sentences", type=int, default=2000, help="n at most")
    parser.add_argument("--min-pairs", type=int, default=500, help="languages with fewer pairs are left out")
    parser.add_argument("--cache", type=Path, default=None, help="a folder for the sets' vectors")
    parser.add_argument("--languages", help="comma-separated: only these (say, the ones whose shares changed)")
    args = parser.parse_args(argv)
    if args.flores and not args.english:
        parser.error("--flores needs --english (distractor English lines)")
    offsets = read_offsets(Path(args.encoder) / FILE)
    pairs, english_texts = wmt_pairs(args.wmt, 2000) if args.wmt else flores_pairs(args.flores, args.english)
    english = vectors(args.encoder, english_texts, ENGLISH, args.cache)
    position = {text: row for row, text in enumerate(english_texts)}
    config = MiningConfig(k=4, margin="ratio", selection="max", threshold=None, min_cosine=args.min_cosine,
                          one_sided_below=args.one_sided_below, one_sided_ratio=args.one_sided_ratio,
                          pool_slope=args.pool_slope, knn=KnnConfig(index=args.index))
    print("| language | offset | shared threshold P / R / F1 | the language's P / R / F1 | best threshold's F1 |")
    print("| --- | --- | --- | --- | --- |")
    means: dict[str, list[float]] = {"shared": [], "offset": [], "oracle": []}
    wanted = set(args.languages.split(",")) if args.languages else None
    for language, rows in sorted(pairs.items()):
        if wanted is not None and language not in wanted:
            continue
        room = int((len(english_texts) - len(rows)) / args.ratio)   # room for ratio * n - g distractors
        if language not in offsets or min(len(rows), room) < args.min_pairs:
            continue
        n = min(len(rows), args.max_sentences, room)
        g = min(200, n // 10)
        src = vectors(args.encoder, [x for x, _ in rows], language, args.cache)
        gold_rows = np.array([position[e] for _, e in rows])
        thresholds = {"shared": args.threshold, "offset": pair_threshold(args.threshold, offsets, language, ENGLISH)}
        # as the pipeline mines the pair: moved for the pool one-sided margins are taken in (miner.margin.pool_shift)
        thresholds = {name: config.pool_threshold(value, n, int(args.ratio * n)) for name, value in thresholds.items()}
        counts = measure(src, english, gold_rows, gold_rows, n, g, thresholds, config, args.draws, args.ratio)
        found = {name: prf(*count) for name, count in counts.items()}
        for name in means:
            means[name].append(found[name][2])
        print(f"| {language} | {offsets[language]:+.3f} | {' / '.join(f'{v:.1f}' for v in found['shared'])} | "
              f"{' / '.join(f'{v:.1f}' for v in found['offset'])} | {found['oracle'][2]:.1f} |", flush=True)
    print(f"\nmean F1 over {len(means['shared'])} languages: shared threshold {np.mean(means['shared']):.1f}, "
          f"the languages' {np.mean(means['offset']):.1f}, best threshold {np.mean(means['oracle']):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
