"""Declarative configuration: a YAML file from configs/ plus `section.key=value` overrides.

    config = load_config("configs/bucc.yaml", ["mining.k=16", "knn.index=IVF4096,Flat"])

Override values are parsed as YAML, so `mining.threshold=1.06` is a float and `knn.gpu=false` a boolean; `1e-6`
is a float too (PyYAML follows YAML 1.1, which reads an exponent without a decimal point as text). A NaN or an
infinity (`.nan`, `.inf`) is no usable setting: it is an error naming the key.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A configuration file or override that cannot be used."""


# The repository the packages were imported from: configs/, models/ and sample/ beside them in a checkout. A wheel
# (`pip install .`, what Dataflow's workers install) carries the packages only, not those 40 MB.
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def bundled_hint(path: str | Path) -> str:
    """For a bundled file that is missing because the packages were installed without their repository, what to
    do ('' for any other path)."""
    try:
        Path(path).resolve().relative_to(PROJECT_ROOT)
    except (ValueError, OSError):
        return ""
    if (PROJECT_ROOT / "configs").is_dir():
        return ""
    return (" (the bundled configs, models and sample are in the repository, not in an installed wheel: run from a "
            "checkout installed with `pip install -e .`, or name your own files)")


def check_number(name: str, value, low: float, high: float | None = None, whole: bool = False) -> None:
    """A setting that must be a number in [low, high] (a whole number where `whole`): outside it a stage would
    skip every record, drop every sentence or divide by zero, later and without naming the setting."""
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value != value or value < low \
            or (high is not None and value > high):
        span = f"from {low:g} to {high:g}" if high is not None else f"{low:g} or more"
        raise ConfigError(f"{name} must be a {'whole ' if whole else ''}number {span}, got {value!r}")


class _Loader(yaml.SafeLoader):
    """YAML 1.1 as PyYAML reads it, plus the floats of YAML 1.2 written with an exponent and no point (`1e-6`)."""


_EXPONENT_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


def load_yaml(text: str):
    """YAML text as Python values (safe: plain data only), `1e-6` read as a float."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader


def read_yaml_file(path: Path, what: str, example: str, load=load_yaml):
    """The YAML file's values; a file that is missing, a folder, not UTF-8, unreadable or not YAML is a ConfigError
    naming it (`what`: "recipe", "configuration file"; `example`: the files meant)."""
    try:
        return load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found{bundled_hint(path)}") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: a folder, not a {what} ({example})") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not a YAML text file (not UTF-8 at byte {err.start})") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot be read ({err.strerror or err})") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: invalid YAML ({err})") from None


def load_config(path: str | Path | None, overrides: list[str] = ()) -> dict:
    config = {}
    if path is not None:
        path = Path(path)
        config = read_yaml_file(path, "configuration file", "configs/*.yaml") or {}
        if not isinstance(config, dict):
            raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    for override in overrides:
        set_value(config, override)
    check_finite(config)
    return config


def check_finite(value, key: str = "") -> None:
    """ConfigError naming the first NaN or infinite number among the settings (thresholds, floors, limits...):
    a NaN compares false with everything, so a threshold of NaN would keep nothing and say nothing."""
    if isinstance(value, dict):
        for name, item in value.items():
            check_finite(item, f"{key}.{name}" if key else str(name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_finite(item, f"{key}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"setting {key or 'value'} must be a finite number, got {value}")


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
        node[leaf] = load_yaml(raw) if raw.strip() else None
    except yaml.YAMLError:
        node[leaf] = raw


def section(config: dict, name: str) -> dict:
    value = config.get(name) or {}
    if not isinstance(value, dict):
        raise ConfigError(f"configuration section {name!r} must be a mapping, got {value!r}")
    return dict(value)
