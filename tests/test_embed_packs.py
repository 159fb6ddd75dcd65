"""The embed stage's packs: a shard's last chunk short of `embed.batch_size`, and every shard smaller than one, go
to the encoder together with other languages' (pipelines/embed.py), fixed by the manifest so every runner and a
resumed run embed the same packs."""

from pathlib import Path

import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import embed, manifests, storage
from pipelines.embed import JoinPack, chunks_of, packs_of_partial_chunks, tasks_from_manifest
from pipelines.mine import run
from tests.test_pipeline_pairs import settings_for, write_shards


def tasks(*rows):
    return [{"language": language, "shard": shard, "rows": n} for language, shard, n in rows]


def test_partial_chunks_are_packed_in_the_manifests_order_as_many_as_fit_in_a_chunk():
    plan = packs_of_partial_chunks(tasks(("ara", 0, 40), ("ara", 1, 7), ("deu", 0, 20), ("deu", 1, 5),
                                         ("eng", 0, 16), ("fra", 0, 6), ("hin", 0, 10), ("zho", 0, 15)), 16)
    # 8 + 7 fit in 16; 4 + 5 + 6 fit; 10 and 15 would not go together with anything after them: alone, left out
    assert plan == {("ara", 0, 32): 0, ("ara", 1, 0): 0, ("deu", 0, 16): 1, ("deu", 1, 0): 1, ("fra", 0, 0): 1}
    assert packs_of_partial_chunks(tasks(("deu", 0, 16), ("eng", 0, 32)), 16) == {}  # only whole chunks
    assert packs_of_partial_chunks(tasks(("deu", 0, 8), ("eng", 0, 8)), 16) == {("deu", 0, 0): 0,
                                                                                ("eng", 0, 0): 0}  # exactly one


def test_a_pack_is_one_call_of_its_chunks_and_a_stopped_runs_chunks_are_not_saved_again():
    parts = [("eng", 0, 0, ["c", "d", "e"], True), ("deu", 1, 32, ["a", "b"], False)]  # as the grouping gives them
    ((segments, (languages, texts)),) = list(JoinPack().process((0, parts)))
    assert segments == (("deu", 1, 32, 2, False), ("eng", 0, 0, 3, True)) and texts == ["a", "b", "c", "d", "e"]
    assert languages == ("deu", "deu", "eng", "eng", "eng")
    assert list(JoinPack().process((0, [("deu", 0, 0, ["a"], False), ("deu", 1, 0, ["b"], False)])))[0][1][0] == "deu"
    assert not list(JoinPack().process((0, [(*part[:4], True) for part in parts])))  # all saved: not embedded
    vectors = np.arange(10, dtype=np.float32).reshape(5, 2)
    ((key, rows),) = list(chunks_of(segments, vectors))  # the English rows were saved by the stopped run
    assert key == ("deu", 1, 32) and rows.tolist() == [[0, 1], [2, 3]]
    assert [(k, r.tolist()) for k, r in chunks_of(("eng", 0, 0), vectors[:1])] == [(("eng", 0, 0), [[0, 1]])]


@pytest.mark.parametrize("dtype", ["float32", "binary"])
def test_packed_rows_land_in_their_own_shards_in_fewer_calls(tmp_path, dtype):
    """The same vectors with packs as without (char-ngram: a vector does not depend on its batch), so every packed
    row went back to its shard and place; German's eight-row shards go two to a call of 16."""
    written = {}
    for pack in (True, False):
        output = tmp_path / str(pack)
        write_shards(str(output), 4)
        settings = {**settings_for(str(output), "max"),
                    "embed": {"dtype": dtype, "batch_size": 16, "pack_partial_chunks": pack}}
        report = run(settings, PipelineOptions([]), ["embed"])
        plan = packs_of_partial_chunks(tasks_from_manifest(manifests.stored(str(output), "extract")), 16)
        assert report["counters"]["embed"]["embed"]["num_inferences"] == (6 if pack else 8) and bool(plan)
        written[pack] = {path.relative_to(output): path.read_bytes()
                         for path in sorted((output / "embeddings").rglob("*.npy"))}
    assert written[True] == written[False] and len(written[True]) == 8


def test_a_run_stopped_inside_a_pack_embeds_the_pack_again_and_saves_only_what_it_lacked(tmp_path, monkeypatch):
    """A stopped run saved the first of a pack's two chunks (German shard 0 of shards 0 and 1): the next run keeps
    it, embeds the pack whole again (its bits are then what they were) and saves the other, and writes what a run
    never stopped writes."""
    from tests.test_pipeline_reruns import _fresh_run, _resumed, _stopped_run, bitext

    output = tmp_path / "out"
    settings = {**settings_for(str(output), "max"), "embed": {"dtype": "float32", "batch_size": 16}}
    written = _stopped_run(output, monkeypatch, settings, chunks=5)
    saved = {Path(path).parent.name + "/" + Path(path).name for path in written}
    assert "deu_Latn/00000-000000000.npy" in saved and "deu_Latn/00001-000000000.npy" not in saved
    kept = sum(len(np.load(path)) for path in written)
    saves, calls = [], []
    original, split = storage.write_npy, embed.chunks_of
    monkeypatch.setattr(storage, "write_npy", lambda path, matrix: (saves.append(path), original(path, matrix)))
    monkeypatch.setattr(embed, "chunks_of", lambda key, matrix: (calls.append(key), split(key, matrix))[1])
    report = run(settings, PipelineOptions([]), ["embed", "pairs"])
    assert _resumed(report) == kept
    assert (("deu_Latn", 0, 0, 8, True), ("deu_Latn", 1, 0, 8, False)) in calls  # the whole pack, again
    embedded = {Path(p).parent.name + "/" + Path(p).name for p in saves if "/embed/chunks/" in p}
    assert "deu_Latn/00001-000000000.npy" in embedded and not embedded & saved  # nothing saved twice
    fresh, _ = _fresh_run(tmp_path, settings)
    for path in sorted((fresh / "embeddings").rglob("*.npy")):
        assert (output / path.relative_to(fresh)).read_bytes() == path.read_bytes(), path.name
    assert bitext(output) == bitext(fresh)
