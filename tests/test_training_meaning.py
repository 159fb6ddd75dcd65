"""The seed-003 autoencoder: its losses by hand, and a trained meaning projection that removes a language offset."""

import numpy as np
import pytest
import torch

from encoders.language_removal import load_language_removal
from training.meaning import MeaningAutoencoder, PairVectors, export, train_autoencoder


def test_losses_by_hand():
    model = MeaningAutoencoder(dim=2, languages=2)
    with torch.no_grad():  # meaning = identity, language = 0, identification uniform
        model.meaning.weight.copy_(torch.eye(2)), model.meaning.bias.zero_()
        model.language.weight.zero_(), model.language.bias.copy_(torch.tensor([1.0, 0.0]))
        model.identify.weight.zero_(), model.identify.bias.zero_()
    s, t = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])
    s2, t2 = torch.tensor([[1.0, 0.0]]), torch.tensor([[-1.0, 0.0]])
    out = model.losses(s, t, s2, t2, 0, 1)
    # reconstruction: each e - (e + [1, 0]) = [-1, 0]: squared norm 1, over d = 2
    assert out["reconstruction"].item() == pytest.approx(0.5)
    # meaning: 1 - cos(s, t) = 1; max(0, cos(s, s')) = 1; max(0, cos(t, t')) = 0
    assert out["meaning"].item() == pytest.approx(2.0)
    # language vectors all equal [1, 0]: 2 - 1 - 1 = 0; identification uniform over 2: ln 2
    assert out["language"].item() == pytest.approx(np.log(2), rel=1e-5)


def test_meaning_projection_removes_a_language_offset(tmp_path):
    rng = np.random.default_rng(0)
    meaning = rng.normal(size=(1200, 16)).astype(np.float32)
    offsets = {"de": rng.normal(size=16) * 2, "en": rng.normal(size=16) * 2}
    def noise():
        return 0.05 * rng.normal(size=meaning.shape)

    src = (meaning + offsets["de"] + noise()).astype(np.float32)
    tgt = (meaning + offsets["en"] + noise()).astype(np.float32)
    model, _ = train_autoencoder([PairVectors("de", "en", src, tgt)], batch_size=128, lr=3e-3, patience=5,
                                      max_epochs=80)
    path = export(model, tmp_path)
    projection = load_language_removal(tmp_path, "meaning", 16)
    assert path.name == "meaning_projection.safetensors"

    def accuracy(a, b):
        a, b = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True)
        return float(np.mean((a @ b.T).argmax(1) == np.arange(len(a))))

    raw = accuracy(src[:300], tgt[:300])
    projected = accuracy(projection.apply(src[:300]), projection.apply(tgt[:300]))
    assert projected > raw + 0.2 and projected > 0.9


def test_the_command_refuses_an_encoder_without_a_folder_to_write_into(tmp_path, monkeypatch, capsys):
    from training.meaning import main

    (tmp_path / "de-en.tsv").write_text("Haus\thouse\nBaum\ttree\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # it wrote ./char-ngram/meaning_projection.safetensors, a folder made for it
    assert main(["--encoder", "char-ngram", "--bitext", "de-en.tsv", "--max-epochs", "1"]) == 2
    assert "not a checkpoint folder" in capsys.readouterr().err and not (tmp_path / "char-ngram").exists()
