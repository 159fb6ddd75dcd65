"""The train pool's English-paired sources (`en-pairs/<source>/<xxx_Scrp>-eng_Latn.tsv.gz`, lines `xx<TAB>en`),
checked line by line and split into training pairs and a held-out split.

Software localisation strings, help text, questions and captions: mostly short, which is what the student lacked
(docs/training.md). Every line is checked; a line that fails is counted by reason, and the first few of each
reason are logged with file:line:
    no-tab           not two tab-separated fields
    empty-side       a side with no letter or digit
    same-as-english  the source equals its English (untranslated strings: `OK`, names, URLs)
    duplicate        the same pair seen before, in this file or another source
    length-ratio     one side over 3x the other's length (a loose or partial translation), past 20 characters; a
                     Han, kana or Hangul character counts as three
Whole files are skipped, counted and logged when the name is not `<code>_<Script>-eng_Latn.tsv.gz` or the code is
not one the project can name (`unknown-language`); a language with fewer than `MIN_PAIRS` pairs left over all
sources is skipped (`too-few-pairs`): too little to learn from or to measure.

**Sentences of multi-sentence pairs** (help paragraphs, XQuAD's contexts): a training pair whose English holds two
or more sentences, and whose other side splits into as many at its own end marks (`.!?` and `;` for Greek's
question mark, `।`, `。！？`, `؟`), also gives its sentences as pairs, in order (`EnPairs.split`; prepare writes
them to `bitext-split/`). Unequal counts (an abbreviation, a merged sentence), a sentence pair that fails the
checks below, or an English part of one word (an abbreviation's cut: "Dr.") leave the paragraph whole only. These
are the long single sentences the news-poor languages lack: Greek gets 15,144 of them (NTREX has 1,800).

**The held-out split** is chosen by the English side: an English sentence whose hash falls in the first
`HELDOUT_PER_MILLE` of 1,000 is held out in every language and every source (no language trains on a held-out
English sentence, and the same sentence is held out wherever it appears). A second hash splits the held-out pairs
into `tune` (where choices are made: an ensemble's shares) and `test` (where they are reported); each pair's
length band (miner.xsim.length_band) is read off its English side. Held-out sets keep one pair per English
sentence, in hash order.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import regex

from miner.io import iter_lines
from miner.languages import check_code, is_language_name, language_code

log = logging.getLogger("training.en_pairs")
ENGLISH = "eng_Latn"
MIN_PAIRS = 100
HELDOUT_PER_MILLE = 60  # 6%: Greek's 43k pairs hold out ~2.5k, Swahili's 2k about 120
MAX_LENGTH_RATIO = 3.0
LOGGED = 5  # per reason and file
FILE_NAME = re.compile(r"^([a-z]{2,3}_[A-Z][a-z]{3})-eng_Latn\.tsv\.gz$")
WORD = regex.compile(r"[\p{L}\p{N}]")
# A sentence ends at . ! ? (and a closing quote or bracket) before white space and an upper-case letter, a digit or
# an opening quote (English); at any script's end mark before white space, or at once after CJK ones (the others).
ENGLISH_END = regex.compile(r"(?<=[.!?][\"')\]”’]?)\s+(?=[\"'(\[“‘]?[\p{Lu}\p{N}])")
ENGLISH_WORD = regex.compile(r"\p{L}[\p{L}\p{M}'’-]*|\p{N}+")
SOURCE_END = regex.compile(r"(?<=[.!?;।؟][\"')\]»”’]?)\s+(?=\S)|(?<=[。！？][」』”’]?)(?=\S)")
DENSE = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")


def _digest(english: str) -> bytes:
    return hashlib.blake2b(english.encode("utf-8"), digest_size=8).digest()


def heldout_half(english: str) -> str | None:
    """`tune`, `test` or None (a training pair), from the English side alone: the same English sentence is held
    out (and in the same half) in every language and source."""
    digest = _digest(english)
    if int.from_bytes(digest[:4], "big") % 1000 >= HELDOUT_PER_MILLE:
        return None
    return "tune" if digest[4] % 2 == 0 else "test"


@dataclass
class EnPairs:
    """What the sources gave: training pairs and held-out pairs per language, with the skips and per-source
    counts."""

    train: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))
    # the sentences of multi-sentence training pairs (sentence_pairs)
    split: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))
    heldout: dict[str, dict[str, list[tuple[str, str]]]] = field(
        default_factory=lambda: defaultdict(lambda: {"tune": [], "test": []}))
    skips: Counter = field(default_factory=Counter)
    sources: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))

    def heldout_english(self) -> set[str]:
        return {en for halves in self.heldout.values() for pairs in halves.values() for _, en in pairs}


def clean(text: str) -> str:
    """One line of text: tabs and runs of white space become one space (the training files are TSV)."""
    return " ".join(text.replace("\t", " ").split())


def _visual_length(text: str) -> int:
    """Characters, a Han, kana or Hangul character counting as three: one of them carries about what three Latin
    letters do, so a Chinese sentence is not a third of its English."""
    return len(text) + 2 * len(DENSE.findall(text))


def check_pair(fields: list[str]) -> tuple[str, str] | str:
    """The cleaned (xx, en) pair, or the reason it is not one."""
    if len(fields) != 2:
        return "no-tab"
    source, english = clean(fields[0]), clean(fields[1])
    if not WORD.search(source) or not WORD.search(english):
        return "empty-side"
    if source.casefold() == english.casefold():
        return "same-as-english"
    longer, shorter = sorted((_visual_length(source), _visual_length(english)), reverse=True)
    if longer > 20 and longer > MAX_LENGTH_RATIO * shorter:
        return "length-ratio"
    return source, english


def sentence_pairs(pair: tuple[str, str]) -> list[tuple[str, str]]:
    """The sentences of a multi-sentence pair, paired in order, or [] when either side does not split into the
    same number of sentences or a sentence pair fails `check_pair`."""
    source, english = pair
    english_parts = [part for part in ENGLISH_END.split(english) if WORD.search(part)]
    # a one-word part is an abbreviation's cut ("Dr.", "Fig.") more often than a sentence: keep the paragraph whole
    if len(english_parts) < 2 or any(len(ENGLISH_WORD.findall(part)) < 2 for part in english_parts):
        return []
    source_parts = [part for part in SOURCE_END.split(source) if WORD.search(part)]
    if len(source_parts) != len(english_parts):
        return []
    checked = [check_pair([a, b]) for a, b in zip(source_parts, english_parts)]
    return checked if all(isinstance(c, tuple) for c in checked) else []


def count_skip(skips: Counter, logged: Counter, path: Path, number: int, reason: str,
               logger: logging.Logger = log) -> None:
    """Count a skipped line by reason; log the first LOGGED of each reason and file, with file:line."""
    skips[reason] += 1
    logged[(path, reason)] += 1
    if logged[(path, reason)] <= LOGGED:
        logger.warning("skipped %s:%d: %s", path, number, reason)


def file_language(path: Path) -> str | None:
    match = FILE_NAME.match(path.name)
    if not match:
        return None
    try:
        code = check_code(language_code(match.group(1)))
    except ValueError:
        return None
    return code if code != ENGLISH and is_language_name(code) else None


def read_en_pairs(root: Path) -> EnPairs:
    """Every source folder under `root` (the train pool's `en-pairs/`), in name order, so a rerun is the same."""
    result, seen, logged = EnPairs(), defaultdict(set), Counter()
    files = sorted(p for p in root.glob("*/*.tsv.gz"))
    for path in files:
        language = file_language(path)
        if language is None:
            result.skips["unknown-language"] += 1
            log.warning("skipped %s: unknown-language (the name must be <code>_<Script>-eng_Latn.tsv.gz with a "
                        "code the project can name)", path)
            continue
        kept = 0
        for number, line in enumerate(iter_lines(path), start=1):
            pair = check_pair(line.split("\t"))
            if isinstance(pair, tuple) and pair in seen[language]:
                pair = "duplicate"
            if isinstance(pair, str):
                count_skip(result.skips, logged, path, number, pair)
                continue
            seen[language].add(pair)
            half = heldout_half(pair[1])
            (result.train[language] if half is None else result.heldout[language][half]).append(pair)
            if half is None:
                result.split[language].extend(sentence_pairs(pair))
            kept += 1
        result.sources[path.parent.name][language] = kept
    _keep_new_sentences(result, seen)
    _drop_small_languages(result)
    _one_pair_per_english(result)
    return result


def _keep_new_sentences(result: EnPairs, seen: dict[str, set]) -> None:
    """Split sentences that are pairs of their own already (in any source), or repeat, are not added twice."""
    for language, pairs in result.split.items():
        result.split[language] = [pair for pair in dict.fromkeys(pairs) if pair not in seen[language]]


def _drop_small_languages(result: EnPairs) -> None:
    for language in sorted(set(result.train) | set(result.heldout)):
        total = len(result.train.get(language, ())) + sum(len(p) for p in result.heldout.get(language, {}).values())
        if total < MIN_PAIRS:
            result.skips["too-few-pairs"] += total
            log.warning("skipped %s: too-few-pairs (%d pairs over all sources, fewer than %d)", language, total,
                        MIN_PAIRS)
            result.train.pop(language, None)
            result.split.pop(language, None)
            result.heldout.pop(language, None)


def _one_pair_per_english(result: EnPairs) -> None:
    """A retrieval set needs one right answer a query: the first pair of each English sentence stays (UI strings
    such as `Cancel` are translated in several catalogues, sometimes differently)."""
    for halves in result.heldout.values():
        for half, pairs in halves.items():
            first: dict[str, tuple[str, str]] = {}
            for xx, en in pairs:
                first.setdefault(en, (xx, en))
            # in hash order, so the first N lines of a held-out file are a fair sample of all its sources and bands
            halves[half] = sorted(first.values(), key=lambda pair: _digest(pair[1])[::-1])
