r"""The embed stage through Beam's RunInference against the encoder's own calls, on the same sentences.

    python bench/bench_embed_stage.py --encoder models/cmlm-distilled --per-language 200          # this machine
    python bench/bench_embed_stage.py --encoder models/cmlm-ensemble --all-flores --per-language 50 \
        --pack true false       # a crawl's long tail: 204 languages of 50 sentences, packed or a call each
    python bench/bench_embed_stage.py --encoder models/cmlm-distilled --device cuda \
        --sentences-file S --copies 4 --batch-sizes 1024 16384 --output $OUT/embed_stage.json      # a lent GPU

Sentences (a file of `language<TAB>text` lines, or FLORES devtest of the teacher's 16 languages: dev pool, measuring
only) are written as one sentence shard (Parquet, `text`) per language, `--copies` times over (a crawl's shards
hold 100,000 rows; FLORES has 1,012 a language; `--all-flores`: every FLORES language, not only the teacher's). The
embed stage then runs as `python -m pipelines.embed` runs it (`pipelines.job.run_stage`, the DirectRunner, one
process), for each `embed.batch_size`, `embed.share_model` and `embed.pack_partial_chunks` (`--pack`);
beside it, in the same process, the encoder's own `encode()` over the same shards in chunks of that size, as
RunInference calls it. Both are wall seconds after a warm-up call over every sentence; their ratio is what Beam
(reading and writing shards, the shuffle of chunks) adds to the encoder.
"""

from __future__ import annotations

import argparse
import atexit
import gzip
import itertools
import json
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))


def read_by_language(args) -> dict[str, list[str]]:
    by_language: dict[str, list[str]] = {}
    if args.sentences_file:
        with open(args.sentences_file, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                language, _, text = line.rstrip("\n").partition("\t")
                if not text.strip():
                    raise SystemExit(f"{args.sentences_file}:{number}: expected language<TAB>text")
                by_language.setdefault(language, []).append(text)
        return by_language
    from bench_use import FLORES

    from encoders.use_multilingual import LANGUAGES

    languages = sorted(p.name.split(".")[0] for p in FLORES.glob("*.devtest.gz")) if args.all_flores else LANGUAGES
    for language in languages:
        with gzip.open(FLORES / f"{language}.devtest.gz", "rt", encoding="utf-8") as handle:
            by_language[language] = [line.strip() for _, line in zip(range(args.per_language), handle)]
    return by_language


def write_shards(folder: Path, by_language: dict[str, list[str]], copies: int) -> dict:
    """The extract stage's manifest for one shard of `copies` x the sentences per language."""
    import pyarrow as pa

    from pipelines import layout, storage

    languages = {}
    for language, texts in sorted(by_language.items()):
        rows = texts * copies
        path = layout.sentence_shard(str(folder), language, 0, 1)
        storage.write_parquet(path, pa.table({"text": rows}))
        languages[language] = {"rows": len(rows), "shards": [{"path": path, "rows": len(rows)}]}
    return {"stage": "extract", "languages": languages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default=str(REPO / "models" / "cmlm-distilled"),
                        help="the encoder spec the stage and the peer load (default models/cmlm-distilled)")
    parser.add_argument("--device", help="auto (the default), cpu, cuda (transformer encoders)")
    parser.add_argument("--sentences-file", type=Path, help="language<TAB>text lines")
    parser.add_argument("--per-language", type=int, default=1012,
                        help="sentences a language, before --copies (default 1012: FLORES devtest whole)")
    parser.add_argument("--copies", type=int, default=1, help="each language's sentences repeated this often")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1024], help="embed.batch_size values")
    parser.add_argument("--share-model", nargs="+", default=["auto"], choices=("auto", "true", "false"),
                        help="embed.share_model values: auto shares one model across a GPU machine's processes")
    parser.add_argument("--all-flores", action="store_true",
                        help="every FLORES devtest language, not only the teacher's 16 (no --sentences-file)")
    parser.add_argument("--pack", nargs="+", default=["true"], choices=("true", "false"),
                        help="embed.pack_partial_chunks values: true packs small chunks of several languages")
    parser.add_argument("--output", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from apache_beam.options.pipeline_options import PipelineOptions

    from encoders import load_encoder
    from pipelines import storage
    from pipelines.embed import EmbedStage
    from pipelines.job import run_stage

    folder = Path(tempfile.mkdtemp(prefix="bench-embed-stage-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # shards of every run: gigabytes
    sentences = write_shards(folder, read_by_language(args), args.copies)
    shards = [(language, storage.read_parquet(entry["shards"][0]["path"]).column("text").to_pylist())
              for language, entry in sentences["languages"].items()]
    total = sum(len(texts) for _, texts in shards)
    options = {"device": args.device} if args.device else {}
    encoder = load_encoder(args.encoder, **options)
    encoder.encode([text for _, texts in shards for text in texts])  # warm-up: every batch shape once
    report = {"encoder": args.encoder, "device": args.device, "sentences": total, "languages": len(shards),
              "runs": []}
    for size, share, pack in itertools.product(args.batch_sizes, args.share_model, args.pack):
        started = time.perf_counter()
        for language, texts in shards:
            for start in range(0, len(texts), size):
                encoder.encode(texts[start:start + size], language=language)
        calls = time.perf_counter() - started
        embed = {"batch_size": size, "dtype": "float16", "share_model": share if share == "auto" else share == "true",
                 "pack_partial_chunks": pack == "true"}
        settings = {"encoder": args.encoder, "encoder_options": options, "embed": embed,
                    "output": str(folder)}  # the stage's output is replaced each run
        started = time.perf_counter()
        run_stage("embed", EmbedStage(settings, {"extract": sentences}), settings,
                  PipelineOptions(["--runner=DirectRunner"]))
        stage = time.perf_counter() - started
        run = {"batch_size": size, "share_model": share, "pack_partial_chunks": pack,
               "encode_calls_s": round(calls, 3), "stage_s": round(stage, 3),
               "encode_calls_per_s": round(total / calls), "stage_per_s": round(total / stage),
               "stage_over_calls": round(stage / calls, 2)}
        report["runs"].append(run)
        print(json.dumps(run), flush=True)
    if args.output:
        args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    try:
        main()
    except ValueError as err:  # a device or setting the machine cannot give (--device cuda without a GPU)
        raise SystemExit(f"error: {err}") from None
