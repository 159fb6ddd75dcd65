"""The extract stage: crawl files -> unique sentences per language, as Parquet shards.

    python -m pipelines.extract --input 'crawl/*.warc.gz' --output out      # same flags as pipelines.mine

    MatchFiles -> read pages (per file) -> Reshuffle -> text stage (per page: main content, language, sentences,
    filters) -> dedup (CombinePerKey on language + normalised text) -> shard by document -> Parquet per shard

The per-page work is pipelines.text (plain Python); this module only wires it. Every count the text stages
report becomes a Beam Metrics counter (namespace = stage, name = what: `read/pages`, `read/skipped:truncated`,
`filter/dropped:length:too-few-chars`...), so the Dataflow UI and the run's report show them live.
A language's sentences are never gathered on one worker: dedup groups copies of one sentence, and shards are
written one per worker task, `shards.sentences` rows each on average (a document's sentences stay together).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math

import apache_beam as beam
import pyarrow as pa
from apache_beam.io import fileio
from apache_beam.metrics import Metrics

from miner.console import PROGRESS_EVERY_S, Progress
from pipelines import layout, storage
from pipelines.options import spread
from pipelines.settings import with_defaults
from pipelines.text.dedup import dedup_key, keep_first
from pipelines.text.records import Sentence, Tally

log = logging.getLogger("pipelines.extract")
SHARD_DEFAULTS = {"sentences": 100_000}
SENTENCE_COLUMNS = [f.name for f in dataclasses.fields(Sentence)]


def metrics_tally() -> Tally:
    """A Tally whose every count is also a Beam counter (created on first use, cached)."""
    counters: dict[tuple[str, str], object] = {}

    def on_count(stage: str, what: str, n: int) -> None:
        key = (stage, what)
        if key not in counters:
            counters[key] = Metrics.counter(stage, what)
        counters[key].inc(n)

    return Tally(on_count=on_count)


class _TextStageDoFn(beam.DoFn):
    """A DoFn that owns a TextStage (made per worker in `setup`) and reports its counts as Beam counters."""

    def __init__(self, settings: dict):
        self.settings = settings

    def setup(self):
        from pipelines.text.stage import TextStage

        self.stage = TextStage(self.settings)
        self.tally = metrics_tally()

    def teardown(self):
        if hasattr(self, "stage"):
            self.stage.close()


class ReadPages(_TextStageDoFn):
    """A matched crawl file -> its pages; a bad record is a counted, logged skip, never the file's end."""

    def process(self, metadata):
        pages = 0
        for page in self.stage.pages(metadata.path, self.tally):
            pages += 1
            yield page
        log.info("read %s: %d pages", metadata.path, pages)  # progress: one line per crawl file


class PageSentences(_TextStageDoFn):
    """A page -> its filtered sentences in order (main content, language identification, splitting). Each worker
    logs its progress (`extract: n pages in s (rate/s)`) at most every `progress_every_s` seconds."""

    progress_every_s = PROGRESS_EVERY_S

    def setup(self):
        super().setup()
        self.progress = Progress(log, "extract", "pages", every_s=self.progress_every_s)

    def process(self, page):
        yield from self.stage.sentences(page, self.tally)
        self.progress.add(1)


def shard_of(sentence: Sentence, count: int) -> int:
    """By document, so a document's sentences share a shard (CMLM reads consecutive sentences)."""
    digest = hashlib.blake2b(sentence.document_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def shard_count(rows: int, per_shard: int) -> int:
    return max(1, math.ceil(rows / per_shard))


def sentence_table(sentences: list[Sentence]) -> pa.Table:
    rows = sorted(sentences, key=lambda s: s.order_key)
    columns = {name: [getattr(s, name) for s in rows] for name in SENTENCE_COLUMNS}
    columns["sid"] = [dedup_key(s) for s in rows]
    return pa.table(columns)


def write_sentence_shard(output: str, language: str, shard: int, count: int, sentences: list[Sentence]) -> dict:
    path = layout.sentence_shard(output, language, shard, count)
    storage.write_parquet(path, sentence_table(sentences))
    return {"language": language, "shard": shard, "path": path, "rows": len(sentences)}


class WriteSentenceShard(beam.DoFn):
    def __init__(self, output: str):
        self.output = output

    def process(self, element, counts: dict):
        (language, shard), sentences = element
        yield write_sentence_shard(self.output, language, shard, counts[language], list(sentences))


class ExtractSentences(beam.PTransform):
    """PBegin -> PCollection of shard manifest entries ({language, shard, path, rows})."""

    def __init__(self, settings: dict):
        super().__init__()
        self.settings = settings
        self.per_shard = with_defaults(settings, "shards", SHARD_DEFAULTS)["sentences"]

    def expand(self, begin):
        languages = set(self.settings.get("languages") or [])
        # files, then pages, spread over the workers where there are several (options.spreads_work); with one,
        # the pages stream from their files to the text stage instead of being held all at once by a grouping
        files = spread(begin | "Match" >> fileio.MatchFiles(self.settings["input"]), "SpreadFiles")
        pages = spread(files | "ReadPages" >> beam.ParDo(ReadPages(self.settings)), "SpreadPages")
        sentences = pages | "Sentences" >> beam.ParDo(PageSentences(self.settings))
        if languages:
            sentences = sentences | "Languages" >> beam.Filter(lambda s: s.language in languages)
        unique = (sentences
                  | "DedupKey" >> beam.Map(lambda s: (dedup_key(s), s))
                  | "Dedup" >> beam.CombinePerKey(_KeepFirst())
                  | "Unique" >> beam.Values())
        per_shard = self.per_shard
        counts = (unique
                  | "Language" >> beam.Map(lambda s: (s.language, 1))
                  | "Count" >> beam.CombinePerKey(sum)
                  | "Shards" >> beam.MapTuple(lambda lang, n: (lang, shard_count(n, per_shard))))
        counts_view = beam.pvalue.AsDict(counts)
        written = (unique
                   | "ShardKey" >> beam.Map(lambda s, c: ((s.language, shard_of(s, c[s.language])), s), counts_view)
                   | "GroupShard" >> beam.GroupByKey()
                   | "Write" >> beam.ParDo(WriteSentenceShard(self.settings["output"]), counts_view))
        # the versions a worker decides the text with: a remote runner's workers install their own (setup.py
        # bounds them below only), which may not be the launcher's that the stage's dependencies record
        libraries = (begin | "Libraries" >> beam.Create([self.settings.get("extract") or {}], reshuffle=False)
                     | "WorkerLibraries" >> beam.Map(worker_libraries))
        return (written, libraries) | "Entries" >> beam.Flatten()


WORKER_LIBRARIES = "worker_libraries"


def worker_libraries(extract_section: dict) -> dict:
    """The stage's entry of the library versions on the worker that runs it (pipelines.dependencies's list)."""
    from pipelines.dependencies import extract_libraries

    return {WORKER_LIBRARIES: extract_libraries(extract_section)}


class _KeepFirst(beam.CombineFn):
    """Dedup as a combiner: the copy that comes first in the crawl, with the number of copies."""

    def create_accumulator(self):
        return None

    def add_input(self, accumulator, sentence):
        return sentence if accumulator is None else keep_first(accumulator, sentence)

    def merge_accumulators(self, accumulators):
        merged = None
        for accumulator in accumulators:
            if accumulator is not None:
                merged = accumulator if merged is None else keep_first(merged, accumulator)
        return merged

    def extract_output(self, accumulator):
        return accumulator


def sentences_manifest(entries: list[dict]) -> dict:
    """Per language: its row count and its shards in order. A shard number no document hashed to has no file
    and no entry; later stages refer to shards by their position in this list, never by number. With the library
    versions a worker ran (`worker_libraries`), where the stage's entries carry them."""
    languages: dict[str, dict] = {}
    shards = [entry for entry in entries if WORKER_LIBRARIES not in entry]
    for entry in sorted(shards, key=lambda e: (e["language"], e["shard"])):
        language = languages.setdefault(entry["language"], {"rows": 0, "shards": []})
        language["rows"] += entry["rows"]
        language["shards"].append({"path": entry["path"], "rows": entry["rows"]})
    manifest = {"stage": "extract", "languages": languages}
    libraries = [entry[WORKER_LIBRARIES] for entry in entries if WORKER_LIBRARIES in entry]
    if libraries:
        manifest[WORKER_LIBRARIES] = libraries[0]
    return manifest


class ExtractStage:
    """The stage as pipelines.mine runs it."""

    @staticmethod
    def check(settings: dict) -> None:
        """Before any stage runs: the input glob matches files, the LID model exists."""
        from pipelines import preflight

        preflight.check_input(settings.get("input"))
        preflight.check_lid_model((settings.get("lid") or {}).get("model"))
        preflight.check_lid_languages(settings.get("lid") or {})

    def __init__(self, settings: dict, manifests: dict):
        from pipelines.text.stage import TextStage

        if not settings.get("input"):
            raise ValueError("no input: set `input` in the config or give --input")
        TextStage.check_settings(settings)  # bad settings fail here, before a pipeline starts
        self.settings = settings

    def __call__(self, pipeline):
        return pipeline | "extract/Extract" >> ExtractSentences(self.settings)

    def manifest(self, entries: list[dict]) -> dict:
        from pipelines.dependencies import libraries_note

        manifest = sentences_manifest(entries)
        note = libraries_note(manifest, self.settings)
        if note:
            log.warning("extract: %s", note)
        return manifest


def main(argv: list[str] | None = None) -> int:
    import sys

    from pipelines.job import main as job_main

    return job_main(["--stages", "extract", *(argv if argv is not None else sys.argv[1:])], {"extract": ExtractStage},
                    prog="python -m pipelines.extract", description=__doc__)


if __name__ == "__main__":
    from pipelines.job import end_process

    end_process(main())
