r"""Mining where both languages have few sentences (`pairs: all` over a crawl's small languages): pools of n
sentences a side drawn from the train pool's held-out NTREX documents (data/train/heldout-news, in no training
set), a `--gold-share` of the source sentences with their translation among the target's and the rest unrelated
held-out sentences of the same news, mined with the margin as the pipeline takes it there (both neighbourhood
means: neither pool is the larger scale; miner/margin.py) at several thresholds and similarity floors.

    python -m training.prepare                              # data/train/heldout-news, once
    python bench/tiny_pools.py                              # 12 languages against English, 30 draws a size
    python bench/tiny_pools.py --gold-share 0 --sizes 10 30 --thresholds 1.35 1.65 --min-cosines 0.29 0.4
    python bench/tiny_pools.py --flores ../shared/data/dev/flores200-devtest/devtest \
        --reference-files ../shared/data/dev/wmt2[23]/references/*.en     # the dev pool, to confirm a choice

`junk / 100` is the wrong pairs per 100 source sentences drawn: with `--gold-share 0` (a crawl's misidentified
fragments, the usual small pools) every pair is wrong. The `reference` rows take both sides' neighbourhood means in
a third pool instead, `--reference-sentences` English sentences of the train pool's bitext (none of the held-out
documents'), as a crawl's English could serve two small languages: the candidates and the selection are the
library's (`max`), only the means differ. With `--flores`, the dev pool's FLORES-200 devtest (1,012 aligned
sentences) stands in for the held-out news and `--reference-files` give the reference's English: what a choice made
on the train pool is confirmed on. Measuring only: nothing here sets a default.
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

from miner.margin import neighbourhood_mean, pair_margins  # noqa: E402
from miner.mining import MiningConfig, mine  # noqa: E402
from miner.neighbours import knn  # noqa: E402
from miner.selection import Candidates, select  # noqa: E402

LANGUAGES = ["afr_Latn", "deu_Latn", "nld_Latn", "rus_Cyrl", "zho_Hans", "fra_Latn", "ell_Grek", "hin_Deva",
             "vie_Latn", "tur_Latn", "pol_Latn", "swh_Latn"]


def read_held_out(folder: Path, language: str, flores: bool = False) -> tuple[list[str], list[str]]:
    """A language's held-out news sentences and their English, line by line (`flores`: FLORES-200 devtest files,
    <language>.devtest[.gz] and eng_Latn's)."""
    if flores:
        return read_lines(folder, language), read_lines(folder, "eng_Latn")
    with gzip.open(folder / f"{language}-eng_Latn.tsv.gz", "rt", encoding="utf-8") as lines:
        rows = [line.rstrip("\n").split("\t") for line in lines]
    return [row[0] for row in rows], [row[1] for row in rows]


def read_lines(folder: Path, language: str) -> list[str]:
    path = folder / f"{language}.devtest"
    opened = gzip.open(path.with_suffix(".devtest.gz"), "rt", encoding="utf-8") if not path.exists() \
        else open(path, encoding="utf-8")
    with opened as lines:
        return [line.rstrip("\n") for line in lines]


def held_out_vectors(folder: Path, languages: list[str], encoder_spec: str, cache: Path | None,
                     flores: bool = False) -> dict:
    """Each language's held-out news vectors and English's (the same documents in every language: row i of each
    translates row i of English), cached by encoder and text."""
    texts = {}
    for language in languages:
        texts[language], texts["eng_Latn"] = read_held_out(folder, language, flores)
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


def reference_english(bitext: Path, held_out: set[str], count: int, encoder_spec: str, cache: Path | None,
                      files: list[Path] | None = None) -> np.ndarray:
    """`count` English sentences of the bitext files (every sixth file, sorted), or of `files` (one sentence a
    line), none of `held_out`, shuffled with seed 0, as unit vectors; cached like held_out_vectors."""
    english = set()
    for path in files or sorted(bitext.glob("*-eng_Latn.tsv.gz"))[::6]:
        with (gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")) \
                as lines:
            english.update(line.rstrip("\n").split("\t")[-1] for line in lines)
    english = sorted(english - held_out - {""})
    np.random.default_rng(0).shuffle(english)
    english = english[:count]
    key = hashlib.sha256("\n".join([encoder_spec, *english]).encode()).hexdigest()
    path = cache / f"tiny-pools-reference-{key[:16]}.npy" if cache else None
    if path and path.exists():
        return np.load(path, allow_pickle=False)
    from encoders import load_encoder

    rows = load_encoder(encoder_spec).encode(english, language="eng_Latn").astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    if path:
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, rows)
    return rows


def mine_over_reference(src: np.ndarray, tgt: np.ndarray, reference: np.ndarray, config: MiningConfig):
    """miner.mine's candidates and selection, with each side's neighbourhood mean taken among `reference`:
    margin(x, y) = f(cos(x, y), (ref(x) + ref(y)) / 2)."""
    fwd_sims, fwd_ids = knn(src, tgt, config.k, config.knn)
    bwd_sims, bwd_ids = knn(tgt, src, config.k, config.knn)
    src_mean = neighbourhood_mean(knn(src, reference, 4, config.knn)[0])
    tgt_mean = neighbourhood_mean(knn(tgt, reference, 4, config.knn)[0])
    floor = config.floor_for(src.shape[1])
    forward = Candidates(fwd_ids, pair_margins(fwd_sims, src_mean[:, None], tgt_mean[fwd_ids], config.margin,
                                               floor=floor), fwd_sims)
    backward = Candidates(bwd_ids, pair_margins(bwd_sims, src_mean[bwd_ids], tgt_mean[:, None], config.margin,
                                                floor=floor), bwd_sims)
    return select(forward, backward, config.selection, config.threshold, config.min_cosine)


def measure(vectors: dict, languages: list[str], n: int, gold_share: float, draws: int,
            config: MiningConfig, reference: np.ndarray | None = None) -> tuple[list[float], list[float], int, int]:
    """The cosines of the right and of the wrong pairs mined over `draws` draws a language (with `reference`, by
    mine_over_reference), the gold pairs and the source sentences drawn."""
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
            pairs = (mine(source[rows], english[columns], config) if reference is None
                     else mine_over_reference(source[rows], english[columns], reference, config))
            for s, t, cosine in zip(pairs.src.tolist(), pairs.tgt.tolist(), pairs.cos.tolist()):
                (right if rows[s] == columns[t] else wrong).append(cosine)
            gold, drawn = gold + translated, drawn + n
    return right, wrong, gold, drawn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--heldout-news", type=Path, default=REPO / "data" / "train" / "heldout-news",
                        help="training.prepare's held-out NTREX documents, the sentences drawn")
    parser.add_argument("--encoder", default=str(REPO / "models" / "cmlm-ensemble"),
                        help="default models/cmlm-ensemble")
    parser.add_argument("--languages", nargs="+", default=LANGUAGES, help="each mined against English")
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 5, 10, 20, 30, 50, 96], help="sentences a side")
    parser.add_argument("--gold-share", type=float, nargs="+", default=[0.0, 0.3],
                        help="shares of the sentences whose translation is in the other pool")
    parser.add_argument("--draws", type=int, default=30, help="draws a size, language and share (default 30)")
    parser.add_argument("--thresholds", type=float, nargs="+", default=[1.35, 1.45, 1.55, 1.65],
                        help="margin thresholds measured with today's rule")
    parser.add_argument("--min-cosines", type=float, nargs="+", default=[0.29, 0.4, 0.5],
                        help="similarity floors, each applied at the first threshold")
    parser.add_argument("--reference-sentences", type=int, default=2000,
                        help="English sentences whose neighbourhoods the reference rows use (0: no such rows)")
    parser.add_argument("--reference-thresholds", type=float, nargs="+", default=[1.35, 1.25, 1.2, 1.15],
                        help="margin thresholds measured with the reference pool's neighbourhoods")
    parser.add_argument("--bitext", type=Path, default=REPO / "data" / "train" / "bitext",
                        help="where the reference's English comes from")
    parser.add_argument("--reference-files", type=Path, nargs="+", default=None,
                        help="English text files (a sentence a line) for the reference instead of --bitext")
    parser.add_argument("--flores", type=Path, default=None,
                        help="FLORES-200 devtest folder (the dev pool): aligned sentences instead of --heldout-news")
    parser.add_argument("--k", type=int, default=4, help="neighbours in the margin (default 4)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/cmlm-bench-cache"),
                        help="embedded vectors, kept between runs")
    args = parser.parse_args(argv)
    source = args.flores or args.heldout_news
    vectors = held_out_vectors(source, args.languages, args.encoder, args.cache, flores=bool(args.flores))
    reference = None
    if args.reference_sentences:
        held_out = set(read_held_out(source, args.languages[0], bool(args.flores))[1])
        reference = reference_english(args.bitext, held_out, args.reference_sentences, args.encoder, args.cache,
                                      args.reference_files)
    rules = ([("both means", threshold, args.min_cosines[0]) for threshold in args.thresholds]
             + [("both means", args.thresholds[0], floor) for floor in args.min_cosines[1:]]
             + ([(f"reference {len(reference)}", threshold, args.min_cosines[0])
                 for threshold in args.reference_thresholds] if reference is not None else []))
    print("| gold share | sentences a side | neighbourhoods | threshold | min cosine | pairs | P | R | junk / 100 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for share in args.gold_share:
        for n in args.sizes:
            for means, threshold, floor in rules:
                config = MiningConfig(k=min(args.k, n), threshold=threshold, min_cosine=floor)
                right, wrong, gold, drawn = measure(vectors, args.languages, n, share, args.draws, config,
                                                    reference if means.startswith("reference") else None)
                pairs = len(right) + len(wrong)
                precision = f"{100 * len(right) / pairs:.1f}" if pairs else "-"
                recall = f"{100 * len(right) / gold:.1f}" if gold else "-"
                print(f"| {share:g} | {n} | {means} | {threshold:g} | {floor:g} | {pairs} | {precision} | {recall} | "
                      f"{100 * len(wrong) / max(drawn, 1):.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
