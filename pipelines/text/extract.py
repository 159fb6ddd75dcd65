"""Page -> Document: the main content of a page with trafilatura, as paragraphs in reading order.

Method. trafilatura (the field's standard main-content extractor) with `include_comments=False`,
`include_tables=True` and its fallback extractors on (`fast=False`), the settings that scored best on
trafilatura's own evaluation set (`evaluate` below; figures in the command's report). Line breaks in the page's
source are made spaces first, as a browser shows them (collapse_source_line_breaks). Its text output has one
block per line (paragraph, heading, list item, table row, `<br>`-separated line); each line is one paragraph here,
with trafilatura's list bullet ("- ") removed, table rows split into their cells and a line cut where a gap of
spaces joins elements (ELEMENT_GAP). `deduplicate` stays off: it is an LRU cache shared by all documents of a
process, so its output would depend on the order a runner feeds pages in, and reruns would differ. WET text
records are split into lines, without extraction (their spacing is Common Crawl's converter's, not trafilatura's).

Bounded work per record:
- cheap checks before the page leaves this process: at most `max_html_chars` characters and at most
  `max_elements` tags (counted as "<" characters, at C speed), else `too-large` / `too-many-elements`;
- nesting depth: libxml2 (lxml, under trafilatura) stops building the tree at depth 256 and silently drops the
  rest of the page, so a deep page is parsed quickly but loses its content without a trace. We parse the page
  (`trafilatura.load_html`), read libxml2's error log for that limit (`too-deep`) and hand the same tree to
  trafilatura, which copies it: a third of the cost of parsing again (measured on the web pool). Reading the error
  log after trafilatura's own parse does not work: its fallbacks parse again and clear it. A regular-expression
  estimate of depth in this process cost 3-8 ms a page (10-25% of extraction) and misjudged unclosed tags, so it
  is not used;
- a time limit (`time_limit_s`). trafilatura has none, and SIGALRM works only in the main thread (Beam runs DoFns
  in worker threads) and cannot interrupt libxml2's C code anyway. So extraction runs in a persistent child
  process, one per `Extractor`: a fresh interpreter (no fork of a threaded parent, no re-import of the caller's
  __main__ as multiprocessing's 'spawn' does), the page goes over a pipe as UTF-8 bytes and the text comes back
  (no pickles). When the answer is late the child is killed (`timeout`) and a new one started for the next page.
  The child also caps its address space (`memory_limit_mb`); a child that dies is a `crashed` skip.
  `time_limit_s=0` runs trafilatura in this process, unbounded (for measuring the overhead).

Boilerplate filter (`boilerplate_filter`, on by default): after trafilatura, short paragraphs that are page
furniture are dropped: cross-links ("Read more: ..."), picture credits and source lines, rights notices,
log-in/subscribe/newsletter lines, cookie notices, share buttons, bare dates. On trafilatura's evaluation set
it drops 45 more of the 2,966 must-drop snippets and loses 1 of the 2,951 must-keep ones (a date line), F1 0.926
-> 0.933, alike on both halves of the set (the rules were written looking at its misses); see `evaluate`.

Paragraphs leave in Unicode NFC (`_composed`). Counts under stage "extract": documents, paragraphs, nfc (paragraphs
that were not in NFC), and skipped:<reason> for empty, too-large, too-deep, too-many-elements, timeout, crashed,
error, no-content.

Commands:
    python -m pipelines.text.extract show FILE.warc.gz [--limit N]
    python -m pipelines.text.extract_eval --eval-dir ../shared/data/web/trafilatura-eval [--report out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import json
import logging
import os
import re
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from miner.config import check_number
from pipelines.text.records import Document, Page, Tally

STAGE = "extract"


EXTRACTORS = ("trafilatura", "resiliparse")
# the distributions whose code decides each extractor's text (trafilatura falls back to jusText and parses with
# lxml): an upgrade can change the sentences, so the extract stage records their versions (pipelines/dependencies.py)
EXTRACTOR_PACKAGES = {"trafilatura": ("trafilatura", "jusText", "lxml"), "resiliparse": ("resiliparse",)}
RESILIPARSE_MISSING = "extract.extractor: resiliparse needs the resiliparse package: pip install -e '.[resiliparse]'"


@dataclass(frozen=True)
class ExtractSettings:
    """The main-content extractor, its options and the bounds on one record's extraction."""

    # trafilatura (the default: the best F1 measured) or resiliparse (`pip install -e '.[resiliparse]'`: 10x the
    # pages a CPU-second in extraction, 2.2x in the whole text stage, at a lower precision; docs/text.md). The
    # options below it are trafilatura's, but include_comments, which both take.
    extractor: str = "trafilatura"
    include_tables: bool = True
    include_comments: bool = False     # reader comments are not the page's main content
    favor_precision: bool = False
    favor_recall: bool = False
    fast: bool = False                 # True: no fallback extractors (readability, jusText), faster, lower recall
    min_extracted_size: int = 250      # characters below which trafilatura distrusts its result and falls back to
                                       # a cruder extraction (its default, 250, is sized for alphabetic text)
    dense_min_extracted_size: int = 80  # the same for pages written mostly in Han, kana, Hangul or Thai, which say
                                       # as much in about a third of the characters
    boilerplate_filter: bool = True    # drop furniture lines after extraction (`is_furniture`); measured
    time_limit_s: float = 10.0         # per record; 0: no limit, extract in this process
    max_html_chars: int = 3_000_000
    max_elements: int = 200_000        # counted as "<" characters: an upper bound on tags, at C speed
    memory_limit_mb: int = 4096        # address space of the extraction process; 0: no cap
    start_timeout_s: float = 120.0     # for a child to start and import trafilatura (not part of the time limit)

    def __post_init__(self):
        for name, low, whole in (("min_extracted_size", 0, True), ("dense_min_extracted_size", 0, True),
                                 ("time_limit_s", 0, False), ("max_html_chars", 1, True), ("max_elements", 1, True),
                                 ("memory_limit_mb", 0, True), ("start_timeout_s", 1, False)):
            check_number(f"extract.{name}", getattr(self, name), low, whole=whole)
        if self.extractor not in EXTRACTORS:
            raise ValueError(f"extract.extractor: {self.extractor!r}; choose from {', '.join(EXTRACTORS)}")
        if self.extractor == "resiliparse" and importlib.util.find_spec("resiliparse") is None:
            # here, before any page is read, rather than in the extraction process when it starts
            raise ValueError(RESILIPARSE_MISSING)

    def extractor_options(self) -> dict:
        """What the extraction process is told: the extractor and its options."""
        if self.extractor == "resiliparse":
            return {"extractor": "resiliparse", "include_comments": self.include_comments}
        return {"extractor": "trafilatura", **self.trafilatura_options()}

    def trafilatura_options(self) -> dict:
        return {"include_tables": self.include_tables, "include_comments": self.include_comments,
                "favor_precision": self.favor_precision, "favor_recall": self.favor_recall, "fast": self.fast,
                "deduplicate": False, "output_format": "txt", "min_extracted_size": self.min_extracted_size,
                "dense_min_extracted_size": self.dense_min_extracted_size}


class _Skip(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


# --- the stage --------------------------------------------------------------------------------------------------

class Extractor:
    """Extracts documents one page at a time, each under the time limit (its child process lives as long as it).

    Not thread-safe: one per thread (`extract_document` keeps one per thread and settings).
    """

    def __init__(self, settings: ExtractSettings = ExtractSettings()):
        self.settings = settings
        self._child = _ChildExtractor(settings) if settings.time_limit_s > 0 else None

    def extract(self, page: Page, tally: Tally) -> Document | None:
        """The page's main content as a Document, or None (a counted skip) when it has none or is too costly."""
        try:
            paragraphs = self._paragraphs(page)
        except _Skip as skip:
            tally.skip(STAGE, skip.reason, page.where, skip.detail or page.url)
            return None
        tally.count(STAGE, "documents")
        tally.count(STAGE, "paragraphs", len(paragraphs))
        paragraphs = _composed(paragraphs, tally)
        return Document(url=page.url, document_id=page.record_id, date=page.date, paragraphs=tuple(paragraphs),
                        source=page.source, position=page.position)

    def _paragraphs(self, page: Page) -> list[str]:
        if not page.content.strip():
            raise _Skip("empty")
        if page.content_type == "text":
            paragraphs = _kept(_lines(page.content), self.settings)
        else:
            check_html_size(page.content, self.settings)
            paragraphs = _kept(paragraphs_of(self._run(page.content, page.url) or ""), self.settings)
        if not paragraphs:
            raise _Skip("no-content")
        return paragraphs

    def _run(self, html: str, url: str) -> str | None:
        if self._child is not None:
            return self._child.extract(html, url)
        return main_content_text(html, url, self.settings.extractor_options())

    def close(self) -> None:
        if self._child is not None:
            self._child.close()

    def __enter__(self) -> Extractor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_local = threading.local()


def extract_document(page: Page, tally: Tally, settings: ExtractSettings = ExtractSettings()) -> Document | None:
    """`Extractor.extract` with an extractor kept per thread and settings (its child process reused)."""
    extractors = _local.__dict__.setdefault("extractors", {})
    if settings not in extractors:
        extractors[settings] = Extractor(settings)
    return extractors[settings].extract(page, tally)


# --- paragraphs -------------------------------------------------------------------------------------------------

def _composed(paragraphs: list[str], tally: Tally) -> list[str]:
    """Paragraphs in Unicode NFC (counted `nfc` where that changed one): text written decomposed (Vietnamese and
    Korean from some editors, text from macOS) is the same text to a reader, but not to the encoders' tokenizers,
    which do not compose it (a letter and its combining marks become other pieces, or [UNK]), nor to the bitext's
    users. trafilatura composes what it extracts; a WET record's text and resiliparse's came as written. NFC is
    canonical equivalence: nothing a reader sees changes."""
    out = []
    for paragraph in paragraphs:
        if not unicodedata.is_normalized("NFC", paragraph):
            paragraph = unicodedata.normalize("NFC", paragraph)
            tally.count(STAGE, "nfc")
        out.append(paragraph)
    return out


# trafilatura makes the white space within an element's text one space, so a wider gap inside a line is where it
# joined elements without a separator: a table's header cells ("von  bis  Liga  Team"), a title and its date
# (resiliparse, which collapses white space too, puts two tabs between a table's cells)
ELEMENT_GAP = re.compile(r"[ \t]{2,}")


def paragraphs_of(text: str) -> list[str]:
    """The extractor's text output as paragraphs: one per line, list bullets removed, table rows split into cells,
    and a line split where an ELEMENT_GAP joins separate elements."""
    out = []
    for line in _lines(text):
        if line.startswith("|") and line.endswith("|"):  # trafilatura writes a pipe inside a cell as \|
            out.extend(cell.strip().replace("\\|", "|") for cell in line.strip("|").split(" | "))
            continue
        out.extend(ELEMENT_GAP.split(line[2:] if line.startswith("- ") else line))
    return [p.strip() for p in out if p.strip()]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


# Lines that are page furniture rather than text, in the languages of the evaluation set and the largest web
# languages. Each rule applies to paragraphs up to its length: long paragraphs are text whatever they contain.
_FURNITURE = [(re.compile(pattern, re.IGNORECASE), max_chars) for max_chars, pattern in [
    # cross-links to other articles: "Read more: <headline>"
    (160, (r"^(read (more|also|next)|see also|related( articles?| stories| posts)?|more (on|about|from) |also read|"
           r"auch lesen|lesen sie (auch|hier|mehr)|mehr (zum thema|dazu)|weitere (artikel|beiträge|themen|nachrichten)|"
           r"weiterlesen|schon gelesen|das könnte (sie|dich) (auch )?interessieren|lire aussi|à lire aussi|voir aussi|"
           r"lea (más|también)|le puede interesar|te puede interesar|puedes ver|notas relacionadas|más sobre|"
           r"leia (mais|também)|veja também|leggi anche|czytaj (też|także|również)|zobacz (też|także))\b")),
    # picture credits and source lines
    (120, (r"^(©|\(c\)|copyright\b|(titel|beitrags)?bild(er)?\s*:|fotos?\s*:|photos?\s*:|images?\s*:|"
           r"(photo )?credits?\s*:|crédits?( photos?)?\s*:|quelle\s*:|source\s*:|fuente\s*:|fonte\s*:)")),
    (100, r"©|getty images|picture[- ]alliance|shutterstock|istock"),
    # rights, accounts, subscriptions, cookies, sharing
    (200, (r"all rights reserved|alle rechte vorbehalten|tous droits réservés|todos los derechos reservados|"
           r"prawem autorskim")),
    (100, (r"\b(log ?in|sign (in|up)|eingeloggt|einloggen|anmelden|registrieren|subscribe|abonnieren|newsletter|"
           r"s'abonner|suscr[ií]b)")),
    (200, r"\bcookies?\b.{0,80}\b(accept|consent|akzeptier|zustimm|einverstanden|use|verwende|nutz|utilis)"),
    (80, (r"^(share|teilen|tweet|print|drucken|e-?mail|whatsapp|facebook|twitter|pinterest|linkedin|telegram)"
          r"(\s*[|/·•,]\s*\w+){0,6}\s*:?$")),
    # a date or time alone, or an update stamp
    (60, r"^((aktualisiert|veröffentlicht|updated|published|stand)( am| on)?\s*:?\s*)?[\d\s.:/,-]+(am|pm|uhr)?\.?$"),
]]


def is_furniture(paragraph: str) -> bool:
    """A paragraph that is page furniture (cross-link, credit, rights, account, cookie, share, date line)."""
    return any(len(paragraph) <= max_chars and rule.search(paragraph) for rule, max_chars in _FURNITURE)


def _kept(paragraphs: Iterable[str], settings: ExtractSettings) -> list[str]:
    if not settings.boilerplate_filter:
        return list(paragraphs)
    return [p for p in paragraphs if not is_furniture(p)]


# --- bounds -----------------------------------------------------------------------------------------------------

def check_html_size(html: str, settings: ExtractSettings) -> None:
    """The cheap bounds, before the page leaves this process: its length and its number of tags."""
    if len(html) > settings.max_html_chars:
        raise _Skip("too-large", f"{len(html)} characters > {settings.max_html_chars}")
    tags = html.count("<")
    if tags > settings.max_elements:
        raise _Skip("too-many-elements", f"{tags} tags > {settings.max_elements}")


# --- the extractors, in this process or a child -----------------------------------------------------------------

def main_content_text(html: str, url: str, options: dict) -> str | None:
    """The extractor's text for one page, one block per line (ExtractSettings.extractor_options)."""
    options = dict(options)
    if options.pop("extractor", "trafilatura") == "resiliparse":
        return _resiliparse_text(html, options)
    return _trafilatura_text(html, url, options)


def _resiliparse_text(html: str, options: dict) -> str | None:
    """Resiliparse's main content (Lexbor's parser and its heuristics, in C++): blocks a line apart, no list bullets
    or alternative texts (neither is the page's prose); `_Skip` when the library fails."""
    try:
        from resiliparse.extract.html2text import extract_plain_text
    except ImportError as err:
        raise ImportError(RESILIPARSE_MISSING) from err
    try:
        text = extract_plain_text(html, preserve_formatting=True, main_content=True, list_bullets=False,
                                  alt_texts=False, comments=options.get("include_comments", False))
    except Exception as err:  # a library failure on one page is that page's skip, not the file's end
        raise _Skip("error", f"resiliparse: {type(err).__name__}: {err}") from None
    return text or None


def _trafilatura_text(html: str, url: str, options: dict) -> str | None:
    """trafilatura's text for one page; `_Skip` when libxml2 hit its depth limit or the library failed."""
    try:
        import trafilatura
        from trafilatura.utils import HTML_PARSER
    except ImportError as err:
        raise ImportError("main-content extraction needs trafilatura: pip install trafilatura lxml_html_clean") from err
    try:
        options = dict(options)
        alphabetic, dense = options.pop("min_extracted_size", None), options.pop("dense_min_extracted_size", None)
        config = _config(dense if dense is not None and dense_script(html) else alphabetic)
        # parsed here, as trafilatura parses (its parser, its repairs), to read libxml2's error log: at depth 256
        # libxml2 stops building the tree and drops the rest of the page, which is a skip to name, not a page
        html, joined = protect_joiners(html)
        tree = trafilatura.load_html(collapse_source_line_breaks(html))
        if any("Excessive depth" in error.message for error in HTML_PARSER.error_log):
            raise _Skip("too-deep", "elements nested over 255 deep (libxml2's limit; the rest of the page is lost)")
        if tree is None:
            return None
        for unseen in tree.xpath("//template"):  # a template's content is never rendered: no reader sees it
            unseen.drop_tree()
        # trafilatura copies a tree it is given (it edits its input): a third of the cost of parsing again
        # (measured on the web pool: the same text out, 7% less extraction time)
        text = trafilatura.extract(tree, url=url or None, config=config, **options)
        return restore_joiners(text) if joined and text else text
    except _Skip:
        raise
    except Exception as err:  # a library failure on one page is that page's skip, not the file's end
        raise _Skip("error", f"trafilatura: {type(err).__name__}: {err}") from None


# Zero-width non-joiner and joiner are letters' business, not control characters: Persian writes "می‌خواهم" with a
# ZWNJ (without it, "میخواهم" is misspelt), Indic scripts choose conjunct forms with them, emoji sequences join with
# ZWJ. trafilatura drops every character str.isprintable refuses, these two among them; they cross it as two
# printable symbols no page of text uses (a page that has either keeps trafilatura's way) and are put back after.
_JOINERS = {"\u200c": "\U0001f8b0", "\u200d": "\U0001f8b1"}
# as a parser reads them: named references in their one case and with their semicolon, numeric ones with or
# without it where no further digit follows (`&#8204` is ZWNJ, `&#82045` another character)
_JOINER_REFS = re.compile(r"&(?:(zwnj|zwj);|#0*(820[45])(?![0-9]);?|#[xX]0*(200[cCdD])(?![0-9a-fA-F]);?)")
_NAMED_JOINERS = {"zwnj": "\u200c", "zwj": "\u200d"}
_TO_PLACEHOLDERS = str.maketrans(_JOINERS)
_FROM_PLACEHOLDERS = str.maketrans({v: k for k, v in _JOINERS.items()})


def protect_joiners(html: str) -> tuple[str, bool]:
    """`html` with ZWNJ and ZWJ (as characters or character references) made placeholders, and whether it had any."""
    if not ("\u200c" in html or "\u200d" in html or _JOINER_REFS.search(html)) or \
            any(placeholder in html for placeholder in _JOINERS.values()):
        return html, False
    html = _JOINER_REFS.sub(_joiner_placeholder, html)
    return html.translate(_TO_PLACEHOLDERS), True


def _joiner_placeholder(ref: re.Match) -> str:
    name, decimal, hexadecimal = ref.groups()
    char = _NAMED_JOINERS[name] if name else chr(int(decimal)) if decimal else chr(int(hexadecimal, 16))
    return _JOINERS[char]


def restore_joiners(text: str) -> str:
    return text.translate(_FROM_PLACEHOLDERS)


# A line break in a page's source text is white space, as a browser renders it (CSS `white-space: normal`): pages
# written with their paragraphs wrapped at 80 columns (hand-written and generated HTML alike) read as one paragraph
# each. trafilatura's own path collapses them, but its fallback extractors keep them in the text, and each line
# here would be a paragraph of its own, its sentences cut at every line end (71 of the 990 pages of trafilatura's
# evaluation set came out with other text once they are collapsed). <pre>, <textarea>, <listing> and <xmp> keep
# theirs (`white-space: pre`). Done on the HTML text, where a regular expression finds the breaks in C: a pass over
# the parsed tree cost 12% of extraction.
_KEEPS_LINE_BREAKS = re.compile(r"<(/?)(?:pre|textarea|listing|xmp)\b", re.IGNORECASE)
_LINE_BREAK_RUN = re.compile(r"\n[ \t\n\f]*")  # from the line break on: a scan for "\n" in C, 0.3 ms a page


def collapse_source_line_breaks(html: str) -> str:
    """`html` with each run of white space that holds a line break made one space, as a browser shows it, but
    inside <pre>, <textarea>, <listing> and <xmp> (to their closing tag, or the end of the page); <br> and block
    elements, which do break lines, are tags and stay. One pass over the tags that keep breaks: linear time. The
    spaces before a break stay (trafilatura makes a run of spaces one)."""
    if "\r" in html:  # CR LF and CR are line breaks too, as HTML's input stream normalises them
        html = html.replace("\r\n", "\n").replace("\r", "\n")
    parts, start, depth = [], 0, 0
    for tag in _KEEPS_LINE_BREAKS.finditer(html):
        if not depth:
            parts.append(_LINE_BREAK_RUN.sub(" ", html[start:tag.start()]))
            start = tag.start()
        depth = max(0, depth + (-1 if tag.group(1) else 1))
        if not depth:
            parts.append(html[start:tag.end()])
            start = tag.end()
    tail = html[start:]
    return "".join([*parts, tail if depth else _LINE_BREAK_RUN.sub(" ", tail)])


_TEXT_BETWEEN_TAGS = re.compile(r">([^<]+)<")
# Han, kana, Hangul syllables, Thai: scripts with far more information per character than alphabets
_DENSE = re.compile("[\u4e00-\u9fff\u3400-\u4dbf\u3040-\u30ff\uac00-\ud7af\u0e00-\u0e7f]")
_NOT_LETTER = re.compile(r"[\W\d_]")


def dense_script(html: str, sample_chars: int = 20_000) -> bool:
    """True when most letters of the page's text (a sample of the start) are in a dense script.

    Counted by regular expressions, so the per-character work stays in C."""
    text = "".join(_TEXT_BETWEEN_TAGS.findall(html, 0, sample_chars))
    dense = len(_DENSE.findall(text))
    if not dense:  # most pages: the letters need not be counted
        return False
    letters = len(_NOT_LETTER.sub("", text))
    return letters > 0 and dense > letters / 2


@functools.lru_cache(maxsize=4)
def _config(min_extracted_size: int | None):
    from trafilatura.settings import use_config

    config = use_config()
    if min_extracted_size is not None:
        config.set("DEFAULT", "MIN_EXTRACTED_SIZE", str(min_extracted_size))
    return config


def serve(request_fd: int, response_fd: int, options_json: str, memory_limit_mb: int) -> None:
    """The extraction process: (url, html) in, (status, text) out, until the parent goes away.

    Messages are UTF-8 byte strings (never pickles: the child reads hostile HTML, the parent trusts nothing back).
    """
    from multiprocessing.connection import Connection

    _cap_memory(memory_limit_mb)
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    options = json.loads(options_json)
    main_content_text(_WARM_UP_PAGE, "", options)   # imports and caches paid before "ready", not by the first page
    requests, responses = Connection(request_fd, writable=False), Connection(response_fd, readable=False)
    responses.send_bytes(b"ready")
    while True:
        try:
            url, html = (requests.recv_bytes().decode("utf-8", "surrogatepass") for _ in range(2))
        except (EOFError, OSError):
            return
        try:
            text = main_content_text(html, url, options)
            status, value = ("ok", text) if text is not None else ("none", "")
        except _Skip as skip:
            status, value = skip.reason, skip.detail
        except MemoryError:
            status, value = "error", "out of memory"
        responses.send_bytes(status.encode())
        responses.send_bytes(value.encode("utf-8", "surrogatepass"))


_WARM_UP_PAGE = ("<html><body><nav><a href='/'>Home</a></nav><article><h1>Warm-up</h1>"
                 + "<p>This paragraph is long enough to take trafilatura through its whole path, fallbacks included."
                 + "</p>" * 3 + "</article></body></html>")


def _cap_memory(memory_limit_mb: int) -> None:
    if not memory_limit_mb:
        return
    try:
        import resource
        limit = memory_limit_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # not on this platform: the time limit still holds
        pass


class _ChildExtractor:
    """One extraction process, started on first use and replaced when it overruns the time limit or dies.

    A plain subprocess (`python -c ... serve(...)`) rather than multiprocessing's 'spawn', which re-imports the
    caller's __main__ and fails in scripts without an `if __name__ == "__main__"` guard; the pipes are
    multiprocessing Connections used for bytes only.
    """

    def __init__(self, settings: ExtractSettings):
        self.settings = settings
        self.process: subprocess.Popen | None = None
        self.requests = self.responses = None

    def extract(self, html: str, url: str) -> str | None:
        if self.process is None:
            self._start()
        try:
            self.requests.send_bytes(url.encode("utf-8", "surrogatepass"))
            self.requests.send_bytes(html.encode("utf-8", "surrogatepass"))
            if not self.responses.poll(self.settings.time_limit_s):
                self.close()
                raise _Skip("timeout", f"{url}: extraction took over {self.settings.time_limit_s:g} s")
            status = self.responses.recv_bytes().decode()
            value = self.responses.recv_bytes().decode("utf-8", "surrogatepass")
        except (EOFError, OSError) as err:
            code = self.process.poll() if self.process is not None else None
            self.close()
            raise _Skip("crashed", f"{url}: extraction process died ({type(err).__name__}, exit code {code})") \
                from None
        if status == "none":
            return None
        if status != "ok":
            raise _Skip(status, f"{url}: {value}")
        return value

    def _start(self) -> None:
        from multiprocessing.connection import Connection

        request_read, request_write = os.pipe()
        response_read, response_write = os.pipe()
        code = (f"from pipelines.text.extract import serve; serve({request_read}, {response_write}, "
                f"{json.dumps(json.dumps(self.settings.extractor_options()))}, {self.settings.memory_limit_mb})")
        path = os.pathsep.join(p or os.getcwd() for p in sys.path)     # find this package as the parent does
        try:
            # a session of its own: the terminal's Ctrl-C goes to the job, which stops cleanly, not to the child,
            # whose death mid-page read as a crashed page that a resumed run then kept (docs/pipeline.md); the
            # child still ends when the parent goes away (its pipe closes)
            self.process = subprocess.Popen([sys.executable, "-c", code], pass_fds=(request_read, response_write),
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            env={**os.environ, "PYTHONPATH": path}, start_new_session=True)
        finally:
            os.close(request_read)
            os.close(response_write)
        self.requests = Connection(request_write, readable=False)
        self.responses = Connection(response_read, writable=False)
        answered = self.responses.poll(self.settings.start_timeout_s)
        if not answered or self._ready() != b"ready":
            try:  # an answer that is not "ready" is the pipe closing: the process ended as it started
                code = self.process.wait(timeout=5) if answered else None
            except subprocess.TimeoutExpired:
                code = None
            self.close()
            if code is not None:
                raise RuntimeError(f"the extraction process exited as it started (exit code {code}; its error is "
                                   "in the log above)")
            raise RuntimeError(f"the extraction process did not start within {self.settings.start_timeout_s:g} s")

    def _ready(self) -> bytes:
        try:
            return self.responses.recv_bytes()
        except (EOFError, OSError):
            return b""

    def close(self) -> None:
        if self.process is None:
            return
        for connection in (self.requests, self.responses):
            connection.close()
        self.process.kill()
        self.process.wait(10)
        self.process, self.requests, self.responses = None, None, None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


# --- commands ---------------------------------------------------------------------------------------------------

def _show(args: argparse.Namespace) -> None:
    from pipelines.text.warc import read_pages

    tally = Tally()
    shown = 0
    with Extractor(settings_from_overrides(args.set)) as extractor:
        for page in read_pages(args.file, tally):
            document = extractor.extract(page, tally)
            if document is None:
                continue
            first = document.paragraphs[0]
            print(f"{page.position}\t{document.url}\t{len(document.paragraphs)} paragraphs\t"
                  f"{first[:120] + ('...' if len(first) > 120 else '')}")
            shown += 1
            if args.limit and shown >= args.limit:
                break
    print(_format_tally(tally))


def _format_tally(tally: Tally) -> str:
    lines = ["tally:"]
    for stage, counts in tally.as_dict().items():
        for what, n in counts.items():
            lines.append(f"  {stage}\t{what}\t{n}")
    return "\n".join(lines)


def add_settings_argument(parser: argparse.ArgumentParser) -> None:
    """`--set KEY=VALUE`, read by `settings_from_overrides`."""
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="an extraction setting, e.g. --set boilerplate_filter=true (repeatable)")


def settings_from_overrides(items: list[str] | None) -> ExtractSettings:
    """ExtractSettings from `--set key=value` items (the commands of this module and extract_eval)."""
    overrides = {}
    for item in items or []:
        key, _, value = item.partition("=")
        field = next((f for f in dataclasses.fields(ExtractSettings) if f.name == key), None)
        if field is None:
            raise ValueError(f"--set {item}: unknown setting {key!r}")
        kind = type(getattr(ExtractSettings(), key))
        overrides[key] = value.lower() in ("1", "true", "yes", "on") if kind is bool else kind(value)
    return dataclasses.replace(ExtractSettings(), **overrides)


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    parser = argparse.ArgumentParser(prog="python -m pipelines.text.extract", description=__doc__.split("\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="also log debug lines")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="main content of the pages of one WARC/WET file")
    show.add_argument("file")
    show.add_argument("--limit", type=int, default=0, help="stop after N documents")
    add_settings_argument(show)
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    if not args.verbose:    # Beam's I/O modules announce optional GCP clients at import
        logging.getLogger("apache_beam").setLevel(logging.WARNING)
    return exit_status(lambda: _show(args))


if __name__ == "__main__":
    sys.exit(main())
