"""What each stage's output depends on, recorded in its manifest so a rerun can tell whether the output still holds.

    depends = stage_dependencies("embed", settings)      # {"input files": [...], "encoder": {...}, "embed": {...}}
    changed = changed_keys(manifest.get("depends"), depends)
    change_lines(manifest.get("depends"), depends)       # ["embed.batch_size: 64 -> 128", ...]: what a user reads

A stage depends on everything an earlier stage depends on, plus its own settings and models:
- extract: the input files (path, size, modification time or object generation time), the settings sections that
  shape sentences (languages, read, extract, lid, split, filters, shards), the LID model file and the versions of
  the libraries that decide the text (the extractor's, fastText's): an upgrade can change the sentences;
- embed: the encoder (a local folder's path absolute and normalised, however it was spelled; a built-in's name
  and package version; a folder's files with their sizes and times, but its model card and threshold offsets, and
  an ensemble's members too; a cloud path as given), `encoder_options`, `embed` and the binary code it writes;
- pairs: the pairing (`languages`, `pairs`, `pivot`) and `mining`, `knn`, `pair_filter`, `bitext`, and the
  threshold offsets' values (an encoder folder's thresholds.json is read for them, and left out of the encoder's
  files), and the mining settings with their defaults filled in (a default that changes is a setting that changes).
An extract output made for more languages (`languages`) serves a run that wants fewer: a language's sentences and
vectors do not depend on the others. Sizes and times, not contents, identify files: reading every crawl file again
to hash it would cost as much as the stage itself. A file rewritten with the same size within the same second is
not noticed: `--rerun` is for that.
"""

from __future__ import annotations

import functools
import json
import os
from importlib.metadata import PackageNotFoundError, version

from apache_beam.io.filesystems import FileSystems

from encoders import USE_MULTILINGUAL
from encoders.ensemble import is_ensemble, read_ensemble
from encoders.lens import is_lens, read_lens
from encoders.use_multilingual import PACKAGE as USE_PACKAGE
from miner.io import folder_files
from miner.thresholds import FILE as THRESHOLDS_FILE
from pipelines import storage
from pipelines.options import STAGES
from pipelines.settings import binary_code_written, mining_config, threshold_offsets

SECTIONS = {
    "extract": ("input", "languages", "read", "extract", "lid", "split", "filters", "shards"),
    "embed": ("encoder", "encoder_options", "embed"),
    "pairs": ("languages", "pairs", "pivot", "mining", "knn", "pair_filter", "bitext"),
}


def stage_dependencies(stage: str, settings: dict) -> dict:
    """Everything `stage`'s output depends on, earlier stages' dependencies included, as JSON-ready values."""
    return dependencies_by_stage(settings, stage)[stage]


def dependencies_by_stage(settings: dict, last: str = STAGES[-1]) -> dict[str, dict]:
    """stage_dependencies of every stage up to `last`, each stage's own part read once (the input files are
    listed once, not once a stage: a crawl's listing is a bucket's)."""
    depends: dict = {}
    by_stage = {}
    for name in STAGES[:STAGES.index(last) + 1]:
        depends = {**depends, **_own_dependencies(name, settings)}
        by_stage[name] = depends
    return by_stage


def _own_dependencies(name: str, settings: dict) -> dict:
    """What stage `name` adds to its earlier stages' dependencies."""
    depends = {f"{name}.{key}": settings.get(key) for key in SECTIONS[name]}
    if name == "extract":
        depends["input files"] = input_files(settings["input"]) if settings.get("input") else None
        lid_model = (settings.get("lid") or {}).get("model")
        depends["LID model"] = lid_files(lid_model) if lid_model else None
        depends["extract libraries"] = extract_libraries(settings.get("extract") or {})
    if name == "embed":
        depends["embed.encoder"] = encoder_setting(settings.get("encoder"))
        depends["encoder files"] = encoder_identity(settings.get("encoder"))
        # codes written another way (before sign codes were centred per language, say) are stale even when
        # no setting names the difference
        depends["binary code"] = binary_code_written(settings)
    if name == "pairs":  # the values, wherever they are read from (an encoder's file is not part of its vectors)
        depends["threshold offsets"] = threshold_offsets(settings)
        # with the defaults filled in: a release that changes a default mines again what it would mine otherwise
        depends[RESOLVED] = mining_config(settings).describe()
    return depends


NOT_RECORDED = "(not recorded)"
RESOLVED = "mining, resolved"


def changed_keys(recorded: dict | None, current: dict) -> list[str]:
    """The dependencies that differ; NOT_RECORDED alone when the manifest records none (an output written before
    manifests recorded them, or by other means)."""
    if recorded is None:
        return [NOT_RECORDED]
    return sorted(key for key in set(recorded) | set(current) if not _holds(key, recorded.get(key), current.get(key)))


def _holds(key: str, recorded, current) -> bool:
    """Whether an output made with `recorded` for this dependency holds for `current`: the same value, or for the
    extract stage's `languages`, a set that covers the one wanted now (empty: every language). A language's
    sentences do not depend on which others are kept (dedup and shards are per language), nor its vectors, so an
    output made for more languages serves fewer; the pairs stage's own `languages` must match."""
    if key == "extract.languages" and recorded != current:
        return not recorded or bool(current) and set(current) <= set(recorded)
    if key == "embed.encoder":  # an output recorded with another spelling of the same folder holds
        return encoder_setting(recorded) == encoder_setting(current)
    if key == "pairs.languages" and isinstance(recorded, list) and isinstance(current, list):
        return sorted(set(recorded)) == sorted(set(current))  # the pairs are made of the sorted set
    defaults = section_defaults().get(key)
    if defaults is not None and all(isinstance(v, dict | None) for v in (recorded, current)):
        return _not_default(recorded, defaults) == _not_default(current, defaults)
    return recorded == current


def _not_default(values: dict | None, defaults: dict) -> dict:
    return {k: v for k, v in (values or {}).items() if k not in defaults or v != defaults[k]}


@functools.cache
def section_defaults() -> dict[str, dict]:
    """The defaults of the sections whose code defines them, by dependency key: a value spelled out as its default
    is no change (a config that writes its defaults out does not pay for the stages again)."""
    import dataclasses

    from miner.index import KnnConfig
    from miner.mining import MiningConfig
    from miner.pair_filters import PairFilterSettings
    from pipelines.settings import BITEXT_DEFAULTS, EMBED_DEFAULTS
    from pipelines.text.extract import ExtractSettings
    from pipelines.text.sentences import MAX_CHARS, WINDOW_CHARS
    from pipelines.text.warc import ReadLimits

    def of(cls) -> dict:
        return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}

    return {"extract.read": of(ReadLimits), "extract.extract": of(ExtractSettings),
            "extract.split": {"method": "auto", "window_chars": WINDOW_CHARS, "max_chars": MAX_CHARS},
            "embed.embed": EMBED_DEFAULTS, "embed.encoder_options": {"device": "auto", "precision": "auto"},
            "pairs.mining": of(MiningConfig), "pairs.knn": of(KnnConfig), "pairs.bitext": BITEXT_DEFAULTS,
            "pairs.pair_filter": of(PairFilterSettings)}


MISSING = object()  # a setting or file one side does not have


def change_lines(recorded: dict | None, current: dict, limit: int = 8) -> list[str]:
    """What changed, a line a setting by the name `--set` takes (`mining.threshold: 1.35 -> 1.4`) and a line a file
    list (`input files: 2 added (a.warc.gz, b.warc.gz); 1 changed (c.warc.gz)`), at most `limit` lines: what a user
    reads before paying for a stage again."""
    if recorded is None:
        return ["its output records no dependencies"]
    lines = []
    for key in changed_keys(recorded, current):
        shown_key = key.split(".", 1)[1] if key.split(".", 1)[0] in SECTIONS else key  # the name --set takes
        old_leaves = dict(_leaves(recorded.get(key, MISSING), shown_key))
        new_leaves = dict(_leaves(current.get(key, MISSING), shown_key))
        for leaf in sorted(set(old_leaves) | set(new_leaves)):
            before, after = old_leaves.get(leaf, MISSING), new_leaves.get(leaf, MISSING)
            if before == after:
                continue
            told = _file_changes(before, after) if _is_file_table(before) or _is_file_table(after) else \
                f"{_shown(before)} -> {_shown(after)}"
            lines.append((leaf, f"{leaf}: {told}"))
    named = {leaf for leaf, _ in lines}
    # a setting given shows twice, as given and resolved: the resolved line alone is a default that changed
    lines = [line for leaf, line in lines if leaf.replace(RESOLVED + ".", "mining.", 1) == leaf
             or leaf.replace(RESOLVED + ".", "mining.", 1) not in named]
    return lines if len(lines) <= limit else [*lines[:limit], f"... and {len(lines) - limit} more"]


def _is_file_table(value) -> bool:
    """[[name, size, time], ...]: input files, a model folder's files (name first, then what identifies it)."""
    return (isinstance(value, list) and bool(value)
            and all(isinstance(row, list) and row and isinstance(row[0], str) for row in value))


def _leaves(value, path: str):
    """(path, leaf value) of a recorded value: dicts by key, lists of dicts or lists by place; a file table is a
    leaf (told apart file by file by _file_changes)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}")
    elif _is_file_table(value):
        yield path, value
    elif isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        for place, item in enumerate(value):
            yield from _leaves(item, f"{path}[{place}]")
    else:
        yield path, value


def _file_changes(old, new) -> str:
    before = {row[0]: row[1:] for row in (old if _is_file_table(old) else [])}
    after = {row[0]: row[1:] for row in (new if _is_file_table(new) else [])}
    kinds = (("added", sorted(after.keys() - before.keys())), ("removed", sorted(before.keys() - after.keys())),
             ("changed", sorted(name for name in before.keys() & after.keys() if before[name] != after[name])))
    short = [name.rstrip("/").rsplit("/", 1)[-1] for _, names in kinds for name in names]
    unique = len(set(short)) == len(short)  # file names alone, unless two paths end alike (a/x and b/x)
    parts = []
    for kind, names in kinds:
        if names:
            shown = ", ".join(name.rstrip("/").rsplit("/", 1)[-1] if unique else name for name in names[:3])
            parts.append(f"{len(names)} {kind} ({shown}{', ...' if len(names) > 3 else ''})")
    return "; ".join(parts) or "recorded differently"


def _shown(value) -> str:
    if value is MISSING:
        return "(none)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def input_files(pattern: str) -> list[list]:
    """[path, size, modification time] of each file matching `pattern` (a glob or one path; none: [])."""
    found = FileSystems.match([pattern])[0].metadata_list
    return sorted([m.path, m.size_in_bytes, m.last_updated_in_seconds] for m in found)


def lid_files(spec: str) -> list[list]:
    """The files behind `lid.model` (a built-in name is its installed file; `A+B`, each), with the spec itself:
    a retrained or replaced model, or another combination, makes the sentences stale."""
    from pipelines.text.langid import lid_parts, model_file

    return [[spec]] + [row for part in lid_parts(spec) for row in input_files(model_file(part))]


def extract_libraries(extract_section: dict) -> dict:
    """{distribution: installed version or None} for the chosen extractor's packages and fastText's."""
    from pipelines.text.extract import EXTRACTOR_PACKAGES, ExtractSettings
    from pipelines.text.langid_data import FULL_FASTTEXT

    extractor = extract_section.get("extractor", ExtractSettings.extractor)
    return {name: _installed_version(name) for name in (*EXTRACTOR_PACKAGES.get(extractor, ()), FULL_FASTTEXT)}


def threshold_raised(recorded: dict | None, current: dict) -> tuple[float, float] | None:
    """(before, now) where the one difference between two records of the pairs stage's dependencies is a higher
    `mining.threshold`: then the finished bitext's rows at or above each pair's new threshold are what the stage
    would mine (docs/pipeline.md, Reruns), and a user can filter them rather than pay for the k-NN join again."""
    if recorded is None or not set(changed_keys(recorded, current)) <= {"pairs.mining", RESOLVED}:
        return None
    for key in ("pairs.mining", RESOLVED):
        before, now = recorded.get(key) or {}, current.get(key) or {}
        if any(before.get(name) != now.get(name) for name in set(before) | set(now) if name != "threshold"):
            return None
    before, now = ((record.get(RESOLVED) or {}).get("threshold") for record in (recorded, current))
    numbers = all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in (before, now))
    return (before, now) if numbers and now > before else None


def libraries_note(manifest: dict, settings: dict) -> str | None:
    """Where the workers that made an extract output ran other versions of its libraries than this machine has (a
    remote runner's workers install their own): which, for the plan and the log. The stage's dependencies record
    this machine's versions, so a rerun notices an upgrade here, not one on the workers; pinning the workers'
    packages makes the two the same."""
    workers = manifest.get("worker_libraries")
    here = extract_libraries(settings.get("extract") or {}) if workers else None
    if workers == here:
        return None
    differ = ", ".join(f"{name} {workers.get(name)} (here {here.get(name)})"
                       for name in sorted(set(workers) | set(here)) if workers.get(name) != here.get(name))
    return (f"its sentences were made by workers with {differ}: pin the workers' packages (--requirements_file, "
            "or an SDK container image) so that a rerun can tell when they change")


def _installed_version(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def encoder_setting(spec):
    """`encoder` as the embed stage records it: a local folder by its absolute path, normalised (models/x/,
    ./models/x and /repo/models/x are one folder, and gave one output's vectors a rerun each), anything else (a
    built-in name, a hub id, a cloud path) as given. The bundled config's folder is resolved to an absolute, normal
    path already (pipelines.settings), so what outputs made with it record stays as it was."""
    if isinstance(spec, str) and spec and not storage.is_remote(spec) and os.path.isdir(spec):
        return os.path.abspath(spec)
    return spec


def encoder_identity(spec: str | None) -> list | dict | None:
    """A built-in encoder by name and package version; a local checkpoint folder by its files' sizes and times; an
    ensemble folder by its files and each member's identity (a member retrained makes the vectors stale too); a
    lens folder by its files and its encoder's."""
    if spec == USE_MULTILINGUAL:
        installed = _installed_version(USE_PACKAGE)
        return {"package": f"{USE_PACKAGE}=={installed}" if installed else None}
    if spec and not storage.is_remote(spec) and os.path.isdir(spec):
        if is_ensemble(spec):
            return {"files": vector_files(spec),
                    "members": [encoder_identity(member) for member in read_ensemble(spec)["members"]]}
        if is_lens(spec):  # a lens reads its frozen encoder's tokens: that encoder retrained makes them stale too
            return {"files": vector_files(spec), "encoder": encoder_identity(str(read_lens(spec).encoder))}
        return vector_files(spec)
    return spec  # char-ngram[:dim], a hub id, a cloud path: the spec is all there is to compare


def vector_files(folder: str) -> list[list]:
    """A model folder's files but those that never make its vectors: its threshold offsets (miner/thresholds.py:
    they move the pairs stage's threshold, and the pairs stage records their values) and its model card and other
    Markdown (a card gains a line with each measurement; that would embed a crawl again)."""
    return [row for row in folder_files(folder) if row[0] != THRESHOLDS_FILE and not row[0].endswith(".md")]
