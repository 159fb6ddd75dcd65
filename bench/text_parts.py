"""Where the text stage's time goes, part by part, as shares of trafilatura.extract's time on the same pages.

    python bench/text_parts.py [--web ../shared/data/web] [--rounds 2] [--chunk 25]   # -> results/text_parts.json

The companion of bench_text.py (which gives the figure: the whole stage against extraction alone): the same pages,
extraction in this process, each part's CPU time summed by wrapping the functions the stage calls (a few
microseconds a call, so the parts are a profile, and their sum is a little above the stage's own time). As in
bench_text.py, the peer and the stage take turns chunk by chunk, `--rounds` times, pinned to one core, and each
keeps its fastest time per chunk (the stage with the parts of that run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import bench_text  # noqa: E402

from pipelines.settings import load_settings  # noqa: E402
from pipelines.text import dedup, extract, sentences  # noqa: E402
from pipelines.text.stage import TextStage  # noqa: E402

NESTED = "  of which: "   # a part inside the one above it (not added again to the total)
# (module or class, function name, part)
PARTS = [
    (bench_text, "page_of", "decoding the page (charset)"),
    (extract, "_trafilatura_text", "trafilatura, with its parse and the depth check"),
    (extract, "dense_script", NESTED + "the dense-script check"),
    (extract, "_kept", "extraction: the furniture filter"),
    (None, "identify_document", "LID: the document"),       # None: the stage's identifier's own class (the
    (None, "identify_sentences", "LID: every sentence"),     # default's combined+experts layers, or a plain one)
    (sentences.SentenceSplitter, "split", "sentence splitting"),
    (dedup, "dedup_key", "dedup: normalising and hashing"),
]


def timed_calls(times: dict, owner, name: str, part: str) -> None:
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            times[part] += time.process_time() - start

    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--web", type=Path, default=REPO.parent / "shared" / "data" / "web",
                        help="the web pool's folder of WARC files (default ../shared/data/web)")
    parser.add_argument("--rounds", type=int, default=2, help="turns of the stage and the peer over every chunk "
                        "(default 2)")
    parser.add_argument("--chunk", type=int, default=25, help="pages per chunk: the unit the two take turns on")
    parser.add_argument("--core", type=int, default=0, help="the CPU core to run on (-1: any)")
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "text_parts.json",
                        help="the results' JSON (default bench/results/text_parts.json)")
    args = parser.parse_args()

    if args.core >= 0:
        os.sched_setaffinity(0, {args.core})
    pages = bench_text.load_pages(args.web, 1)
    settings = load_settings()
    settings.pop("languages", None)
    stage = TextStage({**settings, "extract": {**(settings.get("extract") or {}), "time_limit_s": 0}})
    bench_text.ours(stage, pages[:50])   # warm-up: imports, the LID model
    bench_text.peer(pages[:50])
    times: dict[str, float] = defaultdict(float)
    for owner, name, part in PARTS:
        timed_calls(times, type(stage.lid) if owner is None else owner, name, part)
    for filter_ in stage.filters:
        timed_calls(times, type(filter_), "__call__", f"filter: {filter_.name}")
    chunks = [pages[start:start + args.chunk] for start in range(0, len(pages), args.chunk)]
    best_peer = best_stage = 0.0
    best_parts: dict[str, float] = defaultdict(float)
    for chunk in chunks:  # the peer and the stage in turn, chunk by chunk, each keeping its fastest (bench_text.py)
        peer_times, stage_runs = [], []
        for _ in range(args.rounds):
            start = time.process_time()
            bench_text.peer(chunk)
            peer_times.append(time.process_time() - start)
            times.clear()
            start = time.process_time()
            bench_text.ours(stage, chunk)
            stage_runs.append((time.process_time() - start, dict(times)))
        elapsed, parts = min(stage_runs, key=lambda run: run[0])
        best_peer += min(peer_times)
        best_stage += elapsed
        for part, seconds in parts.items():
            best_parts[part] += seconds
    untimed = best_stage - sum(seconds for part, seconds in best_parts.items() if not part.startswith(NESTED))
    order = [part for _, _, part in PARTS] + sorted(part for part in best_parts if part.startswith("filter"))
    rows = {part: round(best_parts.get(part, 0.0) / best_peer, 4) for part in order}
    rows["the rest (records, tallies, generators)"] = round(untimed / best_peer, 4)
    report = {"pages": len(pages), "peer_cpu_seconds": round(best_peer, 2), "stage_cpu_seconds": round(best_stage, 2),
              "shares_of_peer": rows}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{len(pages)} pages; trafilatura.extract (defaults) {best_peer:.1f} CPU s, the text stage with "
          f"extraction in process {best_stage:.1f} CPU s ({best_stage / best_peer:.2f}x)")
    print("| part | CPU time, share of the peer's |\n| --- | --- |")
    for part, share in rows.items():
        print(f"| {part} | {100 * share:.1f}% |")


if __name__ == "__main__":
    main()
