"""Whether a dialect's sentences say which dialect they are: the written evidence our identifier could use, counted
in the train pool and in FLORES-200 devtest (issue 21's weakest languages; docs/text.md, "What the mean still
loses").

Two counts, both plain string matching, no model:
- Cantonese: the share of sentences holding a character that written Cantonese uses and Standard Written Chinese
  does not (CANTONESE_ONLY), in the train pool's NTREX-128 Cantonese and Traditional Chinese and in FLORES's.
- Arabic dialects: each dialect's lexicon, the words seen `--min-count` times or more in its train-pool lines and
  never in Standard Arabic's (every source); then the share of each FLORES language's sentences holding a word of
  each lexicon. A dialect whose sentences hold its own lexicon's words, and Standard Arabic's do not, is one a
  reader of words could tell apart.

    python bench/lid_dialect_evidence.py --train-pool ../shared/data/train \\
        --flores ../shared/data/dev/flores200-devtest/devtest

The dev pool is read to measure only: nothing here is chosen on it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# written Cantonese's own function words and particles (genitive, copula, perfective, locative, pronoun plural,
# negation, "some", "thing", "look", "like this"): none is used in Standard Written Chinese
CANTONESE_ONLY = "嘅係咗喺佢哋冇啲唔嘢睇噉"
ARABIC_DIALECTS = ("arz_Arab", "ary_Arab", "acm_Arab", "apc_Arab", "aeb_Arab", "arq_Arab")
STANDARD_ARABIC = "arb_Arab"
WORD = re.compile(r"\w+")


def share(lines: list[str], holds) -> float:
    """Percentage of `lines` for which `holds(line)` is true."""
    return round(100 * sum(map(holds, lines)) / max(1, len(lines)), 1)


def holds_cantonese(line: str) -> bool:
    return any(char in line for char in CANTONESE_ONLY)


def words(line: str) -> set[str]:
    return set(WORD.findall(line.lower()))


def lexicons(pool, dialects, standard: str, min_count: int) -> dict[str, set[str]]:
    """Each dialect's words seen `min_count` times or more in its lines and never in `standard`'s."""
    standard_words = {word for line in pool.lines[standard] for word in words(line)}
    found = {}
    for dialect in dialects:
        counts = Counter(word for line in pool.lines[dialect] for word in words(line))
        found[dialect] = {word for word, n in counts.items()
                          if n >= min_count and word not in standard_words and not word.isdigit()}
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-pool", type=Path, required=True, help="the train pool (../shared/data/train)")
    parser.add_argument("--flores", type=Path, required=True, help="FLORES-200 devtest folder (measured only)")
    parser.add_argument("--min-count", type=int, default=3,
                        help="times a word is seen in a dialect's lines to join its lexicon (default 3)")
    args = parser.parse_args(argv)

    from pipelines.text.langid_data import read_pool
    from pipelines.text.langid_eval import read_flores

    flores = read_flores(args.flores, {*ARABIC_DIALECTS, STANDARD_ARABIC, "yue_Hant", "zho_Hant"})
    ntrex = read_pool(args.train_pool, sources=["ntrex-128"])
    report = {"cantonese characters, % of sentences": {
        f"{where} {code}": share(lines[code], holds_cantonese)
        for where, lines in (("train pool NTREX-128", {c: list(ntrex.lines[c]) for c in ("yue_Hant", "zho_Hant")}),
                             ("FLORES", flores))
        for code in ("yue_Hant", "zho_Hant")}}

    pool = read_pool(args.train_pool)
    found = lexicons(pool, ARABIC_DIALECTS, STANDARD_ARABIC, args.min_count)
    report["dialect lexicons, words"] = {code: len(lexicon) for code, lexicon in found.items()}
    report["FLORES sentences holding a word of each lexicon, %"] = {
        code: {dialect: share(flores[code], lambda line, lexicon=lexicon: not words(line).isdisjoint(lexicon))
               for dialect, lexicon in found.items()}
        for code in (*ARABIC_DIALECTS, STANDARD_ARABIC) if code in flores}
    print(json.dumps(report, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
