"""Threshold offsets per language (miner/thresholds.py): the file, the pair's threshold, the pipeline mining each pair
at its own, reruns noticing new offsets without embedding again, and the command that measures them."""

import json

import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from miner.mining import MiningConfig
from miner.thresholds import (
    FILE,
    FORMAT,
    ThresholdOffsetsError,
    for_pair,
    language_name,
    pair_threshold,
    read_offsets,
    resolve_offsets,
)
from pipelines import layout, storage
from pipelines.mine import run
from tests.test_pipeline_pairs import library_pairs, settings_for, write_shards


def write_offsets(folder, offsets, **extra) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / FILE).write_text(json.dumps({"format": FORMAT, "offsets": offsets, **extra}))
    return str(folder / FILE)


def test_a_pair_is_mined_at_the_shared_threshold_moved_by_both_languages_offsets():
    offsets = {"ces_Latn": -0.06, "deu_Latn": 0.02}
    assert pair_threshold(1.35, offsets, "ces_Latn", "eng_Latn") == pytest.approx(1.29)
    assert pair_threshold(1.35, offsets, "ces_Latn", "deu_Latn") == pytest.approx(1.31)
    assert pair_threshold(1.35, offsets, "fin_Latn", "eng_Latn") == 1.35  # no offset: the shared threshold
    assert pair_threshold(None, offsets, "ces_Latn", "eng_Latn") is None  # no threshold: every selected pair


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a readable JSON file"),
    (json.dumps({"offsets": {}}), "not a threshold offsets file"),
    (json.dumps({"format": FORMAT, "offsets": {"Czech": -0.1}}), "'Czech' is not a language name"),
    (json.dumps({"format": FORMAT, "offsets": {"ces_Latn": "low"}}), "the offset of ces_Latn must be a finite"),
    (json.dumps({"format": FORMAT, "offsets": [1, 2]}), "offsets must be a mapping"),
    # registered codes, but pairs are looked up by FLORES-200's names: these offsets were never applied
    (json.dumps({"format": FORMAT, "offsets": {"cmn_Hans": -0.1}}), "'cmn_Hans' is not how pairs name.*zho_Hans"),
    (json.dumps({"format": FORMAT, "offsets": {"nor_Latn": -0.1}}), "'nor_Latn' is not how pairs name.*nob_Latn"),
    (json.dumps({"format": FORMAT, "offsets": {"ara_Arab": -0.1}}), "'ara_Arab' is not how.*arb_Arab"),
    (json.dumps({"format": FORMAT, "offsets": {"lav_Latn": -0.1}}), "'lav_Latn' is not how.*lvs_Latn"),
    (json.dumps({"format": FORMAT, "offsets": {"zho_Hani": -0.1}}), "'zho_Hani' is not how.*zho_Hans or zho_Hant"),
])
def test_a_bad_offsets_file_is_an_error_naming_it(tmp_path, content, message):
    path = tmp_path / FILE
    path.write_text(content)
    with pytest.raises(ThresholdOffsetsError, match=message) as error:
        read_offsets(path)
    assert str(path) in str(error.value)


def test_offsets_come_from_the_encoder_folder_a_file_or_the_setting_itself(tmp_path):
    path = write_offsets(tmp_path / "encoder", {"ces_Latn": -0.05})
    assert resolve_offsets("encoder", str(tmp_path / "encoder")) == {"ces_Latn": -0.05}
    assert resolve_offsets("encoder", "char-ngram") == {}   # a built-in encoder has no file: none
    assert resolve_offsets(path, None) == {"ces_Latn": -0.05}
    assert resolve_offsets({"hin_Deva": -0.1}, None) == {"hin_Deva": -0.1}
    assert resolve_offsets(None, str(tmp_path / "encoder")) == {}
    with pytest.raises(ThresholdOffsetsError, match="file not found"):
        resolve_offsets(str(tmp_path / "missing.json"), None)
    with pytest.raises(ValueError, match="threshold_offsets"):
        MiningConfig(threshold_offsets=3)
    with pytest.raises(ThresholdOffsetsError, match="mining.threshold_offsets: 'cmn_Hans' is not how.*zho_Hans"):
        resolve_offsets({"cmn_Hans": -0.1}, None)


def test_a_config_takes_the_pairs_threshold_when_it_knows_both_languages(tmp_path):
    write_offsets(tmp_path / "encoder", {"ces_Latn": -0.05})
    config = MiningConfig(threshold=1.35, threshold_offsets="encoder")
    assert for_pair(config, "ces_Latn", "eng_Latn", str(tmp_path / "encoder")).threshold == pytest.approx(1.30)
    assert for_pair(config, "ces_Latn", None, str(tmp_path / "encoder")) is config
    assert for_pair(MiningConfig(threshold=1.35), "ces_Latn", "eng_Latn", str(tmp_path / "encoder")) == \
        MiningConfig(threshold=1.35)  # no offsets asked for
    assert language_name("cs", ["Dobrý den."]) == "ces_Latn"
    assert language_name("zz", ["12 34"]) == "zz"   # no script to tell: no offset, not an error


def test_the_pipeline_mines_each_pair_at_its_own_threshold_and_records_it(tmp_path):
    output = str(tmp_path / "out")
    texts = write_shards(output, 2)
    settings = settings_for(output, "max")
    settings["mining"] = {**settings["mining"], "threshold_offsets": {"deu_Latn": 0.05}}
    report = run(settings, PipelineOptions([]), ["embed", "pairs"])
    table = storage.read_parquet(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]).to_pydict()
    mined = {(s, t, round(m, 4)) for s, t, m in zip(table["src_text"], table["tgt_text"], table["score"])}
    everything = library_pairs(texts, "max")   # at the shared threshold, 1.0
    assert mined == {pair for pair in everything if pair[2] >= 1.05} and len(mined) < len(everything)
    assert report["pairs"]["deu_Latn-eng_Latn"]["threshold"] == pytest.approx(1.05)


def test_new_offsets_make_the_bitext_stale_but_not_the_vectors(tmp_path):
    from encoders.ensemble import FILE as ENSEMBLE_FILE
    from pipelines.dependencies import encoder_identity

    encoder = tmp_path / "ensemble"
    encoder.mkdir()
    (encoder / ENSEMBLE_FILE).write_text(json.dumps({
        "format": "cmlm-ensemble/1", "members": ["char-ngram:64", "char-ngram:32"], "dims": [64, 32],
        "default": [0.5, 0.5], "languages": {}}))
    identity = encoder_identity(str(encoder))
    write_offsets(encoder, {"deu_Latn": 0.05})
    assert encoder_identity(str(encoder)) == identity   # the vectors do not depend on the offsets

    output = str(tmp_path / "out")
    write_shards(output, 1)
    settings = {**settings_for(output, "max"), "encoder": str(encoder)}
    settings["mining"] = {**settings["mining"], "threshold_offsets": "encoder"}
    run(settings, PipelineOptions([]), ["embed", "pairs"])
    embedded = storage.read_json(layout.manifest_path(output, "embed"))
    first = storage.read_json(layout.manifest_path(output, "pairs"))["pairs"][0]
    write_offsets(encoder, {"deu_Latn": 0.5})
    run(settings, PipelineOptions([]), ["embed", "pairs"])
    assert storage.read_json(layout.manifest_path(output, "embed")) == embedded   # not embedded again
    second = storage.read_json(layout.manifest_path(output, "pairs"))["pairs"][0]
    assert (first["threshold"], second["threshold"]) == (pytest.approx(1.05), pytest.approx(1.5))
    assert second["pairs"] < first["pairs"]


def test_the_command_measures_each_languages_best_threshold_and_centres_them_on_the_reference():
    from training.thresholds import best_threshold, offsets_from

    rng = np.random.default_rng(0)
    english = rng.standard_normal((300, 32)).astype(np.float32)
    noisy = english[:100] + 0.3 * rng.standard_normal((100, 32)).astype(np.float32)
    source = np.vstack([noisy, rng.standard_normal((100, 32)).astype(np.float32)])
    source /= np.linalg.norm(source, axis=1, keepdims=True)
    english /= np.linalg.norm(english, axis=1, keepdims=True)
    threshold, f1 = best_threshold(source, english, 100)
    assert 1.0 < threshold < 10 and f1 > 90   # the 100 planted pairs stand out
    best = {"deu_Latn": (1.30, 95.0), "fra_Latn": (1.28, 95.0), "ces_Latn": (1.20, 80.0), "dzo_Tibt": (np.inf, 0.0)}
    assert offsets_from(best, ["deu_Latn", "fra_Latn"]) == {"ces_Latn": -0.09, "deu_Latn": 0.0, "fra_Latn": 0.0}
    assert offsets_from(best, ["deu_Latn", "fra_Latn"], scale=0.5)["ces_Latn"] == -0.045   # half the move
    with pytest.raises(ValueError, match="dzo_Tibt"):
        offsets_from(best, ["dzo_Tibt"])


def test_the_command_writes_offsets_the_miner_reads_measured_on_ntrex_held_out_documents(tmp_path, capsys):
    from tests.test_ensemble import write_ensemble, write_ntrex
    from training.thresholds import main

    english = [f"Sentence number {i} talks about {w}." for i, w in enumerate(["cats", "dogs", "rain"] * 20)]
    noisy = [text.replace("number", "no.").replace("talks", "speaks") for text in english]
    write_ntrex(tmp_path / "pool", {"deu": english, "fra": noisy}, english, [f"doc{i // 3}" for i in range(60)])
    encoder = write_ensemble(tmp_path / "ens")
    assert main(["--encoder", str(encoder), "--train-pool", str(tmp_path / "pool"), "--reference", "deu_Latn",
                 "--source-distractors", "6", "--target-distractors", "12"]) == 0
    written = json.loads((encoder / FILE).read_text())
    offsets = read_offsets(encoder / FILE)
    assert written["scale"] == 0.5 and offsets["deu_Latn"] == 0.0 and set(offsets) == {"deu_Latn", "fra_Latn"}
    best = written["measured"]["best"]
    assert offsets["fra_Latn"] == pytest.approx(0.5 * (best["fra_Latn"]["threshold"] - best["deu_Latn"]["threshold"]),
                                                abs=1e-4)
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--encoder", "char-ngram"])   # a built-in has no folder to write into
    with pytest.raises(SystemExit):  # refused before the measurement
        main(["--encoder", str(encoder), "--train-pool", str(tmp_path / "none"), "--scale", "2"])
    with pytest.raises(SystemExit):  # refused before the measurement, not after every language was measured
        main(["--encoder", str(encoder), "--train-pool", str(tmp_path / "pool"), "--reference", "ger", "deu_Latm"])
    assert "--reference ger deu_Latm: not language names" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # train[:-5]: nearly every row as a distractor
        main(["--encoder", str(encoder), "--train-pool", str(tmp_path / "pool"), "--source-distractors", "-5"])
    with pytest.raises(SystemExit):  # the dev pool measures, never chooses
        main(["--encoder", str(encoder), "--train-pool", str(tmp_path / "shared" / "data" / "dev")])
    assert "never on dev/" in capsys.readouterr().err
    assert main(["--encoder", str(encoder), "--train-pool", str(tmp_path / "none")]) != 0  # one line, no traceback
    assert f"error: {tmp_path / 'none'}" in capsys.readouterr().err


def test_the_benchmark_mines_each_language_at_both_thresholds_on_wmt_shaped_sets(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    from tests.test_ensemble import write_ensemble

    pool = tmp_path / "wmt-news"
    sets = {"deu": [f"Sentence number {i} talks about {w}." for i, w in enumerate(["cats", "dogs", "rain"] * 20)],
            "ces": [f"Another line {i} on {w} and more." for i, w in enumerate(["sun", "sea", "snow", "wind"] * 25)],
            "fin": [f"A distractor, {i}, of {w}." for i, w in enumerate(["tea", "ink"] * 200)]}   # no offset
    index = ["original_path\tstored_path"]
    for code, english in sets.items():
        folder = pool / "testsets" / f"{code}-eng"
        folder.mkdir(parents=True)
        (folder / f"newstest2019.{code}").write_text("\n".join(t.replace("talks", "speaks") for t in english) + "\n")
        (folder / "newstest2019.eng").write_text("\n".join(english) + "\n")
        index += [f"testsets/{code}-eng/newstest2019.{suffix}\ttestsets/{code}-eng/newstest2019.{suffix}"
                  for suffix in (code, "eng")]
    (pool / "INDEX.tsv").write_text("\n".join(index) + "\n")
    encoder = write_ensemble(tmp_path / "ens")
    write_offsets(encoder, {"deu_Latn": 0.5, "ces_Latn": 0.0})
    repo = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("threshold_offsets", repo / "bench" / "threshold_offsets.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--wmt", str(pool), "--encoder", str(encoder), "--threshold", "1.0", "--min-cosine", "0",
                       "--min-pairs", "50", "--draws", "1"]) == 0
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in out.splitlines()
            if line.startswith("| ces_Latn") or line.startswith("| deu_Latn")}
    assert set(rows) == {"ces_Latn", "deu_Latn"} and rows["deu_Latn"][1] == "+0.500"
    shared, moved = ([float(v) for v in rows[name][i].split(" / ")] for name, i in (("ces_Latn", 2), ("ces_Latn", 3)))
    assert shared == moved   # no offset: the same pairs
    recall = [float(rows["deu_Latn"][i].split(" / ")[1]) for i in (2, 3)]
    assert recall[1] <= recall[0]   # a higher threshold keeps no more
    assert "mean F1 over 2 languages" in out
