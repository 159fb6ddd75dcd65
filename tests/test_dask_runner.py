"""Beam on Dask (pipelines/dask_runner.py): what the DirectRunner gives, on worker processes of a LocalCluster,
with tagged outputs, side inputs, groupings and counters; a worker killed mid-stage costs a retry, not data."""

import json
import logging
import os
import platform
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import dask_runner
from pipelines.dask_runner import DaskRunner  # imports no dask itself: the skip below decides

pytest.importorskip("dask.distributed", reason="the dask extra is not installed (pip install -e '.[dask]')")
pytestmark = pytest.mark.usefixtures("dask_clusters_closed")


class SplitEvenOdd(beam.DoFn):
    def __init__(self):
        self.seen = Metrics.counter("test", "seen")

    def process(self, number, offsets):
        self.seen.inc()
        if number % 2:
            yield beam.pvalue.TaggedOutput("odd", number + offsets["odd"])
        else:
            yield number + offsets["even"]


def write_sorted(values, path):
    Path(path).write_text(json.dumps(sorted(values)))


def build(pipeline, folder):
    offsets = beam.pvalue.AsDict(pipeline | "Offsets" >> beam.Create([("odd", 1000), ("even", 0)]))
    split = (pipeline | "Numbers" >> beam.Create(range(60))
             | "Split" >> beam.ParDo(SplitEvenOdd(), offsets).with_outputs("odd", main="even"))
    sums = ((split.even, split.odd) | beam.Flatten() | beam.Map(lambda n: (n % 7, n))
            | beam.CombinePerKey(sum))
    groups = split.odd | "Key" >> beam.Map(lambda n: (n % 3, n)) | beam.GroupByKey() | beam.MapTuple(
        lambda key, values: (key, sorted(values)))
    for name, collection in (("sums", sums), ("groups", groups), ("even", split.even)):
        (collection | f"All{name}" >> beam.combiners.ToList()
         | f"Write{name}" >> beam.Map(write_sorted, os.path.join(folder, f"{name}.json")))


def run(runner, folder) -> dict:
    os.makedirs(folder, exist_ok=True)
    pipeline = beam.Pipeline(runner=runner, options=PipelineOptions([]))
    build(pipeline, str(folder))
    result = pipeline.run()
    result.wait_until_finish()
    counters = {r.key.metric.name: r.committed for r in result.metrics().query()["counters"]}
    return {"files": {name: (folder / name).read_text() for name in sorted(os.listdir(folder))},
            "counters": counters}


def test_tagged_outputs_side_inputs_groups_and_counters_are_the_direct_runners(tmp_path):
    direct = run(None, tmp_path / "direct")
    dask = run(DaskRunner(), tmp_path / "dask")
    assert dask == direct
    assert direct["counters"] == {"seen": 60}
    assert json.loads(direct["files"]["even.json"]) == list(range(0, 60, 2))  # the main output alone


class DieOnce(beam.DoFn):
    """Kills its worker process the first time it sees 13 (a marker file says it did)."""

    def __init__(self, marker):
        self.marker = marker
        self.seen = Metrics.counter("test", "seen")

    def process(self, number):
        if number == 13 and not os.path.exists(self.marker):
            Path(self.marker).write_text("killed")
            os._exit(1)
        self.seen.inc()
        yield number


def test_a_worker_killed_mid_stage_is_retried_and_counted_once(tmp_path):
    marker, out = tmp_path / "killed", tmp_path / "out.json"
    pipeline = beam.Pipeline(runner=DaskRunner(), options=PipelineOptions([]))
    (pipeline | beam.Create(range(40)) | beam.ParDo(DieOnce(str(marker))) | beam.combiners.ToList()
     | beam.Map(write_sorted, str(out)))
    result = pipeline.run()
    assert marker.exists()  # a worker did die
    assert json.loads(out.read_text()) == list(range(40))
    assert {r.key.metric.name: r.committed for r in result.metrics().query()["counters"]} == {"seen": 40}


def run_toy(*flags):
    pipeline = beam.Pipeline(runner=DaskRunner(), options=PipelineOptions(list(flags)))
    pipeline | beam.Create(range(4)) | beam.Map(lambda n: n + 1)
    return pipeline.run()


def test_a_cluster_without_workers_stops_the_job_with_an_error_instead_of_waiting(monkeypatch):
    monkeypatch.setattr(dask_runner, "WATCH_S", 0.2)
    monkeypatch.setattr(dask_runner, "NO_WORKERS_S", 1)
    with pytest.raises(RuntimeError, match="has had no worker for"):
        run_toy("--dask_workers=0")


def test_workers_all_paused_at_their_memory_limit_stop_the_job_with_an_error(monkeypatch):
    from distributed.core import Status

    monkeypatch.setattr(dask_runner, "WATCH_S", 0.2)
    monkeypatch.setattr(dask_runner, "ALL_PAUSED_S", 1)
    options = PipelineOptions(["--dask_workers=1", "--dask_worker_memory=0"])  # no limit: nothing resumes it
    # what Dask does to a worker at 80% of its memory limit
    dask_runner.client_for(options).run(lambda dask_worker: setattr(dask_worker, "status", Status.paused))
    with pytest.raises(RuntimeError, match=r"sat paused .*\(--dask_worker_memory\)"):
        run_toy("--dask_workers=1", "--dask_worker_memory=0")


class Slow(beam.DoFn):
    def process(self, number):
        import time

        time.sleep(1.5)
        yield number


def test_progress_names_the_pardos_that_are_running(monkeypatch, caplog):
    """Tasks are named by their ParDo's label, so the progress log (and Dask's dashboard) says what is running;
    before, every ParDo's tasks were "run_bundle". A label keeps its dashes (it was cut at the first one)."""
    monkeypatch.setattr(dask_runner, "WATCH_S", 0.5)
    pipeline = beam.Pipeline(runner=DaskRunner(), options=PipelineOptions(["--dask_workers=1"]))
    pipeline | beam.Create(range(2)) | "Slow-Step" >> beam.ParDo(Slow())
    with caplog.at_level("INFO", logger="pipelines.dask_runner"):
        pipeline.run()
    progress = [r.getMessage() for r in caplog.records if "tasks done" in r.getMessage()]
    assert any("running (Slow-Step " in line for line in progress), progress
    assert not any("run_bundle" in line for line in progress), progress


def test_closing_the_clients_closes_the_local_clusters_they_started():
    """Closing a client leaves a LocalCluster handed to it running: CI's suite held five clusters' workers."""
    cluster = dask_runner.client_for(PipelineOptions(["--dask_workers=1"])).cluster
    dask_runner.close_clients()
    assert cluster.status.name == "closed"


def test_the_log_says_where_the_clusters_dashboard_is(caplog):
    """Dask serves the dashboard on another port when 8787 is taken (another cluster on the machine)."""
    dask_runner.close_clients()  # a client kept from an earlier test would not be logged again
    with caplog.at_level(logging.INFO, logger="pipelines.dask_runner"):
        client = dask_runner.client_for(PipelineOptions(["--dask_workers=1"]))
    try:
        assert f"dashboard {client.dashboard_link}" in caplog.text and client.dashboard_link.startswith("http")
    finally:
        dask_runner.close_clients()


def distributed_log_level() -> int:
    return logging.getLogger("distributed").getEffectiveLevel()


def test_a_local_clusters_start_up_lines_stay_out_of_the_log_unless_verbose(monkeypatch):
    """The scheduler's and each worker's INFO lines (forty for two workers) hid the job's own log: without
    `--verbose` (other libraries at WARNING) distributed logs at WARNING here and in the workers' processes."""
    monkeypatch.delenv("DASK_LOGGING__DISTRIBUTED", raising=False)  # restored after: quiet_dask sets it
    monkeypatch.setattr(logging.getLogger("distributed"), "level", logging.getLogger("distributed").level)
    for root_level, expected in ((logging.INFO, logging.INFO), (logging.WARNING, logging.WARNING)):
        monkeypatch.setattr(logging.getLogger(), "level", root_level)  # setup_logging with and without --verbose
        dask_runner.close_clients()
        client = dask_runner.client_for(PipelineOptions(["--dask_workers=1"]))
        try:
            assert set(client.run(distributed_log_level).values()) == {expected}
            assert expected == logging.INFO or distributed_log_level() == logging.WARNING
        finally:
            dask_runner.close_clients()


def profiling(dask_worker) -> bool:
    return "profile" in dask_worker.periodic_callbacks


def test_the_local_clusters_workers_run_without_dasks_profiler_unless_asked():
    """The profiler samples every running task's stack 100 times a second on each worker's event loop; off by
    default, on with --dask_worker_profile, in a worker the nanny restarts too."""
    client = dask_runner.client_for(PipelineOptions(["--dask_workers=1"]))
    assert list(client.run(profiling).values()) == [False]
    client.restart()
    assert list(client.run(profiling).values()) == [False]
    asked = dask_runner.client_for(PipelineOptions(["--dask_workers=1", "--dask_worker_profile"]))
    assert asked is not client
    assert list(asked.run(profiling).values()) == [True]


def ctrl_c_handler() -> str:
    import signal

    return str(signal.getsignal(signal.SIGINT))


def test_the_local_clusters_workers_leave_ctrl_c_to_the_job():
    """The terminal's Ctrl-C reached every worker, and each printed a KeyboardInterrupt traceback; the job itself
    stops cleanly and closes the cluster. A worker the nanny restarts inherits it too; the job keeps its own."""
    import signal

    own = signal.getsignal(signal.SIGINT)  # Python's handler, or ignored already where the tests run in the background
    client = dask_runner.client_for(PipelineOptions(["--dask_workers=1"]))
    ignored = str(signal.SIG_IGN)
    assert list(client.run(ctrl_c_handler).values()) == [ignored]
    client.restart()
    assert list(client.run(ctrl_c_handler).values()) == [ignored]
    assert signal.getsignal(signal.SIGINT) == own


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc" or not Path("/proc/self/statm").exists(),
                    reason="glibc's malloc_trim, and resident memory from Linux's /proc")
def test_a_bundle_hands_the_heap_memory_its_thread_freed_back_to_the_system():
    """Dask runs bundles in worker threads, whose glibc arenas keep freed memory: at 10^6 sentences the pairs
    stage's workers sat paused at 3.4 GB with 30 MB of data. What a bundle frees must leave the process."""
    import threading

    import numpy as np

    kept = []

    def bundle():
        arrays = [np.ones(256) for _ in range(200_000)]  # ~400 MB in 2 KB pieces from this thread's arena
        kept.extend(arrays[::64])  # a few survivors across the heap: it cannot shrink from the top

    worker = threading.Thread(target=bundle)
    worker.start()
    worker.join()
    before = resident_mb()
    dask_runner.release_freed_memory()
    assert before - resident_mb() > 200


class HoldsALockAfterSetup(beam.DoFn):
    def setup(self):
        import threading

        self.lock = threading.Lock()  # as a model or a client would: it does not pickle

    def process(self, element):
        yield element + 1


def test_a_bundle_leaves_the_pardo_spec_it_shares_with_other_workers_picklable():
    """Dask sends a ParDo's spec from worker to worker. Set up in place, its DoFn held a lock, the send failed and
    the job waited for ever (the Dask pipeline test's CI stall)."""
    import pickle

    from apache_beam.transforms.window import GlobalWindows

    spec = dask_runner.ParDoSpec("HoldsALock", HoldsALockAfterSetup(), (), {}, (), GlobalWindows())
    first = dask_runner.run_bundle([1, 2], spec)
    second = dask_runner.run_bundle([3], spec)
    assert first.outputs[None] == [2, 3] and second.outputs[None] == [4]
    assert not hasattr(spec.fn, "lock")
    pickle.loads(pickle.dumps(spec))  # what a worker does to send it on
    assert dask_runner.worker_dofn(spec) is dask_runner.worker_dofn(spec)  # set up once per worker, as Beam does


class YieldsBlocks(beam.DoFn):
    def process(self, element):
        import numpy as np

        from miner.knn_join import Neighbours

        yield element, Neighbours.none(np.arange(250_000, dtype=np.int64), 4)  # 14 MB of arrays


def test_a_bundles_result_weighs_what_its_blocks_hold_so_that_workers_spill_it():
    """Dask spills a worker's results by `dask.sizeof`, which saw 56 bytes for a bundle's result however many
    blocks it held: at 10^6 sentences a language the k-NN join's gigabytes were never spilled, and 4 GiB workers
    were paused, then killed, at their memory limit."""
    from apache_beam.transforms.window import GlobalWindows
    from dask.sizeof import sizeof

    result = dask_runner.run_bundle(range(10), dask_runner.ParDoSpec("Blocks", YieldsBlocks(), (), {}, (),
                                                                     GlobalWindows()))
    assert sizeof(result) >= 10 * 14_000_000
    assert sizeof(dask_runner.outputs_of(result, None)) >= 10 * 14_000_000  # a partition as the shuffle holds it


def grouped_element_size() -> int:
    """What `dask.sizeof` says of an element as Dask's shuffle holds it in a grouping: (key, WindowedValue)."""
    import numpy as np
    from apache_beam.transforms.window import GlobalWindow
    from apache_beam.utils.windowed_value import WindowedValue
    from dask.sizeof import sizeof

    return sizeof(("key", WindowedValue(np.zeros(4_000_000, dtype=np.uint8), 0, [GlobalWindow()])))


def test_workers_weigh_a_grouped_element_by_its_value_so_that_they_spill_it():
    """Beam's GroupByKey reifies windows, so a grouping's elements wrap their values in WindowedValues, which
    `dask.sizeof` saw as 186 bytes whatever they held: at 250,000 float16 sentences a language the shuffle held
    2.8 GB a worker while Dask counted 0.4 GB and spilled none of it. Every worker of the job's cluster counts the
    value, a worker started after the plugin (a restart) too."""
    client = dask_runner.client_for(PipelineOptions(["--dask_workers=1"]))
    assert all(size >= 4_000_000 for size in client.run(grouped_element_size).values())
    client.restart()
    assert all(size >= 4_000_000 for size in client.run(grouped_element_size).values())


def test_the_result_says_what_each_pardo_cost():
    """Per ParDo: tasks, elements in, CPU and wall seconds, summed over its partitions (logged at the job's end)."""
    costs = run_toy().costs
    [(label, (tasks, elements, cpu, wall))] = [(label, cost) for label, cost in costs.items() if "Map" in label]
    assert elements == 4 and tasks >= 1 and 0.0 <= cpu and 0.0 <= wall


def test_the_result_says_what_the_workers_used_outside_their_tasks_and_the_scheduler_used():
    """The workers' event loops (and the threads they hand work to) and the scheduler's loop, read before and
    after the job."""
    workers, scheduler = run_toy().loops
    assert workers > 0.0 and scheduler > 0.0


def busy(seconds: float) -> float:
    import time

    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
    return seconds


def test_a_tasks_own_cpu_is_not_counted_as_the_workers_outside_their_tasks():
    client = dask_runner.client_for(PipelineOptions(["--dask_workers=1"]))
    before = dask_runner.loops_cpu(client)
    assert client.submit(busy, 1.0, pure=False).result() == 1.0
    workers, _ = dask_runner.loops_spent(before, dask_runner.loops_cpu(client))
    assert 0.0 < workers < 0.5


def test_a_worker_started_again_during_the_job_is_left_out_of_the_loops_cpu():
    """A restarted worker's loop counts from zero again, and a new address has no reading before."""
    before, after = ({"a": 5.0, "b": 3.0}, 2.0), ({"a": 6.5, "b": 0.5, "c": 1.0}, 2.25)
    assert dask_runner.loops_spent(before, after) == (1.5, 0.25)
    assert dask_runner.loops_spent(None, after) is None


class MarkEach(beam.DoFn):
    """Leaves a file per element it processes: how many times the runner ran it."""

    def __init__(self, folder):
        self.folder = folder

    def process(self, number):
        Path(self.folder, f"{number}-{os.getpid()}-{os.urandom(4).hex()}").touch()
        if number % 2:
            yield beam.pvalue.TaggedOutput("odd", number)
        yield number


def test_a_pardo_whose_outputs_have_several_consumers_runs_once(tmp_path):
    """Optimised collection by collection, Dask fused a ParDo into each consumer of its outputs and counters
    and ran it two or three times."""
    marks, out = tmp_path / "marks", tmp_path / "out.json"
    marks.mkdir()
    pipeline = beam.Pipeline(runner=DaskRunner(), options=PipelineOptions([]))
    split = pipeline | beam.Create(range(12)) | beam.ParDo(MarkEach(str(marks))).with_outputs("odd", main="all")
    both = ((split.all | "All" >> beam.combiners.Count.Globally()),
            (split.odd | "Odd" >> beam.combiners.Count.Globally()),
            (split.all | "Sum" >> beam.CombineGlobally(sum)))
    both | beam.Flatten() | beam.combiners.ToList() | beam.Map(write_sorted, str(out))
    pipeline.run()
    assert json.loads(out.read_text()) == [6, 12, 66]
    assert sorted(int(name.split("-")[0]) for name in os.listdir(marks)) == list(range(12))


def test_partitions_follow_the_inputs_a_create_a_flatten_and_a_grouping():
    """A Create gives each shard its own task; a Flatten keeps its largest input's partition count, every element
    once; a grouping keeps its input's count, at least two a worker thread, at most --dask_shuffle_partitions (by
    default four a thread, up to 32 or two a thread). Before, Creates held several shards a task (over a GB of
    float16 rows at 10^6 sentences a language: workers killed), Flattens added counts up (25 -> 289 partitions and
    10,000 tasks a grouping), and groupings kept up to 32 of their input's (32^2 split tasks on two threads)."""
    import dask
    import dask.bag as db

    translator = dask_runner._Translator(parallelism=2)
    shards = translator._create(range(100))
    assert shards.npartitions == 100
    assert translator._create(range(5000)).npartitions <= dask_runner.MAX_PARTITIONS

    small, large = db.from_sequence(range(1000, 1003), npartitions=3), db.from_sequence(range(10), npartitions=5)
    flat = translator._flatten([small, shards, large])
    assert flat.npartitions == 100
    with dask.config.set(scheduler="sync"):
        assert sorted(flat.compute()) == sorted([*range(100), *range(1000, 1003), *range(10)])

        one = db.from_sequence([(n % 3, n) for n in range(12)], npartitions=1)
        grouped = translator._group(one)
        assert grouped.npartitions == 4  # two a worker thread
        assert sorted((key, sorted(values)) for key, values in grouped.compute()) == [
            (r, list(range(r, 12, 3))) for r in range(3)]
    keyed = shards.map(lambda n: (n % 7, n))
    grouped = translator._group(keyed)
    splits = [key for key in grouped.__dask_graph__() if isinstance(key, tuple) and str(key[0]).startswith(
        "shuffle-split")]
    assert grouped.npartitions == 8 and len(splits) == 8 * 8  # four a thread, not the input's 100 split 100 ways
    assert dask_runner._Translator(parallelism=16)._group(keyed).npartitions == dask_runner.SHUFFLE_PARTITIONS
    assert dask_runner._Translator(parallelism=12)._group(keyed).npartitions == 32  # four a thread, within 32
    assert dask_runner._Translator(parallelism=64)._group(keyed).npartitions == 128  # two a thread past 16
    raised = PipelineOptions(["--dask_shuffle_partitions=100"]).view_as(dask_runner.DaskShuffleOptions)
    hundred = dask_runner._Translator(2, raised.dask_shuffle_partitions)._group(keyed)
    assert hundred.npartitions == 100
    stages = {key[1] for key in hundred.__dask_graph__() if isinstance(key, tuple) and str(key[0]).startswith(
        "shuffle-join")}
    assert stages == {0, 1}  # one shuffle stage (0 is its input), not Dask's two past 32 partitions
    assert dask_runner._Translator(parallelism=64)._group(keyed).npartitions >= 128  # at least two a thread


def test_the_k_nn_join_in_waves_on_dask_writes_the_direct_runners_bytes(tmp_path):
    """knn.wave_bytes far below what the join ships: on worker processes, each wave's groups sent once the wave
    before is compared (a side input every task of the next wave waits for), and the bitext of one wave; there
    the one-to-one pass goes in rounds across the workers too (mining.one_to_one_rows), to the same pairs."""
    from pipelines import layout, storage
    from pipelines.mine import run as run_job
    from tests.test_pipeline_pairs import settings_for, write_shards

    found = []
    for runner, wave_bytes in (([], 0), (["--runner=DaskRunner", "--dask_workers=2"], 1)):
        output = str(tmp_path / f"out-{wave_bytes}")
        write_shards(output, 2)
        settings = settings_for(output, "max")
        settings["knn"] = {"index": "IVF4,Flat", "nprobe": 2, "max_list_rows": 8, "wave_bytes": wave_bytes}
        if wave_bytes:
            settings["mining"] = {**settings["mining"], "one_to_one_rows": 1}
        report = run_job(settings, PipelineOptions(runner), ["embed", "pairs"])
        found.append((storage.read_bytes(layout.bitext_files(output, "deu_Latn", "eng_Latn")[0]),
                      report["counters"]["pairs"]["pairs"]))
    (one_wave, counted), (waves, counted_in_waves) = found
    assert waves == one_wave
    assert counted_in_waves["query_rows_sent"] == counted["query_rows_sent"]
    assert counted_in_waves["embedding_bytes_read"] > counted["embedding_bytes_read"]  # a wave reads its shards


@pytest.mark.parametrize(("flags", "local"), [
    ([], True),  # the job's own LocalCluster
    (["--dask_client_address", "tcp://127.0.0.1:8786"], True),  # `dask scheduler` started on this machine
    (["--dask_client_address", "localhost:8786"], True),
    (["--dask_client_address", "tls://[::1]:8786"], True),
    (["--dask_client_address", "tcp://scheduler:8786"], False),
    (["--dask_client_address", "tcp://10.0.0.5:8786"], False),
    (["--dask_scheduler_file", "/shared/scheduler.json"], False),
])
def test_a_scheduler_on_this_machine_shares_its_disk(flags, local):
    """A scheduler at a loopback address reaches only this machine's workers: local paths work there (they were
    refused as if the cluster were remote)."""
    from pipelines.options import runs_locally

    assert runs_locally(PipelineOptions(["--runner", "DaskRunner", *flags])) is local
