"""The mining loop: a pool mined with the current encoder, scored against its gold, fed back into training."""

import gzip
import json
import random

from tests.conftest import sample_gold_pairs
from training.loop import main
from training.train import main as train_main


def write_gz(path, lines):
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("".join(f"{line}\n" for line in lines))


def test_loop_mines_the_pool_and_retrains_with_the_pairs(training_inputs, tmp_path, capsys):
    recipe = training_inputs / "recipe.yaml"
    first = tmp_path / "first"
    assert train_main(["--config", str(recipe), "--set", f"output={first}", "--set", "stages.1.steps=40"]) == 0
    pool = tmp_path / "pool"
    pool.mkdir()
    pairs = sample_gold_pairs("training") + sample_gold_pairs("test")
    sources, targets = [a for a, _ in pairs], [b for _, b in pairs]
    random.Random(0).shuffle(targets)
    write_gz(pool / "deu_Latn.txt.gz", sources)
    write_gz(pool / "eng_Latn.deu_Latn.txt.gz", targets)
    write_gz(pool / "deu_Latn.gold.tsv.gz", [f"{a}\t{b}" for a, b in pairs])
    out = tmp_path / "loop"
    assert main(["--encoder", str(first / "encoder"), "--pool", str(pool), "--recipe", str(recipe),
                 "--output", str(out), "--threshold", "1.0", "--set", "stages.1.steps=2"]) == 0
    report = json.loads((out / "loop.json").read_text())
    mined = report["mined"]["deu_Latn"]
    assert mined["precision"] > 0.8 and mined["recall"] > 0.8  # it trained on these very pairs
    assert (out / "mined" / "deu_Latn-eng_Latn.tsv.gz").exists()
    record = json.loads((out / "model" / "encoder" / "training.json").read_text())
    assert record["recipe"]["data"]["min_score"] == 1.0
    assert any("mined" in spec for spec in record["recipe"]["data"]["bitext"])
    assert "deu_Latn-eng_Latn" in record["data"]["bitext"]  # the mined pairs, a language pair of their own

    # An interrupted loop resumes without mining again: the pairs on disk are the ones it trains on.
    mined_file = out / "mined" / "deu_Latn-eng_Latn.tsv.gz"
    before = mined_file.stat().st_mtime_ns
    capsys.readouterr()
    # without --resume, a model folder that holds checkpoints is refused before the mining, not after it
    assert main(["--encoder", str(first / "encoder"), "--pool", str(pool), "--recipe", str(recipe),
                 "--output", str(out), "--threshold", "1.0"]) == 2
    assert "already holds checkpoints" in capsys.readouterr().err and mined_file.stat().st_mtime_ns == before
    assert main(["--encoder", str(first / "encoder"), "--pool", str(pool), "--recipe", str(tmp_path / "none.yaml"),
                 "--output", str(tmp_path / "other"), "--threshold", "1.0"]) == 2
    assert "recipe not found" in capsys.readouterr().err and not (tmp_path / "other" / "mined").exists()
    assert main(["--encoder", str(first / "encoder"), "--pool", str(pool), "--recipe", str(recipe),
                 "--output", str(out), "--threshold", "1.0", "--set", "stages.1.steps=2", "--resume"]) == 0
    assert mined_file.stat().st_mtime_ns == before
    assert (out / "model" / "encoder" / "training.json").exists()

    # A recipe that names no bitext of its own trains on the mined pairs alone (a fine-tune on what was mined).
    alone = tmp_path / "alone"
    assert main(["--encoder", str(first / "encoder"), "--pool", str(pool), "--recipe", str(recipe),
                 "--output", str(alone), "--threshold", "1.0", "--set", "stages.1.steps=2",
                 "--set", "data.bitext=[]"]) == 0
    record = json.loads((alone / "model" / "encoder" / "training.json").read_text())
    assert [spec.rsplit("/", 2)[-2:] for spec in record["recipe"]["data"]["bitext"]] == [["mined", "*.tsv.gz"]]
