r"""How often pipelines.text.charset reads an undeclared legacy page right: pages of 1 and of 5 sentences in the
code page their language was written in before UTF-8 (windows-1252 for French, 1250 for Polish, 1257 for
Lithuanian ...), with no charset in the HTTP header or the HTML, decoded as the reading stage decodes them; a page
is right when its text comes back exactly. Rows: detection alone (charset_normalizer's guesses ranked by chaos,
language coherence, then how common the charset is on the web), the stage's way (the language identifier picks
among those guesses: charset.judged), and rules that take the commonest charset among the guesses within
`--tolerance` of the least chaos.

    python bench/charset_detection.py --pool train            # NTREX-128 sentences: the pool choices are made on
    python bench/charset_detection.py --pool dev              # FLORES-200 devtest: measured, never tuned

Sentences are drawn with a fixed seed among those with a character outside ASCII that the code page holds.
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipelines.text import charset  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
CODE_PAGES = {"cp1252": "fra ita cat deu spa por nld swe dan fin isl glg", "cp1250": "pol ces hun slk slv hrv",
              "cp1257": "lit lav est", "cp1254": "tur", "cp1251": "rus ukr bul mkd", "cp1253": "ell",
              "cp1255": "heb", "cp1256": "arb fas", "cp874": "tha"}
FLORES_NAMES = {"lav": "lvs_Latn", "fas": "pes_Arab", "arb": "arb_Arab", "rus": "rus_Cyrl", "ukr": "ukr_Cyrl",
                "bul": "bul_Cyrl", "mkd": "mkd_Cyrl", "ell": "ell_Grek", "heb": "heb_Hebr", "tha": "tha_Thai"}


def sentences(language: str, pool: str) -> list[str]:
    if pool == "train":
        path = SHARED / "train" / "ntrex-128" / "NTREX-128" / f"newstest2019-ref.{language}.txt.gz"
    else:
        path = SHARED / "dev" / "flores200-devtest" / "devtest" / \
            f"{FLORES_NAMES.get(language, language + '_Latn')}.devtest.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip() and not line.isascii()]


def ranked(body: bytes, tolerance: float | None) -> list[str]:
    """charset._detected_codecs, or with the guesses within `tolerance` of the least chaos taken first, commonest
    charset first."""
    from charset_normalizer import from_bytes

    if tolerance is None:
        return charset._detected_codecs(body)
    matches = list(from_bytes(body[:charset.DETECT_WINDOW]))

    def shipped(match):
        return round(match.chaos, 2), -round(match.coherence, 2), charset._prior(match)

    least = min((m.chaos for m in matches), default=0.0)
    near = sorted((m for m in matches if m.chaos <= least + tolerance), key=lambda m: (charset._prior(m), shipped(m)))
    rest = sorted((m for m in matches if m not in near), key=shipped)
    names = [n for m in near + rest for n in sorted(m.could_be_from_charset, key=charset._rank)]
    return list(dict.fromkeys(charset._BROWSER_CODECS.get(n, n) for n in names if n not in charset._UNICODE_WIDE))


def pages(pool: str, per_language: int, seed: int) -> dict[tuple[str, int], list[tuple[bytes, str]]]:
    """(code page, sentences a page) -> [(the page's bytes, its text)]."""
    rng, out = random.Random(seed), {}
    for page, languages in CODE_PAGES.items():
        for language in languages.split():
            fitting = []
            for line in sentences(language, pool):
                try:
                    line.encode(page)
                except UnicodeEncodeError:
                    continue
                fitting.append(line)
            rng.shuffle(fitting)
            for size in (1, 5):
                for i in range(per_language):
                    chunk = fitting[i * size:(i + 1) * size]
                    if len(chunk) < size:
                        break
                    text = "".join(f"<p>{s}</p>" for s in chunk)
                    out.setdefault((page, size), []).append((f"<html><body>{text}</body></html>".encode(page), text))
    return out


def reads_right(body: bytes, text: str, judge) -> bool:
    """The page decodes to its text; one no charset fits (nothing detected) is read wrong, not the run's end."""
    try:
        return text in charset.decode_html(body, judge=judge).text
    except charset.UndecodableError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pool", choices=("train", "dev"), default="train")
    parser.add_argument("--per-language", type=int, default=30, help="pages of each size a language (default 30)")
    parser.add_argument("--tolerance", type=float, nargs="*", default=[0.02, 0.05, 0.1],
                        help="rules to measure beside the shipped one")
    parser.add_argument("--margins", type=float, nargs="*", default=[],
                        help="rules beside the shipped one: the identifier's pick overruling detection's first "
                        "decoding when its log-odds are higher by more than each margin (charset.JUDGE_MARGIN); "
                        "`--margins 0` without --same-script is the rule before 2026-12-01")
    parser.add_argument("--same-script", action="store_true",
                        help="in the --margins rows, pick only among decodings in detection's first's script")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lid", default="combined+experts",
                        help="the identifier that judges the candidate decodings, as the text stage's (lid.model)")
    args = parser.parse_args(argv)
    if args.per_language < 1:
        parser.error("--per-language must be 1 or more")
    sets = pages(args.pool, args.per_language, args.seed)
    shipped = charset._detected_codecs
    from pipelines.text.langid import load_identifier

    identifier = load_identifier(args.lid)

    def judge(texts: list[str]) -> list[float]:  # as pipelines.text.stage.TextStage.judge_decodings
        return [answers[0][1] if answers else 0.0 for answers in identifier.predict(texts)]

    print("| rule | " + " | ".join(f"{page} / {size}" for page, size in sets) + " | all, 1 sentence | all, 5 |")
    print("| --- " * (len(sets) + 3) + "|")
    shipped_margin, shipped_script = charset.JUDGE_MARGIN, charset.JUDGE_SAME_SCRIPT
    try:
        for tolerance in ["unjudged", "judged", *args.tolerance, *(f"margin {m}" for m in args.margins)]:
            numeric = not isinstance(tolerance, str)
            charset._detected_codecs = (lambda body, t=tolerance: ranked(body, t)) if numeric else shipped
            by = judge if tolerance == "judged" or str(tolerance).startswith("margin") else None
            charset.JUDGE_MARGIN = float(tolerance.split()[1]) if str(tolerance).startswith("margin") \
                else shipped_margin
            charset.JUDGE_SAME_SCRIPT = args.same_script if str(tolerance).startswith("margin") else shipped_script
            right = {key: [reads_right(body, text, by) for body, text in bodies] for key, bodies in sets.items()}
            overall = {size: 100 * sum(sum(r) for (_, s), r in right.items() if s == size)
                       / sum(len(r) for (_, s), r in right.items() if s == size) for size in (1, 5)}
            name = {"unjudged": "detection alone (the order of its guesses)",
                    "judged": f"**the identifier's pick** among its first {charset.JUDGED_GUESSES} (the stage's)"
                    }.get(tolerance) or (f"the identifier's pick, overruling detection's first by more than "
                                         f"{tolerance.split()[1]}" if str(tolerance).startswith("margin") else
                                         f"commonest within {tolerance} of the least chaos, unjudged")
            print(f"| {name} | " + " | ".join(f"{100 * sum(r) / len(r):.0f}" for r in right.values())
                  + f" | {overall[1]:.1f} | {overall[5]:.1f} |", flush=True)
    finally:
        charset._detected_codecs, charset.JUDGE_MARGIN = shipped, shipped_margin
        charset.JUDGE_SAME_SCRIPT = shipped_script
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
