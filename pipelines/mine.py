"""The main job: crawl files -> sentences -> vectors -> bitext, on any Beam runner.

    python -m pipelines.mine                                # the bundled sample, DirectRunner, ./output
    python -m pipelines.mine --config my.yaml --input 'crawl/*.warc.gz' --output out --set mining.threshold=1.4
    python -m pipelines.mine --runner DataflowRunner --project P --region us-central1 \\
        --temp_location gs://B/tmp --setup_file ./setup.py \\
        --input 'gs://B/crawl/*.warc.gz' --output gs://B/mined           # docs/pipeline.md

Three stages, each a Beam job of its own with a persisted output (pipelines/layout.py), each runnable alone with
`--stages`: extract (pipelines.extract), embed (pipelines.embed), pairs (pipelines.pairs). A stage whose output
is complete (its manifest exists) and was made from the same inputs, settings and models
(pipelines/dependencies.py) is not run again unless `--rerun`; one whose dependencies changed runs again, and so
does every stage after it (`--plan` says which would, and why, and runs nothing). A stage that runs first clears
its output folders, so a rerun never leaves duplicates, partial or stale files; but a run stopped midway leaves
what each stage had saved, and the same command again keeps it (extract's and embed's chunks, the pairs stage's
quantizers and list assignments), and a higher `mining.threshold` alone filters the finished bitext, no k-NN
join (docs/pipeline.md, Reruns).
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import job
from pipelines.embed import EmbedStage
from pipelines.extract import ExtractStage
from pipelines.pairs import PairsStage

BUILDERS = {"extract": ExtractStage, "embed": EmbedStage, "pairs": PairsStage}


def run(settings: dict, options: PipelineOptions, stages: list[str], rerun: bool = False) -> dict:
    """The main job over `stages` (the others' finished outputs are used); returns the run's report."""
    return job.run(settings, options, stages, BUILDERS, rerun)


def main(argv: list[str] | None = None) -> int:
    return job.main(argv, BUILDERS, prog="python -m pipelines.mine", description=__doc__)


if __name__ == "__main__":
    job.end_process(main())
