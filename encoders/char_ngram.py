"""Hashed character n-gram vectors: a lexical baseline encoder that needs no model and no training.

Each sentence becomes a bag of features (its casefolded words, and the character n-grams of each word wrapped in
`<` `>` as in fastText), hashed into `dim` signed buckets (feature hashing) with log-scaled counts, then L2
normalised. Translations score high only where they share strings: names, numbers, cognates, loanwords. That is
enough to exercise and test mining end to end, and it is the floor a learned encoder must clear; it is not a
multilingual sentence encoder (Chinese-English pairs share almost nothing).
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Sequence

import numpy as np

from encoders.batching import BadSentenceError, each_language, prepare_texts
from encoders.binary import as_dtype

TOKEN = re.compile(r"\w+|[^\w\s]")
MAX_CHARS = 100_000  # per sentence: bounds the n-grams one record can make


class CharNgramEncoder:
    name = "char-ngram"

    def __init__(self, dim: int = 1024, min_n: int = 3, max_n: int = 5):
        if dim < 2 or not 1 <= min_n <= max_n:
            raise ValueError(f"char-ngram needs dim >= 2 and 1 <= min_n <= max_n, got {dim}, {min_n}, {max_n}")
        self.dim, self.min_n, self.max_n = dim, min_n, max_n

    def features(self, sentence: str) -> Counter:
        tokens = TOKEN.findall(unicodedata.normalize("NFKC", sentence).casefold())
        bag = Counter(tokens)
        for token in tokens:
            wrapped = f"<{token}>"
            for n in range(self.min_n, min(self.max_n, len(wrapped)) + 1):
                bag.update(wrapped[i : i + n] for i in range(len(wrapped) - n + 1))
        return bag

    def describe(self) -> dict:
        return {"encoder": f"{self.name}:{self.dim}", "dim": self.dim}

    def encode(self, sentences: Sequence[str], *, language: str | None = None, show_progress: bool = False,
               progress=None, dtype=np.float32) -> np.ndarray:
        """[len(sentences), dim] unit vectors in input order (`language` is not needed: the baseline has no model,
        but a list of names is checked as every encoder checks it). Sentences that cannot be embedded raise
        BadSentenceError naming every one of them, as the other encoders do."""
        texts = prepare_texts(sentences, max_chars=MAX_CHARS)
        if texts.problems:
            raise BadSentenceError(texts.problems)
        each_language(language, len(texts.texts))
        out = np.zeros((len(texts.texts), self.dim), dtype=np.float32)
        for row, sentence in enumerate(texts.texts):
            bag = self.features(sentence)
            if not bag:  # NFKC can leave nothing of a few odd characters
                raise BadSentenceError({int(texts.kept[row]): "no characters to hash after normalisation"})
            hashes = np.fromiter((zlib.crc32(f.encode("utf-8")) for f in bag), dtype=np.uint64, count=len(bag))
            weights = np.log1p(np.fromiter(bag.values(), dtype=np.float32, count=len(bag)))
            signs = np.where(hashes >> np.uint64(31) & np.uint64(1), -1.0, 1.0).astype(np.float32)
            np.add.at(out[row], (hashes % np.uint64(self.dim)).astype(np.int64), signs * weights)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        if progress:
            progress(len(texts.texts))
        # A sentence whose hashed features cancel exactly is vanishingly rare; keep it finite rather than NaN.
        return as_dtype(out / np.maximum(norms, np.finfo(np.float32).tiny), dtype)
