"""A stage's manifest (`<stage>/_MANIFEST.json`), with the files it names relative to the output folder, so a copied
folder (`cp -a out copy`) reads its own files, never the original's.

    manifests.write(output, "embed", manifest)   # stored: "embeddings/deu_Latn/part-00000-of-00002.npy"
    manifest = manifests.read(output, "embed")   # in memory: the same path joined to `output`

A stored manifest carries `"format": FORMAT`. One without it was written before paths were relative (each path
began with the output folder as then given): it cannot say which folder it describes, so it is outdated and its
stage counts as not finished (pipelines/job.py runs it again, or refuses a run that leaves it out).

The files a manifest names are all that its stage's folders (pipelines/layout.py) should hold: `unlisted` finds the
rest (shards of an earlier run, temporary files of a killed one) for the job to remove from a stage it reuses.
"""

from __future__ import annotations

import copy
import logging
import os

from pipelines import layout, storage

log = logging.getLogger("pipelines.manifests")

FORMAT = 2  # 2: paths relative to the output folder; no format: paths as written, the output folder included
ENTRIES_FILE = "_ENTRIES.json"  # a stage's entries on their way to its manifest (pipelines/job.py)


def _path_slots(manifest: dict):
    """(container, key) of every path a manifest holds: shards (sentences, vectors, the turned float rows beside
    sign codes), bitext files, quantizers."""
    for entry in (manifest.get("languages") or {}).values():
        for shard in entry.get("shards", []):
            yield from ((shard, key) for key in ("path", "embeddings", "rotated") if key in shard)
    for entry in manifest.get("pairs") or []:
        for container in (entry, *entry.get("parts", [])):  # one file, or parts by score range
            yield from ((container, key) for key in ("parquet", "tsv") if key in container)
    quantizers = manifest.get("quantizers") or {}
    yield from ((quantizers, language) for language in quantizers)


def files(manifest: dict) -> list[str]:
    """The files a (resolved) manifest names."""
    return [container[key] for container, key in _path_slots(manifest)]


def is_current(stored: dict) -> bool:
    return stored.get("format") == FORMAT


def relative(path: str, output: str) -> str:
    """`path`, a file under `output`, as the manifest stores it: relative, with `/` between parts."""
    if storage.is_remote(output):
        prefix = output.rstrip("/") + "/"
        inside = path.startswith(prefix)
        name = path[len(prefix):]
    else:
        name = os.path.relpath(path, output).replace(os.sep, "/")
        inside = not os.path.isabs(name) and name != ".." and not name.startswith("../")
    if not inside:
        raise ValueError(f"{path}: a stage's output file outside its output folder {output}")
    return name


def resolved(name: str, output: str, manifest_file: str) -> str:
    """A stored relative path joined to `output`; anything else (absolute, `..`, a URL) is an error naming the
    manifest: the paths it lists are what a rerun keeps, so none may point out of the folder."""
    parts = name.split("/") if isinstance(name, str) else []
    if (not parts or name.startswith("/") or "://" in name or "\\" in name or ":" in parts[0]
            or any(part in ("", ".", "..") for part in parts)):
        raise ValueError(f"{manifest_file}: {name!r} is not a path inside the output folder (damaged or edited "
                         "manifest): run that stage again (--rerun)")
    return storage.join(output, *parts)


def write(output: str, stage: str, manifest: dict) -> dict:
    """Store `manifest` (paths under `output`, as the stage wrote them) as `stage`'s manifest; returns what was
    stored."""
    stored = copy.deepcopy(manifest)
    for container, key in _path_slots(stored):
        container[key] = relative(container[key], output)
    stored["format"] = FORMAT
    storage.write_json(layout.manifest_path(output, stage), stored)
    return stored


def stored(output: str, stage: str) -> dict | None:
    """`stage`'s manifest as stored (None: the stage has not finished in `output`). One that does not read as a
    manifest (cut short, overwritten by hand) is said, naming it, and counts as absent: the stage and those after it
    run again, as where it was deleted, rather than every run, --plan too, stopping on a JSON error naming nothing."""
    path = layout.manifest_path(output, stage)
    if not storage.exists(path):
        return None
    try:
        manifest = storage.read_json(path)
    except ValueError as err:  # JSON cut short, bytes that are not UTF-8
        log.warning("%s: not a readable manifest (%s): the %s stage counts as not finished", path, err, stage)
        return None
    problem = "JSON " + type(manifest).__name__ + ", not an object" if not isinstance(manifest, dict) else \
        shape_problem(manifest)
    if problem:
        log.warning("%s: not a manifest (%s): the %s stage counts as not finished", path, problem, stage)
        return None
    return manifest


def shape_problem(manifest: dict) -> str | None:
    """What keeps `manifest` from being one this project wrote (None: nothing): the parts the job reads, of the
    kinds it reads them as. An object edited by hand (`"pairs": 5`, a shard without its path) otherwise stopped
    --plan and the run on a TypeError or KeyError naming no file."""
    def number(value) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    checks = [
        ("languages", lambda v: isinstance(v, dict) and all(
            isinstance(e, dict) and number(e.get("rows")) and isinstance(e.get("shards", []), list) and all(
                isinstance(shard, dict) and isinstance(shard.get("path"), str) and number(shard.get("rows"))
                for shard in e.get("shards", [])) for e in v.values())),
        ("pairs", lambda v: isinstance(v, list) and all(
            isinstance(e, dict) and isinstance(e.get("pair"), str) and number(e.get("pairs")) and all(
                isinstance(c, dict) and isinstance(c.get("parquet"), str) and isinstance(c.get("tsv"), str)
                for c in (e["parts"] if isinstance(e.get("parts"), list) else [e])) for e in v)),
        ("quantizers", lambda v: isinstance(v, dict) and all(isinstance(q, str) for q in v.values())),
        ("counters", lambda v: isinstance(v, dict)), ("depends", lambda v: isinstance(v, dict)),
        ("seconds", number),
    ]
    bad = [key for key, fits in checks if key in manifest and manifest[key] is not None and not fits(manifest[key])]
    return f"{', '.join(bad)} not as this project writes {'them' if len(bad) > 1 else 'it'}" if bad else None


def resolve(manifest: dict, output: str, stage: str) -> dict:
    """A stored (current) manifest with its paths joined to `output`."""
    resolved_manifest = copy.deepcopy(manifest)
    manifest_file = layout.manifest_path(output, stage)
    for container, key in _path_slots(resolved_manifest):
        container[key] = resolved(container[key], output, manifest_file)
    return resolved_manifest


def read(output: str, stage: str) -> dict:
    """`stage`'s finished manifest in `output`, its paths joined to `output`."""
    manifest = stored(output, stage)
    if manifest is None:
        raise ValueError(f"{layout.manifest_path(output, stage)}: no such manifest: the {stage} stage has not "
                         "finished there")
    if not is_current(manifest):
        raise ValueError(outdated_message(output, stage))
    return resolve(manifest, output, stage)


def outdated_message(output: str, stage: str) -> str:
    return (f"{stage}: its manifest {layout.manifest_path(output, stage)} was written by an older version of "
            "cmlm-miner, whose manifests name files by the folder they were first written in (a copied folder "
            "would read the original's files): run that stage again too (--stages)")


def is_temporary(path: str) -> bool:
    """A file a killed run leaves behind: a write not yet renamed into place, or entries not yet in a manifest."""
    path = path.replace("\\", "/")
    name = path.rsplit("/", 1)[-1]
    # a stage's chunks are removed once the stage finished: a run stopped in between leaves them
    return (storage.TEMPORARY_MARK in name or name == ENTRIES_FILE
            or any(f"/{stage}/chunks/" in path for stage in layout.SAVED_WORK))


def unlisted(output: str, stage: str, manifest: dict) -> list[str]:
    """What `stage`'s folders hold beyond its manifest and the files it names: files, and folders with nothing
    listed under them (a language no longer found), as paths to delete. A link is an entry: removing it removes
    the link; a linked folder that holds listed files is walked, and `linked_part` tells the job not to delete
    through it."""
    keep = {os.path.normpath(p) for p in [*files(manifest), layout.manifest_path(output, stage)]}
    if storage.is_remote(output):
        return sorted(p for folder in layout.stage_folders(output, stage) for p in storage.list_files(folder)
                      if os.path.normpath(p) not in keep)
    ancestors = set()
    for path in keep:
        parent = os.path.dirname(path)
        while parent and parent not in ancestors:
            ancestors.add(parent)
            parent = os.path.dirname(parent) if os.path.dirname(parent) != parent else ""
    found = []
    for folder in layout.stage_folders(output, stage):
        if not os.path.lexists(folder):
            continue
        if os.path.normpath(folder) not in ancestors:
            found.append(folder)
            continue
        # only folders on the way to a listed file are entered (links too), so the walk is as long as the listing
        for root, dirs, names in os.walk(folder, followlinks=True):
            found += [os.path.join(root, n) for n in names if os.path.normpath(os.path.join(root, n)) not in keep]
            for name in list(dirs):
                if os.path.normpath(os.path.join(root, name)) not in ancestors:
                    found.append(os.path.join(root, name))
                    dirs.remove(name)
    return sorted(found)


def linked_part(path: str, output: str) -> str | None:
    """The folder between `output` and `path` that is a symbolic link, if any: what is reached through it lies
    elsewhere, and the job deletes nothing there."""
    if storage.is_remote(output):
        return None
    top, parent = os.path.normpath(output), os.path.dirname(os.path.normpath(path))
    while parent and parent != top and parent != os.path.dirname(parent):
        if os.path.islink(parent):
            return parent
        parent = os.path.dirname(parent)
    return None


def remove(stage: str, paths: list[str], log) -> None:
    """Delete what `unlisted` found in a reused stage's folders: a killed run's temporary files quietly, anything
    else with a warning naming it (links are removed, never followed)."""
    stray = [p for p in paths if not is_temporary(p)]
    for path in stray[:20]:
        log.warning("%s: removed %s: its manifest does not list it (left by an earlier run, or put there by hand)",
                    stage, path)
    if len(stray) > 20:
        log.warning("%s: removed %d more files its manifest does not list", stage, len(stray) - 20)
    if len(paths) > len(stray):
        log.info("%s: removed %d temporary files of a killed run", stage, len(paths) - len(stray))
    for path in paths:
        storage.delete_path(path)
