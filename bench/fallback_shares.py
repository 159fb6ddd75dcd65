r"""What an ensemble gives a language it has no share of its own for: the default share, or a share by script?

    python bench/fallback_shares.py                     # models/cmlm-ensemble, data/train/heldout-short (train pool)

training.ensemble fits shares for the languages with enough held-out text (155 in the shipped ensemble) and gives
every other language the default share. A crawl's long tail is those other languages, so this asks whether a
share per script (Arabic, Devanagari, Han ...) would serve them better:
* chosen as training.ensemble chooses a language's share (`never_below_a_member`, min gain 1 point), on the mean
  scores of the script's own-share languages that `heldout.json` holds (the tune half and NTREX's held-out news);
  a script with no own-share language keeps the default;
* checked on the languages with no share of their own: their held-out short pairs, both halves (no choice ever saw
  them; each language's pairs retrieved among themselves, cosine, both directions, English at the default share).
Prints, per script, the accuracy over its queries at the default, at the script's share and with each member alone,
the share the checked languages themselves would pick, and the sign test's p that the script share beats the
default; then the totals. The members' vectors are cached as training.ensemble caches them (`--cache`).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training.ensemble import (  # noqa: E402
    ENGLISH,
    blend,
    member_vectors,
    never_below_a_member,
    p_better,
    quiet_logger,
    short_sets,
    xsim_outcomes,
)


def script_shares(heldout: dict, min_gain: float) -> dict[str, float]:
    """Per script, the share chosen over its own-share languages' mean held-out scores (long and short sets)."""
    grid, default = heldout["grid"], heldout["default"]
    by_script = collections.defaultdict(list)
    for language in heldout["languages"]:
        by_script[language.split("_")[1]].append(language)
    chosen = {}
    for script, languages in by_script.items():
        sets = [{a: float(np.mean([scores[lang][str(a)] for lang in languages if lang in scores])) for a in grid}
                for scores in (heldout["scores"], heldout["short_scores"])
                if any(lang in scores for lang in languages)]
        chosen[script] = never_below_a_member(sets, grid, default, min_gain)[0]
    return chosen


def unshared_sets(short_root: Path, shared: dict) -> dict[str, tuple[list[str], list[str]]]:
    """Both halves of the held-out short pairs of every language without a share of its own."""
    sets: dict[str, tuple[list[str], list[str]]] = {}
    for half in ("tune", "test"):
        for language, (texts, english) in short_sets(short_root / half, 1000, 1).items():
            if language not in shared:
                pair = sets.setdefault(language, ([], []))
                pair[0].extend(texts)
                pair[1].extend(english)
    return sets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ensemble", type=Path, default=Path("models/cmlm-ensemble"),
                        help="the ensemble folder whose heldout.json holds the fitted languages' scores")
    parser.add_argument("--short", type=Path, default=Path("data/train/heldout-short"),
                        help="training.prepare's held-out short pairs (both halves are read)")
    parser.add_argument("--cache", type=Path, default=Path("data/ensemble-cache"),
                        help="training.ensemble's cache of the members' vectors")
    parser.add_argument("--min-gain", type=float, default=1.0,
                        help="points a script's share must gain over the default, as training.ensemble's rule")
    args = parser.parse_args(argv)
    spec = json.loads((args.ensemble / "ensemble.json").read_text())
    heldout = json.loads((args.ensemble / "heldout.json").read_text())
    grid, default = heldout["grid"], heldout["default"]
    chosen = script_shares(heldout, args.min_gain)
    sets = unshared_sets(args.short, spec["languages"])
    named, languages = {}, {}
    for language, (texts, english) in sets.items():
        named[f"unshared.{language}"], languages[f"unshared.{language}"] = texts, language
        named[f"unshared.{language}.{ENGLISH}"], languages[f"unshared.{language}.{ENGLISH}"] = english, ENGLISH
    members = [str(args.ensemble / m) if (args.ensemble / m).exists() else m for m in spec["members"]]
    vectors = [member_vectors(m, named, args.cache, languages) for m in members]
    queries = collections.defaultdict(lambda: {a: [] for a in grid})
    with quiet_logger("miner"):
        for language, (texts, english) in sets.items():
            src = [v[f"unshared.{language}"] for v in vectors]
            tgt = blend([v[f"unshared.{language}.{ENGLISH}"] for v in vectors], default)
            for a in grid:
                queries[language.split("_")[1]][a].append(xsim_outcomes(blend(src, a), tgt, texts, english))
    print(f"{len(sets)} languages without a share of their own (default {default})")
    print("script | languages | queries | script share | default | script share | first member | second member "
          "| best share on these | p (script share > default)")
    totals = collections.Counter()
    for script, rows in sorted(queries.items(), key=lambda item: -sum(map(len, item[1][0.0]))):
        pooled = {a: np.concatenate(r) for a, r in rows.items()}
        accuracy = {a: 100.0 * pooled[a].mean() for a in grid}
        share = chosen.get(script, default)
        best = max(grid, key=lambda a: accuracy[a])
        print(f"{script} | {len(rows[0.0])} | {len(pooled[0.0])} | {share} | {accuracy[default]:.1f} | "
              f"{accuracy[share]:.1f} | {accuracy[1.0]:.1f} | {accuracy[0.0]:.1f} | {best} ({accuracy[best]:.1f}) | "
              f"{p_better(pooled[share], pooled[default]):.3f}")
        for name, a in (("default", default), ("script share", share), ("first member", 1.0),
                        ("second member", 0.0)):
            totals[name] += int(pooled[a].sum())
        totals["queries"] += len(pooled[0.0])
    print("all | " + ", ".join(f"{name} {100.0 * n / totals['queries']:.2f}" for name, n in totals.items()
                               if name != "queries") + f" ({totals['queries']} queries)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
