r"""How the pairs stage's cost grows with the crawl: k-NN as a join on the DirectRunner or on Dask worker
processes, per size, beside faiss's own big_batch_search (the same IVF join on one machine, k-NN only) and the
mining library on one machine (miner.mine: IVF k-NN, margins, selection) as peers.

    python bench/bench_pairs_scaling.py                                    # N = 10k, 40k, 160k, 640k per language
    python bench/bench_pairs_scaling.py --sizes 10000 40000                # -> bench/results/pairs_scaling.json
    python bench/bench_pairs_scaling.py --runner dask --sizes 10000 100000 1000000 --out bench/results/pairs_dask.json
    python bench/bench_pairs_scaling.py --sizes 10000 40000 --dtypes float16 binary \
        --out bench/results/pairs_binary.json
    python bench/bench_pairs_scaling.py --sizes 10000 100000 --dtypes binary binary-refined --no-peer

Two languages of N synthetic sentences each, d = 256, stored as float16 (the pipeline's default): vectors drawn
around N / 200 topic centres, and half of the target sentences planted translations of source sentences (the
source vector plus noise); the other half unrelated. Each size runs the whole pairs stage (`max` selection, no
threshold, k = 4) with nlist growing with N (about 160 rows a list) and a fixed nprobe, so the rows compared per
query stay the same at every size: what a user picks to keep cost linear. Reported per sentence (both languages):
CPU seconds of the run and its worker processes, embedding bytes read, vector bytes sent through the shuffle, and
the recall of the planted pairs in the mined bitext, and the peak resident memory of each worker process (sampled
every 0.2 s; with the DirectRunner the worker is this process). The peers, on this process (faiss's threads):
faiss.contrib.big_batch_search over an IVF index with the same nlist and nprobe, both directions (k-NN only), CPU
seconds per sentence and the planted pairs' recall@1; and miner.mine over the same vectors and settings (k-NN by
the join, margins and `max` selection on arrays): what the stage computes, on one machine without Beam. Clustered
synthetic vectors flatter IVF (docs/benchmarks.md): recall on real sentence vectors is bench_ivf_recall.py's job.
Sizes below --repeat-below (default 200,000: 10^4 and 10^5) run --repeats times (default 3) and report the run with
the median CPU, the peers' figures their own medians: the first size is what the others are compared with, and a few
seconds of CPU drift by a fifth from run to run on a shared machine.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import logging
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

import numpy as np
import pyarrow as pa
from bench_text import cpu_seconds
from planted_vectors import synthetic, unit

LANGUAGES = ("deu_Latn", "eng_Latn")
def write_inputs(output: str, vectors: dict[str, np.ndarray], shard_rows: int, dtype: str = "float16") -> None:
    """Sentence shards (texts s<row>) and float16 (or packed binary sign code) embedding shards with their
    manifests, as extract and embed write them."""
    from encoders import binary
    from pipelines import layout, manifests
    from pipelines.extract import sentences_manifest, write_sentence_shard
    from pipelines.text.records import Sentence

    entries, languages = [], {}
    for language, matrix in vectors.items():
        count = -(-len(matrix) // shard_rows)
        shards = []
        for shard in range(count):
            rows = range(shard * shard_rows, min(len(matrix), (shard + 1) * shard_rows))
            sentences = [Sentence(text=f"{language[:3]} sentence {i}", language=language, lid_score=1.0,
                                  url=f"https://example.org/{i}", document_id=f"doc-{i}", paragraph_index=0,
                                  sentence_index=0, position=i) for i in rows]
            entry = write_sentence_shard(output, language, shard, count, sentences)
            entries.append(entry)
            path = layout.embedding_shard(output, language, entry["path"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            block = matrix[rows.start : rows.stop]
            coded = dtype.startswith("binary")
            np.save(path, binary.pack(binary.sign_bits(block)) if coded else block.astype(np.float16))
            shards.append({"path": entry["path"], "rows": len(rows), "embeddings": path})
            if dtype == "binary-refined":  # embed.binary_refine: the turned float rows beside the codes
                shards[-1]["rotated"] = layout.rotated_shard(path)
                np.save(shards[-1]["rotated"], binary.rotated_rows(block).astype(np.float16))
        languages[language] = {"rows": len(matrix), "dim": matrix.shape[1], "shards": shards,
                               **({"binary": "sign"} if dtype.startswith("binary") else {})}
    manifests.write(output, "extract", sentences_manifest(entries))
    manifests.write(output, "embed", {"stage": "embed", "encoder": "synthetic", "languages": languages})


def spilled_to_disk() -> int:
    """The bytes the job's Dask workers hold on disk now, by the scheduler's last heartbeats (0 off Dask)."""
    from pipelines import dask_runner

    total = 0
    for client in list(dask_runner._clients.values()):
        with contextlib.suppress(Exception):  # a cluster starting or closing: no figure this time
            workers = client.scheduler_info(n_workers=-1)["workers"].values()
            total += sum(worker["metrics"].get("spilled_bytes", {}).get("disk", 0) for worker in workers)
    return total


def nlist_for(n: int, rows_per_list: int) -> int:
    return 1 << max(4, round(np.log2(n / rows_per_list)))


class ProcessTree:
    """CPU seconds of this process and every descendant (Dask's nannies and workers are grandchildren), the peak
    resident memory of each worker process, and on Dask the most the workers had spilled to disk together, sampled
    on a thread while a run lasts."""

    def __init__(self):
        import psutil

        self.me, self.peak, self.ended_cpu = psutil.Process(), {}, 0.0
        self._stop = None

    def processes(self):
        return [self.me, *self.me.children(recursive=True)]

    def cpu(self) -> float:
        import psutil

        total = 0.0
        for process in self.processes():
            with contextlib.suppress(psutil.Error):  # a process that ended between listing and reading
                times = process.cpu_times()
                total += times.user + times.system + times.children_user + times.children_system
        return total

    def workers(self):
        """The worker processes: Dask's (spawned by its nannies, which live in this process), else this one."""
        import psutil

        found = []
        for process in self.me.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "spawn_main" in " ".join(process.cmdline()):
                    found.append(process)
        return found or [self.me]

    def __enter__(self):
        import threading

        import psutil

        self.peak, self.spilled, self._stop = {}, 0, threading.Event()

        def sample():
            while not self._stop.wait(0.2):
                for process in self.workers():
                    with contextlib.suppress(psutil.Error):
                        self.peak[process.pid] = max(self.peak.get(process.pid, 0), process.memory_info().rss)
                self.spilled = max(self.spilled, spilled_to_disk())
        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run_stage(n: int, dim: int, seed: int, args, dtype: str = "float16") -> dict:
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines import layout, storage
    from pipelines.mine import run

    src, tgt, planted = synthetic(n, dim, seed)
    output = tempfile.mkdtemp(prefix=f"bench-pairs-{n}-")
    write_inputs(output, dict(zip(LANGUAGES, (src, tgt))), args.shard_rows, dtype)
    nlist = nlist_for(n, args.rows_per_list)
    settings = {"output": output, "encoder": "synthetic", "languages": list(LANGUAGES), "pairs": "pivot",
                "pivot": "eng_Latn", "pair_filter": False,
                **({"bitext": {"rows_per_part": args.rows_per_part}} if args.rows_per_part else {}),
                "mining": {"k": args.k, "margin": "ratio", "selection": "max",
                           **({"one_to_one_rows": args.one_to_one_rows} if args.one_to_one_rows else {})},
                "knn": {"index": f"IVF{nlist},Flat", "nprobe": args.nprobe, "exact_below": 1,
                        "max_list_rows": args.max_list_rows, "wave_bytes": args.wave_bytes}}
    # One worker runs in this process: the FnApiRunner sends a stage's grouped input to a worker process as one
    # gRPC buffer, which passes the 2 GiB limit from 160k sentences per language here
    mode = "multi_processing" if args.workers > 1 else "in_memory"
    options = PipelineOptions(["--runner=DaskRunner", f"--dask_worker_memory={args.worker_memory}",
                               *([f"--dask_shuffle_partitions={args.shuffle_partitions}"]
                                 if args.shuffle_partitions else []),
                               *(["--dask_worker_profile"] if args.worker_profile else [])]
                              if args.runner == "dask" else
                              [f"--direct_num_workers={args.workers}", f"--direct_running_mode={mode}"])
    tree = args.tree
    cpu, wall = tree.cpu(), time.perf_counter()
    with tree:
        report = run(settings, options, ["pairs"])
    cpu, wall = tree.cpu() - cpu, time.perf_counter() - wall
    counters = report["counters"]["pairs"]["pairs"]
    waves = storage.read_json(layout.manifest_path(output, "pairs")).get("join_waves", 1)
    parts = layout.bitext_parts(storage.read_json(layout.manifest_path(output, "pairs"))["pairs"][0])
    files = [storage.join(output, part[kind]) for kind in ("parquet", "tsv") for part in parts]
    table = pa.concat_tables([storage.read_parquet(storage.join(output, part["parquet"]), columns=["src_text",
                                                                                                   "tgt_text"])
                              for part in parts])
    # the bitext's bytes, so that a change meant to keep them (issue 23: block-wise work, faster comparisons) is
    # checked at every benchmark size, not only on the sample; its TSV text alike in one file or in parts
    bitext_sha256 = hashlib.sha256(b"".join(storage.read_bytes(path) for path in files)).hexdigest()
    tsv_text_sha256 = hashlib.sha256(b"".join(gzip.decompress(storage.read_bytes(storage.join(output, part["tsv"])))
                                              for part in parts)).hexdigest()
    mined = {(int(s.rsplit(" ", 1)[1]), int(t.rsplit(" ", 1)[1])) for s, t in
             zip(table["src_text"].to_pylist(), table["tgt_text"].to_pylist())}
    shutil.rmtree(output, ignore_errors=True)
    sentences = 2 * n
    sent = counters.get("database_rows_sent", 0) + counters.get("query_rows_sent", 0)
    row_bytes = dim // 8 if dtype.startswith("binary") else 2 * dim
    sent += 2 * counters.get("refined", 0)  # a refined pair's two sign codes travel
    return {"n_per_language": n, "dtype": dtype, "runner": args.runner, "nlist": nlist, "nprobe": args.nprobe,
            "join_waves": waves, "wall_seconds": round(wall, 1),
            "peak_worker_rss_gb": round(max(tree.peak.values(), default=0) / 2**30, 2), "workers": len(tree.peak),
            "peak_spilled_gb": round(tree.spilled / 2**30, 2),
            "cpu_seconds": round(cpu, 1), "cpu_ms_per_sentence": round(1000 * cpu / sentences, 4),
            "embedding_bytes_read_per_sentence": round(counters["embedding_bytes_read"] / sentences, 1),
            "embedding_bytes_on_disk_per_sentence": row_bytes + (2 * dim if dtype == "binary-refined" else 0),
            "refined_pairs": counters.get("refined", 0),
            "vector_bytes_shuffled_per_sentence": round(sent * row_bytes / sentences, 1),
            "similarities_per_sentence": round(counters["similarities_computed"] / sentences, 1),
            "pairs": len(mined), "bitext_sha256": bitext_sha256, "tsv_text_sha256": tsv_text_sha256,
            "bitext_parts": len(parts),
            "planted_recall": round(len(mined & set(planted.items())) / len(planted), 4),
            "one_to_one_rest": counters.get("one_to_one_rest", 0),
            "queries_searched_exactly_after_short_lists":
                counters.get("queries_searched_exactly_after_short_lists", 0),
            "peer": peer(src, tgt, planted, nlist, args) if args.peer else None,
            "library": library_peer(src, tgt, planted, nlist, args) if args.peer else None}


def median_run(n: int, seed: int, args, dtype: str, repeats: int) -> dict:
    """The run with the median CPU per sentence of `repeats` runs on the same data, with every run's figure: a small
    size's CPU is a few seconds, which this machine's drift moves by a fifth from run to run, and it is the figure
    the larger sizes are compared with. Each peer's figure is its own median over the runs (it ran beside each):
    at 10^4 big_batch_search took 0.037 and 0.051 ms a sentence in two runs of one session, and the ratio the
    stage is measured by should not ride on one of them."""
    runs = sorted((run_stage(n, args.dim, seed, args, dtype) for _ in range(repeats)),
                  key=lambda run: run["cpu_ms_per_sentence"])
    median = {**runs[len(runs) // 2], "cpu_ms_per_sentence_each": [run["cpu_ms_per_sentence"] for run in runs]}
    for name in ("peer", "library"):
        if median[name] is not None:
            each = sorted((run[name] for run in runs), key=lambda peer: peer["cpu_ms_per_sentence"])
            median[name] = {**each[len(each) // 2],
                            "cpu_ms_per_sentence_each": [peer["cpu_ms_per_sentence"] for peer in each]}
    return median


def library_peer(src: np.ndarray, tgt: np.ndarray, planted: dict, nlist: int, args) -> dict:
    """miner.mine on this process over the same float16 vectors and settings: IVF k-NN both ways (since 2026-11-30 by
    the join's comparisons on one machine, miner.knn_join.knn_by_lists; faiss's IVF search before), margins and
    `max` selection on arrays; the stage's arithmetic without Beam."""
    from miner.index import KnnConfig
    from miner.knn_join import training_rows
    from miner.mining import MiningConfig, mine

    # trained on as many rows as the stage's quantizer (by default the library takes up to 10^6: at 10^6 sentences
    # that training alone cost it more than the whole stage)
    config = MiningConfig.from_dict({"k": args.k, "margin": "ratio", "selection": "max"},
                                    {"index": f"IVF{nlist},Flat", "nprobe": args.nprobe, "exact_below": 1,
                                     "train_sample": training_rows(nlist, KnnConfig())})
    cpu = cpu_seconds()
    pairs = mine(src.astype(np.float16), tgt.astype(np.float16), config)
    cpu = cpu_seconds() - cpu
    mined = set(zip(pairs.src.tolist(), pairs.tgt.tolist()))
    return {"cpu_seconds": round(cpu, 1), "cpu_ms_per_sentence": round(1000 * cpu / (2 * len(src)), 4),
            "planted_recall": round(len(mined & set(planted.items())) / len(planted), 4)}


def peer(src: np.ndarray, tgt: np.ndarray, planted: dict, nlist: int, args) -> dict:
    """faiss.contrib.big_batch_search both ways over IVF indexes with the same nlist and nprobe (float16 vectors
    read back as float32, as the stage reads them), training on the same number of rows the same way."""
    from faiss.contrib.big_batch_search import big_batch_search

    from miner.index import KnnConfig, trained_index
    from miner.knn_join import training_rows

    cpu = cpu_seconds()
    found = {}
    for name, queries, database in (("fwd", src, tgt), ("bwd", tgt, src)):
        queries, database = (unit(m.astype(np.float16).astype(np.float32)) for m in (queries, database))
        sample = np.random.default_rng(0).choice(len(database), min(len(database), training_rows(nlist, KnnConfig())),
                                                 replace=False)
        # trained as the stage's quantizer is (two-level k-means from KnnConfig().two_level_lists lists)
        index = trained_index(database.shape[1], f"IVF{nlist},Flat", KnnConfig(), database[np.sort(sample)])
        index.add(database)
        index.nprobe = args.nprobe
        with contextlib.redirect_stdout(io.StringIO()):  # it prints per-list progress whatever `verbose` says
            _, ids = big_batch_search(index, queries, args.k)
        found[name] = ids
    cpu = cpu_seconds() - cpu
    rows = np.array(list(planted.items()))
    recall = float((found["fwd"][rows[:, 0], 0] == rows[:, 1]).mean())
    return {"cpu_seconds": round(cpu, 1), "cpu_ms_per_sentence": round(1000 * cpu / (2 * len(src)), 4),
            "planted_recall_at_1": round(recall, 4)}


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s:%(name)s:%(message)s")
    logging.getLogger("pipelines.dask_runner").setLevel(logging.INFO)  # what each ParDo cost, at each run's end
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 40_000, 160_000, 640_000],
                        help="sentences per language; each size's vectors are seeded by its position in this list, "
                        "so a bitext's sha256 is comparable only between runs that list the sizes alike")
    parser.add_argument("--dim", type=int, default=256, help="synthetic vectors' size (default 256)")
    parser.add_argument("--runner", choices=("direct", "dask"), default="direct",
                        help="direct: the DirectRunner (one worker in this process); dask: pipelines/dask_runner.py "
                        "on a LocalCluster, one worker process a core")
    parser.add_argument("--worker-memory", default="4GiB",
                        help="with --runner dask: each worker's memory limit (it spills to disk past 70%% of it)")
    parser.add_argument("--shuffle-partitions", type=int, default=None,
                        help="Dask: --dask_shuffle_partitions (default: the runner's)")
    parser.add_argument("--worker-profile", action="store_true",
                        help="Dask: --dask_worker_profile, the workers' own profiler on (off by default)")
    parser.add_argument("--workers", type=int, default=1,
                        help="DirectRunner workers: 1 runs in this process; more run as processes, where Beam 2.77 "
                        "loses data (docs/pipeline.md, Local runs) and the stage stops with an error naming a list")
    parser.add_argument("--shard-rows", type=int, default=20_000, help="rows per sentence and embedding shard")
    parser.add_argument("--rows-per-list", type=int, default=160, help="nlist = N / this, a power of two")
    parser.add_argument("--nprobe", type=int, default=16,
                        help="lists searched a query, the same at every size (default 16)")
    parser.add_argument("--max-list-rows", default="auto", type=lambda v: v if v == "auto" else int(v),
                        help="knn.max_list_rows: auto (205 MB of float32 rows a side: 200,000 at d = 256) or rows")
    parser.add_argument("--wave-bytes", default="auto",
                        help="knn.wave_bytes: auto (on Dask a quarter of the workers' memory), 0 (one wave) or a size")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each size below --repeat-below, the median "
                        "reported (with every run's CPU per sentence)")
    parser.add_argument("--repeat-below", type=int, default=200_000,
                        help="sizes below this run --repeats times, the median CPU reported (default 200000: 10^4 "
                        "and 10^5, where one run's CPU and the peer's drift by a fifth; 10^6 runs once)")
    parser.add_argument("--k", type=int, default=4, help="neighbours in the margin (default 4)")
    parser.add_argument("--rows-per-part", type=int, default=None,
                        help="bitext.rows_per_part: below the pairs mined, the bitext is written in parts by score "
                        "range (bitext_sha256 then hashes the parts, tsv_text_sha256 compares with one file)")
    parser.add_argument("--one-to-one-rows", type=int, default=None,
                        help="mining.one_to_one_rows: below 2 N, max selection's one-to-one pass goes in rounds "
                        "across workers (the same bitext)")
    parser.add_argument("--dtypes", nargs="+", default=["float16"], choices=("float16", "binary", "binary-refined"),
                        help="how the embedding shards are stored: float16 (embed.dtype's default) and/or binary "
                        "(packed sign codes, 16x fewer bytes), binary-refined (the codes and their turned float rows: "
                        "embed.binary_refine, the selected pairs scored again); each size runs each")
    parser.add_argument("--no-peer", dest="peer", action="store_false", help="skip big_batch_search")
    parser.add_argument("--out", type=Path, default=Path("bench/results/pairs_scaling.json"), help="the results' JSON")
    args = parser.parse_args()
    args.tree = ProcessTree()

    results = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "dim": args.dim, "runner": args.runner,
               "workers": args.workers, "shard_rows": args.shard_rows, "k": args.k, "runs": []}
    if args.runner == "dask":  # start the cluster and import the stage in its workers before measuring
        run_stage(2_000, args.dim, 99, argparse.Namespace(**{**vars(args), "peer": False}))
    for seed, n in enumerate(args.sizes):
        for dtype in args.dtypes:
            run = median_run(n, seed, args, dtype, args.repeats if n < args.repeat_below else 1)
            results["runs"].append(run)
            print(json.dumps(run), flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=2) + "\n")
    first = results["runs"][0]
    for run in results["runs"]:
        peer_line = (f"; big_batch_search {run['peer']['cpu_ms_per_sentence']:.3f} CPU ms/sentence, recall@1 "
                     f"{run['peer']['planted_recall_at_1']}; miner.mine {run['library']['cpu_ms_per_sentence']:.3f}"
                     if run["peer"] else "")
        print(f"N {run['n_per_language']:>7} {run['dtype']}: IVF{run['nlist']} nprobe {run['nprobe']}, "
              f"{run['join_waves']} wave(s), "
              f"{run['cpu_ms_per_sentence']:.3f} CPU ms/sentence "
              f"(x{run['cpu_ms_per_sentence'] / first['cpu_ms_per_sentence']:.2f}), "
              f"{run['embedding_bytes_read_per_sentence']:.0f} B read/sentence, "
              f"{run['vector_bytes_shuffled_per_sentence']:.0f} B shuffled/sentence, peak worker RSS "
              f"{run['peak_worker_rss_gb']} GB, spilled {run.get('peak_spilled_gb', 0)} GB, planted recall "
              f"{run['planted_recall']}{peer_line}")


if __name__ == "__main__":  # Dask's worker processes are spawned: they import this module
    main()
