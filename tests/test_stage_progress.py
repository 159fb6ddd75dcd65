"""Long stages show progress: each worker logs a count and a rate, at most every `progress_every_s` seconds."""

import logging
import re

from pipelines.embed import EncoderModelHandler
from pipelines.extract import ChunkSentences, ReadPages
from pipelines.settings import load_settings
from tests.conftest import REPO

RATE = r"in \d+ s \([\d.,]+ {unit}/s\)"


def test_the_embed_handler_logs_sentences_and_their_rate(caplog):
    handler = EncoderModelHandler("char-ngram")
    handler.progress_every_s = 0
    model = handler.load_model()
    with caplog.at_level(logging.INFO, logger="pipelines.embed"):
        handler.run_inference([("deu_Latn", ["Guten Tag.", "Hallo."]), ("eng_Latn", ["Good day."])], model)
        handler.run_inference([("eng_Latn", ["Hello."])], model)
    assert re.search(r"embed: 3 sentences " + RATE.format(unit="sentences"), caplog.text)
    assert re.search(r"embed: 4 sentences " + RATE.format(unit="sentences"), caplog.text)


def test_a_quiet_interval_logs_nothing_until_it_passes(caplog):
    handler = EncoderModelHandler("char-ngram")   # the default: 10 s between lines
    model = handler.load_model()
    with caplog.at_level(logging.INFO, logger="pipelines.embed"):
        handler.run_inference([("deu_Latn", ["Guten Tag."])], model)
    assert "embed:" not in caplog.text


def test_the_text_stage_logs_pages_and_their_rate(caplog, monkeypatch, tmp_path):
    monkeypatch.setattr(ChunkSentences, "progress_every_s", 0)
    settings = {**load_settings(), "output": str(tmp_path)}  # where the chunks' sentences are saved
    reader, splitter = ReadPages(settings), ChunkSentences(settings)
    reader.setup(), splitter.setup()
    try:
        with caplog.at_level(logging.INFO, logger="pipelines.extract"):
            file = type("Metadata", (), {"path": str(REPO / "sample" / "web" / "sample.warc.gz")})()
            chunks = list(reader.process(file))
            for chunk in chunks:
                list(splitter.process(chunk))
    finally:
        reader.teardown(), splitter.teardown()
    pages = sum(len(pages) for _, pages in chunks)
    assert re.search(rf"extract: {pages} pages " + RATE.format(unit="pages"), caplog.text)


def test_the_pairs_stage_logs_the_similarities_it_computed_and_their_rate(tmp_path, caplog, monkeypatch):
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.mine import run
    from pipelines.pairs.join import CompareOnShard
    from tests.test_pipeline_pairs import settings_for, write_shards

    monkeypatch.setattr(CompareOnShard, "progress_every_s", 0)
    output = str(tmp_path / "out")
    write_shards(output, 2)
    with caplog.at_level(logging.INFO, logger="pipelines.pairs"):
        report = run(settings_for(output, "max"), PipelineOptions([]), ["embed", "pairs"])
    counted = re.findall(r"pairs: ([\d,]+) similarities " + RATE.format(unit="similarities"), caplog.text)
    assert counted and int(counted[-1].replace(",", "")) == report["counters"]["pairs"]["pairs"]["similarities_computed"]
