"""Peers the evaluation measures our identifiers against, behind the same `Identifier` interface.

lingua (`lingua-language-detector`, Rust; 75 languages; high-accuracy mode by default) ranks languages with
character n-gram models of up to five characters, and is known for short text. It is an optional dependency
(`pip install -e ".[lingua]"`, in the test extras): imported on first use, with a clear message when missing.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.text.langid import OFFICIAL, LabelledIdentifier, Normalization, parse_label

LINGUA = "lingua"
LINGUA_LOW = "lingua-low"   # its low-accuracy mode: trigrams only, faster


class LinguaIdentifier(LabelledIdentifier):
    normalization: Normalization = OFFICIAL

    def __init__(self, low_accuracy: bool = False):
        try:
            from lingua import Language, LanguageDetectorBuilder
        except ImportError as err:
            raise ImportError('the lingua peer needs lingua-language-detector: pip install -e ".[lingua]"') from err
        builder = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models()
        self.detector = (builder.with_low_accuracy_mode() if low_accuracy else builder).build()
        super().__init__({language: parse_label(language.iso_code_639_3.name.lower()) for language in Language.all()},
                         LINGUA_LOW if low_accuracy else LINGUA)

    def predict(self, texts: Sequence[str], k: int = 1) -> list[list[tuple[str, float]]]:
        normalized = [OFFICIAL.apply(text) for text in texts]
        results = []
        for text, values in zip(normalized, self.detector.compute_language_confidence_values_in_parallel(normalized)):
            kept = [value for value in values[:k] if value.value > 0]
            results.append(self._named([value.language for value in kept], [value.value for value in kept], text))
        return results


PEERS = {LINGUA: lambda: LinguaIdentifier(), LINGUA_LOW: lambda: LinguaIdentifier(low_accuracy=True)}
