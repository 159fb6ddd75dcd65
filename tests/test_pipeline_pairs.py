"""The embed and pairs stages on Beam give the pairs the mining library gives over the whole set, however the
sentences are sharded; a rerun writes the same bytes."""

import os

import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from encoders import load_encoder
from miner.mining import MiningConfig, mine
from pipelines import layout, manifests, storage
from pipelines.extract import sentences_manifest, write_sentence_shard
from pipelines.mine import run
from pipelines.text.records import Sentence
from tests.conftest import sample_sentences

LANGS = {"de": "deu_Latn", "en": "eng_Latn"}


def write_shards(output: str, n_shards: int) -> dict[str, list[str]]:
    """The bundled de-en example as sentence shards (unique texts, round-robin over shards)."""
    texts = {}
    entries = []
    for short, language in LANGS.items():
        unique = list(dict.fromkeys(sample_sentences()[short]))
        texts[language] = unique
        for shard in range(n_shards):
            rows = [Sentence(text=t, language=language, lid_score=1.0, url=f"https://example.org/{i}",
                             document_id=f"doc-{i}", paragraph_index=0, sentence_index=0, position=i)
                    for i, t in enumerate(unique) if i % n_shards == shard]
            entries.append(write_sentence_shard(output, language, shard, n_shards, rows))
    manifests.write(output, "extract", sentences_manifest(entries))  # as the extract stage writes it
    return texts


def settings_for(output: str, selection: str, one_sided_below: int = 1000, **mining) -> dict:
    return {"output": output, "encoder": "char-ngram", "languages": list(LANGS.values()), "pairs": "pivot",
            "pivot": "eng_Latn", "embed": {"dtype": "float32", "batch_size": 16},
            "mining": {"k": 4, "margin": "ratio", "selection": selection, "threshold": 1.0,
                       "one_sided_below": one_sided_below, **mining},
            "knn": {"index": "Flat"}, "pair_filter": False}


def library_pairs(texts: dict, selection: str, one_sided_below: int = 1000, **mining) -> set:
    encoder = load_encoder("char-ngram")
    src, tgt = texts["deu_Latn"], texts["eng_Latn"]
    pairs = mine(encoder.encode(src), encoder.encode(tgt),
                 MiningConfig(k=4, selection=selection, threshold=1.0, one_sided_below=one_sided_below, **mining))
    return {(src[s], tgt[t], round(float(m), 4)) for s, t, m in zip(pairs.src, pairs.tgt, pairs.margin)}


def test_pair_filter_in_the_stage_drops_what_the_library_filter_drops_and_counts_it(tmp_path):
    from miner.pair_filters import KEEP, PairFilter

    output = str(tmp_path / "out")
    texts = write_shards(output, 2)
    settings = {**settings_for(output, "max"), "pair_filter": {}}
    report = run(settings, PipelineOptions([]), ["embed", "pairs"])
    table = storage.read_parquet(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]).to_pydict()
    mined = {(s, t, round(m, 4)) for s, t, m in zip(table["src_text"], table["tgt_text"], table["score"])}
    chain = PairFilter.from_settings({})
    expected = {p for p in library_pairs(texts, "max") if chain.check(p[0], p[1], *LANGS.values()) is KEEP}
    assert mined == expected and chain.drops  # the example has pairs the rules drop
    counted = {k.removeprefix("filter/"): v for k, v in report["counters"]["pairs"]["pairs"].items()
               if k.startswith("filter/") and k != "filter/kept"}
    assert counted == dict(chain.drops)


def test_a_stage_makes_each_view_of_its_options_once(tmp_path, monkeypatch):
    """Beam asks the pipeline's options for views transform by transform, and each new view parses the flags again
    (pipelines/options.py ViewCachingOptions): within a stage, each kind of view is made once."""
    from collections import Counter

    from pipelines.options import ViewCachingOptions

    made, make, alive = Counter(), PipelineOptions.view_as, []

    def counted(options, cls):
        if isinstance(options, ViewCachingOptions):
            made[id(options), cls] += 1
            alive.append(options)  # an id is an object's only while it lives
        return make(options, cls)

    monkeypatch.setattr(PipelineOptions, "view_as", counted)
    output = str(tmp_path / "out")
    write_shards(output, 2)
    run(settings_for(output, "max"), PipelineOptions([]), ["embed", "pairs"])
    assert made  # the stages' pipelines ran with the caching options (and Beam's deep copy of them)
    assert max(made.values()) == 1


def test_min_cosine_keeps_no_pair_below_it(tmp_path):
    output = str(tmp_path / "out")
    write_shards(output, 2)
    settings = settings_for(output, "max")
    settings["mining"] = {**settings["mining"], "min_cosine": 0.5}
    run(settings, PipelineOptions([]), ["embed", "pairs"])
    table = storage.read_parquet(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]).to_pydict()
    assert table["cosine"] and min(table["cosine"]) >= 0.5


REFINED = {"dtype": "binary", "batch_size": 16, "binary_refine": True}


@pytest.mark.parametrize("selection, mining, embed", [("max", {}, None), ("max", {"one_to_one_rows": 2}, None),
                                                      ("union", {}, None), ("max", {}, REFINED)])
def test_a_pair_left_without_pairs_is_written_as_an_empty_bitext(tmp_path, selection, mining, embed):
    # no marker of each pair is flattened in: every step passes the pair's empty blocks on to the writer (in
    # `max`'s rounds too: one_to_one_rows 2 spreads the pass; refined, the threshold applies at the last step)
    output = str(tmp_path / "out")
    write_shards(output, 2)
    settings = settings_for(output, selection, **mining)
    settings["mining"]["threshold"] = 50.0  # no margin reaches it
    settings["embed"], settings["pair_filter"] = embed or settings["embed"], {}  # the filter passes them on too
    report = run(settings, PipelineOptions([]), ["embed", "pairs"])
    assert report["pairs"]["deu_Latn-eng_Latn"]["pairs"] == 0
    parquet, tsv = layout.bitext_files(output, "deu_Latn", "eng_Latn")
    assert storage.read_parquet(parquet).num_rows == 0 and storage.exists(tsv)


def test_a_pair_whose_every_group_is_lost_is_an_error_not_an_empty_bitext(tmp_path, monkeypatch):
    from pipelines.pairs.selection import Select

    output = str(tmp_path / "out")
    write_shards(output, 2)
    monkeypatch.setattr(Select, "process", lambda self, element: iter(()))  # a runner that delivers none of them
    with pytest.raises(RuntimeError, match="nothing of deu_Latn-eng_Latn reached the writer"):
        run(settings_for(output, "max"), PipelineOptions([]), ["embed", "pairs"])
    assert not storage.exists(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0])


@pytest.mark.parametrize("selection, n_shards, below", [("max", 3, 1000), ("union", 2, 1000), ("intersect", 1, 1000),
                                                      ("max", 2, 40)])
def test_sharded_beam_mining_equals_the_library(tmp_path, selection, n_shards, below):
    # below 40: German's 32 sentences are a small pool beside English's 45 (miner.margin.neighbourhoods)
    output = str(tmp_path / "out")
    texts = write_shards(output, n_shards)
    report = run(settings_for(output, selection, below), PipelineOptions([]), ["embed", "pairs"])
    table = storage.read_parquet(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]).to_pydict()
    mined = {(s, t, round(m, 4)) for s, t, m in zip(table["src_text"], table["tgt_text"], table["score"])}
    assert mined == library_pairs(texts, selection, below)
    assert (mined == library_pairs(texts, selection, 0)) is (below == 1000)  # the rule changed the margins
    assert report["pairs"]["deu_Latn-eng_Latn"].get("margin_neighbourhoods") == ("deu_Latn" if below == 40 else None)
    assert report["pairs"]["deu_Latn-eng_Latn"]["pairs"] == len(mined)
    assert table["score"] == sorted(table["score"], reverse=True)
    assert set(table) >= {"src_url", "tgt_document_id", "src_paragraph_index", "cosine"}


def test_an_outnumbered_pool_is_mined_as_the_library_mines_it_at_its_pools_threshold(tmp_path):
    """English's 45 sentences outnumber German's 32 by more than one_sided_ratio: German's neighbourhoods alone,
    and the threshold moved for a pool of 45 (miner.margin.pool_shift; pool sizes scaled down to the example)."""
    output = str(tmp_path / "out")
    texts = write_shards(output, 2)
    rule = {"one_sided_ratio": 1.3, "pool_slope": -0.1, "pool_sizes": [10, 100]}
    report = run(settings_for(output, "max", 0, **rule), PipelineOptions([]), ["embed", "pairs"])
    table = storage.read_parquet(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]).to_pydict()
    mined = {(s, t, round(m, 4)) for s, t, m in zip(table["src_text"], table["tgt_text"], table["score"])}
    assert mined == library_pairs(texts, "max", 0, **rule)
    entry = report["pairs"]["deu_Latn-eng_Latn"]
    assert entry["margin_neighbourhoods"] == "deu_Latn"
    assert entry["threshold"] == pytest.approx(1.0 - 0.1 * np.log(45 / 10))
    assert entry["threshold_moves"] == {"pool": pytest.approx(-0.1 * np.log(45 / 10), abs=1e-6)}
    unmoved = library_pairs(texts, "max", 0, **{**rule, "pool_slope": 0.0})
    assert len(unmoved) < len(mined)  # the lower threshold kept more pairs


def test_rerun_is_byte_identical_and_skips_finished_stages(tmp_path):
    output = str(tmp_path / "out")
    write_shards(output, 2)
    settings = settings_for(output, "max")
    run(settings, PipelineOptions([]), ["embed", "pairs"])
    parquet, tsv = layout.bitext_files(output, "deu_Latn", "eng_Latn")
    first = storage.read_bytes(parquet), storage.read_bytes(tsv)
    embedded = storage.read_json(layout.manifest_path(output, "embed"))
    run(settings, PipelineOptions([]), ["embed", "pairs"])  # finished: nothing runs again
    assert storage.read_json(layout.manifest_path(output, "embed")) == embedded
    run(settings, PipelineOptions([]), ["embed", "pairs"], rerun=True)
    assert (storage.read_bytes(parquet), storage.read_bytes(tsv)) == first


def test_vectors_are_stored_per_sentence_shard(tmp_path):
    output = str(tmp_path / "out")
    texts = write_shards(output, 2)
    run(settings_for(output, "max"), PipelineOptions([]), ["embed"])
    manifest = manifests.read(output, "embed")
    entry = manifest["languages"]["deu_Latn"]
    assert entry["rows"] == len(texts["deu_Latn"]) and len(entry["shards"]) == 2
    first = entry["shards"][0]
    sentences = storage.read_parquet(first["path"], columns=["text"]).column("text").to_pylist()
    vectors = np.load(first["embeddings"])
    np.testing.assert_allclose(vectors, load_encoder("char-ngram").encode(sentences), atol=1e-6)


@pytest.mark.parametrize("sizes,below,use", [((2, 3), 1000, "both"), ((2, 3), 3, "src"), ((3, 2), 3, "tgt"),
                                             ((2, 3), 0, "both")])
def test_beam_margins_are_the_library_margins_on_a_set_smaller_than_k(sizes, below, use):
    # The stage's join (to_margin_join, ScoreCandidates) on 2 x 3 random vectors at k = 4, whose neighbourhood
    # means are near zero (issue 15: 1.4e5 under the old rule), gives the library's floored margins, with the
    # floor the stage resolves from the embed manifest's dimension; with both sides' means, or one side's alone
    # where its pool is under one_sided_below and the other's is not.
    from collections import defaultdict

    from miner.knn_join import Neighbours
    from miner.mining import score_neighbours
    from pipelines.pairs.margins import ScoreCandidates, neighbourhoods_by_pair, ratio_floor, to_margin_join

    rng = np.random.default_rng(23)
    x, y = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in (rng.standard_normal((n, 512)) for n in sizes))
    x, y = x.astype(np.float32), y.astype(np.float32)
    config = MiningConfig(k=4, one_sided_below=below)
    forward, backward = score_neighbours(x, y, config)
    manifest = {"languages": {"src": {"rows": sizes[0], "dim": 512}, "tgt": {"rows": sizes[1], "dim": 512}}}
    pair = ("src", "tgt")
    uses = neighbourhoods_by_pair(manifest, [pair], config)
    assert uses == {pair: use}
    tables = [((pair, "src", 0), Neighbours(np.arange(sizes[0]), forward.cos, forward.ids)),
              ((pair, "tgt", 0), Neighbours(np.arange(sizes[1]), backward.cos, backward.ids))]
    grouped = defaultdict(list)
    for table in tables:
        for key, value in to_margin_join(table):
            grouped[key].append(value)
    scorer = ScoreCandidates("ratio", ratio_floor(config, manifest), uses)
    beam_margins = {(side, int(q), int(r)): s for element in grouped.items()
                    for (_, side, _), block in scorer.process(element)
                    for q, r, s in zip(block.queries, block.refs, block.scores)}
    library = {("src", i, int(j)): m for i in range(sizes[0]) for j, m in zip(forward.ids[i], forward.margins[i])}
    library |= {("tgt", j, int(i)): m for j in range(sizes[1])
                for i, m in zip(backward.ids[j], backward.margins[j])}
    assert beam_margins == library  # bit for bit
    assert max(beam_margins.values()) < 1


def test_candidates_whose_neighbour_mean_never_arrived_are_an_error_not_a_margin():
    from miner.knn_join import Neighbours
    from pipelines.pairs.margins import ScoreCandidates, to_margin_join

    pair = ("deu_Latn", "eng_Latn")
    table = Neighbours(np.arange(2), np.full((2, 1), 0.5, np.float32), np.array([[0], [1]]))
    candidates = [block for key, block in to_margin_join(((pair, "src", 0), table)) if key[1] == "tgt"]
    mean = next(block for key, block in to_margin_join(((pair, "tgt", 0), Neighbours(
        np.array([0]), np.full((1, 1), 0.5, np.float32), np.array([[0]])))) if key[1] == "tgt")
    with pytest.raises(RuntimeError, match="tgt shard 0: candidates point at sentences whose neighbourhood mean"):
        list(ScoreCandidates("ratio", 0.1, {pair: "both"}).process(((pair, "tgt", 0), [*candidates, mean])))


def test_a_query_shard_whose_candidates_arrived_in_part_is_an_error_not_a_smaller_bitext():
    from miner.knn_join import Neighbours
    from pipelines.pairs.margins import ScoreCandidates, to_margin_join
    from pipelines.pairs.selection import BestCandidates

    pair = ("deu_Latn", "eng_Latn")
    manifest = {"languages": {"deu_Latn": {"shards": [{"rows": 3}]}, "eng_Latn": {"shards": [{"rows": 2}]}}}
    sims = np.full((3, 1), 0.5, np.float32)
    blocks = [*to_margin_join(((pair, "src", 0), Neighbours(np.arange(3), sims, np.array([[0], [1], [1]])))),
              *to_margin_join(((pair, "tgt", 0), Neighbours(np.arange(2), sims[:2], np.array([[0], [1]]))))]
    grouped = {}
    for key, block in blocks:
        grouped.setdefault(key, []).append(block)
    scorer = ScoreCandidates("ratio", 0.1, {pair: "both"})
    scored = [block for key in grouped for _, block in scorer.process((key, grouped[key]))
              if key[1] == "tgt"]  # the source queries' candidates
    best = BestCandidates(manifest)
    assert sum(len(b) for _, b in best.process(((pair, "src", 0), scored))) == 3
    partial = [block.take(np.flatnonzero(block.queries != 2)) for block in scored]  # query 2's candidates lost
    with pytest.raises(RuntimeError, match="src shard 0: 2 of its 3 queries have candidates"):
        list(best.process(((pair, "src", 0), partial)))


def counters(report: dict) -> dict:
    return report["counters"]["pairs"]["pairs"]


def test_the_join_over_every_list_with_split_hot_lists_equals_exact_search(tmp_path):
    output = str(tmp_path / "out")
    texts = write_shards(output, 2)
    settings = settings_for(output, "max")
    settings["knn"] = {"index": "IVF4,Flat", "nprobe": 4, "max_list_rows": 3}  # every list, blocks of ~3 rows
    report = run(settings, PipelineOptions([]), ["embed", "pairs"])
    table = storage.read_parquet(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]).to_pydict()
    mined = {(s, t, round(m, 4)) for s, t, m in zip(table["src_text"], table["tgt_text"], table["score"])}
    assert mined == library_pairs(texts, "max")
    assert counters(report)["hot_list_blocks"] > 0
    assert counters(report)["queries"] == len(texts["deu_Latn"]) + len(texts["eng_Latn"])
    assert storage.read_json(layout.manifest_path(output, "pairs"))["pairs"][0]["index"] == "IVF4,nprobe=4"
    quantizers = {language: layout.quantizer_file(output, language) for language in LANGS.values()}
    assert manifests.read(output, "pairs")["quantizers"] == quantizers  # listed: a reused stage keeps them
    run(settings, PipelineOptions([]), ["embed", "pairs"])
    assert all(storage.exists(path) for path in quantizers.values())


def test_groups_that_take_their_queries_in_blocks_write_the_bytes_of_one_block(tmp_path, monkeypatch):
    """Few large groups whose queries come in blocks, each meeting all of its group's database rows (join_layout's
    choice where a query probes a large share of the lists), or one list a group: the same bitext."""
    from miner.knn_join import JoinLayout
    from pipelines.pairs import plan

    found = []
    for shape in (JoinLayout(1, 1), JoinLayout(4, 3)):
        output = str(tmp_path / f"out-{shape.lists_per_group}-{shape.query_blocks}")
        write_shards(output, 2)
        settings = settings_for(output, "max")
        settings["knn"] = {"index": "IVF4,Flat", "nprobe": 2}
        monkeypatch.setattr(plan, "join_layout", lambda *args, shape=shape: shape)
        monkeypatch.setattr(plan, "shard_routes", lambda *args: {})  # every direction through the join
        report = run(settings, PipelineOptions([]), ["embed", "pairs"])
        sent = counters(report)["query_rows_sent"], counters(report)["database_rows_sent"]
        found.append((storage.read_bytes(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]), sent))
    assert found[0][0] == found[1][0]
    (one_list_queries, one_list_database), (blocks_queries, blocks_database) = found[0][1], found[1][1]
    assert blocks_queries < one_list_queries  # a query travels once, not once to each list it probes
    assert blocks_database == 3 * one_list_database  # a database row goes to each of its group's 3 blocks


# binary: packed codes compared by Hamming distance; one shard a language: each direction's tables come whole from
# a shard's comparison (plan.tables_whole_on_shards), two: German's queries meet English's two shards, then a merge
@pytest.mark.parametrize("dtype", ["float32", "binary"])
@pytest.mark.parametrize("n_shards", [1, 2])
def test_queries_whose_lists_hold_fewer_than_k_rows_are_searched_exactly(tmp_path, dtype, n_shards, monkeypatch):
    output = str(tmp_path / "out")
    texts = write_shards(output, n_shards)
    settings = settings_for(output, "union")
    settings["embed"]["dtype"] = dtype
    settings["knn"] = {"index": "IVF16,Flat", "nprobe": 1}  # ~2-3 rows a list: most queries find fewer than 4
    report = run(settings, PipelineOptions([]), ["embed", "pairs"])
    assert counters(report)["queries_searched_exactly_after_short_lists"] > 0
    assert counters(report)["queries"] == len(texts["deu_Latn"]) + len(texts["eng_Latn"])
    if dtype == "binary":  # the same bitext as the codes widened to float rows give
        found = storage.read_bytes(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0])
        monkeypatch.setattr("pipelines.pairs.shards.hamming_countable", lambda code, width: False)
        widened = str(tmp_path / "widened")
        write_shards(widened, n_shards)
        run({**settings, "output": widened}, PipelineOptions([]), ["embed", "pairs"])
        assert storage.read_bytes(layout.bitext_files(widened, "deu_Latn", "eng_Latn")[0]) == found


def test_a_language_with_fewer_sentences_than_k_is_searched_exactly(tmp_path):
    output = str(tmp_path / "out")
    write_shards(output, 1)
    manifest = manifests.read(output, "extract")
    shard = manifest["languages"]["deu_Latn"]["shards"][0]
    few = storage.read_parquet(shard["path"]).slice(0, 3)
    storage.write_parquet(shard["path"], few)
    shard["rows"] = manifest["languages"]["deu_Latn"]["rows"] = 3
    manifests.write(output, "extract", manifest)
    settings = settings_for(output, "union")
    settings["knn"] = {"index": "IVF16,Flat"}  # more lists than German sentences: exact search for them
    report = run(settings, PipelineOptions([]), ["embed", "pairs"])
    assert counters(report)["languages_searched_exactly"] == 1 and counters(report)["queries"] == 3 + 45
    assert "queries_searched_exactly_after_short_lists" not in counters(report)


def embedded_with_one_shard_changed(tmp_path, language: str, change) -> dict:
    """The example embedded in two shards, then the second embedding shard of `language` rewritten as
    change(vectors); returns the settings, for the pairs stage to run on it."""
    output = str(tmp_path / "out")
    write_shards(output, 2)
    settings = settings_for(output, "max")
    run(settings, PipelineOptions([]), ["embed"])
    shard = manifests.read(output, "embed")["languages"][language]["shards"][1]
    np.save(shard["embeddings"], change(np.load(shard["embeddings"])))
    return settings


def test_vectors_of_another_dimension_in_one_shard_are_an_error_naming_it(tmp_path):
    settings = embedded_with_one_shard_changed(tmp_path, "eng_Latn", lambda vectors: vectors[:, :100])
    with pytest.raises(Exception, match=r"part-00001-of-00002\.npy: vectors have 100 dimensions, expected"):
        run(settings, PipelineOptions([]), ["pairs"])


def test_a_nan_in_one_shard_is_an_error_naming_the_shard_and_row(tmp_path):
    def with_a_nan(vectors):
        vectors[3, 7] = np.nan
        return vectors

    settings = embedded_with_one_shard_changed(tmp_path, "deu_Latn", with_a_nan)
    with pytest.raises(Exception, match=r"deu_Latn/part-00001-of-00002\.npy: row 3 contains NaN or infinite"):
        run(settings, PipelineOptions([]), ["pairs"])


def test_margins_are_the_library_margins_of_the_same_neighbour_lists_bit_for_bit(tmp_path):
    from miner.knn_join import search_by_lists
    from miner.margin import candidate_margins, neighbourhood_mean

    output = str(tmp_path / "out")
    write_shards(output, 2)
    settings = settings_for(output, "union")
    settings["knn"] = {"index": "IVF4,Flat", "nprobe": 2}  # approximate: the lists decide the neighbours
    run(settings, PipelineOptions([]), ["embed", "pairs"])
    embedded = manifests.read(output, "embed")["languages"]
    vectors, texts = {}, {}
    for language, entry in embedded.items():  # shard-major order is reference order
        vectors[language] = np.concatenate([np.load(s["embeddings"]) for s in entry["shards"]])
        texts[language] = [t for s in entry["shards"] for t in storage.read_parquet(s["path"])["text"].to_pylist()]
    src, tgt = vectors["deu_Latn"], vectors["eng_Latn"]
    centroids = {lang: np.load(layout.quantizer_file(output, lang)) for lang in vectors}
    fwd = search_by_lists(src, tgt, 4, centroids["eng_Latn"], 2)
    bwd = search_by_lists(tgt, src, 4, centroids["deu_Latn"], 2)
    fwd_mean, bwd_mean = neighbourhood_mean(fwd.sims), neighbourhood_mean(bwd.sims)
    floor = MiningConfig(k=4).floor_for(src.shape[1])  # the ratio margin's default floor, 2 / sqrt(d)
    expected = {}
    forward = candidate_margins(fwd.sims, fwd.refs, fwd_mean, bwd_mean, floor=floor)
    for i, (ids, margins) in enumerate(zip(fwd.refs, forward)):
        expected.update({(i, int(j)): m for j, m in zip(ids, margins)})
    backward = candidate_margins(bwd.sims, bwd.refs, bwd_mean, fwd_mean, floor=floor)
    for j, (ids, margins) in enumerate(zip(bwd.refs, backward)):
        expected.update({(int(i), j): m for i, m in zip(ids, margins)})
    table = storage.read_parquet(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]).to_pydict()
    assert table["score"]
    for s, t, score in zip(table["src_text"], table["tgt_text"], table["score"]):
        key = (texts["deu_Latn"].index(s), texts["eng_Latn"].index(t))
        assert np.float32(score) == expected[key]


def join_only_manifest(deu_rows: int, eng_rows: int) -> dict:
    """Languages in 10 shards each: no side small enough to go to the other's shards (shard_routes), so every
    direction goes through the join's groups."""
    return {"languages": {"deu_Latn": {"rows": deu_rows, "shards": [{}] * 10},
                          "eng_Latn": {"rows": eng_rows, "shards": [{}] * 10}}}


def test_the_join_layout_follows_the_vectors_width():
    """knn.max_list_rows: auto is resolved from the manifest's vector width: the layout of 256-d rows is that of
    200,000 rows a side, of 1,024-d rows that of 50,000 (the same bytes)."""
    from miner.index import KnnConfig
    from pipelines.pairs.plan import join_shapes

    pairs = [("deu_Latn", "eng_Latn")]
    for dim, rows in ((256, 200_000), (1024, 50_000)):
        manifest = join_only_manifest(250_000, 250_000)
        for entry in manifest["languages"].values():
            entry["dim"] = dim
        auto = join_shapes(manifest, pairs, KnnConfig(index="IVF2048,Flat", nprobe=16))
        assert auto == join_shapes(manifest, pairs, KnnConfig(index="IVF2048,Flat", nprobe=16, max_list_rows=rows))
    assert auto != join_shapes(manifest, pairs, KnnConfig(index="IVF2048,Flat", nprobe=16, max_list_rows=200_000))


def test_a_group_the_runner_delivered_in_parts_is_an_error_not_fewer_neighbours():
    from miner.index import KnnConfig
    from miner.knn_join import list_topk
    from miner.mining import MiningConfig
    from pipelines.pairs.join import CompareList, SplitHotLists
    from pipelines.pairs.rows import ListRows

    pair, manifest = ("deu_Latn", "eng_Latn"), join_only_manifest(3, 6)
    config = MiningConfig(knn=KnnConfig(index="IVF2,Flat", nprobe=2))  # both lists in one group
    rng = np.random.default_rng(0)
    queries, database = (rng.standard_normal((n, 8)).astype(np.float32) for n in (3, 6))
    q = ListRows.of("q", np.repeat([0, 1], 3), np.tile(np.arange(3), 2), np.arange(3), queries)  # each in both
    db = ListRows.of("db", np.repeat([0, 1], 3), np.arange(6), np.arange(6), database)
    assert len(q.refs) == 3 and len(q.members) == 6  # a query travels once per group, whatever it probes there
    sizes = {(pair, "src", "q"): np.array([3, 3]), (pair, "src", "db"): np.array([3, 3]),
             (pair, "tgt", "q"): np.array([6, 6]), (pair, "tgt", "db"): np.array([2, 1])}
    compare = CompareList(manifest, [pair], config)
    (key, found), = compare.process(((pair, "src", 0, -1, 0, 0), [q, db]), sizes)
    exact = list_topk(queries, np.arange(3), database, np.arange(6), 4)
    assert key == (pair, "src", 0) and np.array_equal(found.refs, exact.refs)  # each query met both lists
    with pytest.raises(RuntimeError, match="list group 0: the group holds 3 db rows, its lists have 6"):
        list(compare.process(((pair, "src", 0, -1, 0, 0), [q, db.take(np.arange(6) < 3)]), sizes))
    split = SplitHotLists(manifest, [pair], config.knn)
    assert len(list(split.split(((pair, "src", 0), q), sizes))) == 1
    with pytest.raises(RuntimeError, match="deu_Latn -> eng_Latn: the list sizes count 5 q rows, 6 expected: the "
                                           "runner gave an incomplete side input"):
        list(split.split(((pair, "src", 0), q), {**sizes, (pair, "src", "q"): np.array([3, 2])}))


def test_a_small_side_sent_to_the_other_sides_shards_gives_the_bytes_of_the_join(tmp_path, monkeypatch):
    """The small side of a direction goes to the other's shards, read where it arrives, and meets there the rows of
    the lists it probes (queries to each database shard, or a database to each query shard), instead of both
    through the join: the same bitext, and the other side's rows not shipped. A route no direction takes is left
    out of the pipeline, and so is the merge of each query shard's parts where a shard's comparison makes the whole
    table (every direction to its query shards, or to a database of one shard)."""
    import apache_beam as beam
    from apache_beam.pipeline import PipelineVisitor

    from pipelines.pairs import plan

    built, beams_run = [], beam.Pipeline.run

    class Labels(PipelineVisitor):
        def visit_transform(self, node):
            built[-1].update(node.full_label.split("/"))  # the leaf's label and its composites'
            if node.full_label.endswith("/ByShard"):  # what feeds the grouping of the rows sent
                built[-1].add(f"ByShard<-{node.inputs[0].producer.full_label.rsplit('/', 1)[-1]}")

    def run_seeing_transforms(pipeline, *args, **kwargs):
        built.append(set())
        pipeline.visit(Labels())
        return beams_run(pipeline, *args, **kwargs)

    monkeypatch.setattr(beam.Pipeline, "run", run_seeing_transforms)
    found = {}
    for index in ("Flat", "IVF4,Flat"):
        for route, shards in ((None, 2), (plan.TO_QUERIES, 2), (plan.TO_DATABASE, 2), (None, 1),
                              (plan.TO_DATABASE, 1)):
            output = str(tmp_path / f"out-{index}-{route}-{shards}")
            write_shards(output, shards)
            settings = settings_for(output, "max")
            settings["knn"] = {"index": index, "nprobe": 2}
            monkeypatch.setattr(plan, "shard_routes", lambda manifest, pairs_, knn, route=route: {
                (pair, side): (route, 0) for pair, side, _, _ in plan.directions(pairs_)} if route else {})
            report = run(settings, PipelineOptions([]), ["embed", "pairs"])
            pairs_stage = built[-1]
            assert ("CompareOnShards" in pairs_stage) == (route is not None)
            # straight from AssignShard's one output: a Flatten of two before it ran as a bundle of its own
            assert ("ByShard<-ParDo(AssignShard)" in pairs_stage) == (route is not None)
            assert ("ByListGroup" in pairs_stage) == (route is None)
            whole = route == plan.TO_QUERIES or route == plan.TO_DATABASE and shards == 1
            assert {"MergeTopK", "QueryShards", "Parts"} & pairs_stage == (set() if whole else
                                                                           {"MergeTopK", "QueryShards", "Parts"})
            # one worker in this process: nothing to spread over (a Reshuffle's first leaf keys by random)
            assert "AddRandomKeys" not in pairs_stage
            found[index, route, shards] = (storage.read_bytes(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]),
                                   counters(report).get("query_rows_sent", 0),
                                   counters(report).get("database_rows_sent", 0))
        joined = found[index, None, 2][0]
        assert found[index, plan.TO_QUERIES, 2][0] == found[index, plan.TO_DATABASE, 2][0] == joined
        assert found[index, plan.TO_DATABASE, 1][0] == found[index, None, 1][0]
        for shards in (1, 2):  # no query shipped to the query shards, no database row to the database shards
            assert found[index, plan.TO_DATABASE, shards][2] == 0 and found[index, plan.TO_DATABASE, shards][1] > 0
        assert found[index, plan.TO_QUERIES, 2][1] == 0 and found[index, plan.TO_QUERIES, 2][2] > 0
    assert found["Flat", None, 2][0] != found["IVF4,Flat", None, 2][0]  # the lists decide some neighbours


def test_the_long_tail_of_small_languages_goes_to_the_pivots_shards_in_batches():
    from miner.index import KnnConfig
    from pipelines.pairs.plan import TO_DATABASE, TO_QUERIES, shard_routes

    sizes = {"eng_Latn": 30_000, "deu_Latn": 20_000, "fra_Latn": 900, "spa_Latn": 700, "ita_Latn": 400}
    manifest = {"languages": {lang: {"rows": rows, "shards": [{}] * max(1, rows // 10_000)}
                              for lang, rows in sizes.items()}}
    pairs = [(lang, "eng_Latn") for lang in ("deu_Latn", "fra_Latn", "spa_Latn", "ita_Latn")]
    routes = shard_routes(manifest, pairs, KnnConfig(max_list_rows=1_500))
    # English against each small language: its 900, 700 and 400 rows to English's 3 shards, and the small
    # languages' queries to them too, each route in batches of at most 1,500 rows; German and English: the join
    assert routes == {(pairs[1], "tgt"): (TO_QUERIES, 0), (pairs[2], "tgt"): (TO_QUERIES, 1),
                      (pairs[3], "tgt"): (TO_QUERIES, 0), (pairs[1], "src"): (TO_DATABASE, 0),
                      (pairs[2], "src"): (TO_DATABASE, 1), (pairs[3], "src"): (TO_DATABASE, 0)}


def test_a_side_sent_to_a_shard_in_part_is_an_error_not_fewer_neighbours(tmp_path):
    from miner.mining import MiningConfig
    from pipelines.pairs.join import CompareOnShard
    from pipelines.pairs.plan import TO_QUERIES
    from pipelines.pairs.rows import ListRows
    from pipelines.pairs.saved import ListAssignments

    output = str(tmp_path / "out")
    write_shards(output, 1)
    run(settings_for(output, "max"), PipelineOptions([]), ["embed"])
    manifest = manifests.read(output, "embed")
    rows = np.load(manifest["languages"]["deu_Latn"]["shards"][0]["embeddings"])
    refs = layout.pack(0, np.arange(len(rows), dtype=np.int64))
    pair = ("deu_Latn", "eng_Latn")
    centroids = {lang: np.zeros((1, rows.shape[1]), np.float32) for lang in LANGS.values()}
    whole = ListRows.of("db", np.zeros(len(rows), dtype=np.int64), np.arange(len(rows)), refs, rows)
    compare = CompareOnShard(manifest, MiningConfig(k=4), ListAssignments(output))
    compare.setup()
    (key, table), = compare.process(((TO_QUERIES, "eng_Latn", 0, 0), [((pair, "tgt"), whole)]), centroids)
    assert key == (pair, "tgt", 0) and table.found().min() == 4
    part = whole.take(np.arange(len(rows)) > 0)
    with pytest.raises(RuntimeError, match=r"eng_Latn shard 0: deu_Latn's rows arrived as \d+ rows in \d+ lists' "
                                           r"memberships, \d+ rows in \d+ expected"):
        list(compare.process(((TO_QUERIES, "eng_Latn", 0, 0), [((pair, "tgt"), part)]), centroids))


def test_a_group_takes_its_queries_in_blocks_each_meeting_all_of_its_database_rows():
    from miner.index import KnnConfig
    from miner.knn_join import JoinLayout, list_topk
    from miner.mining import MiningConfig
    from pipelines.pairs.join import CompareList, CountByList, SplitHotLists
    from pipelines.pairs.plan import join_shapes, list_sizes
    from pipelines.pairs.rows import ListRows

    pair, manifest = ("deu_Latn", "eng_Latn"), join_only_manifest(40, 8)
    config = MiningConfig(knn=KnnConfig(index="IVF2,Flat", nprobe=2, max_list_rows=10))
    shapes = join_shapes(manifest, [pair], config.knn)
    assert shapes[pair, "src"] == JoinLayout(2, 4)  # 40 queries in each list: 4 blocks, and no list is hot
    rng = np.random.default_rng(0)
    queries, database = (rng.standard_normal((n, 8)).astype(np.float32) for n in (40, 8))
    q = ListRows.of("q", np.repeat([0, 1], 40), np.tile(np.arange(40), 2), np.arange(40), queries)
    db = ListRows.of("db", np.repeat([0, 1], 4), np.arange(8), np.arange(8), database)
    reverse = (ListRows.of("q", np.repeat([0, 1], 8), np.tile(np.arange(8), 2), np.arange(8), database),
               ListRows.of("db", np.repeat([0, 1], 20), np.arange(40), np.arange(40), queries))
    sizes, count = {}, CountByList()
    for side, chunk in [("src", q), ("src", db), *(("tgt", chunk) for chunk in reverse)]:
        key, part = list_sizes(((pair, side, 0), chunk), shapes)
        sizes[key] = count.add_input(sizes.get(key, count.create_accumulator()), part)
    split = SplitHotLists(manifest, [pair], config.knn)
    by_key = {}
    for chunk in (q, db):
        for key, part in split.split(((pair, "src", 0), chunk), sizes):
            by_key.setdefault(key, []).append(part)
    assert sorted(by_key) == [(pair, "src", 0, -1, block, 0) for block in range(4)]
    assert all([part.kind for part in parts] == ["q", "db"] and len(parts[1].refs) == 8 for parts in by_key.values())
    compare = CompareList(manifest, [pair], config)
    found = [table for key, parts in by_key.items() for _, table in compare.process((key, parts), sizes)]
    queried = np.concatenate([table.queries for table in found])
    assert sorted(queried.tolist()) == list(range(40))  # each query in one block
    refs = np.concatenate([table.refs for table in found])[np.argsort(queried)]
    assert np.array_equal(refs, list_topk(queries, np.arange(40), database, np.arange(8), 4).refs)
    key, (block_queries, block_database) = next(iter(by_key.items()))
    with pytest.raises(RuntimeError, match=r"list group 0 query block \d: the group holds \d+ q rows"):
        list(compare.process((key, [block_queries.take(np.arange(len(block_queries.members)) % 2 == 0),
                                    block_database]), sizes))


@pytest.mark.parametrize("dtype", ["float16", "binary"])
def test_a_groups_lists_merged_as_they_come_are_the_merge_of_all(dtype):
    """compare_lists merges each list's k best into its table as it goes: the same neighbours and bits as
    merge_topk over every list's part at the end, also where sign codes tie."""
    from encoders import binary
    from miner.knn_join import list_topk, merge_topk
    from pipelines.pairs import rows as group_rows
    from pipelines.pairs.shards import as_cosines

    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((300, 64)).astype(np.float32)
    rows = binary.pack(binary.sign_bits(vectors)) if dtype == "binary" else vectors.astype(np.float16)
    code, refs = ("sign" if dtype == "binary" else None), np.arange(300, dtype=np.int64)
    q_lists, db_lists = np.argsort(rng.random((200, 12)), axis=1)[:, :5], rng.integers(0, 12, 100)  # 5 of 12
    member_q = np.argsort(q_lists.ravel(), kind="stable")
    queries = group_rows.ListRows.of("q", q_lists.ravel()[member_q], member_q // 5, refs[:200], rows[:200])
    order = np.argsort(db_lists, kind="stable")
    database = group_rows.ListRows.of("db", db_lists[order], order, refs[200:], rows[200:])

    class Count:
        def inc(self, n):
            pass

    packed = dtype == "binary"
    q_group = group_rows.stacked([queries], code, "q", packed)
    db_group = group_rows.stacked([database], code, "db", packed)
    found = group_rows.compare_lists(q_group, db_group, 4, code, packed, None, Count())
    parts = []
    for list_id in np.unique(db_lists):
        (_, q_refs, q_rows), (_, db_refs, db_rows) = q_group.of_list(list_id), db_group.of_list(list_id)
        parts.append(as_cosines(list_topk(q_rows, q_refs, db_rows, db_refs, 4, unit=True,
                                          exact=packed, packed_signs=packed), code))
    expected = merge_topk(parts, 4)
    assert np.array_equal(found.queries, expected.queries) and np.array_equal(found.refs, expected.refs)
    assert found.sims.tobytes() == expected.sims.tobytes()
    assert (found.refs[:, 0] >= 200).all()


@pytest.mark.parametrize("interleaved", [False, True])
def test_a_groups_memberships_are_ordered_by_list_then_reference_whatever_order_the_chunks_come_in(interleaved):
    """stacked orders a group's memberships by list, then reference, each naming its own row, with chunks in any
    order: shards' references apart (the stable sort by list) or interleaved (the lexsort it falls back to)."""
    from pipelines import layout
    from pipelines.pairs import rows as group_rows

    rng = np.random.default_rng(3)
    chunks = []
    for shard in range(3):
        rows = np.arange(40, dtype=np.int64)
        refs = rows * 3 + shard if interleaved else layout.pack(shard, rows)
        lists = rng.integers(0, 6, (40, 2))
        lists[:, 1] = (lists[:, 0] + 1 + rng.integers(0, 5, 40)) % 6  # two distinct lists a row
        flat, member = lists.ravel(), np.repeat(rows, 2)
        order = np.argsort(flat, kind="stable")
        vectors = rng.standard_normal((40, 8)).astype(np.float16)
        chunks.append(group_rows.ListRows.of("q", flat[order], member[order], refs, vectors))
    chunks = [chunks[2], chunks[0], chunks[1]]
    group = group_rows.stacked(chunks, None, "q")
    every_ref = np.concatenate([c.refs for c in chunks])
    assert np.array_equal(np.lexsort((group.refs, group.lists)), np.arange(len(group.refs)))
    assert len({(a, b) for a, b in zip(group.lists.tolist(), group.refs.tolist())}) == len(group.refs) == 240
    assert np.array_equal(every_ref[group.index], group.refs)  # each membership names its own row
    assert np.array_equal(group.row_refs(), every_ref)


def test_what_waits_for_the_list_sizes_is_memberships_and_the_rows_are_read_after(tmp_path):
    """Every shard is assigned before the list sizes (a side input) exist, and what waits for them is held whole:
    at 10^6 float16 sentences a language that was every row, 16 GB. Now AssignShard hands on each group's
    memberships without rows, and SplitHotLists reads the shard's rows again and gives each part its own."""
    from miner.index import KnnConfig
    from miner.sizes import held_bytes
    from pipelines.pairs.join import AssignShard, CountByList, SplitHotLists
    from pipelines.pairs.plan import directions, join_shapes, shard_list_sizes
    from pipelines.pairs.saved import ListAssignments

    pair, rng = ("deu_Latn", "eng_Latn"), np.random.default_rng(0)
    manifest = {"languages": {}}
    for language in pair:
        rows = rng.standard_normal((300, 256)).astype(np.float16)
        shards = []
        for shard in range(10):  # ten shards a side: no side goes to the other's shards
            path = str(tmp_path / f"{language}-{shard}.npy")
            np.save(path, rows[shard * 30:(shard + 1) * 30])
            shards.append({"embeddings": path, "rows": 30})
        manifest["languages"][language] = {"rows": 300, "dim": 256, "shards": shards}
    knn = KnnConfig(index="IVF8,Flat", nprobe=3, max_list_rows=20)
    centroids = {language: rng.standard_normal((8, 256)).astype(np.float32) for language in pair}
    assigned = [out for language in pair for shard in range(10)
                for out in AssignShard(manifest, [pair], knn, ListAssignments(str(tmp_path / "out")))
                .process((language, shard), centroids)]
    assert [key for key, _ in assigned] == [(language, shard) for language in pair for shard in range(10)]
    groups = [chunk for _, memberships in assigned for _, chunk in memberships]
    assert all(chunk.rows.shape == (len(chunk.refs), 0) for chunk in groups)
    assert sum(held_bytes(chunk) for chunk in groups) < 600 * 256 * 2 / 4  # a quarter of the rows' bytes, once

    sizes, count = {}, CountByList()
    for element in assigned:
        for key, part in shard_list_sizes(element, join_shapes(manifest, [pair], knn)):
            sizes[key] = count.add_input(sizes.get(key, count.create_accumulator()), part)
    split = SplitHotLists(manifest, [pair], knn)
    parts = [(key, part) for element in assigned for key, part in split.process(element, sizes)]
    assert parts and all(part.rows.shape == (len(part.refs), 256) for _, part in parts)
    stored = {language: np.concatenate([np.load(s["embeddings"]) for s in manifest["languages"][language]["shards"]])
              for language in pair}
    languages = {(p, side): {"q": query_lang, "db": db_lang} for p, side, query_lang, db_lang in directions([pair])}
    for (_, side, *_), part in parts:
        shard, row = layout.unpack(part.refs)
        assert np.array_equal(part.rows, stored[languages[pair, side][part.kind]][shard * 30 + row])


def test_a_hot_list_leaves_its_group_in_blocks_and_the_others_stay_together():
    from miner.index import KnnConfig
    from pipelines.pairs.join import SplitHotLists
    from pipelines.pairs.rows import ListRows

    pair, manifest = ("deu_Latn", "eng_Latn"), join_only_manifest(8, 6)
    knn = KnnConfig(index="IVF4,Flat", nprobe=1, max_list_rows=4)  # ~2 queries a list: groups of 2 lists
    db = ListRows.of("db", np.array([0, 0, 0, 0, 0, 1]), np.arange(6), np.arange(6), np.ones((6, 8), np.float32))
    sizes = {(pair, "src", "q"): np.array([2, 2, 2, 2]), (pair, "src", "db"): np.array([5, 1]),
             (pair, "tgt", "q"): np.array([6]), (pair, "tgt", "db"): np.array([8])}  # the side input checked whole
    out = list(SplitHotLists(manifest, [pair], knn).split(((pair, "src", 0), db), sizes))
    ordinary = [chunk for key, chunk in out if key[3] == -1]
    assert len(ordinary) == 1 and ordinary[0].list_ids.tolist() == [1] and ordinary[0].refs.tolist() == [5]
    hot = {key: chunk for key, chunk in out if key[3] == 0}
    assert {key[4:] for key in hot} == {(0, 0), (0, 1)}  # list 0's 5 database rows in 2 blocks
    assert sorted(r for chunk in hot.values() for r in chunk.refs.tolist()) == [0, 1, 2, 3, 4]


def test_binary_vectors_are_stored_packed_and_mined_as_the_library_mines_their_codes(tmp_path):
    """embed.dtype binary: 16x fewer bytes than float16 on disk and in every shuffle, and the pairs the library
    gives on the widened codes (encoders.binary: sign codes less each language's mean over all its shards),
    whatever the sharding."""
    from encoders import binary

    output = str(tmp_path / "out")
    texts = write_shards(output, 2)
    settings = {**settings_for(output, "max"), "embed": {"dtype": "binary", "batch_size": 16}}
    run(settings, PipelineOptions([]), ["embed", "pairs"])
    entry = manifests.read(output, "embed")["languages"]["eng_Latn"]
    stored = np.load(entry["shards"][0]["embeddings"])
    assert stored.dtype == np.uint8 and entry["dim"] == 8 * stored.shape[1] == 1024 and entry["binary"] == "sign"
    encoder = load_encoder("char-ngram")
    src, tgt = texts["deu_Latn"], texts["eng_Latn"]
    floats = [encoder.encode(side) for side in (src, tgt)]
    codes = [binary.pack(binary.sign_bits(v, binary.language_mean(v))) for v in floats]
    for shard, written in enumerate(entry["shards"]):  # rows went round-robin over the 2 shards
        assert np.array_equal(np.load(written["embeddings"]), codes[1][shard::2])
    assert not np.array_equal(codes[1], encoder.encode(tgt, dtype="binary"))  # the mean made a difference
    widened = [binary.unit_rows(code, "sign") for code in codes]
    pairs = mine(*widened, MiningConfig(k=4, selection="max", threshold=1.0), code="sign")
    expected = {(src[s], tgt[t], round(float(m), 4)) for s, t, m in zip(pairs.src, pairs.tgt, pairs.margin)}
    table = storage.read_parquet(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]).to_pydict()
    assert {(s, t, round(m, 4)) for s, t, m in zip(table["src_text"], table["tgt_text"], table["score"])} == expected
    assert len(expected) > 20


@pytest.mark.parametrize("one_sided_below", [1000, 40])
def test_refined_binary_pairs_are_the_pairs_the_library_refines(tmp_path, one_sided_below):
    """embed.binary_refine: the turned float rows kept beside the codes (float16), the codes' pairs scored again
    from them as miner.mining.refine_pairs does (two-way estimate, margins over the codes' means, then the
    threshold), whatever the sharding; only signs travel between the shards. 40: German's 32 sentences beside
    English's 45 take margins over German's means alone, in the refinement too."""
    from encoders import binary

    output = str(tmp_path / "out")
    texts = write_shards(output, 2)
    settings = {**settings_for(output, "max", one_sided_below), "embed": {"dtype": "binary", "batch_size": 16,
                                                                        "binary_refine": True}}
    report = run(settings, PipelineOptions([]), ["embed", "pairs"])
    counters = report["counters"]["pairs"]["pairs"]
    assert 0 < counters["refined"] <= counters["selected"]   # after one-to-one, before the threshold
    languages = manifests.read(output, "embed")["languages"]
    rotated = [np.concatenate([np.load(shard["rotated"]) for shard in languages[language]["shards"]])
               for language in ("deu_Latn", "eng_Latn")]
    assert rotated[0].dtype == np.float16
    order = [np.argsort(np.r_[np.arange(0, n, 2), np.arange(1, n, 2)]) for n in (len(r) for r in rotated)]
    rows = [r[o].astype(np.float32) for r, o in zip(rotated, order)]   # the shards held rows round-robin
    encoder = load_encoder("char-ngram")
    src, tgt = texts["deu_Latn"], texts["eng_Latn"]
    codes = [binary.unit_rows(binary.pack(binary.sign_bits(v, binary.language_mean(v))), "sign")
             for v in (encoder.encode(src), encoder.encode(tgt))]
    config = MiningConfig(k=4, selection="max", threshold=1.0, one_sided_below=one_sided_below)
    pairs = mine(*codes, config, code="sign", refine=tuple(rows))
    expected = {(src[s], tgt[t], round(float(m), 4)) for s, t, m in zip(pairs.src, pairs.tgt, pairs.margin)}
    table = storage.read_parquet(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]).to_pydict()
    assert {(s, t, round(m, 4)) for s, t, m in zip(table["src_text"], table["tgt_text"], table["score"])} == expected
    assert 10 < len(expected) <= counters["refined"]
    # the pairs stage alone again, over the embed stage's output as it stands: the rows are its files, kept
    again = run({**settings, "mining": {**settings["mining"], "threshold": 1.1}}, PipelineOptions([]), ["pairs"])
    assert again["counters"]["pairs"]["pairs"]["refined"] == counters["refined"]
    assert all(os.path.exists(shard["rotated"]) for shard in languages["deu_Latn"]["shards"])
    with pytest.raises(ValueError, match="embed.binary_refine scores the pairs that sign codes select again"):
        run({**settings, "embed": {"binary_refine": True}}, PipelineOptions([]), ["embed"])


def test_refining_codes_that_are_not_sign_codes_is_an_error(monkeypatch):
    from pipelines import settings as pipeline_settings

    settings = {"encoder": "models/some-lens", "embed": {"dtype": "binary", "binary_refine": True}}
    monkeypatch.setattr(pipeline_settings, "code_of", lambda spec: "threshold")
    with pytest.raises(ValueError, match="models/some-lens gives threshold codes, and only sign codes are scored"):
        pipeline_settings.refines_pairs(settings)
    assert not pipeline_settings.refines_pairs({**settings, "embed": {"dtype": "binary"}})


def test_uncentred_sign_codes_are_what_the_encoder_gives_and_changing_the_centre_embeds_again(tmp_path):
    output = str(tmp_path / "out")
    texts = write_shards(output, 2)
    settings = {**settings_for(output, "max"), "embed": {"dtype": "binary", "batch_size": 16}}
    run(settings, PipelineOptions([]), ["embed"])
    centred = np.load(manifests.read(output, "embed")["languages"]["deu_Latn"]["shards"][0]["embeddings"])
    settings["embed"]["binary_center"] = "none"
    run(settings, PipelineOptions([]), ["embed"])  # the setting changed: the stage runs again
    shards = manifests.read(output, "embed")["languages"]["deu_Latn"]["shards"]
    stored = np.load(shards[0]["embeddings"])
    assert np.array_equal(stored, load_encoder("char-ngram").encode(texts["deu_Latn"][0::2], dtype="binary"))
    assert not np.array_equal(stored, centred)
    with pytest.raises(ValueError, match="embed.binary_center must be one of language, none, got 'mean'"):
        run({**settings, "embed": {"dtype": "binary", "binary_center": "mean"}}, PipelineOptions([]), ["embed"])


@pytest.mark.parametrize("embed, carried", [
    ({"dtype": "float16"}, np.float16), ({"dtype": "float32"}, np.float32),
    ({"dtype": "binary", "binary_center": "none"}, np.uint8), ({"dtype": "binary"}, np.float32)])
def test_vectors_leave_the_encoder_as_stored_so_the_shuffle_carries_no_more(embed, carried):
    """float16 shards: half float32's bytes through the shuffle to the writers; centred sign codes need float32
    there (a language's mean is known only once all its shards are embedded)."""
    from pipelines.embed import handler_from_settings

    handler = handler_from_settings({"encoder": "char-ngram", "embed": embed})
    [(_, result)] = handler.run_inference([("k", ("deu_Latn", ["Guten Morgen.", "Das Haus ist alt."]))],
                                          handler.load_model())
    assert result.inference.dtype == carried


def test_binary_vectors_of_another_bit_count_in_one_shard_are_an_error_naming_it(tmp_path):
    output = str(tmp_path / "out")
    write_shards(output, 2)
    settings = {**settings_for(output, "max"), "embed": {"dtype": "binary", "batch_size": 16}}
    run(settings, PipelineOptions([]), ["embed"])
    shard = manifests.read(output, "embed")["languages"]["eng_Latn"]["shards"][1]
    np.save(shard["embeddings"], np.load(shard["embeddings"])[:, :32])
    with pytest.raises(Exception, match=r"part-00001-of-00002\.npy: binary vectors of 256 bits, expected 1024"):
        run(settings, PipelineOptions([]), ["pairs"])


@pytest.mark.parametrize("n_rows", [40, 10_000])  # memberships dense among the rows (a mask) and few (a sort)
def test_a_groups_rows_are_what_unique_gives_whichever_way_they_are_found(n_rows):
    from pipelines.pairs.rows import ListRows, used_rows

    rng = np.random.default_rng(3)
    member_rows = rng.integers(0, 40, 300)
    used, members = used_rows(member_rows, n_rows)
    want_used, want_members = np.unique(member_rows, return_inverse=True)
    np.testing.assert_array_equal(used, want_used)
    np.testing.assert_array_equal(members, want_members)
    lists = np.sort(rng.integers(0, 7, 300))
    chunk = ListRows.of("q", lists, member_rows, np.arange(n_rows) * 10, np.arange(n_rows)[:, None])
    ids, counts = np.unique(lists, return_counts=True)
    np.testing.assert_array_equal(chunk.list_ids, ids)
    np.testing.assert_array_equal(chunk.counts, counts)
    np.testing.assert_array_equal(chunk.member_refs(), member_rows * 10)


def test_carried_columns_join_as_one_list_of_values_would_with_a_shard_of_nulls():
    import pyarrow as pa

    from pipelines.pairs.blocks import concat_columns, take_column

    taken = take_column(pa.array(["c", "d", "e"]), np.array([2, 0]))
    joined = concat_columns([pa.nulls(2), pa.array(["a", "b"]), taken])
    assert joined.type == pa.string() and joined.to_pylist() == [None, None, "a", "b", "e", "c"]
    assert concat_columns([pa.nulls(1), pa.nulls(2)]).type == pa.null()
    np.testing.assert_array_equal(concat_columns([np.ones((1, 2)), take_column(np.zeros((3, 2)), np.array([1]))]),
                                  [[1, 1], [0, 0]])


def test_a_join_in_waves_writes_the_bytes_of_one_wave_and_sends_each_wave_after_the_one_before(tmp_path,
                                                                                               monkeypatch):
    """knn.wave_bytes below what the join ships: its groups are sent and compared in waves of consecutive groups,
    a wave's rows read from their shards only once the wave before is compared. The same bitext, the same rows
    sent; each shard read once a wave."""
    from miner.knn_join import JoinLayout, wave_of
    from pipelines.pairs import join, plan

    events = []
    split, compare = join.SplitHotLists.process, join.CompareList.process

    def splitting(self, element, *sides):
        for key, part in split(self, element, *sides):
            events.append(("sent", self.wave))
            yield key, part

    def comparing(self, element, *sides):
        (_, _, group, *_), _ = element
        events.append(("compared", wave_of(group, 4, 4)))  # four groups a direction in four waves (below)
        yield from compare(self, element, *sides)

    monkeypatch.setattr(join.SplitHotLists, "process", splitting)
    monkeypatch.setattr(join.CompareList, "process", comparing)
    monkeypatch.setattr(plan, "join_layout", lambda *args: JoinLayout(1, 1))  # one list a group: four groups
    monkeypatch.setattr(plan, "shard_routes", lambda *args: {})  # every direction through the join
    found = []
    for wave_bytes in (0, 1):  # one wave; then as many as there are groups
        output = str(tmp_path / f"out-{wave_bytes}")
        write_shards(output, 2)
        settings = settings_for(output, "max")
        settings["knn"] = {"index": "IVF4,Flat", "nprobe": 2, "wave_bytes": wave_bytes}
        events.clear()
        report = run(settings, PipelineOptions([]), ["embed", "pairs"])
        sent = counters(report)["query_rows_sent"], counters(report)["database_rows_sent"]
        found.append((storage.read_bytes(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]), sent,
                      counters(report)["embedding_bytes_read"]))
        assert manifests.read(output, "pairs")["join_waves"] == (4 if wave_bytes else 1)
    assert found[0][:2] == found[1][:2]
    assert found[1][2] > found[0][2]  # each wave reads its shards again
    order = {kind: [i for i, event in enumerate(events) if event[0] == kind] for kind in ("sent", "compared")}
    assert {wave for _, wave in events} == {0, 1, 2, 3}
    for wave in range(1, 4):
        first_sent = min(i for i in order["sent"] if events[i][1] == wave)
        assert first_sent > max(i for i in order["compared"] if events[i][1] == wave - 1)


def test_waves_are_counted_from_the_rows_the_join_ships_and_cover_every_group_once():
    from miner.index import KnnConfig
    from miner.knn_join import wave_of
    from pipelines.pairs.plan import join_shapes, join_waves

    pair = ("deu_Latn", "eng_Latn")
    manifest = {"languages": {language: {"rows": 100_000, "dim": 256, "shards": [{"rows": 20_000}] * 5}
                              for language in pair}}
    knn = KnnConfig(index="IVF512,Flat", nprobe=16, max_list_rows=5_000)
    shape = join_shapes(manifest, [pair], knn)[pair, "src"]
    assert shape.groups(512) > 7
    shipped = 2 * shape.rows_shipped(512, 16, 100_000, 100_000) * 256 * 2  # two directions, float16 rows
    assert join_waves(manifest, [pair], knn, 0) == 1
    assert join_waves(manifest, [pair], knn, shipped) == 1
    assert join_waves(manifest, [pair], knn, shipped // 3) == 4  # rounded up
    assert join_waves(manifest, [pair], knn, shipped // 3, float_bytes=4) == 7
    assert join_waves(manifest, [pair], knn, 1) == shape.groups(512)  # never more waves than groups
    binary = {"languages": {lang: {**entry, "binary": "sign"} for lang, entry in manifest["languages"].items()}}
    assert join_waves(binary, [pair], knn, shipped // 3) == 1  # 32 bytes a row, not 512
    for waves in (1, 3, 7):
        counts = np.bincount([wave_of(group, 10, waves) for group in range(10)], minlength=waves)
        assert counts.sum() == 10 and counts.min() >= 1 and counts.max() - counts.min() <= 1
        assert list(np.repeat(np.arange(waves), counts)) == [wave_of(g, 10, waves) for g in range(10)]


def test_wave_bytes_auto_is_a_quarter_of_a_dask_clusters_memory_and_one_wave_elsewhere(monkeypatch):
    from pipelines import dask_runner
    from pipelines.options import wave_bytes

    assert wave_bytes("auto", PipelineOptions([])) == 0
    assert wave_bytes(123, PipelineOptions(["--runner=DaskRunner"])) == 123
    monkeypatch.setattr(dask_runner, "cluster_memory", lambda options: 8 * 2**30)
    assert wave_bytes("auto", PipelineOptions(["--runner=DaskRunner"])) == 2 * 2**30


@pytest.mark.parametrize("argv,spreads", [([], False), (["--runner=DirectRunner"], False),
                                          (["--direct_num_workers=2"], True), (["--direct_num_workers=0"], True),
                                          (["--runner=DaskRunner"], True), (["--runner=DataflowRunner"], True)])
def test_the_join_spreads_its_work_where_there_is_more_than_one_worker(argv, spreads, unrun_pipeline):
    import apache_beam as beam

    from pipelines.options import spread, spreads_work

    assert spreads_work(PipelineOptions(argv)) is spreads
    # spread() adds a Reshuffle (its first leaf keys by random) exactly there, and hands the input back elsewhere
    pipeline = unrun_pipeline(runner="DirectRunner", options=PipelineOptions(argv))  # built, not run
    made = pipeline | beam.Create([1, 2], reshuffle=False)
    spread_out = spread(made, "Spread")
    leaves = []

    class Leaves(beam.pipeline.PipelineVisitor):
        def visit_transform(self, node):
            leaves.append(node.full_label)

    pipeline.visit(Leaves())
    assert any(label.startswith("Spread/") for label in leaves) is spreads
    assert (spread_out is made) is not spreads


def test_bitext_parts_follow_the_score_order_and_never_split_a_bin():
    """The parts' floors come from a pair's score histogram, best first: at most rows_per_part pairs a part
    unless one bin holds more, every score in exactly one part, the parts' score ranges in order, and each part
    knows how many pairs it must hold."""
    from pipelines.pairs.blocks import PairBlock
    from pipelines.pairs.output import SCORE_BIN_SHIFT, into_parts, order_keys, parts_of, score_bins

    rng = np.random.default_rng(3)
    scores = np.concatenate([rng.uniform(-2, 3, 997), [1.25] * 40, [0.0, -0.0, 2.5]]).astype(np.float32)
    assert np.array_equal(np.argsort(order_keys(scores), kind="stable"), np.argsort(scores, kind="stable"))
    floors, counts = parts_of(score_bins(scores), 100)
    assert floors == sorted(floors, reverse=True) and len(floors) >= 11 and sum(counts) == len(scores)
    n = len(scores)
    block = PairBlock(np.arange(n), np.arange(n), scores, scores, np.zeros(n, np.int8))
    halves = [block.take(np.arange(0, n, 2)), block.take(np.arange(1, n, 2))]  # blocks as Select sends them
    pieces = [piece for half in halves
              for piece in into_parts((("deu_Latn", "eng_Latn"), half), {("deu_Latn", "eng_Latn"): (floors, counts)})]
    held = {}
    for (_, part, parts, expected), piece in pieces:
        assert parts == len(floors) and expected == counts[part]
        held.setdefault(part, []).append(piece)
    assert sorted(held) == list(range(len(floors)))
    assert [sum(len(p) for p in held[part]) for part in sorted(held)] == counts
    ranked = [PairBlock.concat(held[part]) for part in sorted(held)]
    for better, worse in zip(ranked, ranked[1:]):
        assert better.score.min() > worse.score.max()
    assert sum(np.any(part.score == np.float32(1.25)) for part in ranked) == 1  # 40 equal scores, one part
    assert max(counts) <= 100
    assert parts_of({7: 500, 3: 20}, 100) == ([7, 3], [500, 20])  # a bin larger than a part is a part of its own
    assert parts_of({7: 50, 3: 20}, 100) == ([3], [70]) and parts_of({}, 100) == ([], [])
    assert (order_keys(np.float32([1.0])) >> SCORE_BIN_SHIFT)[0] > (order_keys(np.float32([0.999])) >> SCORE_BIN_SHIFT)[0]
    # a pair's empty block goes to no part where it has parts; a pair in one file keeps one key, as does one with
    # no bins
    assert list(into_parts((("a", "b"), block.take(np.empty(0, np.int64))), {("a", "b"): (floors, counts)})) == []
    assert [key for key, _ in into_parts((("a", "b"), block), {})] == [(("a", "b"), 0, 1, None)]
    assert [key for key, _ in into_parts((("a", "b"), block), {("a", "b"): ([], [])})] == [(("a", "b"), 0, 1, None)]


def test_a_bitext_part_that_arrives_incomplete_is_an_error_not_a_file(tmp_path):
    from pipelines.pairs.blocks import PairBlock
    from pipelines.pairs.output import WriteBitext

    n = 3
    block = PairBlock(np.arange(n), np.arange(n), np.ones(n, np.float32), np.ones(n, np.float32),
                      np.ones(n, np.int8))
    writer = WriteBitext(str(tmp_path))
    with pytest.raises(RuntimeError, match="deu_Latn-eng_Latn bitext part 1 of 4: 3 pairs arrived, 5 counted"):
        list(writer.process(((("deu_Latn", "eng_Latn"), 1, 4, 5), [block])))
    assert not list(tmp_path.rglob("*.parquet"))


def test_the_most_pairs_a_selection_can_keep_bounds_when_parts_are_needed():
    from pipelines.pairs.output import most_mined_pairs

    assert most_mined_pairs("max", 30, 50) == most_mined_pairs("intersect", 30, 50) == 30
    assert most_mined_pairs("forward", 30, 50) == 30 and most_mined_pairs("backward", 30, 50) == 50
    assert most_mined_pairs("union", 30, 50) == 80


@pytest.mark.parametrize("value, problem", [(0, "positive whole number"), (2.5, "positive whole number"),
                                            (True, "positive whole number")])
def test_bitext_rows_per_part_is_checked_before_any_stage_runs(value, problem):
    from pipelines.pairs import PairsStage

    with pytest.raises(ValueError, match=problem):
        PairsStage.check({"bitext": {"rows_per_part": value}})
    with pytest.raises(ValueError, match="unknown setting"):
        PairsStage.check({"bitext": {"rows": 5}})


def test_candidates_below_the_threshold_never_change_the_one_to_one_pairs():
    """Select leaves out `max` candidates below the threshold before the greedy pass: the pass takes candidates
    best first, so the pairs it keeps at or above the threshold are the same with or without them (random
    candidate graphs with hubs, ties and chains)."""
    from pipelines.pairs.blocks import PairBlock
    from pipelines.pairs.selection import one_to_one

    rng = np.random.default_rng(5)
    for trial in range(200):
        n = int(rng.integers(1, 60))
        src = rng.integers(0, max(1, n // 2), n)
        tgt = rng.integers(0, max(1, n // 3), n)
        keys = np.unique(np.stack([src, tgt], 1), axis=0)  # a candidate pair once, as Select leaves it
        scores = rng.choice(np.float32([0.9, 1.0, 1.1, 1.2, 1.3]), len(keys)) if trial % 2 else \
            rng.uniform(0.8, 1.5, len(keys)).astype(np.float32)
        block = PairBlock(keys[:, 0], keys[:, 1], scores, scores, np.ones(len(keys), np.int8))
        threshold = 1.1
        every = list(one_to_one((("a", "b"), [block]), {("a", "b"): threshold}))
        above = block.take(np.flatnonzero(block.score >= threshold))
        kept = list(one_to_one((("a", "b"), [above]), {("a", "b"): threshold}))  # none above: an empty block
        assert [(p.src.tolist(), p.tgt.tolist()) for _, p in every] == [(p.src.tolist(), p.tgt.tolist()) for _, p in kept]


def selected_blocks(pipeline, selected: list):
    """OneToOne's input: Select's blocks, one for every source shard of every pair."""
    import apache_beam as beam

    return pipeline | "Selected" >> beam.Create(selected, reshuffle=False)


@pytest.mark.parametrize("rounds", [0, 1, 2, 8])
def test_the_one_to_one_pass_in_rounds_across_shards_keeps_the_one_worker_pairs(rounds, monkeypatch):
    """`max` selection for a pair too large for one worker: rounds of candidates first at both their sentences, by
    target shard and by source shard, and the rest (after `rounds` rounds) on one worker, keep exactly the pairs
    the one-worker pass keeps: random candidate graphs over several shards, with hubs, chains and tied margins."""
    import apache_beam as beam
    from apache_beam.testing.util import assert_that

    from pipelines import layout
    from pipelines.local_runner import LocalRunner
    from pipelines.pairs import selection
    from pipelines.pairs.blocks import PairBlock

    monkeypatch.setattr(selection, "SPREAD_ROUNDS", rounds)
    rng = np.random.default_rng(rounds)
    pairs, expected, thresholds, shards = [], {}, {}, {}
    for graph in range(6):
        n = 400
        src = layout.pack(rng.integers(0, 3, n), rng.integers(0, 60 + 40 * graph, n))
        tgt = layout.pack(rng.integers(0, 4, n), rng.integers(0, 25 + 30 * graph, n))
        keys = np.unique(np.stack([src, tgt], 1), axis=0)
        scores = (rng.choice(np.float32([1.4, 1.5, 1.6]), len(keys)) if graph % 2 else
                  rng.uniform(1.35, 2.0, len(keys)).astype(np.float32))
        block = PairBlock(keys[:, 0], keys[:, 1], scores, scores, np.ones(len(keys), np.int8))
        pair = (f"l{graph}", "eng")
        thresholds[pair] = 1.5 if graph % 3 == 0 else None  # a threshold on candidates left in (the rounds apply it)
        kept = next(selection.one_to_one((pair, [block]), thresholds))[1]
        expected[pair] = sorted(zip(kept.src.tolist(), kept.tgt.tolist()))
        # as Select emits them: a block per source shard
        pairs += [(pair, (shard, block.take(rows))) for shard, rows in selection.by_shard(block.src)]
        shards[pair] = [shard for shard, _ in selection.by_shard(block.src)]

    def same_pairs(found):
        got = {}
        for pair, block in found:
            got.setdefault(pair, []).extend(zip(block.src.tolist(), block.tgt.tolist()))
        assert {pair: sorted(kept) for pair, kept in got.items()} == expected

    with beam.Pipeline(runner=LocalRunner()) as pipeline:
        found = (selected_blocks(pipeline, pairs)
                 | selection.OneToOne(thresholds, spread=set(expected) - {("l5", "eng")}, shards=shards))  # l5: one
        assert_that(found, same_pairs)                                                                    # worker


def test_one_to_one_rows_must_be_a_count():
    from miner.mining import MiningConfig

    for bad in (0, -1, 2.5, True, "1e7"):
        with pytest.raises(ValueError, match="mining.one_to_one_rows must be a positive whole number"):
            MiningConfig(one_to_one_rows=bad)


def test_a_group_the_runner_loses_in_the_rounds_stops_the_pass_with_an_error(monkeypatch):
    """Every candidate that enters the spread one-to-one pass must end accepted, rejected or in the rest once: a
    candidate lost on the way (a runner delivering a group short) is an error naming the pair, not fewer pairs."""
    import apache_beam as beam

    from pipelines import layout
    from pipelines.local_runner import LocalRunner
    from pipelines.pairs import selection
    from pipelines.pairs.blocks import PairBlock

    n = 50
    rng = np.random.default_rng(0)
    src, tgt = layout.pack(rng.integers(0, 2, n), np.arange(n)), layout.pack(rng.integers(0, 2, n), np.arange(n))
    block = PairBlock(src, tgt, rng.uniform(1.4, 2, n).astype(np.float32), np.ones(n, np.float32),
                      np.ones(n, np.int8))
    sent = selection.by_target_shard

    def losing(element):  # every group to a target shard one candidate short
        for key, (kind, edges) in sent(element):
            yield key, (kind, edges.take(np.arange(1, len(edges))))

    monkeypatch.setattr(selection, "by_target_shard", losing)
    pair = ("deu_Latn", "eng_Latn")
    with pytest.raises(Exception, match="deu_Latn-eng_Latn: the one-to-one pass in rounds settled"):
        with beam.Pipeline(runner=LocalRunner()) as pipeline:
            _ = (selected_blocks(pipeline, [(pair, (0, block))])
                 | selection.OneToOne({pair: None}, spread={pair}, shards={pair: [0]}))


@pytest.mark.parametrize("spread", [False, True])
@pytest.mark.parametrize("delivered, problem", [
    ([0, 2], r"shards missing \[1\]"),
    ([0, 1, 1, 2], r"shards received more than once \[1\]"),
    ([0, 1, 2, 5], r"shards not of the language \[5\]"),
])
def test_a_source_shard_the_runner_loses_before_the_one_to_one_pass_stops_it(delivered, problem, spread):
    """The one-to-one pass takes a language pair's selected candidates from every source shard once, on one
    worker or in rounds: a shard's block lost or delivered twice on the way (even an empty one) is an error naming
    the pair and the shard, not a bitext from partial groups."""
    import apache_beam as beam

    from pipelines import layout
    from pipelines.local_runner import LocalRunner
    from pipelines.pairs import selection
    from pipelines.pairs.blocks import PairBlock

    def block(shard: int, n: int) -> PairBlock:
        return PairBlock(layout.pack(shard, np.arange(n)), layout.pack(0, np.arange(n)),
                         np.full(n, 1.5, np.float32), np.ones(n, np.float32), np.ones(n, np.int8))

    pair = ("deu_Latn", "eng_Latn")
    elements = [(pair, (shard, block(shard, 0 if shard == 2 else 3))) for shard in delivered]
    with pytest.raises(Exception, match=f"deu_Latn-eng_Latn: the one-to-one pass needs .* 3 source shards .*{problem}"):
        with beam.Pipeline(runner=LocalRunner()) as pipeline:
            _ = (selected_blocks(pipeline, elements)
                 | selection.OneToOne({pair: None}, spread={pair} if spread else set(), shards={pair: [0, 1, 2]}))


def test_every_source_shard_delivered_once_passes_the_one_to_one_account():
    """The account's other side: each shard once, one of them empty (Select's block where no candidate passed),
    gives the pass's pairs."""
    from pipelines import layout
    from pipelines.pairs import selection
    from pipelines.pairs.blocks import PairBlock

    pair = ("deu_Latn", "eng_Latn")
    full = PairBlock(layout.pack(0, np.arange(3)), layout.pack(0, np.arange(3)), np.float32([1.6, 1.5, 1.4]),
                     np.ones(3, np.float32), np.ones(3, np.int8))
    empty = full.take(np.empty(0, np.int64))
    [(_, kept)] = selection.whole_pair_one_to_one((pair, [(1, empty), (0, full)]), {pair: None}, {pair: [0, 1]})
    assert kept.src.tolist() == full.src.tolist()


def test_margins_are_counted_in_bins_that_parts_merge_into_the_whole():
    """score_histogram: the pairs of each 0.01 bin of margin, by lower edge; a pair's parts' histograms merge into
    the whole's (the parts split a pair by score, any way); the plot's curve counts the pairs at or above each edge."""
    from miner.histograms import merged_histograms, pairs_kept_curve, score_histogram

    scores = np.float32([1.351, 1.359, 1.36, 2.0, 1.4999, 1.5, 1.0])
    assert score_histogram(scores) == [[1.0, 1], [1.35, 2], [1.36, 1], [1.49, 1], [1.5, 1], [2.0, 1]]
    assert score_histogram(np.float32([])) == []
    rng = np.random.default_rng(0)
    many = rng.uniform(1.0, 3.0, 5000).astype(np.float32)
    cuts = np.sort(rng.choice(many, 3, replace=False))
    parts = np.split(np.sort(many), np.searchsorted(np.sort(many), cuts))
    assert merged_histograms([score_histogram(part) for part in parts]) == score_histogram(many)
    edges, kept = pairs_kept_curve(score_histogram(scores))
    assert edges == [1.0, 1.35, 1.36, 1.49, 1.5, 2.0] and kept == [7, 6, 4, 3, 2, 1]


def test_dense_sentence_numbers_are_np_uniques_inverse_in_int32():
    from pipelines.pairs.selection import dense_ids

    rng = np.random.default_rng(3)
    for refs in (np.empty(0, np.int64), np.int64([7]), np.int64([5, 5, 5]),
                 rng.integers(0, 2**40, 1000), rng.integers(0, 30, 1000) << 32):
        dense = dense_ids(refs)
        assert dense.dtype == np.int32 and dense.tolist() == np.unique(refs, return_inverse=True)[1].tolist()
