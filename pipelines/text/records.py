"""What flows between the text stages, and the tally every stage reports its counts and skips to.

Order within a document survives every stage (paragraph and sentence indices), because CMLM training needs
consecutive sentences and the miner reports where a pair came from.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("pipelines.text")
# dns: records are routine; no-language: a third-party identifier's zxx (mojibake, OCR noise) is common on the web
ROUTINE_SKIPS = {"not-200", "not-html", "no-content", "empty", "url-scheme", "too-short", "no-language"}
# Routine skips logged at INFO per stage and reason in one process, the rest at DEBUG (`--verbose`): a crawl file
# holds tens of thousands of them (about three a page on the web pool), and a log line each is a log no one reads
# (and, on Dataflow, Cloud Logging's bill). Every one is still counted in the stage's report.
ROUTINE_LOG_SAMPLE = 5
_routine_logged: Counter = Counter()


@dataclass(frozen=True)
class Page:
    """One crawl record worth extracting: an HTTP 200 HTML response (decoded) or a WET text conversion."""

    url: str
    record_id: str          # WARC-Record-ID: the document id from here on (stable across reruns)
    date: str               # WARC-Date, ISO 8601
    content: str            # decoded HTML, or plain text for WET conversion records
    content_type: str       # "html" or "text"
    source: str             # the crawl file it came from
    position: int           # the record's index in that file (0-based, counting every record)
    charset: str = ""       # the charset the content was decoded with

    @property
    def where(self) -> str:
        return f"{self.source}#{self.position}"


@dataclass(frozen=True)
class Document:
    """A page's main content: paragraphs in reading order."""

    url: str
    document_id: str
    date: str
    paragraphs: tuple[str, ...]
    source: str = ""
    position: int = 0
    language: str = ""      # the document's language once identified (lang_Script), else ""
    language_score: float = 0.0

    @property
    def where(self) -> str:
        return f"{self.source}#{self.position}"


@dataclass(frozen=True)
class Sentence:
    """A sentence out of the text stage: what the embed and mine stages and CMLM training read."""

    text: str
    language: str           # lang_Script, e.g. deu_Latn
    lid_score: float        # the language identifier's probability for `language`
    url: str
    document_id: str
    paragraph_index: int    # index of the paragraph in the document's main content
    sentence_index: int     # index of the sentence in its paragraph
    source: str = ""
    position: int = 0
    date: str = ""
    copies: int = 1         # how many times its normalised text was seen in the language (dedup)

    @property
    def order_key(self) -> tuple:
        """Where it stands in the crawl: dedup keeps the first occurrence by this key, whatever the runner's order."""
        return (self.source, self.position, self.paragraph_index, self.sentence_index)


@dataclass
class Tally:
    """Counts per (stage, what): kept records, and skips by reason. A skip is also logged with where it happened.

    The Beam wrappers pass `on_count` to turn every count into a Metrics counter; plain callers read `counts`.
    """

    on_count: Callable[[str, str, int], None] | None = None
    counts: Counter = field(default_factory=Counter)
    log_skips: bool = True

    def count(self, stage: str, what: str, n: int = 1) -> None:
        self.counts[(stage, what)] += n
        if self.on_count is not None:
            self.on_count(stage, what, n)

    def skip(self, stage: str, reason: str, where: str, detail: str = "") -> None:
        """A record left out: counted as `skipped:<reason>` and logged (file#record, reason, detail): each one at
        WARNING for damaged or pathological input; for what every crawl is full of (redirects, images, fragments)
        the first ROUTINE_LOG_SAMPLE of a stage and reason at INFO, then a line saying the rest go to DEBUG."""
        self.count(stage, f"skipped:{reason}")
        if not self.log_skips:
            return
        line = ("%s: %s skipped (%s)%s", where, stage, reason, f": {detail}" if detail else "")
        if reason not in ROUTINE_SKIPS:
            log.warning(*line)
            return
        _routine_logged[stage, reason] += 1
        seen = _routine_logged[stage, reason]
        log.log(logging.INFO if seen <= ROUTINE_LOG_SAMPLE else logging.DEBUG, *line)
        if seen == ROUTINE_LOG_SAMPLE:
            log.info("%s: further %s skips are counted in the report, not logged (DEBUG logs each: "
                     "pipelines.mine --verbose)", stage, reason)

    def of(self, stage: str) -> dict[str, int]:
        return {what: n for (s, what), n in sorted(self.counts.items()) if s == stage}

    def as_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (stage, what), n in sorted(self.counts.items()):
            out.setdefault(stage, {})[what] = n
        return out
