"""Paragraph -> sentences, across scripts.

Method (the "auto" splitter; `python -m pipelines.text.sentences evaluate` measures it against the alternatives):

* Candidate cuts from sentencex (Wikimedia's rule-based segmenter, MIT: terminators and abbreviation lists for
  ~30 languages, fallback chains for ~300), called with the ISO 639-1 code where the language has one, because its
  rules are keyed by it (`deu` falls back to English and splits "am 3. Mai"); other names go as ISO 639-3, which
  its fallback chains often know (`fon` -> French).
* Thai has no sentence-final punctuation: sentences are separated by spaces, as are clauses within a sentence.
  PyThaiNLP's CRFCut (a CRF over the words around each space, trained on Thai TED transcripts and ORCHID; the
  model ships inside the package) decides which spaces end a sentence.
* Plus our own cuts after the terminators other than the full stop, which sentencex misses in some scripts
  (Khmer ។, Burmese ။, Ol Chiki ᱾, Tibetan ། before a space, every CJK 。！？ even before a digit).
* Then our corrections, each fixing errors measured on UD PUD: a cut with no space after the full stop is dropped
  (`E.ON`, `J.-C.`) except after CJK full stops; a cut before a lowercase letter, a comma or a closing bracket is
  dropped (`w 2010 r. fundacja`, `до н. э., которое`); a cut after a letter standing alone is dropped (initials,
  `M. Panvalkar`, `т. е.`; a lowercase one only beside another, since Haitian `a.` ends sentences); in languages
  that write ordinals with a full stop a cut after a 1-3 digit number is dropped (`am 21. Oktober`); a cut after a
  comma-like mark is dropped (sentencex cuts after Burmese ၊ and ၏); an opening quote left at the end of a sentence
  moves to the next one (Finnish and Swedish open quotes with `”`).
* The "rules" splitter is ours alone (no library): our terminators and corrections plus a small hand-written list
  of title abbreviations. Thai aside, it measures as well as "auto" on UD PUD and FLORES, whose news and Wikipedia
  text has few abbreviations; "auto" keeps sentencex for its per-language abbreviation lists, which web text needs
  more.

Language names are `lang_Script` (`deu_Latn`, `zho_Hans`, `tha_Thai`); None or an unknown name means "split by
the text's dominant script" (Latin text with the English rules, Thai text with CRFCut, and so on).

Bounded work: the underlying splitter sees windows of at most `window_chars` characters (default 10,000), each
ending after the last sentence-final punctuation or else the last space of its second half (a hard cut if it has
neither); past `max_chars` (default 100,000) a paragraph is only cut into such windows. So a call costs at most
ten windows' splitting plus a linear scan, and 1 MB without punctuation comes back as 100 window-sized pieces
(which the length filter drops later).

Sentences come back stripped, non-empty and in order; their concatenation is the input minus whitespace at the
cuts: the splitter only chooses cut offsets and never edits text.

Commands:
    python -m pipelines.text.sentences evaluate --ud ../shared/data/train/ud-pud [--report out.json]
        [--methods auto,sentencex,rules,pysbd] [--languages de,zh,...]
    python -m pipelines.text.sentences evaluate --flores ../shared/data/dev/flores200-devtest [...]   (held out)
    python -m pipelines.text.sentences split [--language deu_Latn] < paragraphs.txt   (one sentence a line)

UD protocol: each PUD document's gold sentences (grouped by the `# sent_id` prefix, `n01001` of `n01001011`:
`# newdoc` is missing in gl/id/ko/pl/th and on every sentence in ar/zh) joined with a space into one paragraph,
without one for zh/ja (their text puts none between sentences; the CoNLL-U files do not record it: no `# newpar`,
and a sentence's last token never carries SpaceAfter=No). Thai and Korean are joined with a space, as written.
A predicted boundary is the end offset of a stripped sentence; the paragraph's own end is not scored.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import itertools
import logging
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from miner.console import ExtraMissingError
from miner.io import InputFormatError, read_lines
from miner.languages import TWO_TO_THREE, char_script, dominant_script
from pipelines.text.records import Tally

log = logging.getLogger("pipelines.text.sentences")

STAGE = "sentences"
WINDOW_CHARS = 10_000
MAX_CHARS = 100_000
REQUIREMENTS = {"sentencex": "sentencex>=1.0.32", "pythainlp": "pythainlp>=5.4",
                "pycrfsuite": "python-crfsuite>=0.9.12", "pysbd": "pysbd>=0.3.4"}

# ISO 639-3 (as FLORES-200 names them) -> the ISO 639-1 code sentencex keys its rules by; other three-letter names
# go to sentencex as they are (its fallback chains know many: `fon` -> French, `vec` -> Italian)
ISO_639_1 = {three: two for two, three in TWO_TO_THREE.items()} | {
    "afr": "af", "als": "sq", "amh": "am", "arb": "ar", "ary": "ar", "arz": "ar", "asm": "as", "azj": "az",
    "bak": "ba", "bel": "be", "bod": "bo", "bos": "bs", "bre": "br", "bul": "bg", "cat": "ca", "cym": "cy",
    "dan": "da", "ell": "el", "epo": "eo", "eus": "eu", "fao": "fo", "gle": "ga", "gla": "gd", "hau": "ha",
    "heb": "he", "hrv": "hr", "hun": "hu", "hye": "hy", "ibo": "ig", "jav": "jv", "kan": "kn", "kat": "ka",
    "khk": "mn", "kir": "ky", "kmr": "ku", "ltz": "lb", "lvs": "lv", "mal": "ml", "mar": "mr", "mkd": "mk",
    "mlt": "mt", "mri": "mi", "mya": "my", "nld": "nl", "nno": "nn", "nob": "nb", "npi": "ne", "oci": "oc",
    "ory": "or", "pan": "pa", "pbt": "ps", "pes": "fa", "plt": "mg", "ron": "ro", "san": "sa", "slk": "sk",
    "slv": "sl", "snd": "sd", "som": "so", "srp": "sr", "sun": "su", "swh": "sw", "tat": "tt", "tel": "te",
    "tgk": "tg", "tgl": "tl", "tuk": "tk", "uig": "ug", "ukr": "uk", "urd": "ur", "uzn": "uz", "vie": "vi",
    "yid": "yi", "yor": "yo", "zsm": "ms", "zho": "zh", "yue": "zh", "dzo": "dz",
    "ydd": "yi", "gaz": "om", "quy": "qu", "ayr": "ay",
}
# a script's representative language when the language is unknown
SCRIPT_LANGUAGE = {
    "Latn": "en", "Cyrl": "ru", "Grek": "el", "Arab": "ar", "Hebr": "he", "Deva": "hi", "Beng": "bn",
    "Guru": "pa", "Gujr": "gu", "Orya": "or", "Taml": "ta", "Telu": "te", "Knda": "kn", "Mlym": "ml", "Sinh": "si",
    "Thai": "th", "Laoo": "lo", "Tibt": "bo", "Mymr": "my", "Geor": "ka", "Hang": "ko", "Ethi": "am", "Khmr": "km",
    "Armn": "hy", "Thaa": "dv", "Hani": "zh", "Hans": "zh", "Hant": "zh", "Jpan": "ja",
}
# languages that write ordinal numbers with a full stop ("am 21. Oktober", "21. října", "w 4. klasie")
ORDINAL_DOT = {"de", "cs", "sk", "pl", "fi", "is", "tr", "da", "nb", "nn", "no", "hu", "et", "lv", "lt", "sl",
               "hr", "sr", "bs", "eu", "fo", "sq", "mk"}
CASED_SCRIPTS = {"Latn", "Cyrl", "Grek", "Armn"}   # Georgian has case in Unicode but not in running text

CJK_TERMINATORS = "。！？｡"
# full stops, question and exclamation marks of the scripts that have them (Thai and Lao have none)
SPACED_TERMINATORS = ".!?…‼⁇⁈⁉؟۔।॥።፧։။។៕᱾᱿"
TERMINATORS = SPACED_TERMINATORS + CJK_TERMINATORS
GREEK_QUESTION = ";\u037e"
ARMENIAN_FULL_STOP = ":"   # typed for ։ in most Armenian text
TIBETAN_SHAD = "།༎"          # ends clauses as well as sentences: a cut only where a space follows
# marks that end a clause, never a sentence: sentencex cuts after Burmese ၊ (comma) and ၏ (genitive) for `my`
NON_TERMINAL = ",，、،၊၏"
CLOSING = "\"'”’»›)]}」』】〕〉》）］｝"
CLOSING_AFTER_STOP = CLOSING + "“‘"   # German „…“ and ‚…‘ close with what English opens with
QUOTATIVE = "とっ、，"   # 「行きます。」と言った: a quote closed inside a Japanese sentence
QUOTES = "\"'“”„‟«»‹›‘’‚‛「」『』"
# a cut the corrections never drop: after a CJK full stop (and closing quotes/brackets), whatever follows
_CJK_END = re.compile(f"[{CJK_TERMINATORS}][{re.escape(CLOSING)}]*$")
_CJK_CUT = re.compile(f"[{CJK_TERMINATORS}]+(?=\\s*[^\\s{re.escape(CLOSING)}{CJK_TERMINATORS}])\\s*")
# a letter standing alone before a full stop (initials, `z. B.`, `т. е.`): before it a space, punctuation or the start
_SINGLE_LETTER_END = re.compile(r"(?:^|[\s.\-(\[\"'„“«‚‘/])([^\W\d_])\.$")
_ABBREVIATION_START = re.compile(r"\s*[^\W\d_]{1,3}\.")
_ORDINAL_END = re.compile(r"(?<!\S)\d{1,3}\.$")
# "...hinzufügen. 250 Gramm ...": sentencex never cuts before a number in German (its guard for "am 3. Mai"); after
# a word of five letters or more, a full stop before a number ends a sentence
_NUMBER_START = re.compile(r"(?<=[^\W\d_]{5})\.\s+(?=\d)")
_SOFT_WINDOW_END = re.compile(f"[{re.escape(TERMINATORS)}][{re.escape(CLOSING_AFTER_STOP)}]*\\s+")


# ---------------------------------------------------------------------------------------------------------------
# languages


@dataclass(frozen=True)
class Language:
    """What the splitter needs to know of a language: the code sentencex uses, and the script."""

    code: str          # ISO 639-1 where there is one ("de"), else ISO 639-3 ("fon"); by script when unknown ("en")
    script: str | None

    @property
    def thai(self) -> bool:
        return self.script == "Thai" or self.code == "th"


def resolve_language(language: str | None, text: str) -> Language:
    """`deu_Latn` -> Language("de", "Latn"); None or an unknown name -> the representative of the text's script."""
    known = known_language(language)
    if known is not None:
        return known
    script = (language or "").partition("_")[2] or dominant_script([text[:400]], sample_chars=200)
    return Language(SCRIPT_LANGUAGE.get(script or "", "en"), script)


@functools.lru_cache(maxsize=4096)
def known_language(language: str | None) -> Language | None:
    """The Language of a name whose language part is known (cached: the pipeline asks millions of times)."""
    base, _, script = (language or "").partition("_")
    base = base.lower()
    if base in ISO_639_1:
        return Language(ISO_639_1[base], script or None)
    if len(base) in (2, 3) and base.isalpha() and base.isascii() and base != "und":
        return Language(base, script or None)
    return None


# ---------------------------------------------------------------------------------------------------------------
# cut finders: each returns the offsets where a new sentence starts (strictly inside the text)


def _require(module: str, purpose: str):
    try:
        return __import__(module)
    except ImportError:
        raise ExtraMissingError(f"{purpose} needs the `{module}` package, which is not installed: "
                          f"pip install '{REQUIREMENTS[module]}'") from None


@functools.cache
def _sentencex():
    return _require("sentencex", "sentence splitting")


@functools.cache
def _crfcut():
    _require("pycrfsuite", "Thai sentence splitting")
    _require("pythainlp", "Thai sentence splitting")
    from pythainlp.tokenize import sent_tokenize

    return functools.partial(sent_tokenize, engine="crfcut")


def _cuts_of_pieces(text: str, pieces: Iterable[str]) -> list[int]:
    """Cut offsets from a segmenter's pieces, found in the text in order (whitespace may differ around them)."""
    cuts, pos = [], 0
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        found = text.find(piece, pos)
        if found < 0:  # a segmenter that edits text: keep what was aligned, never invent cuts
            break
        if pos:
            cuts.append(found)
        pos = found + len(piece)
    return cuts


def sentencex_cuts(text: str, language: Language) -> list[int]:
    return _cuts_of_pieces(text, _sentencex().segment(language.code, text))


def crfcut_cuts(text: str, language: Language) -> list[int]:
    return _cuts_of_pieces(text, _crfcut()(text))


# titles and abbreviations usually followed by a capitalised word; lowercase continuations are handled by rule
_ABBREVIATIONS = frozenset({
    "Mr", "Mrs", "Ms", "Dr", "Prof", "Sr", "Sra", "Srta", "Jr", "St", "Ste", "Mt", "Rev", "Hon", "Gen", "Col",
    "Capt", "Lt", "Sgt", "Gov", "Sen", "Rep", "Pres", "Insp", "Cmdr", "Adm", "Maj", "Mme", "Mlle", "Mgr", "Me", "Hr",
    "Hrn", "Fr", "Frl", "Dipl", "Ing", "Mag", "Nr", "No", "Nos", "Art", "Abs", "Bd", "Bde", "Kap", "Tab", "Abb",
    "Fig", "Vol", "Sp", "Ziff", "Jh", "Jhdt", "Str", "Inc", "Ltd", "Co", "Corp", "Bros", "Ave", "Blvd", "Rd", "Dept",
    "Univ", "Assn", "Ass", "Est", "vs", "ca", "approx", "cf", "vgl", "bzw", "usw", "ggf", "evtl", "sog",
    "inkl", "Hrsg", "Tel", "Fax", "Apr", "Aug", "Sept", "Sep", "Oct", "Okt", "Nov", "Dec", "Dez", "Jan", "Feb",
    "Mar", "Jun", "Jul", "Sta", "Sto", "Av", "Pça", "Exmo", "Exma", "Ilmo", "Sres", "Dña", "Dn", "Dra", "Lic", "Arq",
    "Pág", "Cía", "Hno", "Sig", "Sigg", "Dott", "Avv", "Geom", "Egr", "Gent", "Spett", "Tov", "Bc", "Doc", "Sz",
    "гг", "ул", "пр", "им", "тов", "см", "рис", "стр",
})


def rule_cuts(text: str, language: Language) -> list[int]:
    """Our own splitter: a cut after sentence-final punctuation (and closing quotes) followed by a space, unless the
    word before is a known abbreviation; after CJK full stops whether or not a space follows."""
    cuts = []
    for match in _rule_pattern(_extra_terminators(language)).finditer(text):
        end = match.end()
        if end >= len(text):
            break
        if text[match.start()] == "." and _word_before(text, match.start()) in _ABBREVIATIONS:
            continue
        cuts.append(end)
    return cuts


def _extra_terminators(language: Language) -> str:
    extra = GREEK_QUESTION if language.code == "el" or language.script == "Grek" else ""
    extra += ARMENIAN_FULL_STOP if language.code == "hy" or language.script == "Armn" else ""
    return extra + (TIBETAN_SHAD if language.code in {"bo", "dz"} or language.script == "Tibt" else "")


def unambiguous_rule_cuts(text: str, language: Language) -> list[int]:
    """Our cuts after terminators other than the full stop, which sentencex misses in some scripts (Khmer ។,
    Burmese ။, Ol Chiki ᱾); the full stop's abbreviations are left to sentencex's lists."""
    if _other_terminator(_extra_terminators(language)).search(text) is None:   # most paragraphs: a quick scan
        return []
    return [cut for cut in rule_cuts(text, language)
            if text[max(0, cut - 20):cut].rstrip(" \t\n" + CLOSING_AFTER_STOP)[-1:] != "."]


@functools.cache
def _other_terminator(extra_terminators: str) -> re.Pattern:
    return re.compile(f"[{re.escape(TERMINATORS.replace('.', '') + extra_terminators)}]")


@functools.cache
def _rule_pattern(extra_terminators: str) -> re.Pattern:
    spaced = re.escape(SPACED_TERMINATORS + extra_terminators)
    cjk, closing = re.escape(CJK_TERMINATORS), re.escape(CLOSING_AFTER_STOP)
    return re.compile(f"[{spaced}]+[{closing}]*\\s+|[{cjk}]+(?![{closing}])\\s*|[{cjk}]+[{closing}]+\\s+")


def _word_before(text: str, end: int) -> str:
    start = end
    while start > 0 and text[start - 1].isalpha():
        start -= 1
    return text[start:end]


# ---------------------------------------------------------------------------------------------------------------
# corrections: applied to every cut finder's output (see the module docstring for the error each one fixes)


def correct_cuts(text: str, cuts: list[int], language: Language) -> list[int]:
    kept: list[int] = []
    for cut in cuts:
        cut = _move_dangling_quote(text, cut)
        if (kept and cut <= kept[-1]) or not 0 < cut < len(text):
            continue
        if _keeps(text, cut, language):
            kept.append(cut)
    return _with_cjk_cuts(text, kept)


def _keeps(text: str, cut: int, language: Language) -> bool:
    before = text[max(0, cut - 40):cut].rstrip()
    if _CJK_END.search(before):
        return not (before[-1] in CLOSING and text[cut] in QUOTATIVE)
    if not text[cut - 1].isspace() or before[-1:] in NON_TERMINAL:
        return False
    if _starts_lowercase(text, cut) or text[cut] in ",;:)]}%":
        return False
    if before.endswith(".") and _single_letter_abbreviation(before, text, cut):
        return False
    return not (language.code in ORDINAL_DOT and _ORDINAL_END.search(before))


def _single_letter_abbreviation(before: str, text: str, cut: int) -> bool:
    """Initials (`J. K. Rowling`, `M. Panvalkar`, `B.C.`) and short abbreviations (`z. B.`, `т. е.`, `v. Chr.`,
    `w 2014 r. Krymie`).

    A lowercase letter alone is also a word that ends sentences in some languages (Haitian and French `a`): it
    counts only beside another abbreviation or after a number."""
    match = _SINGLE_LETTER_END.search(before)
    if match is None:
        return False
    if not match.group(1).islower():
        return True
    rest = before[:match.start(1)].rstrip()
    return bool(_SINGLE_LETTER_END.search(rest) or rest[-1:].isdigit() or _ABBREVIATION_START.match(text, cut))


def _starts_lowercase(text: str, cut: int) -> bool:
    """Whether the next sentence's first letter (after opening quotes, dashes, brackets) is a lowercase letter of a
    cased script."""
    for char in text[cut:cut + 6]:
        if char.isalnum():
            return char.islower() and char_script(char) in CASED_SCRIPTS
    return False


def _move_dangling_quote(text: str, cut: int) -> int:
    """`… perustuen. ”En haluaisi …`: a quote standing alone before the cut opens the next sentence."""
    if 2 <= cut < len(text) and text[cut - 1] in QUOTES and text[cut - 2].isspace() and not text[cut].isspace():
        return cut - 1
    return cut


def _with_cjk_cuts(text: str, cuts: list[int]) -> list[int]:
    """Every CJK full stop not followed by a closing quote or bracket ends a sentence."""
    extra = [m.end() for m in _CJK_CUT.finditer(text) if m.end() < len(text)]
    if not extra:
        return cuts
    return sorted(set(cuts) | set(extra))


# ---------------------------------------------------------------------------------------------------------------
# the splitter


METHODS = ("auto", "sentencex", "rules", "pysbd")


class SentenceSplitter:
    """Split paragraphs into sentences. Language settings, sentencex's per-language rules and the Thai model are
    resolved or loaded once and cached (the pipeline calls this millions of times).

    method: "auto" (the product's splitter: sentencex, CRFCut for Thai, our corrections), "sentencex" (the library
    alone), "rules" (ours alone), "pysbd" (for comparison only).
    window_chars: the most characters one call of the underlying splitter sees.
    max_chars: past this many characters a paragraph is only cut into windows, not split (the bound on one call's
    work: a 1 MB paragraph costs a regex scan, not a hundred CRF runs).
    """

    def __init__(self, method: str = "auto", window_chars: int = WINDOW_CHARS, max_chars: int = MAX_CHARS,
                 tally: Tally | None = None):
        if method not in METHODS:
            raise ValueError(f"unknown sentence splitting method {method!r}: choose one of {', '.join(METHODS)}")
        if not 100 <= window_chars <= max_chars:
            raise ValueError(f"need 100 <= window_chars <= max_chars, not {window_chars} and {max_chars}")
        self.method = method
        self.window_chars = window_chars
        self.max_chars = max_chars
        self.tally = tally

    def split(self, text: str, language: str | None = None) -> list[str]:
        """`text`'s sentences: stripped, non-empty, in order."""
        starts = [0, *self.cuts(text, language), len(text)]
        sentences = [text[a:b].strip() for a, b in itertools.pairwise(starts)]
        sentences = [s for s in sentences if s]
        if self.tally is not None:
            self.tally.count(STAGE, "paragraphs")
            self.tally.count(STAGE, "sentences", len(sentences))
        return sentences

    def cuts(self, text: str, language: str | None = None) -> list[int]:
        """Offsets where a sentence starts, other than 0, in increasing order."""
        lang = resolve_language(language, text)
        cuts: list[int] = []
        for start, end in self.windows(text):
            if start:
                cuts.append(start)
            if start < self.max_chars:
                cuts.extend(start + cut for cut in self._window_cuts(text[start:end], lang))
        return cuts

    def windows(self, text: str) -> list[tuple[int, int]]:
        """Bounded pieces of a long paragraph, each ending at sentence-final punctuation or a space if it can."""
        if len(text) <= self.window_chars:
            return [(0, len(text))]
        if self.tally is not None:
            self.tally.count(STAGE, "long_paragraphs" if len(text) <= self.max_chars else "too_long_paragraphs")
        spans, start = [], 0
        while len(text) - start > self.window_chars:
            end = _window_end(text, start, start + self.window_chars)
            spans.append((start, end))
            start = end
        spans.append((start, len(text)))
        return spans

    def _window_cuts(self, text: str, language: Language) -> list[int]:
        if self.method == "sentencex":
            return sentencex_cuts(text, language)
        if self.method == "pysbd":
            return _cuts_of_pieces(text, _pysbd_segmenter(language.code).segment(text))
        if self.method == "rules":
            return correct_cuts(text, rule_cuts(text, language), language)
        finder = crfcut_cuts if language.thai else sentencex_cuts
        cuts = set(finder(text, language)) | set(unambiguous_rule_cuts(text, language))
        cuts |= {match.end() for match in _NUMBER_START.finditer(text) if match.end() < len(text)}
        return correct_cuts(text, sorted(cuts), language)


def _window_end(text: str, start: int, limit: int) -> int:
    """The end of a window: after the last sentence-final punctuation in its second half, else its last space."""
    half = start + (limit - start) // 2
    last = None
    for last in _SOFT_WINDOW_END.finditer(text, half, limit):
        pass
    if last is not None:
        return last.end()
    space = max(text.rfind(" ", half, limit), text.rfind("\n", half, limit))
    return space + 1 if space > 0 else limit


@functools.cache
def _pysbd_segmenter(code: str):
    pysbd = _require("pysbd", "the pysbd comparison (not a requirement of the product)")
    return pysbd.Segmenter(language=code if code in pysbd.languages.LANGUAGE_CODES else "en", clean=False)


@functools.cache
def _default_splitter() -> SentenceSplitter:
    return SentenceSplitter()


def split_sentences(text: str, language: str | None = None) -> list[str]:
    """The sentences of a paragraph (`language` as `lang_Script`, or None to go by the text's script)."""
    return _default_splitter().split(text, language)


# ---------------------------------------------------------------------------------------------------------------
# evaluation on UD PUD: boundary precision, recall and F1 per language

# UD's two-letter file prefixes -> our language names
UD_LANGUAGES = {
    "ar": "arb_Arab", "cs": "ces_Latn", "de": "deu_Latn", "en": "eng_Latn", "es": "spa_Latn", "fi": "fin_Latn",
    "fr": "fra_Latn", "gl": "glg_Latn", "hi": "hin_Deva", "id": "ind_Latn", "is": "isl_Latn", "it": "ita_Latn",
    "ja": "jpn_Jpan", "ko": "kor_Hang", "pl": "pol_Latn", "pt": "por_Latn", "ru": "rus_Cyrl", "sv": "swe_Latn",
    "th": "tha_Thai", "tr": "tur_Latn", "zh": "zho_Hant",
}
# languages whose running text puts no space between sentences (UD's CoNLL-U does not record it: PUD has no
# `# newpar`, and the last token of a sentence never carries SpaceAfter=No)
NO_SPACE_BETWEEN = {"zh", "ja"}


def read_ud_documents(path: Path) -> list[list[str]]:
    """The gold sentences of a CoNLL-U file (`# text =`), grouped into documents by their `# sent_id` prefix.

    PUD's ids are `n01001011`: document `n01001`, sentence 011; every language has the same ids, while `# newdoc`
    is missing in some languages (gl, id, ko, pl, th) and on every sentence in others (ar, zh).
    """
    documents: dict[str, list[str]] = {}
    sent_id = None
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.startswith("# sent_id"):
                    sent_id = line.partition("=")[2].strip()
                elif line.startswith("# text ="):
                    if not sent_id:
                        raise InputFormatError(f"{path}:{number}: `# text` without a `# sent_id` before it")
                    documents.setdefault(sent_id[:6], []).append(line.partition("=")[2].strip())
                    sent_id = None
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise InputFormatError(f"{path}: cannot read ({err})") from None
    if not documents:
        raise InputFormatError(f"{path}: no `# text =` lines")
    return list(documents.values())


def paragraph_of(sentences: list[str], separator: str) -> tuple[str, set[int]]:
    """The pseudo-paragraph of a document's sentences, and its gold boundaries: where each sentence but the last
    ends (the paragraph's own end is not scored: every splitter gets it right)."""
    text = separator.join(sentences)
    ends, pos = set(), 0
    for sentence in sentences[:-1]:
        pos += len(sentence)
        ends.add(pos)
        pos += len(separator)
    return text, ends


def predicted_ends(text: str, cuts: list[int]) -> set[int]:
    return {len(text[:cut].rstrip()) for cut in cuts}


@dataclass
class Score:
    true_positives: int = 0
    false_positives: int = 0
    false_negatives: int = 0
    paragraphs: int = 0
    seconds: float = 0.0

    def add(self, gold: set[int], predicted: set[int]) -> None:
        self.true_positives += len(gold & predicted)
        self.false_positives += len(predicted - gold)
        self.false_negatives += len(gold - predicted)
        self.paragraphs += 1

    @property
    def precision(self) -> float:
        found = self.true_positives + self.false_positives
        return self.true_positives / found if found else 1.0

    @property
    def recall(self) -> float:
        gold = self.true_positives + self.false_negatives
        return self.true_positives / gold if gold else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_dict(self) -> dict:
        return {"precision": round(self.precision, 4), "recall": round(self.recall, 4), "f1": round(self.f1, 4),
                "gold_boundaries": self.true_positives + self.false_negatives,
                "predicted_boundaries": self.true_positives + self.false_positives, "paragraphs": self.paragraphs,
                "seconds": round(self.seconds, 3)}


def ud_files(folder: Path, languages: list[str] | None = None) -> dict[str, Path]:
    files = {path.name.split("_", 1)[0]: path for path in sorted(folder.glob("*_pud-ud-test.conllu.gz"))}
    if not files:
        raise InputFormatError(f"{folder}: no UD PUD files (*_pud-ud-test.conllu.gz)")
    unknown = [lc for lc in files if lc not in UD_LANGUAGES]
    if unknown:
        raise InputFormatError(f"{folder}: no language name known for {', '.join(unknown)}")
    return _subset(files, languages, f"{folder}: no PUD file for")


def evaluate_ud(folder: Path, methods: list[str], languages: list[str] | None = None) -> dict:
    """Boundary scores per method and language on UD PUD pseudo-paragraphs (one per document)."""
    corpora = {lc: (UD_LANGUAGES[lc], "" if lc in NO_SPACE_BETWEEN else " ", path)
               for lc, path in ud_files(folder, languages).items()}
    return {"data": str(folder), "protocol": UD_PROTOCOL,
            "methods": _evaluate(corpora, methods, read_ud_documents)}


def evaluate_flores(folder: Path, methods: list[str], languages: list[str] | None = None) -> dict:
    """The same scores on FLORES-200 devtest: a held-out check across ~200 languages and 30 scripts (the
    corrections were designed on UD PUD's errors; FLORES was not looked at while writing them)."""
    corpora = {}
    for name, path in flores_files(folder, languages).items():
        corpora[name] = (name, "" if name.split("_")[1] in {"Hans", "Hant", "Jpan"} else " ", path)
    documents = flores_documents(folder)
    return {"data": str(folder), "protocol": FLORES_PROTOCOL,
            "methods": _evaluate(corpora, methods, lambda path: documents(read_lines(path)))}


UD_PROTOCOL = ("each document's gold sentences (grouped by the sent_id prefix) joined into one paragraph with a "
               "space, without one for zh/ja; a predicted boundary is the end offset of a stripped sentence; the "
               "paragraph's own end is not scored; micro P/R/F1 per language, macro mean over languages")
FLORES_PROTOCOL = ("consecutive devtest sentences of the same source URL (metadata_devtest.tsv.gz) joined into one "
                   "paragraph with a space, without one for Hans/Hant/Jpan; scored as for UD")


def _evaluate(corpora: dict[str, tuple[str, str, Path]], methods: list[str],
              read_documents: Callable[[Path], list[list[str]]]) -> dict:
    documents = {name: read_documents(path) for name, (_, _, path) in corpora.items()}
    results: dict[str, dict] = {}
    for method in methods:
        splitter = SentenceSplitter(method)
        per_language = {}
        for name, (language, separator, _) in corpora.items():
            per_language[name] = _score(splitter, documents[name], language, separator).as_dict()
            log.info("%s %s: F1 %.4f", method, name, per_language[name]["f1"])
        macro = {key: round(sum(row[key] for row in per_language.values()) / len(per_language), 4)
                 for key in ("precision", "recall", "f1")}
        results[method] = {"languages": per_language, "macro": macro}
    return results


def _score(splitter: SentenceSplitter, documents: list[list[str]], language: str, separator: str) -> Score:
    score = Score()
    for sentences in documents:
        text, gold = paragraph_of(sentences, separator)
        started = time.perf_counter()
        cuts = splitter.cuts(text, language)
        score.seconds += time.perf_counter() - started
        score.add(gold, predicted_ends(text, cuts))
    return score


def flores_files(folder: Path, languages: list[str] | None = None) -> dict[str, Path]:
    files = {}
    for path in sorted((folder / "devtest").glob("*.devtest.gz")):  # the plain ones are 16-byte aliases
        name = path.name.split(".", 1)[0]
        if re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", name) and name not in files:
            files[name] = path
    if not files:
        raise InputFormatError(f"{folder}/devtest: no FLORES-200 files (lang_Script.devtest.gz)")
    return _subset(files, languages, f"{folder}/devtest: no FLORES-200 file for")


def _subset(files: dict[str, Path], languages, missing_message: str) -> dict[str, Path]:
    """The files of `languages` (all when none are named); a named language without a file is an error."""
    if not languages:
        return files
    missing = [name for name in languages if name not in files]
    if missing:
        raise InputFormatError(f"{missing_message} {', '.join(missing)}")
    return {name: files[name] for name in languages}


def flores_documents(folder: Path) -> Callable[[list[str]], list[list[str]]]:
    """A function grouping a devtest file's lines into documents: runs of lines with the same source URL."""
    path = folder / "metadata_devtest.tsv.gz"
    urls = [line.split("\t", 1)[0] for line in read_lines(path)[1:]]

    def group(lines: list[str]) -> list[list[str]]:
        if len(lines) != len(urls):
            raise InputFormatError(f"{path} has {len(urls)} rows but a devtest file has {len(lines)} lines")
        documents: list[list[str]] = []
        for i, line in enumerate(lines):
            if i == 0 or urls[i] != urls[i - 1]:
                documents.append([])
            documents[-1].append(line.strip())
        return documents

    return group


def format_table(report: dict) -> str:
    methods = list(report["methods"])
    header = "| language | " + " | ".join(f"{m} P | {m} R | {m} F1" for m in methods) + " |"
    lines = [header, "|" + "---|" * (1 + 3 * len(methods))]
    languages = list(next(iter(report["methods"].values()))["languages"])
    for lc in languages:
        cells = []
        for method in methods:
            row = report["methods"][method]["languages"][lc]
            cells += [f"{row['precision']:.3f}", f"{row['recall']:.3f}", f"**{row['f1']:.3f}**"]
        lines.append(f"| {lc} | " + " | ".join(cells) + " |")
    cells = []
    for method in methods:
        macro = report["methods"][method]["macro"]
        cells += [f"{macro['precision']:.3f}", f"{macro['recall']:.3f}", f"**{macro['f1']:.3f}**"]
    lines.append("| macro | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# command line


def _evaluate_command(args: argparse.Namespace) -> None:
    from miner.io import write_json

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for method in methods:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}: choose from {', '.join(METHODS)}")
    languages = [lc.strip() for lc in args.languages.split(",")] if args.languages else None
    if bool(args.ud) == bool(args.flores):
        raise ValueError("name one of --ud and --flores")
    if args.ud:
        report = evaluate_ud(Path(args.ud), methods, languages)
    else:
        report = evaluate_flores(Path(args.flores), methods, languages)
    print(format_table(report))
    if args.report:
        write_json(args.report, report)
        print(f"report written to {args.report}")


def _split_command(args: argparse.Namespace) -> None:
    from miner.io import decoded_lines
    from miner.languages import is_language_name, language_code

    if args.language and not is_language_name(args.language):
        try:  # zh, srp-Cyrl: codes whose script the code itself tells
            args.language = language_code(args.language)
        except ValueError:
            raise ValueError(f"--language {args.language!r}: give it as the project names languages, ISO 639-3 "
                             f"and script: deu_Latn, zho_Hant") from None
    splitter = SentenceSplitter(args.method)

    for line in decoded_lines(sys.stdin.buffer, "stdin"):
        for sentence in splitter.split(line, args.language):
            print(sentence)


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    parser = argparse.ArgumentParser(prog="python -m pipelines.text.sentences", description=__doc__.split("\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="also log debug lines")
    commands = parser.add_subparsers(dest="command", required=True)
    evaluate = commands.add_parser("evaluate", help="boundary F1 per language on UD PUD (or FLORES-200 devtest)")
    evaluate.add_argument("--ud", help="folder with the *_pud-ud-test.conllu.gz files")
    evaluate.add_argument("--flores", help="FLORES-200 folder (devtest/, metadata_devtest.tsv.gz): held-out check")
    evaluate.add_argument("--report", help="write the scores as JSON (atomically)")
    evaluate.add_argument("--methods", default="auto,sentencex,rules", help=f"comma-separated, of {', '.join(METHODS)}")
    evaluate.add_argument("--languages", help="comma-separated UD codes (de,zh) or FLORES names (deu_Latn) "
                          "(default: every file in the folder)")
    split = commands.add_parser("split", help="split stdin's lines (paragraphs) into sentences, one a line")
    split.add_argument("--language", help="lang_Script, e.g. deu_Latn (default: by the text's script)")
    split.add_argument("--method", default="auto", choices=METHODS,
                       help="auto: the splitter measured best for the language (default); or one splitter for all")
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    command = _evaluate_command if args.command == "evaluate" else _split_command
    return exit_status(lambda: command(args))


if __name__ == "__main__":
    sys.exit(main())
