"""Beam on Dask: the jobs on a `dask.distributed` cluster (worker processes that spill to disk), with counters.

    python -m pipelines.mine --runner DaskRunner                           # a LocalCluster, one process a core
    python -m pipelines.mine --runner DaskRunner --dask_client_address tcp://scheduler:8786   # a running cluster

Dask reaches Kubernetes, Slurm, PBS and YARN clusters through its deployment packages (dask-kubernetes,
dask-jobqueue, dask-yarn): start a scheduler there and give its address (docs/pipeline.md, Dask).

Why not Beam's own `apache_beam.runners.dask.DaskRunner` (Beam 2.77) as it is: on this project's jobs it loses or
repeats data and cannot report counts. Measured here:
  - on the pairs stage it delivered the list sizes (a side input) with every row counted twice: the stage's
    check stopped it ("the list sizes count 10000 db rows, 5000 expected");
  - a ParDo with tagged outputs hands every tag's elements to the consumers of its main output (500 even numbers
    of 1,000 counted as 1,000);
and from its code: it computes only the last transform's bag (a branch that ends elsewhere never runs); a side
input's bag is computed inside every task that reads it (`list(bag)`), its whole upstream graph each time; and
`metrics()` raises NotImplementedError, while the stages' manifests and reports are made of counters.
This runner keeps Beam's translation of the pipeline (its overrides: Create, Reshuffle, GroupByKey, Flatten) and
replaces how a ParDo runs: each partition gets its own receivers and its own metrics container; its outputs are
split by tag into one bag per output; its counters travel with its result (so a task Dask runs again after a
worker died counts once, as Beam's committed metrics do); a side input is materialised once, as one Dask value
every partition receives; every leaf of the graph is computed, once, in one call.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import itertools
import logging
import math
import os
import signal
import threading
import time
import weakref
from dataclasses import dataclass, field

from apache_beam import pvalue
from apache_beam.metrics.execution import MetricKey, MetricResult, MetricsContainer
from apache_beam.metrics.metric import MetricResults
from apache_beam.metrics.metricbase import MetricName
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pipeline import PipelineVisitor
from apache_beam.runners.runner import PipelineResult, PipelineRunner, PipelineState

from miner.console import ExtraMissingError
from pipelines import dofn_inspection, long_lived

log = logging.getLogger("pipelines.dask_runner")
# Partitions. A Create gives each element its own partition (the stages start from lists of shards, files or
# languages: each a task's worth of work, bounded in size), up to MAX_PARTITIONS, so that one task holds about a
# shard: at 10^6 sentences a language, Creates of at most 32 partitions put four shards' float16 rows, for up to 64
# lists, in one assignment task (over a GB) and 4 GiB workers were killed. A Flatten keeps the partition count of
# its largest input (adding the counts up, the k-NN join's groupings grew from 25 to 289 partitions and 10,000
# tasks each). A grouping keeps its input's count, at least MIN_PER_THREAD partitions a worker thread and at most
# `--dask_shuffle_partitions` (default MAX_PER_THREAD a thread, up to SHUFFLE_PARTITIONS or MIN_PER_THREAD a thread
# where that is more), shuffled in one stage (Dask's default shuffles past 32 partitions in two, each keeping
# copies of what it groups: at 10^6 float16 sentences a language, groupings of 100 partitions spilled 55 GB by a
# fifth of the stage; docs/benchmarks.md, "On Dask"). One stage splits each of p partitions p ways, p^2 tasks of
# ~2 ms of the scheduler's and workers' CPU each: keeping the input's 26 at 2.5 x 10^5 sentences a language cost
# 30% more of the stage's CPU than 8 on two threads (docs/benchmarks.md, "Fewer partitions a grouping").
MAX_PARTITIONS = 1024
SHUFFLE_PARTITIONS = 32
MIN_PER_THREAD, MAX_PER_THREAD = 2, 4
# A job waits on its tasks WATCH_S at a time, and between waits logs progress and looks at the cluster: a cluster
# whose workers are gone, or all paused at their memory limit (Dask pauses a worker at 80% and waits for memory
# that a model or a task's own arrays never give back), would otherwise keep the job waiting for ever.
WATCH_S = 30
NO_WORKERS_S = 180
ALL_PAUSED_S = 600

_clients: dict = {}
_malloc_trim = None  # glibc's, once looked up; False where there is none
_worker_dofns: dict = {}  # id(ParDoSpec) -> (a weak reference to it, this process's copy of its DoFn)
MISSING = "--runner DaskRunner needs dask's distributed scheduler: pip install -e '.[dask]'"


def dask_options(options):
    """Beam's DaskOptions (--dask_client_address, --dask_scheduler_file ...) of `options`."""
    try:
        from apache_beam.runners.dask.dask_runner import DaskOptions
    except ImportError as error:
        raise ExtraMissingError(MISSING) from error
    return options.view_as(DaskOptions)


def is_local_cluster(options) -> bool:
    """Workers that share this machine's disk: no scheduler named (the job starts a LocalCluster), or a scheduler
    at a loopback address (`dask scheduler` and `dask worker` started by hand on this machine: a scheduler there
    is reachable only from it). A scheduler file, or any other address, may stand for workers elsewhere."""
    named = dask_options(options)
    if named.scheduler_file:
        return False
    return not named.address or is_loopback(named.address)


def is_loopback(address: str) -> bool:
    """`tcp://127.0.0.1:8786`, `localhost:8786`, `tls://[::1]:8786`, `inproc://...`: an address of this machine."""
    import ipaddress
    from urllib.parse import urlsplit

    split = urlsplit(address if "://" in address else f"tcp://{address}")
    if split.scheme == "inproc":
        return True
    host = split.hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LocalClusterOptions(PipelineOptions):
    """The LocalCluster this runner starts when no scheduler is named (Beam's DaskOptions name a remote one)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument("--dask_workers", type=int, default=None,
                            help="worker processes of the LocalCluster (default: one a core)")
        parser.add_argument("--dask_worker_memory", default="auto",
                            help="memory limit of each worker, e.g. 4GiB: a worker spills what it holds to disk "
                            "past 70%% of it and pauses at 80%% (default: the machine's memory shared out)")
        parser.add_argument("--dask_worker_profile", action="store_true",
                            help="keep Dask's statistical profiler on in the workers (the dashboard's Profile "
                            "page; off by default: it costs the workers' event loops CPU)")


class DaskShuffleOptions(PipelineOptions):
    """How many partitions a grouping (GroupByKey) may have, on any Dask cluster."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument("--dask_shuffle_partitions", type=int, default=None,
                            help="most partitions of a grouping's output, which keeps its input's count, at least "
                            "two a worker thread (default: four a thread, up to 32 or two a thread where that is "
                            "more); raise it when a grouping's data, split this many ways, is more than a worker "
                            "holds")


@contextlib.contextmanager
def _workers_deaf_to_ctrl_c():
    """SIGINT ignored while the LocalCluster's processes start, so they inherit it: the terminal's Ctrl-C then
    reaches this process alone, which stops the job cleanly and closes the cluster, where each worker printed a
    KeyboardInterrupt traceback of its own (a worker started again later ignores it through
    _deaf_to_ctrl_c_plugin)."""
    if threading.current_thread() is not threading.main_thread():  # signal handlers are the main thread's
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _deaf_to_ctrl_c_plugin(distributed):
    """A worker plugin that ignores SIGINT in each worker of this machine's LocalCluster, restarted ones too."""

    class DeafToCtrlC(distributed.WorkerPlugin):
        name = "cmlm-deaf-to-ctrl-c"

        def setup(self, worker):
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)

    return DeafToCtrlC()


def close_quietly(client) -> None:
    """Close a client (and the LocalCluster it started) at exit without its info lines: by then a test runner
    may have closed the stream its logging handler writes to."""
    logging.getLogger("distributed").setLevel(logging.WARNING)
    cluster = client.cluster  # a LocalCluster handed to the client: closing the client leaves it running
    client.close()
    if cluster is not None:
        cluster.close()


def quiet_dask() -> None:
    """Dask's INFO lines (the scheduler's and every worker's start-up: forty lines for two workers) out of a job's
    log, unless other libraries log at INFO (`--verbose`, miner.console.setup_logging): our own lines say what a
    user needs (the cluster, its dashboard, what each ParDo cost). The workers' processes read the variable when
    they import distributed; a value the user set stays."""
    if logging.getLogger().getEffectiveLevel() > logging.INFO:
        logging.getLogger("distributed").setLevel(logging.WARNING)
        os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")


def close_clients() -> None:
    """Close every client this process opened (and the LocalClusters they started)."""
    while _clients:
        close_quietly(_clients.popitem()[1])


def client_for(options):
    """One client per cluster for this process (every stage of a job runs on the same LocalCluster); closed at
    exit."""
    try:
        from dask import distributed
    except ImportError as error:
        raise ExtraMissingError(MISSING) from error
    named, local = dask_options(options), options.view_as(LocalClusterOptions)
    key = (named.address, named.scheduler_file, local.dask_workers, local.dask_worker_memory,
           local.dask_worker_profile)
    if key not in _clients:
        if named.address or named.scheduler_file:
            _clients[key] = distributed.Client(address=named.address, scheduler_file=named.scheduler_file)
        else:
            # the workers' statistical profiler (the dashboard's Profile page) walks every running task's stack
            # 100 times a second on the worker's event loop: a fifth of the loops' CPU in the pairs stage here
            # (docs/benchmarks.md, "Where the CPU outside the ParDos goes"). In the workers' spec, so that a
            # worker started again (a restart, a lost worker) gets it too; set last in the worker process, over
            # the nanny's config
            quiet_dask()
            with _workers_deaf_to_ctrl_c():
                _clients[key] = distributed.Client(distributed.LocalCluster(
                    processes=True, threads_per_worker=1, n_workers=local.dask_workers,
                    memory_limit=local.dask_worker_memory,
                    config={"distributed.worker.profile.enabled": local.dask_worker_profile}))
            # a worker the nanny (in this process) starts again later does not inherit the ignored signal: each
            # worker ignores it itself as it starts
            _clients[key].register_plugin(_deaf_to_ctrl_c_plugin(distributed))
            # its scheduler runs in this process, where the progress check (run_on_scheduler) would log "Run
            # out-of-band function" at every look; its workers are other processes, with loggers of their own
            logging.getLogger("distributed.worker").setLevel(logging.WARNING)
        from pipelines import dask_sizes

        dask_sizes.register()
        _clients[key].register_plugin(dask_sizes.BeamValueSizes())  # the workers count a grouping's elements
        atexit.register(close_quietly, _clients[key])
        log.info("Dask: %s; dashboard %s", _clients[key], dashboard(_clients[key]))
    return _clients[key]


def dashboard(client) -> str:
    """Where the cluster's dashboard is: Dask's usual port, 8787, may be held by another cluster on the machine,
    when Dask serves it elsewhere and says so only in a warning."""
    try:
        return client.dashboard_link or "not served"
    except KeyError:  # a scheduler that serves none (no bokeh where it runs)
        return "not served"


def cluster_memory(options) -> int:
    """The memory limits of the cluster's workers together, in bytes (0 where a worker has none)."""
    workers = client_for(options).scheduler_info(n_workers=-1)["workers"].values()
    limits = [worker.get("memory_limit") or 0 for worker in workers]
    return 0 if not limits or 0 in limits else sum(limits)


@dataclass
class BundleResult:
    """What one partition of a ParDo gives: its outputs by tag (None: the main output), its counters, and what it
    cost (the ParDo's label -> [elements in, CPU seconds of the task's thread, wall seconds])."""

    outputs: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)
    cost: dict = field(default_factory=dict)

    def __sizeof__(self) -> int:
        """Its outputs' bytes, as Dask counts them (`dask.sizeof`: a long list by a sample of its items; blocks
        of arrays by their `__sizeof__`, miner.sizes): what a worker holds for it, so that it spills it in time."""
        from dask.sizeof import sizeof

        return object.__sizeof__(self) + sizeof(self.outputs)


def receivers_into(result: BundleResult) -> dict:
    """Tag -> a Beam Receiver appending that tag's values to `result`, made on first use."""
    from apache_beam.runners.common import Receiver

    class ListReceiver(Receiver):
        def __init__(self, outputs: list):
            self.outputs = outputs

        def receive(self, windowed_value):
            self.outputs.append(windowed_value.value)

    class Receivers(dict):
        def __missing__(self, tag):
            self[tag] = ListReceiver(result.outputs.setdefault(tag, []))
            return self[tag]

    return Receivers()


@dataclass(frozen=True)
class ParDoSpec:
    """What a task needs of a ParDo, without the pipeline graph its transform object points into."""

    label: str
    fn: object
    args: tuple
    kwargs: dict
    side_views: tuple  # (view type, view options) per side input, in order
    window_fn: object

    @classmethod
    def of(cls, node) -> ParDoSpec:
        transform = node.transform
        views = tuple((type(view), view._view_options()) for view in transform.side_inputs)
        window_fn = next(iter(node.main_inputs.values())).windowing.windowfn
        return cls(node.full_label, transform.fn, tuple(transform.args), dict(transform.kwargs), views, window_fn)


def run_bundle(items, spec: ParDoSpec, *side_values) -> BundleResult:
    """One partition through a ParDo's DoFn, with receivers and a metrics container of its own."""
    from apache_beam.runners.common import DoFnContext, DoFnInvoker, DoFnSignature, _OutputHandler
    from apache_beam.runners.dask.transform_evaluator import get_windowed_value
    from apache_beam.runners.worker import statesampler
    from apache_beam.transforms import sideinputs
    from apache_beam.transforms.core import DoFn
    from apache_beam.utils.counters import CounterFactory

    result = BundleResult()
    result.outputs[None] = []  # the main output exists even when empty
    receivers = receivers_into(result)
    window_fn, label = spec.window_fn, spec.label
    side_inputs = [sideinputs.SideInputMap(view_type, options, [get_windowed_value(v, window_fn) for v in values])
                   for (view_type, options), values in zip(spec.side_views, side_values)]
    handler = _OutputHandler(window_fn=window_fn, main_receivers=receivers[None], tagged_receivers=receivers,
                             per_element_output_counter=None, output_batch_converter=None,
                             process_yields_batches=False, process_batch_yields_elements=False)
    invoker = DoFnInvoker.create_invoker(DoFnSignature(worker_dofn(spec)), handler,
                                         context=DoFnContext(label, state=None), side_inputs=side_inputs,
                                         input_args=list(spec.args), input_kwargs=spec.kwargs, user_state_context=None,
                                         bundle_finalizer_param=DoFn.BundleFinalizerParam())
    sampler = statesampler.StateSampler("", CounterFactory())
    statesampler.set_current_tracker(sampler)
    container = MetricsContainer(label)
    elements, cpu, wall = 0, time.thread_time(), time.perf_counter()
    try:
        with sampler.scoped_state(label, "process", metrics_container=container):
            invoker.invoke_setup()
            invoker.invoke_start_bundle()
            for item in items:
                invoker.invoke_process(get_windowed_value(item, window_fn))
                elements += 1
            invoker.invoke_finish_bundle()
            invoker.invoke_teardown()
    finally:
        statesampler.set_current_tracker(None)
        release_freed_memory()
    result.counters = {(key.metric.namespace, key.metric.name): value
                       for key, value in container.get_cumulative().counters.items()}
    result.cost = {label: [elements, time.thread_time() - cpu, time.perf_counter() - wall]}
    return result


def release_freed_memory() -> None:
    """Hand the heap memory a bundle freed back to the operating system (glibc's malloc_trim; nothing elsewhere).

    glibc keeps what a thread's arena freed, and Dask runs tasks in worker threads: at 10^6 sentences a language
    both 4 GiB workers of the pairs stage sat paused at 3.4 GB resident with 25-33 MB of data that Dask held;
    malloc_trim(0) gave back 2.4-2.6 GB each (Dask's own MALLOC_TRIM_THRESHOLD_ setting reaches only the main
    arena). A trim costs milliseconds, a bundle seconds."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            import ctypes

            _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


def worker_dofn(spec: ParDoSpec):
    """This worker process's own copy of the spec's DoFn, made once and reused by its bundles (as Beam's workers
    reuse a DoFn after its setup).

    Setup must never run on the spec's DoFn itself: the spec is one Dask value that a worker sends on to the
    others, and a DoFn after setup can hold what does not pickle (a lock, a model). Dask then failed to send it
    ("cannot pickle '_thread.lock' object"), the task that needed it waited for ever and the job hung: the CI
    stall in the Dask pipeline test, caught here with the stacks of its workers."""
    dofn_inspection.install()  # in this worker process too: DoFnSignature inspects the DoFn at every task
    long_lived.freeze_once()  # the worker's modules left out of full collections, as in the launching process
    held = _worker_dofns.get(id(spec))
    if held is None or held[0]() is not spec:
        from apache_beam.internal import pickler

        key = id(spec)  # the entry goes with the spec: a finished job's DoFns (models...) are not kept
        held = (weakref.ref(spec, lambda _: _worker_dofns.pop(key, None)), pickler.loads(pickler.dumps(spec.fn)))
        _worker_dofns[key] = held
    return held[1]


def outputs_of(result: BundleResult, tag) -> list:
    return result.outputs.get(tag, [])


def counters_of(result: BundleResult) -> list:
    return [(result.counters, result.cost)]


def everything(*partitions) -> list:
    return list(itertools.chain.from_iterable(partitions))


def count(partition) -> list:
    return [sum(1 for _ in partition)]


class _Translator(PipelineVisitor):
    """Each transform's outputs as Dask bags, from its inputs' bags (Beam's overrides have already turned the
    pipeline into Create, ParDo, GroupByKeyOnly, Flatten and pass-through composites)."""

    def __init__(self, parallelism: int, shuffle_partitions: int | None = None):
        self.parallelism = parallelism
        self.shuffle_partitions = shuffle_partitions or min(parallelism * MAX_PER_THREAD,
                                                            max(SHUFFLE_PARTITIONS, parallelism * MIN_PER_THREAD))
        self.bags: dict = {}  # PCollection -> bag
        self.consumed: set = set()
        self.counters: list = []  # bags of per-partition counter dicts

    def visit_transform(self, node) -> None:
        from apache_beam import ParDo
        from apache_beam.runners.dask.overrides import (
            _Create,
            _Flatten,
            _GroupAlsoByWindow,
            _GroupByKeyOnly,
            _Reshuffle,
        )

        transform = node.transform
        inputs = [self._bag(p) for p in node.inputs if not isinstance(p, pvalue.PBegin)]
        self.consumed.update(id(p) for p in node.inputs)
        self.consumed.update(id(view.pvalue) for view in node.side_inputs)
        if isinstance(transform, _Create):
            bags = {None: self._create(transform.values)}
        elif isinstance(transform, _GroupAlsoByWindow | _Reshuffle):  # global windows: the grouping did it all
            bags = {None: inputs[0]}
        elif type(transform) is ParDo:
            bags = self._par_do(node, inputs[0])
        elif isinstance(transform, _GroupByKeyOnly):
            bags = {None: self._group(inputs[0])}
        elif isinstance(transform, _Flatten):
            bags = {None: self._flatten(inputs) if inputs else self._create([])}
        else:
            raise NotImplementedError(f"DaskRunner: {node.full_label} ({type(transform).__name__}) has no "
                                      "translation")
        for tag, collection in node.outputs.items():
            if isinstance(collection, pvalue.PCollection):
                self.bags[id(collection)] = bags[tag] if tag in bags else bags[None]

    def _bag(self, collection):
        return self.bags[id(collection)]

    def _create(self, values):
        import dask.bag as db

        values = list(values)
        size = max(1, math.ceil(len(values) / MAX_PARTITIONS))
        return db.from_sequence(values, partition_size=size) if values else db.from_sequence([], npartitions=1)

    @staticmethod
    def _flatten(bags):
        """One bag of as many partitions as the largest input: partition j holds partition i of every input whose
        i % that count == j (so the largest input's partitions stay as they are, and a small input's spread)."""
        import dask.bag as db
        from dask.base import tokenize
        from dask.highlevelgraph import HighLevelGraph

        count = max(bag.npartitions for bag in bags)
        name = f"flatten-{tokenize(*bags)}"
        parts = [[] for _ in range(count)]
        for bag in bags:
            for i in range(bag.npartitions):
                parts[i % count].append((bag.name, i))
        graph = {(name, j): (everything, *keys) for j, keys in enumerate(parts)}
        return db.Bag(HighLevelGraph.from_collections(name, graph, dependencies=bags), name, count)

    def _group(self, bag):
        from apache_beam.runners.dask.transform_evaluator import defenestrate

        def value(item):
            key, values = item
            return key, [defenestrate(v[1]) for v in values]

        npartitions = min(max(bag.npartitions, self.parallelism * MIN_PER_THREAD), self.shuffle_partitions)
        if npartitions != bag.npartitions:
            bag = bag.repartition(npartitions)
        # one shuffle stage at any count (Dask's default, 32 branches, shuffles more partitions in two, each
        # keeping its own copies of the data: 55 GB spilled by a fifth of a 10^6 float16 run at 100 partitions)
        return bag.groupby(lambda item: item[0], shuffle="tasks", max_branch=npartitions).map(value)

    def _par_do(self, node, bag) -> dict:
        import dask

        # not optimised here: fused into the side input's own graph, the ParDos upstream of it ran again for it
        sides = [dask.delayed(everything)(*self._bag(view.pvalue).to_delayed(optimize_graph=False))
                 for view in node.side_inputs]
        spec = dask.delayed(ParDoSpec.of(node), pure=True)  # one copy in the graph, not one per task
        # tasks named by the ParDo's label (Dask's dashboard and the progress log show "Pairs/Compare", not run_bundle)
        label = node.full_label
        results = bag.map_partitions(run_bundle, spec, *sides, token=label)
        self.counters.append(results.map_partitions(counters_of, token=label))
        return {tag: results.map_partitions(outputs_of, tag, token=label) for tag in node.outputs}

    def leaves(self) -> list:
        """The bags nothing reads: every branch of the pipeline ends in one."""
        return [bag for key, bag in self.bags.items() if key not in self.consumed]


def gather_watching(client, futures, tasks: int) -> list:
    """`client.gather(futures)`, looking at the cluster every WATCH_S: progress logged (of about `tasks` tasks),
    and an error (the job's tasks cancelled) when it has had no worker for NO_WORKERS_S or all its workers paused
    for ALL_PAUSED_S."""
    from dask import distributed

    watch = ClusterWatch(tasks)
    while True:
        try:
            distributed.wait(futures, timeout=WATCH_S)
            return client.gather(futures)
        except distributed.TimeoutError:
            pass
        try:
            watch.check(client)
        except RuntimeError:
            client.cancel(futures)
            raise


class ClusterWatch:
    """Since when the cluster has had no worker, or only paused ones; raises once either lasts too long."""

    def __init__(self, tasks: int):
        self.tasks = tasks
        self.no_workers_since: float | None = None
        self.all_paused_since: float | None = None

    def check(self, client) -> None:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        states = [worker.get("status", "running") for worker in workers.values()]
        log.info("Dask: %d workers (%s); %s", len(workers), ", ".join(sorted(set(states))) or "none",
                 self._progress(client))
        now = time.monotonic()
        self.no_workers_since = (self.no_workers_since or now) if not workers else None
        self.all_paused_since = (self.all_paused_since or now) if workers and set(states) == {"paused"} else None
        if self.no_workers_since is not None and now - self.no_workers_since >= NO_WORKERS_S:
            raise RuntimeError(f"DaskRunner: the cluster at {client.scheduler.address} has had no worker for "
                               f"{now - self.no_workers_since:.0f} s; the job stops rather than wait for ever")
        if self.all_paused_since is not None and now - self.all_paused_since >= ALL_PAUSED_S:
            limits = ", ".join(f"{limit / 2**30:.1f} GiB" if limit else "none"
                               for limit in sorted({worker.get("memory_limit", 0) for worker in workers.values()}))
            raise RuntimeError(f"DaskRunner: every worker of {client.scheduler.address} has sat paused at 80% of its "
                               f"memory limit ({limits}) for "
                               f"{now - self.all_paused_since:.0f} s: give workers more memory "
                               "(--dask_worker_memory) or use fewer of them (--dask_workers)")

    def _progress(self, client) -> str:
        """'12,345 of ~51,000 tasks done, 2 running (Pairs/KnnJoin/Compare 2)', from the scheduler's tasks still
        to run; a running ParDo is named by its label (its tasks' name), Dask's own tasks by theirs (shuffle...)."""
        def unfinished(dask_scheduler=None):
            running = [task.prefix.name for task in dask_scheduler.tasks.values()  # the key without its token
                       if task.state == "processing"]
            return running, sum(1 for task in dask_scheduler.tasks.values()
                                if task.state in ("waiting", "queued", "no-worker"))

        try:
            running, waiting = client.run_on_scheduler(unfinished)
        except (OSError, RuntimeError, ValueError, AttributeError) as error:  # a courtesy: never stop a job for it
            return f"progress unknown ({type(error).__name__})"
        names = ", ".join(f"{name} {n}" for name, n in sorted(collections.Counter(running).items()))
        return (f"{max(self.tasks - len(running) - waiting, 0):,} of ~{self.tasks:,} tasks done, "
                f"{len(running):,} running" + (f" ({names})" if names else ""))


class DaskMetrics(MetricResults):
    """Counters summed over the partitions that succeeded (committed = attempted)."""

    def __init__(self, counters: dict):
        self._counters = counters

    def query(self, filter=None):
        results = [MetricResult(MetricKey("", MetricName(namespace, name)), value, value)
                   for (namespace, name), value in sorted(self._counters.items())
                   if self.matches(filter, MetricKey("", MetricName(namespace, name)))]
        return {self.COUNTERS: results, self.DISTRIBUTIONS: [], self.GAUGES: [], self.STRINGSETS: [],
                self.BOUNDED_TRIES: []}


class DaskResult(PipelineResult):
    """A finished job: its counters (`metrics()`), `costs`: per ParDo label, [partitions, elements in, CPU
    seconds, wall seconds] summed over its tasks (Dask's own grouping and transfer tasks are not in it: they are
    the rest of the job's time), and `loops`: the CPU seconds the workers used outside their tasks, together,
    and the scheduler's event loop, while it ran (None where they could not be read)."""

    def __init__(self, counters: dict, costs: dict | None = None, loops: tuple[float, float] | None = None):
        super().__init__(PipelineState.DONE)
        self._metrics = DaskMetrics(counters)
        self.costs = costs or {}
        self.loops = loops

    def wait_until_finish(self, duration=None):
        return self._state

    def metrics(self):
        return self._metrics


def task_count(collections) -> int:
    """The tasks of the collections' graph once optimised together, as the client computes it (for progress)."""
    from dask.base import collections_to_expr

    return len(collections_to_expr(collections, True).optimize().__dask_graph__())


def outside_tasks_cpu(dask_worker) -> float:
    """CPU seconds this worker process has used outside its task threads: its event loop (messages, transfers,
    the tasks' bookkeeping), the threads it hands large (de)serialisation to, spilling."""
    import psutil

    tasks = {thread.native_id for executor in dask_worker.executors.values()
             for thread in getattr(executor, "_threads", ())}
    process = psutil.Process()
    times = process.cpu_times()
    return times.user + times.system - sum(thread.user_time + thread.system_time for thread in process.threads()
                                           if thread.id in tasks)


def loops_cpu(client) -> tuple[dict, float] | None:
    """CPU seconds the workers have used outside their task threads (by address), and the scheduler's event loop
    (`run_on_scheduler` calls a function on it), so far. None where a worker cannot answer (one restarting)."""
    try:
        return client.run(outside_tasks_cpu), client.run_on_scheduler(time.thread_time)
    except Exception as error:  # a diagnostic: never what fails a job
        log.debug("Dask: the workers' and scheduler's own CPU not read: %s", error)
        return None


def loops_spent(before: tuple[dict, float] | None, after: tuple[dict, float] | None) -> tuple[float, float] | None:
    """(the workers outside their tasks, the scheduler's event loop) CPU seconds between two loops_cpu readings,
    over the workers in both (a restarted worker counts from zero again, and is left out)."""
    if before is None or after is None:
        return None
    workers = sum(max(after[0][name] - before[0][name], 0.0) for name in after[0].keys() & before[0].keys())
    return workers, max(after[1] - before[1], 0.0)


def log_costs(costs: dict, wall: float, threads: int, loops: tuple[float, float] | None = None,
              top: int = 8) -> None:
    """The ParDos that cost the most CPU, what the job's tasks outside them (Dask's groupings, transfers,
    spilling, waiting) took of the workers' time, and the CPU the workers used outside their tasks and the
    scheduler used: where to look when a job is slower than its size says."""
    if not costs:
        return
    spent = sum(cost[2] for cost in costs.values())
    log.info("Dask: %.1f s wall on %d worker threads; ParDos %.1f CPU-s, the rest of the workers' time %.1f s "
             "(groupings, transfers, spilling, idle)", wall, threads, spent, max(wall * threads - spent, 0.0))
    if loops is not None:
        log.info("Dask: the workers outside their tasks %.1f CPU-s (event loops: messages, transfers, "
                 "(de)serialising, spilling), the scheduler %.1f CPU-s", *loops)
    for label, (partitions, elements, cpu, task_wall) in sorted(costs.items(), key=lambda item: -item[1][2])[:top]:
        log.info("Dask:   %8.1f CPU-s %8.1f s  %6d tasks %10d elements  %s", cpu, task_wall, partitions, elements,
                 label)


class DaskRunner(PipelineRunner):
    """Runs a Beam pipeline on a dask.distributed cluster and waits for it (module docstring)."""

    def run_pipeline(self, pipeline, options):
        from apache_beam.runners.dask.overrides import dask_overrides

        client = client_for(options)
        threads = sum(client.nthreads().values()) or 1
        pipeline.replace_all(dask_overrides())
        translator = _Translator(threads, options.view_as(DaskShuffleOptions).dask_shuffle_partitions)
        pipeline.visit(translator)
        leaves = [bag.map_partitions(count) for bag in translator.leaves()]
        collections = [*leaves, *translator.counters]
        start, loops = time.perf_counter(), loops_cpu(client)  # read before the tasks start
        # One graph, optimised as a whole: `dask.optimize` fuses each collection's chains on its own, which copies
        # a ParDo's task into every collection that reads it (its counters, each output), so it ran several times
        futures = client.compute(collections, optimize_graph=True)
        tasks = task_count(collections)
        results = gather_watching(client, futures, tasks)
        loops = loops_spent(loops, loops_cpu(client))
        counters: dict = {}
        costs: dict = {}
        for partitions in results[len(leaves):]:
            for partition_counters, partition_cost in partitions:
                for key, value in partition_counters.items():
                    counters[key] = counters.get(key, 0) + value
                for label, (elements, cpu, wall) in partition_cost.items():
                    total = costs.setdefault(label, [0, 0, 0.0, 0.0])
                    total[0] += 1
                    total[1] += elements
                    total[2] += cpu
                    total[3] += wall
        log_costs(costs, time.perf_counter() - start, threads, loops)
        return DaskResult(counters, costs, loops)
