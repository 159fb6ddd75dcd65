"""How close a student's vectors are to its teacher's on held-out sentences of the teacher's languages.

Monolingual distillation (distill.monolingual, issue 20) trains S(x) ~ T(x) for the teacher's own languages; this
measures it where no training saw the sentences: the mean cosine of S(x) to T(x) over the first `--limit` source
sentences of each language's file in each held-out folder of the train pool (training.prepare's heldout-news/ and
heldout-short/tune/). The dev pool is never read.

    python bench/teacher_fidelity.py --encoders models/cmlm-distilled models/distill-mono-cpu/encoder
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "2")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np

from encoders.use_multilingual import LANGUAGES  # noqa: E402

TEACHER_LANGUAGES = tuple(language for language in LANGUAGES if language != "eng_Latn")  # each against English


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teacher", default="use-multilingual", help="the teacher's encoder spec")
    parser.add_argument("--encoders", nargs="+", required=True, help="the students' encoder specs, each measured")
    parser.add_argument("--sets", nargs="+", type=Path,
                        default=[ROOT / "data/train/heldout-news", ROOT / "data/train/heldout-short/tune"],
                        help="held-out folders of xx-eng_Latn.tsv.gz (default heldout-news, heldout-short/tune)")
    parser.add_argument("--languages", default=",".join(TEACHER_LANGUAGES),
                        help="comma-separated languages (default the teacher's 16)")
    parser.add_argument("--limit", type=int, default=200, help="sentences a language and folder (default 200)")
    args = parser.parse_args(argv)

    from encoders import load_encoder
    from miner.io import read_pair_lines

    teacher, students = load_encoder(args.teacher), [load_encoder(spec) for spec in args.encoders]
    print("| set | language | " + " | ".join(args.encoders) + " |")
    print("| --- | --- |" + " --- |" * len(args.encoders))
    for folder in args.sets:
        means = [[] for _ in students]
        for language in args.languages.split(","):
            path = folder / f"{language}-eng_Latn.tsv.gz"
            if not path.exists():
                continue
            texts, _ = read_pair_lines(path, args.limit)
            target = teacher.encode(texts, language=language)
            cosines = [float((student.encode(texts, language=language) * target).sum(1).mean()) for student in students]
            for column, value in zip(means, cosines):
                column.append(value)
            print(f"| {folder.name} | {language} | " + " | ".join(f"{c:.3f}" for c in cosines) + " |", flush=True)
        print(f"| **{folder.name}** | **mean of {len(means[0])}** | "
              + " | ".join(f"**{np.mean(column):.3f}**" for column in means) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
