"""The main job: crawl files -> sentences -> vectors -> bitext, on any Beam runner.

    python -m pipelines.mine                                # the bundled sample, DirectRunner, ./output
    python -m pipelines.mine --direct_num_workers 2 --direct_running_mode multi_processing
    python -m pipelines.mine --config my.yaml --input 'crawl/*.warc.gz' --output out --set mining.threshold=1.06
    python -m pipelines.mine --runner DataflowRunner --project P --region us-central1 \\
        --temp_location gs://B/tmp --setup_file ./setup.py \\
        --input 'gs://B/crawl/*.warc.gz' --output gs://B/mined           # docs/pipeline.md

Three stages, each a Beam job of its own with a persisted output (pipelines/layout.py), each runnable alone with
`--stages`: extract (pipelines.extract), embed (pipelines.embed), pairs (pipelines.pairs). A stage whose output
is complete (its manifest exists) and was made from the same inputs, settings and models
(pipelines/dependencies.py) is not run again unless `--rerun`; one whose dependencies changed runs again, and so
does every stage after it. A stage that runs first clears its output folders, so a rerun never leaves duplicates,
partial or stale files.
"""

from __future__ import annotations

import logging
import os
import sys
import time

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, SetupOptions

from pipelines import layout, preflight, storage
from pipelines.dependencies import NOT_RECORDED, changed_keys, stage_dependencies
from pipelines.options import STAGES, MineOptions, runs_locally
from pipelines.report import format_summary, gold_scores, stage_report

log = logging.getLogger("pipelines.mine")


def run_stage(name: str, build, settings: dict, options: PipelineOptions) -> dict:
    """Run one stage as its own pipeline; returns its manifest.

    `build(pipeline) -> PCollection of manifest entries`, `build.manifest(entries) -> dict`; the manifest (with
    the stage's counters) is written after the pipeline succeeds, so its existence means the stage is complete."""
    output = settings["output"]
    manifest_file = layout.manifest_path(output, name)
    for folder in layout.stage_folders(output, name):  # nothing of an earlier or killed run survives a rerun
        storage.delete_tree(folder)
    started = time.perf_counter()
    log.info("%s: starting", name)
    pipeline = beam.Pipeline(options=options)
    entries_file = storage.join(layout.stage_dir(output, name), "_ENTRIES.json")
    (build(pipeline)
     | f"{name}/Collect" >> beam.combiners.ToList()
     | f"{name}/Save" >> beam.Map(lambda entries: storage.write_json(entries_file, {"entries": entries})))
    result = pipeline.run()
    result.wait_until_finish()
    entries = storage.read_json(entries_file)["entries"]
    manifest = build.manifest(entries)
    manifest["counters"] = counters(result)
    manifest["depends"] = stage_dependencies(name, settings)
    manifest["seconds"] = round(time.perf_counter() - started, 1)
    storage.write_json(manifest_file, manifest)
    log.info("%s: done in %.1f s", name, manifest["seconds"])
    return manifest


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
    staging = storage.join(temp, "cmlm-miner-staging")
    encoder = settings.get("encoder", "")
    if encoder and not storage.is_remote(encoder) and os.path.isdir(encoder):
        settings["encoder"] = storage.stage_folder(encoder, storage.join(staging, "encoder"))
    lid = settings.get("lid") or {}
    if lid.get("model") and not storage.is_remote(lid["model"]):
        target = storage.join(staging, "lid", os.path.basename(lid["model"]))
        for suffix in ("", ".json"):  # the model and its sidecar (normalisation, checksum), when there is one
            if os.path.exists(lid["model"] + suffix):
                with open(lid["model"] + suffix, "rb") as handle:
                    storage.write_bytes(target + suffix, handle.read())
        settings["lid"] = {**lid, "model": target}
    if not options.view_as(SetupOptions).setup_file:
        log.warning("no --setup_file: workers will not have this project's packages (use --setup_file ./setup.py)")


def run(settings: dict, options: PipelineOptions, stages: list[str], rerun: bool = False) -> dict:
    from pipelines.embed import EmbedStage
    from pipelines.extract import ExtractStage
    from pipelines.pairs import PairsStage

    started = time.perf_counter()
    manifests = {}
    builders = {"extract": ExtractStage, "embed": EmbedStage, "pairs": PairsStage}
    for name in STAGES:
        manifest_file = layout.manifest_path(settings["output"], name)
        earlier = storage.read_json(manifest_file) if storage.exists(manifest_file) else None
        changed = changed_keys(earlier.get("depends"), stage_dependencies(name, settings)) if earlier else []
        if name in stages and (rerun or earlier is None or changed):
            if earlier is not None and changed and not rerun:
                log.info("%s: what its earlier output depends on changed (%s): running it again", name,
                         ", ".join(changed))
            manifests[name] = run_stage(name, builders[name](settings, manifests), settings, options)
            rerun = True  # a stage that ran makes every later stage's output stale
        elif earlier is not None:
            if changed == [NOT_RECORDED]:
                log.warning("%s: its earlier output records no dependencies, so whether it matches these inputs "
                            "and settings cannot be checked; using it (run that stage too to be sure)", name)
            elif changed:
                raise ValueError(f"{name}: its output in {settings['output']} was made with other inputs or "
                                 f"settings ({', '.join(changed)}); run that stage too (--stages) or choose "
                                 f"another --output")
            else:
                log.info("%s: finished in an earlier run with the same inputs and settings (%s)%s", name,
                         manifest_file, "; --rerun to redo it" if name in stages else "")
            manifests[name] = earlier
    report = stage_report(settings, manifests, time.perf_counter() - started)
    if settings.get("gold") and "pairs" in manifests:
        report["gold"] = gold_scores(settings["gold"], manifests["pairs"])
    storage.write_json(layout.report_path(settings["output"]), report)
    return report


def print_help(prog: str = "python -m pipelines.mine", description: str | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description=description or __doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Any Apache Beam pipeline option is accepted too (--runner, "
                                            "--direct_num_workers, --project, --region, --temp_location, "
                                            "--setup_file, --machine_type, --max_num_workers ...).")
    MineOptions._add_argparse_args(parser)
    parser.print_help()


def main(argv: list[str] | None = None, prog: str = "python -m pipelines.mine", description: str | None = None) -> int:
    """The job; `prog` and `description` let each stage's own command (pipelines.extract ...) print its help."""
    from miner.cli import exit_status, setup_logging

    argv = list(argv if argv is not None else sys.argv[1:])
    if {"-h", "--help"} & set(argv):
        print_help(prog, description)
        return 0
    options = PipelineOptions(argv)
    mine_options = options.view_as(MineOptions)
    setup_logging(mine_options.verbose)

    def command() -> None:
        settings = mine_options.settings()
        preflight.check(settings, mine_options.stage_list())  # errors now, not after the extract stage has run
        prepare_for_runner(settings, options)
        report = run(settings, options, mine_options.stage_list(), mine_options.rerun)
        print(format_summary(report))

    return exit_status(command)


if __name__ == "__main__":
    sys.exit(main())

