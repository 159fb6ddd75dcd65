"""The pairs stage whole (MinePairs: k-NN join, margins, selection, refinement, output) and as pipelines.mine runs
it (PairsStage: the embed stage's manifest in, bitext and the stage's manifest out)."""

from __future__ import annotations

import logging

import apache_beam as beam

from miner.console import plural
from miner.knn_join import join_plan
from miner.pair_filters import PairFilter
from miner.thresholds import pair_threshold
from pipelines import layout, preflight
from pipelines.dependencies import threshold_raised
from pipelines.pairs.blocks import by_sentence_shard
from pipelines.pairs.join import KnnJoin
from pipelines.pairs.margins import ScoreCandidates, neighbourhoods_by_pair, ratio_floor, to_margin_join
from pipelines.pairs.output import AttachSide, FilterPairs, WriteBitextParts, most_mined_pairs
from pipelines.pairs.plan import join_waves, search_plan
from pipelines.pairs.raised import FilterFinished
from pipelines.pairs.refine import RefinePairs, refined_by_rows
from pipelines.pairs.selection import BestCandidates, OneToOne, Select
from pipelines.settings import bitext_settings, embed_settings, mining_config, threshold_offsets

log = logging.getLogger("pipelines.pairs")


def pair_thresholds(settings: dict, pairs: list[tuple[str, str]], manifest: dict) -> tuple[dict, dict]:
    """Each pair's margin threshold, as the library's `mine` takes it: `mining.threshold` moved by the languages'
    offsets (miner/thresholds.py) and, for one-sided margins, by the size of the pool their neighbourhoods were
    taken in (MiningConfig.pool_threshold); None: every selected pair. With it, how far each of the two moved it
    ({} without a threshold), for the manifest."""
    config, offsets = mining_config(settings), threshold_offsets(settings)
    rows = {lang: entry["rows"] for lang, entry in manifest["languages"].items()}
    thresholds, moves = {}, {}
    for src, tgt in pairs:
        moved = pair_threshold(config.threshold, offsets, src, tgt)
        thresholds[(src, tgt)] = config.pool_threshold(moved, rows[src], rows[tgt])
        moves[(src, tgt)] = {} if moved is None else {"offsets": moved - config.threshold,
                                                      "pool": thresholds[(src, tgt)] - moved}
    return thresholds, moves


def every_pair_written(pairs: list[tuple[str, str]], entries: list[dict]) -> None:
    """An error naming the pairs the writer wrote nothing of. Select gives each source shard of each pair a block,
    an empty one too, and every step after passes a pair's last block on, empty or not: so a pair the writer never
    saw lost every group of it on the way (a runner delivering nothing of them), and its bitext is never written
    as empty."""
    missing = sorted(set("-".join(pair) for pair in pairs) - {entry["pair"] for entry in entries})
    if missing:
        raise RuntimeError(f"pairs stage: nothing of {', '.join(missing)} reached the writer: the runner lost "
                           "every group of the pair on the way")


def source_shards(manifest: dict, language: str) -> list[int]:
    """The numbers of a language's embedding shards that hold rows: each has its block in Select's output."""
    return [number for number, shard in enumerate(manifest["languages"][language]["shards"]) if shard["rows"]]


class MinePairs(beam.PTransform):
    """The whole stage over the embed stage's manifest: PBegin -> PCollection of per-pair summaries; the k-NN
    join's groups in waves of at most `wave_bytes` of rows shipped (0: one wave; join_waves); `resume`: what a
    stopped run of the stage saved is read back (pipelines.pairs.saved)."""

    def __init__(self, manifest: dict, pairs: list[tuple[str, str]], settings: dict, wave_bytes: int = 0,
                 resume: bool = False):
        super().__init__()
        self.manifest, self.pairs, self.resume = manifest, pairs, resume
        self.config, self.output = mining_config(settings), settings["output"]
        self.thresholds, _ = pair_thresholds(settings, pairs, manifest)
        self.pair_filter = settings.get("pair_filter")
        self.rows_per_part = bitext_settings(settings)["rows_per_part"]
        rows = {lang: entry["rows"] for lang, entry in manifest["languages"].items()}
        self.most_pairs = max((most_mined_pairs(self.config.selection, rows[src], rows[tgt]) for src, tgt in pairs),
                              default=0)
        # `max` selection's pairs whose one-to-one pass goes in rounds across workers (OneToOne)
        self.spread = {pair for pair in pairs if rows[pair[0]] + rows[pair[1]] > self.config.one_to_one_rows}
        self.source_shards = {pair: source_shards(manifest, pair[0]) for pair in pairs}   # its account
        float_bytes = 4 if embed_settings(settings)["dtype"] == "float32" else 2
        self.waves = join_waves(manifest, pairs, self.config.knn, wave_bytes, float_bytes)

    def expand(self, begin):
        config, manifest = self.config, self.manifest
        refine = refined_by_rows(manifest, self.pairs)
        # refined pairs meet their threshold once their margins are final
        thresholds = {pair: None for pair in self.pairs} if refine else self.thresholds
        uses = neighbourhoods_by_pair(manifest, self.pairs, config)
        join = KnnJoin(manifest, self.pairs, config, self.output, self.waves, self.resume)
        neighbours = begin | "KnnJoin" >> join
        pairs = (neighbours
                 | "ToMarginJoin" >> beam.FlatMap(to_margin_join)
                 | "JoinMeans" >> beam.GroupByKey()
                 | "Margins" >> beam.ParDo(ScoreCandidates(config.margin, ratio_floor(config, manifest), uses))
                 | "ByQueryShard" >> beam.GroupByKey()
                 | "Best" >> beam.ParDo(BestCandidates(manifest, keep_means=refine))
                 | "BySourceShard" >> beam.GroupByKey()
                 | "Select" >> beam.ParDo(Select(config.selection, thresholds, config.min_cosine)))
        if config.selection == "max":
            pairs = pairs | "OneToOne" >> OneToOne(thresholds, self.spread, self.source_shards)
        if refine:
            pairs = pairs | "RefinePairs" >> RefinePairs(manifest, config, ratio_floor(config, manifest), uses,
                                                          self.thresholds)
        for side in ("src", "tgt"):
            pairs = (pairs
                     | f"BySentenceShard{side}" >> beam.FlatMap(by_sentence_shard(side))
                     | f"GroupShard{side}" >> beam.GroupByKey()
                     | f"Attach{side}" >> beam.ParDo(AttachSide(manifest, side)))
        if PairFilter.from_settings(self.pair_filter) is not None:
            pairs = pairs | "FilterPairs" >> beam.ParDo(FilterPairs(self.pair_filter))
        # every pair arrives: each step passes a pair's empty block on (every_pair_written), so the writer writes a
        # pair without pairs too, with no marker of each pair flattened in (the Create and two Flattens ran as
        # bundles of their own: 4.4% of the stage's instructions at 10^4 sentences a language, docs/benchmarks.md)
        return pairs | "Write" >> WriteBitextParts(self.output, self.rows_per_part, self.most_pairs)


class PairsStage:
    """The stage as pipelines.mine runs it: the embed stage's manifest in, bitext out."""

    @staticmethod
    def check(settings: dict) -> None:
        """Before any stage runs: the mining, knn and pair filter settings parse, and the languages make a pair."""
        from pipelines.settings import check_pairs_possible

        mining_config(settings)
        PairFilter.from_settings(settings.get("pair_filter"))
        bitext_settings(settings)
        check_pairs_possible(settings)

    def __init__(self, settings: dict, manifests: dict):
        from pipelines.settings import language_pairs

        if "embed" not in manifests:
            raise ValueError("the pairs stage needs the embed stage's output: run it first (--stages embed)")
        self.settings, self.embeddings = settings, manifests["embed"]
        self.waves = 1  # the k-NN join's, once the pipeline is built (with the runner's knn.wave_bytes)
        self.resuming = False
        self.finished = None  # a finished output's entries by pair, where this run filters them (from_finished)
        self.counters = {}
        self.scratch = [layout.stage_chunks(settings["output"], "pairs")]  # removed once the stage is finished
        mining_config(settings)  # bad settings fail here, before a pipeline starts
        PairFilter.from_settings(settings.get("pair_filter"))
        found = [lang for lang, entry in self.embeddings["languages"].items() if entry["rows"]]
        wanted = settings.get("languages") or found
        self.pairs = language_pairs([lang for lang in wanted if lang in found], settings.get("pairs", "pivot"),
                                    settings.get("pivot", "eng_Latn"))
        missing = sorted(set(wanted) - set(found))
        if missing:
            log.warning("no sentences in %s: no pairs with them", ", ".join(missing))
        # "src-tgt" -> the small language whose neighbourhoods alone make the pair's margins (miner.margin)
        config, rows = mining_config(settings), self.embeddings["languages"]
        self.small_pools = {"-".join(pair): pair[0] if use == "src" else pair[1]
                            for pair, use in neighbourhoods_by_pair(self.embeddings, self.pairs, config).items()
                            if use != "both"}
        self.thresholds, self.moves = pair_thresholds(settings, self.pairs, self.embeddings)
        moved = {pair: value for pair, value in self.thresholds.items() if value != config.threshold}
        if moved:
            listed = ", ".join(f"{'-'.join(pair)} {value:.3f}" for pair, value in sorted(moved.items()))
            log.info("%d of %d pairs mined at their own threshold (%s): mining.threshold_offsets, and one-sided "
                     "margins' pool sizes", len(moved), len(self.pairs), listed)
        for name, small in self.small_pools.items():
            large = rows[next(lang for lang in name.split("-") if lang != small)]["rows"]
            count = rows[small]["rows"]
            log.info("%s: %s has %d %s against %d (mining.one_sided_below %s, one_sided_ratio %s): margins "
                     "over its neighbourhoods only", name, small, count, plural(count, "sentence"), large,
                     config.one_sided_below, config.one_sided_ratio)

    def resume(self) -> list[str]:
        """Keep the quantizers and list assignments a stopped run of this stage saved (pipelines.job calls this where
        the stopped run was run on the same inputs, settings and vectors), and do the rest; returns the files
        kept. Each is checked where it is read (pipelines.pairs.saved)."""
        self.resuming = True
        kept = layout.saved_files(self.settings["output"], "pairs")
        log.info("pairs: resuming a stopped run with the same inputs and settings: the %s %s it saved %s kept",
                 f"{len(kept):,}", plural(len(kept), "file"), "is" if len(kept) == 1 else "are")
        return kept

    def from_finished(self, finished: dict, depends: dict) -> list[str] | None:
        """Where a higher `mining.threshold` is the one change since the stage finished (`finished`, its manifest;
        `depends`, this run's dependencies), this run filters the finished bitext (pipelines.pairs.raised) instead
        of mining again; returns the files it reads and keeps (its bitext and quantizers), or None: mine."""
        raised = threshold_raised(finished.get("depends"), depends)
        entries = {entry["pair"]: entry for entry in finished.get("pairs", [])}
        if raised is None or sorted(entries) != sorted("-".join(pair) for pair in self.pairs):
            return None
        lower = [name for name, entry in entries.items() if entry.get("threshold") is None
                 or self.thresholds[tuple(name.split("-"))] < entry["threshold"]]
        if lower:  # a pair's own threshold moves with mining.threshold, but never trust what a filter cannot redo
            log.warning("pairs: the threshold rose, but not %s's own: mining again", lower[0])
            return None
        files = ([part[kind] for entry in entries.values() for part in layout.bitext_parts(entry)
                  for kind in ("parquet", "tsv")] + list(finished.get("quantizers", {}).values()))
        # the files checked as a reused stage's are (rows, sizes), before the stage clears anything: a Parquet
        # of fewer rows was filtered as the bitext, and a cut one failed inside Beam with the manifest gone
        problems = preflight.finished_problems(self.settings["output"], "pairs", finished)
        if problems:
            log.warning("pairs: only the threshold rose, but the finished output is not whole (%s%s): mining again",
                        problems[0], f"; and {len(problems) - 1} more files" if len(problems) > 1 else "")
            return None
        self.finished, self.counters = entries, finished.get("counters", {})
        log.info("pairs: only the threshold rose (%g -> %g): the finished bitext's rows at or above each pair's new "
                 "threshold are this run's, filtered without a k-NN join", *raised)
        return files

    def __call__(self, pipeline):
        from pipelines.options import wave_bytes

        if self.finished is not None:
            rows = bitext_settings(self.settings)["rows_per_part"]
            return pipeline | "pairs/Raised" >> FilterFinished(self.finished, self.thresholds, self.counters,
                                                               self.settings["output"], rows,
                                                               refined_by_rows(self.embeddings, self.pairs))

        setting = mining_config(self.settings).knn.wave_bytes
        budget = wave_bytes(setting, pipeline.options)
        mine = MinePairs(self.embeddings, self.pairs, self.settings, budget, self.resuming)
        self.waves = mine.waves
        if self.waves > 1:
            log.info("pairs: the k-NN join's groups go in %d waves (knn.wave_bytes %s: %.1f GB a wave at most)",
                     self.waves, setting, budget / 1e9)
        return pipeline | "pairs/Mine" >> mine

    def manifest(self, entries: list[dict]) -> dict:
        every_pair_written(self.pairs, entries)
        config, rows = mining_config(self.settings), self.embeddings["languages"]
        for entry in entries:  # how each direction searched, resolved from the two languages' sizes
            src, tgt = entry["pair"].split("-")
            fwd, bwd = (search_plan(config.knn, rows[lang]["rows"]) for lang in (tgt, src))
            entry["index"] = fwd if fwd == bwd else f"{fwd} (source->target), {bwd} (target->source)"
            if entry["pair"] in self.small_pools:
                entry["margin_neighbourhoods"] = self.small_pools[entry["pair"]]
            entry["threshold"] = self.thresholds[(src, tgt)]
            entry["threshold_moves"] = {why: round(by, 6) for why, by in self.moves[(src, tgt)].items() if by}
        searched = sorted({lang for pair in self.pairs for lang in pair})  # the quantizers TrainQuantizer wrote
        quantizers = {lang: layout.quantizer_file(self.settings["output"], lang) for lang in searched
                      if join_plan(config.knn, rows[lang]["rows"])[0] > 1}
        return {"stage": "pairs", "settings": {**config.describe(), "pair_filter": self.settings.get("pair_filter")},
                "pairs": sorted(entries, key=lambda e: e["pair"]), "quantizers": quantizers,
                "join_waves": self.waves}


def main(argv: list[str] | None = None) -> int:
    import sys

    from pipelines.job import main as job_main

    overview = sys.modules[__package__].__doc__   # the package's, loaded before any of its modules
    return job_main(["--stages", "pairs", *(argv if argv is not None else sys.argv[1:])], {"pairs": PairsStage},
                    prog="python -m pipelines.pairs", description=overview)
