"""The run's report (output/report.json) and the summary printed at the end of `python -m pipelines.mine`."""

from __future__ import annotations

import csv
import io
from collections import defaultdict

from miner.bucc import prf
from miner.console import plural
from miner.margin import TINY_POOLS
from pipelines import storage
from pipelines.layout import STAGE_FOLDERS, bitext_parts
from pipelines.manifests import relative
from pipelines.pairs.selection import BELOW
from pipelines.text.dedup import normalise
from pipelines.text.records import ROUTINE_SKIPS
from pipelines.text.warc import FILE_SKIPS


def stage_report(settings: dict, manifests: dict, seconds: float) -> dict:
    """The run's report; the files it names (the bitext) are relative to the output folder, as in the manifests."""
    extract, pairs = manifests.get("extract", {}), manifests.get("pairs", {})
    read = extract.get("counters", {}).get("read", {})
    output = settings.get("output")
    files = {"parquet", "tsv", "parts"}
    extracted = {lang: entry["rows"] for lang, entry in sorted(extract.get("languages", {}).items())}
    # a run narrowed to fewer languages reuses an extract output made for more (pipelines.dependencies): its
    # sentences are those of the languages asked for, the others named by count only
    asked = set(settings.get("languages") or extracted)
    return {
        "input": settings.get("input"), "output": settings.get("output"), "encoder": settings.get("encoder"),
        "pages": read.get("pages", 0),
        "records": read.get("records", 0),
        "sentences": {lang: n for lang, n in extracted.items() if lang in asked},
        "sentences_not_asked_for": len(set(extracted) - asked),
        "languages_without_sentences": sorted(lang for lang in asked if not extracted.get(lang)) if extract else [],
        "mining": pairs.get("settings"),
        "pairs": {entry["pair"]: {k: relative_files(v, output) if k in files else v for k, v in entry.items()
                                  if k != "pair"} for entry in pairs.get("pairs", [])},
        "seconds": {**{name: m.get("seconds") for name, m in manifests.items()}, "total": round(seconds, 1)},
        "counters": {name: m.get("counters", {}) for name, m in manifests.items()},
    }


def relative_files(value, output: str):
    """A bitext file's path, or a pair's parts' (pipelines.layout.bitext_parts), relative to the output folder."""
    if isinstance(value, list):
        return [{k: relative(v, output) if k in ("parquet", "tsv") else v for k, v in part.items()} for part in value]
    return relative(value, output)


def read_gold(path: str) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """Known translations, `src_lang src_text tgt_lang tgt_text` columns with a header, by language pair, as
    normalised texts (extraction may change spacing; dedup's normalisation is what counts as the same)."""
    try:
        text = storage.read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"gold {path}: not a UTF-8 text file (byte {err.start})") from None
    except OSError as err:  # missing, a folder, no permission
        raise ValueError(f"gold {path}: cannot be read ({err.strerror or err})") from None
    rows = csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    missing = {"src_lang", "src_text", "tgt_lang", "tgt_text"} - set(rows.fieldnames or [])
    if missing:
        raise ValueError(f"{path}: gold file needs columns src_lang, src_text, tgt_lang, tgt_text "
                         f"(missing {', '.join(sorted(missing))})")
    gold: dict[tuple[str, str], set] = defaultdict(set)
    for row in rows:
        gold[(row["src_lang"], row["tgt_lang"])].add((normalise(row["src_text"]), normalise(row["tgt_text"])))
    return gold


def gold_scores(path: str, pairs_manifest: dict) -> dict:
    """Precision and recall of each mined language pair against the known translations (and over all pairs)."""
    gold = read_gold(path)
    scores, totals = {}, {"mined": 0, "correct": 0, "gold": 0}
    for entry in pairs_manifest.get("pairs", []):
        src, tgt = entry["pair"].split("-")
        # a gold file lists a pair one way round; `pairs: all` names it the other way (eng_Latn-fra_Latn)
        known = gold.get((src, tgt), set()) | {(t, s) for s, t in gold.get((tgt, src), set())}
        mined = set()
        for part in bitext_parts(entry):
            table = storage.read_parquet(part["parquet"], columns=["src_text", "tgt_text"]).to_pydict()
            mined |= {(normalise(s), normalise(t)) for s, t in zip(table["src_text"], table["tgt_text"])}
        correct = len(mined & known)
        if not known:  # the gold file says nothing of this pair: its pairs are unscored, not wrong
            scores[entry["pair"]] = {"mined": len(mined), "gold": 0, "unscored": True}
            continue
        scores[entry["pair"]] = {"mined": len(mined), "correct": correct, "gold": len(known),
                                 **prf(correct, len(mined), len(known))}
        for key, value in (("mined", len(mined)), ("correct", correct), ("gold", len(known))):
            totals[key] += value
    return {"file": path, "pairs": scores,
            "all": {**totals, **prf(totals["correct"], totals["mined"], totals["gold"])}}


def left_out(counters: dict, pair: str, mining: dict) -> str:
    """`; its 1,024 candidates had a cosine below min_cosine 0.29 (1,000) or a margin below the threshold (24)`
    from the pair's counters (pipelines.pairs.selection.BELOW), or `; its 24 candidates all had a margin below the
    threshold`; "" where it had none."""
    floor, below = (counters.get(f"{what}:{pair}", 0) for what in BELOW)
    if not floor + below:
        return ""
    reasons = {f"a cosine below min_cosine {mining.get('min_cosine')}": floor, "a margin below the threshold": below}
    reasons = {text: n for text, n in reasons.items() if n}
    if len(reasons) == 1:
        return f"; its {floor + below:,} candidates all had {next(iter(reasons))}"
    return f"; its {floor + below:,} candidates had {' or '.join(f'{text} ({n:,})' for text, n in reasons.items())}"


def resumed_line(counters: dict) -> str | None:
    """What this run kept of a stopped run's work (pipelines.job resumes each stage), if any."""
    pages = counters.get("extract", {}).get("extract", {}).get("resumed_pages", 0)
    sentences = counters.get("embed", {}).get("embed", {}).get("resumed_sentences", 0)
    pairs = counters.get("pairs", {}).get("pairs", {})
    quantizers, assigned = pairs.get("resumed_quantizers", 0), pairs.get("resumed_rows_assigned", 0)
    kept = [f"{pages:,} {plural(pages, 'page')} extracted" if pages else "",
            f"{sentences:,} {plural(sentences, 'sentence')} embedded" if sentences else "",
            f"{quantizers:,} {plural(quantizers, 'quantizer')} trained" if quantizers else "",
            f"{assigned:,} {plural(assigned, 'row')} assigned to lists" if assigned else ""]
    kept = [part for part in kept if part]
    if not kept:
        return None
    listed = kept[0] if len(kept) == 1 else f"{', '.join(kept[:-1])} and {kept[-1]}"
    return f"  resumed: kept the {listed} by a stopped run"


def format_summary(report: dict) -> str:
    lines = [f"mined {report['input']} -> {report['output']} with {report['encoder']}",
             f"  pages: {report['pages']} kept of {report['records']} records"]
    read = report.get("counters", {}).get("extract", {}).get("read", {})
    lost = {what: read[f"skipped:{reason}"] for reason, what in FILE_SKIPS.items() if read.get(f"skipped:{reason}")}
    if lost:  # a wrong file is a warning in the log; here it is why the run found nothing in it
        lines.append("  input files skipped: " + ", ".join(f"{n} {what}" for what, n in lost.items())
                     + " (the log names them)")
    damaged = {reason.removeprefix("skipped:"): n for reason, n in sorted(read.items())
               if reason.startswith("skipped:") and n and reason.removeprefix("skipped:") not in FILE_SKIPS
               and reason.removeprefix("skipped:") not in ROUTINE_SKIPS}
    if damaged:  # what a crawl is full of (redirects, images) is routine; damage is worth a line
        lines.append("  records skipped as damaged or too large: "
                     + ", ".join(f"{n} {why}" for why, n in damaged.items()) + " (the log names them)")
    sentences = report["sentences"]
    if sentences:
        others = report.get("sentences_not_asked_for", 0)
        lines.append("  sentences: " + ", ".join(f"{lang} {n}" for lang, n in sentences.items())
                     + (f" (and {others} more {plural(others, 'language')} in the extracted sentences, "
                        "not asked for)" if others else ""))
    empty = report.get("languages_without_sentences") or []
    if empty:  # a code the identifier never gives (xyz_Latn), or a language the crawl lacks: said where it is read
        lines.append(f"  no sentences in {', '.join(empty)}, asked for in `languages`: no pairs with "
                     f"{'it' if len(empty) == 1 else 'them'}")
    resumed = resumed_line(report.get("counters", {}))
    if resumed:
        lines.append(resumed)
    embed = report.get("counters", {}).get("embed", {}).get("embed", {})
    cut = {name.partition(":")[2] or "the encoder": n for name, n in embed.items()
           if name.startswith("truncated") and n}
    if cut:  # a cut sentence is embedded from its first tokens only: worth a line where it happens
        kept = embed.get("resumed_sentences", 0)  # a stopped run's chunks: their cuts were counted in that run
        lines.append(f"  embedded: {embed.get('sentences', 0)} sentences, cut at the maximum length: "
                     + ", ".join(f"{n} by {name}" for name, n in sorted(cut.items()))
                     + (f" (of the {embed.get('sentences', 0) - kept} this run embedded)" if kept else ""))
    mining = report.get("mining") or {}
    if mining:
        lines.append(f"  mining: k={mining['k']} margin={mining['margin']} selection={mining['selection']} "
                     f"threshold={mining['threshold']} min_cosine={mining.get('min_cosine')} "
                     f"ratio_floor={mining.get('ratio_floor')} index={mining['index']}")
    gold = (report.get("gold") or {}).get("pairs", {})
    pair_counters = report.get("counters", {}).get("pairs", {}).get("pairs", {})
    for pair, entry in report["pairs"].items():
        low_high = entry["score_range"]
        text = f"  {pair}: {entry['pairs']} {plural(entry['pairs'], 'pair')}"
        notes = [entry["index"]] if entry.get("index") and entry["index"] != mining.get("index") else []
        if entry.get("parts"):  # past bitext.rows_per_part: files by score range
            notes.append(f"in {len(entry['parts'])} parts by score range")
        if entry["pairs"] and all(report["sentences"].get(lang, 0) < TINY_POOLS for lang in pair.split("-")):
            notes.append(f"both pools under {TINY_POOLS} sentences, where margins mine unrelated pairs too: check "
                         "them (docs/evaluation.md, Both pools tiny)")
        if entry.get("margin_neighbourhoods"):  # miner.margin, "Small pools"
            notes.append(f"margins over {entry['margin_neighbourhoods']}'s neighbourhoods: the smaller pool")
        if entry.get("threshold") is not None and entry["threshold"] != mining.get("threshold"):
            # miner/thresholds.py; miner.margin.pool_shift
            moves = {"offsets": "the languages' offsets", "pool": "the pool's size"}
            why = [f"{moves[name]} {by:+.3f}" for name, by in (entry.get("threshold_moves") or {}).items()]
            notes.append(f"threshold {entry['threshold']:.3f}" + (f": {', '.join(why)}" if why else ""))
        if notes:
            text += f" ({'; '.join(notes)})"
        if low_high:
            text += f", margin {low_high[0]:.3f} .. {low_high[1]:.3f}"
        else:  # why none: what left out the candidates it had
            text += left_out(pair_counters, pair, mining)
        if pair in gold and gold[pair].get("unscored"):
            text += "; the gold file lists none of this pair"
        elif pair in gold:
            g = gold[pair]
            text += f"; P {100 * g['precision']:.1f} R {100 * g['recall']:.1f} ({g['correct']} of {g['gold']} known)"
        lines.append(text)
    filtered = {name.removeprefix("filter/"): n for name, n in report["counters"].get("pairs", {}).get("pairs", {})
                .items() if name.startswith("filter/") and name != "filter/kept"}
    if filtered:
        lines.append("  pair filter dropped " + ", ".join(f"{n} ({rule})" for rule, n in sorted(filtered.items())))
    if report.get("gold"):
        g = report["gold"]["all"]
        unscored = sum(1 for entry in report["gold"]["pairs"].values() if entry.get("unscored"))
        lines.append(f"  all pairs against {report['gold']['file']}: P {100 * g['precision']:.1f} "
                     f"R {100 * g['recall']:.1f} F1 {100 * g['f1']:.1f}"
                     + (f" (over the pairs it lists; {unscored} {plural(unscored, 'pair')} unscored)"
                        if unscored else ""))
    made = [stage for stage in STAGE_FOLDERS if stage in report["seconds"]]  # the stages this report covers
    folder = f"{report['output']}/{STAGE_FOLDERS[made[-1]][-1]}, " if made else f"{report['output']}/"
    lines.append(f"  wrote {folder}report.json ({report['seconds']['total']:.0f} s)")
    return "\n".join(lines)
