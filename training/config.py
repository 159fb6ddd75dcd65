"""Training recipes: a YAML file in configs/ plus `section.key=value` overrides, checked before the first step.

    config = load_recipe("configs/train_reference_cpu.yaml", ["optimizer.lr=3e-4", "stages.1.steps=500"])

A recipe may start from another with `base: other.yaml` (merged section by section, the recipe winning), which is
how S1, S2, S3 and the BR-only and CMLM-only comparisons share one set of sizes. Every key is checked: an unknown
or mistyped key is an error naming it, never a setting silently ignored hours into a run. Input paths are relative
to the recipe file that names them (as in configs/mine_sample.yaml); `output` is relative to where you run.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from miner.config import ConfigError, read_yaml_file, set_value
from miner.languages import check_code, yaml_bool_hint

OBJECTIVES = ("cmlm", "br", "nli", "distill")
BR_LOSSES = ("softmax", "max-hinge")
NO_TOKEN_OUTPUTS = ("use-multilingual", "char-ngram")  # built-in encoders that give sentence vectors only


@dataclass(frozen=True)
class ModelConfig:
    tokenizer: str | None = None  # a tokenizer folder (training.prepare builds one); unused when `init` is set
    init: str | None = None  # start from this encoder checkpoint folder instead of random weights
    hidden: int = 256
    layers: int = 4
    heads: int = 4
    intermediate: int = 1024
    dropout: float = 0.1
    max_seq_length: int = 64  # tokens per sentence, [CLS] and [SEP] included; longer ones are cut and counted
    projection_vectors: int = 15  # N: vectors the CMLM projection makes from s1's sentence vector
    # A linear layer after pooling to this width, exported as a sentence-transformers Dense module: a distilled
    # student needs the teacher's width. None: the pooled vector is the sentence vector (or the init's Dense).
    output_dim: int | None = None
    # With `init`: grow its encoder to this many layers, new ones on top starting as near-identities
    # (training.model.stack_layers): a deeper student that starts from what the shallow one knows.
    stack_to: int | None = None
    # With `init`: widen every layer's feed-forward block to this many units, the new ones contributing nothing at
    # first (training.model.widen_feed_forward): a wider student that starts from what the narrow one knows.
    widen_ffn_to: int | None = None


@dataclass(frozen=True)
class JoinConfig:
    """Short pairs teach short text only; joined side by side they give long text in the languages whose news is a
    few thousand sentences (issue 20). Each new pair joins `parts` pairs of one language pair and one entry."""

    shares: list[float]  # one per data.bitext entry: new joined pairs per pair of that entry (0: none)
    parts: list[int] = field(default_factory=lambda: [2, 4])  # [fewest, most] pairs joined, drawn uniformly
    min_words: int = 4  # a part's target side has at least this many words (UI labels do not make a text)
    max_chars: int = 300  # per side; parts are dropped from the end until both sides fit
    weight: float | None = None  # draw weight of the joined pairs (data.bitext_weights); None: their entry's


@dataclass(frozen=True)
class DataConfig:
    # "LANG=GLOB" for text (one sentence per line, a blank line between documents) or "GLOB" for sentence Parquet
    documents: list[str] = field(default_factory=list)
    # "GLOB" of SRC-TGT*.tsv[.gz] (source, target or score, source, target) or mined Parquet; "SRC-TGT=GLOB" to name
    bitext: list[str] = field(default_factory=list)
    # One weight per `bitext` entry (empty: all 1): its pairs are drawn that many times as often as a weight-1
    # entry's, as if repeated, within their language pair and in the language pair's size for language_alpha.
    bitext_weights: list[float] = field(default_factory=list)
    join: JoinConfig | None = None  # long pairs made from short ones (JoinConfig); None: none
    min_score: float | None = None  # scored bitext (mined pairs) below this margin is left out
    heldout: list[str] = field(default_factory=list)  # bitext for the periodic xsim check, never trained on
    heldout_pairs: int = 500  # per language pair
    language_alpha: float = 0.3  # sample language (pair) l in proportion to (n_l / N) ** alpha
    nli: str | None = None  # premise<TAB>hypothesis<TAB>label, for the optional NLI stage


@dataclass(frozen=True)
class CmlmConfig:
    batch_size: int = 64  # sentence pairs (s1, s2)
    mask_rate: float = 80 / 256  # BERT-style masking of s2 at the paper's higher rate
    swap_rate: float = 0.5  # s1 and s2 change places this often


@dataclass(frozen=True)
class BrConfig:
    batch_size: int = 128  # translation pairs; the other pairs of the batch are the negatives
    margin: float = 0.3  # additive margin subtracted from the true pair's cosine
    scale: float = 20.0  # on the cosine, before the softmax
    learn_scale: bool = False
    alpha: float = 0.2  # weight of the BR loss when trained together with CMLM or distillation
    hard_negatives: int = 0  # per pair, the nearest non-translations from a refreshed index (seed 004)
    hard_negative_pool: int = 20000  # pairs whose targets are searched for hard negatives
    hard_negative_refresh: int = 1000  # steps between refreshes of that index
    # softmax: the additive-margin softmax (METHODS §5). max-hinge: VSE++'s ranker (seed 001's translation ranker),
    # the hinge of the hardest in-batch negative in each direction, with `margin`
    loss: str = "softmax"


@dataclass(frozen=True)
class DistillConfig:
    """Multilingual knowledge distillation (METHODS §9): S(s) ~ T(s) and S(t) ~ T(s) for translation pairs."""

    teacher: str = "use-multilingual"  # any encoder spec load_encoder takes
    cache: str = "data/train/teacher"  # teacher vectors, one folder per teacher (training/teacher.py); a path in
    #                                    a recipe is relative to the recipe, this default to where you run
    teacher_side: str = "target"  # the side the teacher embeds: target (the English pivot of our bitext) | source
    batch_size: int = 64  # translation pairs
    weight: float = 1.0  # of L_distill in the total; BR beside it weighs br.alpha
    # A new output layer is first fitted by ridge regression from the pooled vectors of this many pairs (both
    # sides) to the teacher's: a random one starts at a loss of ~70 whose gradients wreck a pre-trained encoder
    # (BR in-batch accuracy 0.46 -> 0.06 in 30 steps, measured). 0 keeps the random layer.
    init_pairs: int = 4096
    # Monolingual distillation (issue 20): pairs whose source language is listed here (the teacher's own languages,
    # as the bitext files name them) train the source side towards the teacher's vector of that same sentence,
    # S(x) ~ T(x), instead of its English translation's. Needs teacher_side: target.
    monolingual: list[str] = field(default_factory=list)
    # Contrast against a bank (issue 20): each student vector must also pick its own teacher target out of
    # `contrast_bank` teacher vectors of other sentences drawn at random from the cache (InfoNCE at temperature
    # 1 / contrast_scale). The squared error pulls S(x) towards T(e) but never pushes it away from the targets it
    # could be mistaken for, which is what retrieval asks; the bank costs one matrix product, no forward pass.
    # Its loss weighs contrast_weight beside L_distill; 0 leaves it out.
    contrast_weight: float = 0.0
    contrast_bank: int = 4096
    contrast_scale: float = 20.0
    # Hard negatives from the teacher's own space: each pair's target brings its `contrast_hard` nearest cached
    # teacher vectors into the bank (found once, before the first step); the rest of the bank stays random. A bank
    # vector at cosine `contrast_same` or more to a pair's target is taken for the same sentence, not a negative.
    contrast_hard: int = 0
    contrast_same: float = 0.9


@dataclass(frozen=True)
class LensConfig:
    """A contextual lens (seed 001, encoders.lens) trained over the frozen `model.init` instead of the network."""

    kind: str | None = None  # simple | gated-conv; None trains the encoder itself
    output_dim: int = 1024
    gate_dim: int = 256  # gated-conv only
    layers: int = 2  # gated-conv only
    kernel: int = 3  # gated-conv only
    binary_threshold: float = 1.0  # the paper's: binary vectors keep the features above it


@dataclass(frozen=True)
class NliConfig:
    batch_size: int = 32
    labels: list[str] = field(default_factory=lambda: ["entailment", "neutral", "contradiction"])


@dataclass(frozen=True)
class OptimizerConfig:
    name: str = "adamw"  # adamw | lamb
    lr: float = 5e-4
    weight_decay: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-6
    warmup_steps: int = 100  # then linear decay to zero at the stage's last step
    grad_clip: float | None = 1.0
    accumulation: int = 1  # micro-batches per optimiser step


@dataclass(frozen=True)
class StageConfig:
    name: str
    objectives: list[str]
    steps: int
    lr: float | None = None  # overrides optimizer.lr for this stage
    warmup_steps: int | None = None  # overrides optimizer.warmup_steps for this stage


@dataclass(frozen=True)
class RunConfig:
    checkpoint_every: int = 500  # steps
    keep_checkpoints: int = 2
    log_every: int = 20
    eval_every: int = 500  # steps between xsim checks on the held-out pairs; 0 turns them off
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    precision: str = "auto"  # auto: bf16 autocast on GPU and on CPUs with native bf16, else fp32 | bf16 | fp32
    threads: int | None = None  # CPU threads for torch; None keeps torch's default
    save_dtype: str = "float16"  # the exported encoder's weights
    time_limit_minutes: float | None = None  # stop this invocation after so long: checkpoint, export, and let
                                             # --resume finish the schedule (a lent GPU, a job queue's wall clock)


@dataclass(frozen=True)
class TrainConfig:
    output: str
    seed: int = 0
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    cmlm: CmlmConfig = field(default_factory=CmlmConfig)
    br: BrConfig = field(default_factory=BrConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    nli: NliConfig = field(default_factory=NliConfig)
    lens: LensConfig = field(default_factory=LensConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    stages: list[StageConfig] = field(default_factory=list)
    run: RunConfig = field(default_factory=RunConfig)

    def objectives(self) -> set[str]:
        return {objective for stage in self.stages for objective in stage.objectives}

    def total_steps(self) -> int:
        return sum(stage.steps for stage in self.stages)


def load_recipe(path: str | Path, overrides: list[str] = (), checked: bool = True) -> TrainConfig:
    """Read, merge (`base:`), override, resolve paths and check a recipe (`checked=False`: types only, for a
    caller that completes it, e.g. training.loop adding the mined pairs to a recipe that names no bitext)."""
    raw = _read_with_base(Path(path), seen=())
    for override in overrides:
        _set_override(raw, override)
    config = parse(raw, where=str(path))
    if checked:
        check(config)
    return config


def parse(raw: dict, where: str = "recipe") -> TrainConfig:
    if "output" not in raw:
        raise ConfigError(f"{where}: `output` (the run's folder) is required")
    return _build(TrainConfig, raw, where)


# The values each number can take, [low, high] (None: unbounded; a float `low` marked open is excluded): outside
# them a run divided by zero (model.hidden 0), or read its data and trained nothing (br.batch_size 1: no negative),
# or diverged (optimizer.lr below 0), each after minutes of reading data, or never said why.
NUMBER_RANGES = {
    "model.hidden": (1, None), "model.layers": (1, None), "model.heads": (1, None), "model.intermediate": (1, None),
    "model.dropout": (0, 0.99), "model.projection_vectors": (0, None),  # 0: no CMLM head
    "data.heldout_pairs": (1, None), "data.language_alpha": (0, None),
    "cmlm.batch_size": (1, None), "cmlm.swap_rate": (0, 1),
    "br.batch_size": (2, None), "br.scale": ("open", 0), "br.alpha": (0, None), "br.hard_negatives": (0, None),
    "br.hard_negative_pool": (1, None), "br.hard_negative_refresh": (1, None),
    "nli.batch_size": (1, None),
    "optimizer.lr": ("open", 0), "optimizer.weight_decay": (0, None), "optimizer.beta1": (0, 0.9999),
    "optimizer.beta2": (0, 0.99999), "optimizer.eps": ("open", 0), "optimizer.warmup_steps": (0, None),
    "optimizer.grad_clip": ("open", 0),
    "run.checkpoint_every": (0, None), "run.keep_checkpoints": (1, None), "run.log_every": (1, None),
    "run.eval_every": (0, None), "run.threads": (1, None), "run.time_limit_minutes": ("open", 0),
    "lens.output_dim": (1, None), "lens.gate_dim": (1, None), "lens.layers": (1, None), "lens.kernel": (1, None),
}


def _range_problems(config: TrainConfig) -> list[str]:
    problems = []
    for name, (low, high) in NUMBER_RANGES.items():
        section, key = name.split(".")
        value = getattr(getattr(config, section), key)
        if value is None:  # an optional setting left unset
            continue
        if isinstance(value, float) and not math.isfinite(value):  # inf passed "above 0", and diverged at step 2
            problems.append(f"{name} must be a finite number, got {value!r}")
            continue
        if low == "open":
            if not value > high:
                problems.append(f"{name} must be above {high:g}, got {value!r}")
        elif value < low or (high is not None and value > high):
            span = f"from {low:g} to {high:g}" if high is not None else f"{low:g} or more"
            problems.append(f"{name} must be {span}, got {value!r}")
    for i, stage in enumerate(config.stages):
        if stage.lr is not None and not (stage.lr > 0 and math.isfinite(stage.lr)):
            problems.append(f"stages[{i}] ({stage.name}): lr must be above 0, got {stage.lr!r}")
        if stage.warmup_steps is not None and stage.warmup_steps < 0:
            problems.append(f"stages[{i}] ({stage.name}): warmup_steps must be 0 or more, got {stage.warmup_steps!r}")
    return problems


def check(config: TrainConfig) -> None:
    """Value checks that types alone do not express."""
    problems = _range_problems(config)
    if not config.stages:
        problems.append("stages: at least one stage is needed")
    for i, stage in enumerate(config.stages):
        unknown = sorted(set(stage.objectives) - set(OBJECTIVES))
        if unknown or not stage.objectives:
            problems.append(f"stages[{i}] ({stage.name}): objectives must be a non-empty list of "
                            f"{', '.join(OBJECTIVES)}, got {stage.objectives}")
        if stage.steps < 1:
            problems.append(f"stages[{i}] ({stage.name}): steps must be positive")
        if "nli" in stage.objectives and len(stage.objectives) > 1:
            problems.append(f"stages[{i}] ({stage.name}): nli is a stage of its own (it hurts retrieval)")
    model, optimizer = config.model, config.optimizer
    if not str(config.output).strip():  # an empty path wrote checkpoints and the encoder into the working folder
        problems.append("output: a folder to write the run into, not an empty path")
    if isinstance(config.seed, bool) or not isinstance(config.seed, int) or not 0 <= config.seed < 2 ** 32:
        problems.append(f"seed must be a whole number from 0 to 4,294,967,295 (2^32 - 1), got {config.seed!r}")
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", str(config.run.device)):  # `gpu` trained on the CPU, unsaid
        problems.append(f"run.device must be auto, cpu, cuda or cuda:N, got {config.run.device!r}")
    if model.init is None and model.tokenizer is None:
        problems.append("model: give a tokenizer folder for a new model, or init: an encoder checkpoint")
    if model.heads >= 1 and model.hidden % model.heads:
        problems.append(f"model: hidden {model.hidden} is not a multiple of heads {model.heads}")
    if not 3 <= model.max_seq_length:
        problems.append("model.max_seq_length must be at least 3")
    if not 0 < config.cmlm.mask_rate < 1:
        problems.append("cmlm.mask_rate must be between 0 and 1")
    if optimizer.name not in ("adamw", "lamb"):
        problems.append(f"optimizer.name must be adamw or lamb, got {optimizer.name!r}")
    if optimizer.accumulation < 1:
        problems.append("optimizer.accumulation must be at least 1")
    if config.run.precision not in ("auto", "bf16", "fp32"):
        problems.append(f"run.precision must be auto, bf16 or fp32, got {config.run.precision!r}")
    if config.run.save_dtype not in ("float16", "float32"):
        problems.append(f"run.save_dtype must be float16 or float32, got {config.run.save_dtype!r}")
    objectives = config.objectives()
    if "cmlm" in objectives and not config.data.documents:
        problems.append("a stage trains cmlm but data.documents is empty")
    weights = config.data.bitext_weights
    if weights and (len(weights) != len(config.data.bitext) or min(weights) <= 0):
        problems.append(f"data.bitext_weights: one positive weight per data.bitext entry ({len(config.data.bitext)}), "
                        f"got {weights}")
    join = config.data.join
    if join is not None:
        if len(join.shares) != len(config.data.bitext) or min(join.shares, default=0) < 0:
            problems.append(f"data.join.shares: one share >= 0 per data.bitext entry ({len(config.data.bitext)}), "
                            f"got {join.shares}")
        if len(join.parts) != 2 or not 2 <= join.parts[0] <= join.parts[1]:
            problems.append(f"data.join.parts: [fewest, most] pairs joined, at least 2, got {join.parts}")
        if join.weight is not None and join.weight <= 0:
            problems.append(f"data.join.weight must be positive, got {join.weight}")
    if "br" in objectives and not config.data.bitext:
        problems.append("a stage trains br but data.bitext is empty")
    if "distill" in objectives:
        if not config.data.bitext:
            problems.append("a stage trains distill but data.bitext is empty")
        if config.distill.teacher_side not in ("target", "source"):
            problems.append(f"distill.teacher_side must be target or source, got {config.distill.teacher_side!r}")
        if config.distill.monolingual and config.distill.teacher_side != "target":
            problems.append("distill.monolingual needs distill.teacher_side: target (the sources get their own "
                            "teacher vectors)")
        for code in config.distill.monolingual:
            try:
                check_code(code, "distill.monolingual:")
            except ValueError as err:
                problems.append(str(err))
        if config.distill.batch_size < 1 or config.distill.weight <= 0 or config.distill.init_pairs < 0:
            problems.append("distill.batch_size and distill.weight must be positive, distill.init_pairs >= 0")
        distill = config.distill
        if distill.contrast_weight < 0 or distill.contrast_bank < 1 or distill.contrast_scale <= 0:
            problems.append("distill.contrast_weight must be >= 0, distill.contrast_bank and contrast_scale positive")
        if distill.contrast_hard < 0 or not 0 < distill.contrast_same <= 1:
            problems.append("distill.contrast_hard must be >= 0 and distill.contrast_same in (0, 1]")
    if model.stack_to is not None and (model.stack_to < 1 or not model.init):
        problems.append("model.stack_to needs model.init and a positive layer count")
    if model.widen_ffn_to is not None and (model.widen_ffn_to < 1 or not model.init):
        problems.append("model.widen_ffn_to needs model.init and a positive width")
    if model.output_dim is not None and model.output_dim < 1:
        problems.append("model.output_dim must be positive")
    if "nli" in objectives and not config.data.nli:
        problems.append("a stage trains nli but data.nli is not set")
    if config.br.loss not in BR_LOSSES:
        problems.append(f"br.loss must be one of {', '.join(BR_LOSSES)}, got {config.br.loss!r}")
    problems += _lens_problems(config)
    if problems:
        raise ConfigError("invalid recipe:\n  " + "\n  ".join(problems))


def _lens_problems(config: TrainConfig) -> list[str]:
    lens = config.lens
    if lens.kind is None:
        return []
    from encoders.ensemble import is_ensemble
    from encoders.lens import LensError, LensSpec, is_lens

    problems = []
    sizes = {k: v for k, v in dataclasses.asdict(lens).items() if k != "kind"}
    try:  # the check a lens folder gets at load: kind, positive sizes, output_dim a multiple of 8
        LensSpec(lens.kind, input_dim=1, **sizes).check("lens")
    except LensError as err:
        problems.append(str(err))
    if config.objectives() != {"br"}:
        problems.append(f"a lens trains with the translation ranker alone: every stage's objectives must be [br], "
                        f"got {sorted(config.objectives())}")
    init = config.model.init
    if init is None:
        problems.append("lens: model.init must name the frozen encoder's checkpoint folder")
    elif Path(init).name in NO_TOKEN_OUTPUTS or not Path(init).is_dir():
        problems.append(f"lens: model.init {init!r} is not a transformer checkpoint folder; a lens reads token "
                        f"vectors, which the built-in encoders ({', '.join(NO_TOKEN_OUTPUTS)}) do not give")
    elif is_ensemble(init) or is_lens(init):
        problems.append(f"lens: model.init {init!r} is an ensemble or a lens, not a transformer checkpoint: name "
                        "the transformer folder itself")
    return problems


def as_dict(config: TrainConfig) -> dict:
    return dataclasses.asdict(config)


# -- reading ---------------------------------------------------------------------------------------------------

PATH_KEYS = {("model", "tokenizer"), ("model", "init"), ("data", "nli"), ("distill", "cache")}
PATH_LIST_KEYS = {("data", "documents"), ("data", "bitext"), ("data", "heldout")}


def _read_with_base(path: Path, seen: tuple) -> dict:
    if path.resolve() in seen:
        raise ConfigError(f"{path}: `base` chain loops back to itself")
    raw = read_yaml_file(path, "recipe", "configs/train_*.yaml", yaml.safe_load) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    _resolve_paths(raw, path.parent)
    base = raw.pop("base", None)
    if base is None:
        return raw
    return _merge(_read_with_base(path.parent / base, (*seen, path.resolve())), raw)


def _resolve_paths(raw: dict, folder: Path) -> None:
    """Make the recipe's input paths independent of where it is run from (`LANG=path` keeps its label)."""
    for sect, key in PATH_KEYS:
        value = (raw.get(sect) or {}).get(key) if isinstance(raw.get(sect), dict) else None
        if isinstance(value, str):
            raw[sect][key] = str(folder / value)
    for sect, key in PATH_LIST_KEYS:
        values = (raw.get(sect) or {}).get(key) if isinstance(raw.get(sect), dict) else None
        if isinstance(values, list):
            raw[sect][key] = [_resolve_spec(v, folder) if isinstance(v, str) else v for v in values]


def _resolve_spec(spec: str, folder: Path) -> str:
    label, sep, path = spec.rpartition("=")
    return f"{label}{sep}{folder / path}"


def _merge(base: dict, recipe: dict) -> dict:
    merged = dict(base)
    for key, value in recipe.items():
        merged[key] = _merge(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) \
            else value
    return merged


def _set_override(raw: dict, override: str) -> None:
    """`stages.1.steps=500` indexes into the stage list; everything else is miner.config's `a.b=value`."""
    key = override.partition("=")[0].strip()
    parts = key.split(".")
    if len(parts) == 3 and parts[0] == "stages" and parts[1].isdigit():
        stages = raw.get("stages") or []
        index = int(parts[1])
        if index >= len(stages):
            raise ConfigError(f"override {override!r}: the recipe has {len(stages)} stage(s)")
        set_value(stages[index], f"{parts[2]}={override.partition('=')[2]}")
        return
    set_value(raw, override)


def _build(cls, raw, where: str):
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping, got {raw!r}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    values = {name: _convert(hints[name], value, f"{where}: {name}") for name, value in raw.items()}
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in values
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ConfigError(f"{where}: missing key(s) {', '.join(missing)}")
    return cls(**values)


def _convert(hint, value, where: str):
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value or {}, where)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _convert(inner, value, where)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [_convert(args[0], item, f"{where}[{i}]") for i, item in enumerate(value)]
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is float and isinstance(value, str):  # YAML 1.1 reads 5e-4 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            pass
    if hint in (int, float, str, bool) and (not isinstance(value, hint) or (hint is int and isinstance(value, bool))):
        raise ConfigError(f"{where}: expected {hint.__name__}, got {value!r}"
                          + (yaml_bool_hint(value) if hint is str else ""))  # monolingual: [no], Norwegian
    return value
