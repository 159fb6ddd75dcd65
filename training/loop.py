"""The mining loop: mine pairs with the current encoder from text it never saw paired, add them to BR training,
retrain, and compare.

    python -m training.loop --encoder models/reference-cpu/encoder --pool data/train/loop \\
        --recipe configs/train_reference_cpu.yaml --output models/loop-1 --threshold 1.08

The pool (training.prepare writes one) holds, per language, `<lang>.txt.gz` and `eng_Latn.<lang>.txt.gz`: two
shuffled, thinned sides of a parallel set, i.e. comparable text. Each pair of files is mined like any corpus (ratio
margin, max selection, k = 4) into `<output>/mined/<lang>-eng_Latn.{tsv.gz,parquet}`, the miner's own output format;
when the pool has `<lang>.gold.tsv.gz`, the precision and recall of the pairs kept are reported. The recipe is then
trained again into `<output>/model` with the mined TSVs added to `data.bitext` and `data.min_score` set to the
threshold, so the loop's only change is the mined data.
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
from pathlib import Path

import pyarrow as pa

from miner.io import InputFormatError, iter_lines, path_argument, read_lines, write_json

log = logging.getLogger("training.loop")
PIVOT = "eng_Latn"


def pool_languages(pool: Path) -> list[str]:
    languages = sorted(Path(p).name.split(".")[0] for p in glob.glob(str(pool / "*.txt.gz"))
                       if not Path(p).name.startswith(f"{PIVOT}."))
    if not languages:
        raise InputFormatError(f"{pool}: no <lang>.txt.gz files to mine")
    return languages


def mine_language(encoder, pool: Path, language: str, threshold: float, k: int, output: Path) -> dict:
    from miner.mine import write_bitext
    from miner.mining import MiningConfig, mine

    sources, targets = read_lines(pool / f"{language}.txt.gz"), read_lines(pool / f"{PIVOT}.{language}.txt.gz")
    src, tgt = encoder.encode(sources, language=language), encoder.encode(targets, language=PIVOT)
    pairs = mine(src, tgt, MiningConfig(k=k, margin="ratio", selection="max"), (language, PIVOT))
    table = pa.table({
        "score": pa.array(pairs.margin, pa.float32()), "cosine": pa.array(pairs.cos, pa.float32()),
        "src_text": pa.array([sources[i] for i in pairs.src], pa.string()),  # typed, also where nothing is mined
        "tgt_text": pa.array([targets[i] for i in pairs.tgt], pa.string()),
        "src_lang": pa.array([language] * len(pairs), pa.string()),
        "tgt_lang": pa.array([PIVOT] * len(pairs), pa.string())})
    write_bitext(table, output, f"{language}-{PIVOT}")
    kept = {(sources[s], targets[t]) for s, t, m in zip(pairs.src, pairs.tgt, pairs.margin) if m >= threshold}
    report = {"sources": len(sources), "targets": len(targets), "candidates": len(pairs), "kept": len(kept)}
    gold_file = pool / f"{language}.gold.tsv.gz"
    if gold_file.exists():
        gold = {tuple(line.split("\t", 1)) for line in iter_lines(gold_file)}
        correct = len(kept & gold)
        report.update(gold=len(gold), precision=correct / max(len(kept), 1), recall=correct / max(len(gold), 1))
    return report


def mine_pool(encoder_dir: Path, pool: Path, threshold: float, k: int, output: Path) -> dict:
    from encoders import load_encoder

    encoder = load_encoder(str(encoder_dir))
    report = {}
    for language in pool_languages(pool):
        report[language] = mine_language(encoder, pool, language, threshold, k, output)
        row = report[language]
        log.info("%s: %d candidates, %d at margin >= %.3f%s", language, row["candidates"], row["kept"], threshold,
                 f" (precision {row['precision']:.3f}, recall {row['recall']:.3f})" if "gold" in row else "")
    return report


def retrain(recipe: Path, mined: Path, threshold: float, output: Path, overrides: list[str],
            resume: bool = False) -> Path | None:
    from training.config import load_recipe
    from training.train import run

    base = load_recipe(recipe, overrides, checked=False)  # its bitext may be only what the loop adds
    extra = [f"data.bitext={json.dumps([*base.data.bitext, str(mined / '*.tsv.gz')])}",
             f"data.min_score={threshold}", f"output={output}"]
    return run(load_recipe(recipe, [*overrides, *extra]), resume)


def check_retrain(recipe: Path, output: Path, overrides: list[str], resume: bool) -> None:
    """The recipe and its overrides read, and the model's folder free (or --resume): each found only after the
    mining otherwise, minutes in. The folder is checked as the retraining will check it (train.resume_point)."""
    from training.config import load_recipe
    from training.train import resume_point

    config = load_recipe(recipe, [*overrides, f"output={output}"], checked=False)
    if not resume:
        resume_point(config, resume=False)


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    parser = argparse.ArgumentParser(prog="python -m training.loop", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", type=path_argument, required=True, help="the current encoder (checkpoint folder)")
    parser.add_argument("--pool", type=path_argument, required=True,
                        help="folder of <lang>.txt.gz + eng_Latn.<lang>.txt.gz")
    parser.add_argument("--recipe", type=path_argument, required=True,
                        help="the recipe to train again with the mined pairs")
    parser.add_argument("--output", type=path_argument, required=True,
                        help="folder for the mined pairs (mined/), the report (loop.json) and the model (model/)")
    parser.add_argument("--threshold", type=float, default=1.08, help="ratio-margin threshold for mined pairs")
    parser.add_argument("--k", type=int, default=4, help="neighbours in the margin (default 4)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one setting of the recipe (repeatable)")
    parser.add_argument("--mine-only", action="store_true", help="mine and report, do not retrain")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted loop: reuse its mined pairs and the newest training checkpoint")
    args = parser.parse_args(argv)
    setup_logging()

    def command() -> None:
        mined = args.output / "mined"
        if not args.mine_only:  # what retraining will refuse, refused before the mining
            check_retrain(args.recipe, args.output / "model", args.overrides, args.resume)
        if args.resume and (args.output / "loop.json").exists():
            log.info("--resume: reusing the pairs mined into %s", mined)
            return finish(mined)
        report = {"encoder": str(args.encoder), "threshold": args.threshold, "k": args.k,
                  "mined": mine_pool(args.encoder, args.pool, args.threshold, args.k, mined)}
        rows = report["mined"].values()
        report["kept"] = sum(r["kept"] for r in rows)
        if all("precision" in r for r in rows):
            correct = sum(r["precision"] * r["kept"] for r in rows)
            report["precision"] = correct / max(report["kept"], 1)
            report["recall"] = correct / max(sum(r["gold"] for r in rows), 1)
        write_json(args.output / "loop.json", report)
        print(json.dumps({k: v for k, v in report.items() if k != "mined"}))
        finish(mined)

    def finish(mined: Path) -> None:
        if not args.mine_only:
            folder = retrain(args.recipe, mined, args.threshold, args.output / "model", args.overrides, args.resume)
            print(f"retrained encoder: {folder}")

    return exit_status(command)


if __name__ == "__main__":
    raise SystemExit(main())
