"""The whole text stage on the bundled web sample: every known translation comes out as a sentence, in its
language, in document order, with the boilerplate around it left out."""

import csv

import pytest

from pipelines.settings import load_settings
from pipelines.text.dedup import dedup, normalise
from pipelines.text.records import Tally
from pipelines.text.stage import TextStage
from tests.conftest import REPO

SAMPLE = REPO / "sample" / "web"


@pytest.fixture(scope="module", params=["trafilatura", "resiliparse"])
def sample_sentences(request):
    """The sample's sentences with each main-content extractor (extract.extractor)."""
    settings = load_settings()
    settings["extract"] = {**(settings.get("extract") or {}), "extractor": request.param}
    return text_stage_run(settings, SAMPLE / "sample.warc.gz")


def text_stage_run(settings: dict, path) -> tuple[list, Tally]:
    """The whole text stage over one crawl file: its sentences and counts."""
    stage = TextStage(settings)
    tally = Tally(log_skips=False)
    try:
        return list(stage.file_sentences(str(path), tally)), tally
    finally:
        stage.close()


def test_known_sentences_come_out_in_their_language(sample_sentences):
    sentences, _ = sample_sentences
    found = {(s.language, normalise(s.text)) for s in sentences}
    with open(SAMPLE / "pairs.tsv", encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE) if r["kind"] == "sentence"]
    sides = {(r[f"{side}_lang"], normalise(r[f"{side}_text"])) for r in rows for side in ("src", "tgt")}
    missing = sides - found
    assert len(missing) <= 0.03 * len(sides), sorted(missing)[:10]


def test_boilerplate_is_left_out(sample_sentences):
    sentences, _ = sample_sentences
    texts = " ".join(s.text for s in sentences).lower()
    for furniture in ("cookie", "all rights reserved", "newsletter"):
        assert furniture not in texts


def test_order_and_counts(sample_sentences):
    sentences, tally = sample_sentences
    assert tally.of("read")["pages"] == 30 and tally.of("extract")["documents"] == 30
    assert tally.of("lid")["documents"] == 30
    assert tally.of("filter")["kept"] == len(sentences)
    by_document: dict = {}
    for s in sentences:
        by_document.setdefault(s.document_id, []).append((s.paragraph_index, s.sentence_index))
    assert len(by_document) == 30
    assert all(positions == sorted(positions) for positions in by_document.values())
    unique = list(dedup(sentences, Tally()))
    assert len(unique) <= len(sentences)


@pytest.mark.parametrize("section, value, message", [
    ("read", {"max_bytes": 1}, "read: unknown setting"),
    ("extract", {"time_limit": 3}, "extract: unknown setting"),
    ("extract", {"extractor": "boilerpipe"}, "extract.extractor"),
    ("filters", {"lenght": {}}, "unknown filter"),
    ("lid", {"model": None}, "lid.model"),
    ("lid", {"model": "combined", "short_words": -1}, "lid.short_words"),
    ("lid", {"model": "combined", "short_words": "3"}, "lid.short_words"),
])
def test_bad_settings_fail_before_any_data_is_read(section, value, message):
    settings = load_settings()
    settings[section] = value
    with pytest.raises(ValueError, match=message):
        TextStage.check_settings(settings)


def test_routine_skips_are_all_counted_and_a_sample_logged(monkeypatch, caplog):
    from pipelines.text import records

    monkeypatch.setattr(records, "_routine_logged", records.Counter())
    tally = Tally()
    with caplog.at_level("DEBUG", logger="pipelines.text"):
        for i in range(records.ROUTINE_LOG_SAMPLE + 3):
            tally.skip("lid", "too-short", f"crawl.warc.gz#{i}", "Home")
        tally.skip("read", "malformed", "crawl.warc.gz#99", "bad header")
    assert tally.of("lid") == {"skipped:too-short": records.ROUTINE_LOG_SAMPLE + 3}
    info = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
    assert info[:records.ROUTINE_LOG_SAMPLE] == [f"crawl.warc.gz#{i}: lid skipped (too-short): Home"
                                                for i in range(records.ROUTINE_LOG_SAMPLE)]
    assert len(info) == records.ROUTINE_LOG_SAMPLE + 1 and "further too-short skips" in info[-1]
    debug = [r.getMessage() for r in caplog.records if r.levelname == "DEBUG"]
    assert debug == [f"crawl.warc.gz#{i}: lid skipped (too-short): Home"
                     for i in range(records.ROUTINE_LOG_SAMPLE, records.ROUTINE_LOG_SAMPLE + 3)]
    # damaged input is logged every time, at WARNING
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        "crawl.warc.gz#99: read skipped (malformed): bad header"]
