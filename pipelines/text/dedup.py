"""Exact dedup of normalised sentences within a language, keeping the first occurrence and a count of copies.

Normalisation (what counts as "the same sentence"):
  1. Unicode NFKC (full-width and compatibility forms fold: "ＡＢＣ" = "ABC", "ﬁ" = "fi"), and invisible format
     characters dropped (category Cf: a soft hyphen, a zero-width space or joiner, a byte-order mark);
  2. case folded (str.casefold: "Straße" = "STRASSE"; "İstanbul" = "istanbul": casefold writes the dotted capital
     I as i and a combining dot, which is dropped after an i);
  3. punctuation and symbols removed (Unicode categories P* and S*): "Hello, world!" = "hello world";
  4. whitespace collapsed to single spaces and trimmed.
Digits are kept: "in 2019" and "in 2020" are different sentences and can be different translations.

"First" is by `Sentence.order_key` (file, record, paragraph, sentence), not by arrival, so any runner, in any
order, over any sharding, keeps the same record: `keep_first` is associative and commutative, which is what a
Beam CombineFn needs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import unicodedata
from collections.abc import Iterable, Iterator

import regex

from pipelines.text.records import Sentence, Tally

_PUNCTUATION_OR_SYMBOL = regex.compile(r"[\p{P}\p{S}]")
_FORMAT = regex.compile(r"\p{Cf}")


def normalise(text: str) -> str:
    text = _FORMAT.sub("", unicodedata.normalize("NFKC", text))  # "Hel\u00adlo" is "Hello" on the page
    text = _PUNCTUATION_OR_SYMBOL.sub(" ", text.casefold().replace("i\u0307", "i"))
    return " ".join(text.split())  # str.split's whitespace is the regex \s (Unicode); three times faster


def dedup_key(sentence: Sentence) -> str:
    """`<language>:<hash of the normalised text>`: 16 bytes of BLAKE2b are collision-free at crawl scale
    (2^64 sentences per language before a 50% chance of one collision)."""
    digest = hashlib.blake2b(normalise(sentence.text).encode("utf-8"), digest_size=16).hexdigest()
    return f"{sentence.language}:{digest}"


def keep_first(a: Sentence, b: Sentence) -> Sentence:
    """Of two copies, the earlier one (by `order_key`), carrying both copy counts."""
    first = a if a.order_key <= b.order_key else b
    return dataclasses.replace(first, copies=a.copies + b.copies)


def dedup(sentences: Iterable[Sentence], tally: Tally) -> Iterator[Sentence]:
    """One pass in memory: the unique sentences in order of first occurrence, each with its `copies`.

    For a file or a sample; the Beam job groups by `dedup_key` instead, so no worker holds a whole language."""
    unique: dict[str, Sentence] = {}
    for sentence in sentences:
        key = dedup_key(sentence)
        seen = unique.get(key)
        unique[key] = sentence if seen is None else keep_first(seen, sentence)
        tally.count("dedup", "sentences")
    tally.count("dedup", "unique", len(unique))
    yield from sorted(unique.values(), key=lambda s: s.order_key)
