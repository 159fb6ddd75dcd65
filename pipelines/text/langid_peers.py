"""Peers the evaluation measures our identifiers against, behind the same `Identifier` interface.

lingua (`lingua-language-detector`, Rust; 75 languages; high-accuracy mode by default) ranks languages with
character n-gram models of up to five characters, and is known for short text. It is an optional dependency
(`pip install -e ".[lingua]"`, in the test extras): imported on first use, with a clear message when missing.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipelines.text.langid import OFFICIAL, UNDETERMINED, Identifier, Normalization, parse_label, script_of_text

LINGUA = "lingua"
LINGUA_LOW = "lingua-low"   # its low-accuracy mode: trigrams only, faster


class LinguaIdentifier(Identifier):
    normalization: Normalization = OFFICIAL

    def __init__(self, low_accuracy: bool = False):
        try:
            from lingua import LanguageDetectorBuilder
        except ImportError as err:
            raise ImportError('the lingua peer needs lingua-language-detector: pip install -e ".[lingua]"') from err
        builder = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models()
        self.detector = (builder.with_low_accuracy_mode() if low_accuracy else builder).build()
        self.path = LINGUA_LOW if low_accuracy else LINGUA
        from lingua import Language

        self.targets = {language: parse_label(language.iso_code_639_3.name.lower()) for language in Language.all()}

    @property
    def languages(self) -> list[str]:
        return sorted({f"{t.language}_{t.script or '*'}" for t in self.targets.values()})

    def covers(self, code: str) -> bool:
        language, _, script = code.partition("_")
        return any(t.language == language and t.script in (None, script) for t in self.targets.values())

    def predict(self, texts: Sequence[str], k: int = 1) -> list[list[tuple[str, float]]]:
        normalized = [OFFICIAL.apply(text) for text in texts]
        results = []
        for text, values in zip(normalized, self.detector.compute_language_confidence_values_in_parallel(normalized)):
            answer: list[tuple[str, float]] = []
            for value in values[:k]:
                target = self.targets[value.language]
                script = target.script or script_of_text(text, "zho" if target.language == "zho" else "")
                if script is not None and value.value > 0:
                    answer.append((f"{target.language}_{script}", float(value.value)))
            results.append(answer or [(UNDETERMINED, 0.0)])
        return results


PEERS = {LINGUA: lambda: LinguaIdentifier(), LINGUA_LOW: lambda: LinguaIdentifier(low_accuracy=True)}
