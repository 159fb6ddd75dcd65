"""The train pool's bilingual word dictionaries (`dictionaries/en-xx.dic.gz`: a header line `en<TAB>xx`, then one
`english<TAB>translation` word pair a line) as word-level training pairs, `(xx, en)` like every other bitext.

They are the one English-paired source of the train pool that holds single words: the 1-3 word band is where the
student retrieves worst (docs/evaluation.md), and a word's translation is what a UI string of one word needs.
They are loose (automatically aligned, inflected forms: `republic -> tasavallan`, some names translated as their
adjectives), so prepare writes them to a folder of their own, `bitext-words/`, and a recipe weighs them.

Every line is checked; a line that fails is counted by reason, the first few of each reason logged with file:line:
    no-tab           not two tab-separated fields
    empty-side       a side with no letter or digit
    same-as-english  the translation equals its English word (names, loanwords: nothing to learn)
    no-letter        a side with no letter (`0 -> ٠`: a digit is not a word to learn)
    english-script   an English side with a letter outside the Latin script (`سارفراز -> ස`: a misaligned entry)
    duplicate        the same pair seen before in the file
    length-ratio     one side over 3x the other's length, past 20 characters (training.en_pairs.check_pair)
    held-out         either side equals (case folded) a held-out sentence of the train pool: a one-word UI string
                     held out in en-pairs must stay unseen, whatever its case
A file is skipped, counted and logged, when its header is not `en<TAB>xx` (`kk-ru`: no English side;
`no-english`), or `xx` is a code the project cannot name (`unknown-language`).
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import regex

from miner.io import iter_lines
from miner.languages import check_code, is_language_name, language_code
from training.en_pairs import check_pair, count_skip

log = logging.getLogger("training.dictionaries")
LETTER = regex.compile(r"\p{L}")
NOT_LATIN_LETTER = regex.compile(r"(?=\p{L})\P{Latin}")


@dataclass
class WordPairs:
    pairs: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))
    skips: Counter = field(default_factory=Counter)


def dictionary_language(header: str, words: list[str]) -> str:
    """The file's language code, or the reason the file is skipped; `words` tell the script (`ar` -> Arabic)."""
    fields = header.strip().split("\t")
    if len(fields) != 2 or fields[0].strip().lower() != "en":
        return "no-english"
    try:
        code = check_code(language_code(fields[1].strip(), words))
    except ValueError:
        return "unknown-language"
    if not is_language_name(code):
        return "unknown-language"
    return "no-english" if code.startswith("eng_") else code


def read_dictionaries(root: Path, heldout: set[str]) -> WordPairs:
    """Every `*.dic.gz` under `root`, in name order; `heldout` holds the train pool's held-out sentences (any side,
    any case): a word pair that equals one of them is not trained on."""
    result = WordPairs()
    folded_heldout = {text.casefold() for text in heldout}
    for path in sorted(root.glob("*.dic.gz")):
        lines = iter(iter_lines(path))
        header = next(lines, "")
        body = list(lines)
        language = dictionary_language(header, [line.partition("\t")[2] for line in body[:2000]])
        if language in ("no-english", "unknown-language"):
            result.skips[language] += 1
            log.warning("skipped %s: %s (the header must be `en<TAB>xx` with a code the project can name, got %r)",
                        path, language, header.strip())
            continue
        _read_pairs(path, body, language, folded_heldout, result)
    return result


def _check_words(fields: list[str]) -> tuple[str, str] | str:
    """The cleaned (en, xx) pair, or the reason it is not one."""
    checked = check_pair(fields)
    if isinstance(checked, str):
        return checked
    english, word = checked
    if not LETTER.search(english) or not LETTER.search(word):
        return "no-letter"
    return "english-script" if NOT_LATIN_LETTER.search(english) else checked


def _read_pairs(path: Path, body: list[str], language: str, folded_heldout: set[str], result: WordPairs) -> None:
    seen: set[tuple[str, str]] = set()
    logged: Counter = Counter()
    for number, line in enumerate(body, start=2):  # line 1 is the header
        checked = _check_words(line.split("\t"))
        if isinstance(checked, tuple):
            pair = (checked[1], checked[0])  # the file is en<TAB>xx; bitext is xx<TAB>en
            if pair in seen:
                checked = "duplicate"
            elif pair[0].casefold() in folded_heldout or pair[1].casefold() in folded_heldout:
                checked = "held-out"
            else:
                seen.add(pair)
                result.pairs[language].append(pair)
                continue
        count_skip(result.skips, logged, path, number, checked, log)
