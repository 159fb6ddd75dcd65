"""YAML configuration with command-line overrides."""

import pytest

from miner.cli import mining_config
from miner.config import ConfigError, load_config


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


def test_bad_files_and_overrides(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("mining: [1, 2\n")
    with pytest.raises(ConfigError, match="bad.yaml: invalid YAML"):
        load_config(tmp_path / "bad.yaml")
    with pytest.raises(ConfigError, match="not of the form"):
        load_config(None, ["mining.k"])
