"""YAML configuration with command-line overrides."""

import importlib
import math
import re

import pytest

from miner.cli import mining_config
from miner.config import ConfigError, load_config
from miner.mining import MiningConfig
from pipelines.settings import load_settings


def test_overrides_are_typed(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("mining:\n  k: 4\n  margin: ratio\nknn:\n  index: Flat\n")
    config = load_config(path, ["mining.k=16", "mining.threshold=1.06", "knn.index=IVF4096,Flat",
                                "knn.gpu=false"])
    assert config == {"mining": {"k": 16, "margin": "ratio", "threshold": 1.06},
                      "knn": {"index": "IVF4096,Flat", "gpu": False}}
    mined = mining_config(config)
    assert (mined.k, mined.threshold, mined.knn.index, mined.knn.gpu) == (16, 1.06, "IVF4096,Flat", False)


def test_unknown_settings_are_named():
    with pytest.raises(ValueError, match="unknown mining setting\\(s\\) neighbours"):
        mining_config({"mining": {"neighbours": 4}})
    with pytest.raises(ValueError, match="unknown knn setting\\(s\\) probes"):
        mining_config({"knn": {"probes": 4}})
    with pytest.raises(ValueError, match="mining.selection must be one of"):
        mining_config({"mining": {"selection": "best"}})


def test_a_bad_top_level_setting_names_the_set_that_gave_it(tmp_path):
    with pytest.raises(ConfigError, match=r"^--set minning.k=3: unknown setting\(s\) minning"):
        load_settings(overrides=["minning.k=3"])
    with pytest.raises(ConfigError, match=r"^--set languages=deu_Latn: .* --set 'languages=\[deu_Latn\]'"):
        load_settings(overrides=["languages=deu_Latn"])
    (tmp_path / "mine.yaml").write_text("minning: {k: 3}\n")
    with pytest.raises(ConfigError, match=r"mine.yaml: unknown setting\(s\) minning"):
        load_settings(tmp_path / "mine.yaml", ["mining.k=4"])


def test_bad_files_and_overrides(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("mining: [1, 2\n")
    with pytest.raises(ConfigError, match="bad.yaml: invalid YAML"):
        load_config(tmp_path / "bad.yaml")
    with pytest.raises(ConfigError, match="not of the form"):
        load_config(None, ["mining.k"])
    with pytest.raises(ConfigError, match="a folder, not a configuration file"):  # were tracebacks
        load_config(tmp_path)
    (tmp_path / "binary.yaml").write_bytes(b"\x1f\x8b\x08\x00 gzip, not YAML")
    with pytest.raises(ConfigError, match="binary.yaml: not a YAML text file"):
        load_config(tmp_path / "binary.yaml")


def test_exponents_without_a_point_are_floats(tmp_path):
    """PyYAML reads YAML 1.1, where `1e-6` is text: a threshold given so would be refused as not a number."""
    path = tmp_path / "c.yaml"
    path.write_text("mining:\n  threshold: 1e-6\n  min_cosine: 2.5E-1\n")
    config = load_config(path, ["mining.ratio_floor=1e-2", "knn.nprobe=8", "knn.index=IVF4096,Flat"])
    assert config == {"mining": {"threshold": 1e-6, "min_cosine": 0.25, "ratio_floor": 0.01},
                      "knn": {"nprobe": 8, "index": "IVF4096,Flat"}}
    assert mining_config(config).threshold == 1e-6


NOT_FINITE = ["mining.threshold=.nan", "mining.min_cosine=.inf", "mining.ratio_floor=.inf",
              "mining.threshold=-.inf", "pair_filter.length_ratio=.inf", "filters.lid_score.min_score=.NaN",
              "read.max_payload_bytes=.inf"]


@pytest.mark.parametrize("override", NOT_FINITE)
def test_nan_and_infinite_settings_are_errors_naming_the_key(override):
    key, _, value = override.partition("=")
    with pytest.raises(ConfigError, match=f"setting {re.escape(key)} must be a finite number, got "):
        load_config(None, [override])
    with pytest.raises(ConfigError, match=re.escape(key)):
        load_settings(overrides=[override])     # the pipeline's settings, from its default config


def test_nan_in_a_config_file_is_an_error(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("filters:\n  length: {min_chars: 10, max_chars: .inf}\n")
    with pytest.raises(ConfigError, match="filters.length.max_chars must be a finite number, got inf"):
        load_config(path)


@pytest.mark.parametrize("name", ["threshold", "min_cosine", "ratio_floor"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_mining_config_refuses_nan_and_infinity(name, value):
    with pytest.raises(ValueError, match=f"mining.{name} must be .*finite number, got {value!r}"):
        MiningConfig(**{name: value})


@pytest.mark.parametrize("command", ["miner.mine", "pipelines.mine"])
def test_a_nan_threshold_stops_the_commands_before_any_work(tmp_path, capsys, command):
    """It used to mine nothing and exit 0: a NaN compares false with every margin."""
    main = importlib.import_module(command).main
    assert main(["--output", str(tmp_path / "out"), "--set", "mining.threshold=.nan"]) == 2
    assert "mining.threshold must be a finite number, got nan" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_bundled_file_missing_from_an_installed_wheel_says_to_run_from_a_checkout(tmp_path, monkeypatch):
    """A wheel carries the packages, not configs/, models/ or sample/: the default config or model missing there
    says so (it read as a mistyped path), and other missing paths get no such hint."""
    from miner import config

    monkeypatch.setattr(config, "PROJECT_ROOT", tmp_path)  # an installed copy: no configs/ beside the packages
    with pytest.raises(ConfigError, match=r"pipeline_sample.yaml: configuration file not found \(the bundled "
                                          r"configs, models and sample are in the repository.*pip install -e \.`"):
        load_config(tmp_path / "configs" / "pipeline_sample.yaml")
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path.parent / "elsewhere.yaml")
    assert "the bundled configs" not in str(raised.value)
    (tmp_path / "configs").mkdir()  # a checkout: a missing file there is the user's to fix
    with pytest.raises(ConfigError) as raised:
        load_config(tmp_path / "configs" / "nope.yaml")
    assert "the bundled configs" not in str(raised.value)
