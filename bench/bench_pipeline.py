"""End-to-end throughput of the main job, split by stage: sentences per second per core.

    python bench/bench_pipeline.py                      # the bundled sample and ../shared/data/web's WARC files
    python bench/bench_pipeline.py --only sample        # -> bench/results/pipeline.json

Each stage runs as `python -m pipelines.mine` runs it (DirectRunner, one process), one after the other, with one
thread for torch, faiss and fastText; time is CPU time of the process and its children (the extraction child),
so the figure is per core and the same on a busy machine. Sentences are the extract stage's unique sentences
(what embed and pairs work on); pages and pairs are printed beside them.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_text import cpu_seconds  # noqa: E402


def corpora(web: Path) -> dict[str, dict]:
    """The bundled sample (its config as it is), and the web pool: its WARC files plus a WARC written here from
    trafilatura's 1,033 evaluation pages (real pages, mostly German and English), mined in every language found."""
    folder = Path(tempfile.mkdtemp(prefix="bench-web-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # shards of every run: gigabytes
    for path in sorted((web / "warc").rglob("*.warc.gz")):
        (folder / f"{path.parent.name}-{path.name}").write_bytes(path.read_bytes())
    pages_to_warc(web / "trafilatura-eval", folder / "trafilatura-eval.warc.gz")
    return {"sample": {}, "web": {"input": str(folder / "*.warc.gz"), "languages": [], "gold": None}}


def pages_to_warc(eval_dir: Path, target: Path) -> None:
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from pipelines.text.extract_eval import eval_pages

    pages, _ = eval_pages(eval_dir)
    with open(target, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for item, html in pages:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(item["url"], "response", payload=io.BytesIO(html),
                                                          http_headers=http))


def run_corpus(name: str, changes: dict, runner: str | None = None) -> dict:
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.mine import run
    from pipelines.settings import load_settings

    settings = load_settings()
    settings.update(changes)
    settings["output"] = tempfile.mkdtemp(prefix=f"bench-{name}-")
    atexit.register(shutil.rmtree, settings["output"], ignore_errors=True)  # shards of every run: gigabytes
    settings.setdefault("encoder_options", {})
    stages = {}
    for stage in ("extract", "embed", "pairs"):
        cpu, wall = cpu_seconds(), time.perf_counter()
        report = run(settings, PipelineOptions([f"--runner={runner}"] if runner else []), [stage])
        stages[stage] = {"cpu_s": round(cpu_seconds() - cpu, 2), "wall_s": round(time.perf_counter() - wall, 2)}
    sentences = sum(report["sentences"].values())
    for row in stages.values():
        row["sentences_per_cpu_s"] = round(sentences / row["cpu_s"], 1) if row["cpu_s"] else None
    total = sum(row["cpu_s"] for row in stages.values())
    return {"pages": report["pages"], "sentences": sentences, "languages": len(report["sentences"]),
            "pairs": sum(p["pairs"] for p in report["pairs"].values()), "stages": stages,
            "total": {"cpu_s": round(total, 2), "sentences_per_cpu_s": round(sentences / total, 1)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--web", type=Path, default=REPO.parent / "shared" / "data" / "web",
                        help="the web pool (its warc/ files are mined)")
    parser.add_argument("--only", choices=["sample", "web"], help="run one of the two inputs only")
    parser.add_argument("--runner", help="a Beam runner by name (default: the job's, the DirectRunner)")
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "pipeline.json",
                        help="the results' JSON")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    results = {}
    chosen = {name: changes for name, changes in corpora(args.web).items() if args.only in (None, name)}
    run_corpus("sample", {}, args.runner)  # warm-up, not timed: imports, and the models and libraries in the disk cache
    for name, changes in chosen.items():
        results[name] = run_corpus(name, changes, args.runner)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print("| corpus | pages | sentences | pairs | extract | embed | pairs | whole job |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r in results.items():
        cells = [f"{r['stages'][s]['sentences_per_cpu_s']} ({r['stages'][s]['cpu_s']} s)" for s in
                 ("extract", "embed", "pairs")]
        print(f"| {name} | {r['pages']} | {r['sentences']} | {r['pairs']} | " + " | ".join(cells)
              + f" | {r['total']['sentences_per_cpu_s']} ({r['total']['cpu_s']} s) |")
    print("(sentences per CPU-second, CPU seconds in brackets)")


if __name__ == "__main__":
    main()
