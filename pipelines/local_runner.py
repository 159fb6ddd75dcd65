"""The local runner: Beam's in-process FnApiRunner, and nothing fetched from the network.

    python -m pipelines.mine                       # --runner DirectRunner (the default) runs here

Beam 2.77's DirectRunner (`SwitchingDirectRunner`) first tries its Prism runner, which downloads a Go binary from
GitHub's releases at run time and runs the job in it; where the download fails (offline, behind a proxy) it falls
back to the in-process FnApiRunner. So the same command ran on one engine on a laptop with network and on another
in CI, executed a binary the project never pinned, and could wait on a firewall that drops packets. The jobs are
batch pipelines the FnApiRunner runs (what the DirectRunner itself chooses whenever Prism is not there): this
runner goes to it directly, with the provision info the DirectRunner gives it, so `--direct_num_workers` and
`--direct_running_mode` keep their meaning. `--runner PrismRunner` still asks for Prism by name.
"""

from __future__ import annotations

from apache_beam.runners.runner import PipelineRunner


class LocalRunner(PipelineRunner):
    """`--runner DirectRunner` for this project's jobs: the FnApiRunner, never a downloaded engine."""

    def run_pipeline(self, pipeline, options):
        from apache_beam.portability.api import beam_provision_api_pb2
        from apache_beam.runners.portability.fn_api_runner import fn_runner
        from apache_beam.runners.portability.portable_runner import JobServiceHandle

        encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
        provision = fn_runner.ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded))
        return fn_runner.FnApiRunner(provision_info=provision).run_pipeline(pipeline, options)
