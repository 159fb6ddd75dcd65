"""Reading checkpoint folders (encoders.checkpoint): what loads, and clear errors for what does not."""

import json
import shutil

import numpy as np
import pytest

from encoders import CheckpointError, load_encoder
from encoders.checkpoint import read_checkpoint


def copy_of(folder, tmp_path):
    return shutil.copytree(folder, tmp_path / "copy")


def test_our_checkpoint_reads_as_mean_pooling(tiny_encoder_dir):
    layout = read_checkpoint(tiny_encoder_dir)
    assert (layout.pooling, layout.model_type, layout.max_seq_length, layout.dense) == ("mean", "bert", 32, ())
    assert (tiny_encoder_dir / "model.safetensors").exists() and not list(tiny_encoder_dir.glob("*.bin"))


def test_pooling_override(tiny_encoder_dir):
    assert read_checkpoint(tiny_encoder_dir, pooling="cls").pooling == "cls"
    with pytest.raises(CheckpointError, match="pooling 'sum'"):
        read_checkpoint(tiny_encoder_dir, pooling="sum")


def test_plain_transformers_folder_defaults_to_mean(tiny_encoder_dir, tmp_path):
    folder = copy_of(tiny_encoder_dir, tmp_path)
    (folder / "modules.json").unlink()
    layout = read_checkpoint(folder)
    assert layout.pooling == "mean" and layout.max_seq_length is None


def _cut(path, keep):
    data = path.read_bytes()
    path.write_bytes(data[:keep])


@pytest.mark.parametrize("damage, message", [
    (lambda f: (f / "config.json").unlink(), "config.json: missing"),
    (lambda f: (f / "config.json").write_text("{not json"), "not valid JSON"),
    (lambda f: (f / "model.safetensors").unlink(), "no model weights"),
    # a cut copy: the header short, or tensors the bytes do not cover (a traceback from the loader inside a stage)
    (lambda f: _cut(f / "model.safetensors", 100), "model.safetensors: not a whole safetensors file"),
    (lambda f: _cut(f / "model.safetensors", -1000), "model.safetensors: not a whole safetensors file"),
    (lambda f: [(f / n).unlink() for n in ("tokenizer.json",)], "no tokenizer files"),
    (lambda f: _edit(f / "config.json", model_type="gpt2"), "unsupported architecture 'gpt2'"),
    (lambda f: _edit(f / "config.json", auto_map={"AutoModel": "evil.Model"}), "never runs code"),
    (lambda f: (f / "modules.json").write_text(json.dumps([{"idx": 0, "path": "", "type": "x.Transformer"},
                                                           {"idx": 1, "path": "p", "type": "x.WeirdModule"}])),
     "unsupported sentence-transformers module"),
    (lambda f: (f / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode": "weightedmean"})),
     "pooling 'weightedmean' is not supported"),
])
def test_damaged_folders_are_clear_errors(tiny_encoder_dir, tmp_path, damage, message):
    folder = copy_of(tiny_encoder_dir, tmp_path)
    damage(folder)
    with pytest.raises(CheckpointError, match=message):
        load_encoder(str(folder))


def test_weights_that_do_not_fit_the_config_are_a_clear_error(tiny_encoder_dir, tmp_path):
    folder = copy_of(tiny_encoder_dir, tmp_path)
    _edit(folder / "config.json", hidden_size=128, intermediate_size=512)
    with pytest.raises(CheckpointError, match="the weights have other shapes than config.json gives"):
        load_encoder(str(folder))  # not transformers' "look at the above report!", a report this project hides


@pytest.mark.parametrize("changes, message", [
    ({"num_hidden_layers": 100000}, r"config\.json: 100000 layers, but the weights in .*copy hold 2"),
    ({"vocab_size": 10**9}, r"copy: the weights have other shapes .*vocabulary of 1000000000 by 64"),
    ({"hidden_size": 4096}, r"copy: the weights have other shapes .*the weights embed \d+ by 64"),
    ({"intermediate_size": 10**6}, r"copy: the weights have other shapes .*intermediate_size 1000000"),
    ({"num_hidden_layers": "2"}, r"config\.json: num_hidden_layers must be a whole number"),
])
def test_a_config_the_weights_do_not_fit_is_refused_before_the_model_is_built(tiny_encoder_dir, tmp_path, changes,
                                                                             message):
    """transformers builds what config.json describes before reading a weight: 100000 layers allocated without
    bound. The weights' headers say how many layers and how wide they are."""
    folder = copy_of(tiny_encoder_dir, tmp_path)
    _edit(folder / "config.json", **changes)
    with pytest.raises(CheckpointError, match=message):
        read_checkpoint(folder)


@pytest.mark.parametrize(("weights", "changes"), [
    ("bin", {"num_hidden_layers": 100000}), ("bin", {"max_position_embeddings": 10**9}),
    ("safetensors", {"max_position_embeddings": 10**9}),  # the layers are compared with the headers' (above)
])
def test_a_config_far_larger_than_its_weights_is_refused_before_the_model_is_built(tiny_encoder_dir, tmp_path,
                                                                                  weights, changes):
    """A pytorch_model.bin has no header to compare shapes with, and position tables are not among the shapes
    compared: a model's size implied by config.json is bounded by the bytes its weights have."""
    import torch
    from safetensors.torch import load_file

    folder = copy_of(tiny_encoder_dir, tmp_path)
    if weights == "bin":
        torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
        (folder / "model.safetensors").unlink()
    _edit(folder / "config.json", **changes)
    with pytest.raises(CheckpointError, match=r"config\.json: describes a model of about [\d,]+ parameters, but the "
                                              r"weights in .*copy hold [\d,]+ bytes"):
        read_checkpoint(folder)


def test_a_layer_cut_from_the_weights_is_named_before_the_model_is_built(tiny_encoder_dir, tmp_path):
    folder = damaged_copy(tiny_encoder_dir, tmp_path,
                          lambda tensors: {k: v for k, v in tensors.items() if ".layer.1." not in k})
    with pytest.raises(CheckpointError, match=r"config\.json: 2 layers, but the weights in .*damaged hold 1"):
        read_checkpoint(folder)


@pytest.mark.parametrize("outside", ["../other", "{other}", "1_Pooling/../../other"])
def test_a_module_path_out_of_the_folder_is_refused_naming_the_entry(tiny_encoder_dir, tmp_path, outside):
    """modules.json's paths are the folder's own: `../other` loaded another folder's model as this one's."""
    shutil.copytree(tiny_encoder_dir, tmp_path / "other")
    folder = copy_of(tiny_encoder_dir, tmp_path)
    entry = outside.format(other=tmp_path / "other")
    modules = json.loads((folder / "modules.json").read_text())
    modules[0]["path"] = entry
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(CheckpointError, match=rf"modules\.json module 0 \(Transformer\): path '{entry}' is not inside "):
        read_checkpoint(folder)


@pytest.mark.parametrize("outside", ["../outside.safetensors", "{outside}"])
def test_a_weights_index_entry_out_of_the_folder_is_refused_naming_it(tiny_encoder_dir, tmp_path, outside):
    folder = copy_of(tiny_encoder_dir, tmp_path)
    (folder / "model.safetensors").rename(tmp_path / "outside.safetensors")
    entry = outside.format(outside=tmp_path / "outside.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"embeddings.x": entry}}))
    with pytest.raises(CheckpointError, match=rf"index\.json: weight_map file '{entry}' is not inside "):
        read_checkpoint(folder)


def test_weights_in_a_sub_folder_of_the_index_still_load(tiny_encoder_dir, tmp_path):
    folder = copy_of(tiny_encoder_dir, tmp_path)
    (folder / "shards").mkdir()
    (folder / "model.safetensors").rename(folder / "shards" / "model-1-of-1.safetensors")
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"embeddings.x": "shards/./model-1-of-1.safetensors"}}))
    assert read_checkpoint(folder).model_type == "bert"


def test_unknown_names(tmp_path):
    with pytest.raises(CheckpointError, match="unknown encoder 'laser9'"):
        load_encoder("laser9")
    with pytest.raises(CheckpointError, match="not a folder"):
        read_checkpoint(tmp_path / "nothing")
    # A hub id that cannot be fetched (offline here; unknown online) fails with the reason, not a traceback.
    with pytest.raises(CheckpointError, match="no-such-org/no-such-model: not a local folder"):
        load_encoder("no-such-org/no-such-model")


def test_a_mistyped_encoder_folder_is_named_before_any_work_with_its_nearest_names(tmp_path, monkeypatch):
    """An encoder spec that names no folder but reads as org/name, where `org` is a local folder, is a mistyped
    path: check_spec says so at once, with the folder's closest names, and asks no hub."""
    from encoders import check_spec

    (tmp_path / "models" / "cmlm-ensemble").mkdir(parents=True)
    (tmp_path / "models" / "other").mkdir()
    monkeypatch.chdir(tmp_path)
    asked = []
    monkeypatch.setattr("huggingface_hub.HfApi.model_info", lambda *a, **k: asked.append(a))
    with pytest.raises(CheckpointError, match=r"models/cmlm-ensmble: no such folder \(in models/: cmlm-ensemble\?\)"):
        check_spec("models/cmlm-ensmble")
    assert not asked
    check_spec("some-org/some-model")  # no such local folder: the hub is asked (here: told it exists)
    assert asked


def test_a_mistyped_encoder_stops_the_job_before_the_extract_stage(tmp_path, capsys, monkeypatch):
    from pipelines.mine import main
    from tests.conftest import REPO

    monkeypatch.chdir(REPO)  # where models/ is
    output = tmp_path / "out"
    assert main(["--output", str(output), "--encoder", "models/cmlm-ensmble", "--quiet"]) == 2
    assert "models/cmlm-ensmble: no such folder (in models/: cmlm-ensemble" in capsys.readouterr().err
    assert not output.exists()


def _edit(path, **changes):
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def damaged_copy(tiny_encoder_dir, tmp_path, change):
    """A copy of the tiny checkpoint whose weights go through `change(tensors) -> tensors`."""
    from safetensors.numpy import load_file, save_file

    folder = shutil.copytree(tiny_encoder_dir, tmp_path / "damaged")
    weights = folder / "model.safetensors"
    save_file(change(load_file(str(weights))), str(weights))
    return folder


def test_weights_the_file_lacks_or_holds_as_nan_are_errors_not_random_or_nan_vectors(tiny_encoder_dir, tmp_path):
    """transformers starts a tensor the file lacks at random, under a warning this project hides: a layer cut from
    the file embedded at cosine 0.4-0.6 to the right vectors, every key renamed at 0.05, exit status 0. A NaN
    weight made every vector NaN."""
    def drop_layer(tensors):  # a layer's part: a whole layer cut is a count config.json does not match (below)
        return {k: v for k, v in tensors.items() if ".layer.1.output." not in k}

    with pytest.raises(CheckpointError, match=r"lacks \d+ of the model's tensors .*layer\.1\."):
        load_encoder(str(damaged_copy(tiny_encoder_dir, tmp_path / "a", drop_layer)))

    def poison(tensors):
        name = next(k for k in sorted(tensors) if k.endswith("output.dense.weight"))
        tensors[name] = tensors[name].copy()
        tensors[name].flat[0] = float("nan")
        return tensors

    with pytest.raises(CheckpointError, match="holds NaN or infinite values"):
        load_encoder(str(damaged_copy(tiny_encoder_dir, tmp_path / "b", poison)))


def test_a_dense_layer_with_nan_weights_is_an_error(tiny_encoder_dir, tmp_path):
    from safetensors.numpy import save_file

    from encoders.checkpoint import DenseLayer
    from encoders.pooling import load_dense

    weights = tmp_path / "model.safetensors"
    save_file({"linear.weight": np.full((4, 8), np.nan, np.float32)}, str(weights))
    with pytest.raises(CheckpointError, match="linear.weight holds NaN"):  # gave all-NaN vectors, exit 0
        load_dense(DenseLayer(weights, 8, 4, False, "identity"))


@pytest.mark.parametrize("content", ["list", "dict of lists", "tensor"])
def test_a_dense_tensor_file_that_is_no_dictionary_of_tensors_is_named(tmp_path, content):
    """weights_only lets lists and bare tensors through: a list gave AttributeError ('list' object has no 'items')."""
    import torch

    from encoders.checkpoint import DenseLayer
    from encoders.pooling import load_dense

    weights = tmp_path / "pytorch_model.bin"
    torch.save({"list": [torch.zeros(2)], "dict of lists": {"linear.weight": [torch.zeros(2)]},
                "tensor": torch.zeros(2)}[content], weights)
    with pytest.raises(CheckpointError, match="pytorch_model.bin: not a Dense layer's weights"):
        load_dense(DenseLayer(weights, 8, 4, False, "identity"))


def test_a_tokenizer_with_ids_past_the_embedding_table_is_named_at_load(tiny_encoder_dir, tmp_path):
    folder = shutil.copytree(tiny_encoder_dir, tmp_path / "copy")
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    word = next(w for w, i in tokenizer["model"]["vocab"].items() if i > 100)
    tokenizer["model"]["vocab"][word] = 10_000  # another model's tokenizer: it failed at the first sentence with it
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    with pytest.raises(CheckpointError, match="token ids up to 10000 but the model embeds"):
        load_encoder(str(folder))


@pytest.mark.parametrize(("file", "content", "message"), [
    ("config.json", [1, 2], "expected a JSON object"),
    ("sentence_bert_config.json", ["x"], "expected a JSON object"),
    ("sentence_bert_config.json", {"max_seq_length": "abc"}, "max_seq_length must be a whole number"),
    ("modules.json", ["Transformer"], "expected a non-empty list of modules"),
])
def test_json_of_the_wrong_shape_is_named(tiny_encoder_dir, tmp_path, file, content, message):
    folder = shutil.copytree(tiny_encoder_dir, tmp_path / "copy")
    (folder / file).write_text(json.dumps(content))
    with pytest.raises(CheckpointError, match=message):  # were AttributeErrors
        load_encoder(str(folder))


def test_a_mistyped_local_folder_is_named_with_its_neighbours_not_fetched(tmp_path, monkeypatch):
    """`models/cmlm-distiled` reads as a hub id (org/name): it went to the hub and came back 'could not be
    fetched'; where `models/` is a local folder it is a typo, said with the names near it."""
    (tmp_path / "models" / "cmlm-distilled").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError, match=r"no such folder \(in models/: cmlm-distilled\?\)"):
        load_encoder("models/cmlm-distiled")

