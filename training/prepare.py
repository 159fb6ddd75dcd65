"""Build training sets from the train pool (../shared/data/train) — never from dev/.

    python -m training.prepare                                    # -> data/train
    python -m training.prepare --shared ../shared/data/train --output data/train --vocab-size 32000

Writes, with every language named ISO 639-3 + script (miner/languages.py):
    documents/<lang>.txt.gz       NTREX-128 (129 languages) and FLORES v1 (ne, si) documents, in order, one sentence
                                  a line, a blank line between documents: CMLM's consecutive sentences
    bitext/<lang>-eng_Latn.tsv.gz translation pairs into English: NTREX-128, WMT news test sets 2008-2021 and TICO-19,
                                  WMT21, Multi30k task 1, FLORES v1; exact duplicates removed
    heldout/<lang>-eng_Latn.tsv.gz the last NTREX documents, in every format left out of training: the periodic xsim
                                  check (an English sentence held out here is dropped from all bitext)
    heldout-news/<lang>-eng_Latn.tsv.gz  the same documents in every NTREX language (121): long news sentences for
                                  choices made after training (`miner.evaluate suite --short data/train/heldout-news`)
    bitext-short/<lang>-eng_Latn.tsv.gz  en-pairs/ (training/en_pairs.py): localisation strings, help text,
                                  questions, captions; checked line by line, skips counted by reason
    bitext-split/<lang>-eng_Latn.tsv.gz  the sentences of bitext-short's multi-sentence pairs (help paragraphs,
                                  XQuAD contexts), paired in order where both sides split alike
    bitext-words/<lang>-eng_Latn.tsv.gz  dictionaries/ (training/dictionaries.py): word translations in 14
                                  languages; checked line by line, held-out sentences excluded in any case
    heldout-short/{tune,test}/<lang>-eng_Latn.tsv.gz  en-pairs' held-out split, chosen by the English side (so
                                  it is held out in every language): `tune` for choices, `test` for reporting
    loop/                         the mining loop's pool: UD PUD (19 languages) and WMT news sets of 4 languages, *not*
                                  given as bitext, but
                                  as two shuffled, thinned monolingual sides (<lang>.txt, eng_Latn.<lang>.txt) with
                                  the gold pairs (<lang>.gold.tsv) kept aside to measure what the loop mines
    tokenizer/                    a cased WordPiece vocabulary over all of it, languages smoothed with alpha 0.3
    manifest.json                 what came from where, and the counts

Everything is written into `.prepare-staging/` first and each folder swapped in whole at the end: a rerun never
leaves a half-written folder for an evaluation reading it, and an interrupted one leaves the previous set.
"""

from __future__ import annotations

import argparse
import gzip
import logging
import posixpath
import random
import re
import shutil
from collections import defaultdict
from pathlib import Path

from miner.console import wide_table
from miner.io import atomic_output, iter_lines, path_argument, write_json
from miner.languages import language_code
from training.dictionaries import WordPairs, read_dictionaries
from training.en_pairs import EnPairs, read_en_pairs
from training.en_pairs import clean as _clean  # one cleaning for every source

log = logging.getLogger("training.prepare")
ENGLISH = "eng_Latn"
HELDOUT_DOCUMENTS = 12  # the last NTREX documents (~200 sentences) are the periodic xsim check
HELDOUT_LANGUAGES = ["deu_Latn", "fra_Latn", "rus_Cyrl", "zho_Hans", "arb_Arab", "hin_Deva", "swh_Latn",
                     "tur_Latn"]
LOOP_SETS = {"deu": "newstest2012", "fra": "newstest2013", "ces": "newstest2011", "rus": "newstest2013"}
LOOP_KEEP = 0.7  # each side of the loop pool keeps this share of its lines: comparable, not parallel


class Collector:
    def __init__(self) -> None:
        self.documents: dict[str, list[list[str]]] = defaultdict(list)
        self.bitext: dict[str, dict[tuple[str, str], None]] = defaultdict(dict)  # ordered set per language
        self.sources: dict[str, dict[str, int]] = defaultdict(dict)

    def add_pairs(self, language: str, pairs, source: str) -> None:
        kept = self.bitext[language]
        before = len(kept)
        for src, tgt in pairs:
            src, tgt = _clean(src), _clean(tgt)
            if src and tgt:
                kept.setdefault((src, tgt))
        self.sources[source][language] = self.sources[source].get(language, 0) + len(kept) - before


def _lines(path: Path) -> list[str]:
    return list(iter_lines(path))


# -- NTREX-128 -------------------------------------------------------------------------------------------------

# NTREX-128 references whose text is in another language than their file's name says. "nso" (Northern Sotho) is
# Southern Sotho: it writes "ho" and "hore", as the train pool's Southern Sotho texts (UDHR, software strings) do,
# where all of its Northern Sotho ones write "go", "gore" and "š" (tests/test_training_prepare.py pins it). Read as
# Northern Sotho, it taught the language identifier that Sesotho news is Northern Sotho (FLORES Southern Sotho:
# 7% right) and chose Northern Sotho's ensemble share on Sesotho sentences.
NTREX_RELABELLED = {"nso": "sot"}


def ntrex_language(name: str, lines: list[str]) -> str:
    """The language of the NTREX-128 reference `name` (its file's code: "fra", "srp-Latn", "spa-MX", "nso")."""
    base, sep, tail = name.partition("-")
    return language_code(NTREX_RELABELLED.get(base, base) + sep + tail, lines[:200])


def ntrex_heldout_rows(root: Path) -> tuple[list[str], list[int], list[int]]:
    """(document id per line, held-out rows, training rows) of NTREX-128: the last HELDOUT_DOCUMENTS documents are
    held out, for the encoders here and for the language identifier (pipelines.text.langid_data)."""
    doc_ids = [line.strip() for line in _lines(root / "ntrex-128" / "DOCUMENT_IDS.tsv")]
    heldout_docs = set(list(dict.fromkeys(doc_ids))[-HELDOUT_DOCUMENTS:])
    held = [i for i, d in enumerate(doc_ids) if d in heldout_docs]
    train = [i for i, d in enumerate(doc_ids) if d not in heldout_docs]
    return doc_ids, held, train


def ntrex_references(root: Path):
    """(doc_ids, English source, held-out rows, training rows, [(language, lines)]): one reference per language.
    The held-out rows (the last documents) are in no training set here, in any language (their English leaves
    every bitext file too): what choices made after training, such as an ensemble's shares, are tuned on."""
    folder = root / "ntrex-128"
    doc_ids, held, train = ntrex_heldout_rows(root)
    english = _lines(folder / "NTREX-128" / "newstest2019-src.eng.txt.gz")
    references, seen = [], set()
    for path in sorted((folder / "NTREX-128").glob("newstest2019-ref.*.txt.gz")):
        name = path.name.removeprefix("newstest2019-ref.").removesuffix(".txt.gz")
        if name.startswith("eng"):
            continue  # English variants: the English source is used once
        lines = _lines(path)
        if len(lines) != len(english):
            log.warning("%s: %d lines, expected %d: skipped", path, len(lines), len(english))
            continue
        language = ntrex_language(name, lines)
        if language in seen or language == ENGLISH:
            continue  # a second reference of a language already read (spa-MX after spa): one is enough
        seen.add(language)
        references.append((language, lines))
    return doc_ids, english, held, train, references


def ntrex(root: Path, collect: Collector) -> dict[str, list[tuple[str, str]]]:
    """Documents for every language, pairs with the English source; returns every language's held-out pairs."""
    doc_ids, english, held, train, references = ntrex_references(root)
    heldout_pairs: dict[str, list[tuple[str, str]]] = {}
    for language, lines in references:
        collect.documents[language].extend(_documents([lines[i] for i in train], [doc_ids[i] for i in train]))
        collect.add_pairs(language, ((lines[i], english[i]) for i in train), "ntrex-128")
        heldout_pairs[language] = [(_clean(lines[i]), _clean(english[i])) for i in held]
    collect.documents[ENGLISH].extend(_documents([english[i] for i in train], [doc_ids[i] for i in train]))
    return heldout_pairs


def _documents(lines: list[str], doc_ids: list[str]) -> list[list[str]]:
    documents: list[list[str]] = []
    previous = None
    for line, doc in zip(lines, doc_ids):
        if doc != previous:
            documents.append([])
            previous = doc
        if _clean(line):
            documents[-1].append(_clean(line))
    return [d for d in documents if d]


# -- WMT news, TICO-19 ------------------------------------------------------------------------------------------

def wmt_news(root: Path, collect: Collector, loop_pool: dict) -> None:
    """Pairs from the three-letter `xxx-eng` / `eng-xxx` folders (the two-letter ones hold the same files)."""
    folder = root / "wmt-news"
    files: dict[tuple[str, str], dict[str, Path]] = defaultdict(dict)
    loop_sets: set[tuple[str, str]] = set()
    index: dict[str, Path] = {}
    for line in _lines(folder / "INDEX.tsv")[1:]:
        original, stored = line.split("\t")
        index[original] = folder / stored
        parts = original.split("/")
        if len(parts) != 3 or original.endswith(".info") or not re.fullmatch(r"[a-z_A-Z]+-[a-z_A-Z]+", parts[1]):
            continue
        pair, name = parts[1], parts[2]
        sides = pair.split("-")
        if "eng" not in sides or not all(len(s.split("_")[0]) == 3 for s in sides):
            continue
        setname, _, lang = name.rpartition(".")
        files[(pair, setname)][lang] = folder / stored
    for (pair, setname), by_lang in sorted(files.items()):
        other = [lang for lang in by_lang if lang != "eng"]
        if "eng" not in by_lang or len(other) != 1:
            continue
        source, english = _stored_lines(by_lang[other[0]], index), _stored_lines(by_lang["eng"], index)
        if len(source) != len(english) or not source:
            log.warning("wmt-news %s %s: %d vs %d lines: skipped", pair, setname, len(source), len(english))
            continue
        language = language_code(other[0], source[:200])
        if LOOP_SETS.get(other[0].split("_")[0]) == setname:
            if (language, setname) not in loop_sets:  # the set sits in both eng-xxx and xxx-eng: once
                loop_sets.add((language, setname))
                loop_pool.setdefault(language, []).extend(zip(source, english))
            continue
        collect.add_pairs(language, zip(source, english), "wmt-news")


def _stored_lines(path: Path, index: dict[str, Path]) -> list[str]:
    """A few stored files are a link written as text (`../eng-amh/tico19-test.amh`): follow it, through INDEX.tsv
    when its target was itself stored elsewhere."""
    lines = _lines(path)
    if len(lines) == 1 and lines[0].startswith("../"):
        original = posixpath.normpath(f"testsets/{path.parent.name}/{lines[0]}")
        target = index.get(original) or index.get(original.removesuffix(".gz"))
        return _stored_lines(target, index) if target and target != path else []
    return lines


def wmt21(root: Path, collect: Collector) -> None:
    folder = root / "wmt21"
    for ref in sorted((folder / "references").glob("newstest2021.*-*.ref.A.*")):
        src_lang, tgt_lang = ref.name.split(".")[1].split("-")
        source = folder / "sources" / f"newstest2021.{src_lang}-{tgt_lang}.src.{src_lang}"
        if "en" not in (src_lang, tgt_lang) or not source.exists():
            continue
        a, b = _lines(source), _lines(ref)
        if len(a) != len(b):
            continue
        pairs = zip(a, b) if tgt_lang == "en" else zip(b, a)
        other = src_lang if tgt_lang == "en" else tgt_lang
        collect.add_pairs(language_code(other, a[:200] if tgt_lang == "en" else b[:200]), pairs, "wmt21")


def multi30k(root: Path, collect: Collector) -> None:
    raw = root / "multi30k" / "task1" / "raw"
    for split in ("train", "val"):
        english = _lines(raw / f"{split}.en.gz")
        for lang in ("de", "fr", "cs"):
            other = _lines(raw / f"{split}.{lang}.gz")
            if len(other) == len(english):
                collect.add_pairs(language_code(lang, other[:200]), zip(other, english), "multi30k")


def ud_pud(root: Path, loop_pool: dict) -> None:
    """UD PUD goes to the loop pool: 1,000 sentences in 19 languages, most of which have little other bitext, so
    what the loop mines from it is a visible addition."""
    folder = root / "ud-pud" / "text"
    english = dict(line.split("\t", 1) for line in _lines(folder / "en.tsv") if "\t" in line)
    for path in sorted(folder.glob("*.tsv")):
        if path.stem == "en":
            continue
        rows = dict(line.split("\t", 1) for line in _lines(path) if "\t" in line)
        language = language_code(path.stem, list(rows.values())[:200])
        loop_pool.setdefault(language, []).extend((rows[i], english[i]) for i in rows if i in english)


def flores_v1(root: Path, collect: Collector) -> None:
    folder = root / "flores-v1" / "flores_test_sets"
    for english_file in sorted(folder.glob("wikipedia.*.*-en.en")):
        split, pair = english_file.name.split(".")[1:3]
        lang = pair.split("-")[0]
        other_file = folder / f"wikipedia.{split}.{pair}.{lang}"
        english, other = _lines(english_file), _lines(other_file)
        if len(english) != len(other):
            continue
        language = language_code(lang, other[:200])
        collect.add_pairs(language, zip(other, english), "flores-v1")
        doc_file = folder / f"wikipedia.{split}.{pair}.doc_id"
        if doc_file.exists():
            doc_ids = _lines(doc_file)
            collect.documents[language].extend(_documents(other, doc_ids))
            collect.documents[ENGLISH].extend(_documents(english, doc_ids))


# -- writing ---------------------------------------------------------------------------------------------------

def write_gz_lines(path: Path, lines) -> int:
    count = 0
    with atomic_output(path) as handle, gzip.GzipFile(fileobj=handle, mode="wb", mtime=0, filename="") as gz:
        for line in lines:
            gz.write((line + "\n").encode("utf-8"))
            count += 1
    return count


def write_documents(path: Path, documents: list[list[str]]) -> None:
    write_gz_lines(path, (line for doc in documents for line in [*doc, ""]))


def write_loop_pool(output: Path, pool: dict[str, list[tuple[str, str]]], held_english: set, seed: int) -> dict:
    rng = random.Random(seed)
    report = {}
    for language, pairs in sorted(pool.items()):
        pairs = [(_clean(a), _clean(b)) for a, b in pairs if _clean(a) and _clean(b) and _clean(b) not in held_english]
        keep_src = [p for p in pairs if rng.random() < LOOP_KEEP]
        keep_tgt = [p for p in pairs if rng.random() < LOOP_KEEP]
        sources = list(dict.fromkeys(a for a, _ in keep_src))
        targets = list(dict.fromkeys(b for _, b in keep_tgt))
        rng.shuffle(sources)
        rng.shuffle(targets)
        source_set, target_set = set(sources), set(targets)
        gold = sorted({(a, b) for a, b in pairs if a in source_set and b in target_set})
        write_gz_lines(output / "loop" / f"{language}.txt.gz", sources)
        write_gz_lines(output / "loop" / f"{ENGLISH}.{language}.txt.gz", targets)
        write_gz_lines(output / "loop" / f"{language}.gold.tsv.gz", (f"{a}\t{b}" for a, b in gold))
        report[language] = {"sources": len(sources), "targets": len(targets), "gold_pairs": len(gold)}
    return report


def write_en_pairs(output: Path, short: EnPairs, unseen_english: set[str]) -> dict:
    """bitext-short/ (training pairs whose English is held out nowhere), bitext-split/ (the sentences of its
    multi-sentence pairs, training.en_pairs.sentence_pairs) and heldout-short/{tune,test}/."""
    report: dict = {"skipped": dict(sorted(short.skips.items())), "sources": short.sources, "bitext_short": {},
                    "heldout_short": {"tune": {}, "test": {}}}
    for folder, by_language in (("bitext-short", short.train), ("bitext-split", short.split)):
        report[folder.replace("-", "_")] = {
            language: write_gz_lines(output / folder / f"{language}-{ENGLISH}.tsv.gz",
                                     (f"{a}\t{b}" for a, b in pairs if b not in unseen_english))
            for language, pairs in sorted(by_language.items()) if pairs}
    for language, halves in sorted(short.heldout.items()):
        for half, pairs in halves.items():
            if pairs:
                report["heldout_short"][half][language] = write_gz_lines(
                    output / "heldout-short" / half / f"{language}-{ENGLISH}.tsv.gz", (f"{a}\t{b}" for a, b in pairs))
    return report


def write_word_pairs(output: Path, words: WordPairs) -> dict:
    """bitext-words/: the dictionaries' word pairs, xx<TAB>en, one file a language; the skips by reason."""
    return {"skipped": dict(sorted(words.skips.items())),
            "bitext_words": {language: write_gz_lines(output / "bitext-words" / f"{language}-{ENGLISH}.tsv.gz",
                                                      (f"{a}\t{b}" for a, b in pairs))
                             for language, pairs in sorted(words.pairs.items()) if pairs}}


def build_tokenizer(output: Path, collect: Collector, vocab_size: int, sample_lines: int, seed: int) -> None:
    from encoders.tokenizer import coverage, smoothed_corpus, train_wordpiece

    texts: dict[str, list[str]] = defaultdict(list)
    for language, documents in collect.documents.items():
        texts[language].extend(s for d in documents for s in d)
    for language, pairs in collect.bitext.items():
        texts[language].extend(a for a, _ in pairs)
        texts[ENGLISH].extend(b for _, b in pairs)
    texts = {lang: list(dict.fromkeys(lines)) for lang, lines in texts.items()}
    tokenizer = train_wordpiece(smoothed_corpus(texts, sample_lines, 0.3, seed), vocab_size)
    tokenizer.save_pretrained(output / "tokenizer")
    report = coverage(tokenizer, {lang: lines[:2000] for lang, lines in texts.items()})
    write_json(output / "tokenizer" / "coverage_train.json", {"vocab_size": len(tokenizer), "languages": report})


FOLDERS = ("documents", "bitext", "heldout", "heldout-news", "loop", "tokenizer", "bitext-short", "bitext-split",
           "bitext-words", "heldout-short")


def prepare(shared: Path, output: Path, vocab_size: int, sample_lines: int, seed: int) -> dict:
    """Writes the training sets under `output`: first into a staging folder beside them, then each folder swapped
    in whole, so that an evaluation reading heldout-short/ during a rerun never meets a half-written folder and an
    interrupted run leaves the previous set as it was."""
    if shared.name == "dev" or "dev" in shared.resolve().parts[-1:]:
        raise ValueError(f"{shared}: training data comes from the train pool only, never dev/")
    staging = output / ".prepare-staging"
    shutil.rmtree(staging, ignore_errors=True)  # what an interrupted run left
    manifest = _write_sets(shared, staging, vocab_size, sample_lines, seed)
    swap_in(staging, output)
    return manifest


def swap_in(staging: Path, output: Path) -> None:
    """Each of FOLDERS in `output` replaced by its namesake in `staging` (or removed, where the rerun wrote none: a
    rerun writes the same set, never a union) by two renames, then the manifest; `staging` is gone after."""
    for folder in FOLDERS:
        old, new = output / folder, staging / folder
        if old.exists():
            old.rename(staging / f"{folder}.old")
        if new.exists():
            new.rename(old)
    (staging / "manifest.json").replace(output / "manifest.json")
    shutil.rmtree(staging)


def _write_sets(shared: Path, output: Path, vocab_size: int, sample_lines: int, seed: int) -> dict:
    collect, loop_pool = Collector(), {}
    log.info("reading NTREX-128 from %s", shared)
    heldout = ntrex(shared, collect)
    for name, read in (("WMT news test sets", lambda: wmt_news(shared, collect, loop_pool)),
                       ("WMT21", lambda: wmt21(shared, collect)), ("Multi30k", lambda: multi30k(shared, collect)),
                       ("UD PUD (the loop pool)", lambda: ud_pud(shared, loop_pool)),
                       ("FLORES v1", lambda: flores_v1(shared, collect))):
        log.info("reading %s (%d pairs so far)", name, sum(len(p) for p in collect.bitext.values()))
        read()
    short = read_en_pairs(shared / "en-pairs") if (shared / "en-pairs").is_dir() else None
    log.info("writing documents, bitext, held-out pairs and the loop pool to %s", output)
    held_english = {_clean(b) for pairs in heldout.values() for _, b in pairs}
    # The loop pool must be text the model never saw paired: its English side leaves every bitext file too
    # (WMT news 2008-2013 are multi-way, so the same English sentences pair with other languages); so does
    # en-pairs' held-out English.
    unseen_english = held_english | {_clean(b) for pairs in loop_pool.values() for _, b in pairs}
    if short is not None:
        unseen_english |= short.heldout_english()
    manifest = {"shared": str(shared), "documents": {}, "bitext": {}, "heldout": {}, "sources": collect.sources}
    for language, documents in sorted(collect.documents.items()):
        write_documents(output / "documents" / f"{language}.txt.gz", documents)
        manifest["documents"][language] = sum(len(d) for d in documents)
    for language, pairs in sorted(collect.bitext.items()):
        if language == ENGLISH:
            continue
        kept = [f"{a}\t{b}" for a, b in pairs if b not in unseen_english]
        manifest["bitext"][language] = write_gz_lines(output / "bitext" / f"{language}-{ENGLISH}.tsv.gz", kept)
    manifest["heldout_news"] = {}
    for language, pairs in sorted(heldout.items()):
        manifest["heldout_news"][language] = write_gz_lines(
            output / "heldout-news" / f"{language}-{ENGLISH}.tsv.gz", (f"{a}\t{b}" for a, b in pairs))
        if language in HELDOUT_LANGUAGES:  # the training runs' own periodic check: a few languages, quick
            manifest["heldout"][language] = write_gz_lines(output / "heldout" / f"{language}-{ENGLISH}.tsv.gz",
                                                           (f"{a}\t{b}" for a, b in pairs))
    manifest["loop"] = write_loop_pool(output, loop_pool, held_english, seed)
    if short is not None:
        manifest["en_pairs"] = write_en_pairs(output, short, unseen_english)
    if (shared / "dictionaries").is_dir():
        held_text = unseen_english | {a for pairs in heldout.values() for a, _ in pairs}
        if short is not None:
            held_text |= {a for halves in short.heldout.values() for pairs in halves.values() for a, _ in pairs}
        manifest["dictionaries"] = write_word_pairs(output, read_dictionaries(shared / "dictionaries", held_text))
    log.info("building the tokenizer (%d words)", vocab_size)
    build_tokenizer(output, collect, vocab_size, sample_lines, seed)
    manifest["tokenizer"] = {"vocab_size": vocab_size, "sample_lines": sample_lines}
    write_json(output / "manifest.json", manifest)
    return manifest


def mixture_table(manifest: dict, columns: int = 4) -> str:
    """The training mixture per language as Markdown: news and other long-sentence bitext (`bitext/`), en-pairs'
    short sentences (`bitext-short/`), and en-pairs' held-out pairs (tune + test), several languages a row."""
    short = manifest.get("en_pairs", {})
    held = short.get("heldout_short", {"tune": {}, "test": {}})
    languages = sorted(set(manifest["bitext"]) | set(short.get("bitext_short", {})))
    rows = [[lang, f"{manifest['bitext'].get(lang, 0):,}", f"{short.get('bitext_short', {}).get(lang, 0):,}",
             f"{held['tune'].get(lang, 0) + held['test'].get(lang, 0):,}"] for lang in languages]
    return wide_table(["language", "news", "short", "held out"], rows, columns)


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    repo = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(prog="python -m training.prepare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", type=path_argument, default=repo.parent / "shared" / "data" / "train",
                        help="the train pool (default ../shared/data/train beside the repository; never dev/)")
    parser.add_argument("--output", type=path_argument, default=repo / "data" / "train", help="default data/train")
    parser.add_argument("--vocab-size", type=int, default=32000, help="the tokenizer's vocabulary size (default 32000)")
    parser.add_argument("--sample-lines", type=int, default=600_000, help="tokenizer training lines")
    parser.add_argument("--seed", type=int, default=0, help="every draw of the preparation (default 0)")
    parser.add_argument("--table", action="store_true",
                        help="print the training mixture per language from <output>/manifest.json as Markdown")
    args = parser.parse_args(argv)
    setup_logging()
    if args.table:
        from miner.io import read_json

        return exit_status(lambda: print(mixture_table(read_json(args.output / "manifest.json"))))

    def command() -> None:
        if not args.shared.is_dir():
            raise ValueError(f"{args.shared}: the train pool is not there (pass --shared)")
        manifest = prepare(args.shared, args.output, args.vocab_size, args.sample_lines, args.seed)
        print(f"documents: {len(manifest['documents'])} languages, {sum(manifest['documents'].values())} sentences; "
              f"bitext: {len(manifest['bitext'])} languages, {sum(manifest['bitext'].values())} pairs; "
              f"held out: {sum(manifest['heldout'].values())} pairs; loop pool: {manifest['loop']}")
        if "en_pairs" in manifest:
            short = manifest["en_pairs"]
            print(f"en-pairs: {len(short['bitext_short'])} languages, {sum(short['bitext_short'].values())} "
                  f"training pairs; held out {sum(short['heldout_short']['tune'].values())} (tune) and "
                  f"{sum(short['heldout_short']['test'].values())} (test); skipped {short['skipped']}")
        print(f"written to {args.output}")

    return exit_status(command)


if __name__ == "__main__":
    raise SystemExit(main())
