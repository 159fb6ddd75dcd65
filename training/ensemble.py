"""Pick an ensemble's shares on held-out data (encoders.ensemble): how much of each member, per language.

    python -m training.ensemble --members use-multilingual models/cmlm-distilled --output models/cmlm-ensemble

Two held-out sets of the train pool, of different lengths, score every share:
* long: NTREX-128's held-out documents in every language (training.prepare.ntrex_references: no training set holds
  them), each against its English source, set up as BUCC is (../shared/docs/METHODS.md §2): the held-out sentences
  hidden among `--source-distractors` other sentences of the language and `--target-distractors` English ones
  (from NTREX's other documents, chosen so that no distractor translates another), scored by what mining with the
  share gives: the best F1 over thresholds of ratio-margin mining (k = 4, max selection), the `mining` criterion
  (`xsim` scores it by retrieval among the held-out sentences alone);
* short: the `tune` half of en-pairs' held-out split (training.prepare's heldout-short/: localisation strings,
  questions, captions; up to `--short-limit` pairs a language), scored by xsim retrieval accuracy (cosine, both
  directions), as Tatoeba is.
For a share a of the first member (1 - a of the second), on a grid of `--step`:
1. the default share: the best mean score over all languages and both sets when both sides use it (what `encode`
   without a language gives, and English always);
2. each language's share, scored against English at the default: only a share that does at least as well as the
   better member alone on each of the language's sets may be chosen (so the ensemble never loses to a member);
   among those, the best mean over the sets, a tie going to the share nearer the default, and the default kept
   unless the best gains more than `--min-gain` points over it (a few hundred sentences cannot tell smaller
   differences apart). `--prefer-members` first keeps the better member alone unless the best gains that much
   over it (measured 2026-11-26: fewer languages below a member on the short test half, French BUCC lower).
   `--blend-alpha P` lets a blend replace the better member only where a one-sided sign test on the short tune
   set's queries proves it better (p < P), or its long-set gain exceeds `--min-gain` (not with
   `--blend-short-only`; docs/training.md). `--retrieval-veto P` first rules out every share that retrieves the
   long set's held-out sentences (cosine, both directions, no distractors) worse than the better member alone by a
   one-sided sign test at p < P: mining F1 at its best threshold can favour a share that retrieves far worse.
   Where no share is that good on both sets (one member better on short sentences, the other
   on long), the member alone whose worst loss is smaller. `heldout.json` says which rule chose each share.
The short sets' `test` half is scored after the choice (members alone and the chosen share): the figures that say
whether the rule holds on sentences no choice saw.
The dev pool is never read: figures reported on it stay a second split. Each member's vectors are cached under
`--cache` (one `.npy` per member and set), so a rerun or an interrupted run embeds only what is missing.
Writes `<output>/ensemble.json` and `<output>/heldout.json` (every language's score per share), atomically.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import logging
import math
import os
from pathlib import Path

import numpy as np

from miner.console import plural, wide_table
from miner.io import atomic_output, folder_files, path_argument, read_json, write_json

log = logging.getLogger("training.ensemble")
ENGLISH = "eng_Latn"
# Mining F1 at its best threshold chose the teacher-heavy shares 0.8-0.9 in six languages the teacher does not know
# by a point or two of noise, where retrieving the same sentences fell 4-10 points (docs/training.md, 2026-12-01)
RETRIEVAL_VETO = 0.05


def member_vectors(spec: str, texts: dict[str, list[str]], cache: Path,
                   languages: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    """Vectors of every set of texts from one member, read from or written to `cache/<member>/<name>.npy`; a set
    is embedded as its language (`languages[name]`, else the name itself). The member's folder is named by its
    spec and its files' sizes and times, so a retrained model is embedded again; a cached file that cannot be
    read, or holds the wrong rows or NaN, is embedded again."""
    languages = languages or {}
    folder = cache / hashlib.sha256(_member_key(spec).encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "member.txt").write_text(spec + "\n", encoding="utf-8")
    out, encoder = {}, None
    for language, lines in texts.items():
        path = folder / f"{language}.npy"
        digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
        stamp = folder / f"{language}.sha256"
        if path.exists() and stamp.exists() and stamp.read_text().strip() == digest:
            cached = _read_cached(path)
            if cached is not None and cached.ndim == 2 and cached.shape[0] == len(lines) and np.isfinite(cached).all():
                out[language] = cached
                continue
            log.warning("%s: damaged cache file, embedding again", path)
        if encoder is None:
            from encoders import load_encoder

            encoder = load_encoder(spec)
        out[language] = encoder.encode(lines, language=languages.get(language, language)).astype(np.float32)
        with atomic_output(path, "wb") as handle:
            np.save(handle, out[language], allow_pickle=False)
        stamp.write_text(digest + "\n")
    return out


def _member_key(spec: str) -> str:
    if not Path(spec).is_dir():
        return spec  # built in (its weights are pinned by the package version) or a hub id
    return json.dumps([str(Path(spec).resolve()), folder_files(spec)])


def _read_cached(path: Path) -> np.ndarray | None:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None


def blend(members: list[np.ndarray], a: float) -> np.ndarray:
    """[sqrt(a) V_1, sqrt(1 - a) V_2]: what the ensemble encoder writes for share a."""
    return np.hstack([np.sqrt(a) * members[0], np.sqrt(1.0 - a) * members[1]]).astype(np.float32)


def mining_f1(src: np.ndarray, tgt: np.ndarray, n_gold: int) -> float:
    """Best F1 (%) over thresholds when row i of src translates row i of tgt for i < n_gold and every other row
    is a distractor: ratio margin, k = 4, max selection, as the BUCC evaluation mines, with both neighbourhood
    means whatever the sizes (BOTH_MEANS: the measure every share was chosen by)."""
    from miner.mining import BOTH_MEANS, MiningConfig, mine

    config = MiningConfig(k=4, margin="ratio", selection="max", threshold=None, **BOTH_MEANS)
    pairs = mine(src, tgt, config)  # best first
    correct = np.cumsum((pairs.src == pairs.tgt) & (pairs.src < n_gold))
    extracted = np.arange(1, len(correct) + 1)
    return float(100.0 * (2 * correct / (extracted + n_gold)).max()) if len(correct) else 0.0


def xsim_outcomes(src: np.ndarray, tgt: np.ndarray, src_texts: list[str], tgt_texts: list[str]) -> np.ndarray:
    """Per query of both directions (sources first), whether cosine retrieval found its translation (or a copy
    of its text, as miner.xsim counts it): the rows a paired test compares."""
    from miner.index import KnnConfig
    from miner.xsim import check_aligned, correct_rows, retrieve

    check_aligned(src, tgt, src_texts, tgt_texts)
    forward, backward = retrieve(src, tgt, "absolute", 1, KnnConfig())
    return np.concatenate([correct_rows(forward, tgt_texts), correct_rows(backward, src_texts)])


def outcome_accuracy(rows: np.ndarray) -> float:
    """100 - xsim error (%), the mean of both directions' error rates, from xsim_outcomes' rows."""
    n = len(rows) // 2
    return 100.0 - 50.0 * (int((~rows[:n]).sum()) / n + int((~rows[n:]).sum()) / n)


def xsim_accuracy(src: np.ndarray, tgt: np.ndarray, src_texts: list[str], tgt_texts: list[str]) -> float:
    """100 - xsim error (%): cosine retrieval, the mean of both directions; an identical text counts as right."""
    return outcome_accuracy(xsim_outcomes(src, tgt, src_texts, tgt_texts))


def sign_test_p(wins: int, losses: int) -> float:
    """One-sided exact sign test: the chance of at least `wins` of `wins + losses` discordant queries going one
    way if either way were equally likely (McNemar's exact test)."""
    n = wins + losses
    return sum(math.comb(n, x) for x in range(wins, n + 1)) / 2 ** n if n else 1.0


def p_better(rows: np.ndarray, rival: np.ndarray) -> float:
    """sign_test_p that `rows` (per-query outcomes) beat `rival`'s on the same queries."""
    return sign_test_p(int((rows & ~rival).sum()), int((rival & ~rows).sum()))


def choose_shares(vectors: list[dict[str, np.ndarray]], texts: dict[str, list[str]], n_gold: int, grid: list[float],
                  min_gain: float, criterion: str = "mining",
                  short: dict[str, tuple[list[str], list[str]]] | None = None, prefer_members: bool = False,
                  blend_alpha: float | None = None, blend_long_counts: bool = True,
                  retrieval_veto: float | None = None) -> dict:
    """The default share and each language's (see the module docstring), with the scores they come from. `texts`
    are the long (NTREX) sets, `short` the short sentences' sets: per language its texts and their English (the
    members' vectors under `short_key("tune", language)` and `short_key("tune", language, ENGLISH)`).
    `retrieval_veto` P: no share whose retrieval of the long set's held-out sentences is below the better member
    alone's by a one-sided sign test at p < P (`never_below_a_member`'s veto)."""
    short = short or {}
    long_languages = [lang for lang in texts if lang != ENGLISH]

    @functools.cache  # the xsim criterion and the retrieval veto ask for the same rows
    def long_rows(language: str, a: float, a_english: float) -> np.ndarray:
        """Per query, retrieval among the held-out sentences alone (no distractors), both directions."""
        src = blend([v[language][:n_gold] for v in vectors], a)
        tgt = blend([v[ENGLISH][:n_gold] for v in vectors], a_english)
        return xsim_outcomes(src, tgt, texts[language][:n_gold], texts[ENGLISH][:n_gold])

    def long_score(language: str, a: float, a_english: float) -> float:
        if criterion == "mining":
            src = blend([v[language] for v in vectors], a)
            return mining_f1(src, blend([v[ENGLISH] for v in vectors], a_english), n_gold)
        return outcome_accuracy(long_rows(language, a, a_english))

    def short_rows(language: str, a: float, a_english: float) -> np.ndarray:
        src = blend([v[short_key("tune", language)] for v in vectors], a)
        tgt = blend([v[short_key("tune", language, ENGLISH)] for v in vectors], a_english)
        return xsim_outcomes(src, tgt, *short[language])

    def short_score(language: str, a: float, a_english: float) -> float:
        return outcome_accuracy(short_rows(language, a, a_english))

    sets = {"long": (long_languages, long_score), "short": (list(short), short_score)}
    sets = {name: value for name, value in sets.items() if value[0]}
    with quiet_logger("miner"):
        both = {a: float(np.mean([np.mean([score(lang, a, a) for lang in langs]) for langs, score in sets.values()]))
                for a in grid}
        default = max(grid, key=lambda a: (both[a], -a))
        scores = {name: {lang: {a: score(lang, a, default) for a in grid} for lang in langs}
                  for name, (langs, score) in sets.items() if name != "short"}
        # the short set against English at the default: its per-query rows (for the paired test) and their scores
        outcomes = {lang: {a: short_rows(lang, a, default) for a in grid} for lang in short}
        if outcomes:
            scores["short"] = {lang: {a: outcome_accuracy(r) for a, r in rows.items()}
                               for lang, rows in outcomes.items()}
        retrieval = {lang: {a: long_rows(lang, a, default) for a in grid} for lang in long_languages} \
            if retrieval_veto is not None else {}
    table, reasons = {}, {}
    for language in sorted({lang for langs, _ in sets.values() for lang in langs}):
        table[language], reasons[language] = never_below_a_member(
            [by_language[language] for by_language in scores.values() if language in by_language], grid, default,
            min_gain, prefer_members, outcomes.get(language), blend_alpha,
            scores.get("long", {}).get(language) if blend_long_counts else None,
            retrieval.get(language), retrieval_veto)
    return {"criterion": criterion, "default": default, "languages": table, "reasons": reasons,
            "scores_both_sides": both, "scores": scores.get("long", {}), "short_scores": scores.get("short", {}),
            **({"retrieval_veto": retrieval_veto,
                "long_retrieval_scores": {lang: {a: outcome_accuracy(r) for a, r in rows.items()}
                                          for lang, rows in retrieval.items()}} if retrieval else {})}


def never_below_a_member(scores: list[dict[float, float]], grid: list[float], default: float,
                         min_gain: float, prefer_members: bool = False,
                         short_rows: dict[float, np.ndarray] | None = None, blend_alpha: float | None = None,
                         long_scores: dict[float, float] | None = None,
                         veto_rows: dict[float, np.ndarray] | None = None,
                         veto_alpha: float | None = None) -> tuple[float, str]:
    """A language's share from its scores on each held-out set (share -> score; share 1 is the first member alone,
    0 the second): only shares that score at least as well as the better member alone on *every* set may be
    chosen; among them the best mean, the default unless the best gains more than `min_gain` points over it (a
    few hundred sentences cannot tell smaller differences apart); with `prefer_members`, first the better member
    alone unless the best gains that much over it. With `blend_alpha` and the short set's per-query `short_rows`
    (share -> outcomes), a blend must also earn its place: beat the short set's better member significantly
    (one-sided sign test on the queries where they differ, p < blend_alpha), or, given `long_scores`, the long
    set's by more than `min_gain` points; on 100-300 short sentences a gain of a few queries is as likely to be a loss
    on the next ones. When no share is that good on every set (one
    member is better on short sentences, the other on long ones), the member whose worst loss is smaller.
    With `veto_rows` (share -> per-query outcomes of another measure: the long set's retrieval) and `veto_alpha`,
    a share significantly worse there than the better member alone (one-sided sign test, p < veto_alpha) is ruled
    out first: a veto on clear losses, not a score to chase (a few queries either way are noise)."""
    members = (grid[0], grid[-1])
    vetoed: list[float] = []
    if veto_rows and veto_alpha is not None:
        rival = veto_rows[max(members, key=lambda m: veto_rows[m].mean())]
        vetoed = [a for a in grid if p_better(rival, veto_rows[a]) < veto_alpha]  # never the rival itself
    share, reason = _choose(scores, [a for a in grid if a not in vetoed], members, default, min_gain,
                            prefer_members, short_rows, blend_alpha, long_scores)
    return share, reason + (f"; long-set retrieval ruled out {', '.join(map(str, vetoed))}" if vetoed else "")


def _choose(scores: list[dict[float, float]], candidates: list[float], members: tuple[float, float], default: float,
            min_gain: float, prefer_members: bool, short_rows: dict[float, np.ndarray] | None,
            blend_alpha: float | None, long_scores: dict[float, float] | None) -> tuple[float, str]:
    """never_below_a_member's rule over the `candidates` a veto left (a member among them or not)."""
    floors = [max(s[m] for m in members) for s in scores]
    allowed = [a for a in candidates if all(s[a] >= floor for s, floor in zip(scores, floors))]
    unproven = []
    if blend_alpha is not None and short_rows:
        rival = short_rows[max(members, key=lambda m: short_rows[m].mean())]
        long_floor = max(long_scores[m] for m in members) if long_scores else None
        unproven = [a for a in allowed if a not in members and p_better(short_rows[a], rival) >= blend_alpha
                    and not (long_scores and long_scores[a] - long_floor > min_gain)]
        allowed = [a for a in allowed if a not in unproven]
    mean = {a: float(np.mean([s[a] for s in scores])) for a in candidates}
    if not allowed:
        left = [m for m in members if m in candidates] or candidates
        worst = {m: min(s[m] - floor for s, floor in zip(scores, floors)) for m in left}
        return max(left, key=lambda m: (worst[m], mean[m])), "a member alone (no share matches both members)"
    best = max(allowed, key=lambda a: (mean[a], -abs(a - default)))
    better = max(members, key=lambda m: (m in candidates, mean.get(m, -math.inf)))
    if unproven and best in members:
        return best, "a member alone (no blend beats it significantly on short sentences or by min_gain on long)"
    # a blend that only ties a member on these sets often loses to it on the next ones
    if prefer_members and better in allowed and mean[best] - mean[better] <= min_gain:
        return better, "the better member alone"
    if default in allowed and mean[best] - mean[default] <= min_gain:
        return default, "the default"
    return best, "its own share"


def short_key(half: str, language: str, side: str | None = None) -> str:
    """The name of a short set's sentences among a member's vectors (and in its cache): `short-tune.<language>`,
    and its English `short-tune.<language>.eng_Latn`."""
    return f"short-{half}.{language}" + (f".{side}" if side else "")


def short_sets(folder: Path, limit: int, min_pairs: int) -> dict[str, tuple[list[str], list[str]]]:
    """`<folder>/<lang>-eng_Latn.tsv.gz` (training.prepare's heldout-short/<half>/): per language the first
    `limit` pairs (the files are in hash order, so a fair sample) as (texts, English); a language with fewer
    than `min_pairs` is left out (its retrieval figure would be noise)."""
    from miner.io import read_pair_lines

    sets = {}
    for path in sorted(folder.glob(f"*-{ENGLISH}.tsv.gz")):
        texts, english = read_pair_lines(path, limit)
        if len(texts) >= min_pairs:
            sets[path.name.split("-")[0]] = (texts, english)
    return sets


@contextlib.contextmanager
def quiet_logger(name: str):
    """The grid mines thousands of small sets: keep the miner's per-call INFO lines out of the log."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def mining_sets(root: Path, source_distractors: int, target_distractors: int) -> tuple[dict[str, list[str]], int]:
    """Per language, the held-out sentences then `source_distractors` lines of NTREX's first training rows; for
    English, the held-out sentences then the English of `target_distractors` later training rows (so no
    distractor translates another). Returns the texts and the number of gold pairs (the leading rows)."""
    from training.prepare import _clean, ntrex_references

    _, english, held, train, references = ntrex_references(root)
    if min(source_distractors, target_distractors) < 0:  # train[:-5] would take nearly every row
        raise ValueError(f"distractors must be 0 or more a side, got {source_distractors} and {target_distractors}")
    if source_distractors + target_distractors > len(train):
        raise ValueError(f"{root}: {len(train)} training rows cannot give {source_distractors} + "
                         f"{target_distractors} distractors")
    src_rows, tgt_rows = train[:source_distractors], train[len(train) - target_distractors:]
    texts = {ENGLISH: [_clean(english[i]) for i in held + tgt_rows]}
    texts.update({language: [_clean(lines[i]) for i in held + src_rows] for language, lines in sorted(references)})
    return texts, len(held)


def fit(members: list[str], output: Path, cache: Path, ntrex_root: Path, step: float, min_gain: float,
        criterion: str = "mining", source_distractors: int = 600, target_distractors: int = 1200,
        short_root: Path | None = None, short_limit: int = 1000, short_min: int = 100,
        prefer_members: bool = False, blend_alpha: float | None = None, blend_long_counts: bool = True,
        retrieval_veto: float | None = None) -> dict:
    """Choose the shares (on NTREX's held-out documents and, with `short_root`, its `tune/` short sentences),
    write the ensemble, and report the chosen shares on `short_root/test/`, which no choice saw."""
    if len(members) != 2:
        raise ValueError(f"training.ensemble fits two members (a share a and 1 - a), got {len(members)}")
    if criterion not in ("mining", "xsim"):
        raise ValueError(f"criterion must be mining or xsim, got {criterion!r}")
    texts, n_gold = mining_sets(ntrex_root, source_distractors, target_distractors)
    if len(texts) < 2:
        raise ValueError(f"{ntrex_root}: no NTREX-128 references found")
    log.info("held-out NTREX: %d languages x %d sentences among %d and %d distractors", len(texts) - 1, n_gold,
             source_distractors, target_distractors)
    short = {half: short_sets(short_root / half, short_limit, short_min) for half in ("tune", "test")} \
        if short_root is not None else {"tune": {}, "test": {}}
    if short_root is not None:
        log.info("held-out short sentences: %d languages (tune), %d (test), at most %d pairs each",
                 len(short["tune"]), len(short["test"]), short_limit)
    grid = [round(i * step, 6) for i in range(round(1 / step) + 1)]
    vectors = [_all_vectors(spec, texts, short, cache) for spec in members]
    chosen = choose_shares(vectors, texts, n_gold, grid, min_gain, criterion, short["tune"], prefer_members,
                           blend_alpha, blend_long_counts, retrieval_veto)
    dims = [int(v[ENGLISH].shape[1]) for v in vectors]
    output.mkdir(parents=True, exist_ok=True)
    specs = [_relative(spec, output) for spec in members]
    shares = {lang: [a, round(1 - a, 6)] for lang, a in chosen["languages"].items()}
    default = [chosen["default"], round(1 - chosen["default"], 6)]
    short_note = (f"; and short held-out sentences (heldout-short/tune: {len(short['tune'])} languages, at most "
                  f"{short_limit} a language, xsim accuracy), a share never below the better member alone on "
                  f"either set" if short["tune"] else "")
    ensemble = {"format": "cmlm-ensemble/1", "members": specs, "dims": dims, "default": default,
                "languages": {ENGLISH: default, **dict(sorted(shares.items()))},
                "chosen_on": f"held-out NTREX-128 documents of the train pool ({n_gold} sentences a language, "
                             f"{len(texts) - 1} languages, against English; {source_distractors} and "
                             f"{target_distractors} distractors), criterion {criterion}{short_note}, grid step "
                             f"{step}, min gain {min_gain} points"
                             f"{' (over the better member alone first)' if prefer_members else ''}"
                             f"{blend_rule(blend_alpha, blend_long_counts)}"
                             f"{veto_rule(retrieval_veto)} "
                             f"(python -m training.ensemble)"}
    test = short_test_scores(vectors, short["test"], chosen)
    write_json(output / "ensemble.json", ensemble)
    write_json(output / "heldout.json", {"members": specs, "grid": grid, **chosen, "short_test": test})
    return {"default": default, "languages": len(shares), "criterion": criterion,
            "mean score": summarise(chosen["scores"], chosen, grid),
            **({"mean short tune accuracy": summarise(chosen["short_scores"], chosen, grid)} if short["tune"] else {}),
            **({"short test": summarise_test(test)} if test else {})}


def blend_rule(blend_alpha: float | None, long_counts: bool) -> str:
    """How a blend proves itself, for ensemble.json's `chosen_on` ('' without --blend-alpha)."""
    if blend_alpha is None:
        return ""
    return (f", a blend only where it beats the better member on the short set (sign test, p < {blend_alpha})"
            + (" or by more than the min gain on the long set" if long_counts else ""))


def veto_rule(retrieval_veto: float | None) -> str:
    """The long-set retrieval veto, for ensemble.json's `chosen_on` ('' without --retrieval-veto)."""
    if retrieval_veto is None:
        return ""
    return (", no share that retrieves the long set's held-out sentences worse than the better member alone (sign "
            f"test, p < {retrieval_veto})")


def _all_vectors(spec: str, texts: dict[str, list[str]], short: dict[str, dict], cache: Path) -> dict:
    """One member's vectors of the long sets and of both halves of the short ones, each short set under
    `short_key` and embedded as its language."""
    named, languages = dict(texts), {}
    for half, sets in short.items():
        for language, pair in sets.items():
            for side, lines in zip((None, ENGLISH), pair):
                named[short_key(half, language, side)] = lines
                languages[short_key(half, language, side)] = side or language
    return member_vectors(spec, named, cache, languages)


def short_test_scores(vectors: list[dict[str, np.ndarray]], sets: dict, chosen: dict) -> dict:
    """xsim accuracy on the short sentences' test half for each member alone and the chosen share: the figures
    that say whether the rule holds on data no choice saw; and the one-sided sign test's p that the ensemble is
    worse than the better member (small where it loses on many queries, not on a few)."""
    result = {}
    for language, texts in sets.items():
        share = chosen["languages"].get(language, chosen["default"])
        sides = [[v[short_key("test", language, side)] for v in vectors] for side in (None, ENGLISH)]
        with quiet_logger("miner"):
            rows = {a: xsim_outcomes(blend(sides[0], a), blend(sides[1], chosen["default"]), *texts)
                    for a in dict.fromkeys((1.0, 0.0, share))}
        accuracy = {a: outcome_accuracy(r) for a, r in rows.items()}
        better = rows[max((1.0, 0.0), key=lambda m: accuracy[m])]
        p_below = p_better(better, rows[share])
        result[language] = {"share": share, "first member": accuracy[1.0], "second member": accuracy[0.0],
                            "ensemble": accuracy[share], "pairs": len(texts[0]), "p_below": round(p_below, 4)}
    return result


def summarise(scores: dict, chosen: dict, grid: list[float]) -> dict:
    def mean(pick):
        return round(float(np.mean([pick(lang) for lang in scores])), 2)

    return {"first member alone": mean(lambda lang: scores[lang][grid[-1]]),
            "second member alone": mean(lambda lang: scores[lang][grid[0]]),
            "default share everywhere": mean(lambda lang: scores[lang][chosen["default"]]),
            "chosen shares": mean(lambda lang: scores[lang][chosen["languages"][lang]])}


def summarise_test(test: dict) -> dict:
    rows = test.values()
    below = [lang for lang, r in test.items() if r["ensemble"] < max(r["first member"], r["second member"])]
    return {"languages": len(test), "first member alone": round(float(np.mean([r["first member"] for r in rows])), 2),
            "second member alone": round(float(np.mean([r["second member"] for r in rows])), 2),
            "ensemble": round(float(np.mean([r["ensemble"] for r in rows])), 2),
            "below the better member": len(below),
            "significantly below (sign test, p < 0.05)": sum(r.get("p_below", 1.0) < 0.05 for r in rows),
            "largest loss": round(max([max(r["first member"], r["second member"]) - r["ensemble"]
                                       for r in rows] + [0.0]), 2)}


def _relative(spec: str, output: Path) -> str:
    """A member folder as seen from the ensemble folder (so the two move together); built-ins stay as they are."""
    if not Path(spec).exists():
        return spec
    return os.path.relpath(Path(spec).resolve(), output.resolve())


def short_test_table(heldout: dict, columns: int = 3) -> str:
    """heldout.json's short test half as Markdown: each language's xsim accuracy with each member alone and with
    its chosen share (marked where it is below the better member), several languages a row."""
    rows = []
    for language, r in sorted(heldout["short_test"].items()):
        below = (f" (below, p {r['p_below']:.2f})" if "p_below" in r else " (below)") \
            if r["ensemble"] < max(r["first member"], r["second member"]) else ""
        rows.append([language, str(r["pairs"]), f"{r['first member']:.1f}", f"{r['second member']:.1f}",
                     f"**{r['ensemble']:.1f}**{below}", str(r["share"])])
    members = [Path(m).name for m in heldout["members"]]
    return wide_table(["language", "pairs", *members, "ensemble", "share"], rows, columns) + "\n\n" \
        + short_test_summary(heldout["short_test"], members)


def short_test_summary(short_test: dict, members: list[str]) -> str:
    """One line under the table: the means over the languages, and in how many the ensemble is below each member."""
    results = list(short_test.values())
    def mean(key):
        return sum(r[key] for r in results) / max(len(results), 1)

    def below(key):
        return sum(r["ensemble"] < r[key] for r in results)

    significant = sum(r.get("p_below", 1.0) < 0.05 for r in results)
    return (f"Mean of {len(results)} {plural(len(results), 'language')}: {members[0]} {mean('first member'):.1f}, "
            f"{members[1]} {mean('second member'):.1f}, ensemble {mean('ensemble'):.1f}; the ensemble below "
            f"{members[0]} in {below('first member')}, below {members[1]} in {below('second member')}"
            + (f"; below the better member by a sign test (p < 0.05) in {significant}." if any(
               "p_below" in r for r in results) else "."))


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    parser = argparse.ArgumentParser(prog="python -m training.ensemble", description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", nargs=2, metavar="SPEC",
                        help="two encoder specs: the first's share is a, the second's 1 - a")
    parser.add_argument("--output", type=path_argument, help="the ensemble folder to write")
    parser.add_argument("--table", type=path_argument, metavar="FOLDER",
                        help="print an ensemble folder's short test figures (its heldout.json) as Markdown, and stop")
    parser.add_argument("--train-pool", type=path_argument, default=Path("../shared/data/train"),
                        help="the train pool holding ntrex-128/ (never the dev pool)")
    parser.add_argument("--cache", type=path_argument, default=Path("data/ensemble-cache"), help="members' vectors")
    parser.add_argument("--step", type=float, default=0.1, help="grid step of the shares")
    parser.add_argument("--min-gain", type=float, default=1.0,
                        help="points of held-out score a language's own share must gain to replace the default")
    parser.add_argument("--prefer-members", action="store_true",
                        help="keep the better member alone unless a blend gains more than --min-gain over it (fewer "
                        "languages below a member on new short sentences; costs French BUCC, docs/training.md)")
    parser.add_argument("--blend-alpha", type=float, metavar="P",
                        help="a blend of the members must beat the better member alone on the short tune set by a "
                        "one-sided sign test at this level (e.g. 0.05), or on the long set by more than --min-gain; "
                        "without it, any gain counts")
    parser.add_argument("--blend-short-only", action="store_true",
                        help="with --blend-alpha, only the short set's test proves a blend (a long-set gain does not)")
    parser.add_argument("--retrieval-veto", type=float, metavar="P", default=RETRIEVAL_VETO,
                        help="rule out a share whose retrieval of the long set's held-out sentences (cosine, both "
                        "directions, no distractors) is below the better member alone's by a one-sided sign test "
                        f"at this level (default {RETRIEVAL_VETO}; 0: none): mining F1 can favour a share that "
                        "retrieves far worse")
    parser.add_argument("--criterion", choices=("mining", "xsim"), default="mining",
                        help="score a share by mining F1 among distractors (default) or by xsim retrieval")
    parser.add_argument("--short", type=path_argument, default=Path("data/train/heldout-short"),
                        help="training.prepare's held-out short sentences (tune/ chooses, test/ reports); 'none' "
                        "chooses on NTREX's long sentences alone")
    parser.add_argument("--short-limit", type=int, default=1000, help="pairs a language, at most")
    parser.add_argument("--short-min", type=int, default=100, help="pairs a language needs to be scored")
    parser.add_argument("--source-distractors", type=int, default=600,
                        help="with --criterion mining: NTREX training lines added to each language's side "
                        "(default 600)")
    parser.add_argument("--target-distractors", type=int, default=1200,
                        help="with --criterion mining: NTREX training lines added to the English side "
                        "(default 1200)")
    args = parser.parse_args(argv)
    if args.table is not None:
        return exit_status(lambda: print(short_test_table(read_json(args.table / "heldout.json", "short_test"))))
    setup_logging()
    if not args.members or args.output is None:
        parser.error("--members and --output are required (or --table FOLDER)")
    if not 0 < args.step <= 0.5 or abs(round(1 / args.step) * args.step - 1) > 1e-9:
        parser.error("--step must divide 1 (0.1, 0.05, 0.25 ...)")
    if "dev" in args.train_pool.resolve().parts:
        parser.error(f"{args.train_pool}: shares are chosen on the train pool, never on dev/")
    short = None if str(args.short) == "none" else args.short
    if short is not None and not (short / "tune").is_dir():
        parser.error(f"{short}/tune: no held-out short sentences (run python -m training.prepare, or --short none)")
    from encoders import check_spec

    for member in args.members:  # before minutes of embedding with the other one
        if exit_status(lambda: check_spec(member)):
            return 2
    return exit_status(lambda: print(json.dumps(fit(
        args.members, args.output, args.cache, args.train_pool, args.step, args.min_gain, args.criterion,
        args.source_distractors, args.target_distractors, short, args.short_limit, args.short_min,
        args.prefer_members, args.blend_alpha, not args.blend_short_only, args.retrieval_veto or None), indent=1)))


if __name__ == "__main__":
    raise SystemExit(main())
