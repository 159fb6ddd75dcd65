"""BUCC 2018 shared-task evaluation by the reference protocol (../shared/docs/METHODS.md §2).

Files: `{xx}-en.{split}.{xx}` and `{xx}-en.{split}.en` with lines `id<TAB>sentence`, and `{xx}-en.{split}.gold`
with lines `xx-id<TAB>en-id`.

1. Mining runs over the unique sentence texts of each file (a text that occurs twice is embedded once).
2. Candidate texts map back to ids. A text occurring more than once in its file is ambiguous: its candidates
   are dropped. An id pair seen twice keeps its highest score.
3. P = |E & G| / |E|, R = |E & G| / |G|, F1 = 2PR / (P + R) over the extracted pairs E with score >= threshold.
4. The threshold is tuned by sweeping candidates by score, descending: it is the midpoint between the score at
   the best-F1 position and the next score. It is tuned on one split and applied to another; a figure tuned and
   measured on the same split is reported only as "oracle".
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from miner.io import InputFormatError, read_lines
from miner.selection import Pairs


@dataclass(frozen=True)
class Sentences:
    """One side of a corpus: ids and texts in file order.

    `file_lines[i]` is the 0-based line of sentence i in `path` when some lines were skipped (blank lines of a
    plain-text file); None means sentence i is line i. Embedding files are aligned with lines, not sentences.
    """

    path: Path
    ids: list[str]
    texts: list[str]
    file_lines: np.ndarray | None = None
    n_file_lines: int | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def lines_of(self, rows: np.ndarray) -> np.ndarray:
        return rows if self.file_lines is None else self.file_lines[rows]

    @property
    def line_count(self) -> int:
        return len(self.ids) if self.n_file_lines is None else self.n_file_lines


@dataclass(frozen=True)
class UniqueTexts:
    """The distinct texts of a file, as mined: `rows[i]` is the line index of unique text i's first occurrence;
    `ids[i]` is its sentence id, or None when the text occurs more than once (ambiguous)."""

    rows: np.ndarray
    texts: list[str]
    ids: list[str | None]

    @property
    def n_ambiguous(self) -> int:
        return sum(i is None for i in self.ids)


@dataclass(frozen=True)
class BuccCorpus:
    pair: str
    split: str
    src: Sentences
    tgt: Sentences
    gold: set[tuple[str, str]] | None
    gold_path: Path | None


def bucc_paths(corpus_dir: str | Path, pair: str, split: str) -> tuple[Path, Path, Path]:
    src_lang, tgt_lang = split_pair(pair)
    base = Path(corpus_dir) / f"{pair}.{split}"
    return Path(f"{base}.{src_lang}"), Path(f"{base}.{tgt_lang}"), Path(f"{base}.gold")


def split_pair(pair: str) -> tuple[str, str]:
    parts = pair.split("-")
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"language pair {pair!r} must look like de-en")
    return parts[0], parts[1]


def load_corpus(corpus_dir: str | Path, pair: str, split: str, require_gold: bool = True) -> BuccCorpus:
    src_path, tgt_path, gold_path = bucc_paths(corpus_dir, pair, split)
    src, tgt = read_sentences(src_path), read_sentences(tgt_path)
    if not gold_path.exists():
        if require_gold:
            raise InputFormatError(f"{gold_path}: gold file not found (needed to score {pair} {split})")
        return BuccCorpus(pair, split, src, tgt, None, None)
    return BuccCorpus(pair, split, src, tgt, read_gold(gold_path, src, tgt), gold_path)


def read_sentences(path: str | Path) -> Sentences:
    """`id<TAB>sentence` lines; malformed lines, empty sentences and repeated ids are errors naming the line."""
    path = Path(path)
    ids, texts, seen = [], [], {}
    for number, line in enumerate(read_lines(path), start=1):
        sentence_id, sep, text = line.partition("\t")
        if not sep or not sentence_id:
            raise InputFormatError(f"{path}:{number}: expected 'id<TAB>sentence', got {line[:80]!r}")
        if not text.strip():
            raise InputFormatError(f"{path}:{number}: sentence {sentence_id!r} is empty")
        if sentence_id in seen:
            raise InputFormatError(f"{path}:{number}: id {sentence_id!r} already used on line {seen[sentence_id]}")
        seen[sentence_id] = number
        ids.append(sentence_id)
        texts.append(text)
    if not ids:
        raise InputFormatError(f"{path}: no sentences")
    return Sentences(path, ids, texts)


def read_gold(path: str | Path, src: Sentences, tgt: Sentences) -> set[tuple[str, str]]:
    """`src-id<TAB>tgt-id` lines; an id missing from its sentence file is an error naming the line."""
    path = Path(path)
    src_ids, tgt_ids, gold = set(src.ids), set(tgt.ids), set()
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.split("\t")
        if len(fields) != 2 or not all(fields):
            raise InputFormatError(f"{path}:{number}: expected 'source-id<TAB>target-id', got {line[:80]!r}")
        for sentence_id, known, source in ((fields[0], src_ids, src.path), (fields[1], tgt_ids, tgt.path)):
            if sentence_id not in known:
                raise InputFormatError(f"{path}:{number}: id {sentence_id!r} is not in {source}")
        gold.add((fields[0], fields[1]))
    if not gold:
        raise InputFormatError(f"{path}: no gold pairs")
    return gold


def unify(sentences: Sentences) -> UniqueTexts:
    counts = Counter(sentences.texts)
    first_row: dict[str, int] = {}
    for row, text in enumerate(sentences.texts):
        first_row.setdefault(text, row)
    rows = np.fromiter(first_row.values(), dtype=np.int64, count=len(first_row))
    texts = list(first_row)
    ids = [sentences.ids[row] if counts[text] == 1 else None for text, row in zip(texts, rows)]
    return UniqueTexts(rows, texts, ids)


def gold_similarities(gold, src_unique: UniqueTexts, tgt_unique: UniqueTexts, src_vectors: np.ndarray,
                      tgt_vectors: np.ndarray) -> np.ndarray:
    """The similarity (dot product of the mined unit vectors) of each gold pair whose texts are unambiguous: the
    lowest says how high `mining.min_cosine` may be set without cutting a true pair."""
    src_at = {i: n for n, i in enumerate(src_unique.ids) if i is not None}
    tgt_at = {i: n for n, i in enumerate(tgt_unique.ids) if i is not None}
    rows = np.array([(src_at[s], tgt_at[t]) for s, t in gold if s in src_at and t in tgt_at], dtype=np.int64)
    if not len(rows):
        return np.empty(0, dtype=np.float32)
    return np.einsum("ij,ij->i", src_vectors[rows[:, 0]], tgt_vectors[rows[:, 1]])


@dataclass(frozen=True)
class ScoredCandidates:
    """Id-level candidates sorted by score descending, with the gold they are judged against."""

    pairs: list[tuple[str, str]]
    scores: np.ndarray
    gold: frozenset[tuple[str, str]]

    @property
    def correct(self) -> np.ndarray:
        return np.fromiter((p in self.gold for p in self.pairs), dtype=bool, count=len(self.pairs))

    def restrict(self, keep_source) -> ScoredCandidates:
        """Only candidates and gold pairs whose source id satisfies `keep_source` (used for folds)."""
        keep = [keep_source(s) for s, _ in self.pairs]
        return ScoredCandidates(
            [p for p, k in zip(self.pairs, keep) if k],
            self.scores[np.array(keep, dtype=bool)] if keep else self.scores,
            frozenset(g for g in self.gold if keep_source(g[0])),
        )


def candidates_to_ids(pairs: Pairs, src: UniqueTexts, tgt: UniqueTexts, gold) -> ScoredCandidates:
    """Map mined pairs (rows of the unique texts) to id pairs; drop ambiguous texts; best score per id pair."""
    best: dict[tuple[str, str], float] = {}
    for s, t, score in zip(pairs.src.tolist(), pairs.tgt.tolist(), pairs.margin.tolist()):
        src_id, tgt_id = src.ids[s], tgt.ids[t]
        if src_id is not None and tgt_id is not None:
            key = (src_id, tgt_id)
            best[key] = max(best.get(key, -math.inf), score)
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return ScoredCandidates([p for p, _ in ranked], np.array([s for _, s in ranked]), frozenset(gold))


def prf(n_correct: int, n_extracted: int, n_gold: int) -> dict:
    precision = n_correct / n_extracted if n_extracted else 0.0
    recall = n_correct / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1,
            "correct": n_correct, "extracted": n_extracted, "gold": n_gold}


def sweep(candidates: ScoredCandidates) -> dict[str, np.ndarray]:
    """P, R and F1 when the top 1, 2, ... candidates are extracted."""
    correct = np.cumsum(candidates.correct)
    extracted = np.arange(1, len(correct) + 1)
    precision = correct / extracted
    recall = correct / max(len(candidates.gold), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(correct > 0, 2 * precision * recall / (precision + recall), 0.0)
    return {"scores": candidates.scores, "precision": precision, "recall": recall, "f1": f1}


def tune_threshold(candidates: ScoredCandidates) -> float:
    """The reference rule: midpoint between the best-F1 score and the next one (first best on ties).

    With no correct candidate there is nothing to tune towards: +inf extracts nothing.
    """
    f1 = sweep(candidates)["f1"]
    if not len(f1) or f1.max() == 0:
        return math.inf
    best = int(np.argmax(f1))
    scores = candidates.scores
    return float((scores[best] + scores[best + 1]) / 2) if best + 1 < len(scores) else float(scores[best])


def score_at(candidates: ScoredCandidates, threshold: float) -> dict:
    extracted = candidates.scores >= threshold
    return prf(int(candidates.correct[extracted].sum()), int(extracted.sum()), len(candidates.gold))


def source_fold(sentence_id: str, n_folds: int = 2) -> int:
    """A stable fold for a source id (crc32, not Python's salted hash)."""
    return zlib.crc32(sentence_id.encode("utf-8")) % n_folds


def cross_fold_score(candidates: ScoredCandidates, n_folds: int = 2) -> tuple[dict, list[float]]:
    """Tune on the other folds, apply to each held-out fold, sum the counts: an honest figure from one split."""
    correct = extracted = 0
    thresholds = []
    for fold in range(n_folds):
        held_out = candidates.restrict(lambda s: source_fold(s, n_folds) == fold)
        rest = candidates.restrict(lambda s: source_fold(s, n_folds) != fold)
        threshold = tune_threshold(rest)
        counts = score_at(held_out, threshold)
        correct += counts["correct"]
        extracted += counts["extracted"]
        thresholds.append(threshold)
    return prf(correct, extracted, len(candidates.gold)), thresholds


def pool(by_pair: dict[str, ScoredCandidates]) -> ScoredCandidates:
    """Several pairs' candidates as one list (ids prefixed by their pair, so they stay distinct), best first: one
    threshold for all of them, as a pipeline mining several language pairs at once applies it."""
    pairs = [(f"{name}:{s}", f"{name}:{t}") for name, c in by_pair.items() for s, t in c.pairs]
    scores = np.concatenate([c.scores for c in by_pair.values()]) if by_pair else np.zeros(0)
    gold = frozenset((f"{name}:{s}", f"{name}:{t}") for name, c in by_pair.items() for s, t in c.gold)
    order = np.argsort(-scores, kind="stable")
    return ScoredCandidates([pairs[i] for i in order], scores[order], gold)


def leave_one_pair_out(by_pair: dict[str, ScoredCandidates]) -> dict[str, dict]:
    """For each pair: the threshold tuned on the other pairs pooled, and the P/R/F1 it gives on this one, which
    no part of the tuning saw (a second split for a threshold shared across pairs)."""
    result = {}
    for name, candidates in by_pair.items():
        threshold = tune_threshold(pool({n: c for n, c in by_pair.items() if n != name}))
        result[name] = {**score_at(candidates, threshold), "threshold": threshold}
    return result
