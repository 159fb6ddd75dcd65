"""An output folder's own state on a rerun (docs/pipeline.md, Reruns): a copied folder reads its own files; a damaged
shard, a stage folder that is a link or a manifest of an older version is named before any stage deletes anything;
a reused stage's folders hold only what its manifest lists."""

import gzip
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import layout, manifests, storage
from pipelines.mine import run
from pipelines.options import STAGES
from pipelines.report import format_summary
from tests.test_pipeline_pairs import settings_for, write_shards

PAIR = ("deu_Latn", "eng_Latn")


def mine(output: Path, stages: list[str], rerun: bool = False) -> dict:
    return run(settings_for(str(output), "max"), PipelineOptions([]), stages, rerun=rerun)


def bitext(output: Path) -> tuple[bytes, bytes]:
    return tuple(storage.read_bytes(path) for path in layout.bitext_files(str(output), *PAIR))


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """An output folder whose embed and pairs stages finished (extract's manifest written as extract writes it)."""
    output = tmp_path_factory.mktemp("finished") / "out"
    write_shards(str(output), 2)
    mine(output, ["embed", "pairs"])
    return output


@pytest.fixture
def copy(finished, tmp_path) -> Path:
    """`cp -a` of the finished folder."""
    target = tmp_path / "copy"
    shutil.copytree(finished, target, symlinks=True)
    return target


def test_a_copied_output_folder_reads_its_own_files(tmp_path):
    original = tmp_path / "original"
    write_shards(str(original), 2)
    mine(original, ["embed", "pairs"])
    expected = bitext(original)
    copied = tmp_path / "copied"
    shutil.copytree(original, copied, symlinks=True)
    shutil.rmtree(original)  # the copy's pairs stage must read the copy's vectors and sentences
    report = mine(copied, ["pairs"], rerun=True)
    assert bitext(copied) == expected
    assert report["pairs"]["-".join(PAIR)]["parquet"] == "bitext/deu_Latn-eng_Latn.parquet"  # report.json alike
    for stage in STAGES:  # no manifest names a file by the folder it was written in
        assert str(original) not in Path(layout.manifest_path(str(copied), stage)).read_text(encoding="utf-8")


def test_a_manifest_of_an_older_version_is_redone_or_named(copy):
    manifest_file = layout.manifest_path(str(copy), "embed")
    manifest = storage.read_json(manifest_file)
    manifest.pop("format", None)  # as versions before relative paths wrote it: the output folder in every path
    for entry in manifest["languages"].values():
        for shard in entry["shards"]:
            shard["path"], shard["embeddings"] = str(copy / shard["path"]), str(copy / shard["embeddings"])
    storage.write_json(manifest_file, manifest)
    expected = bitext(copy)
    with pytest.raises(ValueError, match=r"embed: its manifest .* was written by an older version"):
        mine(copy, ["pairs"], rerun=True)
    assert bitext(copy) == expected  # nothing was deleted
    mine(copy, ["embed", "pairs"])  # the embed stage is in the run: done again, as if it had no manifest
    assert storage.read_json(manifest_file)["format"] == manifests.FORMAT
    assert bitext(copy) == expected


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-10])


@pytest.mark.parametrize("damage, problem", [
    (lambda path: path.write_bytes(b""), "empty file"),
    (_truncate, r"holds \d+ bytes of vectors, \d+ expected"),
    (lambda path: path.write_bytes(b"PK\x03\x04 not numpy"), "not a .npy file"),
    (lambda path: np.save(path, np.load(path).astype(np.int8)), "dtype int8, not float16 or float32"),
    (lambda path: np.save(path, np.load(path)[:-1]), "rows, the manifest lists"),
    (lambda path: np.save(path, np.load(path)[:, :100]), "vectors have 100 dimensions, expected"),
    (lambda path: np.save(path, np.array([{"pickled": 1}], dtype=object), allow_pickle=True), "dtype object"),
])
def test_a_damaged_embedding_shard_is_named_before_anything_is_deleted(copy, damage, problem):
    shard = copy / "embeddings" / "eng_Latn" / "part-00001-of-00002.npy"
    damage(shard)
    expected = bitext(copy)
    with pytest.raises(ValueError, match=rf"part-00001-of-00002\.npy: .*{problem}.* run it again"):
        mine(copy, ["pairs"], rerun=True)
    assert bitext(copy) == expected  # the earlier pairs stage's output is still there


def test_a_damaged_sentence_shard_is_named_before_anything_is_deleted(copy):
    (copy / "sentences" / "deu_Latn" / "part-00000-of-00002.parquet").write_bytes(b"")
    with pytest.raises(ValueError, match=r"deu_Latn/part-00000-of-00002\.parquet: empty file"):
        mine(copy, ["embed", "pairs"], rerun=True)
    assert (copy / "embeddings" / "deu_Latn" / "part-00000-of-00002.npy").exists()


def test_a_stage_folder_that_is_a_link_is_refused_before_anything_is_deleted(copy, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    shutil.move(copy / "bitext", elsewhere)
    (copy / "bitext").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ValueError, match=r"bitext is a symbolic link .* will not delete through a link"):
        mine(copy, ["pairs"], rerun=True)
    assert Path(layout.manifest_path(str(copy), "pairs")).exists() and files(elsewhere)  # nothing deleted
    (copy / "bitext").unlink()
    shutil.move(elsewhere, copy / "bitext")
    link = tmp_path / "link"  # an output folder reached through a link is an ordinary folder
    link.symlink_to(copy, target_is_directory=True)
    expected = bitext(copy)
    mine(link, ["pairs"], rerun=True)
    assert bitext(link) == expected and not (copy / "bitext").is_symlink()


def test_an_output_path_through_a_file_is_an_error_naming_it(tmp_path):
    # where creating the first stage's folders would fail with NotADirectoryError
    (tmp_path / "taken").write_text("a file")
    for output in (tmp_path / "taken", tmp_path / "taken" / "sub" / "out"):
        with pytest.raises(ValueError, match=rf"--output {output}: {tmp_path / 'taken'} is a file, not a folder"):
            mine(output, ["extract"])
    assert (tmp_path / "taken").read_text() == "a file"


def test_a_reused_stage_keeps_only_what_its_manifest_lists(copy, caplog):
    listed = files(copy)
    planted = [copy / "sentences" / "deu_Latn" / "part-00007-of-00009.parquet",  # a shard of an earlier run
               copy / "sentences" / "xxx_Latn" / "part-00000-of-00001.parquet",  # a language no longer found
               copy / "embeddings" / "eng_Latn" / "part-00003-of-00004.npy",
               copy / "embeddings" / "eng_Latn" / f"part-00000-of-00002.npy{storage.TEMPORARY_MARK}0af3",  # killed
               copy / "embed" / f"_MANIFEST.json{storage.TEMPORARY_MARK}77c1",
               copy / "bitext" / "xxx_Latn-eng_Latn.tsv.gz"]
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"stale")
    expected = bitext(copy)
    with caplog.at_level(logging.INFO, logger="pipelines"):
        mine(copy, ["embed", "pairs"])  # both finished: reused, nothing runs
    assert files(copy) == listed and not (copy / "sentences" / "xxx_Latn").exists()
    assert bitext(copy) == expected
    warned = "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "part-00007-of-00009.parquet" in warned and "xxx_Latn-eng_Latn.tsv.gz" in warned
    assert storage.TEMPORARY_MARK not in warned  # a killed run's temporary file is removed without a warning


def test_the_same_on_cloud_storage(finished, gcs_bucket):
    """A finished folder copied to a bucket reads its own objects; a stray object goes, a damaged one is named."""
    remote = f"{gcs_bucket}/copied"
    for name in files(finished):
        storage.write_bytes(f"{remote}/{name}", (finished / name).read_bytes())
    storage.write_bytes(f"{remote}/embeddings/eng_Latn/part-00003-of-00004.npy", b"stale")
    settings = settings_for(remote, "max")
    run(settings, PipelineOptions([]), ["embed", "pairs"])  # reused
    assert not storage.exists(f"{remote}/embeddings/eng_Latn/part-00003-of-00004.npy")
    assert all(storage.exists(f"{remote}/{name}") for name in files(finished))
    storage.write_bytes(f"{remote}/embeddings/eng_Latn/part-00001-of-00002.npy", b"")
    with pytest.raises(ValueError, match=r"copied/embeddings/eng_Latn/part-00001-of-00002\.npy: empty file"):
        run(settings, PipelineOptions([]), ["pairs"], rerun=True)
    run(settings, PipelineOptions([]), ["embed", "pairs"], rerun=True)
    assert tuple(storage.read_bytes(p) for p in layout.bitext_files(remote, *PAIR)) == bitext(finished)
    # a pair's bitext in parts by score range (bitext.rows_per_part) on the bucket: listed relative, read back
    parted = {**settings, "bitext": {"rows_per_part": 5}}
    report = run(parted, PipelineOptions([]), ["pairs"])
    parts = report["pairs"]["-".join(PAIR)]["parts"]
    assert len(parts) > 1 and all(part["parquet"].startswith("bitext/") for part in parts)
    members = b"".join(storage.read_bytes(f"{remote}/{part['tsv']}") for part in parts)
    assert gzip.decompress(members) == gzip.decompress(bitext(finished)[1])
    run(parted, PipelineOptions([]), ["pairs"])  # reused: every part checked where it is


def test_a_changed_default_of_the_mining_settings_makes_the_bitext_stale(tmp_path):
    """The pairs stage depends on the mining settings with their defaults filled in: bitext mined by a release
    whose defaults differ (the pool rules, say) is mined again, though the YAML did not change."""
    from miner.mining import MiningConfig
    from pipelines.dependencies import changed_keys, stage_dependencies
    from tests.test_pipeline_pairs import settings_for

    settings = settings_for(str(tmp_path / "out"), "max")
    assert "pool_slope" not in settings["mining"]
    depends = stage_dependencies("pairs", settings)
    assert depends["mining, resolved"]["pool_slope"] == MiningConfig().pool_slope
    older = {**depends, "mining, resolved": {**depends["mining, resolved"], "one_sided_ratio": None}}
    assert changed_keys(older, depends) == ["mining, resolved"]
    assert changed_keys(depends, stage_dependencies("pairs", settings)) == []


def test_what_changed_is_told_a_setting_or_file_list_a_line(tmp_path):
    """`--plan` and a rerun's log say what changed in the terms a user sets it: the setting by the name `--set`
    takes with both values, a file list by the files added, removed and changed, a setting given once (not again
    as its resolved default), a default that changed on its own."""
    from pipelines.dependencies import RESOLVED, change_lines, stage_dependencies
    from tests.test_pipeline_pairs import settings_for

    settings = settings_for(str(tmp_path / "out"), "max")
    depends = stage_dependencies("pairs", settings)
    stricter = {**settings, "mining": {**settings["mining"], "threshold": 1.9}}
    assert change_lines(depends, stage_dependencies("pairs", stricter)) == [
        f"mining.threshold: {json.dumps(depends[RESOLVED]['threshold'])} -> 1.9"]
    older = {**depends, RESOLVED: {**depends[RESOLVED], "one_sided_ratio": None}}
    assert change_lines(older, depends) == [f"{RESOLVED}.one_sided_ratio: null -> {depends[RESOLVED]['one_sided_ratio']}"]

    crawl = [["gs://b/crawl/a.warc.gz", 10, 1.0], ["gs://b/crawl/b.warc.gz", 20, 2.0], ["gs://b/crawl/c.warc.gz", 5, 3.0]]
    grown = [crawl[0], ["gs://b/crawl/b.warc.gz", 21, 4.0], ["gs://b/crawl/d.warc.gz", 7, 5.0]]
    assert change_lines({"input files": crawl}, {"input files": grown}) == [
        "input files: 1 added (d.warc.gz); 1 removed (c.warc.gz); 1 changed (b.warc.gz)"]
    moved = [["gs://other/c.warc.gz", 5, 3.0]]  # the same file name elsewhere: the paths are told
    assert change_lines({"input files": crawl[2:]}, {"input files": moved}) == [
        "input files: 1 added (gs://other/c.warc.gz); 1 removed (gs://b/crawl/c.warc.gz)"]
    members = {"encoder files": {"files": [["ensemble.json", 9, 1.0]],
                                 "members": [{"package": "x==1"}, [["config.json", 667, 1.0]]]}}
    retrained = {"encoder files": {"files": [["ensemble.json", 9, 1.0]],
                                   "members": [{"package": "x==2"}, [["config.json", 667, 2.0]]]}}
    assert change_lines(members, retrained) == ['encoder files.members[0].package: "x==1" -> "x==2"',
                                                "encoder files.members[1]: 1 changed (config.json)"]
    many = {"pairs.knn": {f"s{i}": i for i in range(12)}}
    assert change_lines(many, {"pairs.knn": {}}, limit=3)[-1] == "... and 9 more"
    assert change_lines(None, depends) == ["its output records no dependencies"]


def test_the_sentences_depend_on_the_extracting_libraries_versions(tmp_path):
    """A trafilatura (or resiliparse, or fastText) upgrade can change the sentences: the extract stage records the
    chosen extractor's packages and fastText's by installed version, so a rerun after an upgrade extracts again."""
    from importlib.metadata import version

    from pipelines.dependencies import changed_keys, stage_dependencies
    from tests.test_pipeline_pairs import settings_for

    settings = settings_for(str(tmp_path / "out"), "max")
    depends = stage_dependencies("extract", settings)
    libraries = depends["extract libraries"]
    assert libraries == {name: version(name) for name in ("trafilatura", "jusText", "lxml", "fasttext-numpy2-wheel")}
    upgraded = {**depends, "extract libraries": {**libraries, "trafilatura": "0.0.1"}}
    assert changed_keys(upgraded, depends) == ["extract libraries"]
    resiliparse = {**settings, "extract": {**(settings.get("extract") or {}), "extractor": "resiliparse"}}
    chosen = stage_dependencies("extract", resiliparse)["extract libraries"]
    assert set(chosen) == {"resiliparse", "fasttext-numpy2-wheel"}
    # every later stage depends on its sentences
    assert stage_dependencies("pairs", settings)["extract libraries"] == libraries


def test_a_model_card_edited_leaves_the_vectors_current_and_a_weight_file_does_not(tmp_path):
    """An encoder folder's README.md gains a line with each measurement: its vectors stay current. Its weights or
    configuration rewritten make them stale."""
    import os

    from pipelines.dependencies import encoder_identity

    folder = tmp_path / "encoder"
    (folder / "1_Pooling").mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "README.md", "1_Pooling/README.md"):
        (folder / name).write_text("x")
    identity = encoder_identity(str(folder))
    assert [row[0] for row in identity] == ["config.json", "model.safetensors"]
    (folder / "README.md").write_text("a card with a new figure")
    assert encoder_identity(str(folder)) == identity
    (folder / "config.json").write_text("another configuration")
    os.utime(folder / "config.json", (1, 1))
    assert encoder_identity(str(folder)) != identity


def test_an_extract_output_for_more_languages_holds_for_fewer_and_the_pairs_need_their_own():
    from pipelines.dependencies import changed_keys

    def changed(recorded, current):
        return changed_keys({"extract.languages": recorded, "pairs.languages": recorded},
                            {"extract.languages": current, "pairs.languages": current})

    assert changed(["a", "b"], ["b"]) == ["pairs.languages"]   # the sentences hold; the pairs differ
    assert changed([], ["a"]) == changed(None, ["a"]) == ["pairs.languages"]   # empty: every language
    assert changed(["a", "b"], ["a", "c"]) == ["extract.languages", "pairs.languages"]
    assert changed(["a"], []) == ["extract.languages", "pairs.languages"]   # every language wanted now
    assert changed(["a", "b"], ["b", "a"]) == []   # the pairs are made of the sorted set (language_pairs)
    assert changed(["a"], ["a"]) == []


def test_a_higher_threshold_alone_is_told_apart_from_other_changes():
    from pipelines.dependencies import RESOLVED, threshold_raised

    def record(given: dict, resolved: dict, **others) -> dict:
        return {"pairs.mining": given, RESOLVED: {"k": 4, "min_cosine": 0.29, **resolved}, "pairs.knn": {}, **others}

    before = record({"threshold": 1.35}, {"threshold": 1.35})
    assert threshold_raised(before, record({"threshold": 1.5}, {"threshold": 1.5})) == (1.35, 1.5)
    assert threshold_raised(record({}, {"threshold": 1.35}), record({"threshold": 1.5}, {"threshold": 1.5})) == \
        (1.35, 1.5)   # the default, then given
    assert threshold_raised(before, record({"threshold": 1.2}, {"threshold": 1.2})) is None   # lower: a run
    assert threshold_raised(before, before) is None
    assert threshold_raised(before, record({"threshold": 1.5, "k": 8}, {"threshold": 1.5, "k": 8})) is None
    assert threshold_raised(before, record({"threshold": 1.5}, {"threshold": 1.5}, **{"pairs.knn": {"nprobe": 8}})) \
        is None
    assert threshold_raised(before, record({"threshold": None}, {"threshold": None})) is None
    assert threshold_raised(None, before) is None


def test_a_run_lists_the_crawl_once_and_records_what_it_listed(tmp_path, monkeypatch):
    """The run's decisions list the input files (a crawl's listing is a bucket's); each stage that runs records
    those dependencies, not a listing of its own after it ran."""
    from pipelines import dependencies
    from pipelines.settings import load_settings

    listed, list_files = [], dependencies.input_files
    monkeypatch.setattr(dependencies, "input_files", lambda pattern: listed.append(pattern) or list_files(pattern))
    settings = {**load_settings(), "output": str(tmp_path / "out")}
    run(settings, PipelineOptions([]), list(STAGES))
    assert listed.count(settings["input"]) == 1
    for name in STAGES:
        assert manifests.read(settings["output"], name)["depends"]["input files"] == list_files(settings["input"])


def test_an_unknown_shards_setting_is_named_with_the_known_ones():
    from pipelines.extract import ExtractSentences

    with pytest.raises(ValueError, match=r"shards: unknown setting\(s\) \['rows'\]; known: \['sentences'\]"):
        ExtractSentences({"shards": {"rows": 5}})
    assert ExtractSentences({"shards": {"sentences": 7}}).per_shard == 7
    assert ExtractSentences({}).per_shard == 100_000


def _stop_at_write(monkeypatch, writes: int) -> list[str]:
    """A run fails as it writes its .npy file `writes + 1`, as a run stopped midway (a killed job, a lost machine)
    leaves it: the files written before are whole. Returns their paths, as they are written."""
    written, save = [], storage.write_npy

    def stopping(path, matrix):
        if len(written) == writes:
            raise RuntimeError("the run is stopped here")
        save(path, matrix)
        written.append(path)

    monkeypatch.setattr(storage, "write_npy", stopping)
    return written


def _stopped_run(output: Path | str, monkeypatch, settings: dict, chunks: int = 3) -> list[str]:
    write_shards(str(output), 4)
    with monkeypatch.context() as patch:  # undoes this patch only (a bucket's fixture patches too)
        written = _stop_at_write(patch, chunks)  # the embed stage's chunks: no shard before the last
        with pytest.raises(Exception, match="the run is stopped here"):
            run(settings, PipelineOptions([]), ["embed", "pairs"])
    assert storage.exists(layout.attempt_path(str(output), "embed"))
    assert manifests.stored(str(output), "embed") is None and len(written) == chunks
    assert all("/embed/chunks/" in path for path in written)
    assert not storage.list_files(f"{output}/embeddings")  # shards are written once every chunk is embedded
    return list(written)


def _fresh_run(tmp_path: Path, settings: dict) -> tuple[Path, dict]:
    """The same sentences and settings run never stopped, in tmp_path/fresh: its folder and report."""
    fresh = tmp_path / "fresh"
    write_shards(str(fresh), 4)
    return fresh, run({**settings, "output": str(fresh)}, PipelineOptions([]), ["embed", "pairs"])


def _resumed(report: dict) -> int:
    return report["counters"]["embed"]["embed"].get("resumed_sentences", 0)


@pytest.mark.parametrize("dtype", ["float32", "binary"])
def test_a_stopped_embed_stage_keeps_the_chunks_it_embedded(tmp_path, monkeypatch, dtype):
    """The next run on the same inputs and settings embeds only what the stopped run did not save whole, and ends
    with the bytes of a run never stopped, its chunks gone; `--plan` says so. Sign codes less each language's mean
    too (`binary`): the chunks hold the float vectors the mean is summed from."""
    from pipelines.job import format_plan, stage_decisions

    output = tmp_path / "out"
    settings = {**settings_for(str(output), "max"), "embed": {"dtype": dtype, "batch_size": 16}}
    written = _stopped_run(output, monkeypatch, settings)
    Path(written[0]).write_bytes(Path(written[0]).read_bytes()[:-8])  # cut short (by hand: writes are atomic)
    cut_off = Path(written[1]).parent / ".tmp-part"
    cut_off.write_bytes(b"half")  # a write the stop cut off
    kept = sum(len(np.load(path)) for path in written[1:])

    plan = format_plan(str(output), stage_decisions(settings, ["embed", "pairs"], False, ("embed",)))
    assert "embed    run    a run of it on the same inputs and settings stopped" in plan
    assert "the stopped run saved 3 chunks" in plan  # a cut one among them: counted, checked when read
    assert "resume" not in [d.reason for d in stage_decisions(settings, ["embed", "pairs"], True, ("embed",))]

    report = run(settings, PipelineOptions([]), ["embed", "pairs"])
    assert _resumed(report) == kept > 0
    assert f"  resumed: kept the {kept:,} sentences embedded by a stopped run" in format_summary(report)
    assert not (output / "embed" / "chunks").exists() and not storage.exists(layout.attempt_path(str(output), "embed"))
    assert sorted(p.name for p in (output / "embed").iterdir()) == ["_MANIFEST.json"]

    fresh, fresh_report = _fresh_run(tmp_path, settings)
    assert _resumed(fresh_report) == 0
    assert files(output / "embeddings") == files(fresh / "embeddings")
    for name in files(fresh / "embeddings"):
        assert (output / "embeddings" / name).read_bytes() == (fresh / "embeddings" / name).read_bytes(), name
    assert bitext(output) == bitext(fresh) and report["pairs"]


@pytest.mark.parametrize("change", ["rerun", "setting", "sentences"])
def test_a_stopped_embed_stage_is_redone_whole_when_the_run_differs(tmp_path, monkeypatch, change):
    """--rerun, another embed setting, or sentences made again in between (the extract stage's output is not the
    one the stopped run read): every chunk is embedded again."""
    output = tmp_path / "out"
    settings = settings_for(str(output), "max")
    _stopped_run(output, monkeypatch, settings)
    if change == "setting":
        settings["embed"] = {**settings["embed"], "batch_size": 8}
    if change == "sentences":
        write_shards(str(output), 4)  # the extract manifest written again: another output, though the same text
        stored = manifests.stored(str(output), "extract")
        storage.write_json(layout.manifest_path(str(output), "extract"), {**stored, "seconds": 1.0})
    report = run(settings, PipelineOptions([]), ["embed", "pairs"], rerun=change == "rerun")
    assert _resumed(report) == 0
    assert bitext(output) == bitext(_fresh_run(tmp_path, settings)[0])


def test_a_stopped_embed_stage_resumes_on_cloud_storage(gcs_bucket, tmp_path, monkeypatch):
    """The same on a bucket: the stopped run's chunks are listed and their headers read there."""
    remote = f"{gcs_bucket}/stopped"
    written = _stopped_run(remote, monkeypatch, settings_for(remote, "max"))
    assert all(path.startswith(remote) for path in written)
    report = run(settings_for(remote, "max"), PipelineOptions([]), ["embed", "pairs"])
    assert _resumed(report) > 0 and not storage.exists(f"{remote}/embed/chunks/deu_Latn/00000-000000000.npy")
    fresh, _ = _fresh_run(tmp_path, settings_for(remote, "max"))
    assert tuple(storage.read_bytes(p) for p in layout.bitext_files(remote, *PAIR)) == bitext(fresh)


def test_an_attempt_record_cut_short_starts_the_stage_afresh(tmp_path, monkeypatch):
    """A stop while the attempt record was written leaves it unreadable: nothing is resumed, nothing fails."""
    output = tmp_path / "out"
    settings = settings_for(str(output), "max")
    _stopped_run(output, monkeypatch, settings)
    attempt = Path(layout.attempt_path(str(output), "embed"))
    attempt.write_text(attempt.read_text()[:40])
    assert _resumed(run(settings, PipelineOptions([]), ["embed", "pairs"])) == 0
    assert bitext(output) == bitext(_fresh_run(tmp_path, settings)[0])


@pytest.fixture
def saving_small_quantizers(monkeypatch):
    """The shards' list assignments saved for quantizers of the few lists these tests' sentences fill (in a crawl
    only from SAVED_FROM_LISTS lists)."""
    from pipelines.pairs import saved

    monkeypatch.setattr(saved, "SAVED_FROM_LISTS", 2)


def _stop_pairs_after(output: Path | str, monkeypatch, settings: dict, writes: int) -> list[str]:
    """The embed stage finished; the pairs stage fails as it writes its .npy file `writes + 1` (the quantizers,
    then the shards' list assignments), as a run stopped midway leaves it. Returns the files written."""
    write_shards(str(output), 4)
    run(settings, PipelineOptions([]), ["embed"])
    with monkeypatch.context() as patch:
        written = _stop_at_write(patch, writes)
        with pytest.raises(Exception, match="the run is stopped here"):
            run(settings, PipelineOptions([]), ["pairs"])
    assert storage.exists(layout.attempt_path(str(output), "pairs")) and manifests.stored(str(output), "pairs") is None
    return written


def _pairs_resumed(report: dict) -> tuple[int, int]:
    counted = report["counters"]["pairs"]["pairs"]
    return counted.get("resumed_quantizers", 0), counted.get("resumed_rows_assigned", 0)


def _with_routes(monkeypatch, route):
    """Every direction through the join's groups (None), or to the other side's shards (`route`), where the
    shards' rows are assigned as they are compared."""
    from pipelines.pairs import plan

    monkeypatch.setattr(plan, "shard_routes", lambda manifest, pairs, knn: {
        (pair, side): (route, 0) for pair, side, _, _ in plan.directions(pairs)} if route else {})


@pytest.mark.parametrize("route", [None, "to_queries"])
def test_a_stopped_pairs_stage_keeps_its_quantizers_and_list_assignments(tmp_path, monkeypatch, route,
                                                                         saving_small_quantizers):
    """The next run on the same vectors and settings reads the quantizers and the shards' list assignments the
    stopped run wrote whole, assigns the rest, and writes the bitext and quantizers of a run never stopped; `--plan`
    says so, the summary counts what was kept, and the saved assignments are gone after."""
    from pipelines.job import format_plan, stage_decisions
    from pipelines.pairs import plan

    _with_routes(monkeypatch, route and plan.TO_QUERIES)
    output = tmp_path / "out"
    settings = {**settings_for(str(output), "max"), "knn": {"index": "IVF4,Flat", "nprobe": 2}}
    written = _stop_pairs_after(output, monkeypatch, settings, writes=5)
    quantizers = [path for path in written if path.endswith("centroids.npy")]
    lists = [path for path in written if "/pairs/chunks/lists/" in path]
    assert len(quantizers) == 2 and len(lists) == 3
    Path(lists[0]).write_bytes(Path(lists[0]).read_bytes()[:-8])  # cut short (by hand: writes are atomic)
    kept_rows = sum(len(np.load(path)) for path in lists[1:])

    decisions = stage_decisions(settings, ["pairs"], False, ("pairs",))
    plan_text = format_plan(str(output), decisions)
    assert "pairs    run    a run of it on the same inputs and settings stopped" in plan_text
    assert "the stopped run saved 2 quantizers and 3 chunks" in plan_text

    report = run(settings, PipelineOptions([]), ["pairs"])
    assert _pairs_resumed(report) == (2, kept_rows)
    assert f"kept the 2 quantizers trained and {kept_rows:,} rows assigned to lists by a stopped run" in \
        format_summary(report)
    assert not (output / "pairs" / "chunks").exists() and not storage.exists(layout.attempt_path(str(output), "pairs"))

    fresh = tmp_path / "fresh"
    write_shards(str(fresh), 4)
    fresh_report = run({**settings, "output": str(fresh)}, PipelineOptions([]), ["embed", "pairs"])
    assert _pairs_resumed(fresh_report) == (0, 0)
    assert bitext(output) == bitext(fresh) and report["pairs"]
    for path in quantizers:
        assert Path(path).read_bytes() == (fresh / Path(path).relative_to(output)).read_bytes()


@pytest.mark.parametrize("change", ["rerun", "setting", "damaged"])
def test_a_stopped_pairs_stage_is_redone_where_the_run_differs_or_a_file_is_not_whole(tmp_path, monkeypatch,
                                                                                       change, saving_small_quantizers):
    """--rerun or another setting: everything is done again. A saved quantizer of another shape is trained again
    (and the assignments, made in the same quantizer, are kept)."""
    _with_routes(monkeypatch, None)
    output = tmp_path / "out"
    settings = {**settings_for(str(output), "max"), "knn": {"index": "IVF4,Flat", "nprobe": 2}}
    written = _stop_pairs_after(output, monkeypatch, settings, writes=4)
    if change == "setting":
        settings["mining"] = {**settings["mining"], "k": 3}
    if change == "damaged":
        storage.write_npy(written[0], np.zeros((3, 5), dtype=np.float32))
    report = run(settings, PipelineOptions([]), ["pairs"], rerun=change == "rerun")
    quantizers, rows = _pairs_resumed(report)
    assert (quantizers, rows > 0) == ((1, True) if change == "damaged" else (0, False))
    fresh = tmp_path / "fresh"
    write_shards(str(fresh), 4)
    run({**settings, "output": str(fresh)}, PipelineOptions([]), ["embed", "pairs"])
    assert bitext(output) == bitext(fresh)


def test_a_stopped_pairs_stage_resumes_on_cloud_storage(gcs_bucket, tmp_path, monkeypatch, saving_small_quantizers):
    """The same on a bucket: the quantizers and assignments are found, read and checked there."""
    _with_routes(monkeypatch, None)
    remote = f"{gcs_bucket}/stopped-pairs"
    settings = {**settings_for(remote, "max"), "knn": {"index": "IVF4,Flat", "nprobe": 2}}
    written = _stop_pairs_after(remote, monkeypatch, settings, writes=4)
    assert all(path.startswith(remote) for path in written)
    report = run(settings, PipelineOptions([]), ["pairs"])
    assert _pairs_resumed(report)[0] == 2 and _pairs_resumed(report)[1] > 0
    assert not storage.list_files(f"{remote}/pairs/chunks")
    fresh = tmp_path / "fresh"
    write_shards(str(fresh), 4)
    run({**settings, "output": str(fresh)}, PipelineOptions([]), ["embed", "pairs"])
    assert tuple(storage.read_bytes(p) for p in layout.bitext_files(remote, *PAIR)) == bitext(fresh)


def _stopping(*args):
    raise RuntimeError("the run is stopped here")


def test_a_small_quantizers_assignments_are_made_again_not_saved(tmp_path, monkeypatch):
    """Below SAVED_FROM_LISTS lists assigning costs about what saving would: a stopped run keeps its quantizers
    only, and the next run assigns every shard again, to the same bitext."""
    import pipelines.pairs.join

    _with_routes(monkeypatch, None)
    output = tmp_path / "out"
    settings = {**settings_for(str(output), "max"), "knn": {"index": "IVF4,Flat", "nprobe": 2}}
    write_shards(str(output), 4)
    run(settings, PipelineOptions([]), ["embed"])
    with monkeypatch.context() as patch:  # stopped at the first comparison: every shard is assigned by then
        patch.setattr(pipelines.pairs.join, "compare_lists", _stopping)
        with pytest.raises(Exception, match="the run is stopped here"):
            run(settings, PipelineOptions([]), ["pairs"])
    assert layout.saved_files(str(output), "pairs") == [layout.quantizer_file(str(output), lang) for lang in PAIR]
    report = run(settings, PipelineOptions([]), ["pairs"])
    assert _pairs_resumed(report) == (2, 0)
    fresh = tmp_path / "fresh"
    write_shards(str(fresh), 4)
    run({**settings, "output": str(fresh)}, PipelineOptions([]), ["embed", "pairs"])
    assert bitext(output) == bitext(fresh)


def test_a_stage_that_runs_says_what_it_removes_from_its_folders(tmp_path, caplog):
    """Files in a stage's folders that no finished run lists (a stopped run's, or put there by hand) go when the
    stage runs; a finished stage's strays were named in the log, these went without a word."""
    from pipelines.job import clear_stage_folders

    bitext = Path(layout.stage_folders(str(tmp_path), "pairs")[0])
    (bitext / "notes").mkdir(parents=True)
    (bitext / "notes" / "keep-me.txt").write_text("mine\n")
    with caplog.at_level(logging.WARNING, logger="pipelines"):
        clear_stage_folders(str(tmp_path), "pairs", None)
    assert not bitext.exists()
    assert any("removing 1 file an earlier or stopped run left there (notes/keep-me.txt)" in r.getMessage()
               for r in caplog.records)


def test_settings_spelled_out_as_their_defaults_or_reordered_change_nothing():
    """A config that writes a default out (extract.extractor: trafilatura, knn.gpu: auto) or lists the same
    languages in another order made every stage run again: on a crawl, a day of embedding for nothing."""
    from pipelines.dependencies import change_lines, changed_keys

    recorded = {"extract.extract": None, "embed.embed": {"batch_size": 1024}, "pairs.knn": {},
                "pairs.languages": ["deu_Latn", "eng_Latn"], "pairs.mining": {"threshold": 1.35}}
    current = {"extract.extract": {"extractor": "trafilatura"}, "embed.embed": None, "pairs.knn": {"gpu": "auto"},
               "pairs.languages": ["eng_Latn", "deu_Latn"], "pairs.mining": {"threshold": 1.35, "k": 4}}
    assert changed_keys(recorded, current) == []
    changed = {**current, "embed.embed": {"batch_size": 512}, "pairs.mining": {"threshold": 1.35, "k": 8}}
    assert changed_keys(recorded, changed) == ["embed.embed", "pairs.mining"]
    assert change_lines(recorded, changed) == ["embed.batch_size: 1024 -> 512", "mining.k: (none) -> 8"]


def _without_first_shards(text: str) -> str:
    manifest = json.loads(text)
    next(iter(manifest["languages"].values()))["shards"] = None
    return json.dumps(manifest)


@pytest.mark.parametrize("damage", [
    lambda text: text[:100], lambda text: "[]\n",
    # an object edited by hand: each stopped --plan and the run on a TypeError, AttributeError or format error
    lambda text: json.dumps({**json.loads(text), "languages": 3}),
    lambda text: json.dumps({**json.loads(text), "seconds": "x"}), _without_first_shards,
])
def test_a_damaged_stage_manifest_counts_as_not_finished_and_is_named(copy, caplog, damage):
    """A manifest cut short (or overwritten with JSON of another shape) stopped every run, --plan and --rerun too,
    with a JSON error naming no file: its stage is not finished, as where it was deleted, and a warning names it."""
    from pipelines.job import stage_decisions

    manifest_file = Path(layout.manifest_path(str(copy), "embed"))
    manifest_file.write_text(damage(manifest_file.read_text(encoding="utf-8")), encoding="utf-8")
    expected = bitext(copy)
    plan = stage_decisions(settings_for(str(copy), "max"), ["embed", "pairs"], rerun=False)  # what --plan shows
    assert [(d.name, d.action, d.reason) for d in plan] == [("extract", "reuse", "unrecorded"), ("embed", "run", "new"),
                                                             ("pairs", "run", "after")]
    with caplog.at_level(logging.WARNING, logger="pipelines"):
        mine(copy, ["pairs"])  # the finished pairs stage on the same settings: reused, as with no embed manifest
    assert f"{manifest_file}: not a" in caplog.text and "the embed stage counts as not finished" in caplog.text
    mine(copy, ["embed", "pairs"])  # run again, as if it had no manifest
    assert storage.read_json(str(manifest_file))["format"] == manifests.FORMAT
    assert bitext(copy) == expected


def test_a_pairs_manifest_entry_without_its_files_is_not_a_manifest(copy):
    manifest = storage.read_json(layout.manifest_path(str(copy), "pairs"))
    assert manifests.shape_problem(manifest) is None
    del manifest["pairs"][0]["tsv"]  # the run stopped on KeyError: 'tsv'
    assert manifests.shape_problem(manifest) == "pairs not as this project writes it"
    assert manifests.shape_problem({**manifest, "pairs": 5, "quantizers": []}) == \
        "pairs, quantizers not as this project writes them"


def test_a_cut_bitext_tsv_is_named_by_its_recorded_size_and_an_older_manifest_keeps_the_presence_check(copy):
    """A TSV.gz cut short has no footer a cheap check reads: the manifest records each bitext file's size (and
    digest), and a rerun over a cut one names it rather than report every stage finished."""
    import hashlib

    tsv = copy / "bitext" / "deu_Latn-eng_Latn.tsv.gz"
    entry = next(e for e in manifests.read(str(copy), "pairs")["pairs"] if e["pair"] == "-".join(PAIR))
    whole = tsv.read_bytes()
    assert entry["tsv_bytes"] == len(whole) and entry["tsv_sha256"] == hashlib.sha256(whole).hexdigest()
    tsv.write_bytes(whole[:-30])
    with pytest.raises(ValueError, match=rf"deu_Latn-eng_Latn\.tsv\.gz: {len(whole) - 30} bytes, the manifest "
                                         rf"lists {len(whole)} .* run it again \(--stages pairs --rerun\)"):
        mine(copy, ["embed", "pairs"])
    manifest_file = layout.manifest_path(str(copy), "pairs")
    stored = storage.read_json(manifest_file)
    for stored_entry in stored["pairs"]:  # as versions before sizes were recorded wrote it
        stored_entry.pop("tsv_bytes"), stored_entry.pop("tsv_sha256")
    storage.write_json(manifest_file, stored)
    mine(copy, ["embed", "pairs"])  # trusted as it was: present and not empty
    tsv.write_bytes(b"")
    with pytest.raises(ValueError, match=r"deu_Latn-eng_Latn\.tsv\.gz: empty file"):
        mine(copy, ["embed", "pairs"])


def test_an_encoder_folder_is_one_dependency_however_its_path_is_spelled(monkeypatch):
    """`--encoder models/cmlm-ensemble/` (or ./..., or the absolute path) reran the embed and pairs stages over
    the spelling alone; the bundled config's folder (absolute already) is recorded as before, so its outputs hold."""
    from pipelines.dependencies import changed_keys, stage_dependencies
    from pipelines.settings import load_settings
    from tests.conftest import REPO

    monkeypatch.chdir(REPO)
    default = load_settings()
    recorded = stage_dependencies("embed", default)
    assert recorded["embed.encoder"] == default["encoder"] == str(REPO / "models" / "cmlm-ensemble")
    for spelling in ("models/cmlm-ensemble/", "./models/cmlm-ensemble", "models/../models/cmlm-ensemble"):
        assert changed_keys(recorded, stage_dependencies("embed", {**default, "encoder": spelling})) == [], spelling
        # an output recorded with the spelling, before the path was normalised, holds too
        assert changed_keys({**recorded, "embed.encoder": spelling}, recorded) == [], spelling
    for name in ("char-ngram", "sentence-transformers/LaBSE", "gs://bucket/encoder/"):  # as given
        assert stage_dependencies("embed", {**default, "encoder": name})["embed.encoder"] == name


def test_a_run_that_changes_a_stage_removes_the_last_report_before_and_writes_its_own_after(copy, monkeypatch):
    """A run killed after it started changing a stage's outputs left the last run's report.json describing bitext
    that was no longer there: it goes before the first stage that runs, and only then (a run refused by its checks,
    or one that reuses every stage, leaves it)."""
    from pipelines.pairs import PairsStage

    report = copy / "report.json"
    mine(copy, ["embed", "pairs"])  # every stage reused: the report stays (written again)
    assert report.exists()
    shard = copy / "sentences" / "deu_Latn" / "part-00000-of-00002.parquet"
    whole = shard.read_bytes()
    shard.write_bytes(b"")
    with pytest.raises(ValueError, match="empty file"):
        mine(copy, ["embed", "pairs"], rerun=True)  # refused before anything changed
    assert report.exists()
    shard.write_bytes(whole)

    def killed(self, pipeline):
        assert not report.exists()  # gone before the stage changes anything
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(PairsStage, "__call__", killed)
        with pytest.raises(KeyboardInterrupt):
            mine(copy, ["pairs"], rerun=True)
    assert not report.exists()
    mine(copy, ["pairs"])
    assert storage.read_json(str(report))["pairs"]["-".join(PAIR)]["parquet"] == "bitext/deu_Latn-eng_Latn.parquet"
