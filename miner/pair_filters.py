"""Rules over mined pairs, applied after scoring: what a margin cannot see, as bitext cleaners check it.

    chain = PairFilter.from_settings({"length_ratio": 2.5})        # settings: the `pair_filter` config section
    verdict = chain.check(src_text, tgt_text, "deu_Latn", "eng_Latn")     # True, or (False, "numbers")
    chain.drops                                                           # Counter: reason -> pairs dropped

Each rule looks at one pair's two texts and returns keep or (drop, reason); the chain stops at the first drop and
counts it under the rule's name, so a report says how many pairs each rule removed. The rules are the hard rules
of bitext cleaners (bicleaner, LASER's and CCMatrix's post-filtering), cheapest first:

- identical: the two sides are the same text once case, digits' form, spacing and punctuation are ignored (an
  untranslated copy, a name, a code), or nearly so (character similarity >= `near_identical`);
- length_ratio: one side is more than `length_ratio` times longer than the other, in characters, with characters
  of unspaced scripts (Han, kana, Thai...) counted `dense_char_weight` times (a Chinese character carries about
  what three Latin letters do);
- numbers: both sides hold numbers and neither side's set of numbers contains the other's, numbers compared by
  their significant digits (any script; separators and leading or trailing zeros ignored, so "6 000" is "6,000"
  and "1400万" is "14 million"): the commonest sign of a near-translation with other facts. A subset is kept,
  since numbers are often spelt out in words ("3月" is "March", "three" is "3"), and so is a side with none;
- urls: web addresses or e-mail addresses that are not the same on both sides;
- script: a side whose letters are mostly outside its language's script (a code like `zho_Hans`; plain codes
  such as `de` are not checked).
"""

from __future__ import annotations

import difflib
import unicodedata
from collections import Counter
from dataclasses import dataclass, fields

import regex

from miner.languages import outside_script, script_of

KEEP = True
RULES = ("identical", "length_ratio", "numbers", "urls", "script")

_DENSE = regex.compile(r"[\p{scx=Hani}\p{scx=Hira}\p{scx=Kana}\p{scx=Thai}\p{scx=Laoo}\p{scx=Khmr}\p{scx=Mymr}"
                       r"\p{scx=Tibt}]")
# thousands grouped by a separator (space, no-break spaces, point, comma, apostrophe), or digits with a decimal part
_NUMBER = regex.compile(r"(?<!\d)\d{1,3}(?:[ \u00a0\u202f.,']\d{3})+(?!\d)|\d+(?:[.,]\d+)?")
_URL = regex.compile(r"(?:https?://|www\.)[^\s<>\"']+|[\w.+-]+@[\w-]+\.[\w.-]+", regex.IGNORECASE)
_NOT_WORD = regex.compile(r"[\p{P}\p{S}\s]+")
_NOT_LETTER = regex.compile(r"[^\p{L}]+")


@dataclass(frozen=True)
class PairFilterSettings:
    identical: bool = True
    near_identical: float = 0.9  # character similarity (difflib ratio) from which two sides count as one text
    length_ratio: float | None = 2.5  # None turns the rule off
    dense_char_weight: float = 3.0
    numbers: bool = True
    urls: bool = True
    script: bool = True
    min_script_share: float = 0.5  # of a side's letters, in its language's script

    @classmethod
    def from_dict(cls, settings: dict | bool | None) -> PairFilterSettings | None:
        """The config section: a mapping of these keys, `false` (no filter) or empty / absent (the defaults)."""
        if settings is False:
            return None
        settings = dict(settings or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ValueError(f"unknown pair_filter setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        result = cls(**settings)
        if result.length_ratio is not None and result.length_ratio < 1:
            raise ValueError(f"pair_filter.length_ratio must be at least 1, got {result.length_ratio}")
        if not 0 < result.near_identical <= 1 or not 0 <= result.min_script_share <= 1:
            raise ValueError("pair_filter.near_identical must be in (0, 1] and min_script_share in [0, 1]")
        return result


class PairFilter:
    def __init__(self, settings: PairFilterSettings):
        self.settings = settings
        self.drops: Counter = Counter()
        self.kept = 0
        self.rules = [getattr(self, name) for name in RULES
                      if getattr(settings, name) not in (False, None)]

    @classmethod
    def from_settings(cls, settings: dict | bool | None) -> PairFilter | None:
        parsed = PairFilterSettings.from_dict(settings)
        return cls(parsed) if parsed else None

    def check(self, src: str, tgt: str, src_lang: str = "", tgt_lang: str = "") -> bool | tuple[bool, str]:
        """KEEP, or (False, reason) for the first rule the pair fails; counted either way."""
        for rule in self.rules:
            verdict = rule(src, tgt, src_lang, tgt_lang)
            if verdict is not KEEP:
                self.drops[verdict[1]] += 1
                return verdict
        self.kept += 1
        return KEEP

    def report(self) -> dict:
        return {"kept": self.kept, "dropped": dict(sorted(self.drops.items()))}

    # -- the rules, each (src, tgt, src_lang, tgt_lang) -> KEEP or (False, reason) -------------------------------

    def identical(self, src, tgt, *_):
        a, b = _comparable(src), _comparable(tgt)
        if a == b:
            return False, "identical"
        if self.settings.near_identical < 1 and a and b:
            matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
            if matcher.real_quick_ratio() >= self.settings.near_identical and \
                    matcher.ratio() >= self.settings.near_identical:
                return False, "identical"
        return KEEP

    def length_ratio(self, src, tgt, *_):
        weight = self.settings.dense_char_weight
        a, b = _weighted_length(src, weight), _weighted_length(tgt, weight)
        if max(a, b) > self.settings.length_ratio * max(min(a, b), 1.0):
            return False, "length_ratio"
        return KEEP

    def numbers(self, src, tgt, *_):
        a, b = _numbers(src), _numbers(tgt)
        return (False, "numbers") if a and b and not (a <= b or b <= a) else KEEP

    def urls(self, src, tgt, *_):
        return (False, "urls") if _urls(src) != _urls(tgt) else KEEP

    def script(self, src, tgt, src_lang, tgt_lang):
        for text, language in ((src, src_lang), (tgt, tgt_lang)):
            if "_" not in language:
                continue
            letters = _NOT_LETTER.sub("", text)
            if letters and len(outside_script(script_of(language)).sub("", letters)) / len(letters) < \
                    self.settings.min_script_share:
                return False, "script"
        return KEEP


def _comparable(text: str) -> str:
    return _NOT_WORD.sub("", unicodedata.normalize("NFKC", text).casefold())


def _weighted_length(text: str, dense_weight: float) -> float:
    text = text.strip()
    dense = len(_DENSE.findall(text))
    return len(text) - dense + dense_weight * dense


def _urls(text: str) -> set[str]:
    """The text's URLs, lower-cased, without the punctuation a sentence puts after one."""
    return {url.lower().rstrip(".,;:") for url in _URL.findall(text)}


def _numbers(text: str) -> frozenset[str]:
    """Numbers as their significant digits in ASCII: separators, leading and trailing zeros dropped, so "6 000",
    "6,000" and "٦٠٠٠" are one, and so are "1400万" and "14 million" (scale words differ between languages)."""
    found = set()
    for match in _NUMBER.findall(unicodedata.normalize("NFKC", text)):
        digits = "".join(str(unicodedata.digit(ch)) for ch in match if ch.isdigit())
        found.add(digits.strip("0") or "0")
    return frozenset(found)
