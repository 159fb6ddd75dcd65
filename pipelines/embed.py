"""The embed stage: sentence shards -> vectors per shard, with Beam's RunInference and our encoders.

    python -m pipelines.embed --output output            # after the extract stage; same flags as pipelines.mine

`EncoderModelHandler` is the ModelHandler for any spec `encoders.load_encoder` takes: the model is loaded once
per worker process (once per machine on GPUs, where the model is shared across processes). Each element is a
fixed chunk of a shard (`embed.batch_size` rows: rows 0-1023, 1024-2047, ...) that the encoder embeds in one call,
with its own token-budget batching inside (sorted by length, so padding stays small). Fixed chunks, not
RunInference's own batching, because a vector's last bits depend on which sentences share its batch, and
bundles differ between runners and runs: this way every runner writes the same bytes. A shard's last chunk short of
`embed.batch_size` rows, and every shard smaller than one (a crawl's long tail of small languages), are packed with
other languages' into calls of up to `embed.batch_size` sentences, one language a sentence
(`embed.pack_partial_chunks`; packs_of_partial_chunks fixes them from the manifest alone). Vectors are written per
sentence shard, row i = row i, as `.npy` (float16 by default: half the storage, and well inside the precision the
margin needs; `embed.dtype: binary` stores packed binary codes, 1 bit a dimension: encoders.binary). Sign codes
are made after each language's mean vector is removed (`embed.binary_center: language`, the default): the float
vectors' column sums are added up per language in fixed point first (exact in any order, so the same bits on every
runner), and the shards are written once that mean is known.

Each chunk is saved as it leaves the encoder (`embed/chunks/`), and the shards are written from the saved chunks:
a run stopped midway keeps what it embedded, and the next run on the same inputs and settings embeds only the rest
(`EmbedStage.resume`, called by pipelines.job; docs/pipeline.md, Reruns). The chunks go once the stage finished.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import KeyedModelHandler, ModelHandler, PredictionResult, RunInference

from encoders import binary
from miner.console import PROGRESS_EVERY_S, Progress
from pipelines import layout, storage
from pipelines.options import spread
from pipelines.settings import binary_code_written, centres_languages, code_of, embed_settings, refines_pairs

log = logging.getLogger("pipelines.embed")
class EncoderModelHandler(ModelHandler[list, PredictionResult, object]):
    """RunInference's view of an encoder: a chunk of texts in, its unit vectors (a matrix) out. Each worker logs
    its progress (`embed: n sentences in s (rate/s)`) at most every `progress_every_s` seconds."""

    progress_every_s = PROGRESS_EVERY_S

    def __init__(self, spec: str, options: dict | None = None, share_model: bool = False,
                 dtype: str = "float32"):
        super().__init__()
        self.spec, self.options, self.share = spec, dict(options or {}), share_model
        self.dtype = dtype  # "binary": packed codes (encoders.binary) leave the encoder, 1 bit a dimension
        self._progress: Progress | None = None  # made on a worker, at its first batch

    def load_model(self):
        from encoders import load_encoder

        spec = self.spec
        if storage.is_remote(spec):
            spec = storage.local_folder(spec)  # a checkpoint staged on cloud storage: copied once per process
        return load_encoder(spec, **self.options)

    def run_inference(self, batch: Sequence[tuple[str | tuple, list]], model, inference_args=None
                      ) -> Iterable[PredictionResult]:
        """Each element is (language, texts), or (one language per text, texts) for a pack of several languages'
        partial chunks: the language reaches encoders that use it (an ensemble's shares, per-language PCR)."""
        truncated_before = truncated_counts(model)
        results = [PredictionResult(len(texts), model.encode(list(texts), language=language, dtype=self.dtype))
                   for language, texts in batch]
        for name, n in truncated_counts(model).items():
            Metrics.counter("embed", name).inc(n - truncated_before.get(name, 0))
        if self._progress is None:
            self._progress = Progress(log, "embed", "sentences", every_s=self.progress_every_s)
        self._progress.add(sum(len(texts) for _, texts in batch))
        return results

    def batch_elements_kwargs(self):
        return {"min_batch_size": 1, "max_batch_size": 1}  # an element is already a batch of `embed.batch_size`

    def share_model_across_processes(self) -> bool:
        return self.share

    def get_metrics_namespace(self) -> str:
        return "embed"


def truncated_counts(model) -> dict[str, int]:
    """The encoder's running counts of sentences cut at its maximum length (`truncated`; an ensemble's by member,
    `truncated:<member>`): the embed stage's counters of the same names, in the report."""
    return {k: n for k, n in getattr(model, "stats", {}).items() if k.startswith("truncated")}


def handler_from_settings(settings: dict) -> KeyedModelHandler:
    values = embed_settings(settings)
    options = {k: v for k, v in (settings.get("encoder_options") or {}).items() if v is not None}
    share = values["share_model"]
    if share == "auto":  # one model per GPU machine, not one per process: GPU memory is the scarce thing
        share = options.get("device", "auto") != "cpu" and _gpu_visible()
    # vectors leave the encoder in the stored dtype, so the shuffle to the writers carries float16 (half of float32)
    # or packed codes; centred sign codes need float32 there: they are made when written, once the means are known
    dtype = "float32" if centres_languages(settings) else values["dtype"]
    return KeyedModelHandler(EncoderModelHandler(settings["encoder"], options, bool(share), dtype))


def _gpu_visible() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


class ReadShardChunks(beam.DoFn):
    """A sentence shard's chunks of `chunk` rows, ((language, shard, first row), (language, texts)) each, to embed.
    Resuming (`resume`), a chunk a stopped run saved whole goes to the `saved` output as the reference the encoder's
    chunks get (SaveChunk), not to the encoder: the shard's saved chunks are listed once, their headers read. A
    chunk `packs` puts in a pack goes to the `packed` output, (pack, (language, shard, first row, texts, saved)),
    saved or not: the pack is embedded whole or not at all, so its vectors are the same bits after a resume."""

    SAVED, PACKED = "saved", "packed"

    def __init__(self, output: str, chunk: int, resume: bool = False, code: str | None = None,
                 centre: bool = False, packs: dict | None = None):
        self.output, self.chunk, self.resume, self.code, self.centre = output, chunk, resume, code, centre
        self.packs = packs or {}
        self.resumed = Metrics.counter("embed", "resumed_sentences")

    def process(self, task):
        language, shard, rows = task["language"], task["shard"], task["rows"]
        saved = self._saved(language, shard, rows) if self.resume else {}
        texts = None
        for start in range(0, rows, self.chunk):
            pack, kept = self.packs.get((language, shard, start)), start in saved
            if kept:
                size = min(self.chunk, rows - start)
                self.resumed.inc(size)
                yield beam.pvalue.TaggedOutput(self.SAVED, ((language, shard), (start, size, saved[start],
                                                                                self._sum(saved[start]))))
            if kept and pack is None:
                continue
            if texts is None:
                texts = storage.read_parquet(task["sentences"], columns=["text"]).column("text").to_pylist()
            chunk_texts = texts[start:start + self.chunk]
            if pack is None:
                yield (language, shard, start), (language, chunk_texts)
            else:
                yield beam.pvalue.TaggedOutput(self.PACKED, (pack, (language, shard, start, chunk_texts, kept)))

    def _saved(self, language: str, shard: int, rows: int) -> dict[int, str]:
        """The shard's chunks a stopped run saved whole: first row -> file."""
        from pipelines.preflight import whole_vectors_dim

        found = {path.rsplit("/", 1)[-1] for path in
                 storage.match(layout.embedding_chunk(self.output, language, shard, "*"), allow_empty=True)}
        paths = {start: layout.embedding_chunk(self.output, language, shard, start)
                 for start in range(0, rows, self.chunk)}
        return {start: path for start, path in paths.items() if path.rsplit("/", 1)[-1] in found
                and whole_vectors_dim(path, min(self.chunk, rows - start), self.code)}

    def _sum(self, path: str):
        return binary.fixed_point_sum(storage.read_npy(path)) if self.centre else None


def packs_of_partial_chunks(tasks: list[dict], chunk: int) -> dict[tuple[str, int, int], int]:
    """The pack each partial chunk is embedded in, by (language, shard, first row): a shard's last chunk short of
    `chunk` rows, or a whole shard smaller than one, packed in the tasks' order (by language, then shard), each
    pack as many as fit in `chunk` sentences. A crawl's small languages would each make a small encoder call, which
    costs more per sentence than a full one (1.6x on a CPU core for calls of 64, docs/benchmarks.md). Fixed by the
    manifest alone, so every runner, and a resumed run, makes the same packs and so the same bits. A pack of one
    chunk is left out: that chunk is embedded alone, as any other."""
    packs, members, pack, held = {}, {}, 0, 0
    for task in tasks:
        size = task["rows"] % chunk
        if not size:
            continue
        if held and held + size > chunk:
            pack, held = pack + 1, 0
        packs[task["language"], task["shard"], task["rows"] - size] = pack
        members[pack] = members.get(pack, 0) + 1
        held += size
    return {key: pack for key, pack in packs.items() if members[pack] > 1}


class JoinPack(beam.DoFn):
    """A pack's partial chunks -> one encoder call: (its segments, (one language per text, or the one language,
    texts)), a segment (language, shard, first row, rows, saved) each, in the plan's order; nothing where a stopped
    run saved every one of them."""

    def process(self, element):
        _, parts = element
        parts = sorted(parts, key=lambda part: part[:3])  # (language, shard, first row): the plan's order
        if all(saved for *_, saved in parts):
            return
        segments = tuple((language, shard, start, len(texts), saved) for language, shard, start, texts, saved in parts)
        texts = [text for *_, chunk_texts, _ in parts for text in chunk_texts]
        languages = tuple(language for language, _, _, chunk_texts, _ in parts for _ in chunk_texts)
        yield segments, (languages[0] if len(set(languages)) == 1 else languages, texts)


def chunks_of(key: tuple, matrix: np.ndarray) -> Iterable[tuple[tuple[str, int, int], np.ndarray]]:
    """An encoder call's chunks, ((language, shard, first row), its vectors): the call's one chunk, or a pack's
    segments but those a stopped run saved (the same bits: the pack was embedded whole again)."""
    if isinstance(key[0], str):
        yield key, matrix
        return
    at = 0
    for language, shard, start, rows, saved in key:
        if not saved:
            yield (language, shard, start), matrix[at:at + rows]
        at += rows


class SaveChunk(beam.DoFn):
    """An embedded chunk saved as it leaves the encoder (`embed/chunks/`), so that a stopped run keeps what it
    embedded; emits ((language, shard), (first row, rows, its file, its fixed-point column sum when `centre`)).
    A pack's vectors are saved as its chunks'."""

    def __init__(self, output: str, centre: bool = False):
        self.output, self.centre = output, centre

    def process(self, element):
        key, result = element
        for (language, shard, start), matrix in chunks_of(key, result.inference):
            path = layout.embedding_chunk(self.output, language, shard, start)
            storage.write_npy(path, matrix)
            yield (language, shard), (start, len(matrix), path,
                                      binary.fixed_point_sum(matrix) if self.centre else None)


class WriteEmbeddingShard(beam.DoFn):
    """All vectors of one shard, in row order, from its chunks' files to one `.npy` (atomically); emits the shard's
    manifest entry. With `means` (language -> its vectors' fixed-point column sum and row count), float vectors
    arrive and leave as sign codes of v less the language's mean. The chunks' files stay until the stage is
    finished (a retried bundle reads them again)."""

    def __init__(self, output: str, dtype: str, refine: bool = False):
        self.output, self.dtype, self.refine = output, dtype, refine
        self.shards = Metrics.counter("embed", "shards")
        self.rows = Metrics.counter("embed", "sentences")

    def process(self, element, sentence_paths: dict, means: dict | None = None):
        (language, shard), chunks = element
        chunks = sorted(chunks, key=lambda c: c[0])
        if [start for start, *_ in chunks] != [sum(c[1] for c in chunks[:i]) for i in range(len(chunks))]:
            raise RuntimeError(f"{language} shard {shard}: rows missing from the embedded output")
        matrix = np.concatenate([storage.read_npy(path) for _, _, path, _ in chunks])
        path = layout.embedding_shard(self.output, language, sentence_paths[(language, shard)])
        written = {}
        if means is not None:
            mean = binary.mean_from_sum(*means[language])
            if self.refine:  # the rows the codes' signs come from, for the pairs the codes select (float16)
                matrix, rows = binary.sign_code_and_rows(matrix, mean)
                written["rotated"] = layout.rotated_shard(path)
                storage.write_npy(written["rotated"], rows.astype(np.float16))
            else:
                matrix = binary.pack(binary.sign_bits(matrix, mean))
        matrix = matrix if self.dtype == binary.DTYPE else matrix.astype(self.dtype)
        storage.write_npy(path, matrix)
        self.shards.inc()
        self.rows.inc(len(matrix))
        bits = self.dtype == binary.DTYPE  # the dimension of a binary vector is its bit count
        yield {"language": language, "shard": shard, "rows": len(matrix),
               "dim": int(matrix.shape[1]) * (8 if bits else 1), "embeddings": path, **written}


class EmbedShards(beam.PTransform):
    """PCollection of sentence-shard tasks -> PCollection of embedding-shard manifest entries; the chunks are spread
    over the workers that encode them (options.spread), each saved as it is embedded, and the shards written from
    the saved chunks. `resume`: a stopped run's saved chunks are used, not embedded again."""

    def __init__(self, settings: dict, sentence_paths: dict[tuple[str, int], str], resume: bool = False,
                 packs: dict | None = None):
        super().__init__()
        self.settings, self.sentence_paths, self.resume = settings, sentence_paths, resume
        self.packs = packs or {}  # packs_of_partial_chunks: where there are none, no branch for them

    def expand(self, tasks):
        values, output = embed_settings(self.settings), self.settings["output"]
        centre = centres_languages(self.settings)
        # the chunks' files hold what leaves the encoder: centred codes' float vectors, other codes packed
        code = None if centre else binary_code_written(self.settings)
        read = tasks | "ReadChunks" >> beam.ParDo(ReadShardChunks(output, values["batch_size"], self.resume, code,
                                                                  centre, self.packs)).with_outputs(
            ReadShardChunks.SAVED, ReadShardChunks.PACKED, main="texts")
        calls = read.texts
        if self.packs:
            packed = (read[ReadShardChunks.PACKED] | "GroupPacks" >> beam.GroupByKey()
                      | "Packs" >> beam.ParDo(JoinPack()))
            calls = (calls, packed) | "WithPacks" >> beam.Flatten()
        embedded = (spread(calls, "Spread")
                    | "Encode" >> RunInference(handler_from_settings(self.settings))
                    | "Save" >> beam.ParDo(SaveChunk(output, centre)))
        chunks = embedded
        if self.resume:  # a fresh run has no saved chunks: no branch for them
            chunks = (embedded, read[ReadShardChunks.SAVED]) | "WithSaved" >> beam.Flatten()
        means = None
        if centre:
            means = beam.pvalue.AsDict(
                chunks
                | "LanguageSums" >> beam.Map(lambda kv: (kv[0][0], (kv[1][3], kv[1][1])))
                | "LanguageMeans" >> beam.CombinePerKey(add_sums))
        return (chunks
                | "GroupShard" >> beam.GroupByKey()
                | "Write" >> beam.ParDo(WriteEmbeddingShard(output, values["dtype"], refines_pairs(self.settings)),
                                        self.sentence_paths, means))


def add_sums(sums: Iterable[tuple[np.ndarray, int]]) -> tuple[np.ndarray, int]:
    """Fixed-point column sums and row counts added up (integers: any order gives the same total)."""
    total, count = None, 0
    for part, rows in sums:
        if part is not None:  # a runner may merge an empty accumulator
            total, count = (part if total is None else total + part), count + rows
    return total, count


def tasks_from_manifest(manifest: dict) -> list[dict]:
    """One task per sentence shard; `shard` is its position in the language's list (how later stages name it)."""
    return [{"language": language, "shard": position, "sentences": shard["path"], "rows": shard["rows"]}
            for language, entry in sorted(manifest["languages"].items())
            for position, shard in enumerate(entry["shards"])]


def embeddings_manifest(entries: list[dict], sentences: dict, settings: dict) -> dict:
    languages: dict[str, dict] = {}
    by_shard = {(e["language"], e["shard"]): e for e in entries}
    # how the pairs stage compares binary vectors
    code = code_of(settings["encoder"]) if embed_settings(settings)["dtype"] == binary.DTYPE else None
    for language, entry in sorted(sentences["languages"].items()):
        shards = []
        for position, shard in enumerate(entry["shards"]):
            written = by_shard.get((language, position))
            if written is None or written["rows"] != shard["rows"]:
                raise RuntimeError(f"{shard['path']}: embedded rows do not match the sentences")
            shards.append({**shard, "embeddings": written["embeddings"],
                           **({"rotated": written["rotated"]} if "rotated" in written else {})})
        dims = {by_shard[(language, p)]["dim"] for p in range(len(entry["shards"]))}
        languages[language] = {"rows": entry["rows"], "dim": dims.pop() if len(dims) == 1 else None,
                               "shards": shards}
        if code:
            languages[language]["binary"] = code
    return {"stage": "embed", "encoder": settings["encoder"], "languages": languages}


class EmbedStage:
    """The stage as pipelines.mine runs it: the extract stage's manifest in, embedding shards out."""

    @staticmethod
    def check(settings: dict) -> None:
        """Before any stage runs: the embed settings parse, the encoder is loadable as a spec."""
        from pipelines import preflight

        embed_settings(settings)
        preflight.check_encoder(settings.get("encoder"))
        if settings.get("encoder") and not storage.is_remote(settings["encoder"]):
            from encoders.options import check_options

            check_options(settings["encoder"], settings.get("encoder_options"))
        if settings.get("encoder"):
            refines_pairs(settings)  # a code that cannot be refined is an error before any stage runs

    def __init__(self, settings: dict, manifests: dict):
        if "extract" not in manifests:
            raise ValueError("the embed stage needs the extract stage's output: run it first (--stages extract)")
        if not settings.get("encoder"):
            raise ValueError("no encoder: set `encoder` in the config or give --encoder")
        embed_settings(settings)  # bad settings fail here, before a pipeline starts
        self.settings, self.sentences = settings, manifests["extract"]
        self.resuming = False
        self.scratch = [layout.embedding_chunks(settings["output"])]  # removed once the stage is finished

    def resume(self) -> list[str]:
        """Keep the chunks a stopped run of this stage saved, and embed only the others (pipelines.job calls this
        where the stopped run was run on the same inputs, settings and sentences, so its chunks are what this run
        would embed); returns the files kept. Each is checked where it is read (ReadShardChunks)."""
        self.resuming = True
        kept = layout.saved_files(self.settings["output"], "embed")
        log.info("embed: resuming a stopped run with the same inputs and settings: the %s chunks it saved are kept",
                 f"{len(kept):,}")
        return kept

    def __call__(self, pipeline):
        tasks = tasks_from_manifest(self.sentences)
        paths = {(t["language"], t["shard"]): t["sentences"] for t in tasks}
        values = embed_settings(self.settings)
        packs = packs_of_partial_chunks(tasks, values["batch_size"]) if values["pack_partial_chunks"] else {}
        shards = pipeline | "embed/Shards" >> beam.Create(tasks, reshuffle=False)  # embed/Spread spreads them
        return spread(shards, "embed/Spread") | "embed/Embed" >> EmbedShards(self.settings, paths, self.resuming,
                                                                             packs)

    def manifest(self, entries: list[dict]) -> dict:
        return embeddings_manifest(entries, self.sentences, self.settings)


def main(argv: list[str] | None = None) -> int:
    import sys

    from pipelines.job import main as job_main

    return job_main(["--stages", "embed", *(argv if argv is not None else sys.argv[1:])], {"embed": EmbedStage},
                    prog="python -m pipelines.embed", description=__doc__)


if __name__ == "__main__":
    from pipelines.job import end_process

    end_process(main())
