"""Sentence filters: each keeps or drops with a reason; the chain counts drops by filter and reason."""

import dataclasses
import re

import pytest

from pipelines.text.filters import (
    LengthFilter,
    LetterShareFilter,
    LidScoreFilter,
    RepetitionFilter,
    ScriptFilter,
    apply_filters,
    build_filters,
    check,
)
from pipelines.text.records import Sentence, Tally


def sentence(text: str, language: str = "eng_Latn", lid_score: float = 0.99) -> Sentence:
    return Sentence(text=text, language=language, lid_score=lid_score, url="https://example.org/a", document_id="d1",
                    paragraph_index=0, sentence_index=0)


@pytest.mark.parametrize("text, language, verdict", [
    ("The library reopens on Monday after two years of work.", "eng_Latn", True),
    ("Home", "eng_Latn", (False, "too-few-chars")),
    ("Terms and conditions", "eng_Latn", True),
    ("Read more here", "eng_Latn", True),
    ("One two", "eng_Latn", (False, "too-few-chars")),
    ("Next page please", "eng_Latn", True),
    ("x" * 600, "eng_Latn", (False, "too-many-chars")),
    ("图书馆周一重新开放。", "zho_Hans", True),         # 9 letters ~ 5.6 tokens: unspaced scripts count letters
    ("首页新闻联系", "zho_Hans", (False, "too-few-chars")),
])
def test_length(text, language, verdict):
    assert LengthFilter()(sentence(text, language)) == verdict


def test_length_counts_tokens():
    assert LengthFilter(min_chars=1)(sentence("Contact us", "eng_Latn")) == (False, "too-few-tokens")
    assert LengthFilter(max_tokens=5)(sentence("one two three four five six", "eng_Latn")) == (False,
                                                                                               "too-many-tokens")


@pytest.mark.parametrize("text, language, verdict", [
    ("Библиотека снова открывается в понедельник.", "rus_Cyrl", True),
    ("Biblioteka snova otkryvaetsya v ponedelnik.", "rus_Cyrl", (False, "script-mismatch")),
    ("图书馆在周一重新开放，欢迎大家。", "zho_Hans", True),
    ("Cookies help us deliver our services.", "zho_Hans", (False, "script-mismatch")),
    ("東京の図書館は月曜日に再開します。", "jpn_Jpan", True),
    ("서울 도서관은 月曜日 다시 문을 엽니다.", "kor_Hang", True),
    ("12345 678", "eng_Latn", (False, "no-letters")),
    ("コーヒーとケーキのセール", "jpn_Jpan", True),          # "ー" is Common by script, Japanese by its extensions
    ("हिन्दी में लिखा गया वाक्य", "hin_Deva", True),              # vowel signs are marks, not letters: not counted
    ("Ein ganz normaler deutscher Satz.", "deu_Qaaa", (False, "script-mismatch")),  # a code Unicode lacks
])
def test_script(text, language, verdict):
    assert ScriptFilter()(sentence(text, language)) == verdict


def test_letter_share_counts_indic_marks_as_letters():
    assert LetterShareFilter()(sentence("पुस्तकालय सोमवार को फिर से खुलेगा।", "hin_Deva")) is True
    assert LetterShareFilter()(sentence("Tel. +49 30 1234-5678 / 2024-01-01", "deu_Latn")) == (False, "few-letters")


def test_repetition():
    assert RepetitionFilter()(sentence("This is amazing!!!!!!")) == (False, "repeated-chars")
    assert RepetitionFilter()(sentence("Bookkeeping needs three letters in a row.")) is True
    # a gap of spaces a plain-text (WET) record keeps is layout: it dropped the sentence as repeated characters
    assert RepetitionFilter()(sentence("Some text     with a gap\u00a0\u00a0\u00a0\u00a0\u00a0of spaces.")) is True
    assert RepetitionFilter()(sentence("ha ha ha ha ha ha ha ha ha ha ha ha ha ha")) == (False, "few-distinct-chars")


def test_lid_score_with_per_language_floor():
    lid = LidScoreFilter(min_score=0.5, per_language={"bos_Latn": 0.3})
    assert lid(sentence("Some text here.", lid_score=0.4)) == (False, "low-lid-score")
    assert lid(sentence("Neki tekst ovdje.", "bos_Latn", lid_score=0.4)) is True


def test_build_filters_defaults_overrides_and_errors():
    names = [f.name for f in build_filters()]
    assert names == ["length", "letters", "repetition", "script", "lid_score"]
    filters = build_filters({"length": {"min_chars": 3}, "repetition": False})
    assert [f.name for f in filters] == ["length", "letters", "script", "lid_score"]
    assert filters[0].min_chars == 3
    with pytest.raises(ValueError, match="unknown filter"):
        build_filters({"lenght": {}})
    with pytest.raises(ValueError, match=r"filters.length: unknown option"):
        build_filters({"length": {"min_char": 3}})


@pytest.mark.parametrize("config, message", [
    ({"length": {"min_chars": 600, "max_chars": 500}}, "filters.length.min_chars 600 is above max_chars 500"),
    ({"length": {"min_tokens": 2.5}}, "filters.length.min_tokens must be a whole number 0 or more, got 2.5"),
    ({"length": {"max_chars": -1}}, "filters.length.max_chars must be a whole number 0 or more"),
    ({"letters": {"min_share": 1.2}}, "filters.letters.min_share must be a number from 0 to 1, got 1.2"),
    ({"script": {"min_share": "high"}}, "filters.script.min_share must be a number from 0 to 1, got 'high'"),
    ({"repetition": {"max_run": 1}}, "filters.repetition.max_run must be a whole number 2 or more, got 1"),
    ({"repetition": {"min_distinct_share": -0.1}}, "filters.repetition.min_distinct_share must be a number from 0"),
    ({"lid_score": {"min_score": 1.5}}, "filters.lid_score.min_score must be a number from 0 to 1, got 1.5"),
    ({"lid_score": {"per_language": {"bos_Latn": 2}}}, "filters.lid_score.per_language.bos_Latn must be a number"),
])
def test_settings_that_would_drop_every_sentence_are_errors(config, message):
    # each used to run, and drop every sentence (or none) without a word
    with pytest.raises(ValueError, match=re.escape(message)):
        build_filters(config)


def test_chain_counts_first_drop_reason():
    tally = Tally()
    good = sentence("The museum opens a new hall for children in May.")
    rows = [good, sentence("Menu"), dataclasses.replace(good, lid_score=0.1), sentence("Wow!!!!!!!! Really great.")]
    kept = list(apply_filters(rows, build_filters(), tally))
    assert kept == [good]
    assert tally.of("filter") == {"kept": 1, "dropped:length:too-few-chars": 1,
                                  "dropped:lid_score:low-lid-score": 1, "dropped:repetition:repeated-chars": 1}
    assert check(good, build_filters()) == (True, "")
