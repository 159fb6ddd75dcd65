"""The whole text stage for one page or one crawl file: what the Beam extract stage runs per element, and what
tests and benchmarks run without Beam.

    stage = TextStage(settings)                 # the job's settings: read, extract, lid, split, filters
    for sentence in stage.file_sentences("sample/web/sample.warc.gz", tally):
        ...

Per page: main content (extract.py) -> the document's language from its paragraphs (langid.py) -> each paragraph
split with that language's rules (sentences.py) -> each sentence's language, leaning to the document's ->
filters (filters.py). Sentences keep their paragraph and sentence indices. Dedup is not here: it needs every
page (dedup.py in memory, a CombinePerKey in the Beam job).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from miner.languages import check_code, is_no_language
from pipelines import storage
from pipelines.text.extract import Extractor, ExtractSettings
from pipelines.text.filters import apply_filters, build_filters
from pipelines.text.identifier import UNDETERMINED, RestrictedIdentifier
from pipelines.text.langid import SHORT_WORDS, ruled_by_document, short_sentence_label
from pipelines.text.records import Page, Sentence, Tally
from pipelines.text.sentences import SentenceSplitter
from pipelines.text.warc import ReadLimits, read_pages

STAGE = "sentences"
LID_OPTIONS = ("model", "short_words", "languages")


def _options(cls, values: dict | None, section: str):
    values = dict(values or {})
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"{section}: unknown setting(s) {sorted(unknown)}; known: {sorted(known)}")
    return cls(**values)


SPLIT_OPTIONS = {"method": str, "window_chars": int, "max_chars": int}  # SentenceSplitter's settings


def check_split_settings(values) -> None:
    """The `split` section: known names, values of their kind, then the splitter's own bounds."""
    if values is not None and not isinstance(values, dict):
        raise ValueError(f"split: a section of settings ({', '.join(SPLIT_OPTIONS)}), not {values!r}")
    values = dict(values or {})
    unknown = set(values) - set(SPLIT_OPTIONS)
    if unknown:
        raise ValueError(f"split: unknown setting(s) {sorted(unknown)}; known: {list(SPLIT_OPTIONS)}")
    for name, kind in SPLIT_OPTIONS.items():
        if name in values and (isinstance(values[name], bool) or not isinstance(values[name], kind)):
            raise ValueError(f"split.{name}: {'a whole number' if kind is int else 'a name'}, not {values[name]!r}")
    SentenceSplitter(**values)


class TextStage:
    """Pages in, filtered sentences out; heavy parts (the extraction child process, the fastText model) are made
    on first use, so constructing one is cheap and every Beam worker makes its own."""

    def __init__(self, settings: dict):
        self.check_settings(settings)
        self.limits = _options(ReadLimits, settings.get("read"), "read")
        self.extract_settings = _options(ExtractSettings, settings.get("extract"), "extract")
        self.split_settings = dict(settings.get("split") or {})
        self.filters = build_filters(settings.get("filters"))
        lid = settings.get("lid") or {}
        self.lid_model = lid.get("model")
        self.lid_languages = lid.get("languages")
        self.short_words = int(lid.get("short_words", SHORT_WORDS))
        self._extractor = self._lid = self._splitter = None

    @staticmethod
    def check_settings(settings: dict) -> None:
        """Every text setting, checked before any data is read."""
        _options(ReadLimits, settings.get("read"), "read")
        _options(ExtractSettings, settings.get("extract"), "extract")
        build_filters(settings.get("filters"))
        lid = dict(settings.get("lid") or {})
        unknown = set(lid) - set(LID_OPTIONS)
        if unknown:
            raise ValueError(f"lid: unknown setting(s) {sorted(unknown)}; known: {list(LID_OPTIONS)}")
        short_words = lid.get("short_words", SHORT_WORDS)
        if isinstance(short_words, bool) or not isinstance(short_words, int) or short_words < 0:
            raise ValueError(f"lid.short_words: a whole number of words >= 0 (0 turns the rule off), not "
                             f"{short_words!r}")
        languages = lid.get("languages")
        if languages is not None:
            if not isinstance(languages, list) or not languages:
                raise ValueError(f"lid.languages: a list of codes such as deu_Latn (or leave it out), "
                                 f"not {languages!r}")
            for code in languages:
                check_code(code, "lid.languages:")
        if not lid.get("model"):
            raise ValueError("lid.model: a language identifier is needed: combined+experts (the bundled "
                             "configs/pipeline_sample.yaml's), cmlm-lid, lid.176, or a fastText model's path "
                             "(GlotLID's, NLLB's, one of python -m pipelines.text.langid train)")
        check_split_settings(settings.get("split"))

    # -- the parts, made on first use --------------------------------------------------------------------------

    @property
    def extractor(self) -> Extractor:
        if self._extractor is None:
            self._extractor = Extractor(self.extract_settings)
        return self._extractor

    @property
    def lid(self):
        if self._lid is None:
            from pipelines.text.langid import lid_parts, load_identifier

            parts = []
            for path in lid_parts(self.lid_model):
                if storage.is_remote(path):  # fastText reads local files: copy the model (and its sidecar) once
                    folder = storage.local_folder(path.rsplit("/", 1)[0])
                    path = f"{folder}/{path.rsplit('/', 1)[1]}"
                parts.append(path)
            self._lid = load_identifier("+".join(parts))
            if self.lid_languages:
                self._lid = RestrictedIdentifier(self._lid, self.lid_languages)
        return self._lid

    @property
    def splitter(self) -> SentenceSplitter:
        if self._splitter is None:
            self._splitter = SentenceSplitter(**self.split_settings)
        return self._splitter

    # -- the work ----------------------------------------------------------------------------------------------

    def pages(self, path: str, tally: Tally) -> Iterator[Page]:
        return read_pages(path, tally, self.limits, self.judge_decodings)

    def judge_decodings(self, texts: list[str]) -> list[float]:
        """How surely the identifier reads each candidate decoding of a page that declares no charset that fits
        (charset.judged): mojibake reads as no language as surely as the right text reads as its own."""
        return [answers[0][1] if answers else 0.0 for answers in self.lid.predict(texts)]

    def sentences(self, page: Page, tally: Tally) -> Iterator[Sentence]:
        document = self.extractor.extract(page, tally)
        if document is None:
            return
        seen: dict = {}  # paragraph -> its LID answer: a one-sentence paragraph is not identified twice
        language, score = self.lid.identify_document(document.paragraphs, seen=seen)
        tally.count("lid", "documents")
        tally.count("lid", f"document:{language}")
        pieces = [(p, s, text) for p, paragraph in enumerate(document.paragraphs)
                  for s, text in enumerate(self.splitter.split(paragraph, language if score else None))]
        labels = self._labels([text for _, _, text in pieces], language, seen)
        tally.count(STAGE, "split", len(pieces))
        sentences = (Sentence(text=text, language=label[0], lid_score=label[1], url=document.url,
                              document_id=document.document_id, paragraph_index=paragraph, sentence_index=index,
                              source=document.source, position=document.position, date=document.date)
                     for (paragraph, index, text), label in self._in_a_language(
                         self._short_rule(pieces, labels, (language, score), document.where, tally),
                         document.where, tally))
        yield from apply_filters(sentences, self.filters, tally)

    def _labels(self, texts: list[str], language: str, seen: dict) -> list[tuple[str, float]]:
        """Each piece's LID answer; pieces the short-sentence rule gives their document's language whatever their
        own answer (langid.ruled_by_document) are not identified: `(und_Zyyy, 0)` stands in for it."""
        asked = [i for i, text in enumerate(texts) if not ruled_by_document(text, self.short_words)]
        labels = [(UNDETERMINED, 0.0)] * len(texts)
        for i, label in zip(asked, self.lid.identify_sentences([texts[i] for i in asked], language, seen=seen)):
            labels[i] = label
        return labels

    def _short_rule(self, pieces, labels, document, where: str, tally: Tally):
        """Sentences of a few words take the document's language or are dropped (langid.short_sentence_label)."""
        for piece, label in zip(pieces, labels):
            ruled = short_sentence_label(piece[2], label, document, self.short_words)
            if ruled is None:
                tally.skip("lid", "too-short", where, piece[2][:80])
                continue
            if ruled is not label:
                tally.count("lid", "short:document-language")
            yield piece, ruled

    @staticmethod
    def _in_a_language(labelled, where: str, tally: Tally):
        """Sentences the identifier answered in no language (miner.languages.NO_LANGUAGE: a third-party model's
        zxx_Latn or und_Xsux) are dropped and counted; our own und_Zyyy, the answer for text without letters, goes on
        to the filters, which say why they drop it."""
        for piece, label in labelled:
            if label[0] != UNDETERMINED and is_no_language(label[0]):
                tally.skip("lid", "no-language", where, f"{label[0]}: {piece[2][:80]}")
                continue
            yield piece, label

    def file_sentences(self, path: str, tally: Tally) -> Iterator[Sentence]:
        for page in self.pages(path, tally):
            yield from self.sentences(page, tally)

    def close(self) -> None:
        if self._extractor is not None:
            self._extractor.close()
