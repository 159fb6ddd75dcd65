"""training.average: a weighted average of encoders of one architecture and tokenizer, checked and recorded."""

import json
import shutil

import numpy as np
import pytest
from safetensors.torch import load_file, save_file

from training.average import AverageError, average, main


@pytest.fixture(scope="module")
def two_encoders(tmp_path_factory, tiny_tokenizer):
    from encoders.model import bert_config, new_encoder_model, save_encoder

    root = tmp_path_factory.mktemp("average")
    folders = []
    for seed in (1, 2):
        model = new_encoder_model(bert_config(len(tiny_tokenizer), hidden=32, layers=1, max_positions=32), seed=seed)
        folders.append(save_encoder(model, tiny_tokenizer, root / f"seed{seed}", max_seq_length=32))
    return folders


def test_average_is_the_weighted_mean_and_loads(two_encoders, tmp_path):
    from encoders import load_encoder

    out = average(two_encoders, [0.25, 0.75], tmp_path / "avg")
    a, b, c = (load_file(str(f / "model.safetensors")) for f in (*two_encoders, out))
    assert set(c) == set(a)
    for name in a:
        if a[name].is_floating_point():
            np.testing.assert_allclose(c[name].float().numpy(), 0.25 * a[name].float().numpy()
                                       + 0.75 * b[name].float().numpy(), rtol=1e-5, atol=1e-6)
    record = json.loads((out / "average.json").read_text(encoding="utf-8"))
    assert [s["weight"] for s in record["sources"]] == [0.25, 0.75]
    vectors = load_encoder(str(out), device="cpu").encode(["Guten Morgen.", "Good morning."])
    assert vectors.shape[0] == 2 and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert not list(tmp_path.glob(".avg.*")), "the staging folder is renamed into place, not left behind"


def test_weights_must_sum_to_one_and_output_must_be_new(two_encoders, tmp_path):
    with pytest.raises(AverageError, match="sum to 1"):
        average(two_encoders, [0.5, 0.6], tmp_path / "x")
    with pytest.raises(AverageError, match="one --weights value"):
        average(two_encoders, [1.0], tmp_path / "x")
    (tmp_path / "exists").mkdir()
    with pytest.raises(AverageError, match="exists"):
        average(two_encoders, [0.5, 0.5], tmp_path / "exists")
    with pytest.raises(AverageError, match="sum to 1"):  # NaN passed, and failed as a non-finite tensor later
        average(two_encoders, [float("nan"), float("nan")], tmp_path / "x")
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="is a file, not a folder"):  # was a FileExistsError traceback
        average(two_encoders, [0.5, 0.5], tmp_path / "file" / "averaged")


def test_other_tokenizer_or_shape_is_named(two_encoders, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(two_encoders[1], other)
    (other / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(AverageError, match="tokenizer.json"):
        average([two_encoders[0], other], [0.5, 0.5], tmp_path / "x")
    shutil.copyfile(two_encoders[0] / "tokenizer.json", other / "tokenizer.json")
    state = load_file(str(other / "model.safetensors"))
    name = next(n for n, t in state.items() if t.ndim == 2)
    state[name] = state[name][:, :-1].contiguous()
    save_file(state, str(other / "model.safetensors"))
    with pytest.raises(AverageError, match=f"tensor {name} has shape"):
        average([two_encoders[0], other], [0.5, 0.5], tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_command_line_reports_bad_input_without_a_traceback(two_encoders, tmp_path, capsys):
    assert main(["--models", str(two_encoders[0]), str(tmp_path), "--weights", "0.5", "0.5",
                 "--output", str(tmp_path / "x")]) == 2
    assert "not an encoder folder" in capsys.readouterr().err
