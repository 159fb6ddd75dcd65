r"""Evaluation commands: BUCC 2018 mining F1 and xsim retrieval accuracy.

    python -m miner.evaluate bucc --corpus DIR --pair de-en --split dev --embeddings EMB_DIR [--tune-split training]
    python -m miner.evaluate xsim --src-text a.txt --tgt-text b.txt --encoder char-ngram
    python -m miner.evaluate suite --encoder DIR --flores ../shared/data/dev/flores200-devtest/devtest \
        --bucc ../shared/data/dev/bucc-style --markdown report.md   # the dev figures of an encoder, one table

`suite` runs xsim (cosine) for every `--languages` file against the pivot (FLORES' eng_Latn), both directions,
BUCC on every `--pairs` with the 2-fold threshold protocol, and with `--short DIR` Tatoeba-style retrieval of short
sentence pairs (the train pool's held-out split, by length band), and with `--tatoeba DIR` the Tatoeba sets as
LASER and XTREME distribute them (miner.tatoeba: per language, the mean over all and over XTREME's 36); it prints
and writes them as tables.

Vectors come from precomputed `.npy` files (`--embeddings DIR`: DIR/<text file name>.npy, aligned with the
lines) or from an encoder (`--encoder`). Both print the figures with the settings that produced them and can
write a JSON report (`--report`); `bucc` can also draw P/R/F1 against the threshold (`--plot out.png`).

BUCC threshold protocol (METHODS.md §2): `--tune-split S` tunes on split S and applies to `--split`;
`--threshold T` applies a fixed threshold; with neither, the threshold is tuned on one half of the split's source
sentences and applied to the other half, both ways (2-fold). The oracle figure (tuned and measured on the same
split) is always printed too, labelled as such.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import math
import sys
from pathlib import Path

import numpy as np

from miner import bucc
from miner.cli import (
    VectorSource,
    add_settings_arguments,
    add_vector_arguments,
    mining_config,
    settings_from_args,
)
from miner.console import exit_status, setup_logging
from miner.index import KnnConfig
from miner.io import InputFormatError, path_argument, read_lines, read_pair_lines, write_json
from miner.languages import names_like
from miner.mining import MiningConfig, mine
from miner.tatoeba import tatoeba_sets
from miner.xsim import LENGTH_BANDS, correct_rows, length_band, retrieve, xsim

FOLDS = 2


def mine_bucc_candidates(corpus: bucc.BuccCorpus, source: VectorSource, config: MiningConfig):
    """Mine a BUCC corpus over its unique texts and map the candidates to id pairs (no threshold)."""
    src_unique, tgt_unique = bucc.unify(corpus.src), bucc.unify(corpus.tgt)
    src_lang, tgt_lang = bucc.split_pair(corpus.pair)
    src_vectors = source.vectors(corpus.src, src_unique.rows, src_lang)
    tgt_vectors = source.vectors(corpus.tgt, tgt_unique.rows, tgt_lang)
    sides = (corpus.src, src_unique.rows, src_lang), (corpus.tgt, tgt_unique.rows, tgt_lang)
    rescoring = source.rescoring(*sides)
    pairs = mine(src_vectors, tgt_vectors, dataclasses.replace(config, threshold=None),
                 (str(corpus.src.path), str(corpus.tgt.path)), source.code, *rescoring, **source.refining(*sides))
    candidates = bucc.candidates_to_ids(pairs, src_unique, tgt_unique, corpus.gold or ())
    stats = {
        "index": config.describe(len(src_unique.texts), len(tgt_unique.texts))["index"],
        "source_sentences": len(corpus.src), "source_unique": len(src_unique.texts),
        "source_ambiguous_texts": src_unique.n_ambiguous,
        "target_sentences": len(corpus.tgt), "target_unique": len(tgt_unique.texts),
        "target_ambiguous_texts": tgt_unique.n_ambiguous,
        "gold_pairs": len(corpus.gold or ()),
        "gold_pairs_with_ambiguous_text": _unreachable_gold(corpus, src_unique, tgt_unique),
        "candidates": len(candidates.pairs),
    }
    # codes are compared by their own similarity, not a dot product; rescored codes by their float vectors'
    scored_by = (src_vectors, tgt_vectors) if source.code is None else rescoring[0] if rescoring else None
    if scored_by is not None and corpus.gold:
        sims = bucc.gold_similarities(corpus.gold, src_unique, tgt_unique, *scored_by)
        stats["lowest_gold_similarity"] = float(sims.min()) if len(sims) else None
    return candidates, stats


def bucc_report(corpus_dir: Path, pair: str, split: str, source: VectorSource, config: MiningConfig,
                tune_split: str | None = None, threshold: float | None = None,
                tune_corpus: Path | None = None) -> tuple[dict, dict]:
    """The BUCC figures for one pair and split, and the P/R/F1 curve for plotting."""
    report, curve, _ = scored_bucc_report(corpus_dir, pair, split, source, config, tune_split, threshold,
                                          tune_corpus)
    return report, curve


def scored_bucc_report(corpus_dir: Path, pair: str, split: str, source: VectorSource, config: MiningConfig,
                       tune_split: str | None = None, threshold: float | None = None,
                       tune_corpus: Path | None = None, corpus: bucc.BuccCorpus | None = None):
    """`bucc_report`, and the scored candidates themselves (for tuning one threshold over several pairs);
    `corpus`: the pair's split already read."""
    corpus = corpus or bucc.load_corpus(corpus_dir, pair, split)
    candidates, stats = mine_bucc_candidates(corpus, source, config)
    if threshold is not None:
        protocol, result = f"fixed threshold {threshold}", bucc.score_at(candidates, threshold)
        result["threshold"] = threshold
    elif tune_split is not None or tune_corpus is not None:
        tune_split = tune_split or split
        tuning, _ = mine_bucc_candidates(bucc.load_corpus(tune_corpus or corpus_dir, pair, tune_split), source,
                                         config)
        tuned = bucc.tune_threshold(tuning)
        where = f"{pair} {tune_split}" + (f" of {tune_corpus}" if tune_corpus is not None else "")
        protocol, result = f"tuned on {where}, applied to {split}", bucc.score_at(candidates, tuned)
        result["threshold"] = _finite(tuned)
    else:
        result, fold_thresholds = bucc.cross_fold_score(candidates, FOLDS)
        protocol = f"{FOLDS}-fold within {split}: tuned on one half of the source ids, applied to the other"
        result["threshold"] = [_finite(t) for t in fold_thresholds]
    oracle_threshold = bucc.tune_threshold(candidates)
    oracle = {**bucc.score_at(candidates, oracle_threshold), "threshold": _finite(oracle_threshold)}
    report = {
        "task": "bucc", "pair": pair, "split": split, "corpus": str(corpus_dir),
        "settings": {**config.describe(), "threshold_protocol": protocol, **source.describe()},
        "counts": stats,
        "result": result,
        "oracle": {**oracle, "label": f"oracle: tuned and measured on {split}"},
    }
    return report, bucc.sweep(candidates), candidates


def shared_threshold(candidates: dict[str, bucc.ScoredCandidates]) -> dict:
    """One threshold for every pair (the pipeline's `mining.threshold`): tuned on all pairs pooled, with its honest
    estimate, each pair scored at the threshold tuned on the other pairs alone."""
    tuned = bucc.tune_threshold(bucc.pool(candidates))
    held_out = bucc.leave_one_pair_out(candidates)
    for entry in held_out.values():
        entry["threshold"] = _finite(entry["threshold"])
    return {"threshold": _finite(tuned), "held_out": held_out,
            "protocol": "tuned on all pairs pooled; each pair's figure at the threshold tuned on the others"}


def xsim_report(src_text: Path, tgt_text: Path, source: VectorSource, margin: str, config: MiningConfig,
                match_texts: bool = True, languages: tuple[str | None, str | None] = (None, None)) -> dict:
    """Both directions' retrieval accuracy; `languages` (default: the file names up to the first dot, e.g.
    deu_Latn for FLORES' deu_Latn.devtest.gz) are passed to the encoder for PCR."""
    src_lang = languages[0] or src_text.name.split(".")[0]
    tgt_lang = languages[1] or tgt_text.name.split(".")[0]
    src_texts, tgt_texts = read_lines(src_text), read_lines(tgt_text)
    if len(src_texts) != len(tgt_texts):
        raise InputFormatError(f"xsim needs aligned files: {src_text} has {len(src_texts)} lines, "
                               f"{tgt_text} has {len(tgt_texts)}")
    if not src_texts:
        raise InputFormatError(f"xsim needs sentences: {src_text} and {tgt_text} have no lines")
    everything = np.arange(len(src_texts))
    src_sentences = bucc.Sentences(src_text, [str(i) for i in everything], src_texts)
    tgt_sentences = bucc.Sentences(tgt_text, [str(i) for i in everything], tgt_texts)
    src = source.vectors(src_sentences, everything, src_lang)
    tgt = source.vectors(tgt_sentences, everything, tgt_lang)
    texts = (src_texts, tgt_texts) if match_texts else (None, None)
    result = xsim(src, tgt, margin, config.k, config.knn, *texts,
                  *source.rescoring((src_sentences, everything, src_lang), (tgt_sentences, everything, tgt_lang)))
    return {"task": "xsim", "source": str(src_text), "target": str(tgt_text),
            "settings": {"margin": margin, "k": result["k"], "index": config.knn.index,
                         "identical_text_counts_as_correct": match_texts, **source.describe()},
            **result}


def format_bucc(report: dict) -> str:
    s, r, o = report["settings"], report["result"], report["oracle"]
    threshold = r["threshold"]
    shown = ", ".join(f"{t:.4f}" if t is not None else "none" for t in threshold) \
        if isinstance(threshold, list) else (f"{threshold:.4f}" if threshold is not None else "none")
    return "\n".join([
        f"BUCC {report['pair']} {report['split']}  k={s['k']} margin={s['margin']} selection={s['selection']} "
        f"index={report['counts']['index']}",
        f"  threshold {shown} ({s['threshold_protocol']})",
        f"  P {100 * r['precision']:.2f}  R {100 * r['recall']:.2f}  F1 {100 * r['f1']:.2f}  "
        f"({r['correct']} correct of {r['extracted']} extracted, {r['gold']} gold)",
        f"  {o['label']}: P {100 * o['precision']:.2f}  R {100 * o['recall']:.2f}  F1 {100 * o['f1']:.2f}  "
        f"threshold {o['threshold'] if o['threshold'] is None else format(o['threshold'], '.4f')}",
    ])


def format_xsim(report: dict) -> str:
    f, b = report["src->tgt"], report["tgt->src"]
    return (f"xsim {Path(report['source']).name} <-> {Path(report['target']).name}  n={report['n']} "
            f"margin={report['margin']} k={report['k']}\n"
            f"  src->tgt accuracy {100 * f['accuracy']:.2f} (error {100 * f['error_rate']:.2f}, {f['errors']} errors)\n"
            f"  tgt->src accuracy {100 * b['accuracy']:.2f} (error {100 * b['error_rate']:.2f}, {b['errors']} errors)")


XSIM_MARGINS = ("absolute", "ratio", "distance")
XSIM_MARGIN_HELP = ("retrieve by cosine (absolute: the figures this project reports) or by margin over the k nearest "
                    "(mining.k) both ways; ratio at k = 4 is what LASER's xsim tool computes by default")
SUITE_LANGUAGES = ("arb_Arab,ben_Beng,ces_Latn,deu_Latn,ell_Grek,fin_Latn,fra_Latn,heb_Hebr,hin_Deva,hun_Latn,"
                   "ind_Latn,jpn_Jpan,kor_Hang,pes_Arab,por_Latn,rus_Cyrl,spa_Latn,swh_Latn,tam_Taml,tha_Thai,"
                   "tur_Latn,ukr_Cyrl,vie_Latn,zho_Hans")


def suite_report(args, source: VectorSource, config: MiningConfig) -> dict:
    """xsim xx<->pivot for each language and BUCC F1 for each pair: the dev figures of one encoder."""
    inputs = suite_inputs(args)  # every file found before anything is embedded
    report: dict = {"encoder": source.describe(), "xsim": {}, "bucc": {}}
    if args.flores:
        pivot = inputs["flores"].pop(args.pivot)
        for language, path in inputs["flores"].items():
            result = xsim_report(path, pivot, source, args.xsim_margin, config, not args.strict)
            report["xsim"][language] = {"xx->pivot": result["src->tgt"]["error_rate"],
                                        "pivot->xx": result["tgt->src"]["error_rate"], "n": result["n"]}
        errors = [v for row in report["xsim"].values() for v in (row["xx->pivot"], row["pivot->xx"])]
        report["xsim_mean_error"] = float(np.mean(errors)) if errors else None
    if args.bucc:
        candidates = {}
        for pair, corpus in inputs["bucc"].items():
            result, _, candidates[pair] = scored_bucc_report(args.bucc, pair, args.split, source, config,
                                                             corpus=corpus)
            report["bucc"][pair] = {**{k: result["result"][k] for k in ("precision", "recall", "f1", "threshold")},
                                    "oracle_f1": result["oracle"]["f1"],
                                    "protocol": result["settings"]["threshold_protocol"],
                                    "lowest_gold_similarity": result["counts"].get("lowest_gold_similarity")}
        if len(candidates) > 1:
            report["shared_threshold"] = shared_threshold(candidates)
    if args.short:
        wanted = [lang for lang in args.short_languages.split(",") if lang] if args.short_languages else None
        report["short"] = short_report(args.short, source, args.short_limit, wanted, args.strict)
        report["short_mean_accuracy"] = float(np.mean([r["accuracy"] for r in report["short"].values()]))
    if args.tatoeba:
        report["tatoeba"] = tatoeba_report(args.tatoeba, source, inputs["tatoeba"], args.strict)
    report["settings"] = {"pivot": args.pivot, "bucc_split": args.split, "xsim_margin": args.xsim_margin,
                          **config.describe()}
    return report


def suite_inputs(args) -> dict:
    """The suite's files, each looked up (and BUCC's read) before any is embedded: a language or pair missing at
    the end of a long run would cost everything measured before it. FLORES: language -> file (the pivot's too)."""
    inputs: dict = {"flores": {}, "bucc": {}, "tatoeba": None}
    if args.flores:
        languages = [lang for lang in args.languages.split(",") if lang and lang != args.pivot]
        if not languages:
            raise ValueError(f"suite: --languages names no language besides the pivot {args.pivot}: nothing to "
                             "measure on FLORES")
        inputs["flores"] = {lang: _flores_file(args.flores, lang) for lang in [args.pivot, *languages]}
    if args.bucc:
        pairs = [p for p in args.pairs.split(",") if p]
        if not pairs:
            raise ValueError("suite: --pairs names no pair: nothing to measure on BUCC")
        inputs["bucc"] = {pair: bucc.load_corpus(args.bucc, pair, args.split) for pair in pairs}
    if args.short:  # a language asked for that no file holds is an error now, not a language left out
        short_files(args.short, [lang for lang in args.short_languages.split(",") if lang]
                    if args.short_languages else None)
    if args.tatoeba:
        inputs["tatoeba"] = [code for code in args.tatoeba_languages.split(",") if code] \
            if args.tatoeba_languages else None
        tatoeba_sets(args.tatoeba, inputs["tatoeba"])  # a code the folder lacks is an error now
    return inputs


def short_report(folder: Path, source: VectorSource, limit: int, languages: list[str] | None = None,
                 strict: bool = False) -> dict:
    """Tatoeba-style retrieval of short sentences: every `<lang>-eng_Latn.tsv.gz` of `folder` (training.prepare's
    heldout-short/test/, lines `xx<TAB>en`), its first `limit` pairs, each side retrieving the other by cosine;
    accuracy is the mean of both directions, overall and by the English side's length band."""
    report = {}
    for language, path in short_files(folder, languages).items():
        src_texts, tgt_texts = read_pair_lines(path, limit)
        forward, backward = pair_retrieval((path, src_texts, language), (path, tgt_texts, "eng_Latn"), source,
                                           strict)
        correct = (forward.astype(float) + backward) / 2
        bands = np.array([length_band(t) for t in tgt_texts])
        report[language] = {"n": len(src_texts), "accuracy": float(correct.mean()),
                            "bands": {b: float(correct[bands == b].mean()) for b in dict.fromkeys(sorted(bands))}}
    return report


def short_files(folder: Path, languages: list[str] | None = None) -> dict[str, Path]:
    """language -> `folder/<lang>-eng_Latn.tsv.gz`, of `languages` (default: every one); a language asked for that
    no file holds is an error naming it with the name its file would have (`de`: deu_Latn), as --tatoeba-languages
    names the codes it lacks: a language left out silently moved the mean."""
    files = {path.name.split("-")[0]: path for path in sorted(folder.glob("*-eng_Latn.tsv.gz"))}
    if not files:
        raise InputFormatError(f"{folder}: no <lang>-eng_Latn.tsv.gz file")
    missing = [lang for lang in dict.fromkeys(languages or []) if lang not in files]
    if missing:
        hints = [f"{lang} is {' or '.join(like)}" for lang in missing if (like := _named_like(lang, list(files)))]
        raise InputFormatError(f"{folder}: no <lang>-eng_Latn.tsv.gz file of the languages asked for: "
                               f"{', '.join(missing)}" + (f" (its files are named by code and script: "
                                                          f"{'; '.join(hints)})" if hints else ""))
    return {lang: path for lang, path in files.items() if not languages or lang in languages}


def pair_retrieval(src: tuple[Path, list[str], str], tgt: tuple[Path, list[str], str],
                   source: VectorSource, strict: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per query, whether exact cosine retrieval found its translation (or, unless `strict`, a copy of its text),
    both directions, for aligned texts given as (file, texts, language) each."""
    rows = np.arange(len(src[1]))
    sentences = [bucc.Sentences(path, [str(i) for i in rows], texts) for path, texts, _ in (src, tgt)]
    src_vectors = source.vectors(sentences[0], rows, src[2])
    tgt_vectors = source.vectors(sentences[1], rows, tgt[2])
    exact = source.rescoring((sentences[0], rows, src[2]), (sentences[1], rows, tgt[2]))
    forward, backward = retrieve(src_vectors, tgt_vectors, "absolute", 1, KnnConfig(index="Flat"), *exact)
    return correct_rows(forward, None if strict else tgt[1]), correct_rows(backward, None if strict else src[1])


def tatoeba_report(folder: Path, source: VectorSource, codes: list[str] | None = None, strict: bool = False) -> dict:
    """Tatoeba retrieval (miner.tatoeba), per language: accuracy xx->eng, eng->xx and their mean; with the means
    over every language found and over XTREME's 36."""
    languages = {}
    for tatoeba_set in tatoeba_sets(folder, codes):
        forward, backward = pair_retrieval((tatoeba_set.path, tatoeba_set.texts, tatoeba_set.language),
                                           (tatoeba_set.english_path, tatoeba_set.english, "eng_Latn"), source,
                                           strict)
        name = tatoeba_set.language if tatoeba_set.language not in languages \
            else f"{tatoeba_set.language} ({tatoeba_set.code})"  # two of Tatoeba's names for one language
        languages[name] = {"code": tatoeba_set.code, "n": len(forward), "xtreme": tatoeba_set.in_xtreme,
                           "xx->eng": float(forward.mean()), "eng->xx": float(backward.mean()),
                           "accuracy": float((forward.mean() + backward.mean()) / 2)}
    means = {}
    for label, rows in (("all", list(languages.values())),
                        ("xtreme", [r for r in languages.values() if r["xtreme"]])):
        if rows:
            means[label] = {"languages": len(rows), **{key: float(np.mean([r[key] for r in rows]))
                                                       for key in ("xx->eng", "eng->xx", "accuracy")}}
    return {"folder": str(folder), "languages": languages, "means": means,
            "scoring": "cosine nearest neighbour over the language's pairs, exact search; "
                       + ("only the aligned row counts as correct" if strict else
                          "a retrieved sentence whose text equals the reference's counts as correct")}


def _flores_file(folder: Path, language: str) -> Path:
    for name in (f"{language}.devtest.gz", f"{language}.devtest", f"{language}.dev.gz", f"{language}.dev"):
        if (folder / name).exists():
            return folder / name
    names = sorted({path.name.split(".")[0] for path in folder.glob("*.dev*")}) if folder.is_dir() else []
    like = _named_like(language, names)
    raise InputFormatError(f"{folder}: no FLORES file for {language}"
                           + (f" (its files are named by code and script: {', '.join(like)})" if like else ""))


def _named_like(code: str, names: list[str]) -> list[str]:
    """The names (lang_Script) a language code likely means: its language's in any form (names_like: `de`, `ger`,
    `DEU_latn` -> deu_Latn, `nor_Latn` -> nob_Latn, `zh-TW` -> zho_Hant), else names spelt alike (a typo)."""
    return names_like(code, names) or difflib.get_close_matches(code, names, 3)


def format_suite(report: dict) -> str:
    lines = []
    if report["xsim"]:
        pivot, scored = report["settings"]["pivot"], _xsim_scoring(report["settings"])
        lines += [f"| language | xsim error{scored} xx->{pivot} (%) | xsim error{scored} {pivot}->xx (%) |",
                  "| --- | --- | --- |"]
        lines += [f"| {lang} | {100 * row['xx->pivot']:.2f} | {100 * row['pivot->xx']:.2f} |"
                  for lang, row in report["xsim"].items()]
        rows = report["xsim"].values()
        lines.append(f"| **mean of {len(report['xsim'])}** | {100 * np.mean([r['xx->pivot'] for r in rows]):.2f} | "
                     f"{100 * np.mean([r['pivot->xx'] for r in rows]):.2f} |")
    if report["bucc"]:
        s = report["settings"]
        lines += ["", f"BUCC ({s['bucc_split']}, k={s['k']}, {s['margin']} margin, {s['selection']} selection; "
                  f"threshold tuned 2-fold within the split; the oracle is tuned and measured on the same data):", "",
                  "| pair | P | R | F1 | oracle F1 | lowest gold-pair similarity |",
                  "| --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {pair} | {100 * r['precision']:.1f} | {100 * r['recall']:.1f} | {100 * r['f1']:.1f} | "
                  f"{100 * r['oracle_f1']:.1f} | {_similarity(r.get('lowest_gold_similarity'))} |"
                  for pair, r in report["bucc"].items()]
    if report.get("short"):
        bands = [name for _, name in LENGTH_BANDS]
        lines += ["", "Short-sentence retrieval (cosine, mean of both directions; accuracy by the English side's "
                  "words):", "",
                  "| language | pairs | accuracy (%) | " + " | ".join(f"{b} words" for b in bands) + " |",
                  "|---" * (3 + len(bands)) + "|"]
        lines += [f"| {lang} | {r['n']} | {100 * r['accuracy']:.1f} | " + " | ".join(
            "-" if b not in r["bands"] else f"{100 * r['bands'][b]:.1f}" for b in bands) + " |"
            for lang, r in report["short"].items()]
        lines.append(f"| **mean of {len(report['short'])}** | | {100 * report['short_mean_accuracy']:.1f} | "
                     + " | ".join(f"{100 * m:.1f}" if m is not None else "-" for m in _band_means(report["short"]))
                     + " |")
    if report.get("tatoeba"):
        lines += ["", *_tatoeba_table(report["tatoeba"])]
    shared = report.get("shared_threshold")
    if shared:
        lines += ["", f"One threshold for all pairs (a pipeline's mining.threshold): {shared['threshold']:.4f}, tuned "
                  f"on the {len(shared['held_out'])} pairs pooled. Each pair at the threshold tuned on the others:", "",
                  "| pair | threshold from the others | P | R | F1 |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {pair} | {r['threshold'] if r['threshold'] is None else format(r['threshold'], '.4f')} | "
                  f"{100 * r['precision']:.1f} | {100 * r['recall']:.1f} | {100 * r['f1']:.1f} |"
                  for pair, r in shared["held_out"].items()]
    return "\n".join(lines)


def _tatoeba_table(tatoeba: dict) -> list[str]:
    lines = [f"Tatoeba ({tatoeba['folder']}; cosine, accuracy %):", "",
             "| language | Tatoeba code | pairs | xx->eng | eng->xx | mean |", "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {lang} | {r['code']}{' (XTREME)' if r['xtreme'] else ''} | {r['n']} | {100 * r['xx->eng']:.1f} | "
              f"{100 * r['eng->xx']:.1f} | {100 * r['accuracy']:.1f} |" for lang, r in tatoeba["languages"].items()]
    lines += [f"| **mean, {_tatoeba_mean_label(label, m)}** | | | {100 * m['xx->eng']:.1f} | "
              f"{100 * m['eng->xx']:.1f} | {100 * m['accuracy']:.1f} |" for label, m in tatoeba["means"].items()]
    return lines


def _tatoeba_mean_label(label: str, mean: dict) -> str:
    if label == "xtreme":
        return f"XTREME's 36 ({mean['languages']} found)"
    return f"all {mean['languages']}"


def _xsim_scoring(settings: dict) -> str:
    """How xsim retrieved, for a table's labels: nothing for cosine (the usual xsim), else the margin and k."""
    margin = settings.get("xsim_margin", "absolute")
    return "" if margin == "absolute" else f" by {margin} margin (k = {settings['k']})"


def format_side_by_side(reports: list[dict]) -> str:
    """Several encoders' suite figures as one table: xsim error (mean of both directions) per language, the mean,
    BUCC F1 per pair (2-fold threshold) and at one threshold shared by all pairs (tuned on the other pairs)."""
    names = [(r["encoder"].get("encoder") or r["encoder"].get("embeddings"))
             + (f" ({r['encoder']['vectors']})" if r["encoder"].get("vectors") else "")
             + (f", {r['encoder']['rescored']}" if r["encoder"].get("rescored") else "") for r in reports]
    lines = ["| | " + " | ".join(str(n) for n in names) + " |", "|---" * (len(names) + 1) + "|"]
    languages = list(dict.fromkeys(lang for r in reports for lang in r["xsim"]))
    pivot, scored = reports[0]["settings"]["pivot"], _xsim_scoring(reports[0]["settings"])

    def cell(value):
        return "-" if value is None else f"{100 * value:.1f}"

    for lang in languages:
        values = [r["xsim"].get(lang) for r in reports]
        lines.append(f"| xsim error{scored} {lang}<->{pivot} (%) | " + " | ".join(
            cell(None if v is None else (v["xx->pivot"] + v["pivot->xx"]) / 2) for v in values) + " |")
    if languages:
        lines.append(f"| **xsim error{scored}, mean of {len(languages)} (%)** | "
                     + " | ".join(cell(r.get("xsim_mean_error")) for r in reports) + " |")
    short_languages = list(dict.fromkeys(lang for r in reports for lang in r.get("short", {})))
    for lang in short_languages:
        lines.append(f"| short-sentence accuracy {lang} (%) | " + " | ".join(
            cell(r.get("short", {}).get(lang, {}).get("accuracy")) for r in reports) + " |")
    if short_languages:
        lines.append(f"| **short-sentence accuracy, mean of {len(short_languages)} (%)** | "
                     + " | ".join(cell(r.get("short_mean_accuracy")) for r in reports) + " |")
        for i, (_, band) in enumerate(LENGTH_BANDS):
            lines.append(f"| short-sentence accuracy, {band} words (%) | "
                         + " | ".join(cell(_band_means(r.get("short", {}))[i]) for r in reports) + " |")
    tatoeba = [r.get("tatoeba") or {"languages": {}, "means": {}} for r in reports]
    for lang in dict.fromkeys(lang for t in tatoeba for lang in t["languages"]):
        lines.append(f"| Tatoeba accuracy {lang} (%) | " + " | ".join(
            cell(t["languages"].get(lang, {}).get("accuracy")) for t in tatoeba) + " |")
    for label, mean in tatoeba[0]["means"].items():
        lines.append(f"| **Tatoeba accuracy, mean, {_tatoeba_mean_label(label, mean)} (%)** | " + " | ".join(
            cell(t["means"].get(label, {}).get("accuracy")) for t in tatoeba) + " |")
    pairs = list(dict.fromkeys(p for r in reports for p in r["bucc"]))
    for pair in pairs:
        lines.append(f"| BUCC {pair} F1, 2-fold | " + " | ".join(
            cell(r["bucc"].get(pair, {}).get("f1")) for r in reports) + " |")
    for pair in pairs:
        lines.append(f"| BUCC {pair} F1, threshold from the other pairs | " + " | ".join(
            cell(r.get("shared_threshold", {}).get("held_out", {}).get(pair, {}).get("f1")) for r in reports) + " |")
    if pairs:
        lines.append("| shared threshold (all pairs pooled) | " + " | ".join(
            "-" if r.get("shared_threshold", {}).get("threshold") is None
            else f"{r['shared_threshold']['threshold']:.4f}" for r in reports) + " |")
    for pair in pairs:  # what mining.min_cosine may be without cutting a gold pair
        lines.append(f"| BUCC {pair} lowest gold-pair similarity | " + " | ".join(
            _similarity(r["bucc"].get(pair, {}).get("lowest_gold_similarity")) for r in reports) + " |")
    return "\n".join(lines)


def _similarity(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _band_means(short: dict) -> list[float | None]:
    """Each length band's accuracy, the mean over the languages that have sentences in it."""
    means = []
    for _, band in LENGTH_BANDS:
        values = [r["bands"][band] for r in short.values() if band in r["bands"]]
        means.append(float(np.mean(values)) if values else None)
    return means


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m miner.evaluate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    tasks = parser.add_subparsers(dest="task", required=True)
    bucc_args = tasks.add_parser("bucc", help="BUCC 2018 mining P/R/F1")
    bucc_args.add_argument("--corpus", type=path_argument, required=True,
                           help="folder with {pair}.{split}.{lang} files")
    bucc_args.add_argument("--pair", required=True, help="e.g. de-en")
    bucc_args.add_argument("--split", required=True, help="split to measure, e.g. training, sample, dev")
    protocol = bucc_args.add_mutually_exclusive_group()
    protocol.add_argument("--tune-split", help="tune the threshold on this split and apply it to --split")
    bucc_args.add_argument("--tune-corpus", type=path_argument,
                           help="tune the threshold on this corpus's same pair (split "
                           "--tune-split, else --split) and apply it to --corpus: e.g. tune on BUCC 2018 training")
    protocol.add_argument("--threshold", type=float, help="apply this fixed threshold")
    bucc_args.add_argument("--plot", type=path_argument, help="write P/R/F1 against the threshold as a PNG")
    xsim_args = tasks.add_parser("xsim", help="retrieval accuracy over aligned sentences, both directions")
    xsim_args.add_argument("--src-text", type=path_argument, required=True, help="one sentence per line (.gz ok)")
    xsim_args.add_argument("--tgt-text", type=path_argument, required=True, help="aligned line by line with --src-text")
    xsim_args.add_argument("--xsim-margin", choices=XSIM_MARGINS, default="absolute", help=XSIM_MARGIN_HELP)
    xsim_args.add_argument("--src-lang", help="source language label for PCR (default: file name up to the first dot)")
    xsim_args.add_argument("--tgt-lang", help="target language label for PCR (default: file name up to the first dot)")
    xsim_args.add_argument("--strict", action="store_true",
                           help="only the aligned row counts as correct, not an identical sentence elsewhere")
    suite_args = tasks.add_parser("suite", help="xsim over many languages and BUCC over several pairs, as tables")
    suite_args.add_argument("--flores", type=path_argument, help="folder of FLORES-200 files <lang>.devtest.gz")
    suite_args.add_argument("--xsim-margin", choices=XSIM_MARGINS, default="absolute", help=XSIM_MARGIN_HELP)
    suite_args.add_argument("--languages", default=SUITE_LANGUAGES, help="comma-separated FLORES codes")
    suite_args.add_argument("--pivot", default="eng_Latn", help="the FLORES language every xsim file is compared with "
                            "(default eng_Latn)")
    suite_args.add_argument("--bucc", type=path_argument, help="folder of a BUCC-format corpus")
    suite_args.add_argument("--pairs", default="de-en,fr-en,ru-en,zh-en", help="comma-separated BUCC pairs in --bucc "
                            "(default de-en,fr-en,ru-en,zh-en)")
    suite_args.add_argument("--split", default="dev", help="the BUCC split to measure (default dev)")
    suite_args.add_argument("--short", type=path_argument,
                            help="folder of held-out short sentence pairs <lang>-eng_Latn.tsv.gz "
                            "(training.prepare writes data/train/heldout-short/test): Tatoeba-style retrieval")
    suite_args.add_argument("--short-languages", help="comma-separated codes (default: every file in --short)")
    suite_args.add_argument("--short-limit", type=int, default=1000, help="pairs a language, at most")
    suite_args.add_argument("--tatoeba", type=path_argument,
                            help="folder of Tatoeba files as LASER and XTREME distribute "
                            "them (tatoeba.<xxx>-eng.<xxx> and tatoeba.<xxx>-eng.eng): accuracy per language, "
                            "mean over all and over XTREME's 36")
    suite_args.add_argument("--tatoeba-languages", help="comma-separated Tatoeba codes or lang_Script names "
                            "(default: every language in --tatoeba)")
    suite_args.add_argument("--strict", action="store_true", help="xsim, short pairs and Tatoeba: only the aligned "
                            "row counts as correct, not a retrieved copy of its text (LASER's and XTREME's Tatoeba "
                            "protocol)")
    suite_args.add_argument("--markdown", type=path_argument, help="write the tables as Markdown")
    suite_args.add_argument("--compare", action="append", default=[], metavar="SPEC",
                            help="another encoder to measure with the same settings (repeatable): the figures are "
                            "then printed side by side, one column per encoder")
    suite_args.add_argument("--also-binary", nargs="?", const="language", metavar="CENTERS",
                            help="also measure the encoder's binary vectors (encoders.binary), side by side: sign "
                            "codes less each language's mean (language, the default) and/or as they are (none), "
                            "comma-separated for both")
    for sub in (bucc_args, xsim_args, suite_args):
        add_settings_arguments(sub)
        add_vector_arguments(sub)
        sub.add_argument("--report", type=path_argument, help="write the figures and settings as JSON")
        sub.add_argument("-v", "--verbose", action="store_true", help="also log debug lines")
    args = parser.parse_args(argv)
    setup_logging(args.verbose)

    def command() -> None:
        settings = settings_from_args(args)
        if args.task in ("bucc", "suite"):  # the reference protocol searches exactly; an index is opt-in (--index)
            settings.setdefault("knn", {}).setdefault("index", "Flat")
        if args.task == "bucc" and args.tune_corpus is not None and args.threshold is not None:
            raise ValueError("--tune-corpus tunes a threshold; it cannot be combined with --threshold")
        if args.task == "suite" and args.rescore and not args.also_binary:
            raise ValueError("--rescore in the suite rescores the --also-binary columns: give --also-binary too")
        if args.task == "suite" and not (args.flores or args.bucc or args.short or args.tatoeba):
            raise ValueError("suite: nothing to measure: give --flores, --bucc, --short or --tatoeba (or several)")
        if args.task == "xsim" and (args.margin or args.selection):  # they were read, and ignored
            raise ValueError("xsim retrieves each sentence's nearest by --xsim-margin (absolute: cosine; ratio, "
                             "distance: over --k neighbours); --margin and --selection are mining's (bucc, suite)")
        config = mining_config(settings)
        source = VectorSource.from_args(args, settings, rescore=args.task != "suite")
        if args.task == "suite":
            # binary sources first: they share the float source's vectors, which it then keeps as it encodes
            centers = args.also_binary.split(",") if args.also_binary else []
            binaries = [source.as_binary(center, rescore) for center in centers
                        for rescore in ([None, args.rescore] if args.rescore else [None])]
            report = suite_report(args, source, config)
            text = format_suite(report)
            others = binaries + [VectorSource(encoder_spec=spec, pass_language=source.pass_language)
                                 for spec in args.compare]
            if others:
                reports = [report] + [suite_report(args, other, config) for other in others]
                report = {"encoders": reports}
                text = format_side_by_side(reports)
            print(text)
            if args.markdown:
                args.markdown.write_text(text + "\n", encoding="utf-8")
        elif args.task == "bucc":
            report, curve = bucc_report(args.corpus, args.pair, args.split, source, config,
                                        args.tune_split, args.threshold, args.tune_corpus)
            print(format_bucc(report))
            if args.report:  # before the plot: a plot that cannot be drawn must not cost the figures
                write_json(args.report, report)
            if args.plot:
                plot_bucc(report, curve, args.plot)
            return
        else:
            report = xsim_report(args.src_text, args.tgt_text, source, args.xsim_margin, config, not args.strict,
                                 (args.src_lang, args.tgt_lang))
            print(format_xsim(report))
        if args.report:
            write_json(args.report, report)

    return exit_status(command)


def plot_bucc(report: dict, curve: dict, path: Path) -> None:
    from miner.plots import plot_threshold_curve  # matplotlib only when a plot is asked for

    applied = report["result"]["threshold"]
    lines = {f"fold {i + 1}": t for i, t in enumerate(applied)} if isinstance(applied, list) else {"applied": applied}
    s = report["settings"]
    plot_threshold_curve(curve, {**lines, "oracle": report["oracle"]["threshold"]},
                         f"BUCC {report['pair']} {report['split']} ({s['margin']}, k={s['k']})", path)


def _unreachable_gold(corpus, src_unique, tgt_unique) -> int:
    ambiguous_src = {t for t, i in zip(src_unique.texts, src_unique.ids) if i is None}
    ambiguous_tgt = {t for t, i in zip(tgt_unique.texts, tgt_unique.ids) if i is None}
    src_text = dict(zip(corpus.src.ids, corpus.src.texts))
    tgt_text = dict(zip(corpus.tgt.ids, corpus.tgt.texts))
    return sum(src_text[s] in ambiguous_src or tgt_text[t] in ambiguous_tgt for s, t in corpus.gold or ())


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


if __name__ == "__main__":
    sys.exit(main())
