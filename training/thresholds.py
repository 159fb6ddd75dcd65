"""Measure an encoder's threshold offset per language on held-out data (miner/thresholds.py) and write them beside it.

    python -m training.thresholds --encoder models/cmlm-ensemble        # -> models/cmlm-ensemble/thresholds.json

The held-out sets are the ones the ensemble's shares were chosen on (training.ensemble's `long` sets): NTREX-128's
held-out documents in every language, hidden among `--source-distractors` other sentences of the language and
`--target-distractors` English ones, set up as BUCC is. Each language is mined against English as BUCC is
evaluated (ratio margin, k = `--k`: 4, the shipped threshold's; `max` selection, both neighbourhood means) and its
best-F1 threshold t*(L) taken by the BUCC rule (the midpoint between the best-F1 score and the next:
miner.bucc.tune_threshold). The offset is t*(L) less the mean t* of the `--reference` languages: the ones the
pipeline's shared threshold was tuned on, which keep it (offset 0). Measured 2026-11-29, their own offsets
(+0.010 to +0.020, and -0.046 for Chinese) moved their dev BUCC F1 by -0.8 to 0 points at a fixed threshold: the
shared threshold already fits them, and a few hundred held-out pairs cannot tell a few hundredths apart. The dev
pool is never read.

The offsets take `--scale` of each measured move (0.5 by default). Best F1 is what BUCC scores, but it buys recall
with precision where an encoder separates a language poorly. Chosen on a second split of the train pool, the WMT
test sets (bench/threshold_offsets.py --wmt; 24 languages, 15 with a move below -0.04), mean over those 15:

    scale         0      0.25   0.5    0.75   1.0
    F1            56.0   59.9   63.7   66.6   68.5
    precision     93.7   92.4   90.8   88.5   85.2   (lowest language: 87.9 87.8 85.7 80.5 73.5)

Half the move keeps precision within 3 points of the shared threshold's on average (and above 85% in every
language there) for most of the F1 a full move gains; a full move took mean precision on the dev pool's FLORES
sets from 92.5 to 76.8%, 34 of 111 languages under 70%. A language whose set has no correct candidate
gets no offset (the shared threshold), and is listed as such.
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

import numpy as np

from miner.bucc import ScoredCandidates, sweep, tune_threshold
from miner.io import path_argument, write_json
from miner.thresholds import FILE, FORMAT
from training.ensemble import ENGLISH, mining_sets, quiet_logger

log = logging.getLogger("training.thresholds")
REFERENCE = ("deu_Latn", "fra_Latn", "rus_Cyrl", "zho_Hans")  # the dev pool's BUCC-style pairs: mining.threshold's
SCALE = 0.5  # the part of each measured move taken (module docstring)


def best_threshold(src: np.ndarray, tgt: np.ndarray, n_gold: int, k: int = 4) -> tuple[float, float]:
    """(t*, its F1 in %) when row i of src translates row i of tgt for i < n_gold and every other row is a
    distractor: BUCC's mining and threshold rule (module docstring)."""
    from miner.mining import BOTH_MEANS, MiningConfig, mine

    config = MiningConfig(k=k, margin="ratio", selection="max", threshold=None, **BOTH_MEANS)
    pairs = mine(src, tgt, config)  # best first; rows are unique ids here
    candidates = ScoredCandidates([(str(s), str(t)) for s, t in zip(pairs.src.tolist(), pairs.tgt.tolist())],
                                  pairs.margin.astype(np.float64), frozenset((str(i), str(i)) for i in range(n_gold)))
    f1 = sweep(candidates)["f1"]
    return tune_threshold(candidates), float(100 * f1.max()) if len(f1) else 0.0


def offsets_from(best: dict[str, tuple[float, float]], reference: list[str], scale: float = 1.0) -> dict[str, float]:
    """scale * (t*(L) - mean t* over the reference languages), rounded to 4 places; the reference languages
    themselves 0 (the shared threshold was tuned on them, on their own dev sets: their offsets here were noise
    there, module docstring); languages without a t*, none."""
    missing = [language for language in reference if not math.isfinite(best.get(language, (math.inf, 0))[0])]
    if missing:
        raise ValueError(f"reference language(s) without a measured threshold: {', '.join(missing)}")
    centre = float(np.mean([best[language][0] for language in reference]))
    return {language: 0.0 if language in reference else round(scale * (t - centre), 4)
            for language, (t, _) in sorted(best.items()) if math.isfinite(t)}


def measure(encoder_spec: str, train_pool: Path, source_distractors: int, target_distractors: int, k: int = 4
            ) -> dict[str, tuple[float, float]]:
    """Each held-out language's (t*, best F1) against English with the encoder."""
    from encoders import load_encoder

    texts, n_gold = mining_sets(train_pool, source_distractors, target_distractors)
    encoder = load_encoder(encoder_spec)
    english = encoder.encode(texts[ENGLISH], language=ENGLISH)
    best = {}
    languages = sorted(language for language in texts if language != ENGLISH)
    with quiet_logger("miner.mining"), quiet_logger("miner.index"):
        for done, language in enumerate(languages, 1):
            best[language] = best_threshold(encoder.encode(texts[language], language=language), english, n_gold, k)
            if done % 20 == 0 or done == len(languages):
                log.info("%d of %d languages measured", done, len(languages))
    return best


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    parser = argparse.ArgumentParser(prog="python -m training.thresholds", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", required=True, help="a local encoder folder: the file is written into it")
    parser.add_argument("--train-pool", type=path_argument, default=Path("../shared/data/train"),
                        help="the folder holding ntrex-128/")
    parser.add_argument("--reference", nargs="+", default=list(REFERENCE),
                        help="languages whose mean t* is the shared threshold's (offset 0 on average)")
    parser.add_argument("--source-distractors", type=int, default=700,
                        help="NTREX training lines added to each language's side (default 700)")
    parser.add_argument("--target-distractors", type=int, default=1000,
                        help="NTREX training lines added to the English side (default 1000)")
    parser.add_argument("--k", type=int, default=4, help="neighbours per sentence, as the pipeline will mine (its "
                        "threshold and these offsets belong to a k)")
    parser.add_argument("--scale", type=float, default=SCALE,
                        help="the part of each measured move the offsets take (module docstring)")
    parser.add_argument("--output", type=path_argument, help="default: <encoder>/thresholds.json")
    args = parser.parse_args(argv)
    if not Path(args.encoder).is_dir():
        parser.error(f"--encoder {args.encoder}: not a local folder (the offsets are written beside its files)")
    if "dev" in args.train_pool.resolve().parts:
        parser.error(f"{args.train_pool}: offsets are measured on the train pool, never on dev/")
    if not 0 <= args.scale <= 1:  # before the measurement, which takes minutes
        parser.error(f"--scale must be within [0, 1], got {args.scale}")
    from miner.languages import is_language_name

    unnamed = [code for code in args.reference if not is_language_name(code)]
    if unnamed:  # found only after every language had been measured
        parser.error(f"--reference {' '.join(unnamed)}: not language names as NTREX's are read (deu_Latn, "
                     "fra_Latn ...)")
    if min(args.source_distractors, args.target_distractors) < 0:
        parser.error("--source-distractors and --target-distractors must be 0 or more")
    setup_logging()
    return exit_status(lambda: thresholds_command(args))


def thresholds_command(args: argparse.Namespace) -> None:
    best = measure(args.encoder, args.train_pool, args.source_distractors, args.target_distractors, args.k)
    offsets = offsets_from(best, args.reference, args.scale)
    output = args.output or Path(args.encoder) / FILE
    write_json(output, {
        "format": FORMAT, "reference": args.reference, "scale": args.scale, "offsets": offsets,
        "measured": {"sets": f"NTREX-128 held-out documents among {args.source_distractors} / "
                             f"{args.target_distractors} distractors (training.ensemble's long sets)",
                     "mining": f"ratio margin, k = {args.k}, max selection, both neighbourhood means; BUCC "
                               "threshold rule",
                     "command": f"python -m training.thresholds --encoder {args.encoder} --k {args.k} "
                                f"--scale {args.scale}",
                     "best": {language: {"threshold": round(t, 4), "f1": round(f1, 1)}
                              for language, (t, f1) in sorted(best.items())}}})
    for language, offset in sorted(offsets.items(), key=lambda item: item[1]):
        print(f"{language}  t* {best[language][0]:.3f}  offset {offset:+.3f}  best F1 {best[language][1]:.1f}")
    print(f"wrote {output}: {len(offsets)} languages (reference: {', '.join(args.reference)})")


if __name__ == "__main__":
    raise SystemExit(main())
