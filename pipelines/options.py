"""Command-line options of the jobs, as Beam `PipelineOptions` subclasses: the same flags work with every runner.

    python -m pipelines.mine                                   # bundled sample, DirectRunner, ./output
    python -m pipelines.mine --input 'gs://b/crawl/*.warc.gz' --output gs://b/mined \\
        --runner DataflowRunner --project P --region R --temp_location gs://b/tmp --setup_file ./setup.py

Settings come from `--config` (YAML), then `--set section.key=value`; `--input`, `--output` and `--encoder`
are shorthands for the settings of the same name.
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

STAGES = ("extract", "embed", "pairs")
DIRECT_RUNNERS = {None, "DirectRunner", "direct", "SwitchingDirectRunner"}  # run as pipelines.local_runner
LOCAL_RUNNERS = DIRECT_RUNNERS | {"PrismRunner", "prism", "FnApiRunner", "BundleBasedDirectRunner"}
PORTABLE_RUNNERS = {"PortableRunner", "portable", "FlinkRunner", "flink", "SparkRunner", "spark"}


class MineOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        from pipelines.settings import DEFAULT_CONFIG

        parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="YAML settings file")
        parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                            help="override one setting (repeatable), e.g. --set mining.threshold=1.4")
        parser.add_argument("--input", help="crawl files: a glob of WARC/WET files, local or gs://")
        parser.add_argument("--output", help="output folder, local or gs://")
        parser.add_argument("--encoder", help="sentence encoder (default: the settings', models/cmlm-ensemble): an "
                            "ensemble or checkpoint folder (local or gs://), use-multilingual or char-ngram")
        parser.add_argument("--stages", default=",".join(STAGES),
                            help=f"stages to run, in order, from {','.join(STAGES)} (default: all)")
        parser.add_argument("--rerun", action="store_true",
                            help="run the stages again even where a finished output exists, and afresh: "
                            "nothing a stopped run saved is kept")
        parser.add_argument("--plan", action="store_true",
                            help="say which stages would run and why (what changed since their output was made), "
                            "then stop: nothing is run, written or deleted")
        parser.add_argument("--plot", metavar="FILE.png",
                            help="also draw how many mined pairs each margin threshold keeps, per language pair "
                            "(a PNG on this machine; needs matplotlib: pip install 'cmlm-miner[plot]')")
        parser.add_argument("--verbose", action="store_true", help="debug lines of ours, info lines of the libraries")
        parser.add_argument("--quiet", action="store_true", help="warnings and the final report only")

    def settings(self) -> dict:
        from pipelines.settings import load_settings

        settings = load_settings(self.config, self.overrides)
        if self.input and not any(o.partition("=")[0].strip() == "gold" for o in self.overrides):
            settings.pop("gold", None)  # the config's known translations describe the config's input, not this one
        for key in ("input", "output", "encoder"):
            if getattr(self, key) is not None and not getattr(self, key).strip():  # `--output "$OUT"`, OUT unset
                raise ValueError(f"--{key} is empty: give a path, or leave the flag out for the config's")
            if getattr(self, key):
                settings[key] = getattr(self, key)
        settings.setdefault("output", "output")
        return settings

    def stage_list(self) -> list[str]:
        stages = [s.strip() for s in self.stages.split(",") if s.strip()]
        unknown = [s for s in stages if s not in STAGES]
        if unknown:
            raise ValueError(f"--stages: unknown stage(s) {', '.join(unknown)}; choose from {', '.join(STAGES)}")
        if not stages:  # a run of no stage wrote a report of nothing
            raise ValueError(f"--stages: no stage given; choose from {', '.join(STAGES)}")
        return stages


class ViewCachingOptions(PipelineOptions):
    """The same options, each view (`view_as(TypeOptions)` ...) made once. Beam asks the pipeline's options for
    views several times for every transform it applies and translates, and each view builds an argparse parser
    and parses the flags again: 8-9% of the pairs stage's CPU at 10^4 sentences a language (docs/benchmarks.md).
    A view reads and writes the values the options share (`_all_options`), so one made earlier is as good as new."""

    @classmethod
    def of(cls, options: PipelineOptions) -> "ViewCachingOptions":
        if isinstance(options, cls):
            return options
        cached = cls.__new__(cls)
        cached.__dict__.update(options.__dict__)  # the flags and the shared values: not a copy
        return cached

    def view_as(self, cls):
        views = self.__dict__.setdefault("_views", {})  # the one place the cache is made, however self was
        if cls not in views:
            views[cls] = super().view_as(cls)
        return views[cls]


DASK_RUNNERS = {"DaskRunner", "dask"}


def pipeline_runner(options: PipelineOptions):
    """The runner instance for `--runner` where it is ours, else None (Beam resolves the name): DaskRunner
    (pipelines.dask_runner, which Beam does not know by name), and the DirectRunner, the default, which runs as
    pipelines.local_runner (the in-process FnApiRunner; Beam's own would first download and try Prism)."""
    from apache_beam.options.pipeline_options import StandardOptions

    runner = options.view_as(StandardOptions).runner
    if runner in DASK_RUNNERS:
        from pipelines.dask_runner import DaskRunner

        return DaskRunner()
    if runner in DIRECT_RUNNERS:
        from pipelines.local_runner import LocalRunner

        return LocalRunner()
    return None


def wave_bytes(setting: int | str, options: PipelineOptions) -> int:
    """knn.wave_bytes resolved for the runner: `auto` is a quarter of the worker memory of a DaskRunner's cluster
    (its groupings live in that memory, which spills past 70%, and a shuffle holds what it ships about twice: the
    parts sent and the groups they make) and one wave (0) elsewhere (Dataflow's shuffle is a service of its own)."""
    from apache_beam.options.pipeline_options import StandardOptions

    if setting != "auto":
        return setting
    if options.view_as(StandardOptions).runner in DASK_RUNNERS:
        from pipelines.dask_runner import cluster_memory

        return cluster_memory(options) // 4
    return 0


def spreads_work(options: PipelineOptions) -> bool:
    """Whether a Reshuffle that spreads elements over workers can spread them: not on the DirectRunner with one
    worker (its default), where the only worker is this process and a spread only groups every element once more
    (at 10^4 sentences a language, the pairs stage's two spreads are 6% of its CPU: docs/benchmarks.md)."""
    from apache_beam.options.pipeline_options import DirectOptions, StandardOptions

    if options.view_as(StandardOptions).runner in DIRECT_RUNNERS:
        return options.view_as(DirectOptions).direct_num_workers != 1
    return True


def spread(pcoll, label: str):
    """`pcoll` spread over the workers by a Reshuffle labelled `label` (it breaks fusion, so that the elements after
    it go to whichever worker is free), where the pipeline's runner has several (spreads_work); `pcoll` itself where
    it has one. Applied inside a composite's `expand`, the label is nested in the composite's."""
    import apache_beam as beam

    if spreads_work(pcoll.pipeline.options):
        return pcoll | label >> beam.Reshuffle()
    return pcoll


def runs_locally(options: PipelineOptions) -> bool:
    """True when the workers share this machine's disk: the local runners, and a portable runner (the Fn API path
    that Flink and Spark use) whose SDK workers run in this process (`--environment_type LOOPBACK`), e.g. with an
    embedded job server (`--job_endpoint embed`)."""
    from apache_beam.options.pipeline_options import PortableOptions, StandardOptions

    runner = options.view_as(StandardOptions).runner
    if runner in LOCAL_RUNNERS:
        return True
    if runner in DASK_RUNNERS:  # a LocalCluster shares this disk; a remote scheduler's workers may not
        from pipelines.dask_runner import is_local_cluster

        return is_local_cluster(options)
    return runner in PORTABLE_RUNNERS and (options.view_as(PortableOptions).environment_type or "").upper() == \
        "LOOPBACK"


def check_runner_installed(options: PipelineOptions) -> None:
    """Dataflow's runner submits jobs through clients that only Beam's GCP extra installs: without it the job
    would list its gs:// input anonymously (retrying for minutes where there are no credentials) and fail at
    submission. Said at once instead."""
    import importlib

    from apache_beam.options.pipeline_options import StandardOptions

    from miner.console import ExtraMissingError

    runner = options.view_as(StandardOptions).runner
    if runner in DASK_RUNNERS:
        check_dask_counts(options)
    if runner not in ("DataflowRunner", "dataflow"):
        return
    try:
        importlib.import_module("apache_beam.runners.dataflow.internal.apiclient")
    except ImportError as err:
        raise ExtraMissingError("--runner DataflowRunner needs Beam's GCP extra (the Dataflow client, Google "
                                f"credentials): pip install -e '.[gcp]' ({err})") from None


def canonical_runner(options: PipelineOptions) -> None:
    """`--runner directrunner` or `Direct` as the name it stands for (Beam resolves names in any case, and a name
    ending without "Runner"): this project's checks compare names, and took such a local run for a remote one.
    A name neither Beam nor this project knows (`DirectRuner`) is an error naming the nearest: otherwise it was
    taken for a remote runner, and the run refused local paths as if it were one."""
    import difflib

    from apache_beam.options.pipeline_options import StandardOptions
    from apache_beam.runners.runner import _RUNNER_MAP  # the names create_runner resolves

    standard = options.view_as(StandardOptions)
    runner = standard.runner
    if not runner or "." in runner:  # a dotted name: the runner class itself
        return
    known = [*StandardOptions.KNOWN_RUNNER_NAMES, "DaskRunner"]
    names = {name.lower(): name for name in known}
    keys = (runner.lower(), f"{runner.lower()}runner")
    canonical = next((names[key] for key in keys if key in names), None)
    if canonical:
        standard.runner = canonical
    elif not any(key in _RUNNER_MAP for key in keys):
        like = difflib.get_close_matches(runner, known, 1)
        raise ValueError(f"--runner {runner}: no such runner" + (f" (did you mean {like[0]}?)" if like else "")
                         + f"; known: {', '.join(sorted(known))}, or a runner class's full module path")


def check_dask_counts(options: PipelineOptions) -> None:
    """`--dask_workers 0` started a cluster of no workers that waited minutes for one; 0 partitions are none."""
    from pipelines.dask_runner import DaskShuffleOptions, LocalClusterOptions

    for flag, value in (("--dask_workers", options.view_as(LocalClusterOptions).dask_workers),
                        ("--dask_shuffle_partitions", options.view_as(DaskShuffleOptions).dask_shuffle_partitions)):
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be 1 or more, got {value}")


def check_arguments(argv: list[str], options: PipelineOptions) -> None:
    """A flag that no options class reads (ours, Beam's, the runner's) is an error naming it, with the known flag
    it is closest to: Beam only logs and drops it, so `--ouput out` ran into ./output, and `--direct_num_worker 4`
    on one worker. Where the runner's own options cannot be loaded to be known, nothing is said (a false error
    would stop a run that works)."""
    import difflib

    from apache_beam.options.pipeline_options import StandardOptions

    runner = options.view_as(StandardOptions).runner
    try:
        from apache_beam.options.pipeline_options import _BeamArgumentParser  # what Beam parses its flags with

        if runner in DASK_RUNNERS:  # Beam's DaskOptions and ours (the cluster's workers, the shuffle)
            import apache_beam.runners.dask.dask_runner  # noqa: F401

            import pipelines.dask_runner  # noqa: F401
        elif runner is not None and runner not in DIRECT_RUNNERS:
            from apache_beam.runners.runner import create_runner

            create_runner(runner)  # imports the runner's module, which registers its options
        parser = _BeamArgumentParser(allow_abbrev=False)
        for cls in {str(cls): cls for cls in PipelineOptions.__subclasses__()}.values():
            cls._add_argparse_args(parser)
        _, unknown = parser.parse_known_args(argv)
    except Exception:  # a Beam without that parser, a runner that cannot load here: no check
        return
    flags, strays = [], []
    for position, arg in enumerate(unknown):
        if arg.startswith("-"):
            flags.append(arg.partition("=")[0])
        elif not (position and unknown[position - 1].startswith("-") and "=" not in unknown[position - 1]):
            strays.append(arg)  # not the value of an unknown flag before it: a word the command takes nowhere
    if strays:
        raise ValueError(f"unexpected argument(s) {', '.join(repr(arg) for arg in strays)}: every input is given by "
                         f"a flag (--input, --output ...)")
    if not flags:
        return
    known = [flag for action in parser._actions for flag in action.option_strings]
    hints = [f"{flag} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(flag, known, 1, 0.75))
             else flag for flag in flags]
    raise ValueError(f"unknown option(s): {', '.join(hints)}; `--help` lists ours, and any of Beam's pipeline "
                     f"options is taken too")


def check_local_devices(settings: dict, options: PipelineOptions) -> None:
    """A GPU asked for (`encoder_options.device: cuda`, `knn.gpu: true`) where the workers are this machine's
    (the DirectRunner) and torch sees none: an error before any stage, not once the embed or pairs stage starts.
    A remote runner's workers have their own devices, which the launching machine cannot see."""
    from apache_beam.options.pipeline_options import StandardOptions

    if options.view_as(StandardOptions).runner not in DIRECT_RUNNERS:
        return
    device = str((settings.get("encoder_options") or {}).get("device") or "auto")
    asked = [what for what, wanted in (("encoder_options.device: cuda", device.startswith("cuda")),
                                       ("knn.gpu: true", (settings.get("knn") or {}).get("gpu") is True)) if wanted]
    if not asked:
        return
    import torch

    if not torch.cuda.is_available():
        raise ValueError(f"{' and '.join(asked)}, but torch sees no GPU on this machine, where the DirectRunner's "
                         "workers run: leave it auto (the CPU here)")


def check_local_workers(options: PipelineOptions) -> None:
    """Refuse the DirectRunner's multi-process mode: in Beam 2.77 it now and then loses part of a stage's output on
    its way to a grouping step (measured: docs/pipeline.md, Local runs), and dedup and the margin join cannot tell.
    A bitext silently mined from part of the crawl is worse than a slower run."""
    from apache_beam.options.pipeline_options import DirectOptions, StandardOptions

    if options.view_as(StandardOptions).runner not in (None, "DirectRunner", "direct"):
        return
    direct = options.view_as(DirectOptions)
    if direct.direct_running_mode == "multi_processing" and direct.direct_num_workers != 1:
        raise ValueError("--direct_running_mode multi_processing with more than one worker: Beam 2.77's "
                         "multi-process DirectRunner loses part of a stage's output now and then (docs/pipeline.md, "
                         "Local runs); run locally with one worker (the default) or on a cluster runner")
