"""Sentence filters: each small, configurable, and returning keep (`True`) or `(False, reason)`.

    filters = build_filters({"length": {"min_chars": 15}, "lid_score": {"min_score": 0.6}})
    kept = apply_filters(sentences, filters, tally)      # drops counted as filter/dropped:<name>:<reason>

Every filter looks at one sentence alone, so they run anywhere (one worker, one record at a time). The defaults
are set for mining: a pair is only as good as its two sentences, and short, symbol-heavy or wrong-script lines
are what margin scoring confuses most easily (a "© 2024" line matches every other "© 2024" line).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import regex

from miner.config import check_number
from miner.languages import outside_script, script_of
from pipelines.text.records import Sentence, Tally

KEEP = True

# scripts written without spaces between words: length in tokens is estimated from letters instead
UNSPACED_SCRIPTS = {"Hani", "Hans", "Hant", "Jpan", "Thai", "Laoo", "Khmr", "Mymr", "Tibt"}
CHARS_PER_TOKEN_UNSPACED = 1.6  # mean word length in characters of Chinese and Thai text, near enough for a bound


# counted by what a substitution removes, so the per-character work stays in C (the filters see every sentence);
# whitespace by str.split, faster still
_NOT_LETTER_OR_MARK = regex.compile(r"[^\p{L}\p{M}]+")
_NOT_LETTER = regex.compile(r"[^\p{L}]+")


def _check_option(filter_name: str, option: str, value, low: float, high: float | None = None,
                  whole: bool = False) -> None:
    """A filter's option in [low, high]: outside it a filter drops every sentence (a share above 1) or none."""
    check_number(f"filters.{filter_name}.{option}", value, low, high, whole)


@dataclass(frozen=True)
class LengthFilter:
    """Length in characters and in tokens (whitespace words; letters / 1.6 in unspaced scripts)."""

    name = "length"
    min_chars: int = 10
    max_chars: int = 500
    min_tokens: int = 3
    max_tokens: int = 150

    def __post_init__(self):
        for option in ("min_chars", "max_chars", "min_tokens", "max_tokens"):
            _check_option(self.name, option, getattr(self, option), 0, whole=True)
        for unit in ("chars", "tokens"):
            if getattr(self, f"min_{unit}") > getattr(self, f"max_{unit}"):
                raise ValueError(f"filters.length.min_{unit} {getattr(self, f'min_{unit}')} is above max_{unit} "
                                 f"{getattr(self, f'max_{unit}')}: every sentence would be dropped")

    def __call__(self, sentence: Sentence):
        n = len(sentence.text)
        if n < self.min_chars:
            return False, "too-few-chars"
        if n > self.max_chars:
            return False, "too-many-chars"
        tokens = self.tokens(sentence.text, script_of(sentence.language))
        if tokens < self.min_tokens:
            return False, "too-few-tokens"
        if tokens > self.max_tokens:
            return False, "too-many-tokens"
        return KEEP

    @staticmethod
    def tokens(text: str, script: str) -> float:
        if script in UNSPACED_SCRIPTS:
            return sum(c.isalpha() for c in text) / CHARS_PER_TOKEN_UNSPACED
        return len(text.split())


@dataclass(frozen=True)
class ScriptFilter:
    """The share of letters written in the language's own script: a Russian sentence in Latin letters, or an
    English menu line labelled Chinese, is not what a `rus_Cyrl` or `zho_Hans` side should hold."""

    name = "script"
    min_share: float = 0.75

    def __post_init__(self):
        _check_option(self.name, "min_share", self.min_share, 0, 1)

    def __call__(self, sentence: Sentence):
        letters = _NOT_LETTER.sub("", sentence.text)
        if not letters:
            return False, "no-letters"
        share = len(outside_script(script_of(sentence.language)).sub("", letters)) / len(letters)
        return KEEP if share >= self.min_share else (False, "script-mismatch")


@dataclass(frozen=True)
class LetterShareFilter:
    """Letters against digits, punctuation and symbols, among the non-space characters: tables, prices,
    dates and code fragments fail it."""

    name = "letters"
    min_share: float = 0.6

    def __post_init__(self):
        _check_option(self.name, "min_share", self.min_share, 0, 1)

    def __call__(self, sentence: Sentence):
        visible = len("".join(sentence.text.split()))
        if not visible:
            return False, "empty"
        letters = len(_NOT_LETTER_OR_MARK.sub("", sentence.text))  # marks: Indic vowel signs are letters' parts
        return KEEP if letters / visible >= self.min_share else (False, "few-letters")


@dataclass(frozen=True)
class RepetitionFilter:
    """A character repeated many times in a row ("!!!!!!", "aaaaaaah", "-------"), or a sentence whose
    distinct characters are too few for its length (keyboard mashing, "ha ha ha ha ha")."""

    name = "repetition"
    max_run: int = 5
    min_distinct_share: float = 0.1
    min_length_for_distinct: int = 40

    def __post_init__(self):
        _check_option(self.name, "max_run", self.max_run, 2, whole=True)  # a run of 1 is every character
        _check_option(self.name, "min_distinct_share", self.min_distinct_share, 0, 1)
        _check_option(self.name, "min_length_for_distinct", self.min_length_for_distinct, 1, whole=True)
        # not whitespace: a gap of spaces kept from a plain-text (WET) record is layout, not a repeated character
        object.__setattr__(self, "_run", re.compile(r"(\S)\1{%d,}" % (self.max_run - 1)))

    def __call__(self, sentence: Sentence):
        text = sentence.text
        if self._run.search(text):
            return False, "repeated-chars"
        if len(text) >= self.min_length_for_distinct and len(set(text)) / len(text) < self.min_distinct_share:
            return False, "few-distinct-chars"
        return KEEP


@dataclass(frozen=True)
class LidScoreFilter:
    """The language identifier's probability for the sentence's language; `per_language` overrides the floor
    (closely related languages, e.g. bos/hrv/srp, share probability mass and need a lower one)."""

    name = "lid_score"
    min_score: float = 0.5
    per_language: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        _check_option(self.name, "min_score", self.min_score, 0, 1)  # a probability: above 1 drops every sentence
        if not isinstance(self.per_language, dict):
            raise ValueError(f"filters.lid_score.per_language must map languages to scores, got {self.per_language!r}")
        for language, score in self.per_language.items():
            _check_option(self.name, f"per_language.{language}", score, 0, 1)

    def __call__(self, sentence: Sentence):
        floor = self.per_language.get(sentence.language, self.min_score)
        return KEEP if sentence.lid_score >= floor else (False, "low-lid-score")


FILTERS = {f.name: f for f in (LengthFilter, ScriptFilter, LetterShareFilter, RepetitionFilter, LidScoreFilter)}
DEFAULT_ORDER = ("length", "letters", "repetition", "script", "lid_score")  # cheapest first


def build_filters(config: dict | None = None) -> list:
    """Filters from a `filters:` settings section: {name: {option: value} | false}. A missing name runs with its
    defaults; `false` turns it off; unknown names or options are errors naming them."""
    config = dict(config or {})
    unknown = set(config) - set(FILTERS)
    if unknown:
        raise ValueError(f"filters: unknown filter(s) {sorted(unknown)}; known: {sorted(FILTERS)}")
    filters = []
    for name in DEFAULT_ORDER:
        options = config.get(name, {})
        if options is False:
            continue
        cls = FILTERS[name]
        fields = {f.name for f in dataclasses.fields(cls)}
        bad = set(options or {}) - fields
        if bad:
            raise ValueError(f"filters.{name}: unknown option(s) {sorted(bad)}; known: {sorted(fields)}")
        filters.append(cls(**(options or {})))
    return filters


def check(sentence: Sentence, filters: list) -> tuple[bool, str]:
    """The first drop among `filters` as (False, "<filter>:<reason>"), else (True, "")."""
    for sentence_filter in filters:
        verdict = sentence_filter(sentence)
        if verdict is not KEEP:
            return False, f"{sentence_filter.name}:{verdict[1]}"
    return True, ""


def apply_filters(sentences: Iterable[Sentence], filters: list, tally: Tally) -> Iterator[Sentence]:
    """Sentences that pass every filter; each drop counted as `filter`/`dropped:<filter>:<reason>` (counted,
    not logged one by one: dropping is the filters' normal work, not a fault in the input)."""
    for sentence in sentences:
        keep, reason = check(sentence, filters)
        if keep:
            tally.count("filter", "kept")
            yield sentence
        else:
            tally.count("filter", f"dropped:{reason}")
