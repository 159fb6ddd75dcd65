"""Where each stage writes under the job's output folder (local or gs://):

    sentences/<lang>/part-00000-of-00002.parquet    extract: unique sentences, a document's sentences together
    extract/chunks/<file digest>/000003.parquet       extract, while it runs: a crawl file's pages' sentences
    extract/_MANIFEST.json                            the shards (paths relative to the output folder:
                                                      pipelines/manifests.py), their row counts, the stage's
                                                      counters and what its output depends on
                                                      (pipelines/dependencies.py)
    embeddings/<lang>/part-00000-of-00002.npy         embed: row i = row i of the sentence shard of the same name
    embed/chunks/<lang>/00000-000001024.npy           embed, while it runs: each chunk as it leaves the encoder
    embed/_MANIFEST.json
    index/<lang>/centroids.npy                        pairs: the coarse quantizer of a language searched by lists
    pairs/chunks/lists/<lang>/00000-<lang>.npy        pairs, while it runs: a shard's rows' lists in a quantizer
    bitext/<src>-<tgt>.parquet, .tsv.gz               pairs: the mined pairs, best first
    pairs/_MANIFEST.json
    report.json                                       the whole run: counters per stage, pairs, score ranges

A stage is finished when its manifest exists and records the same dependencies as the run at hand: the manifest is
written last, so a run killed midway leaves none, and the rerun does that stage again after clearing its folders
(its shards are rewritten whole, with the same names and bytes), but for what a stopped run with the same inputs
and settings finished (`<stage>/chunks/`, and the pairs stage's quantizers; `<stage>/_ATTEMPT.json` says what it
was run on), which is kept, and the rest done. A stage that is reused keeps only the files its manifest lists.
"""

from __future__ import annotations

import hashlib

import numpy as np

from pipelines.storage import join, list_finished

SHARD_NAME = "part-{shard:05d}-of-{count:05d}"


# The folders each stage writes: a stage that runs clears them all first, so nothing of an earlier run survives
# (shards of a run with more of them, a language no longer wanted, temporary files of a killed run). The last of
# each is what the stage leaves for its user (the run's summary names it).
STAGE_FOLDERS = {"extract": ("extract", "sentences"), "embed": ("embed", "embeddings"),
                 "pairs": ("pairs", "index", "bitext")}


def stage_dir(output: str, stage: str) -> str:
    return join(output, stage)


def stage_folders(output: str, stage: str) -> list[str]:
    return [join(output, folder) for folder in STAGE_FOLDERS[stage]]


def manifest_path(output: str, stage: str) -> str:
    return join(output, stage, "_MANIFEST.json")


def attempt_path(output: str, stage: str) -> str:
    """What a stage that runs is run on (its dependencies and the earlier outputs it reads), written when it starts
    and removed when it finishes: a run stopped midway leaves it, and a stage that can resume (all three) keeps what
    the stopped run finished (saved_work) when the next run is run on the same."""
    return join(output, stage, "_ATTEMPT.json")


def text_chunk(output: str, source: str, number: int | str) -> str:
    """A chunk of a crawl file's pages as the text stage left it (its sentences; `number` "*": the pattern of the
    file's chunks), saved while the extract stage runs and removed once it finished. The file is named by a digest
    of its path: crawl files in different folders may share a name."""
    name = hashlib.blake2b(source.encode("utf-8"), digest_size=10).hexdigest()
    return join(text_chunks(output), name, (number if isinstance(number, str) else f"{number:06d}") + ".parquet")


def text_chunks(output: str) -> str:
    return stage_chunks(output, "extract")


def sentence_shard(output: str, language: str, shard: int, count: int) -> str:
    return join(output, "sentences", language, SHARD_NAME.format(shard=shard, count=count) + ".parquet")


def embedding_shard(output: str, language: str, sentence_shard_path: str) -> str:
    """The vectors of a sentence shard: same name, under embeddings/, as .npy."""
    name = sentence_shard_path.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".parquet")
    return join(output, "embeddings", language, name + ".npy")


def embedding_chunk(output: str, language: str, shard: int, start: int | str) -> str:
    """An embedded chunk of a language's shard `shard` (its number) from row `start`, saved as it leaves the
    encoder and removed once the stage is finished (`start` "*": the pattern of a shard's chunks)."""
    first = start if isinstance(start, str) else f"{start:09d}"
    return join(embedding_chunks(output), language, f"{shard:05d}-{first}.npy")


def embedding_chunks(output: str) -> str:
    return stage_chunks(output, "embed")


def stage_chunks(output: str, stage: str) -> str:
    """A stage's chunks, kept while it runs (a stopped run's are what its next run resumes from)."""
    return join(output, stage, "chunks")


def rotated_shard(embedding_path: str) -> str:
    """Beside a shard of sign codes, the float rows they were made from, turned (`embed.binary_refine`)."""
    return embedding_path.removesuffix(".npy") + ".rotated.npy"


def quantizer_file(output: str, language: str) -> str:
    return join(output, "index", language, "centroids.npy")


def list_assignment(output: str, language: str, shard: int, quantizer: str) -> str:
    """The lists of `quantizer`'s quantizer that a language's shard `shard`'s rows fall in (the language's own: each
    row's list; another's: each row's nprobe nearest), saved as the pairs stage assigns them and removed once it
    finished."""
    return join(stage_chunks(output, "pairs"), "lists", language, f"{shard:05d}-{quantizer}.npy")


# What a stopped run of a stage leaves that its next run on the same inputs and settings keeps (pipelines.job),
# by what each folder's files are: the extract and embed stages' chunks, the pairs stage's quantizers (its
# outputs, written as each is trained) and its shards' list assignments
SAVED_WORK = {"extract": {"chunk": ("extract", "chunks")}, "embed": {"chunk": ("embed", "chunks")},
              "pairs": {"quantizer": ("index",), "chunk": ("pairs", "chunks")}}


def saved_work(output: str, stage: str) -> dict[str, str]:
    """What a stopped run of `stage` saved, by kind: kind -> its folder (SAVED_WORK)."""
    return {kind: join(output, *parts) for kind, parts in SAVED_WORK.get(stage, {}).items()}


def saved_files(output: str, stage: str) -> list[str]:
    """The files a stopped run of `stage` saved whole (saved_work; a write the stop cut off is left out): what
    its next run on the same keeps."""
    return [path for folder in saved_work(output, stage).values() for path in list_finished(folder)]


def bitext_files(output: str, src: str, tgt: str, part: int = 0, parts: int = 1) -> tuple[str, str]:
    """A language pair's Parquet and TSV.gz; past `bitext.rows_per_part` pairs, part `part` of `parts` by score
    range (`<src>-<tgt>.part-00000-of-00004.parquet` holds the best), in the same folder and order."""
    base = join(output, "bitext", f"{src}-{tgt}")
    if parts > 1:
        base += f".part-{part:05d}-of-{parts:05d}"
    return base + ".parquet", base + ".tsv.gz"


def bitext_parts(entry: dict) -> list[dict]:
    """A pairs manifest entry's files, best part first: [{"parquet", "tsv", "pairs"}, with "tsv_bytes" and
    "tsv_sha256" where the manifest records them], one for a pair in one file."""
    if "parts" in entry:
        return entry["parts"]
    return [{"parquet": entry["parquet"], "tsv": entry["tsv"], "pairs": entry.get("pairs"),
             **{key: entry[key] for key in ("tsv_bytes", "tsv_sha256") if key in entry}}]


def report_path(output: str) -> str:
    return join(output, "report.json")


# A sentence reference packs its shard and row into one int64, so k-NN results and pairs stay small numbers.
ROW_BITS = 32


def pack(shard: int, row: int) -> int:
    return (shard << ROW_BITS) | row


def unpack(ref: int) -> tuple[int, int]:
    return ref >> ROW_BITS, ref & ((1 << ROW_BITS) - 1)


def shard_refs(shard: int, rows: int) -> np.ndarray:
    """The references of a shard's `rows` rows, in order (int64)."""
    return pack(shard, np.arange(rows, dtype=np.int64))
