"""The pairs stage: embeddings per language -> k-NN both ways -> margins -> selection -> bitext.

    python -m pipelines.pairs --output output             # after the embed stage; same flags as pipelines.mine

Per language pair (source, target), with the miner library doing the arithmetic (../shared/docs/METHODS.md §1):
  1. index: per database language, an index of `knn.index` (auto: from the language's size) trained on a bounded
     sample (`knn.train_sample` rows drawn across shards) and, for IVF/PQ, filled and written per shard;
  2. search: one task per (direction, query shard); each walks the other language's shards one at a time and
     keeps the k best (miner.shards): memory is one query shard plus one database shard;
  3. margins: fwd(x) and bwd(y) are the means of those k similarities; a candidate (x, y) needs the other side's
     mean, so candidates are joined with the means by key, the only place the two directions meet;
  4. selection: each sentence's best candidate (forward for sources, backward for targets), joined by (x, y):
     forward / backward / intersect / union are decided per pair; `max` (greedy one-to-one) takes the bests of a
     language pair together, two numbers per sentence, never its texts or vectors;
  5. output: texts and metadata joined from the sentence shards (one shard read per group), the pair filter's
     rules applied (miner.pair_filters: length ratio, numbers, URLs, identical sides, scripts; each drop counted
     by reason), sorted best first, written as Parquet and TSV.gz.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable

import apache_beam as beam
import faiss
import numpy as np
import pyarrow as pa
from apache_beam.metrics import Metrics

from miner.index import KnnConfig, resolve_factory, resolve_nprobe, use_gpu
from miner.margin import margin as margin_of
from miner.mining import MiningConfig
from miner.pair_filters import KEEP, PairFilter
from miner.selection import Pairs, greedy_one_to_one
from miner.shards import TopK, search_shard, shard_index, train_template
from miner.vectors import unit_rows
from pipelines import layout, storage

log = logging.getLogger("pipelines.pairs")
# Sentence columns carried into the bitext, per side (src_text, src_url, ...)
CARRIED = ("text", "url", "document_id", "paragraph_index", "sentence_index", "copies")


def mining_config(settings: dict) -> MiningConfig:
    return MiningConfig.from_dict(dict(settings.get("mining") or {}), dict(settings.get("knn") or {}))


def load_vectors(path: str) -> np.ndarray:
    """An embedding shard as float32 unit rows (data, never pickles)."""
    matrix = np.load(io.BytesIO(storage.read_bytes(path)), allow_pickle=False)
    return unit_rows(matrix, path)


# -- 1. index ----------------------------------------------------------------------------------------------------

def training_sample(entry: dict, size: int, seed: int) -> np.ndarray | None:
    """Up to `size` rows drawn evenly across the language's shards, deterministically; None when all fit."""
    total = entry["rows"]
    take = min(size, total)
    picks = []
    rng = np.random.default_rng(seed)
    for shard in entry["shards"]:
        n = round(take * shard["rows"] / total)
        rows = np.sort(rng.choice(shard["rows"], min(n, shard["rows"]), replace=False))
        picks.append(load_vectors(shard["embeddings"])[rows])
    return np.concatenate(picks) if picks else None


class TrainIndex(beam.DoFn):
    """language -> (language, serialised trained empty index); written to index/<lang>/trained.faiss too."""

    def __init__(self, manifest: dict, knn: KnnConfig, output: str):
        self.manifest, self.knn, self.output = manifest, knn, output

    def process(self, language: str):
        entry = self.manifest["languages"][language]
        factory = resolve_factory(self.knn, entry["rows"])
        sample = None if factory == "Flat" else training_sample(entry, self.knn.train_sample, self.knn.seed)
        template = train_template(sample, entry["dim"], factory, self.knn)
        if factory != "Flat":
            storage.write_bytes(layout.index_file(self.output, language), template)
        yield language, template


class FillIndexShard(beam.DoFn):
    """(language, shard) -> the trained index filled with that shard, written to index/<lang>/part-*.faiss."""

    def __init__(self, manifest: dict, knn: KnnConfig, output: str):
        self.manifest, self.knn, self.output = manifest, knn, output

    def process(self, task: tuple[str, int], templates: dict):
        language, shard = task
        entry = self.manifest["languages"][language]
        factory = resolve_factory(self.knn, entry["rows"])
        info = entry["shards"][shard]
        index = shard_index(templates[language], load_vectors(info["embeddings"]), factory, self.knn)
        if use_gpu(self.knn):
            index = faiss.index_gpu_to_cpu(index)  # written to storage, searched anywhere
        path = layout.index_file(self.output, language, shard, len(entry["shards"]))
        storage.write_bytes(path, faiss.serialize_index(index).tobytes())
        yield path


# -- 2. search ---------------------------------------------------------------------------------------------------

class SearchShard(beam.DoFn):
    """(pair, direction, query shard) -> one record per query row: its k best in the other language.

    Output: (pair, side, query ref, sims [k], neighbour refs [k]); side is "src" for forward queries."""

    def __init__(self, manifest: dict, config: MiningConfig, output: str):
        self.manifest, self.config, self.output = manifest, config, output
        self.queries = Metrics.counter("pairs", "queries")

    def process(self, task: tuple, templates: dict, filled: list):
        # `filled` (the paths FillIndexShard wrote) is not read: as a side input it makes every search wait until
        # the shard indexes it loads from storage exist
        pair, side, shard = task
        query_lang, db_lang = pair if side == "src" else pair[::-1]
        entry = self.manifest["languages"][db_lang]
        factory = resolve_factory(self.config.knn, entry["rows"])
        queries = load_vectors(self.manifest["languages"][query_lang]["shards"][shard]["embeddings"])
        best = TopK.empty(len(queries), min(self.config.k, entry["rows"]))
        for number, info in enumerate(entry["shards"]):
            vectors = load_vectors(info["embeddings"])
            refs = layout.pack(number, np.arange(len(vectors), dtype=np.int64))
            index = self._index(db_lang, number, len(entry["shards"]), factory, vectors, templates)
            best = best.merge(search_shard(index, queries, vectors, refs, best.sims.shape[1], factory,
                                           self.config.knn, (query_lang, db_lang)))
        self.queries.inc(len(queries))
        for row in range(len(queries)):
            yield pair, side, layout.pack(shard, row), best.sims[row], best.refs[row]

    def _index(self, language, shard, count, factory, vectors, templates):
        if factory == "Flat":
            return shard_index(templates[language], vectors, factory, self.config.knn)
        data = storage.read_bytes(layout.index_file(self.output, language, shard, count))
        index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        faiss.ParameterSpace().set_index_parameter(index, "nprobe", resolve_nprobe(self.config.knn, factory))
        return index


# -- 3. margins --------------------------------------------------------------------------------------------------

def to_join(record: tuple) -> Iterable[tuple]:
    """A query's k-NN record -> its own mean (keyed by itself) and its candidates (keyed by each neighbour)."""
    pair, side, ref, sims, refs = record
    found = refs >= 0
    mean = float(sims[found].mean(dtype=np.float64))
    other = "tgt" if side == "src" else "src"
    yield (pair, side, int(ref)), ("mean", mean)
    for sim, neighbour in zip(sims[found], refs[found]):
        yield (pair, other, int(neighbour)), ("candidate", int(ref), float(sim), mean)


class ScoreCandidates(beam.DoFn):
    """(pair, side, ref) with its mean and the candidates pointing at it -> each candidate's margin, keyed by the
    query it belongs to."""

    def __init__(self, kind: str, floor: float):
        self.kind, self.floor = kind, floor

    def process(self, element):
        (pair, side, ref), values = element
        means = [v[1] for v in values if v[0] == "mean"]
        candidates = [v for v in values if v[0] == "candidate"]
        if not candidates:
            return
        own_mean = means[0]  # every sentence is a query of its own direction, so its mean is always there
        cos = np.array([c[2] for c in candidates], dtype=np.float32)
        query_means = np.array([c[3] for c in candidates], dtype=np.float32)
        margins = margin_of(cos, query_means, np.float32(own_mean), self.kind, floor=self.floor)
        query_side = "tgt" if side == "src" else "src"
        for (_, query, sim, _), score in zip(candidates, margins):
            yield (pair, query_side, query), (ref, float(score), float(sim))


def ratio_floor(config: MiningConfig, manifest: dict) -> float:
    """The ratio margin's floor, from the vectors' dimension (one encoder: the same in every language)."""
    dims = {entry["dim"] for entry in manifest["languages"].values() if entry.get("rows") and entry.get("dim")}
    return config.floor_for(max(dims, default=1))


def best_candidate(element) -> tuple:
    """A query's best candidate: highest margin, then highest cosine, then smaller reference (deterministic)."""
    (pair, side, query), candidates = element
    ref, score, sim = max(candidates, key=lambda c: (c[1], c[2], -c[0]))
    src, tgt = (query, ref) if side == "src" else (ref, query)
    return (pair, src, tgt), (side, score, sim)


# -- 4. selection ------------------------------------------------------------------------------------------------

class Select(beam.DoFn):
    """(pair, src, tgt) with the directions that chose it -> the pair, when the selection mode keeps it.

    `max` keeps every candidate here; the one-to-one pass comes after, per language pair."""

    def __init__(self, mode: str, threshold: float | None, min_cosine: float | None = None):
        self.mode, self.threshold, self.min_cosine = mode, threshold, min_cosine
        self.kept = Metrics.counter("pairs", "selected")
        self.below_floor = Metrics.counter("pairs", "below_min_cosine")

    def process(self, element):
        (pair, src, tgt), chosen = element
        sides = {side for side, _, _ in chosen}
        _, score, sim = chosen[0]
        wanted = {"forward": "src" in sides, "backward": "tgt" in sides, "intersect": sides == {"src", "tgt"},
                  "union": True, "max": True}[self.mode]
        if not wanted:
            return
        if self.min_cosine is not None and sim < self.min_cosine:  # before one-to-one, as miner.selection does
            self.below_floor.inc()
            return
        if self.mode != "max" and self.threshold is not None and score < self.threshold:
            return
        self.kept.inc()
        yield pair, (src, tgt, score, sim)


def one_to_one(element, threshold: float | None) -> Iterable[tuple]:
    """The greedy one-to-one pass of `max` selection (miner.selection) over one language pair's candidates."""
    pair, candidates = element
    candidates = sorted(candidates, key=lambda c: (-c[2], c[0], c[1]))
    src = np.array([c[0] for c in candidates], dtype=np.int64)
    tgt = np.array([c[1] for c in candidates], dtype=np.int64)
    _, src_dense = np.unique(src, return_inverse=True)
    _, tgt_dense = np.unique(tgt, return_inverse=True)
    pool = Pairs(src_dense, tgt_dense, np.array([c[2] for c in candidates], dtype=np.float32),
                 np.array([c[3] for c in candidates], dtype=np.float32))
    for i in np.sort(greedy_one_to_one(pool)):
        if threshold is None or candidates[i][2] >= threshold:
            yield pair, candidates[i]


# -- 5. output ---------------------------------------------------------------------------------------------------

class AttachSide(beam.DoFn):
    """Pairs grouped by one side's sentence shard -> the pairs with that side's text and metadata (the embed
    manifest names each embedding shard's sentence shard).

    Input: ((language, shard), [(pair, src, tgt, score, sim, carried)]); `side` says which ref to look up."""

    def __init__(self, manifest: dict, side: str):
        self.manifest, self.side = manifest, side

    def process(self, element):
        (language, shard), pairs = element
        path = self.manifest["languages"][language]["shards"][shard]["path"]
        columns = storage.read_parquet(path, columns=list(CARRIED)).to_pydict()
        for pair, src, tgt, score, sim, carried in pairs:
            row = layout.unpack(src if self.side == "src" else tgt)[1]
            yield pair, src, tgt, score, sim, {**carried, **{f"{self.side}_{c}": columns[c][row] for c in CARRIED}}


class FilterPairs(beam.DoFn):
    """The pair filter's rules over each pair's two texts; every drop is a `pairs` counter named by its rule."""

    def __init__(self, settings):
        self.settings = settings
        self.kept = Metrics.counter("pairs", "filter/kept")

    def setup(self):
        self.chain = PairFilter.from_settings(self.settings)

    def process(self, record):
        pair, _, _, _, _, carried = record
        verdict = self.chain.check(carried["src_text"], carried["tgt_text"], *pair)
        if verdict is KEEP:
            self.kept.inc()
            yield record
        else:
            Metrics.counter("pairs", f"filter/{verdict[1]}").inc()


def by_shard(side: str):
    def key(record):
        pair, src, tgt = record[0], record[1], record[2]
        language = pair[0] if side == "src" else pair[1]
        return (language, layout.unpack(src if side == "src" else tgt)[0]), record
    return key


class WriteBitext(beam.DoFn):
    """One language pair's pairs, best first, to Parquet and TSV.gz (atomically); emits the pair's summary."""

    def __init__(self, output: str):
        self.output = output

    def process(self, element):
        (src_lang, tgt_lang), rows = element
        rows = sorted(rows, key=lambda r: (-r[3], r[1], r[2]))
        parquet, tsv = layout.bitext_files(self.output, src_lang, tgt_lang)
        table = bitext_table(rows, src_lang, tgt_lang)
        storage.write_parquet(parquet, table)
        storage.write_bytes(tsv, tsv_gz(table))
        scores = [r[3] for r in rows]
        yield {"pair": f"{src_lang}-{tgt_lang}", "pairs": len(rows), "parquet": parquet, "tsv": tsv,
               "score_range": [min(scores), max(scores)] if scores else None}


def bitext_table(rows: list, src_lang: str, tgt_lang: str) -> pa.Table:
    columns = {"score": pa.array([r[3] for r in rows], pa.float32()),
               "cosine": pa.array([r[4] for r in rows], pa.float32()),
               "src_lang": pa.array([src_lang] * len(rows), pa.string()),
               "tgt_lang": pa.array([tgt_lang] * len(rows), pa.string())}
    for side in ("src", "tgt"):
        for column in CARRIED:
            columns[f"{side}_{column}"] = [r[5][f"{side}_{column}"] for r in rows]
    return pa.table(columns)


def tsv_gz(table: pa.Table) -> bytes:
    """score<TAB>source<TAB>target lines (the LASER / CCMatrix layout), gzipped with no timestamp: same bytes on
    every run."""
    import gzip

    lines = "".join(f"{score:.6f}\t{s.replace(chr(9), ' ')}\t{t.replace(chr(9), ' ')}\n" for score, s, t in
                    zip(table["score"].to_pylist(), table["src_text"].to_pylist(), table["tgt_text"].to_pylist()))
    return gzip.compress(lines.encode("utf-8"), mtime=0)


# -- the stage ---------------------------------------------------------------------------------------------------

class MinePairs(beam.PTransform):
    """The whole stage over the embed stage's manifest: PBegin -> PCollection of per-pair summaries."""

    def __init__(self, manifest: dict, pairs: list[tuple[str, str]], settings: dict):
        super().__init__()
        self.manifest, self.pairs = manifest, pairs
        self.config, self.output = mining_config(settings), settings["output"]
        self.pair_filter = settings.get("pair_filter")

    def expand(self, begin):
        config, manifest = self.config, self.manifest
        languages = sorted({lang for pair in self.pairs for lang in pair})
        templates = (begin | "Languages" >> beam.Create(languages)
                     | "TrainIndex" >> beam.ParDo(TrainIndex(manifest, config.knn, self.output)))
        template_view = beam.pvalue.AsDict(templates)
        to_fill = [(lang, s) for lang in languages for s in range(len(manifest["languages"][lang]["shards"]))
                   if resolve_factory(config.knn, manifest["languages"][lang]["rows"]) != "Flat"]
        filled = (begin | "IndexShards" >> beam.Create(to_fill)
                  | "FillIndex" >> beam.ParDo(FillIndexShard(manifest, config.knn, self.output), template_view))
        tasks = [(pair, side, shard) for pair in self.pairs for side in ("src", "tgt")
                 for shard in range(len(manifest["languages"][pair[0] if side == "src" else pair[1]]["shards"]))]
        neighbours = (begin | "SearchTasks" >> beam.Create(tasks) | "Spread" >> beam.Reshuffle()
                      | "Search" >> beam.ParDo(SearchShard(manifest, config, self.output), template_view,
                                               beam.pvalue.AsList(filled)))
        bests = (neighbours
                 | "ToJoin" >> beam.FlatMap(to_join)
                 | "JoinMeans" >> beam.GroupByKey()
                 | "Margins" >> beam.ParDo(ScoreCandidates(config.margin, ratio_floor(config, manifest)))
                 | "ByQuery" >> beam.GroupByKey()
                 | "Best" >> beam.Map(best_candidate)
                 | "ByPair" >> beam.GroupByKey()
                 | "Select" >> beam.ParDo(Select(config.selection, config.threshold, config.min_cosine)))
        if config.selection == "max":
            bests = (bests | "PerLanguagePair" >> beam.GroupByKey()
                     | "OneToOne" >> beam.FlatMap(one_to_one, config.threshold))
        records = bests | "Flatten" >> beam.Map(lambda kv: (kv[0], *kv[1], {}))
        for side in ("src", "tgt"):
            records = (records
                       | f"BySentenceShard{side}" >> beam.Map(by_shard(side))
                       | f"GroupShard{side}" >> beam.GroupByKey()
                       | f"Attach{side}" >> beam.ParDo(AttachSide(manifest, side)))
        if PairFilter.from_settings(self.pair_filter) is not None:
            records = records | "FilterPairs" >> beam.ParDo(FilterPairs(self.pair_filter))
        empty = begin | "AllPairs" >> beam.Create([(pair, None) for pair in self.pairs])
        return ((records | "KeyPair" >> beam.Map(lambda r: (r[0], r)), empty)
                | "WithEmpty" >> beam.Flatten()
                | "PerPair" >> beam.GroupByKey()
                | "DropMarker" >> beam.MapTuple(lambda pair, rows: (pair, [r for r in rows if r is not None]))
                | "Write" >> beam.ParDo(WriteBitext(self.output)))


class PairsStage:
    """The stage as pipelines.mine runs it: the embed stage's manifest in, bitext out."""

    @staticmethod
    def check(settings: dict) -> None:
        """Before any stage runs: the mining, knn and pair filter settings parse."""
        mining_config(settings)
        PairFilter.from_settings(settings.get("pair_filter"))

    def __init__(self, settings: dict, manifests: dict):
        from pipelines.settings import language_pairs

        if "embed" not in manifests:
            raise ValueError("the pairs stage needs the embed stage's output: run it first (--stages embed)")
        self.settings, self.embeddings = settings, manifests["embed"]
        mining_config(settings)  # bad settings fail here, before a pipeline starts
        PairFilter.from_settings(settings.get("pair_filter"))
        found = [lang for lang, entry in self.embeddings["languages"].items() if entry["rows"]]
        wanted = settings.get("languages") or found
        self.pairs = language_pairs([lang for lang in wanted if lang in found], settings.get("pairs", "pivot"),
                                    settings.get("pivot", "eng_Latn"))
        missing = sorted(set(wanted) - set(found))
        if missing:
            log.warning("no sentences in %s: no pairs with them", ", ".join(missing))

    def __call__(self, pipeline):
        return pipeline | "pairs/Mine" >> MinePairs(self.embeddings, self.pairs, self.settings)

    def manifest(self, entries: list[dict]) -> dict:
        config, rows = mining_config(self.settings), self.embeddings["languages"]
        for entry in entries:  # the index each direction used, resolved from the two languages' sizes
            src, tgt = entry["pair"].split("-")
            entry["index"] = config.describe(rows[src]["rows"], rows[tgt]["rows"])["index"]
        return {"stage": "pairs", "settings": {**config.describe(), "pair_filter": self.settings.get("pair_filter")},
                "pairs": sorted(entries, key=lambda e: e["pair"])}


def main(argv: list[str] | None = None) -> int:
    import sys

    from pipelines.job import main as job_main

    return job_main(["--stages", "pairs", *(argv if argv is not None else sys.argv[1:])], {"pairs": PairsStage},
                    prog="python -m pipelines.pairs", description=__doc__)


if __name__ == "__main__":
    raise SystemExit(main())
