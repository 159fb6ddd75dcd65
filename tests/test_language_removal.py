"""PCR and the meaning projection (encoders.language_removal), alone and applied by the encoder."""

import numpy as np
import pytest

from encoders import load_encoder
from encoders.fit_pcr import main
from encoders.language_removal import MEANING_FILE, MeaningProjection, PrincipalComponentRemoval
from tests.conftest import sample_sentences


def test_pcr_removes_the_first_right_singular_vector(tmp_path):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(50, 8)).astype(np.float32) + np.array([3, 0, 0, 0, 0, 0, 0, 1], np.float32)
    pcr = PrincipalComponentRemoval.fit({"deu_Latn": vectors})
    first = np.linalg.svd(vectors.astype(np.float64), full_matrices=False)[2][0]
    assert abs(pcr.components["deu_Latn"] @ first) == pytest.approx(1, abs=1e-5)
    cleaned = pcr.apply(vectors, "deu_Latn")
    np.testing.assert_allclose(cleaned @ pcr.components["deu_Latn"], 0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(cleaned, axis=1), 1, atol=1e-5)
    pcr.save(tmp_path / "pcr.safetensors")
    np.testing.assert_array_equal(PrincipalComponentRemoval.load(tmp_path / "pcr.safetensors").apply(vectors, "deu_Latn"),
                                  cleaned)
    with pytest.raises(ValueError, match="no component for language 'fra_Latn'; fitted: deu_Latn"):
        pcr.apply(vectors, "fra_Latn")
    for other_form in ("de", "deu", "ger", "de-AT"):  # the names the ensemble reads, for the one German component
        np.testing.assert_array_equal(pcr.apply(vectors, other_form), cleaned)
    chinese = PrincipalComponentRemoval.fit({"zho_Hans": vectors, "zho_Hant": vectors[::-1] ** 2})
    with pytest.raises(ValueError, match="'zh' .it could be any of zho_Hans, zho_Hant: name one."):
        chinese.apply(vectors, "zh")
    np.testing.assert_array_equal(chinese.apply(vectors, "zh-Hant"), chinese.apply(vectors, "zho_Hant"))
    with pytest.raises(ValueError, match="no component for language 'deu_Cyrl'; fitted: deu_Latn"):
        pcr.apply(vectors, "deu_Cyrl")  # a script of its own is another label
    bare = PrincipalComponentRemoval.fit({"de": vectors})  # fitted as `fit-pcr --input de=...`
    np.testing.assert_array_equal(bare.apply(vectors, "deu_Latn"), cleaned)
    with pytest.raises(ValueError, match="say which language"):
        pcr.apply(vectors, None)


def test_meaning_projection_round_trip(tmp_path):
    weight, bias = np.eye(3, 4, dtype=np.float32), np.array([0, 0, 1], np.float32)
    projection = MeaningProjection(weight, bias, "tanh")
    projection.save(tmp_path / "m.safetensors")
    loaded = MeaningProjection.load(tmp_path / "m.safetensors")
    got = loaded.apply(np.array([[1, 0, 0, 5]], np.float32))
    expected = np.tanh(np.array([1, 0, 1], np.float32))
    np.testing.assert_allclose(got[0], expected / np.linalg.norm(expected), atol=1e-6)
    with pytest.raises(ValueError, match="weight \\[out, in\\]"):
        MeaningProjection(weight, np.zeros(4, np.float32))


def test_fit_pcr_command_refuses_what_it_cannot_fit_or_save_before_loading_the_encoder(tmp_path, monkeypatch, capsys):
    (tmp_path / "de.txt").write_text("Ein Satz.\nNoch einer.\n", encoding="utf-8")
    (tmp_path / "empty.txt").write_text("\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    # a built-in has no folder: PCR went to ./char-ngram/pcr.safetensors, a folder made for it
    assert main(["fit-pcr", "--encoder", "char-ngram", "--input", "de=de.txt"]) == 2
    assert "give --output" in capsys.readouterr().err and not (tmp_path / "char-ngram").exists()
    assert main(["fit-pcr", "--encoder", "no-such-model", "--input", "de=empty.txt", "--output", "p"]) == 2
    assert "empty.txt: 0 non-empty lines" in capsys.readouterr().err  # the file named, before any encoder loads
    assert main(["fit-pcr", "--encoder", "char-ngram", "--input", "de=de.txt", "--output", "pcr.safetensors"]) == 0
    assert (tmp_path / "pcr.safetensors").exists()
    # the second file replaced the first: German fitted on whatever the second held
    assert main(["fit-pcr", "--encoder", "char-ngram", "--input", "de=de.txt", "--input", "de=empty.txt",
                 "--output", "p"]) == 2
    assert "--input de= is given twice" in capsys.readouterr().err
    assert main(["fit-pcr", "--encoder", "char-ngram", "--input", "de=de.txt", "--sample", "1", "--output", "p"]) == 2
    assert "--sample must be 2 or more" in capsys.readouterr().err


def test_fit_pcr_command_then_encode_with_it(tiny_encoder_dir, tmp_path):
    model = tmp_path / "model"
    import shutil

    shutil.copytree(tiny_encoder_dir, model)
    for lang, lines in sample_sentences().items():
        (tmp_path / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["fit-pcr", "--encoder", str(model), "--input", f"de={tmp_path}/de.txt",
                 "--input", f"en={tmp_path}/en.txt", "--sample", "15"]) == 0
    plain = load_encoder(str(model), precision="fp32")
    with_pcr = load_encoder(str(model), precision="fp32", language_removal="pcr")
    sentences = sample_sentences()["de"][:5]
    component = with_pcr.removal.components["de"]
    np.testing.assert_allclose(with_pcr.encode(sentences, language="de") @ component, 0, atol=1e-5)
    assert np.abs(plain.encode(sentences) @ component).min() > 0.1  # there was something to remove
    # sentences of several languages in one call (the embed stage's packs): each row loses its own language's
    english = sample_sentences()["en"][:4]
    mixed = with_pcr.encode(sentences[:2] + english + sentences[2:], language=["de"] * 2 + ["en"] * 4 + ["de"] * 3)
    np.testing.assert_allclose(mixed[[0, 1, 6, 7, 8]] @ component, 0, atol=1e-5)
    np.testing.assert_allclose(mixed[2:6] @ with_pcr.removal.components["en"], 0, atol=1e-5)
    assert np.abs(mixed[2:6] @ component).max() > 1e-3  # not German's: English rows keep that direction
    with pytest.raises(ValueError, match=r"one name per sentence \(5\), got 2"):
        with_pcr.encode(sentences, language=["de", "en"])
    with pytest.raises(ValueError, match=f"{MEANING_FILE}: missing"):
        load_encoder(str(model), language_removal="meaning")
    MeaningProjection(np.eye(8, 64, dtype=np.float32), np.zeros(8, np.float32)).save(model / MEANING_FILE)
    meaning = load_encoder(str(model), language_removal="meaning")
    assert meaning.dim == 8 and meaning.encode(sentences).shape == (5, 8)
    MeaningProjection(np.eye(8, 32, dtype=np.float32), np.zeros(8, np.float32)).save(model / MEANING_FILE)
    with pytest.raises(ValueError, match="made for vectors of size \\[32\\], but the encoder gives 64"):
        load_encoder(str(model), language_removal="meaning")
