"""Apache Beam jobs: thin wiring of the text stages, the encoders and the miner, from crawl files to bitext.

    python -m pipelines.mine            # the main job: extract -> embed -> pairs (docs/pipeline.md)

    mine.py      the job: runs the stages in order, skips finished ones, writes the report
    extract.py   crawl files -> unique sentences per language (Parquet shards)       wraps pipelines/text/
    embed.py     sentence shards -> vectors (RunInference with our encoders)        wraps encoders/
    pairs/       vectors -> index, k-NN both ways, margins, selection -> bitext      wraps miner/
    options.py   the command-line options (PipelineOptions subclasses)
    local_runner.py, dask_runner.py   the DirectRunner as Beam's in-process FnApiRunner; Beam on dask.distributed
    dofn_inspection.py   Beam's inspection of each DoFn made once, not seven times (a third of a small stage)
    settings.py  the YAML settings and overrides;  layout.py: where outputs go;  storage.py: FileSystems I/O
    report.py    report.json and the printed summary
    text/        the text stages as plain Python (no Beam)

`miner`, `encoders` and `training` never import Beam; this package calls them.
"""

import logging


class _NoBigQueryNotice(logging.Filter):
    """Importing Beam's GCP I/O warns, on the root logger, that BigQuery's client libraries are missing; this project
    never uses BigQuery, so a clean run would start with a warning about nothing. That one message is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "apitools not found" not in record.getMessage()


logging.getLogger().addFilter(_NoBigQueryNotice())
