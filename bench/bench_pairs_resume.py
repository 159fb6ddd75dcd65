"""What a stopped pairs stage's next run keeps: the stage run whole, then the same stage stopped as its first list
group is compared (every quantizer trained and every shard assigned by then, as the DirectRunner runs the
assignments' fused stage to its end before the groupings), then run again on the same vectors and settings, which
reads the saved quantizers and list assignments back (pipelines/pairs/saved.py). Reported per size: the CPU
seconds of the whole stage, of the stopped run and of the resumed one, what the resumed run saved against a
whole one, the bytes of list assignments saved, and whether the resumed bitext is the whole run's to the byte.
With `--raise FROM TO`, the stage is mined at threshold FROM and then raised to TO over its finished output (a
filter of its bitext, pipelines/pairs/raised.py), against the whole stage at TO.

    python bench/bench_pairs_resume.py --sizes 100000
    python bench/bench_pairs_resume.py --sizes 1000000 --dtype binary       # ~25 minutes on 2 cores
    python bench/bench_pairs_resume.py --sizes 100000 --raise 1.0 1.2        # and a raised threshold

The vectors are bench_pairs_scaling.py's (two languages of N clustered synthetic vectors, half of one side planted
translations of the other), stored as float16 or packed sign codes, with its nlist (N / 160, a power of two) and
nprobe 16, on the DirectRunner in this process.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_pairs_scaling import LANGUAGES, nlist_for, write_inputs  # noqa: E402
from bench_text import cpu_seconds  # noqa: E402
from planted_vectors import synthetic  # noqa: E402


class Stopped(Exception):
    pass


def bitext_sha256(output: str) -> str:
    from pipelines import layout, storage

    return hashlib.sha256(b"".join(storage.read_bytes(path) for path in layout.bitext_files(output, *LANGUAGES))
                          ).hexdigest()


def timed(settings: dict, stop: bool = False) -> tuple[float, dict | None]:
    """CPU seconds of one pairs stage run (and its report), or of a run stopped at its first comparison."""
    from unittest import mock

    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.mine import run

    def stopping(*args, **kwargs):
        raise Stopped("stopped at the first comparison")

    cpu, report = cpu_seconds(), None
    quiet = logging.getLogger("apache_beam")  # the stop is meant: no runner's traceback for it
    level = quiet.level
    if stop:
        quiet.setLevel(logging.CRITICAL)
    with mock.patch("pipelines.pairs.join.compare_lists", stopping) if stop else contextlib.nullcontext():
        try:
            report = run(settings, PipelineOptions([]), ["pairs"])
        except Exception as err:  # Beam wraps what a DoFn raised
            if not stop or "stopped at the first comparison" not in str(err):
                raise
        finally:
            quiet.setLevel(level)
    return cpu_seconds() - cpu, report


def measure(n: int, args) -> dict:
    from pipelines import layout, storage

    src, tgt, _ = synthetic(n, args.dim, 0)
    lower, higher = args.raise_threshold or (None, None)
    settings = {"encoder": "synthetic", "languages": list(LANGUAGES), "pairs": "pivot", "pivot": "eng_Latn",
                "pair_filter": False, "mining": {"k": 4, "margin": "ratio", "selection": "max", "threshold": lower},
                "knn": {"index": f"IVF{nlist_for(n, 160)},Flat", "nprobe": 16, "exact_below": 1}}
    figures = {"n_per_language": n, "dtype": args.dtype, "index": settings["knn"]["index"]}
    folders = []
    for name in ("whole", "resumed"):
        output = tempfile.mkdtemp(prefix=f"bench-resume-{name}-")
        folders.append(output)
        write_inputs(output, dict(zip(LANGUAGES, (src, tgt))), args.shard_rows, args.dtype)
        settings = {**settings, "output": output}
        if name == "whole":
            cpu, report = timed(settings)
            figures["whole_cpu_s"], figures["whole_pairs"] = round(cpu, 1), mined_pairs(report)
            figures["whole_bitext_sha256"] = bitext_sha256(output)
            if higher is not None:
                figures.update(raised(settings, higher, output, args, src, tgt, folders))
            continue
        figures["stopped_cpu_s"] = round(timed(settings, stop=True)[0], 1)
        saved = storage.list_files(layout.stage_chunks(output, "pairs"))
        figures["assignment_bytes_saved"] = sum(os.path.getsize(path) for path in saved)
        cpu, report = timed(settings)
        figures["resumed_cpu_s"] = round(cpu, 1)
        counted = report["counters"]["pairs"]["pairs"]
        figures["resumed_quantizers"] = counted.get("resumed_quantizers", 0)
        figures["resumed_rows_assigned"] = counted.get("resumed_rows_assigned", 0)
        figures["resumed_bitext_sha256"] = bitext_sha256(output)
    figures["resumed_over_whole"] = round(figures["resumed_cpu_s"] / figures["whole_cpu_s"], 3)
    figures["same_bitext"] = figures["resumed_bitext_sha256"] == figures["whole_bitext_sha256"]
    for output in folders:
        shutil.rmtree(output, ignore_errors=True)
    return figures


def mined_pairs(report: dict) -> int:
    return sum(entry["pairs"] for entry in report["pairs"].values())


def raised(settings: dict, higher: float, output: str, args, src, tgt, folders: list) -> dict:
    """The finished stage's threshold raised to `higher` (the stage filters its bitext: pipelines/pairs/raised.py)
    against the whole stage run at `higher` in a folder of its own."""
    higher_settings = {**settings, "mining": {**settings["mining"], "threshold": higher}}
    cpu, report = timed(higher_settings)
    figures = {"raised_to": higher, "raised_cpu_s": round(cpu, 2), "raised_pairs": mined_pairs(report)}
    figures["raised_bitext_sha256"] = bitext_sha256(output)
    whole = tempfile.mkdtemp(prefix="bench-resume-raised-whole-")
    folders.append(whole)
    write_inputs(whole, dict(zip(LANGUAGES, (src, tgt))), args.shard_rows, args.dtype)
    figures["raised_whole_cpu_s"] = round(timed({**higher_settings, "output": whole})[0], 1)
    figures["same_raised_bitext"] = bitext_sha256(whole) == figures["raised_bitext_sha256"]
    return figures


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s:%(name)s:%(message)s")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000], help="sentences per language")
    parser.add_argument("--dtype", choices=("float16", "binary"), default="float16",
                        help="how the embedding shards are stored (float16, or packed sign codes)")
    parser.add_argument("--dim", type=int, default=256, help="synthetic vectors' size (default 256)")
    parser.add_argument("--shard-rows", type=int, default=20_000, help="rows per sentence and embedding shard")
    parser.add_argument("--raise", dest="raise_threshold", type=float, nargs=2, metavar=("FROM", "TO"),
                        help="mine at threshold FROM, then raise it to TO over the finished output (a filter, no "
                        "k-NN join), against the whole stage at TO")
    parser.add_argument("--out", type=Path, default=Path("bench/results/pairs_resume.json"), help="the results' JSON")
    args = parser.parse_args()
    results = []
    for n in args.sizes:
        results.append(measure(n, args))
        print(json.dumps(results[-1]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": f"{os.cpu_count()} cores", "runs": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
