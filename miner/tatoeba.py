"""Tatoeba retrieval sets in the layout LASER and XTREME distribute them.

LASER's `data/tatoeba/v1/` (and XTREME's copy of it) holds, per language, two line-aligned files: `tatoeba.<xxx>-eng.
<xxx>` and `tatoeba.<xxx>-eng.eng` (ISO 639-3 names as Tatoeba writes them: `ara`, `cmn`, `pes`, `swh` ...; up to
1,000 pairs each, 112 languages). `python -m miner.evaluate suite --tatoeba DIR` scores each with the encoder's
cosine nearest neighbour in both directions, as FLORES is scored, and reports the mean over all languages found
and over the 36 that XTREME reports (`XTREME_36`), the two figures papers quote (LaBSE, LASER, CMLM).

The project never holds Tatoeba: point `--tatoeba` at your copy. Each language is named `lang_Script` as everywhere
else (`miner.languages.language_code`: `ara` -> arb_Arab, `cmn` -> zho_Hans or zho_Hant by its characters), and
that name is what the encoder is told, so an ensemble uses the language's own shares.
"""

from __future__ import annotations

import re
from pathlib import Path

from miner.io import InputFormatError, read_lines
from miner.languages import language_code

ENGLISH = "eng"
# the Tatoeba languages of XTREME's retrieval task (Hu et al. 2020), by the names of LASER's files
XTREME_36 = frozenset((
    "afr", "ara", "ben", "bul", "cmn", "deu", "ell", "est", "eus", "fin", "fra", "heb", "hin", "hun", "ind", "ita",
    "jav", "jpn", "kat", "kaz", "kor", "mal", "mar", "nld", "pes", "por", "rus", "spa", "swh", "tam", "tel", "tgl",
    "tha", "tur", "urd", "vie",
))
_FILE = re.compile(r"tatoeba\.([a-z]{2,3})-eng\.\1(\.gz)?")


class TatoebaSet:
    """One language's pairs: `texts[i]` translates `english[i]`, read from `path` and `english_path`."""

    def __init__(self, code: str, path: Path, english_path: Path):
        self.code, self.path, self.english_path = code, path, english_path
        self.texts, self.english = read_lines(path), read_lines(english_path)
        if len(self.texts) != len(self.english):
            raise InputFormatError(f"{path} has {len(self.texts)} lines and {english_path} {len(self.english)}: "
                                   f"Tatoeba's files are aligned line by line")
        if not self.texts:
            raise InputFormatError(f"{path}: no sentences")
        try:
            self.language = language_code(code, self.texts)
        except ValueError as error:  # no letter to tell the script by
            raise InputFormatError(f"{path}: {error}") from None

    @property
    def in_xtreme(self) -> bool:
        return self.code in XTREME_36


def tatoeba_sets(folder: Path, codes: list[str] | None = None) -> list[TatoebaSet]:
    """Every language of `folder` (or those of `codes`, Tatoeba's names or `lang_Script`), sorted by name. A
    language file without its English partner, or a code asked for that the folder lacks, is an error naming it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputFormatError(f"{folder}: not a folder of Tatoeba files (tatoeba.<xxx>-eng.<xxx>)")
    found = {}
    for path in sorted(folder.iterdir()):
        match = _FILE.fullmatch(path.name)
        if match is None or match.group(1) == ENGLISH:
            continue
        english = path.with_name(f"tatoeba.{match.group(1)}-eng.eng{match.group(2) or ''}")
        if not english.exists():
            raise InputFormatError(f"{path}: its English side {english.name} is missing")
        found[match.group(1)] = (path, english)
    if not found:
        raise InputFormatError(f"{folder}: no tatoeba.<xxx>-eng.<xxx> files (LASER's data/tatoeba/v1 layout)")
    sets = [TatoebaSet(code, *paths) for code, paths in found.items()]
    if codes:
        wanted = set(codes)
        sets = [s for s in sets if s.code in wanted or s.language in wanted]
        missing = wanted - {s.code for s in sets} - {s.language for s in sets}
        if missing:
            raise InputFormatError(f"{folder}: no Tatoeba files for {', '.join(sorted(missing))}")
    return sorted(sets, key=lambda s: s.language)
