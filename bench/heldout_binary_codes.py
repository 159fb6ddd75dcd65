r"""Binary codes against float vectors on the train pool's held-out sets: how `embed.binary_center` was chosen.

A quality measurement, not a speed one: the sets the ensemble's shares are fitted on (training.ensemble: NTREX's
held-out documents among distractors, and heldout-short/tune), each member's vectors from training.ensemble's
cache (embedded there first when missing), blended with an ensemble's shares, then compared as float vectors,
plain sign codes and sign codes less each language's mean (encoders.binary). The dev pool is never read.

    python bench/heldout_binary_codes.py --ensemble models/cmlm-ensemble \
        --members use-multilingual models/cmlm-distilled [--cache data/ensemble-cache]

Prints xsim accuracy (NTREX held-out rows; short pairs) and the best mining F1 (NTREX among 600 / 1,200
distractors) with the ratio and the distance margin (`--k` neighbours, 4 by default), each the mean over languages.
`--learned-rotation` adds the centred sign code after a rotation learned by iterative quantisation (ITQ: Gong and
Lazebnik 2011) on the short pairs' other half (heldout-short/test) instead of the fixed randomised Hadamard one.
The last row is the centred code whose selected pairs are scored again from each side's float vector against the
other's code (`miner.evaluate --binary --rescore pairs`): the mining F1 only, as xsim ranks by the codes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from encoders import binary
from training.ensemble import ENGLISH, _all_vectors, blend, mining_sets, short_key, short_sets, xsim_accuracy

CODES = {
    "float": lambda v: v,
    "sign code": lambda v: binary.unit_rows(binary.pack(binary.sign_bits(v)), "sign"),
    "sign code, less the language's mean": lambda v: binary.unit_rows(
        binary.pack(binary.sign_bits(v, binary.language_mean(v))), "sign"),
}


def learned_rotation(vectors: list[np.ndarray], iterations: int = 50) -> np.ndarray:
    """ITQ's orthogonal R minimising ||B - V R||, B = sign(V R), over each set's rows less its own mean, started
    from encoders.binary's fixed rotation: alternately the codes for R, and R for the codes (orthogonal Procrustes)."""
    rows = np.concatenate([v - v.mean(axis=0) for v in vectors]).astype(np.float64)
    dim = rows.shape[1]
    rotation = np.diag(binary._random_signs(dim)) @ binary._hadamard(dim)
    for _ in range(iterations):
        codes = np.where(rows @ rotation > 0, 1.0, -1.0)
        u, _, vt = np.linalg.svd(rows.T @ codes)
        rotation = u @ vt
    return rotation


def best_f1(src: np.ndarray, tgt: np.ndarray, n_gold: int, margin: str, code: str | None, k: int = 4,
            refine: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """Best F1 (%) over thresholds: row i of src translates row i of tgt for i < n_gold (training.ensemble's
    mining_f1, with the margin, its k and the code's cosine estimates as the pipeline uses them; `refine`: the
    selected pairs scored again, miner.mining.refine_pairs)."""
    from miner.mining import MiningConfig, mine

    pairs = mine(src, tgt, MiningConfig(k=k, margin=margin, selection="max", threshold=None), code=code,
                 refine=refine)
    correct = np.cumsum((pairs.src == pairs.tgt) & (pairs.src < n_gold))
    return float(100.0 * (2 * correct / (np.arange(1, len(correct) + 1) + n_gold)).max()) if len(correct) else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ensemble", type=Path, default=Path("models/cmlm-ensemble"), help="its shares are used")
    parser.add_argument("--members", nargs=2, default=["use-multilingual", "models/cmlm-distilled"],
                        help="the ensemble's two members, in its order")
    parser.add_argument("--cache", type=Path, default=Path("data/ensemble-cache"),
                        help="training.ensemble's cache of member vectors (filled where missing)")
    parser.add_argument("--train-pool", type=Path, default=Path("../shared/data/train"),
                        help="the train pool (NTREX's held-out documents)")
    parser.add_argument("--short", type=Path, default=Path("data/train/heldout-short/tune"),
                        help="held-out short pairs (training.prepare's heldout-short/tune)")
    parser.add_argument("--partner-english", action="store_true",
                        help="also the centred code with English coded for its partner: where the partner's share "
                             "gives one member all the weight, English keeps only that member too (the float "
                             "similarity is then a fixed multiple of the same member's cosine: same neighbours and "
                             "ratio margins)")
    parser.add_argument("--learned-rotation", type=Path, metavar="OTHER_HALF", nargs="?",
                        const=Path("data/train/heldout-short/test"),
                        help="also the centred code after an ITQ rotation learned on these short pairs")
    parser.add_argument("--k", type=int, default=4,
                        help="the margins' neighbourhood for the mining F1 (mining.k; 4 by default)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    shares = json.loads((args.ensemble / "ensemble.json").read_text())
    share = lambda language: shares["languages"].get(language, shares["default"])[0]
    texts, n_gold = mining_sets(args.train_pool, 600, 1200)
    short = short_sets(args.short, 1000, 100)
    other = short_sets(args.learned_rotation, 1000, 100) if args.learned_rotation else {}
    members = [_all_vectors(spec, texts, {"tune": short, "test": other}, args.cache) for spec in args.members]
    vectors = lambda name, language: blend([m[name] for m in members], share(language))
    codes = dict(CODES)
    if other:
        rotation = learned_rotation([vectors(short_key("test", language, side), side or language)
                                     for language in other for side in (None, ENGLISH)])
        codes["sign code, less the language's mean, ITQ rotation"] = lambda v: binary.unit_rows(
            binary.pack((v - binary.language_mean(v)) @ rotation > 0), "sign")

    centred = codes["sign code, less the language's mean"]
    partner = "sign code, less the language's mean, English coded for its partner"
    if args.partner_english:
        codes[partner] = centred
    # English as the partner language's share would blend it: a member alone where that share is 0 or 1
    english_for = lambda name, partner_language, key=ENGLISH: blend(
        [m[key] for m in members], share(partner_language) if name == partner and share(partner_language) in (0, 1)
        else share(ENGLISH))
    rows = {name: {"NTREX xsim": [], "short xsim": [], "NTREX F1 ratio": [], "NTREX F1 distance": []}
            for name in codes}
    for language in (lang for lang in texts if lang != ENGLISH):
        own = vectors(language, language)
        for name, code_of in codes.items():
            a, b = code_of(own), code_of(english_for(name, language))
            code = None if name == "float" else "sign"
            rows[name]["NTREX xsim"].append(xsim_accuracy(a[:n_gold], b[:n_gold], texts[language][:n_gold],
                                                          texts[ENGLISH][:n_gold]))
            for margin in ("ratio", "distance"):
                rows[name][f"NTREX F1 {margin}"].append(best_f1(a, b, n_gold, margin, code, args.k))
    for language, (own_texts, english_texts) in short.items():
        a = vectors(short_key("tune", language), language)
        for name, code_of in codes.items():
            b = english_for(name, language, short_key("tune", language, ENGLISH))
            rows[name]["short xsim"].append(xsim_accuracy(code_of(a), code_of(b), own_texts, english_texts))

    refined = "sign code, less the language's mean, selected pairs refined"
    rows[refined] = {column: [] for column in next(iter(rows.values()))}
    for language in (lang for lang in texts if lang != ENGLISH):
        own, english = vectors(language, language), english_for("float", language)
        turned = tuple(binary.rotated_rows(v, binary.language_mean(v)) for v in (own, english))
        a, b = centred(own), centred(english)
        for margin in ("ratio", "distance"):
            rows[refined][f"NTREX F1 {margin}"].append(best_f1(a, b, n_gold, margin, "sign", args.k, turned))

    columns = list(next(iter(rows.values())))
    print(f"| | {' | '.join(columns)} |\n|---|{'---|' * len(columns)}")
    for name, row in rows.items():
        print(f"| {name} | " + " | ".join(f"{np.mean(row[c]):.2f} ({len(row[c])})" if row[c] else "-"
                                          for c in columns) + " |")


if __name__ == "__main__":
    main()
