"""Training inputs, read and checked before the first step: documents (for CMLM), bitext (for BR), NLI triples.

Documents
    * text: one sentence per line, a blank line between documents; the language from a `LANG=GLOB` label or the
      file name (`deu_Latn.txt.gz`);
    * Parquet, the pipeline's sentence output: columns `text`, `language`, `document_id`, and when present
      `paragraph_index` and `sentence_index`, which give the order within a document (else the row order).
    CMLM needs consecutive sentences, so documents with fewer than two sentences are skipped and counted.
Bitext
    * TSV, gzipped or not: `source<TAB>target`, or `score<TAB>source<TAB>target` as the miner writes it; the
      languages come from a `SRC-TGT=GLOB` label or from the file name (`deu_Latn-eng_Latn.tsv.gz`; `de-en.tsv` is
      the same language pair: names are the project's, the script from the texts where the name has none);
    * Parquet, the miner's bitext output (`score`, `src_text`, `tgt_text`, `src_lang`, `tgt_lang`).
    Scored pairs below `min_score` are left out. A line with the wrong number of columns, a language the project
    cannot name (`deu_Latm`, `ger`: a registered ISO 639-3 or 639-1 code, and an ISO 15924 script), an empty side,
    two sides that are the same text, or a pair read before for its language pair is a counted skip, and the first
    few are logged with file and line (PairCheck); documents in such a language alike. A language pair with
    fewer than FEW_PAIRS pairs is trained on as given, counted (`few_pairs`) and named with its files in a warning.
Every sentence is tokenised once, up front, into a ragged int32 array; sentences longer than the model's maximum
are cut and counted (the vector of the first max_seq_length tokens is still a fair training signal).
Distillation (METHODS §9) adds the teacher's vector of each pair's teacher-side sentence, embedded once and cached
(training/teacher.py) before the first step.
"""

from __future__ import annotations

import glob
import logging
import re
import sys
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from miner.io import InputFormatError, iter_lines
from miner.languages import (
    is_flores_name,
    is_language_code,
    is_language_name,
    language_code,
    language_parts,
    script_of,
)
from training.config import JoinConfig
from training.en_pairs import MIN_PAIRS as FEW_PAIRS  # what the train pool's preparation drops

log = logging.getLogger("training.data")
LOGGED_SKIPS = 5  # per reason: enough to find the problem, not a log flooded by a broken file
BELOW_MIN_SCORE = "bitext pair below data.min_score (by design, not logged)"
# a code the project cannot name (a typo, `deu_Latm`; a bibliographic code, `ger`) would train as a language of its
# own and match no language a user mines, shares or distils
UNNAMED = "in a language the project cannot name (ISO 639-3 or 639-1, and an ISO 15924 script)"


class Skips:
    """Counted skips by reason, with the first few places of each logged."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()

    def add(self, reason: str, where: str) -> None:
        self.counts[reason] += 1
        if self.counts[reason] <= LOGGED_SKIPS:
            log.warning("skipped %s: %s", where, reason)

    def count(self, reason: str) -> None:
        self.counts[reason] += 1

    def report(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


@dataclass
class Ragged:
    """Token id sequences stored as one int32 array and offsets (memory: 4 bytes a token)."""

    ids: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i]:self.offsets[i + 1]]

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @classmethod
    def concatenate(cls, parts: list[Ragged]) -> Ragged:
        if not parts:
            return cls(np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64))
        shifts = np.cumsum([0] + [len(p.ids) for p in parts[:-1]])
        offsets = np.concatenate([parts[0].offsets[:1]] + [p.offsets[1:] + shift for p, shift in zip(parts, shifts)])
        return cls(np.concatenate([p.ids for p in parts]), offsets)

    @classmethod
    def from_lists(cls, sequences: list[list[int]]) -> Ragged:
        offsets = np.zeros(len(sequences) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in sequences], out=offsets[1:])
        ids = np.fromiter((t for s in sequences for t in s), dtype=np.int32, count=int(offsets[-1]))
        return cls(ids, offsets)


@dataclass
class DocumentSet:
    """One language's sentences in document order; `pair_starts[i]` and the next sentence share a document."""

    language: str
    sentences: Ragged
    pair_starts: np.ndarray


@dataclass
class BitextSet:
    """One language pair's translation pairs; `*_keys` identify identical texts (they are not negatives)."""

    src_lang: str
    tgt_lang: str
    src: Ragged
    tgt: Ragged
    src_keys: np.ndarray
    tgt_keys: np.ndarray
    texts: tuple[list[str], list[str]] | None = None  # kept for held-out pairs (xsim counts identical texts)
    teacher_rows: np.ndarray | None = None  # per pair, the row of TrainingData.teacher (distillation targets)
    source_rows: np.ndarray | None = None  # per pair, the source's own row (monolingual distillation), if any
    weights: np.ndarray | None = None  # per pair, its source's data.bitext_weights entry (None: all 1)
    files: tuple[str, ...] = ()  # the files its pairs were read from (named when there are too few)

    @property
    def mass(self) -> float:
        """How many pairs the set counts as when language pairs are drawn: its weights' sum."""
        return float(len(self.src) if self.weights is None else self.weights.sum())

    @property
    def name(self) -> str:
        return f"{self.src_lang}-{self.tgt_lang}"


@dataclass
class TrainingData:
    documents: list[DocumentSet] = field(default_factory=list)
    bitext: list[BitextSet] = field(default_factory=list)
    heldout: list[BitextSet] = field(default_factory=list)
    nli: tuple[Ragged, Ragged, np.ndarray] | None = None
    teacher: np.ndarray | None = None  # [distinct teacher-side sentences, teacher dim] float32
    skips: dict[str, int] = field(default_factory=dict)
    few_pairs: dict[str, int] = field(default_factory=dict)  # language pairs trained on with < FEW_PAIRS pairs
    truncated: int = 0

    def summary(self) -> dict:
        return {
            "documents": {d.language: {"sentences": len(d.sentences), "pairs": len(d.pair_starts)}
                          for d in self.documents},
            "bitext": {b.name: len(b.src) for b in self.bitext},
            "heldout": {b.name: len(b.src) for b in self.heldout},
            "nli": len(self.nli[2]) if self.nli else 0,
            "teacher_sentences": 0 if self.teacher is None else len(self.teacher),
            "monolingual_distillation": sorted(b.name for b in self.bitext if b.source_rows is not None),
            "skipped": self.skips, "few_pairs": self.few_pairs, "truncated": self.truncated,
        }


class Tokenize:
    """The fast tokenizer's batch call, cutting at max_length and counting what it cut."""

    def __init__(self, tokenizer, max_length: int):
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
        self.backend.no_padding()
        self.backend.enable_truncation(max_length=max_length)
        self.truncated = 0

    def __call__(self, texts: list[str], chunk: int = 20000) -> Ragged:
        """In chunks: a tokenizer Encoding object weighs ~1 kB, too much to hold for a million sentences."""
        parts = []
        for start in range(0, len(texts), chunk):
            encodings = self.backend.encode_batch(texts[start:start + chunk])
            self.truncated += sum(1 for e in encodings if e.overflowing)
            parts.append(Ragged.from_lists([e.ids for e in encodings]))
        return Ragged.concatenate(parts)


# -- discovery -------------------------------------------------------------------------------------------------

def expand(spec: str, what: str) -> tuple[str | None, list[Path]]:
    """`LABEL=GLOB` or `GLOB` -> (label, files); a pattern that matches nothing is an error."""
    label, _, pattern = spec.rpartition("=") if "=" in spec else ("", "", spec)
    files = sorted(Path(p) for p in glob.glob(pattern))
    if not files:
        raise InputFormatError(f"{what} {spec!r}: no file matches {pattern}")
    return label or None, files


PAIR_NAME = re.compile(r"^([A-Za-z]{2,3}(?:_[A-Za-z]{4})?)-([A-Za-z]{2,3}(?:_[A-Za-z]{4})?)\b")


LANGUAGE_NAME = re.compile(r"^([A-Za-z]{2,3}(?:_[A-Za-z]{4})?)\.")


def language_of(path: Path) -> str:
    match = LANGUAGE_NAME.match(path.name)
    if not match:
        raise InputFormatError(f"{path}: cannot tell the language; name the file LANG.txt.gz (e.g. "
                               f"deu_Latn.txt.gz) or write LANG=GLOB")
    return match.group(1)


def pair_of(path: Path, label: str | None) -> tuple[str, str]:
    match = PAIR_NAME.match(label or path.name)
    if not match:
        raise InputFormatError(f"{path}: cannot tell the languages; name the file SRC-TGT.tsv.gz "
                               f"(e.g. deu_Latn-eng_Latn.tsv.gz) or write SRC-TGT=FILE")
    return match.group(1), match.group(2)


# -- documents -------------------------------------------------------------------------------------------------

def read_text_documents(path: Path, skips: Skips) -> list[list[str]]:
    documents, current, start = [], [], 1
    for number, line in enumerate(iter_lines(path), start=1):
        text = line.strip()
        if text:
            current.append(text)
            continue
        _close_document(documents, current, f"{path}:{start}", skips)
        current, start = [], number + 1
    _close_document(documents, current, f"{path}:{start}", skips)
    return documents


def _close_document(documents: list, sentences: list[str], where: str, skips: Skips) -> None:
    if len(sentences) >= 2:
        documents.append(sentences)
    elif sentences:
        skips.add("document with one sentence (CMLM needs two in a row)", where)


def read_parquet_documents(path: Path, skips: Skips) -> dict[str, list[list[str]]]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    missing = {"text", "language", "document_id"} - set(table.column_names)
    if missing:
        raise InputFormatError(f"{path}: sentence Parquet needs columns text, language, document_id; "
                               f"missing {', '.join(sorted(missing))}")
    order = [c for c in ("paragraph_index", "sentence_index") if c in table.column_names]
    rows = table.select(["language", "document_id", *order, "text"]).to_pylist()
    grouped: dict[tuple, list] = {}
    for position, row in enumerate(rows):
        key = (row["language"], row["document_id"])
        grouped.setdefault(key, []).append((*[row[c] for c in order], position, row["text"]))
    by_language: dict[str, list[list[str]]] = {}
    for (language, document), items in grouped.items():
        sentences = [item[-1].strip() for item in sorted(items) if item[-1] and item[-1].strip()]
        _close_document(by_language.setdefault(language, []), sentences, f"{path}: document {document}", skips)
    return by_language


def document_set(language: str, documents: list[list[str]], tokenize: Tokenize) -> DocumentSet:
    sentences = [s for d in documents for s in d]
    ends = np.cumsum([len(d) for d in documents])
    starts = np.concatenate([[0], ends[:-1]])
    pair_starts = np.concatenate([np.arange(s, e - 1) for s, e in zip(starts, ends)]) if documents else \
        np.zeros(0, dtype=np.int64)
    return DocumentSet(language, tokenize(sentences), pair_starts.astype(np.int64))


def load_documents(specs: list[str], tokenize: Tokenize, skips: Skips) -> list[DocumentSet]:
    by_language: dict[str, list[list[str]]] = {}

    def add(language: str, documents: list[list[str]], path: Path) -> None:
        if is_language_code(language):
            by_language.setdefault(language, []).extend(documents)
            return
        for _ in documents:
            skips.add(f"document {UNNAMED}", f"{path} ({language!r})")

    for spec in specs:
        label, files = expand(spec, "data.documents")
        for path in files:
            if path.suffix == ".parquet":
                for language, docs in read_parquet_documents(path, skips).items():
                    add(label or language, docs, path)
            else:
                add(label or language_of(path), read_text_documents(path, skips), path)
    return [document_set(lang, docs, tokenize) for lang, docs in sorted(by_language.items()) if docs]


# -- bitext ----------------------------------------------------------------------------------------------------

class PairCheck:
    """Each language pair's translation pairs, checked as they are read: a pair in a language the project cannot
    name (miner.languages.is_language_code), an empty side, two sides that are the same text (an untranslated
    string, a name, a number: nothing to learn, and in held-out pairs a free hit), and a pair already read for that
    language pair (in any file: it would be drawn twice as often) are counted skips, the first few logged with
    their place."""

    def __init__(self, skips: Skips):
        self.skips, self.seen = skips, {}

    def keep(self, langs: tuple[str, str], source: str, target: str, where: str) -> bool:
        if langs not in self.seen:  # a language pair the project cannot name gets no set: its pairs are all skipped
            self.seen[langs] = set() if all(is_language_code(lang) for lang in langs) else None
        seen = self.seen[langs]
        if seen is None:
            reason, where = f"bitext pair {UNNAMED}", f"{where} ({'-'.join(map(str, langs))})"
        elif not source or not target:
            reason = "bitext pair with an empty side"
        elif source == target:
            reason = "bitext pair whose two sides are the same text"
        elif (source, target) in seen:
            reason = "bitext pair read before for its language pair"
        else:
            seen.add((source, target))
            return True
        self.skips.add(reason, where)
        return False


def read_tsv_bitext(path: Path, skips: Skips, min_score: float | None, langs: tuple[str, str],
                    check: PairCheck | None = None) -> list[tuple[str, str]]:
    """The file's pairs of `langs`, checked by `check` (a new PairCheck: duplicates within this file only)."""
    pairs, columns, check = [], None, check or PairCheck(skips)
    for number, line in enumerate(iter_lines(path), start=1):
        if not line.strip():
            continue
        fields_ = line.split("\t")
        if columns is None and len(fields_) in (2, 3):  # the file's layout: its first line that has one
            columns = len(fields_)
        where = f"{path}:{number}"
        if len(fields_) != columns:
            skips.add(f"bitext line with {len(fields_)} columns (expected {columns or '2 or 3'})", where)
            continue
        if columns == 3:
            try:
                score = float(fields_[0])
            except ValueError:
                skips.add("bitext score is not a number", where)
                continue
            if min_score is not None and score < min_score:
                skips.count(BELOW_MIN_SCORE)
                continue
        source, target = fields_[-2].strip(), fields_[-1].strip()
        if check.keep(langs, source, target, where):
            pairs.append((source, target))
    return pairs


def read_parquet_bitext(path: Path, min_score: float | None, check: PairCheck,
                        langs: tuple[str, str] | None = None) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """The file's pairs by language pair, each named as the project names languages (project_pair) before `check`
    sees them; `langs` (a label's) for every row instead of its own."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    needed = {"src_text", "tgt_text", "src_lang", "tgt_lang"}
    if not needed <= set(table.column_names):
        raise InputFormatError(f"{path}: mined Parquet needs columns {', '.join(sorted(needed))}")
    rows: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
    for number, row in enumerate(table.to_pylist(), start=1):
        if min_score is not None and row.get("score") is not None and row["score"] < min_score:
            check.skips.count(BELOW_MIN_SCORE)
            continue
        source, target = (row["src_text"] or "").strip(), (row["tgt_text"] or "").strip()
        rows.setdefault(langs or (row["src_lang"], row["tgt_lang"]), []).append((number, source, target))
    grouped: dict[tuple[str, str], list] = {}
    for given, items in rows.items():
        named = project_pair(given, lambda: ([s for _, s, _ in items[:SCRIPT_SAMPLE]],
                                             [t for _, _, t in items[:SCRIPT_SAMPLE]]))
        for number, source, target in items:
            if check.keep(named, source, target, f"{path}: row {number}"):
                grouped.setdefault(named, []).append((source, target))
    return grouped


SCRIPT_SAMPLE = 1000  # pairs whose texts tell the script of a language named without one (`de`, `zh`)


def project_pair(langs: tuple[str, str], sides) -> tuple[str, str]:
    """A language pair as the project names languages (miner.languages.language_code: `de`, `zh` -> deu_Latn,
    zho_Hans or zho_Hant), the script from each side's texts (`sides()`, read only where a name needs them) where
    the name has none: `de-en.tsv` and `deu_Latn-eng_Latn.tsv.gz` are one language pair (one duplicate check, one
    set), Chinese is joined without spaces, and distill.monolingual's deu_Latn finds it. A name the project cannot
    name (is_language_code) leaves the pair as given, and its pairs are skipped under the names the file gave; a
    name whose script the texts cannot tell stays as given."""
    if all(is_flores_name(lang) for lang in langs) or not all(is_language_code(lang) for lang in langs):
        return langs
    texts = sides()

    def named(lang: str, side: list[str]) -> str:
        if is_flores_name(lang):
            return lang
        try:
            code = language_code(lang, side)
        except ValueError:  # no letter to tell the script by
            return lang
        return code if is_language_name(code) else lang

    return named(langs[0], texts[0]), named(langs[1], texts[1])


def sample_sides(path: Path, count: int = SCRIPT_SAMPLE) -> tuple[list[str], list[str]]:
    """The sources and targets of a TSV file's first `count` lines of two or three columns."""
    sources, targets = [], []
    for line in iter_lines(path):
        fields_ = line.split("\t")
        if len(fields_) in (2, 3):
            sources.append(fields_[-2].strip())
            targets.append(fields_[-1].strip())
            if len(sources) >= count:
                break
    return sources, targets


# Scripts whose sentences follow one another without a space (Thai, Lao, Khmer separate them with one).
JOINED_WITHOUT_SPACE = {"Hans", "Hant", "Jpan", "Hani"}


def joined_pairs(langs: tuple[str, str], pairs: list[tuple[str, str]], share: float, rule: JoinConfig,
                 seed: int) -> list[tuple[str, str]]:
    """`share * len(pairs)` pairs, each `rule.parts` pairs of `pairs` side by side, drawn without replacement within
    a joined pair and reproducibly per language pair; parts whose target has fewer than `min_words` words are not
    used, and parts are dropped from the end until both sides have at most `max_chars` characters."""
    usable = [p for p in pairs if len(p[1].split()) >= rule.min_words]
    count = round(share * len(pairs))
    if len(usable) < 2 or not count:
        return []
    rng = np.random.default_rng([seed, zlib.crc32(f"{langs[0]}-{langs[1]}".encode())])
    separators = ["" if script_of(lang) in JOINED_WITHOUT_SPACE else " " for lang in langs]
    sizes = rng.integers(rule.parts[0], rule.parts[1] + 1, size=count)
    joined = []
    for size in sizes:
        chosen = [usable[i] for i in rng.choice(len(usable), size=min(int(size), len(usable)), replace=False)]
        sides = [[p[0] for p in chosen], [p[1] for p in chosen]]
        while len(sides[0]) > 2 and any(len(sep.join(side)) > rule.max_chars for sep, side in zip(separators, sides)):
            sides[0].pop(), sides[1].pop()
        if all(len(sep.join(side)) <= rule.max_chars for sep, side in zip(separators, sides)):
            joined.append((separators[0].join(sides[0]), separators[1].join(sides[1])))
    return joined


class TextKeys:
    """Equal texts of one language get equal keys, across all files and pairs: a copy of a sentence (NTREX's
    English side is shared by 128 pairs) is not a negative of itself."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, str], int] = {}

    def __call__(self, language: str, texts: list[str]) -> np.ndarray:
        known = self.known
        return np.fromiter((known.setdefault((language, t), len(known)) for t in texts), dtype=np.int64,
                           count=len(texts))


def bitext_set(langs: tuple[str, str], pairs: list[tuple[str, str]], tokenize: Tokenize, keys: TextKeys,
               keep_texts: bool = False, weights: np.ndarray | None = None, files: tuple[str, ...] = ()) -> BitextSet:
    sources, targets = [p[0] for p in pairs], [p[1] for p in pairs]
    return BitextSet(langs[0], langs[1], tokenize(sources), tokenize(targets), keys(langs[0], sources),
                     keys(langs[1], targets), (sources, targets) if keep_texts else None, weights=weights,
                     files=files)


def load_bitext(specs: list[str], tokenize: Tokenize, skips: Skips, min_score: float | None,
                keep_texts: bool = False, limit: int | None = None,
                weights: list[float] | None = None, join: JoinConfig | None = None,
                seed: int = 0) -> list[BitextSet]:
    """Every spec's pairs grouped by language pair, named as the project names languages (project_pair: `de-en.tsv`
    is deu_Latn-eng_Latn); `weights` (one per spec) become each pair's draw weight;
    `join.shares` (one per spec) add that spec's joined pairs (joined_pairs), at `join.weight` or the spec's."""
    by_pair: dict[tuple[str, str], list[tuple[str, str]]] = {}
    pair_weights: dict[tuple[str, str], list[float]] = {}
    pair_files: dict[tuple[str, str], dict[str, None]] = {}

    def add(langs: tuple[str, str], pairs: list[tuple[str, str]], weight: float) -> None:
        by_pair.setdefault(langs, []).extend(pairs)
        pair_weights.setdefault(langs, []).extend([weight] * len(pairs))

    shares, check = join.shares if join else [0.0] * len(specs), PairCheck(skips)
    for spec, weight, share in zip(specs, weights or [1.0] * len(specs), shares, strict=True):
        label, files = expand(spec, "bitext")
        spec_pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for path in files:
            if path.suffix == ".parquet":
                labelled = pair_of(path, label) if label else None
                for langs, pairs in read_parquet_bitext(path, min_score, check, labelled).items():
                    spec_pairs.setdefault(langs, []).extend(pairs)
                    pair_files.setdefault(langs, {})[str(path)] = None
            else:
                langs = project_pair(pair_of(path, label), lambda: sample_sides(path))
                spec_pairs.setdefault(langs, []).extend(read_tsv_bitext(path, skips, min_score, langs, check))
                pair_files.setdefault(langs, {})[str(path)] = None
        for langs, pairs in spec_pairs.items():
            add(langs, pairs, weight)
            if share:
                add(langs, joined_pairs(langs, pairs, share, join, seed), join.weight or weight)
    keys = TextKeys()
    used = set(weights or [1.0]) | ({join.weight} if join and join.weight is not None and any(shares) else set())
    uniform = len(used) == 1  # equal weights draw as none: the same batches as before
    return [bitext_set(langs, pairs[:limit], tokenize, keys, keep_texts,
                       None if uniform else np.asarray(pair_weights[langs][:limit], dtype=np.float64),
                       tuple(pair_files.get(langs, ())))
            for langs, pairs in sorted(by_pair.items()) if pairs]


def attach_teacher(bitext: list[BitextSet], distill) -> np.ndarray:
    """The teacher's vectors of every distinct sentence on its side of the bitext (cached: training/teacher.py),
    and for each pair the row of its target; with `distill.monolingual`, the sources in those languages get rows of
    their own (`source_rows`). The pairs' texts are then let go."""
    from training.teacher import teacher_vectors

    side = 1 if distill.teacher_side == "target" else 0
    rows: dict[str, int] = {}

    def rows_of(texts: list[str]) -> np.ndarray:
        return np.fromiter((rows.setdefault(text, len(rows)) for text in texts), dtype=np.int64, count=len(texts))

    listed = listed_languages(distill.monolingual)
    for pairs in bitext:
        pairs.teacher_rows = rows_of(pairs.texts[side])
        if listed(pairs.src_lang):
            pairs.source_rows = rows_of(pairs.texts[0])
        pairs.texts = None
    if distill.monolingual:
        log.info("monolingual distillation: %d pairs in %d of the %d listed languages learn their source's own "
                 "teacher vector", sum(len(p.src) for p in bitext if p.source_rows is not None),
                 sum(p.source_rows is not None for p in bitext),
                 len(distill.monolingual))
    return teacher_vectors(distill.teacher, list(rows), distill.cache, show_progress=sys.stderr.isatty())


def listed_languages(codes: list[str]):
    """Whether a pair's language (deu_Latn, as project_pair names it) is among `codes`, which may name it in any
    form check_code lets through: deu_Latn, de_Latn, cmn_Hans (language_code's name), or de, deu without a script
    (any script of the language)."""
    named, bases = set(), set()
    for code in codes:
        base, script, _ = language_parts(code)
        if script:
            named.add(language_code(code))
        else:
            bases.add(base)
    return lambda language: language in named or language in codes or language.partition("_")[0] in bases


# -- NLI -------------------------------------------------------------------------------------------------------

def load_nli(path: Path, labels: list[str], tokenize: Tokenize, skips: Skips):
    premises, hypotheses, label_ids = [], [], []
    index = {label: i for i, label in enumerate(labels)}
    for number, line in enumerate(iter_lines(path), start=1):
        parts = line.split("\t")
        where = f"{path}:{number}"
        if len(parts) != 3 or not parts[0].strip() or not parts[1].strip():
            skips.add("NLI line that is not premise<TAB>hypothesis<TAB>label", where)
            continue
        if parts[2].strip() not in index:
            skips.add(f"NLI label not in {labels}", where)
            continue
        premises.append(parts[0].strip())
        hypotheses.append(parts[1].strip())
        label_ids.append(index[parts[2].strip()])
    return tokenize(premises), tokenize(hypotheses), np.asarray(label_ids, dtype=np.int64)


def warn_few_pairs(bitext: list[BitextSet]) -> dict[str, int]:
    """Language pairs with fewer than FEW_PAIRS pairs: trained on as given (a user's small set is theirs to
    use), but counted in the data summary and logged with the files they came from."""
    few = [pairs for pairs in bitext if len(pairs.src) < FEW_PAIRS]
    if few:
        named = [f"{pairs.name} {len(pairs.src)} ({', '.join(pairs.files) or 'no file'})" for pairs in few]
        log.warning("%d language %s fewer than %d translation pairs (trained on as given, but too few to learn "
                    "much from): %s", len(few), "pair has" if len(few) == 1 else "pairs have", FEW_PAIRS,
                    "; ".join(named[:10]) + (f" and {len(few) - 10} more" if len(few) > 10 else ""))
    return {pairs.name: len(pairs.src) for pairs in few}


# -- all of it -------------------------------------------------------------------------------------------------

def load_training_data(config, tokenizer) -> TrainingData:
    """Everything the recipe's stages need, checked: an objective left without examples is an error."""
    from miner.config import ConfigError

    tokenize, skips = Tokenize(tokenizer, config.model.max_seq_length), Skips()
    objectives, data = config.objectives(), config.data
    result = TrainingData()
    if "cmlm" in objectives:
        result.documents = load_documents(data.documents, tokenize, skips)
        if not result.documents:
            raise ConfigError("data.documents: no document with two or more sentences")
    if objectives & {"br", "distill"}:
        result.bitext = load_bitext(data.bitext, tokenize, skips, data.min_score, keep_texts="distill" in objectives,
                                    weights=data.bitext_weights or None, join=data.join, seed=config.seed)
        if not result.bitext:
            raise ConfigError("data.bitext: no usable translation pair")
        result.few_pairs = warn_few_pairs(result.bitext)
    if "distill" in objectives:
        result.teacher = attach_teacher(result.bitext, config.distill)
    if data.heldout:
        result.heldout = load_bitext(data.heldout, tokenize, skips, None, keep_texts=True,
                                     limit=data.heldout_pairs)
    if "nli" in objectives:
        result.nli = load_nli(Path(data.nli), config.nli.labels, tokenize, skips)
        if not len(result.nli[2]):
            raise ConfigError(f"data.nli: {data.nli} has no usable example")
    result.skips, result.truncated = skips.report(), tokenize.truncated
    if result.truncated:
        log.info("%d sentences were longer than %d tokens and were cut", result.truncated,
                 config.model.max_seq_length)
    return result
