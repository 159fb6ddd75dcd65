"""Exact dedup of normalised sentences within a language: first occurrence kept (by crawl position), copies counted."""

import dataclasses
import itertools

from hypothesis import given
from hypothesis import strategies as st

from pipelines.text.dedup import dedup, dedup_key, keep_first, normalise
from pipelines.text.records import Sentence, Tally


def sentence(text, language="eng_Latn", source="a.warc.gz", position=0, paragraph=0, index=0):
    return Sentence(text=text, language=language, lid_score=0.9, url=f"https://example.org/{position}",
                    document_id=f"doc-{position}", paragraph_index=paragraph, sentence_index=index, source=source, position=position)


def test_normalise_folds_width_case_punctuation_and_space():
    assert normalise("  Hello,   WORLD!  ") == "hello world"
    assert normalise("ＡＢＣ　ｄｅｆ") == normalise("abc def")
    assert normalise("Straße") == normalise("STRASSE")
    assert normalise("İstanbul'da") == normalise("istanbul'da") == "istanbul da"  # casefold wrote i + U+0307
    assert normalise("«Привет» — мир.") == "привет мир"
    assert normalise("Born in 2019.") != normalise("Born in 2020.")
    # invisible format characters: a soft hyphen, a zero-width space, a byte-order mark read as the same page text
    assert normalise("Hel\u00adlo wor\u200bld") == normalise("\ufeffHello world") == "hello world"


def test_same_text_in_two_languages_is_not_a_duplicate():
    assert dedup_key(sentence("Taxi", "eng_Latn")) != dedup_key(sentence("Taxi", "deu_Latn"))


def test_dedup_keeps_first_by_crawl_position_and_counts_copies():
    later = sentence("The museum is open.", position=7)
    first = sentence("the museum is open", position=2, paragraph=1)
    other = sentence("A different sentence.", position=5)
    tally = Tally()
    out = list(dedup([later, other, first], tally))
    assert [s.text for s in out] == ["the museum is open", "A different sentence."]
    assert out[0].copies == 2 and out[0].position == 2 and out[0].paragraph_index == 1
    assert tally.of("dedup") == {"sentences": 3, "unique": 2}


@given(st.permutations(range(5)))
def test_keep_first_is_order_independent(order):
    copies = [sentence("Same words here.", position=p) for p in range(5)]
    merged = [copies[i] for i in order]
    result = merged[0]
    for other in merged[1:]:
        result = keep_first(result, other)
    assert result == dataclasses.replace(copies[0], copies=5)


def test_keep_first_is_associative():
    a, b, c = (sentence("Same.", position=p) for p in (3, 1, 2))
    for x, y, z in itertools.permutations([a, b, c]):
        assert keep_first(keep_first(x, y), z) == keep_first(x, keep_first(y, z))
