"""The embed stage: sentence shards -> vectors per shard, with Beam's RunInference and our encoders.

    python -m pipelines.embed --output output            # after the extract stage; same flags as pipelines.mine

`EncoderModelHandler` is the ModelHandler for any spec `encoders.load_encoder` takes: the model is loaded once
per worker process (once per machine on GPUs, where the model is shared across processes). Each element is a
fixed chunk of a shard (`embed.batch_size` rows: rows 0-1023, 1024-2047, ...) that the encoder embeds in one call,
with its own token-budget batching inside (sorted by length, so padding stays small). Fixed chunks, not
RunInference's own batching, because a vector's last bits depend on which sentences share its batch, and
bundles differ between runners and runs: this way every runner writes the same bytes. Vectors are written per
sentence shard, row i = row i, as `.npy` (float16 by default: half the storage, and well inside the precision the
margin needs; `embed.dtype: binary` stores packed binary codes, 1 bit a dimension: encoders.binary). Sign codes
are made after each language's mean vector is removed (`embed.binary_center: language`, the default): the float
vectors' column sums are added up per language in fixed point first (exact in any order, so the same bits on every
runner), and the shards are written once that mean is known.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

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

    def run_inference(self, batch: Sequence[tuple[str, list]], model, inference_args=None
                      ) -> Iterable[PredictionResult]:
        """Each element is (language, texts): the language reaches encoders that use it (an ensemble's shares,
        per-language PCR)."""
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


def read_shard_chunks(task: dict, chunk: int) -> Iterable[tuple[tuple[str, int, int], tuple[str, list[str]]]]:
    """((language, shard, first row), (language, texts)) for each chunk of `chunk` rows of one sentence shard."""
    texts = storage.read_parquet(task["sentences"], columns=["text"]).column("text").to_pylist()
    for start in range(0, len(texts), chunk):
        yield (task["language"], task["shard"], start), (task["language"], texts[start:start + chunk])


class WriteEmbeddingShard(beam.DoFn):
    """All vectors of one shard, in row order, to one `.npy` (atomically); emits the shard's manifest entry. With
    `means` (language -> its vectors' fixed-point column sum and row count), float vectors arrive and leave as
    sign codes of v less the language's mean."""

    def __init__(self, output: str, dtype: str, refine: bool = False):
        self.output, self.dtype, self.refine = output, dtype, refine
        self.shards = Metrics.counter("embed", "shards")
        self.rows = Metrics.counter("embed", "sentences")

    def process(self, element, sentence_paths: dict, means: dict | None = None):
        (language, shard), chunks = element
        chunks = sorted(chunks, key=lambda c: c[0])
        starts = [start for start, _ in chunks]
        if starts != [sum(len(m) for _, m in chunks[:i]) for i in range(len(chunks))]:
            raise RuntimeError(f"{language} shard {shard}: rows missing from the embedded output")
        matrix = np.concatenate([m for _, m in chunks])
        path = layout.embedding_shard(self.output, language, sentence_paths[(language, shard)])
        written = {}
        if means is not None:
            mean = binary.mean_from_sum(*means[language])
            if self.refine:  # the rows the codes' signs come from, for the pairs the codes select (float16)
                matrix, rows = binary.sign_code_and_rows(matrix, mean)
                written["rotated"] = layout.rotated_shard(path)
                save_npy(written["rotated"], rows.astype(np.float16))
            else:
                matrix = binary.pack(binary.sign_bits(matrix, mean))
        matrix = matrix if self.dtype == binary.DTYPE else matrix.astype(self.dtype)
        save_npy(path, matrix)
        self.shards.inc()
        self.rows.inc(len(matrix))
        bits = self.dtype == binary.DTYPE  # the dimension of a binary vector is its bit count
        yield {"language": language, "shard": shard, "rows": len(matrix),
               "dim": int(matrix.shape[1]) * (8 if bits else 1), "embeddings": path, **written}


def save_npy(path: str, matrix: np.ndarray) -> None:
    """A matrix as .npy (data only), written atomically through storage."""
    buffer = io.BytesIO()
    np.save(buffer, matrix, allow_pickle=False)
    storage.write_bytes(path, buffer.getvalue())


class EmbedShards(beam.PTransform):
    """PCollection of sentence-shard tasks -> PCollection of embedding-shard manifest entries; the chunks are spread
    over the workers that encode them (options.spread)."""

    def __init__(self, settings: dict, sentence_paths: dict[tuple[str, int], str]):
        super().__init__()
        self.settings, self.sentence_paths = settings, sentence_paths

    def expand(self, tasks):
        values = embed_settings(self.settings)
        chunks = spread(tasks | "ReadChunks" >> beam.FlatMap(read_shard_chunks, values["batch_size"]), "Spread")
        chunks = (chunks
                  | "Encode" >> RunInference(handler_from_settings(self.settings))
                  | "ByShard" >> beam.Map(lambda kv: ((kv[0][0], kv[0][1]), (kv[0][2], kv[1].inference))))
        means = None
        if centres_languages(self.settings):
            means = beam.pvalue.AsDict(
                chunks
                | "LanguageSums" >> beam.Map(lambda kv: (kv[0][0], (binary.fixed_point_sum(kv[1][1]), len(kv[1][1]))))
                | "LanguageMeans" >> beam.CombinePerKey(add_sums))
        return (chunks
                | "GroupShard" >> beam.GroupByKey()
                | "Write" >> beam.ParDo(WriteEmbeddingShard(self.settings["output"], values["dtype"],
                                                            refines_pairs(self.settings)),
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
        if settings.get("encoder"):
            refines_pairs(settings)  # a code that cannot be refined is an error before any stage runs

    def __init__(self, settings: dict, manifests: dict):
        if "extract" not in manifests:
            raise ValueError("the embed stage needs the extract stage's output: run it first (--stages extract)")
        if not settings.get("encoder"):
            raise ValueError("no encoder: set `encoder` in the config or give --encoder")
        embed_settings(settings)  # bad settings fail here, before a pipeline starts
        self.settings, self.sentences = settings, manifests["extract"]
        self.kept: dict[tuple[str, int], dict] = {}  # shards a stopped run finished (resume), by (language, shard)

    def resume(self) -> list[str] | None:
        """Keep the shards a stopped run of this stage wrote whole (pipelines.job calls this where the run it stopped
        was run on the same inputs, settings and sentences: the same bytes this run would write), so that only the
        others are embedded; returns the files kept. None where the stage cannot resume: sign codes less each
        language's mean are written once all of the language's vectors are summed, which a stopped run's codes
        cannot give again."""
        if centres_languages(self.settings):
            return None
        from pipelines.preflight import whole_vectors_dim

        code = binary_code_written(self.settings)
        output, tasks = self.settings["output"], tasks_from_manifest(self.sentences)
        paths = [layout.embedding_shard(output, t["language"], t["sentences"]) for t in tasks]
        with ThreadPoolExecutor(16 if storage.is_remote(output) else 1) as pool:  # headers only, in parallel on gs://
            dims = list(pool.map(lambda task, path: whole_vectors_dim(path, task["rows"], code), tasks, paths))
        if len({dim for dim in dims if dim}) > 1:  # cannot be with the same encoder: trust none of them
            log.warning("embed: the stopped run's shards have vectors of different widths (%s): embedding every "
                        "shard again", sorted({dim for dim in dims if dim}))
            return []
        self.kept = {(t["language"], t["shard"]): {"language": t["language"], "shard": t["shard"], "rows": t["rows"],
                                                  "dim": dim, "embeddings": path}
                     for t, path, dim in zip(tasks, paths, dims) if dim}
        log.info("embed: resuming a stopped run with the same inputs and settings: %d of %d shards (%s of %s "
                 "sentences) were written whole and are kept", len(self.kept), len(tasks),
                 f"{sum(e['rows'] for e in self.kept.values()):,}", f"{sum(t['rows'] for t in tasks):,}")
        return [entry["embeddings"] for entry in self.kept.values()]

    def __call__(self, pipeline):
        tasks = [t for t in tasks_from_manifest(self.sentences) if (t["language"], t["shard"]) not in self.kept]
        paths = {(t["language"], t["shard"]): t["sentences"] for t in tasks}
        shards = pipeline | "embed/Shards" >> beam.Create(tasks, reshuffle=False)  # embed/Spread spreads them
        embedded = spread(shards, "embed/Spread") | "embed/Embed" >> EmbedShards(self.settings, paths)
        if not self.kept:
            return embedded
        kept = pipeline | "embed/Kept" >> beam.Create([self.kept[key] for key in sorted(self.kept)], reshuffle=False)
        return (embedded, kept) | "embed/WithKept" >> beam.Flatten()

    def manifest(self, entries: list[dict]) -> dict:
        manifest = embeddings_manifest(entries, self.sentences, self.settings)
        if self.kept:
            manifest["resumed"] = {"shards": len(self.kept), "sentences": sum(e["rows"] for e in self.kept.values())}
        return manifest


def main(argv: list[str] | None = None) -> int:
    import sys

    from pipelines.job import main as job_main

    return job_main(["--stages", "embed", *(argv if argv is not None else sys.argv[1:])], {"embed": EmbedStage},
                    prog="python -m pipelines.embed", description=__doc__)


if __name__ == "__main__":
    from pipelines.job import end_process

    end_process(main())
