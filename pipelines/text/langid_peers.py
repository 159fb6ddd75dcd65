"""Peers the evaluation measures our identifiers against, behind the same `Identifier` interface.

lingua (`lingua-language-detector`, Rust; 75 languages; high-accuracy mode by default) ranks languages with
character n-gram models of up to five characters, and is known for short text. It is an optional dependency
(`pip install -e ".[lingua]"`, in the test extras): imported on first use, with a clear message when missing.
"""

from __future__ import annotations

from collections.abc import Sequence

from miner.console import ExtraMissingError
from pipelines.text.langid import OFFICIAL, LabelledIdentifier, Normalization, Target, parse_label

LINGUA = "lingua"
LINGUA_LOW = "lingua-low"   # its low-accuracy mode: trigrams only, faster
# lingua's languages by the script its models read; a language it reads in one of these is named in it alone:
# lingua's Serbian is Cyrillic, so `srp_Latn` is not among its languages (a Latin text is Bosnian or Croatian to it)
LINGUA_SCRIPT_SETS = (("all_with_latin_script", "Latn"), ("all_with_cyrillic_script", "Cyrl"),
                      ("all_with_arabic_script", "Arab"), ("all_with_devanagari_script", "Deva"))


def lingua_targets(language_class) -> dict:
    """lingua's languages (`language_class`: its `Language`) as our targets, each in the script lingua reads it in
    where that is one of the four it groups languages by (a language with a script of its own, Greek or Thai, takes
    the text's)."""
    scripts: dict = {}
    for method, script in LINGUA_SCRIPT_SETS:
        for language in getattr(language_class, method)():
            scripts.setdefault(language, set()).add(script)
    targets = {}
    for language in language_class.all():
        target = parse_label(language.iso_code_639_3.name.lower())
        only = scripts.get(language, set())
        targets[language] = Target(target.language, *only) if len(only) == 1 and not target.script else target
    return targets


class LinguaIdentifier(LabelledIdentifier):
    normalization: Normalization = OFFICIAL

    def __init__(self, low_accuracy: bool = False):
        try:
            from lingua import Language, LanguageDetectorBuilder
        except ImportError as err:
            raise ExtraMissingError('the lingua peer needs lingua-language-detector: pip install -e ".[lingua]"') \
                from err
        builder = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models()
        self.detector = (builder.with_low_accuracy_mode() if low_accuracy else builder).build()
        super().__init__(lingua_targets(Language), LINGUA_LOW if low_accuracy else LINGUA)

    def predict(self, texts: Sequence[str], k: int = 1, document: str | None = None) -> list[list[tuple[str, float]]]:
        normalized = [OFFICIAL.apply(text) for text in texts]
        results = []
        for text, values in zip(normalized, self.detector.compute_language_confidence_values_in_parallel(normalized)):
            kept = [value for value in values[:k] if value.value > 0]
            results.append(self._named([value.language for value in kept], [value.value for value in kept], text))
        return results


PEERS = {LINGUA: lambda: LinguaIdentifier(), LINGUA_LOW: lambda: LinguaIdentifier(low_accuracy=True)}
