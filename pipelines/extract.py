"""The extract stage: crawl files -> unique sentences per language, as Parquet shards.

    python -m pipelines.extract --input 'crawl/*.warc.gz' --output out      # same flags as pipelines.mine

    MatchFiles -> read pages (per file, in chunks of pages) -> Reshuffle -> text stage (per page: main content,
    language, sentences, filters; each chunk's sentences saved) -> dedup (CombinePerKey on language + normalised
    text) -> shard by document -> Parquet per shard

A run stopped midway keeps the chunks it saved, and the next run on the same inputs and settings sends only the
others to the text stage (`ExtractStage.resume`, called by pipelines.job; docs/pipeline.md, Reruns).

The per-page work is pipelines.text (plain Python); this module only wires it. Every count the text stages
report becomes a Beam Metrics counter (namespace = stage, name = what: `read/pages`, `read/skipped:truncated`,
`filter/dropped:length:too-few-chars`...), so the Dataflow UI and the run's report show them live.
A language's sentences are never gathered on one worker: dedup groups copies of one sentence, and shards are
written one per worker task, `shards.sentences` rows each on average (a document's sentences stay together).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import typing
from collections import Counter
from collections.abc import Iterable

import apache_beam as beam
import pyarrow as pa
from apache_beam.io import fileio
from apache_beam.metrics import Metrics

from miner.config import check_number
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


# A crawl file's pages go to the text stage in chunks, each saved as the text stage finishes it (the unit a stopped
# run resumes from): at most this many pages, and at most this many characters of their content
PAGES_PER_CHUNK = 100
CHUNK_CHARACTERS = 16_000_000


class ReadPages(_TextStageDoFn):
    """A matched crawl file -> ((file, chunk number), pages) for each chunk of its pages (PAGES_PER_CHUNK, at most
    CHUNK_CHARACTERS of content); a bad record is a counted, logged skip, never the file's end. Resuming, a chunk a
    stopped run saved whole is not sent to the text stage: its file goes to the `saved` output."""

    SAVED = "saved"

    def __init__(self, settings: dict, resume: bool = False):
        super().__init__(settings)
        self.resume = resume
        self.resumed = Metrics.counter("extract", "resumed_pages")

    def process(self, metadata):
        source = metadata.path
        saved = saved_text_chunks(self.settings["output"], source) if self.resume else set()
        pages = number = 0
        for number, chunk in enumerate(page_chunks(self.stage.pages(source, self.tally))):
            pages += len(chunk)
            if number in saved:
                self.resumed.inc(len(chunk))
                yield beam.pvalue.TaggedOutput(self.SAVED, layout.text_chunk(self.settings["output"], source, number))
            else:
                yield (source, number), chunk
        log.info("read %s: %d pages", source, pages)  # progress: one line per crawl file


def page_chunks(pages) -> Iterable[list]:
    """Consecutive pages in chunks of at most PAGES_PER_CHUNK and CHUNK_CHARACTERS (a chunk holds one page at
    least): the same chunks for the same file on every run."""
    chunk, characters = [], 0
    for page in pages:
        if chunk and (len(chunk) == PAGES_PER_CHUNK or characters + len(page.content) > CHUNK_CHARACTERS):
            yield chunk
            chunk, characters = [], 0
        chunk.append(page)
        characters += len(page.content)
    if chunk:
        yield chunk


def saved_text_chunks(output: str, source: str) -> set[int]:
    """The numbers of a crawl file's chunks a stopped run saved whole (their Parquet footers read)."""
    from pipelines.preflight import parquet_problem

    found = storage.match(layout.text_chunk(output, source, "*"), allow_empty=True)
    numbers = {path: path.rsplit("/", 1)[-1].removesuffix(".parquet") for path in found}
    return {int(number) for path, number in numbers.items()
            if number.isdigit() and parquet_problem(path, None) is None}


class ChunkSentences(_TextStageDoFn):
    """A chunk of pages -> their filtered sentences in order (main content, language identification, splitting),
    saved with the chunk's counts (save_text_chunk) before they go on. Each worker logs its progress (`extract: n
    pages in s (rate/s)`) at most every `progress_every_s` seconds."""

    progress_every_s = PROGRESS_EVERY_S

    def setup(self):
        super().setup()
        self.progress = Progress(log, "extract", "pages", every_s=self.progress_every_s)

    def process(self, element):
        (source, number), pages = element
        before = Counter(self.tally.counts)
        sentences = []
        for page in pages:
            sentences.extend(self.stage.sentences(page, self.tally))
            self.progress.add(1)
        save_text_chunk(layout.text_chunk(self.settings["output"], source, number), sentences,
                        self.tally.counts - before)
        yield from sentences


SENTENCE_TYPES = {str: pa.string(), int: pa.int64(), float: pa.float64()}
SENTENCE_SCHEMA = pa.schema([(name, SENTENCE_TYPES[kind]) for name, kind in typing.get_type_hints(Sentence).items()])


def save_text_chunk(path: str, sentences: list[Sentence], counts: Counter) -> None:
    """A chunk's sentences, in order, with the text stage's counts for its pages (the report's counters, given
    again when a resumed run reads the chunk instead of extracting it)."""
    table = pa.table({name: [getattr(s, name) for s in sentences] for name in SENTENCE_SCHEMA.names},
                     schema=SENTENCE_SCHEMA.with_metadata({"counts": json.dumps(sorted(
                         [stage, what, n] for (stage, what), n in counts.items()))}))
    storage.write_parquet(path, table)


class LoadTextChunk(beam.DoFn):
    """A saved chunk's file -> its sentences, its counts given to the counters as extracting it gave them."""

    def setup(self):
        self.tally = metrics_tally()

    def process(self, path: str):
        table = storage.read_parquet(path)
        for stage, what, n in json.loads(table.schema.metadata[b"counts"]):
            self.tally.count(stage, what, n)
        for row in table.to_pylist():
            yield Sentence(**row)


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

    def __init__(self, settings: dict, resume: bool = False):
        super().__init__()
        self.settings, self.resume = settings, resume
        self.per_shard = with_defaults(settings, "shards", SHARD_DEFAULTS)["sentences"]

    def expand(self, begin):
        languages = set(self.settings.get("languages") or [])
        # files, then pages, spread over the workers where there are several (options.spreads_work); with one,
        # the pages stream from their files to the text stage instead of being held all at once by a grouping
        files = spread(begin | "Match" >> fileio.MatchFiles(self.settings["input"]), "SpreadFiles")
        read = files | "ReadPages" >> beam.ParDo(ReadPages(self.settings, self.resume)).with_outputs(
            ReadPages.SAVED, main="chunks")
        sentences = spread(read.chunks, "SpreadPages") | "Sentences" >> beam.ParDo(ChunkSentences(self.settings))
        if self.resume:  # a fresh run has no saved chunks: no branch for them
            saved = read[ReadPages.SAVED] | "SavedSentences" >> beam.ParDo(LoadTextChunk())
            sentences = (sentences, saved) | "WithSaved" >> beam.Flatten()
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
        """Before any stage runs (and in `--plan`): the text settings, the input glob matches files, the LID model
        exists."""
        from pipelines import preflight
        from pipelines.text.stage import TextStage

        TextStage.check_settings(settings)
        check_number("shards.sentences", with_defaults(settings, "shards", SHARD_DEFAULTS)["sentences"], 1, whole=True)
        preflight.check_input(settings.get("input"))
        preflight.check_lid_model((settings.get("lid") or {}).get("model"))
        preflight.check_lid_languages(settings.get("lid") or {})

    def __init__(self, settings: dict, manifests: dict):
        from pipelines.text.stage import TextStage

        if not settings.get("input"):
            raise ValueError("no input: set `input` in the config or give --input")
        TextStage.check_settings(settings)  # bad settings fail here, before a pipeline starts
        self.settings, self.resuming = settings, False
        self.scratch = [layout.text_chunks(settings["output"])]  # removed once the stage is finished

    def resume(self) -> list[str]:
        """Keep the chunks of pages a stopped run of this stage saved, and extract only the others (pipelines.job
        calls this where the stopped run was run on the same inputs and settings, so its chunks are what this run
        would extract); returns the files kept. Each is checked where it is read (ReadPages)."""
        self.resuming = True
        kept = layout.saved_files(self.settings["output"], "extract")
        log.info("extract: resuming a stopped run with the same inputs and settings: the %s chunks of pages it "
                 "saved are kept", f"{len(kept):,}")
        return kept

    def __call__(self, pipeline):
        return pipeline | "extract/Extract" >> ExtractSentences(self.settings, self.resuming)

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
