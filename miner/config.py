"""Declarative configuration: a YAML file from configs/ plus `section.key=value` overrides.

    config = load_config("configs/bucc.yaml", ["mining.k=16", "knn.index=IVF4096,Flat"])

Override values are parsed as YAML, so `mining.threshold=1.06` is a float and `knn.gpu=false` a boolean.
"""

from __future__ import annotations

from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A configuration file or override that cannot be used."""


def load_config(path: str | Path | None, overrides: list[str] = ()) -> dict:
    config = {}
    if path is not None:
        path = Path(path)
        try:
            config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise ConfigError(f"{path}: configuration file not found") from None
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: invalid YAML ({err})") from None
        if not isinstance(config, dict):
            raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    for override in overrides:
        set_value(config, override)
    return config


def set_value(config: dict, override: str) -> None:
    """Apply one `a.b.c=value` override in place."""
    key, sep, raw = override.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"override {override!r} is not of the form section.key=value")
    *parents, leaf = key.strip().split(".")
    node = config
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {override!r}: {part!r} is a value, not a section")
    try:
        node[leaf] = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        node[leaf] = raw


def section(config: dict, name: str) -> dict:
    value = config.get(name) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"configuration section {name!r} must be a mapping, got {value!r}")
    return dict(value)
