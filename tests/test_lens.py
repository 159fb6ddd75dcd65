"""Contextual lenses (encoders.lens): the networks as the paper defines them, the folder format, a lens trained by
`training.train` that the rest of the project loads, and every bad folder or recipe named."""

import json
import shutil

import numpy as np
import pytest
import torch

from encoders import binary_code, check_spec, load_encoder
from encoders.lens import LensError, LensSpec, build_lens, read_lens, save_lens
from miner.config import ConfigError
from training.config import load_recipe
from training.train import main as train_main


@pytest.mark.parametrize("kind", ["simple", "gated-conv"])
def test_padding_never_changes_a_sentence_vector(kind):
    torch.manual_seed(0)
    lens = build_lens(LensSpec(kind, input_dim=16, output_dim=32, gate_dim=8)).eval()
    tokens = torch.randn(1, 5, 16)
    alone = lens(tokens, torch.ones(1, 5, dtype=torch.long))
    padded = torch.cat([tokens, 100 * torch.randn(1, 3, 16)], dim=1)  # loud padding: must not leak
    mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0, 0]])
    torch.testing.assert_close(lens(padded, mask), alone)
    assert (alone >= 0).all()  # ReLU then max-pool: non-negative features, what the binary code thresholds


def test_simple_lens_is_max_over_tokens_of_relu_w_c():
    lens = build_lens(LensSpec("simple", input_dim=4, output_dim=8))
    tokens, mask = torch.randn(2, 3, 4), torch.ones(2, 3, dtype=torch.long)
    expected = torch.relu(tokens @ lens.weight.weight.T).amax(dim=1)
    torch.testing.assert_close(lens(tokens, mask), expected)


def lens_folder(tmp_path, encoder_dir, kind="simple"):
    torch.manual_seed(0)
    hidden = json.loads((encoder_dir / "config.json").read_text())["hidden_size"]
    return save_lens(build_lens(LensSpec(kind, input_dim=hidden, output_dim=64, gate_dim=16)),
                     tmp_path / "lens", encoder_dir)


@pytest.mark.parametrize("kind", ["simple", "gated-conv"])
def test_a_lens_folder_loads_as_an_encoder(tmp_path, tiny_encoder_dir, kind):
    folder = lens_folder(tmp_path, tiny_encoder_dir, kind)
    check_spec(str(folder))
    encoder = load_encoder(str(folder))
    sentences = ["Guten Morgen.", "Good morning, everyone.", "Ja."]
    vectors = encoder.encode(sentences)
    assert vectors.shape == (3, 64)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(encoder.encode(sentences[::-1])[::-1], vectors, atol=1e-5)  # input order
    assert encoder.binary_code == binary_code(str(folder)) == "threshold"
    codes = encoder.encode(sentences, dtype="binary")
    assert codes.dtype == np.uint8 and codes.shape == (3, 8)


def test_a_lens_whose_encoder_is_missing_is_named(tmp_path, tiny_encoder_dir):
    encoder_copy = shutil.copytree(tiny_encoder_dir, tmp_path / "encoder")
    folder = lens_folder(tmp_path, encoder_copy)
    shutil.rmtree(encoder_copy)
    with pytest.raises(LensError, match=r"lens\.json: its encoder '../encoder' is not a folder"):
        load_encoder(str(folder))


def test_a_lens_on_an_encoder_of_another_width_is_named(tmp_path, tiny_encoder_dir):
    folder = lens_folder(tmp_path, tiny_encoder_dir)
    description = json.loads((folder / "lens.json").read_text())
    (folder / "lens.json").write_text(json.dumps({**description, "input_dim": 128}))
    with pytest.raises(LensError, match="reads 128-d token vectors but its encoder .* gives 64-d"):
        load_encoder(str(folder))


def test_a_lens_trained_behind_another_tokenizer_is_named(tmp_path, tiny_encoder_dir):
    encoder_copy = shutil.copytree(tiny_encoder_dir, tmp_path / "encoder")
    folder = lens_folder(tmp_path, encoder_copy)
    tokenizer_file = encoder_copy / "tokenizer.json"
    text = tokenizer_file.read_text()
    assert '"lowercase": false' in text
    tokenizer_file.write_text(text.replace('"lowercase": false', '"lowercase": true'))  # the same ids, uncased
    with pytest.raises(LensError, match="another tokenizer"):
        load_encoder(str(folder))


def test_a_lens_of_an_unknown_kind_is_named(tmp_path, tiny_encoder_dir):
    folder = lens_folder(tmp_path, tiny_encoder_dir)
    description = json.loads((folder / "lens.json").read_text())
    (folder / "lens.json").write_text(json.dumps({**description, "kind": "attention"}))
    with pytest.raises(LensError, match="lens kind 'attention'"):
        read_lens(folder)


LENS_RECIPE = """\
output: run
seed: 1
model: {{init: {encoder}, max_seq_length: 32, dropout: 0.0}}
lens: {{kind: {kind}, output_dim: 64, gate_dim: 16}}
data: {{bitext: [de-en.tsv], heldout: [de-en.tsv]}}
br: {{batch_size: 16, loss: max-hinge, margin: 0.2}}
optimizer: {{lr: 5e-3, warmup_steps: 5, weight_decay: 0.0}}
stages:
  - {{name: lens, objectives: [br], steps: 40}}
run: {{log_every: 5, eval_every: 0, checkpoint_every: 20, precision: fp32}}
"""


@pytest.mark.parametrize("kind", ["simple", "gated-conv"])
def test_a_lens_trains_over_a_frozen_encoder_and_exports_a_loadable_folder(training_inputs, tiny_encoder_dir,
                                                                           tmp_path, kind):
    (training_inputs / "lens.yaml").write_text(LENS_RECIPE.format(encoder=tiny_encoder_dir, kind=kind))
    frozen = {p.name: p.read_bytes() for p in tiny_encoder_dir.iterdir() if p.is_file()}
    assert train_main(["--config", str(training_inputs / "lens.yaml"), "--set", f"output={tmp_path / 'run'}"]) == 0
    log = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    losses = [line["br_loss"] for line in log if "br_loss" in line]
    accuracies = [line["br_accuracy"] for line in log if "br_accuracy" in line]
    # the loss falls ~22% in 40 steps (the hinge's margin keeps it off zero): the bound leaves room for the session's
    # tiny tokenizer, which differs between sessions (HF's WordPiece trainer breaks ties in hash order)
    assert losses[-1] < 0.9 * losses[0] and accuracies[0] < 0.5 and accuracies[-1] > 0.9
    assert {p.name: p.read_bytes() for p in tiny_encoder_dir.iterdir() if p.is_file()} == frozen  # never moved
    folder = tmp_path / "run" / "encoder"
    assert sorted(p.name for p in folder.iterdir()) == ["lens.json", "lens.safetensors", "training.json"]
    vectors = load_encoder(str(folder)).encode(["Guten Morgen.", "Good morning."])
    assert vectors.shape == (2, 64)
    from safetensors.torch import load_file

    fitted = load_file(str(folder / "lens.safetensors"))  # input statistics measured before the first step
    assert fitted["standardise.mean"].abs().sum() > 0 and not torch.allclose(fitted["standardise.scale"],
                                                                             torch.ones(1))


def test_a_recipe_that_lenses_an_encoder_without_token_outputs_is_refused(training_inputs):
    (training_inputs / "lens.yaml").write_text(LENS_RECIPE.format(encoder="use-multilingual", kind="simple"))
    with pytest.raises(ConfigError, match="not a transformer checkpoint folder; a lens reads token vectors"):
        load_recipe(training_inputs / "lens.yaml")


def test_a_lens_recipe_trains_the_ranker_alone(training_inputs, tiny_encoder_dir):
    (training_inputs / "lens.yaml").write_text(LENS_RECIPE.format(encoder=tiny_encoder_dir, kind="simple"))
    with pytest.raises(ConfigError, match="objectives must be \\[br\\]"):
        load_recipe(training_inputs / "lens.yaml", ["stages=[{name: c, objectives: [cmlm, br], steps: 3}]"])
