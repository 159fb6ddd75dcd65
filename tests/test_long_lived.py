"""pipelines.long_lived: the process's objects frozen once, before the first stage runs."""

from __future__ import annotations

import gc

from pipelines import long_lived


def test_the_objects_alive_at_the_first_call_are_frozen_and_later_calls_freeze_nothing(monkeypatch):
    monkeypatch.setattr(long_lived, "_frozen", False)
    gc.unfreeze()  # an earlier test's stage may have frozen this process already
    long_lived.freeze_once()
    frozen = gc.get_freeze_count()
    assert frozen > 1000  # pytest's and the project's modules at least
    later = [[n] for n in range(1000)]  # tracked objects made after: a later stage's, a later test's
    long_lived.freeze_once()
    assert gc.get_freeze_count() == frozen and len(later) == 1000


def test_a_stage_run_freezes_the_process(tmp_path, monkeypatch):
    """job.run_stage freezes before it runs the pipeline (the modules its build imported among what is frozen)."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines import job

    monkeypatch.setattr(long_lived, "_frozen", False)
    gc.unfreeze()

    def build(pipeline):
        return pipeline | beam.Create([{"path": "x"}])

    build.manifest = lambda entries: {"stage": "extract", "entries": entries}
    job.run_stage("extract", build, {"output": str(tmp_path)}, PipelineOptions([]), depends={})
    assert long_lived._frozen and gc.get_freeze_count() > 1000
