"""Training close-language experts (langid_experts.py) and choosing each group's weight on the train pool's
held-out sets; the index it writes is what `lid.model: ...+experts` reads.

    python -m pipelines.text.langid_experts_train --train-pool ../shared/data/train \\
        --pairs data/train/heldout-short/tune --config configs/lid_experts.yaml --output models/lid/experts

Groups and settings come from the config (configs/lid_experts.yaml). The main identifier answers every held-out
text once (NTREX's held-out documents and heldout-short/tune, as they are and cut to 2-6 words); then each group's
expert is trained on its languages' lines of the train pool and its weight swept against those answers (module
notes of langid_experts.py for the criterion). Groups below `min_gain`, and those left out because the groups that
gain more fill `max_bytes` (the room the repository gives the set), stay in the index with their figures and
`used: false`, and their model files are removed. A rerun into the same folder trains only the groups that are new
or would be trained on other examples (a changed group, pool or setting); the others keep their models and the
figures measured when they were trained (`--retrain` trains them all again), and a group the budget left out is
weighed against it again on the model size it recorded, trained only if it now fits.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from miner.io import InputFormatError, file_sha256, path_argument
from pipelines.text.identifier import Identifier
from pipelines.text.langid_experts import DEPTH, INDEX_FORMAT, INDEX_NAME, redistribute

log = logging.getLogger("pipelines.text.langid_experts_train")


# -- choosing each group's weight on held-out text --------------------------------------------------------------

@dataclass
class HeldOut:
    """The main identifier's answers on the held-out sets, kept so that every group and weight is scored against
    the same texts: per set, the texts, their gold languages and the main answers."""

    texts: dict[str, list[str]] = field(default_factory=dict)
    gold: dict[str, list[str]] = field(default_factory=dict)
    answers: dict[str, list[list[tuple[str, float]]]] = field(default_factory=dict)
    points: dict[str, float] = field(default_factory=dict)   # the main answers' language-points, every sweep's base

    @classmethod
    def of(cls, main: Identifier, sets: dict[str, dict[str, list[str]]]) -> HeldOut:
        held = cls()
        for name, by_language in sets.items():
            pairs = [(code, text) for code, texts in by_language.items() if main.covers(code) for text in texts]
            held.gold[name] = [code for code, _ in pairs]
            held.texts[name] = [text for _, text in pairs]
            held.answers[name] = main.predict(held.texts[name], k=DEPTH)
            held.points[name] = language_points(held.gold[name], [answer[0][0] for answer in held.answers[name]])
        return held


def language_points(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """Per-language accuracy (%) summed over languages: its change is what a group adds to the mean, times the
    number of languages."""
    right, total = Counter(), Counter(gold)
    for g, p in zip(gold, predicted):
        right[g] += g == p
    return 100.0 * sum(right[code] / n for code, n in total.items())


Opinions = dict  # set name -> {row: (group's languages, weight, the expert's answer)}


def opinions_of(held: HeldOut, languages: Sequence[str], expert: Identifier, weight: float = 1.0) -> Opinions:
    """The expert's answer for every held-out text the main identifier answers within the group."""
    opinions: Opinions = {}
    for name, answers in held.answers.items():
        rows = [i for i, answer in enumerate(answers) if answer[0][0] in languages]
        answered = expert.predict([held.texts[name][i] for i in rows], k=len(languages)) if rows else []
        opinions[name] = {i: (languages, weight, answer) for i, answer in zip(rows, answered)}
    return opinions


def gains_of(held: HeldOut, opinions: Opinions, weight: float | None = None, ask_below: float = 1.0) -> dict:
    """Language-points gained on each held-out set and their mean over sets, against the main identifier alone,
    with every opinion at `weight` (or its own), where the main answer's probability is below `ask_below`."""
    gains = {}
    for name, answers in held.answers.items():
        after = [answer[0][0] for answer in answers]
        for i, (languages, own_weight, opinion) in opinions[name].items():
            if answers[i][0][1] < ask_below:
                after[i] = redistribute(answers[i], opinion, languages, own_weight if weight is None else weight)[0][0]
        gains[name] = round(language_points(held.gold[name], after) - held.points[name], 2)
    gains["mean"] = round(sum(gains.values()) / max(1, len(held.answers)), 2)
    return gains


def weight_sweep(held: HeldOut, opinions: Opinions, weights: Sequence[float]) -> dict:
    """gains_of at each weight: only texts the main identifier answers within the group can change."""
    return {w: gains_of(held, opinions, w) for w in weights}


def at_weight(opinions: Opinions, weight: float) -> Opinions:
    """The same opinions, to be weighed at `weight` (a group's chosen one)."""
    return {name: {i: (languages, weight, answer) for i, (languages, _, answer) in rows.items()}
            for name, rows in opinions.items()}


ASK_TOLERANCE = 1.0   # language-points: what retraining the same experts moves a group's gain by (fastText threads)


def ask_below_sweep(held: HeldOut, opinions: Opinions, thresholds: Sequence[float]) -> tuple[float, dict]:
    """The gains and the texts sent to experts at each threshold (1: every text), and the one chosen."""
    report = {}
    for t in sorted(set(thresholds) | {1.0}):
        asked = sum(held.answers[name][i][0][1] < t for name in opinions for i in opinions[name])
        report[t] = {**gains_of(held, opinions, ask_below=t), "asked": asked}
    return choose_ask_below(report), report


def choose_ask_below(report: dict, tolerance: float = ASK_TOLERANCE) -> float:
    """The lowest threshold (fewest texts sent to experts) whose mean gain is within `tolerance` of asking for
    every text."""
    every = report[1.0]["mean"]
    return min(t for t in report if report[t]["mean"] >= every - tolerance)


def choose_weight(gains: dict, min_gain: float) -> tuple[float, str]:
    """The weight of the largest mean gain (the smaller weight on a tie), or 0 with the reason it is left out."""
    best = max(gains, key=lambda w: (gains[w]["mean"], -w))
    if gains[best]["mean"] < min_gain:
        return 0.0, f"best mean gain {gains[best]['mean']:+.2f} language-points at weight {best} (< {min_gain})"
    return best, f"mean gain {gains[best]['mean']:+.2f} language-points at weight {best}"


def chosen_gain(entry: dict) -> float:
    """A used group's mean gain at the weight it was given."""
    return entry["gains"][str(entry["weight"])]["mean"]


def over_budget(entries: Sequence[dict], max_bytes: int | None) -> set[int]:
    """Positions of the used groups left out so that the kept models fit in `max_bytes`: groups are kept in order of
    their mean gain, largest first, each one that still fits (None: no budget). The repository carries every model,
    so the room goes to the groups that gain the most, not to every group above `min_gain`."""
    if max_bytes is None:
        return set()
    used = sorted((i for i, entry in enumerate(entries) if entry["used"]),
                  key=lambda i: (-chosen_gain(entries[i]), i))
    over, taken = set(), 0
    for i in used:
        if taken + entries[i]["model_bytes"] <= max_bytes:
            taken += entries[i]["model_bytes"]
        else:
            over.add(i)
    return over


def left_out(entry: dict, reason: str) -> dict:
    """An index entry whose group is not used (its model file removed)."""
    return {**entry, "used": False, "weight": 0.0, "reason": reason, "model": None, "model_sha256": None,
            "model_bytes": 0}


def leave_out_over_budget(entries: list[dict], kept_opinions: dict[int, Opinions], max_bytes: int | None) -> set[str]:
    """The groups over the byte budget (over_budget) left out in `entries` and their opinions dropped from
    `kept_opinions`; returns their model files."""
    over = over_budget(entries, max_bytes)
    dropped = {entries[i]["model"] for i in over}
    for i in sorted(over):
        log.info("group %s: left out, the groups with larger gains fill max_bytes", "/".join(entries[i]["languages"]))
        entries[i] = left_out_by_budget(entries[i], max_bytes)
        del kept_opinions[i]
    return dropped


def left_out_by_budget(entry: dict, max_bytes: int) -> dict:
    """A used group (or one waiting for room) left out for the byte budget, keeping in `budget` the weight it
    gained at and its model's size, so that a rerun weighs it against the budget again without training it."""
    gain = chosen_gain(entry)
    reason = (f"mean gain {gain:+.2f} language-points at weight {entry['weight']}, but the groups with larger gains "
              f"fill max_bytes ({max_bytes:,})")
    return {**left_out(entry, reason), "budget": {"weight": entry["weight"], "model_bytes": entry["model_bytes"]}}


def waiting_for_room(entry: dict, weight: float) -> dict:
    """An earlier index's group that the budget left out at this weight, standing as used with its recorded model
    size while the budget is decided again (train_experts): left out again without training, or trained if it fits."""
    return {**entry, "used": True, "weight": weight, "model_bytes": entry["budget"]["model_bytes"], "waiting": True}


def index_entry(languages: Sequence[str], model_file: Path, weight: float, reason: str, gains: dict,
                examples: dict[str, int]) -> dict:
    return {"languages": list(languages), "model": model_file.name, "model_sha256": file_sha256(model_file),
            "model_bytes": model_file.stat().st_size, "used": weight > 0, "weight": weight,
            "reason": reason, "examples": examples,
            "gains": {str(w): g for w, g in gains.items()}}


@dataclass(frozen=True)
class ExpertSettings:
    """fastText settings of every expert: word bigrams and more buckets than the main model (few languages,
    all their words), a small vector, product-quantised."""

    dim: int = 16
    epoch: int = 10
    lr: float = 0.5
    minn: int = 2
    maxn: int = 5
    word_ngrams: int = 2
    min_count: int = 1
    bucket: int = 200_000
    cap: int = 40_000          # lines per language at most, as the main model
    balance_to: int = 20_000   # smaller languages repeated towards this many lines ...
    max_repeat: int = 4        # ... at most this many times over
    cutoff: int = 50_000       # rows kept by quantisation
    fragments: float = 0.0     # this share of each language's lines is added again cut to its first 2-6 words
    seed: int = 1

    def as_dict(self) -> dict:
        return asdict(self)


# -- training ---------------------------------------------------------------------------------------------------

def group_examples(pool, languages: Sequence[str], settings: ExpertSettings):
    """(language, line) examples of one group: each language capped, smaller ones repeated towards `balance_to`
    (a group's languages weigh about alike, as in FLORES or a close pair's share of a crawl), shuffled."""
    import random

    from pipelines.text.langid_data import cut_words

    rng = random.Random(settings.seed)
    examples = []
    for code in languages:
        lines = list(pool.lines.get(code, {}))
        if not lines:
            raise ValueError(f"expert group {'/'.join(languages)}: the train pool has no text in {code}")
        if len(lines) > settings.cap:
            lines = rng.sample(lines, settings.cap)
        repeat = min(settings.max_repeat, max(1, settings.balance_to // len(lines)))
        examples.extend((code, line) for line in lines * repeat)
        if settings.fragments > 0:  # no draws otherwise: the same training file as before the option existed
            examples.extend((code, cut_words(line, code, rng)) for line in lines if rng.random() < settings.fragments)
    rng.shuffle(examples)
    return examples


def train_group(pool, languages: Sequence[str], settings: ExpertSettings, normalization, output: Path) -> dict:
    """One expert, quantised, written with its sidecar (so LanguageIdentifier.load reads its normalisation);
    returns the examples per language."""
    import tempfile

    from miner.io import write_json
    from pipelines.text import langid_data as data
    from pipelines.text.langid import SIDECAR_FORMAT, sidecar_path

    fasttext = data.fasttext_module()
    with tempfile.TemporaryDirectory(prefix="cmlm-lid-expert-") as folder:
        training_file = Path(folder) / "train.txt"
        examples = data.write_training_file(training_file, group_examples(pool, languages, settings), normalization)
        model = fasttext.train_supervised(
            input=str(training_file), dim=settings.dim, epoch=settings.epoch, lr=settings.lr, minn=settings.minn,
            maxn=settings.maxn, wordNgrams=settings.word_ngrams, minCount=settings.min_count,
            bucket=settings.bucket, thread=data.MIN_THREADS, seed=settings.seed, verbose=0)
        model.quantize(input=str(training_file), qnorm=True, cutoff=settings.cutoff, thread=data.MIN_THREADS,
                       verbose=0)
    data.save_model(model, output)
    write_json(sidecar_path(output), {
        "format": SIDECAR_FORMAT, "normalization": asdict(normalization), "languages": len(examples),
        "examples": examples, "settings": settings.as_dict(), "model_sha256": file_sha256(output),
        "model_bytes": output.stat().st_size, "quantized": True})
    return examples


def trained_group(pool, languages: Sequence[str], settings: ExpertSettings, normalization, output: Path,
                  held: HeldOut, weights: Sequence[float], min_gain: float) -> tuple[dict, Opinions]:
    """One group trained and weighed on `held`: its index entry and its opinions at the weight chosen (a group
    below `min_gain` left out, its model removed)."""
    from pipelines.text.langid import LanguageIdentifier, sidecar_path

    model_file = output / f"{'-'.join(code.split('_')[0] for code in languages)}.ftz"
    examples = train_group(pool, languages, settings, normalization, model_file)
    opinions = opinions_of(held, tuple(languages), LanguageIdentifier.load(model_file))
    gains = weight_sweep(held, opinions, weights)
    weight, reason = choose_weight(gains, min_gain)
    entry = index_entry(languages, model_file, weight, reason, gains, examples)
    if not weight:
        model_file.unlink()
        sidecar_path(model_file).unlink()
        return left_out(entry, reason), opinions
    return entry, at_weight(opinions, weight)


def expected_examples(pool, languages: Sequence[str], settings: ExpertSettings, normalization) -> dict[str, int]:
    """The examples per language that training this group now would write (train_group's count), without training."""
    from pipelines.text.langid_data import training_text

    counts = Counter(code for code, line in group_examples(pool, languages, settings)
                     if training_text(line, normalization) is not None)
    return dict(sorted(counts.items()))


def reusable_entries(index_path: Path, main: Identifier, settings: ExpertSettings) -> dict[tuple, dict]:
    """The earlier index's groups by their languages, where it was built over the same main identifier with the
    same settings (none otherwise, or when there is no readable index)."""
    index = earlier_index(index_path)
    if index is None or index.get("main") != main.path or index.get("settings") != settings.as_dict():
        return {}
    return {tuple(entry["languages"]): entry for entry in index["groups"]
            if isinstance(entry, dict) and isinstance(entry.get("languages"), list)}


def reused(entry: dict | None, pool, languages: Sequence[str], settings: ExpertSettings, normalization,
           output: Path) -> bool:
    """Whether an earlier index's group stands as it is: the same examples would be written now, and a used
    group's model is in the folder as the index recorded it (a group left out needs no model)."""
    if entry is None or entry.get("examples") != expected_examples(pool, languages, settings, normalization):
        return False
    if not entry.get("used"):
        return True
    model_file = output / str(entry.get("model"))
    return model_file.is_file() and file_sha256(model_file) == entry.get("model_sha256")


def redecided(entry: dict, weights: Sequence[float], min_gain: float) -> dict | None:
    """An earlier index's group decided again by today's rule (`weights`, `min_gain`) on the gains it recorded:
    as it was, or now left out (its model, which the new index no longer names, is removed with the other stale
    ones when the index is written), or waiting for room where the budget left it out at the weight chosen again
    (waiting_for_room), or None where it must be trained again (a weight it was not measured at, or now kept where
    its model was removed)."""
    recorded = entry.get("gains") or {}
    if any(str(w) not in recorded for w in weights):
        return None
    weight, reason = choose_weight({w: recorded[str(w)] for w in weights}, min_gain)
    if weight == entry["weight"] or (weight and entry["used"]):
        return {**entry, "weight": weight, "reason": reason}
    if weight and (entry.get("budget") or {}).get("weight") == weight:
        return waiting_for_room(entry, weight)
    if weight:
        return None
    return left_out(entry, reason)


def train_experts(pool, groups: Sequence[Sequence[str]], main: Identifier, held: HeldOut, output: Path,
                  settings: ExpertSettings, weights: Sequence[float], min_gain: float, normalization,
                  thresholds: Sequence[float] = (), retrain: bool = False, max_bytes: int | None = None) -> dict:
    """Every group trained, its weight chosen on `held` (module notes), the groups that gain most kept within
    `max_bytes` (over_budget), then the probability above which the main answer is not sent to experts
    (ask_below_sweep); the index written last (atomically); models of groups left out, and those an earlier index
    in the folder named that this one does not, are removed, so the folder holds what the index uses. A group the
    folder's index already holds with the same main identifier, settings and examples keeps its model and figures
    (fastText's threads make a retrained expert differ a little each time, so adding a group leaves the others as
    they were measured), unless `retrain`; one the budget left out is weighed against the budget again on the size
    and gains it recorded, and trained only if it now fits."""
    from miner.io import write_json
    from pipelines.text.langid import LanguageIdentifier, sidecar_path

    output.mkdir(parents=True, exist_ok=True)
    earlier_entries = {} if retrain else reusable_entries(output / INDEX_NAME, main, settings)
    entries, kept_opinions = [], {}   # the used groups' opinions at their weight, by position in `entries`

    def train(position: int, languages: Sequence[str], number: int) -> dict:
        entry, opinions = trained_group(pool, languages, settings, normalization, output, held, weights, min_gain)
        if entry["used"]:
            kept_opinions[position] = opinions
        log.info("group %d/%d %s: %s", number, len(groups), "/".join(languages), entry["reason"])
        return entry

    for number, languages in enumerate(groups, start=1):
        entry = earlier_entries.get(tuple(languages))
        entry = (redecided(entry, weights, min_gain)
                 if reused(entry, pool, languages, settings, normalization, output) else None)
        if entry is None:
            entries.append(train(len(entries), languages, number))
            continue
        if entry["used"] and not entry.get("waiting"):
            model = LanguageIdentifier.load(output / entry["model"])
            kept_opinions[len(entries)] = opinions_of(held, tuple(languages), model, entry["weight"])
        log.info("group %d/%d %s: kept from the earlier index (%s)", number, len(groups), "/".join(languages),
                 entry["reason"])
        entries.append(entry)
    over = over_budget(entries, max_bytes)   # a group waiting for room is trained only where it would be kept
    for i, (entry, languages) in enumerate(zip(entries, groups)):
        if entry.get("waiting") and i in over:
            log.info("group %s: left out again for max_bytes, not trained", "/".join(languages))
            entries[i] = left_out_by_budget({key: v for key, v in entry.items() if key != "waiting"}, max_bytes)
        elif entry.get("waiting"):
            entries[i] = train(i, languages, i + 1)
    dropped = leave_out_over_budget(entries, kept_opinions, max_bytes)   # removed once the index no longer names them
    used = {name: {row: opinion for opinions in kept_opinions.values() for row, opinion in opinions[name].items()}
            for name in held.answers}
    ask_below, asked = ask_below_sweep(held, used, thresholds)
    log.info("experts asked below %s: %s", ask_below, asked[ask_below])
    index = {"format": INDEX_FORMAT, "main": main.path, "settings": settings.as_dict(),
             "weights_tried": list(weights), "min_gain": min_gain, "max_bytes": max_bytes, "ask_below": ask_below,
             "ask_below_sweep": {str(t): report for t, report in asked.items()},
             "chosen_on": "the train pool's held-out sets: " + ", ".join(held.answers),
             "groups": entries}
    earlier = previous_models(output / INDEX_NAME)
    write_json(output / INDEX_NAME, index)
    for name in (earlier | dropped) - {entry["model"] for entry in entries}:   # the folder holds the index's models
        for stale in (output / name, sidecar_path(output / name)):
            stale.unlink(missing_ok=True)
    return index


def earlier_index(index_path: Path) -> dict | None:
    """The index an earlier run left in the folder (None when there is none or the file is not an index)."""
    from pipelines.text.langid_experts import read_index

    if not index_path.is_file():
        return None
    try:
        return read_index(index_path)
    except InputFormatError:
        return None


def previous_models(index_path: Path) -> set[str]:
    """The model files an earlier index in the folder named (none when there is none or it is not an index)."""
    index = earlier_index(index_path)
    return set() if index is None else {
        entry["model"] for entry in index["groups"]
        if isinstance(entry, dict) and isinstance(entry.get("model"), str) and "/" not in entry["model"]}


def _numbers(path: Path, key: str, values) -> list[float]:
    """A list of numbers from the config, an error naming the file and key where one is not a number."""
    if not isinstance(values, (list, tuple)) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"{path}: {key} must be numbers, not {values!r}")
    return [float(v) for v in values]


def read_config(path: Path) -> dict:
    """configs/lid_experts.yaml: `main`, `groups` (lists of lang_Script codes), `weights`, `min_gain`, `max_bytes`,
    `ask_below`, `settings`."""
    from miner.config import load_config
    from miner.languages import check_code, is_language_name

    config = load_config(path)
    unknown = set(config) - {"main", "groups", "weights", "min_gain", "max_bytes", "ask_below", "settings"}
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {sorted(unknown)}")
    groups = config.get("groups")
    if not isinstance(groups, list) or not groups:
        raise ValueError(f"{path}: 'groups' must be a list of language lists")
    first_group: dict[str, int] = {}   # a language in two groups could not be loaded (ExpertIdentifier)
    for i, group in enumerate(groups, start=1):
        if not isinstance(group, list) or len(group) < 2:
            raise ValueError(f"{path}: group {i} must list two languages or more, not {group!r}")
        for code in group:
            check_code(code, f"{path}: group {i}:")
            if not is_language_name(code):  # found once the pool was read, or after an expert was trained
                raise ValueError(f"{path}: group {i}: {code!r} names no registered language (ISO 639-3 code and "
                                 "ISO 15924 script, as deu_Latn)")
            if first_group.setdefault(code, i) != i:
                raise ValueError(f"{path}: {code} is in group {first_group[code]} and group {i}: one group each")
    weights = _numbers(path, "weights", config.get("weights") or (0.25, 0.5, 0.75, 1.0))
    if not all(0.0 < w <= 1.0 for w in weights):
        raise ValueError(f"{path}: weights must lie in (0, 1], not {weights}")
    thresholds = _numbers(path, "ask_below", config.get("ask_below") or (1.0,))
    if not all(0.0 < t <= 1.0 for t in thresholds):
        raise ValueError(f"{path}: ask_below thresholds must lie in (0, 1], not {thresholds}")
    max_bytes = config.get("max_bytes")
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0):
        raise ValueError(f"{path}: max_bytes must be a positive whole number of bytes, not {max_bytes!r}")
    fields = set(ExpertSettings.__dataclass_fields__)
    settings = dict(config.get("settings") or {})
    if set(settings) - fields:
        raise ValueError(f"{path}: unknown setting(s) {sorted(set(settings) - fields)}; known: {sorted(fields)}")
    for name, value in settings.items():  # 0 buckets ended fastText with SIGFPE, a cap of 0 divided by zero
        least = 0 if name in ("fragments", "seed", "min_count") else 1
        kind = float if name in ("lr", "fragments") else int
        if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int) or value < least \
                or (name == "lr" and not 0 < value < float("inf")):
            raise ValueError(f"{path}: settings.{name} must be a {'number' if kind is float else 'whole number'} "
                             f"{least} or more, not {value!r}")
    (min_gain,) = _numbers(path, "min_gain", [config.get("min_gain", 2.0)])
    return {"main": str(config.get("main") or "combined"), "groups": [tuple(g) for g in groups],
            "weights": weights, "min_gain": min_gain, "max_bytes": max_bytes,
            "ask_below": thresholds,
            "settings": ExpertSettings(**settings)}


def train_experts_command(args) -> dict:
    """Read the config and the train pool, answer the held-out sets with the main identifier once, then train and
    weigh every group (train_experts)."""
    from pipelines.text.langid import OURS, load_identifier
    from pipelines.text.langid_data import read_pool
    from pipelines.text.langid_eval import cut_set, news_heldout_sets, read_pairs

    config = read_config(args.config)
    main = load_identifier(config["main"])
    sets = dict(news_heldout_sets(args.train_pool))
    if args.pairs:
        pairs = read_pairs(args.pairs)
        sets.update({"short pairs": pairs, "short pairs cut": cut_set(pairs)})
    log.info("the main identifier (%s) on %d held-out sets", main.path, len(sets))
    held = HeldOut.of(main, sets)
    pool = read_pool(args.train_pool)
    index = train_experts(pool, config["groups"], main, held, args.output, config["settings"], config["weights"],
                          config["min_gain"], OURS, config["ask_below"], retrain=args.retrain,
                          max_bytes=config["max_bytes"])
    return {"groups": len(index["groups"]), "used": sum(g["used"] for g in index["groups"]),
            "bytes": sum(g["model_bytes"] for g in index["groups"])}


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    parser = argparse.ArgumentParser(prog="python -m pipelines.text.langid_experts_train",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="also log debug lines")
    parser.add_argument("--train-pool", type=path_argument, required=True,
                        help="e.g. ../shared/data/train (never dev/)")
    parser.add_argument("--pairs", type=path_argument,
                        help="held-out short pairs to choose on (data/train/heldout-short/tune)")
    parser.add_argument("--config", type=path_argument, default=Path("configs/lid_experts.yaml"),
                        help="the experts' groups and settings (default configs/lid_experts.yaml)")
    parser.add_argument("--output", type=path_argument, default=Path("models/lid/experts"),
                        help="default models/lid/experts")
    parser.add_argument("--retrain", action="store_true",
                        help="train every group again, even those the output folder's index already holds with the "
                             "same main identifier, settings and examples (kept as they are otherwise)")
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    return exit_status(lambda: print(json.dumps(train_experts_command(args))))


if __name__ == "__main__":
    raise SystemExit(main())
