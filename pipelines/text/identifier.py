"""What every language identifier answers, and how a document's language and its sentences' labels follow from
those answers alone: a fastText model (langid.py), a combination of two (langid_combined.py) and a peer
(langid_peers.py) serve the pipeline and the evaluation alike."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from miner.languages import names_like, script_fits
from pipelines.text.records import Document, Tally

UNDETERMINED = "und_Zyyy"
DOCUMENT_WEIGHT = 30.0   # prior odds of the document's language against any other (FLORES documents sweep)
DOCUMENT_CHARS = 1000    # identify_document reads paragraphs up to this many characters: a sample decides
PARAGRAPH_WEIGHT_CHARS = 1000   # a paragraph weighs its length, up to what the models read of it


class Identifier:
    """What every identifier answers: `predict` (up to k (lang_Script, probability) per text, most probable first),
    `covers` and `languages`; documents and their sentences are built on those alone, so a fastText model, a
    combination of two (langid_combined.py) or a peer (langid_peers.py) serve the pipeline and the evaluation
    alike."""

    path = ""

    def predict(self, texts: Sequence[str], k: int = 1, document: str | None = None) -> list[list[tuple[str, float]]]:
        """Up to k answers per text. `document`: the language of the document the texts come from, whose prior
        (with_document) will weigh their answers: a combination then asks its second model wherever that prior
        could turn the answer (CombinedIdentifier.decided); a single model's answers do not depend on it."""
        raise NotImplementedError

    def covers(self, code: str) -> bool:
        raise NotImplementedError

    @property
    def languages(self) -> list[str]:
        raise NotImplementedError

    def identify_document(self, paragraphs: Sequence[str], k: int = 5,
                          seen: dict[str, list[tuple[str, float]]] | None = None) -> tuple[str, float]:
        """The document's language and its share of the length-weighted paragraph distributions. `seen`, when
        given, receives each paragraph's prediction, for `identify_sentences` to reuse (a paragraph of one
        sentence is that sentence)."""
        taken, total = [], 0
        for paragraph in paragraphs:
            if total >= DOCUMENT_CHARS:
                break
            taken.append(paragraph)
            total += len(paragraph)
        predictions = self.predict(taken, k=k)
        if seen is not None:
            seen.update(zip(taken, predictions))
        return document_language(predictions, [len(p) for p in taken])

    def label_document(self, document: Document, tally: Tally | None = None) -> Document:
        """The document with `language` and `language_score` set; one without letters is counted as a skip."""
        language, probability = self.identify_document(document.paragraphs)
        if tally is not None:
            if language == UNDETERMINED:
                tally.skip("langid", "no letters", document.where, document.url)
            else:
                tally.count("langid", "documents")
        return replace(document, language=language, language_score=round(probability, 4))

    def identify_sentences(self, sentences: Sequence[str], document_language: str | None,
                           document_weight: float = DOCUMENT_WEIGHT, k: int = 5,
                           seen: dict[str, list[tuple[str, float]]] | None = None) -> list[tuple[str, float]]:
        """One (language, probability) per sentence, leaning to `document_language` (see the module notes);
        sentences found in `seen` (texts already predicted with the same k, before the document's language was
        known) are not predicted again where they answered it."""
        seen = seen or {}
        known = document_language not in (None, UNDETERMINED)
        new = [text for text in dict.fromkeys(sentences)
               if text not in seen or (known and seen[text][0][0] != document_language)]
        predicted = dict(zip(new, self.predict(new, k=k, document=document_language if known else None))) if new else {}
        return [with_document(predicted.get(text) or seen[text], document_language, document_weight)
                for text in sentences]


class LayeredIdentifier(Identifier):
    """An identifier that answers through another, `inner` (a combination through its first model, the experts
    through the main identifier): its text normalisation, languages and coverage are the inner one's unless it
    says otherwise."""

    inner: Identifier

    @property
    def normalization(self):
        return self.inner.normalization

    @property
    def languages(self) -> list[str]:
        return self.inner.languages

    def covers(self, code: str) -> bool:
        return self.inner.covers(code)


RESTRICT_DEPTH = 50  # labels read from the model before the listed ones are kept: a listed language further down
#                      carries too little probability to pass any score floor


class RestrictedIdentifier(LayeredIdentifier):
    """An identifier that answers among listed languages only (`lid.languages`), for a crawl mined for a known set
    of languages, as lingua's `from_languages` does: a fragment of one of them is no longer lost to an unlisted
    neighbour (English read as Scots). The model's own probabilities are kept, not renormalised over the list, so a
    text in an unlisted language keeps its low score, which the lid_score filter drops, instead of passing as its
    listed neighbour (Dutch as German); a text with no listed language whose script it holds (script_fits) among
    the model's first RESTRICT_DEPTH answers gets `und_Zyyy` with score 0."""

    def __init__(self, inner: Identifier, languages: Sequence[str]):
        unknown = sorted(code for code in set(languages) if not inner.covers(code))
        if unknown or not languages:
            like = sorted({name for code in unknown for name in names_like(code, inner.languages)})
            raise ValueError(f"lid.languages: {inner.path or 'the identifier'} does not name "
                             f"{', '.join(unknown[:10]) or 'an empty list'}"
                             + (f" (and {len(unknown) - 10} more)" if len(unknown) > 10 else "")
                             + (f"; did you mean {', '.join(like[:10])}?" if like else ""))
        self.inner, self.allowed = inner, frozenset(languages)
        self.path = f"{inner.path}@{len(self.allowed)}"

    @property
    def languages(self) -> list[str]:
        return [code for code in self.inner.languages if code in self.allowed]

    def covers(self, code: str) -> bool:
        return code in self.allowed

    def predict(self, texts: Sequence[str], k: int = 1, document: str | None = None) -> list[list[tuple[str, float]]]:
        """The model's k answers where they are all listed (most texts of a crawl mined for its languages), else
        the listed ones among its first RESTRICT_DEPTH: reading 50 labels a text costs about 3x reading a few."""
        results = self.inner.predict(texts, k=k, document=document)
        deeper = [i for i, answer in enumerate(results)
                  if any(code not in self.allowed and code != UNDETERMINED for code, _ in answer)]
        for i, prediction in zip(deeper, self.inner.predict([texts[i] for i in deeper], k=max(k, RESTRICT_DEPTH),
                                                            document=document) if deeper else []):
            results[i] = [item for item in prediction if item[0] in self.allowed and script_fits(item[0], texts[i])
                          ][:k] or [(UNDETERMINED, 0.0)]
        return results


def document_language(predictions: Sequence[list[tuple[str, float]]], lengths: Sequence[int]) -> tuple[str, float]:
    scores: dict[str, float] = defaultdict(float)
    total = 0.0
    for prediction, length in zip(predictions, lengths):
        if prediction[0][0] == UNDETERMINED:
            continue
        weight = min(length, PARAGRAPH_WEIGHT_CHARS)
        total += weight
        for code, probability in prediction:
            scores[code] += weight * probability
    if not total:
        return UNDETERMINED, 0.0
    best = min(scores, key=lambda code: (-scores[code], code))
    return best, scores[best] / total


def with_document(prediction: list[tuple[str, float]], document_language: str | None,
                  document_weight: float = DOCUMENT_WEIGHT) -> tuple[str, float]:
    """The sentence's label after a prior of `document_weight`:1 for the document's language.

    posterior(d) = w p(d) / (w p(d) + 1 - p(d)), posterior(x) = p(x) / (w p(d) + 1 - p(d)) for x != d.
    """
    best, p_best = prediction[0]
    if not document_language or best == UNDETERMINED:
        return best, p_best
    p_doc = dict(prediction).get(document_language, 0.0)
    norm = document_weight * p_doc + 1.0 - p_doc
    if best == document_language:  # the same posterior as when a neighbour ranked first: lid_score reads it alike
        return best, min(1.0, document_weight * p_doc / norm)
    if document_weight * p_doc > p_best:
        return document_language, min(1.0, document_weight * p_doc / norm)
    return best, min(1.0, p_best / norm)
