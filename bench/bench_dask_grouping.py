"""What one grouping costs on a Dask LocalCluster by its partition count: the CPU of Dask's own work, with almost no
data (docs/benchmarks.md, "Fewer partitions a grouping", issue 23).

    python bench/bench_dask_grouping.py --partitions 8 32 64 --repeats 2

pipelines/dask_runner.py groups as Dask's task shuffle does, in one stage: each of p input partitions is split p
ways, so a grouping is p^2 split tasks beside a few per partition. Here 12,800 small (key, value) pairs in 64
partitions are repartitioned to p and grouped by key (997 keys), on two worker processes of one thread each, as
the runner's LocalCluster runs them; the CPU is that of the whole process tree (this process holds the scheduler),
so it counts the scheduler's and the workers' work for every task. The CPU per task divides it by the graph's
tasks.
"""

from __future__ import annotations

import argparse
import time

from bench_pairs_scaling import ProcessTree


def grouping(partitions: int):
    import dask.bag as db

    pairs = db.from_sequence(range(64 * 200), npartitions=64).map(lambda n: (n % 997, n))
    if partitions != pairs.npartitions:
        pairs = pairs.repartition(partitions)
    grouped = pairs.groupby(lambda pair: pair[0], shuffle="tasks", max_branch=partitions)
    return grouped.map(lambda pair: len(pair[1])).map_partitions(lambda part: [sum(part)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, nargs="+", default=[8, 32, 64],
                        help="partition counts to group into, one run each (default 8 32 64)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each partition count (default 2)")
    args = parser.parse_args()
    from dask import distributed

    with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, memory_limit="4GiB") as cluster, \
            distributed.Client(cluster) as client:
        tree = ProcessTree()  # this process (the scheduler) and the workers
        time.sleep(3)  # the workers started
        print("partitions  tasks  CPU-s  CPU-ms a task")
        for _ in range(args.repeats):
            for partitions in args.partitions:
                collection = grouping(partitions)
                tasks = len(dict(collection.__dask_graph__()))
                cpu = tree.cpu()
                counted = sum(client.compute(collection, optimize_graph=True).result())
                cpu = tree.cpu() - cpu
                assert counted == 64 * 200
                print(f"{partitions:10d} {tasks:6d} {cpu:6.2f} {1000 * cpu / tasks:13.2f}")


if __name__ == "__main__":
    main()
