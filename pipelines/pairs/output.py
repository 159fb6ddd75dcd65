"""Step 5 of the pairs stage: texts and metadata joined from the sentence shards (one shard read per group), the
pair filter's rules applied (miner.pair_filters; each drop counted by reason), each language pair's pairs sorted
best first and written as Parquet and TSV.gz, atomically: as one file each, or, past `bitext.rows_per_part` pairs,
as parts by score range, so that no worker holds a large pair's whole bitext (WriteBitextParts)."""

from __future__ import annotations

import hashlib
from collections import Counter

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam import typehints as th
from apache_beam.metrics import Metrics

from miner.histograms import merged_histograms, score_histogram
from miner.io import tsv_field
from miner.pair_filters import KEEP, PairFilter
from pipelines import layout, storage
from pipelines.extract import SENTENCE_SCHEMA
from pipelines.pairs.blocks import CARRIED, NO_SHARD, PairBlock, take_column
from pipelines.pairs.shards import ROW_MASK

# zlib's default trade of CPU for size (tsv_gz)
TSV_GZIP_LEVEL = 6


class AttachSide(beam.DoFn):
    """Pairs grouped by one side's sentence shard -> the pairs with that side's text and metadata (the embed
    manifest names each embedding shard's sentence shard), the shard read once."""

    def __init__(self, manifest: dict, side: str):
        self.manifest, self.side = manifest, side

    def process(self, element):
        (language, shard), blocks = element
        if shard == NO_SHARD:  # empty blocks: columns of no type, as empty_pairs' (concat_columns types them)
            for pair, pairs in blocks:
                yield pair, pairs.with_columns({f"{self.side}_{c}": pa.nulls(0) for c in CARRIED})
            return
        path = self.manifest["languages"][language]["shards"][shard]["path"]
        table = storage.read_parquet(path, columns=list(CARRIED))
        columns = {c: table.column(c).combine_chunks() for c in CARRIED}
        for pair, pairs in blocks:
            rows = (pairs.src if self.side == "src" else pairs.tgt) & ROW_MASK
            yield pair, pairs.with_columns({f"{self.side}_{c}": take_column(columns[c], rows) for c in CARRIED})


class FilterPairs(beam.DoFn):
    """The pair filter's rules over each pair's two texts; every drop is a `pairs` counter named by its rule."""

    def __init__(self, settings):
        self.settings = settings
        self.kept = Metrics.counter("pairs", "filter/kept")

    def setup(self):
        self.chain = PairFilter.from_settings(self.settings)

    def process(self, element):
        pair, pairs = element
        keep, drops = [], {}
        texts = (pairs.carried["src_text"].to_pylist(), pairs.carried["tgt_text"].to_pylist())
        for row, (source, target) in enumerate(zip(*texts)):
            verdict = self.chain.check(source, target, *pair)
            if verdict is KEEP:
                keep.append(row)
            else:
                drops[verdict[1]] = drops.get(verdict[1], 0) + 1
        for reason, count in drops.items():
            Metrics.counter("pairs", f"filter/{reason}").inc(count)
        self.kept.inc(len(keep))
        yield pair, pairs.take(np.asarray(keep, dtype=np.int64))   # none kept: the pair is still written


# Scores are binned by the top bits of their order-preserving float32 keys (2^11 bins an octave, a part boundary
# never splits a bin): a part's rows are those of whole bins, so ties and near-ties stay in one part, sorted together.
SCORE_BIN_SHIFT = 12


class WriteBitextParts(beam.PTransform):
    """(pair, PairBlock: an empty one where a pair has no pairs, which still gets its files) -> one summary a
    language pair. A pair of at most `rows_per_part` pairs is one Parquet and one TSV.gz; a larger one is parts by
    score range, each written by its own worker from its own rows: every pair's scores counted by bin (ScoreBins,
    a side input of each pair's part floors), each block split along them, each part sorted best first. Read in
    order, the parts are the one file's rows and bytes (TSV.gz parts are gzip members: `cat` them for the one
    file)."""

    def __init__(self, output: str, rows_per_part: int, most_pairs: int | None = None):
        super().__init__()
        self.output, self.rows_per_part, self.most_pairs = output, rows_per_part, most_pairs

    def expand(self, pairs):
        if self.most_pairs is not None and self.most_pairs <= self.rows_per_part:
            # no pair can pass a part (most_mined_pairs): one file each, without the histogram's steps (6-9% of
            # the stage's CPU at 10^4 sentences a language)
            return pairs | "PerPair" >> beam.GroupByKey() | "Write" >> beam.ParDo(WriteBitext(self.output))
        rows = self.rows_per_part
        floors = (pairs
                  | "ScoreBins" >> beam.Map(lambda e: (e[0], score_bins(e[1].score)))
                  | "CountBins" >> beam.CombinePerKey(MergeCounts())
                  | "PartFloors" >> beam.MapTuple(lambda pair, bins: (pair, parts_of(bins, rows))))
        return (pairs
                | "ByPart" >> beam.FlatMap(into_parts, beam.pvalue.AsDict(floors))
                | "PerPart" >> beam.GroupByKey()
                | "Write" >> beam.ParDo(WriteBitext(self.output))
                | "ByPair" >> beam.Map(lambda part: (part["pair"], part))
                | "PerPair" >> beam.GroupByKey()
                | "Summary" >> beam.MapTuple(pair_summary))


def most_mined_pairs(selection: str, src_rows: int, tgt_rows: int) -> int:
    """The most pairs a selection can keep between two languages: each pair is a sentence's best candidate in one
    direction (forward: the source's; union: either's), and one-to-one selections keep a sentence once."""
    return {"forward": src_rows, "backward": tgt_rows, "union": src_rows + tgt_rows}.get(selection,
                                                                                        min(src_rows, tgt_rows))


def order_keys(scores: np.ndarray) -> np.ndarray:
    """uint32 keys in the order of the float32 scores (sign flipped for positives, all bits for negatives); -0.0
    is 0.0 first, as the sort by score takes it."""
    bits = (np.asarray(scores, dtype=np.float32) + np.float32(0)).view(np.uint32)
    return np.where(bits >> 31 == 1, ~bits, bits | np.uint32(0x80000000))


def score_bins(scores: np.ndarray) -> dict[int, int]:
    bins, counts = np.unique(order_keys(scores) >> SCORE_BIN_SHIFT, return_counts=True)
    return dict(zip(bins.tolist(), counts.tolist()))


class MergeCounts(beam.CombineFn):
    """{bin: count} dicts summed: a pair's score histogram, a few thousand bins whatever its size."""

    def create_accumulator(self):
        return Counter()

    def add_input(self, counts, more):
        counts.update(more)
        return counts

    def merge_accumulators(self, accumulators):
        return sum(accumulators, Counter())

    def extract_output(self, counts):
        return dict(counts)


def parts_of(bins: dict[int, int], rows_per_part: int) -> tuple[list[int], list[int]]:
    """A pair's parts: each one's lowest score bin, the best part first, and how many pairs it holds (what its
    writer must receive). Bins are taken from the highest; a part is closed before the bin that would take it past
    `rows_per_part` (a bin larger than that is a part of its own). One floor: one file."""
    floors, counts, held, last = [], [], 0, None
    for key in sorted(bins, reverse=True):
        if held and held + bins[key] > rows_per_part:
            floors.append(last)
            counts.append(held)
            held = 0
        held, last = held + bins[key], key
    return (floors + [last], counts + [held]) if last is not None else ([], [])


def into_parts(element, parts_by_pair: dict):
    """(pair, block) -> ((pair, part, parts, pairs the part holds), the block's rows in that part) for a pair
    in parts (parts_of), ((pair, 0, 1, None), block) for one in one file; an empty block of a pair in parts
    goes nowhere (its other blocks fill them)."""
    pair, block = element
    floors, counts = parts_by_pair.get(pair) or ([None], [None])
    parts = len(floors)
    if parts <= 1:  # one file (a pair whose blocks were all empty counts no bin: one file too)
        yield (pair, 0, 1, None), block
        return
    bins = (order_keys(block.score) >> SCORE_BIN_SHIFT).astype(np.int64)
    part = np.searchsorted(-np.asarray(floors, dtype=np.int64), -bins)  # floors descend: their negatives ascend
    for index in np.unique(part).tolist():
        yield (pair, index, parts, counts[index]), block.take(np.flatnonzero(part == index))


@th.with_output_types(th.Dict[str, th.Any])
class WriteBitext(beam.DoFn):
    """One part of a language pair's pairs (the whole pair, where it is one part), best first, to Parquet and
    TSV.gz (atomically); emits the part's summary."""

    def __init__(self, output: str):
        self.output = output

    def process(self, element):
        key, blocks = element
        # a pair, or its part with the pairs the part must hold
        (src_lang, tgt_lang), part, parts, expected = (key, 0, 1, None) if isinstance(key[0], str) else key
        pairs = PairBlock.concat(list(blocks)).best_first()
        if expected is not None and len(pairs) != expected:
            raise RuntimeError(f"{src_lang}-{tgt_lang} bitext part {part} of {parts}: {len(pairs)} pairs arrived, "
                               f"{expected} counted by score: the runner delivered the part incomplete or twice")
        parquet, tsv = layout.bitext_files(self.output, src_lang, tgt_lang, part, parts)
        table = bitext_table(pairs, src_lang, tgt_lang)
        storage.write_parquet(parquet, table)
        text = tsv_gz(table)
        storage.write_bytes(tsv, text)
        scores = table["score"].to_pylist()
        # the TSV.gz's size and digest: a gzip file cut short has no footer a cheap check could read
        # (preflight.check_finished_stage compares the size); the digest for whoever copies the bitext on
        yield {"pair": f"{src_lang}-{tgt_lang}", "pairs": len(pairs), "parquet": parquet, "tsv": tsv,
               "tsv_bytes": len(text), "tsv_sha256": hashlib.sha256(text).hexdigest(),
               "score_range": [min(scores), max(scores)] if scores else None,
               "score_histogram": score_histogram(pairs.score), **({"part": part} if parts > 1 else {})}


FILE_KEYS = ("parquet", "tsv", "tsv_bytes", "tsv_sha256")  # a bitext file pair, as a manifest lists it


def pair_summary(pair: str, parts) -> dict:
    """A language pair's summary from its parts' ({"pair", "pairs", "parquet", "tsv", "tsv_bytes", "tsv_sha256",
    "score_range", "score_histogram"}, with "parts" [{"parquet", "tsv", "tsv_bytes", "tsv_sha256", "pairs"}] in
    place of the files where there are several)."""
    parts = sorted(parts, key=lambda p: p.get("part", 0))
    ranges = [p["score_range"] for p in parts if p["score_range"]]
    summary = {"pair": pair, "pairs": sum(p["pairs"] for p in parts)}
    if len(parts) == 1:
        summary |= {key: parts[0][key] for key in FILE_KEYS}
    else:
        summary["parts"] = [{**{key: p[key] for key in FILE_KEYS}, "pairs": p["pairs"]} for p in parts]
    summary["score_range"] = [min(r[0] for r in ranges), max(r[1] for r in ranges)] if ranges else None
    summary["score_histogram"] = merged_histograms([p["score_histogram"] for p in parts])
    return summary


def bitext_table(pairs: PairBlock, src_lang: str, tgt_lang: str) -> pa.Table:
    columns = {"score": pa.array(pairs.score.tolist(), pa.float32()),
               "cosine": pa.array(pairs.sim.tolist(), pa.float32()),
               "src_lang": pa.array([src_lang] * len(pairs), pa.string()),
               "tgt_lang": pa.array([tgt_lang] * len(pairs), pa.string())}
    for side in ("src", "tgt"):
        for column in CARRIED:
            # as the sentence shards type them: a pair with no pairs had columns of type null, and a reader of
            # bitext/*.parquet failed to join its file with the others' ("Unsupported cast from string to null")
            columns[f"{side}_{column}"] = pairs.carried[f"{side}_{column}"].cast(SENTENCE_SCHEMA.field(column).type)
    return pa.table(columns)


def tsv_gz(table: pa.Table) -> bytes:
    """score<TAB>source<TAB>target lines (the LASER / CCMatrix layout), gzipped with no timestamp: same bytes on
    every run. At zlib's default level (6, gzip's own): level 9, Python's default, took 2.7x its CPU on a benchmark
    bitext and 1.25x on prose for 1.2% and 0.4% smaller files (docs/benchmarks.md)."""
    import gzip

    lines = "".join(f"{score:.6f}\t{tsv_field(s)}\t{tsv_field(t)}\n" for score, s, t in
                    zip(table["score"].to_pylist(), table["src_text"].to_pylist(), table["tgt_text"].to_pylist()))
    return gzip.compress(lines.encode("utf-8"), compresslevel=TSV_GZIP_LEVEL, mtime=0)
