"""Language names the project uses everywhere: ISO 639-3 plus ISO 15924 script, as FLORES-200 writes them
(`deu_Latn`, `zho_Hans`). Sources name languages in other ways; `language_code` brings them to this scheme.

* macrolanguages become the individual language FLORES-200 uses for them (msa -> zsm, fas -> pes, swa -> swh ...),
  so a model trained on NTREX's `msa` is evaluated on FLORES' `zsm_Latn`;
* region suffixes are dropped (`fra-CA` -> fra); the script comes from the name when it has one (`srp-Cyrl`),
  else from the text itself (`dominant_script`).
"""

from __future__ import annotations

import unicodedata
from collections import Counter

# ISO 639-1 (WMT's two-letter names) -> ISO 639-3
TWO_TO_THREE = {
    "ar": "arb", "bn": "ben", "cs": "ces", "de": "deu", "en": "eng", "es": "spa", "et": "est", "fi": "fin",
    "fr": "fra", "gl": "glg", "gu": "guj", "ha": "hau", "hi": "hin", "hu": "hun", "id": "ind", "is": "isl",
    "it": "ita", "ja": "jpn", "kk": "kaz", "km": "khm", "ko": "kor", "lt": "lit", "lv": "lvs", "ne": "npi",
    "pl": "pol", "ps": "pbt", "pt": "por", "ro": "ron", "ru": "rus", "si": "sin", "sv": "swe", "ta": "tam",
    "th": "tha", "tr": "tur", "uk": "ukr", "xh": "xho", "zh": "zho", "zu": "zul",
}
# macrolanguage (or older name) -> the individual language FLORES-200 uses
INDIVIDUAL = {
    "ara": "arb", "aze": "azj", "fas": "pes", "fil": "tgl", "kur": "kmr", "lav": "lvs",
    "mlg": "plt", "mon": "khk", "msa": "zsm", "nep": "npi", "orm": "gaz", "pus": "pbt", "sqi": "als",
    "swa": "swh", "uzb": "uzn", "kau": "knc", "pob": "por",
}
# languages whose script a text sample cannot settle (Han is shared by zho and jpn; Hans/Hant differ by characters)
FIXED_SCRIPT = {"jpn": "Jpan", "kor": "Hang", "yue": "Hant"}
REGION_SCRIPT = {("zho", "CN"): "Hans", ("zho", "TW"): "Hant", ("zho", "HK"): "Hant"}

# first word of a character's Unicode name -> ISO 15924
SCRIPT_OF_NAME = {
    "LATIN": "Latn", "CYRILLIC": "Cyrl", "GREEK": "Grek", "ARABIC": "Arab", "HEBREW": "Hebr", "DEVANAGARI": "Deva",
    "BENGALI": "Beng", "GURMUKHI": "Guru", "GUJARATI": "Gujr", "ORIYA": "Orya", "TAMIL": "Taml", "TELUGU": "Telu",
    "KANNADA": "Knda", "MALAYALAM": "Mlym", "SINHALA": "Sinh", "THAI": "Thai", "LAO": "Laoo", "TIBETAN": "Tibt",
    "MYANMAR": "Mymr", "GEORGIAN": "Geor", "HANGUL": "Hang", "ETHIOPIC": "Ethi", "KHMER": "Khmr",
    "ARMENIAN": "Armn", "THAANA": "Thaa", "CJK": "Hani", "HIRAGANA": "Jpan", "KATAKANA": "Jpan",
    "TIFINAGH": "Tfng", "SYRIAC": "Syrc", "CHEROKEE": "Cher", "COPTIC": "Copt", "CANADIAN": "Cans",
    "OL": "Olck", "NKO": "Nkoo", "MONGOLIAN": "Mong", "JAVANESE": "Java", "BALINESE": "Bali",
}


def char_script(char: str) -> str | None:
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    return SCRIPT_OF_NAME.get(name.split(" ", 1)[0]) if name else None


def dominant_script(texts: list[str], sample_chars: int = 20000) -> str | None:
    """The most frequent script among the letters of `texts` (up to `sample_chars` letters looked at)."""
    counts: Counter = Counter()
    seen = 0
    for text in texts:
        for char in text:
            script = char_script(char)
            if script:
                counts[script] += 1
                seen += 1
        if seen >= sample_chars:
            break
    return counts.most_common(1)[0][0] if counts else None


def language_code(name: str, texts: list[str] | None = None) -> str:
    """`deu`, `de`, `fra-CA`, `srp-Cyrl`, `zho-TW`, `msa` ... -> `deu_Latn`, `fra_Latn`, `srp_Cyrl`, `zho_Hant`, `zsm_Latn`."""
    base, _, tail = name.replace("_", "-").partition("-")
    base = TWO_TO_THREE.get(base.lower(), base.lower())
    script = tail if len(tail) == 4 and tail.istitle() else REGION_SCRIPT.get((base, tail.upper()))
    base = INDIVIDUAL.get(base, base)
    script = script or FIXED_SCRIPT.get(base)
    if script is None and base == "zho":
        script = "Hans"
    if script is None:
        found = dominant_script(texts or [])
        if found is None:
            raise ValueError(f"cannot tell the script of {name!r} without text")
        script = found
    return f"{base}_{script}"
