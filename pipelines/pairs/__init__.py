"""The pairs stage: embeddings per language -> k-NN both ways -> margins -> selection -> bitext.

    python -m pipelines.pairs --output output             # after the embed stage; same flags as pipelines.mine

Per language pair (source, target), with the miner library doing the arithmetic (../shared/docs/METHODS.md §1):
  1. quantizer: per database language, the coarse quantizer (k-means centroids) of an IVF index of `knn.index`'s
     lists (auto: from the language's size), trained on a bounded sample; one list (exact search) below
     `knn.exact_below` sentences or with fewer sentences than lists;
  2. k-NN as a join (miner.knn_join, METHODS §10): each embedding shard is read once; each row is keyed by its
     list in its own language (as a database row) and by its nprobe nearest lists in the other language's
     quantizer (as a query); a group by (direction, group of lists, query block) brings each list's database rows
     and queries together, where they are compared exactly, list by list (each direction's groups and blocks are
     the layout that ships the fewest rows with about `knn.max_list_rows` rows on a side, join_layout; a query
     travels to a group once however many of its lists it probes; a list above that many database rows is split
     into blocks, which bounds a worker's memory); a small side goes to the other side's shards instead where that
     ships less (shard_routes: a crawl's long tail); a top-k combine keeps each query's k best across its lists.
     Similarities are exact; the rare query whose lists held fewer than k rows is searched exactly, counted. Where
     the rows shipped exceed `knn.wave_bytes`, the groups are sent and compared in waves, one after the other
     (join_waves), so that a cluster holds one wave's rows at a time;
  3. margins: fwd(x) and bwd(y) are the means of those k similarities; a candidate (x, y) needs the other side's
     mean, so candidates are joined with the means by key, the only place the two directions meet;
  4. selection: each sentence's best candidate (forward for sources, backward for targets), joined by (x, y):
     forward / backward / intersect / union are decided per pair; `max` (greedy one-to-one) takes the bests of a
     language pair together, two numbers per sentence, never its texts or vectors;
  4b. with `embed.binary_refine` (sign codes): the selected pairs scored again, each side's turned float row
     (read where it is stored) against the other side's signs (the only thing that travels), as
     miner.mining.refine_pairs does; the threshold applies after;
  5. output: texts and metadata joined from the sentence shards (one shard read per group), the pair filter's
     rules applied (miner.pair_filters: length ratio, numbers, URLs, identical sides, scripts; each drop counted
     by reason), sorted best first, written as Parquet and TSV.gz.

The modules, in the order the rows meet them: plan (the join's layout, from the manifest and the list sizes; no
Beam), shards (reading embedding shards), rows (a group's rows and their exact comparison, on arrays), join (step
2 as Beam transforms), saved (what a stopped join keeps for its next run), blocks (what steps 3-5 travel as),
margins (3), selection (4), refine (4b), output (5), raised (a higher threshold over a finished bitext: filtered,
no join), and stage (the whole stage, as pipelines.mine runs it).
"""

from pipelines.pairs.stage import MinePairs, PairsStage, main

__all__ = ["MinePairs", "PairsStage", "main"]
