"""Mine two lists of sentences in one call: texts in, scored pairs out.

    from miner import mine_texts
    pairs = mine_texts(german, english, "deu_Latn", "eng_Latn")      # the default encoder and its tuned settings
    for pair in pairs[:5]:
        print(f"{pair.score:.3f}  {pair.source}  |||  {pair.target}")

What `python -m miner.mine` does for two files, for lists held in Python (sentence-transformers' mining example
does the same with its own encoder): blank texts are left out, each distinct text is embedded once with its
language (an ensemble uses that language's shares), then k-NN both ways, ratio margins and selection
(miner.mining.mine). Pairs come best first, each with its margin, its cosine and the row of the first occurrence of
each text.

A threshold belongs to an encoder and a k. Without `config`, the default encoder (models/cmlm-ensemble) mines with
the pipeline's settings tuned for it on the dev pool (configs/pipeline_sample.yaml: k = 4, max selection, margin
threshold 1.35, cosine floor 0.29); any other encoder keeps every selected pair, best first, until given a
`MiningConfig(threshold=...)` (`python -m miner.evaluate suite --encoder E --bucc DIR` tunes one).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from miner.mining import MiningConfig, mine
from miner.thresholds import for_pair, language_name

log = logging.getLogger(__name__)
REPO = Path(__file__).resolve().parent.parent
DEFAULT_ENCODER = REPO / "models" / "cmlm-ensemble"
DEFAULT_SETTINGS = REPO / "configs" / "pipeline_sample.yaml"  # its mining section was tuned for that encoder


@dataclass(frozen=True)
class MinedPair:
    score: float         # the margin (ratio by default)
    cosine: float        # the two vectors' similarity
    source: str
    target: str
    source_row: int      # where the text first occurs in the source list
    target_row: int


def mine_texts(source_texts: Sequence[str], target_texts: Sequence[str], source_language: str | None = None,
               target_language: str | None = None, *, encoder=None, config: MiningConfig | None = None,
               show_progress: bool = False) -> list[MinedPair]:
    """Scored pairs, best first (module docstring). `encoder`: a loaded encoder or any spec `load_encoder` reads
    (default: models/cmlm-ensemble); languages as `deu_Latn` or `de`."""
    default = encoder is None or (isinstance(encoder, (str, Path)) and Path(encoder).resolve() == DEFAULT_ENCODER)
    # where the encoder's threshold offsets are (miner/thresholds.py); a loaded encoder: no folder to read
    encoder_spec = str(encoder or DEFAULT_ENCODER) if encoder is None or isinstance(encoder, (str, Path)) else None
    if encoder is None or isinstance(encoder, (str, Path)):
        from encoders import load_encoder

        encoder = load_encoder(str(encoder or DEFAULT_ENCODER))
    if config is None:
        config = default_config() if default else MiningConfig()
        if not default:
            log.info("mine_texts: no config for this encoder, so no threshold: every selected pair is returned")
    sides = [_distinct(texts, name) for texts, name in ((source_texts, "source"), (target_texts, "target"))]
    if not sides[0][0] or not sides[1][0]:
        return []
    if source_language and target_language:  # the pair's threshold (miner/thresholds.py)
        config = for_pair(config, language_name(source_language, sides[0][0][:1000]),
                          language_name(target_language, sides[1][0][:1000]), encoder_spec)
    vectors = [encoder.encode(texts, language=language, show_progress=show_progress)
               for (texts, _), language in zip(sides, (source_language, target_language))]
    pairs = mine(*vectors, config)
    (src_texts, src_rows), (tgt_texts, tgt_rows) = sides
    return [MinedPair(float(score), float(cos), src_texts[s], tgt_texts[t], int(src_rows[s]), int(tgt_rows[t]))
            for s, t, score, cos in zip(pairs.src, pairs.tgt, pairs.margin, pairs.cos)]


def default_config() -> MiningConfig:
    """The pipeline's mining settings, tuned for the default encoder (k-NN as miner.mine searches: exact below
    10k sentences, IVF above)."""
    from miner.config import load_config, section

    return MiningConfig.from_dict(section(load_config(DEFAULT_SETTINGS), "mining"))


def _distinct(texts: Sequence[str], name: str) -> tuple[list[str], np.ndarray]:
    """Each distinct non-blank text once, with the row of its first occurrence."""
    if isinstance(texts, str | bytes):  # one sentence alone would be mined character by character
        raise TypeError(f"{name} texts: a list of sentences, not one {type(texts).__name__}")
    first: dict[str, int] = {}
    blank = 0
    for row, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{name} text {row} is a {type(text).__name__}, not a string")
        if text.strip():
            first.setdefault(text, row)
        else:
            blank += 1
    if blank:
        log.info("mine_texts: %d blank %s texts left out", blank, name)
    return list(first), np.fromiter(first.values(), dtype=np.int64, count=len(first))
