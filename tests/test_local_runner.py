"""The default runner: Beam's in-process FnApiRunner, never Prism's downloaded binary (pipelines/local_runner.py)."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions, TypeOptions
from apache_beam.runners.portability import prism_runner

from pipelines.dask_runner import DaskRunner
from pipelines.local_runner import LocalRunner
from pipelines.options import MineOptions, ViewCachingOptions, pipeline_runner


class PrismTried(BaseException):
    """Not an Exception: Beam's DirectRunner catches those from Prism and falls back, hiding the attempt."""


@pytest.mark.parametrize("flags", [[], ["--runner", "DirectRunner"], ["--runner=direct"]])
def test_the_direct_runner_is_the_local_runner(flags):
    assert isinstance(pipeline_runner(PipelineOptions(flags)), LocalRunner)


def test_other_runners_are_left_to_their_names():
    assert isinstance(pipeline_runner(PipelineOptions(["--runner", "DaskRunner"])), DaskRunner)
    assert pipeline_runner(PipelineOptions(["--runner", "PrismRunner"])) is None  # asked for by name: Beam's


def test_view_caching_options_make_each_view_once_and_share_its_values():
    options = PipelineOptions(["--runner=DirectRunner", "--output=out", "--no_pipeline_type_check"])
    cached = ViewCachingOptions.of(options)
    assert cached.view_as(TypeOptions) is cached.view_as(TypeOptions)
    assert cached.view_as(TypeOptions).pipeline_type_check is False
    assert cached.view_as(MineOptions).output == "out"
    cached.view_as(StandardOptions).runner = "DaskRunner"  # a value set through a view is the options' own
    assert options.view_as(StandardOptions).runner == "DaskRunner"
    assert cached.get_all_options()["runner"] == "DaskRunner"
    options.view_as(MineOptions).output = "elsewhere"  # and the other way round, on a view made before
    assert cached.view_as(MineOptions).output == "elsewhere"
    assert ViewCachingOptions.of(cached) is cached
    cached.view_as(StandardOptions).runner = "DirectRunner"
    with_pipeline = beam.Pipeline(runner=pipeline_runner(cached), options=cached)
    _ = with_pipeline | beam.Create([1, 2]) | beam.Map(count)
    with_pipeline.run().wait_until_finish()


def count(element):
    Metrics.counter("test", "seen").inc()
    return element * 2


def test_a_job_runs_in_process_without_prism_or_the_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise PrismTried("the local runner tried Prism or the network")

    monkeypatch.setattr(prism_runner.PrismRunner, "run_pipeline", refuse)
    monkeypatch.setattr("urllib.request.urlopen", refuse)
    options = PipelineOptions([])
    pipeline = beam.Pipeline(runner=pipeline_runner(options), options=options)
    _ = pipeline | beam.Create(range(10)) | beam.Map(count)
    result = pipeline.run()
    result.wait_until_finish()
    seen = result.metrics().query()["counters"]
    assert [c.committed for c in seen if c.key.metric.name == "seen"] == [10]
