"""An ensemble encoder: the teacher where it is strong, the student where it is not, one vector space for both.

    encoder = load_encoder("models/cmlm-ensemble")                 # a folder holding ensemble.json
    vectors = encoder.encode(sentences, language="hin_Deva")        # float32 [n, 1024], unit rows, input order

Each member's unit vector is scaled by the square root of its share for the sentence's language, and the scaled
vectors are concatenated:

    v(x) = [sqrt(a_L) T(x), sqrt(1 - a_L) S(x)]           |v(x)| = 1 when T(x) and S(x) are unit vectors
    v(x) . v(y) = sqrt(a_L a_M) cos_T(x, y) + sqrt((1 - a_L)(1 - a_M)) cos_S(x, y)

so the dot product of two sentences is a weighted sum of the members' cosines, with weights set by both sides'
languages: Hindi (a = 0) against English is compared by the student alone, German (a = 1) by the teacher alone,
and a mixed share blends the two. The members keep their own spaces: a student distilled into the teacher's space
still retrieves worse against the teacher's vectors than against its own, which is why this is not a router that
sends each sentence to one member.

`ensemble.json` (written by `python -m training.ensemble`, which picks the shares on held-out data):

    {"format": "cmlm-ensemble/1",
     "members": ["use-multilingual", "../cmlm-distilled"],     # specs; folders relative to this file
     "dims": [512, 512],                                       # each member's vector size (checked at load)
     "default": [0.3, 0.7],                                    # shares for a language not in the table, or none
     "languages": {"deu_Latn": [1.0, 0.0], "hin_Deva": [0.0, 1.0]}}

Languages may be given as the project names them (`deu_Latn`) or as ISO codes (`de`, `deu`); `encode` without a
language uses the default shares. A member whose share is 0 for every sentence of a call is not run (nor loaded).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from encoders.batching import BadSentenceError, check_sentence_list, each_language, sentence_problem
from encoders.binary import as_dtype
from encoders.checkpoint import CheckpointError, read_description

log = logging.getLogger(__name__)

FILE = "ensemble.json"
FORMAT = "cmlm-ensemble/1"
MEMBER_OPTIONS = ("device", "precision", "token_budget", "batch_size")


class EnsembleError(CheckpointError):
    """An ensemble folder that cannot be used; the message names the file and the bad part."""


def is_ensemble(folder: str | Path) -> bool:
    return (Path(folder) / FILE).is_file()


def read_ensemble(folder: str | Path) -> dict:
    """The checked contents of `folder/ensemble.json`, member folders resolved against it."""
    path = Path(folder) / FILE
    spec = read_description(path, FORMAT, EnsembleError, "an ensemble description")
    members = spec.get("members")
    if not isinstance(members, list) or len(members) < 2 or not all(isinstance(m, str) and m for m in members):
        raise EnsembleError(f"{path}: 'members' must list two or more encoder specs")
    dims = spec.get("dims")
    if not isinstance(dims, list) or len(dims) != len(members) or not all(isinstance(d, int) and d > 0 for d in dims):
        raise EnsembleError(f"{path}: 'dims' must give each member's vector size ({len(members)} positive integers)")
    from miner.languages import flores_names, is_flores_name, is_language_name

    unnamed = [k for k in (spec.get("languages") or {}) if not is_language_name(k)]
    if unnamed:  # a key no caller can pass would keep its shares unused, silently
        raise EnsembleError(f"{path}: 'languages' keys must be codes such as deu_Latn (registered ISO 639-3 and "
                            f"ISO 15924 codes), got {', '.join(repr(k) for k in unnamed[:5])}")
    renamed = [k for k in spec.get("languages") or {} if not is_flores_name(k)]
    if renamed:  # `shares` looks a language up by language_code's name: cmn_Hans's shares would never be used
        raise EnsembleError(f"{path}: 'languages' keys must be FLORES-200's names, as sentences' languages are "
                            f"looked up: " + "; ".join(f"{k!r} is {' or '.join(flores_names(k))}"
                                                        for k in renamed[:5]))
    tables = {"default": spec.get("default"), **{f"languages.{k}": v for k, v in (spec.get("languages") or {}).items()}}
    for name, shares in tables.items():
        _check_shares(path, name, shares, len(members))
    resolved = [str(Path(folder) / m) if (Path(folder) / m).exists() else m for m in members]
    nested = [m for m, r in zip(members, resolved) if is_ensemble(r)]
    if nested:  # its own shares would be taken at its default: a member encodes without the call's language
        raise EnsembleError(f"{path}: member {nested[0]!r} is an ensemble itself; list its members here instead")
    return {**spec, "members": resolved, "path": str(path)}


@contextmanager
def named_member(path: str | Path, member: str):
    """A member that cannot be found or read is an error naming the ensemble's file too: the member's own message
    names only the spec written there (`../cmlm-distiled`), not where it was written."""
    try:
        yield
    except EnsembleError:
        raise
    except CheckpointError as error:
        raise EnsembleError(f"{path}: member {member!r}: {error}") from error


def _check_shares(path: Path, name: str, shares, n: int) -> None:
    if (not isinstance(shares, list) or len(shares) != n
            or not all(isinstance(s, (int, float)) and math.isfinite(s) and s >= 0 for s in shares)
            or not math.isclose(sum(shares), 1.0, abs_tol=1e-6)):
        raise EnsembleError(f"{path}: {name} must be {n} shares >= 0 that sum to 1, got {shares!r}")


class EnsembleEncoder:
    """The `encode` contract of every encoder here, over the members of an ensemble folder."""

    def __init__(self, folder: str | Path, load_member, **options):
        """`load_member(spec, **options)` loads a member (encoders.load_encoder, passed in by it)."""
        unsupported = sorted(k for k, v in options.items() if v is not None and k not in MEMBER_OPTIONS)
        if unsupported:
            raise ValueError(f"ensemble {folder}: does not take {', '.join(unsupported)} (it takes "
                             f"{', '.join(MEMBER_OPTIONS)}, passed to every member)")
        self.spec = read_ensemble(folder)
        self.name = str(folder)
        self.options = {k: v for k, v in options.items() if v is not None}
        self.default = np.asarray(self.spec["default"], dtype=np.float64)
        self.table = {k: np.asarray(v, dtype=np.float64) for k, v in (self.spec.get("languages") or {}).items()}
        self._load, self._members, self._unknown = load_member, {}, set()
        self.dims = list(self.spec["dims"])
        self.dim = sum(self.dims)

    def member(self, i: int):
        if i not in self._members:
            with named_member(self.spec["path"], self.spec["members"][i]):
                member = self._load(self.spec["members"][i], **self.options)
            if member.dim != self.dims[i]:
                raise EnsembleError(f"{self.spec['path']}: member {self.spec['members'][i]!r} gives {member.dim}-d "
                                    f"vectors, the file says {self.dims[i]}")
            self._members[i] = member
        return self._members[i]

    def describe(self) -> dict:
        return {"encoder": self.name, "dim": self.dim, "members": self.spec["members"]}

    @property
    def stats(self) -> Counter:
        """The members' counts (sentences, truncated ...), each named for its member (`truncated:cmlm-distilled`):
        the members cut sentences at their own lengths, and a member with no share for a language never sees it."""
        return Counter({f"{key}:{Path(self.spec['members'][i]).name}": n for i, member in self._members.items()
                        for key, n in getattr(member, "stats", {}).items()})

    def shares(self, language: str | None, sentences: Sequence[str] = ()) -> np.ndarray:
        """The members' shares for `language` (any of the names `miner.languages.language_code` reads)."""
        if language is None:
            return self.default
        if language in self.table:
            return self.table[language]
        from miner.languages import is_language_name, language_code

        try:
            code = language_code(language, [s for s in sentences[:200] if isinstance(s, str)])
        except ValueError:
            code = None
        if code not in self.table:
            if language not in self._unknown:  # once per language, not once per batch
                self._unknown.add(language)
                if code is not None and is_language_name(code):  # a language the shares were not fitted for
                    log.info("ensemble %s: no shares for language %r: using the default %s", self.name, language,
                             self.default.tolist())
                else:  # a typo or a private code: the user would rather know
                    log.warning("ensemble %s: %r names no registered language (ISO 639 code, with an ISO 15924 "
                                "script or not): using the default shares %s", self.name, language,
                                self.default.tolist())
            return self.default
        return self.table[code]

    def encode(self, sentences: Sequence[str], *, language: str | None = None, show_progress: bool = False,
               progress=None, dtype: str | np.dtype = np.float32) -> np.ndarray:
        """Unit vectors [len(sentences), dim] in input order, at `language`'s shares (a list: each sentence at its
        own language's). Sentences that cannot be embedded (empty, invalid UTF-8, not text) raise BadSentenceError
        naming every one of them before any member runs."""
        check_sentence_list(sentences)
        sentences = list(sentences)  # read once: a generator would be spent by the check below
        problems = {i: problem for i, s in enumerate(sentences) if (problem := sentence_problem(s))}
        if problems:
            raise BadSentenceError(problems)
        languages = each_language(language, len(sentences))
        if languages is not None and len(set(languages)) > 1:
            out = self._encoded_each(sentences, languages, show_progress)
        else:  # one language for all: the same calls as with its name
            name = language if languages is None else (languages[0] if languages else None)
            out = self._encoded(sentences, self.shares(name, sentences), show_progress)
        if progress is not None:
            progress(len(sentences))
        return as_dtype(out, dtype)

    def _encoded(self, sentences: Sequence[str], shares: np.ndarray, show_progress: bool) -> np.ndarray:
        """All sentences at the same shares."""
        parts = []
        for i, share in enumerate(shares):
            if share == 0:  # a member with no weight adds zeros: not run
                parts.append(np.zeros((len(sentences), self.dims[i]), dtype=np.float32))
                continue
            vectors = self.member(i).encode(sentences, show_progress=show_progress, progress=None)
            parts.append(np.float32(math.sqrt(share)) * vectors)
        return np.hstack(parts)

    def _encoded_each(self, sentences: Sequence[str], languages: list[str], show_progress: bool) -> np.ndarray:
        """Each sentence at its own language's shares: a member runs once, over the sentences it has weight for."""
        by_language = {name: self.shares(name, [s for s, n in zip(sentences, languages) if n == name])
                       for name in dict.fromkeys(languages)}
        shares = np.stack([by_language[name] for name in languages])  # [sentences, members]
        parts = []
        for i in range(len(self.dims)):
            part = np.zeros((len(sentences), self.dims[i]), dtype=np.float32)
            rows = np.flatnonzero(shares[:, i] > 0)
            if len(rows):
                vectors = self.member(i).encode([sentences[r] for r in rows], show_progress=show_progress,
                                                progress=None)
                part[rows] = np.sqrt(shares[rows, i]).astype(np.float32)[:, None] * vectors
            parts.append(part)
        return np.hstack(parts)
