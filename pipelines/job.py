"""Running stages as Beam jobs: what pipelines.mine and each stage's own command share.

A stage is a class built from the settings and the earlier stages' manifests, called on a pipeline to add its
transforms, with `manifest(entries)` and a static `check(settings)` run before any stage starts. This module knows
no stage: the commands pass theirs in (pipelines.mine all three, pipelines.extract its own ...), so the stages can
have commands of their own without importing pipelines.mine.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass, field

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, SetupOptions

from miner.console import plural
from pipelines import dofn_inspection, layout, long_lived, manifests, storage
from pipelines.dependencies import (
    NOT_RECORDED,
    change_lines,
    changed_keys,
    dependencies_by_stage,
    encoder_identity,
    libraries_note,
    stage_dependencies,
    threshold_raised,
)
from pipelines.options import (
    STAGES,
    MineOptions,
    ViewCachingOptions,
    canonical_runner,
    check_arguments,
    check_local_devices,
    check_local_workers,
    check_runner_installed,
    pipeline_runner,
    runs_locally,
)
from pipelines.output_lock import output_lock
from pipelines.report import format_summary, gold_scores, read_gold, stage_report

log = logging.getLogger("pipelines.mine")


def run_stage(name: str, build, settings: dict, options: PipelineOptions, depends: dict | None = None,
              reads: dict | None = None, resume: bool = False, finished: dict | None = None) -> dict:
    """Run one stage as its own pipeline; returns its manifest (paths joined to the output folder).

    `build(pipeline) -> PCollection of manifest entries`, `build.manifest(entries) -> dict`; the manifest (with
    the stage's counters and `depends`, by default the stage's dependencies on these settings) is written after
    the pipeline succeeded, so its existence means the stage is complete. The stage's folders were checked first
    (`prepare_output`): nothing is deleted through a link. With `resume`, a stage that can (`build.resume()`)
    keeps what a stopped run of it on the same dependencies and earlier outputs (`reads`) finished. With `finished`
    (the stage's own finished output, on the same earlier outputs), a stage whose output can be made from it
    (`build.from_finished(finished, depends)`: the pairs stage at a higher threshold) keeps the files it reads."""
    output = settings["output"]
    depends = depends if depends is not None else stage_dependencies(name, settings)
    attempt = attempt_record(depends, reads or {})
    kept = build.from_finished(finished, depends) if finished and hasattr(build, "from_finished") else None
    if kept is None and resume and hasattr(build, "resume") and stopped_attempt(output, name, attempt):
        kept = build.resume()
    clear_stage_folders(output, name, kept)
    storage.write_json(layout.attempt_path(output, name), attempt)
    started = time.perf_counter()
    log.info("%s: starting", name)
    options = ViewCachingOptions.of(options)
    dofn_inspection.install()  # each DoFn inspected once, not seven times: a third of a small stage's cost
    pipeline = beam.Pipeline(runner=pipeline_runner(options), options=options)
    entries_file = storage.join(layout.stage_dir(output, name), manifests.ENTRIES_FILE)
    try:
        # the entries gathered by one key: 3 transforms where ToList's global combine is 8 (pre-combine, merge,
        # the default for an empty input ...), each built, turned into protos and run: 5% of a stage at 10^3
        (build(pipeline)
         | f"{name}/Keyed" >> beam.Map(lambda entry: (None, entry))
         | f"{name}/Collect" >> beam.GroupByKey()
         | f"{name}/Save" >> beam.MapTuple(lambda _, entries: storage.write_json(entries_file,
                                                                                   {"entries": list(entries)})))
    except BaseException:  # Beam removes the pipeline's temporary folder in run(): one never run would leave it
        shutil.rmtree(pipeline.local_tempdir, ignore_errors=True)
        raise
    long_lived.freeze_once()  # the modules the build imported left out of full collections (pipelines/long_lived.py)
    result = pipeline.run()
    result.wait_until_finish()
    # no file: the stage emitted no entry (a grouping of nothing has no group); a failed Save failed the run
    entries = storage.read_json(entries_file)["entries"] if storage.exists(entries_file) else []
    manifest = build.manifest(entries)
    manifest["counters"] = counters(result)
    manifest["depends"] = depends
    manifest["seconds"] = round(time.perf_counter() - started, 1)
    storage.delete_path(layout.attempt_path(output, name))  # a finished stage's folders hold what its manifest lists
    stored = manifests.write(output, name, manifest)
    for folder in getattr(build, "scratch", ()):  # what the stage kept while it ran (extract's and embed's chunks)
        storage.delete_tree(folder)
    storage.delete_path(entries_file)  # the stage's folders hold what its manifest lists, and the manifest
    resolved = manifests.resolve(stored, output, name)
    if kept:  # what was kept and not written again (a finished bitext's parts, where there are fewer now)
        for path in manifests.unlisted(output, name, resolved):
            storage.delete_path(path)
    log.info("%s: done in %.1f s", name, manifest["seconds"])
    return resolved


def attempt_record(depends: dict, reads: dict) -> dict:
    """What a stage is run on, as its attempt file records it: its dependencies, and the earlier stages' outputs it
    reads by a digest of their manifests (an earlier stage run again in between writes another manifest, its
    time at least)."""
    digest = hashlib.sha256(json.dumps(reads, sort_keys=True, default=str).encode()).hexdigest()
    return json.loads(json.dumps({"depends": depends, "reads": digest}, default=str))


def stopped_attempt(output: str, name: str, attempt: dict) -> bool:
    """Whether a run of `name` on the same as `attempt` was stopped in `output` (its attempt file left there)."""
    path = layout.attempt_path(output, name)
    try:
        return storage.exists(path) and storage.read_json(path) == attempt
    except ValueError:  # an attempt file cut short by the stop: nothing to resume from
        return False


def clear_stage_folders(output: str, name: str, kept: list[str] | None) -> None:
    """Nothing of an earlier or stopped run survives a stage that runs, but the files `kept` (a resumed stage's)."""
    if kept is None:
        for folder in layout.stage_folders(output, name):
            found = storage.list_files(folder)
            if found:  # said, as a finished stage's strays are: a file put there by hand goes too
                log.warning("%s: removing %d %s an earlier or stopped run left there (%s%s): the %s stage starts "
                            "from an empty folder", folder, len(found), plural(len(found), "file"),
                            ", ".join(os.path.relpath(path, folder) if not storage.is_remote(path)
                                      else path.rsplit("/", 1)[-1] for path in found[:3]),
                            " ..." if len(found) > 3 else "", name)
            storage.delete_tree(folder)
        return
    keep = {os.path.normpath(path) for path in kept}
    for folder in layout.stage_folders(output, name):
        for path in storage.list_files(folder):
            if os.path.normpath(path) not in keep:
                storage.delete_path(path)


def counters(result) -> dict[str, dict[str, int]]:
    """Beam Metrics counters by namespace (stage) and name; committed values where the runner has them."""
    out: dict[str, dict[str, int]] = {}
    for metric in result.metrics().query(MetricsFilter())["counters"]:
        value = metric.committed if metric.committed is not None else metric.attempted
        namespace, name = metric.key.metric.namespace, metric.key.metric.name
        out.setdefault(namespace, {})
        out[namespace][name] = out[namespace].get(name, 0) + int(value or 0)
    return {ns: dict(sorted(names.items())) for ns, names in sorted(out.items())}


def prepare_for_runner(settings: dict, options: PipelineOptions) -> None:
    """On a remote runner, workers see only cloud storage: stage local model folders next to the temp
    location, and refuse local inputs and outputs (they would be read from, or written to, nowhere)."""
    if runs_locally(options):
        return
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    for key in ("input", "output"):
        if not storage.is_remote(settings[key]):
            raise ValueError(f"{key} {settings[key]!r} is a local path, but workers of a remote runner cannot see "
                             "this machine's disk: give a gs:// path")
    temp = options.view_as(GoogleCloudOptions).temp_location
    if not temp:
        raise ValueError("a remote runner needs --temp_location gs://... (local models are staged there)")
    stage_models(settings, storage.join(temp, "cmlm-miner-staging"))
    if not options.view_as(SetupOptions).setup_file:
        log.warning("no --setup_file: workers will not have this project's packages (use --setup_file ./setup.py)")


def stage_models(settings: dict, staging: str, write: bool = True) -> None:
    """The local encoder and LID models of `settings` copied under `staging`, and the settings pointed there;
    `write=False` points them where they would go and copies nothing (what --plan compares with a finished run)."""
    encoder = settings.get("encoder", "")
    if encoder and not storage.is_remote(encoder) and os.path.isdir(encoder):
        target = storage.join(staging, staged_encoder_name(encoder))
        settings["encoder"] = stage_encoder(encoder, target) if write else target
    lid = settings.get("lid") or {}
    if lid.get("model"):
        settings["lid"] = {**lid, "model": stage_lid_model(lid["model"], storage.join(staging, "lid"), write)}


def planned_settings(settings: dict, options: PipelineOptions) -> dict:
    """The settings a run would mine with: on a remote runner, its models where staging puts them (the stages'
    dependencies record those paths, so --plan compares them with a finished run's, not the local ones)."""
    from apache_beam.options.pipeline_options import GoogleCloudOptions

    temp = options.view_as(GoogleCloudOptions).temp_location
    if runs_locally(options) or not temp:
        return settings
    planned = copy.deepcopy(settings)
    stage_models(planned, storage.join(temp, "cmlm-miner-staging"), write=False)
    return planned


def stage_lid_model(spec: str, target: str, write: bool = True) -> str:
    """Each local model of `lid.model` copied to `target` with its sidecar; a built-in carried by a wheel (lid.176)
    stays a name (the workers install it through setup.py), ours (models/lid/, not a package) is staged as its file."""
    from pipelines.text.langid import BUILTIN_MODELS, is_expert_set, lid_parts, model_file

    staged = []
    for part in lid_parts(spec):
        if storage.is_remote(part) or (part in BUILTIN_MODELS and BUILTIN_MODELS[part].in_wheel):
            staged.append(part)
            continue
        path = model_file(part)
        if is_expert_set(part):  # the index with its folder's models: experts/experts.json beside the others
            folder = storage.join(target, "experts")
            if write:
                storage.stage_folder(os.path.dirname(path), folder)
            staged.append(storage.join(folder, os.path.basename(path)))
            continue
        staged_file = storage.join(target, os.path.basename(path))
        for suffix in ("", ".json") if write else ():  # the model and its sidecar (normalisation, checksum)
            if os.path.exists(path + suffix):
                with open(path + suffix, "rb") as handle:
                    storage.write_bytes(staged_file + suffix, handle.read())
        staged.append(staged_file)
    return "+".join(staged)


def staged_encoder_name(folder: str) -> str:
    """`encoder-<digest of the folder's identity>`: another encoder is staged to another folder, so none of an
    earlier one's files mix with it under the same --temp_location, and the embed stage's dependencies, which
    see the staged path, tell two encoders apart (a rerun with another local encoder reused the old vectors)."""
    identity = json.dumps(encoder_identity(folder), sort_keys=True).encode()
    return f"encoder-{hashlib.sha256(identity).hexdigest()[:16]}"


def stage_encoder(folder: str, target: str) -> str:
    """A local encoder folder copied to `target`. An ensemble's member folders are copied inside it
    (`members/<i>`) and its ensemble.json rewritten to name them there; a lens's frozen encoder likewise
    (`encoder/`): workers see only `target`."""
    from encoders.ensemble import FILE, is_ensemble, read_ensemble
    from encoders.lens import is_lens

    if is_lens(folder):
        return stage_lens(folder, target)
    if not is_ensemble(folder):
        return storage.stage_folder(folder, target)
    spec = read_ensemble(folder)
    members = []
    for i, member in enumerate(spec["members"]):
        if os.path.isdir(member):  # a lens member takes its frozen encoder along (stage_lens)
            stage_encoder(member, storage.join(target, "members", str(i)))
            member = f"members/{i}"
        members.append(member)
    stage_top_files(folder, target, skip={FILE})
    staged = {k: v for k, v in spec.items() if k != "path"} | {"members": members}
    storage.write_json(storage.join(target, FILE), staged)
    log.info("staged the ensemble %s (%d members) to %s", folder, len(members), target)
    return target


def stage_top_files(folder: str, target: str, skip: set[str]) -> None:
    """The files directly in `folder` but `skip` (written anew by the caller), copied to `target`: an ensemble's or
    a lens's thresholds.json is read from the staged folder (`mining.threshold_offsets: encoder`), and without it
    the workers' run mined at the bare threshold."""
    for name in sorted(os.listdir(folder)):
        source = os.path.join(folder, name)
        if name not in skip and os.path.isfile(source):
            with open(source, "rb") as handle:
                storage.write_bytes(storage.join(target, name), handle.read())


def stage_lens(folder: str, target: str) -> str:
    from encoders.lens import FILE, read_lens

    lens = read_lens(folder)
    storage.stage_folder(str(lens.encoder), storage.join(target, "encoder"))
    stage_top_files(folder, target, skip={FILE})  # the weights, thresholds.json ...
    with open(os.path.join(folder, FILE), encoding="utf-8") as handle:
        storage.write_json(storage.join(target, FILE), {**json.load(handle), "encoder": "encoder"})
    log.info("staged the lens %s with its encoder %s to %s", folder, lens.encoder, target)
    return target


def run(settings: dict, options: PipelineOptions, stages: list[str], builders: dict, rerun: bool = False) -> dict:
    """Run `stages` (names) in order with their `builders` (name -> stage class); the other stages' finished
    outputs are read from their manifests. Everything that could stop the run over the output folder's own state
    is checked before any stage deletes anything in it (`prepare_output`)."""
    from pipelines import preflight

    started = time.perf_counter()
    preflight.check_output_folder(settings["output"])  # a file in the way, named before the lock makes the folder
    with output_lock(settings["output"]):  # from the plan on: it reads what another run would be changing
        plan = plan_stages(settings, stages, rerun)
        prepare_output(settings["output"], plan)
        if any(earlier is None for _, earlier, _ in plan):
            remove_report(settings["output"])
        found, ran = {}, False
        for name, earlier, depends in plan:
            if earlier is not None:
                found[name] = earlier
                continue
            build = builders[name](settings, found)
            # the stage's own finished output, where the stages it reads are the ones it was made from
            made_from = hasattr(build, "from_finished") and not (rerun or ran)
            found[name] = run_stage(name, build, settings, options, recorded_dependencies(name, depends, found),
                                    reads=dict(found), resume=not rerun,
                                    finished=current_manifest(settings["output"], name) if made_from else None)
            ran = True
        report = stage_report(settings, found, time.perf_counter() - started)
        if settings.get("gold") and "pairs" in found:
            report["gold"] = gold_scores(settings["gold"], found["pairs"])
        storage.write_json(layout.report_path(settings["output"]), report)
    return report


def remove_report(output: str) -> None:
    """The last run's report.json, removed (one unlink) before a stage changes its outputs: a run killed midway
    left it describing bitext that was no longer there. The report is there only beside the outputs it describes,
    and the run that finishes writes it again."""
    path = layout.report_path(output)
    if storage.exists(path):
        storage.delete_path(path)


def current_manifest(output: str, name: str) -> dict | None:
    """`name`'s finished manifest in `output`, its paths resolved, where it is of this version (None otherwise)."""
    stored = manifests.stored(output, name)
    return manifests.resolve(stored, output, name) if stored and manifests.is_current(stored) else None


def recorded_dependencies(name: str, depends: dict, found: dict) -> dict:
    """What a stage that runs over the earlier stages' outputs `found` records it depends on: `depends`, its
    dependencies as the run's decisions read them (the input files listed once a run, not again a stage), but the
    languages its sentences cover as the extract output records them (it may hold more languages than are asked
    for now, dependencies._holds), so that a later run asking for those reuses it."""
    depends = dict(depends)
    extract = (found.get("extract") or {}).get("depends") or {}
    if name != "extract" and "extract.languages" in extract:
        depends["extract.languages"] = extract["extract.languages"]
    return depends


def plot_report(report: dict, path: str) -> None:
    """The report's score histograms drawn (miner.plots.plot_pairs_by_threshold)."""
    from miner.plots import plot_pairs_by_threshold  # matplotlib only when a plot is asked for

    if not report["pairs"]:
        raise ValueError(f"--plot: {report['output']} has no pairs stage output to draw (run --stages pairs)")
    if any("score_histogram" not in entry for entry in report["pairs"].values()):
        raise ValueError(f"the pairs stage's output in {report['output']} records no score histograms (made by an "
                         "earlier version): run it again to draw them (--stages pairs --rerun)")
    histograms = {pair: entry["score_histogram"] for pair, entry in report["pairs"].items()}
    threshold = (report.get("mining") or {}).get("threshold")
    plot_pairs_by_threshold(histograms, threshold, f"pairs mined in {report['output']}", path)


OUTDATED = "(manifest of an older version)"  # a manifest without the current format: its stage is not finished


# Why a stage runs, is reused or stops the run: the words the plan and the log give for each reason
REASONS = {
    "new": "no finished output", "rerun": "--rerun", "after": "{after} runs before it",
    "older": "its manifest was written by an older version", "changed": "what its output depends on changed",
    "same": "finished with the same inputs and settings",
    "unrecorded": "its output records no dependencies: used unchecked",
    "stale": "made with other inputs or settings", "absent": "left out (--stages) and not finished here",
    "needs": "the stage before it is neither run nor finished",
    "resume": "a run of it on the same inputs and settings stopped: what it finished is kept, the rest is done",
}


@dataclass
class StageDecision:
    """What a run does with one stage: `action` run, reuse (`manifest`: its finished output, paths resolved),
    refuse (`error`: a stage left out whose output no longer holds) or absent (left out, never finished); `reason`
    a key of REASONS (`after`: the earlier stage that runs), `changes` a line a changed dependency."""

    name: str
    action: str
    reason: str
    manifest: dict | None = None
    changes: list[str] = field(default_factory=list)
    after: str | None = None
    error: str | None = None
    seconds: float | None = None  # what the stage took when it last finished here
    depends: dict | None = None  # what its output would depend on (dependencies.stage_dependencies)
    notes: list[str] = field(default_factory=list)  # what its finished output says a user should know

    def why(self) -> str:
        return REASONS[self.reason].format(after=self.after)


def stage_decisions(settings: dict, stages: list[str], rerun: bool, resumable: tuple[str, ...] = ()
                    ) -> list[StageDecision]:
    """A decision for every stage, in order. A stage in `stages` runs when `rerun`, when it has no current
    manifest, or when what its output depends on changed, and then so does every later stage in `stages`; a
    stage left out whose output is stale is refused; a stage that runs and can resume (`resumable`) says so where a
    run of it on the same was stopped (`stopped_attempt`). Reads manifests and file listings only."""
    output, decisions, ran = settings["output"], [], None
    by_stage = dependencies_by_stage(settings)
    for name in STAGES:
        earlier, depends = manifests.stored(output, name), by_stage[name]
        seconds = earlier.get("seconds") if earlier else None
        if earlier is not None and not manifests.is_current(earlier):
            changed, lines = [OUTDATED], []
        else:
            changed = changed_keys(earlier.get("depends"), depends) if earlier else []
            lines = change_lines(earlier.get("depends"), depends) if changed else []
        if name in stages and (rerun or ran or earlier is None or changed):
            reason = ("new" if earlier is None else "rerun" if rerun else "after" if ran
                      else "older" if changed == [OUTDATED] else "changed")
            decisions.append(StageDecision(name, "run", reason, changes=lines if reason == "changed" else [],
                                           after=ran, seconds=seconds))
            ran = ran or name  # a stage that runs makes every later stage's output stale
        elif earlier is None:
            decisions.append(StageDecision(name, "absent", "absent"))
        elif changed == [OUTDATED]:
            decisions.append(StageDecision(name, "refuse", "older", error=manifests.outdated_message(output, name),
                                           seconds=seconds))
        elif changed and changed != [NOT_RECORDED]:
            error = (f"{name}: its output in {output} was made with other inputs or settings ({', '.join(changed)}); "
                     "run that stage too (--stages) or choose another --output")
            decisions.append(StageDecision(name, "refuse", "stale", changes=lines, error=error, seconds=seconds))
        else:
            decisions.append(StageDecision(name, "reuse", "unrecorded" if changed else "same",
                                           manifest=manifests.resolve(earlier, output, name), seconds=seconds))
        if earlier and decisions[-1].action != "run":  # what a finished output's own record says
            decisions[-1].notes = [note for note in [libraries_note(earlier, settings)] if note]
        raised = threshold_raised(earlier.get("depends"), depends) if earlier and name == "pairs" else None
        if raised and decisions[-1].reason == "changed":
            decisions[-1].notes = [f"only the threshold rose ({raised[0]:g} -> {raised[1]:g}): the finished bitext's "
                                   "rows at or above each pair's new threshold are this run's, filtered without a "
                                   "k-NN join (docs/pipeline.md, Reruns)"]
    for decision in decisions:
        decision.depends = by_stage[decision.name]
    for position, decision in enumerate(decisions):
        before = {d.name: d.manifest for d in decisions[:position] if d.action == "reuse"}
        if (decision.reason == "new" and decision.name in resumable and not rerun
                and all(d.action in ("reuse", "absent") for d in decisions[:position])
                and stopped_attempt(output, decision.name, attempt_record(
                    recorded_dependencies(decision.name, decision.depends, before), before))):
            decision.reason = "resume"
            saved = {kind: len(storage.list_finished(folder))
                     for kind, folder in layout.saved_work(output, decision.name).items()}
            decision.notes = ["the stopped run saved " + " and ".join(f"{n:,} {plural(n, kind)}"
                                                                      for kind, n in saved.items())]
    for before, decision in zip(decisions, decisions[1:]):  # a stage reads the one before it: refused now, not
        if decision.action == "run" and before.action == "absent":  # after the stages before it have run for hours
            decision.action, decision.reason = "refuse", "needs"
            decision.error = (f"{decision.name}: needs the {before.name} stage's output, which {output} does not "
                              f"have: run that stage too (--stages {before.name},{decision.name})")
    return decisions


def plan_stages(settings: dict, stages: list[str], rerun: bool) -> list[tuple[str, dict | None, dict]]:
    """(stage, its finished manifest to use, or None: the stage runs, what its output depends on) for every stage
    this run runs or reads, in order (stage_decisions), with the reasons logged; the first refusal raised."""
    output, plan = settings["output"], []
    for decision in stage_decisions(settings, stages, rerun):
        name = decision.name
        if decision.action == "refuse":
            raise ValueError(decision.error)
        if decision.action == "run":
            if decision.reason in ("changed", "older"):
                log.info("%s: %s: running it again%s", name, decision.why(),
                         "".join(f"\n    {line}" for line in decision.changes + decision.notes))
            plan.append((name, None, decision.depends))
        elif decision.action == "reuse":
            for note in decision.notes:
                log.warning("%s: %s", name, note)
            if decision.reason == "unrecorded":
                log.warning("%s: its earlier output records no dependencies, so whether it matches these inputs "
                            "and settings cannot be checked; using it (run that stage too to be sure)", name)
            else:
                log.info("%s: finished in an earlier run with the same inputs and settings (%s)%s", name,
                         layout.manifest_path(output, name), "; --rerun to redo it" if name in stages else "")
            plan.append((name, decision.manifest, decision.depends))
    return plan


def readable_size(size: int) -> str:
    """Bytes as a person reads them: 812 B, 3.4 MB, 1.21 TB (powers of 1000, as storage bills them)."""
    for unit, scale in (("B", 1), ("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12)):
        value = float(f"{size / scale:.3g}")  # three figures, rounded before the unit is chosen (999,999 B: 1 MB)
        if value < 1000 or unit == "TB":
            return f"{value:g} {unit}"


def format_plan(output: str, decisions: list[StageDecision]) -> str:
    """`--plan`: each stage's decision and why, with what changed and what the stage took when it last ran, and
    how much an extract stage that runs reads (its recorded input files: [path, size, time])."""
    lines = [f"plan for {output} (nothing was run, written or deleted):"]
    extract = next(d for d in decisions if d.name == "extract")
    inputs = (extract.depends or {}).get("input files")
    if inputs is not None and extract.action == "run":
        size = readable_size(sum(row[1] for row in inputs))
        lines.append(f"  input: {len(inputs)} {plural(len(inputs), 'file')}, {size} to read")
    for decision in decisions:
        action = {"absent": "-", "refuse": "error"}.get(decision.action, decision.action)
        took = f" (took {decision.seconds:.1f} s last time)" if decision.seconds is not None else ""
        lines.append(f"  {decision.name:<8} {action:<6} {decision.why()}{took}")
        lines.extend(f"                    {line}" for line in decision.changes + decision.notes)
    return "\n".join(lines)


def prepare_output(output: str, plan: list[tuple[str, dict | None, dict]]) -> None:
    """Check the output folder for every stage of `plan`, then clean it: a stage that will run must be able to
    clear its folders (no links), a finished stage's files must be whole (later stages read them), and a finished
    stage's folders keep only what its manifest lists. Nothing is deleted until every check passed. (The folder
    itself, a file in its way, is checked by `run` before it takes the folder's lock.)"""
    from pipelines import preflight

    strays = {}
    for name, manifest, _ in plan:
        if manifest is None:
            preflight.check_stage_folders(output, name)
        else:
            preflight.check_finished_stage(output, name, manifest)
            strays[name] = manifests.unlisted(output, name, manifest)
            preflight.check_no_deletion_through_links(output, name, strays[name])
    for name, paths in strays.items():
        manifests.remove(name, paths, log)


def print_help(prog: str, description: str | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Any Apache Beam pipeline option is accepted too (--runner, "
                                            "--direct_num_workers, --project, --region, --temp_location, "
                                            "--setup_file, --machine_type, --max_num_workers ...).")
    MineOptions._add_argparse_args(parser)
    parser.print_help()


def end_process(code: int):
    """Leave the process with `code` once the job is over, without the interpreter's finalization.

    At finalization CPython stops the daemon threads where they stand; one that is inside native code at that
    moment (a Beam worker thread, a faiss or torch call that released the GIL, tqdm's monitor) is ended with
    pthread_exit, and unwinding it through a C++ frame marked noexcept calls std::terminate ("terminate called
    without an active exception", SIGABRT) or crashes: a finished job reported as failed. tests/test_exit.py
    reproduces the crash with a faiss search in a daemon thread. Every output is written and renamed before the
    job returns, so finalization has nothing left to do but what is done here: the exit handlers run (Python code,
    safe while threads still run), then logging and the standard streams are flushed."""
    import atexit

    try:
        atexit._run_exitfuncs()
    finally:
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed or broken pipe: nothing more can reach it
                pass
        os._exit(code)


RESUMES = "a stage stopped midway keeps what it saved, and the same command again resumes it (docs/pipeline.md, Reruns)"


def interrupted(err: BaseException) -> bool:
    """Whether `err` is Ctrl-C as Beam passes it on: a transform's KeyboardInterrupt comes out of the runner as a
    RuntimeError whose message starts with the interruption's name (and `[while running ...]`)."""
    while err is not None:
        if isinstance(err, KeyboardInterrupt) or str(err).startswith("KeyboardInterrupt"):
            return True
        err = err.__cause__ or err.__context__
    return False


def main(argv: list[str] | None, builders: dict, prog: str, description: str | None = None) -> int:
    """A job's command line: pipelines.mine runs every stage, each stage's own module (pipelines.extract ...) runs
    itself; `builders` (stage name -> stage class) are the stages this command can run."""
    from miner.console import exit_status, setup_logging

    argv = list(argv if argv is not None else sys.argv[1:])
    if {"-h", "--help"} & set(argv):
        print_help(prog, description)
        return 0
    options = PipelineOptions(argv)
    mine_options = options.view_as(MineOptions)
    setup_logging(mine_options.verbose, mine_options.quiet)

    def command() -> None:
        canonical_runner(options)
        check_runner_installed(options)
        check_arguments(argv, options)
        check_local_workers(options)
        settings = mine_options.settings()
        storage.warn_if_unreachable([settings.get("input"), settings.get("output")])
        check_local_devices(settings, options)
        stages = mine_options.stage_list()
        other = [name for name in stages if name not in builders]
        if other:
            raise ValueError(f"{prog} runs {', '.join(builders)} only, not {', '.join(other)}")
        for name in stages:  # errors now, not after the extract stage has run
            builders[name].check(settings)
        if settings.get("gold"):
            read_gold(settings["gold"])  # a gold file that cannot be read fails now, not after every stage ran
        if mine_options.plan:  # before models are staged to a remote runner's storage: nothing is written
            decisions = stage_decisions(planned_settings(settings, options), stages, mine_options.rerun,
                                        tuple(name for name, stage in builders.items() if hasattr(stage, "resume")))
            print(format_plan(settings["output"], decisions))
            refused = next((d for d in decisions if d.action == "refuse"), None)
            if refused:
                raise ValueError(refused.error)
            return
        prepare_for_runner(settings, options)
        report = run(settings, options, stages, builders, mine_options.rerun)
        print(format_summary(report))
        if mine_options.plot:  # after the report: a plot that cannot be drawn must not cost the run's outputs
            plot_report(report, mine_options.plot)
            print(f"  drew the pairs each threshold keeps: {mine_options.plot}")

    def reported() -> None:
        try:
            command()
        except KeyboardInterrupt:
            raise KeyboardInterrupt(RESUMES) from None
        except Exception as err:
            if interrupted(err):
                raise KeyboardInterrupt(RESUMES) from None
            problem = storage.cloud_storage_problem(err)
            if problem is None:
                raise
            raise ValueError(problem) from None

    return exit_status(reported)
