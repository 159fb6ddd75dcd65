"""Step 5 of the pairs stage: texts and metadata joined from the sentence shards (one shard read per group), the
pair filter's rules applied (miner.pair_filters; each drop counted by reason), each language pair's pairs sorted
best first and written as Parquet and TSV.gz, atomically."""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam import typehints as th
from apache_beam.metrics import Metrics

from miner.pair_filters import KEEP, PairFilter
from pipelines import layout, storage
from pipelines.pairs.blocks import CARRIED, PairBlock, empty_pairs, take_column
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
        if keep:
            yield pair, pairs.take(np.asarray(keep, dtype=np.int64))


@th.with_output_types(th.Dict[str, th.Any])
class WriteBitext(beam.DoFn):
    """One language pair's pairs, best first, to Parquet and TSV.gz (atomically); emits the pair's summary."""

    def __init__(self, output: str):
        self.output = output

    def process(self, element):
        (src_lang, tgt_lang), blocks = element
        pairs = PairBlock.concat([b for b in blocks if b is not None] or [empty_pairs()]).best_first()
        parquet, tsv = layout.bitext_files(self.output, src_lang, tgt_lang)
        table = bitext_table(pairs, src_lang, tgt_lang)
        storage.write_parquet(parquet, table)
        storage.write_bytes(tsv, tsv_gz(table))
        scores = table["score"].to_pylist()
        yield {"pair": f"{src_lang}-{tgt_lang}", "pairs": len(pairs), "parquet": parquet, "tsv": tsv,
               "score_range": [min(scores), max(scores)] if scores else None}


def bitext_table(pairs: PairBlock, src_lang: str, tgt_lang: str) -> pa.Table:
    columns = {"score": pa.array(pairs.score.tolist(), pa.float32()),
               "cosine": pa.array(pairs.sim.tolist(), pa.float32()),
               "src_lang": pa.array([src_lang] * len(pairs), pa.string()),
               "tgt_lang": pa.array([tgt_lang] * len(pairs), pa.string())}
    for side in ("src", "tgt"):
        for column in CARRIED:
            columns[f"{side}_{column}"] = pairs.carried[f"{side}_{column}"]
    return pa.table(columns)


def tsv_gz(table: pa.Table) -> bytes:
    """score<TAB>source<TAB>target lines (the LASER / CCMatrix layout), gzipped with no timestamp: same bytes on
    every run. At zlib's default level (6, gzip's own): level 9, Python's default, took 2.7x its CPU on a benchmark
    bitext and 1.25x on prose for 1.2% and 0.4% smaller files (docs/benchmarks.md)."""
    import gzip

    lines = "".join(f"{score:.6f}\t{s.replace(chr(9), ' ')}\t{t.replace(chr(9), ' ')}\n" for score, s, t in
                    zip(table["score"].to_pylist(), table["src_text"].to_pylist(), table["tgt_text"].to_pylist()))
    return gzip.compress(lines.encode("utf-8"), compresslevel=TSV_GZIP_LEVEL, mtime=0)
