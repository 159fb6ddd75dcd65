"""Sentence validation and token-budget batching: the pure-Python half of encoding, testable without a model.

Batches are cut from length-sorted input so that padding is small, and sized by a token budget (sentences x
longest length) rather than a fixed count: short sentences travel in large batches, long ones in small batches, and
memory per batch stays bounded whatever the input. Longest first, so an out-of-memory shows on the first batch.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from encoders.binary import as_dtype

log = logging.getLogger(__name__)
CHARS_PER_TOKEN_CAP = 20  # clip text at max_seq_length * this before tokenising: bounds work on pathological lines


class BadSentenceError(ValueError):
    """Sentences that cannot be embedded; `problems` maps their input index to the reason."""

    def __init__(self, problems: dict[int, str]):
        self.problems = problems
        super().__init__(describe_problems("sentence(s)", [f"sentence {i}: {why}" for i, why in problems.items()]))


def describe_problems(what: str, problems: list[str], shown: int = 10) -> str:
    """One message for many unembeddable inputs: the count, then the first `shown` of them."""
    more = f" (and {len(problems) - shown} more)" if len(problems) > shown else ""
    return f"{len(problems)} {what} cannot be embedded: {'; '.join(problems[:shown])}{more}"


def check_sentence_list(sentences) -> None:
    """`encode` takes sentences; one sentence passed alone (a str, or bytes) would be embedded character by
    character, a row a character, without a word."""
    if isinstance(sentences, str | bytes):
        raise TypeError(f"encode takes a list of sentences, not one {type(sentences).__name__}: "
                        "encode([sentence]) embeds one")


def each_language(language, n: int) -> list | None:
    """`encode`'s `language` as one name per sentence where it is a list (sentences of several languages in one
    call: the embed stage packs small chunks so); None where it is one name or none for all."""
    if language is None or isinstance(language, str):
        return None
    if not isinstance(language, Iterable):
        raise TypeError(f"language: a name such as 'deu_Latn', or a list of one name per sentence, got "
                        f"{type(language).__name__}")
    languages = list(language)
    if len(languages) != n or not all(isinstance(name, str) for name in languages):
        raise ValueError(f"language: one name for all sentences, or a list of one name per sentence ({n}), got "
                         f"{len(languages)} item(s)")
    return languages


def sentence_problem(sentence) -> str | None:
    """Why a sentence cannot be embedded, or None when it can."""
    if isinstance(sentence, bytes):
        try:
            sentence = sentence.decode("utf-8")
        except UnicodeDecodeError as err:
            return f"invalid UTF-8 ({err.reason} at byte {err.start})"
    if not isinstance(sentence, str):
        return f"not text ({type(sentence).__name__})"
    if not sentence.strip():
        return "empty or whitespace only"
    try:
        sentence.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: what surrogateescape decoding leaves of invalid UTF-8
        return "invalid UTF-8 (lone surrogate code point)"
    return None


@dataclass
class PreparedText:
    texts: list[str]
    problems: dict[int, str] = field(default_factory=dict)  # input index -> reason, for sentences left out
    kept: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # input index of each text
    clipped: set[int] = field(default_factory=set)  # positions in `texts` cut at `max_chars` before tokenising


def prepare_texts(sentences: Sequence, max_chars: int) -> PreparedText:
    """Validate and decode sentences; clip each at `max_chars` characters, which bounds tokenisation work per
    sentence (the tokenizer truncates to the model's length afterwards anyway)."""
    check_sentence_list(sentences)
    texts, kept, problems, clipped = [], [], {}, set()
    for index, sentence in enumerate(sentences):
        problem = sentence_problem(sentence)
        if problem:
            problems[index] = problem
            continue
        text = sentence.decode("utf-8") if isinstance(sentence, bytes) else sentence
        if len(text) > max_chars:
            text = text[:max_chars]
            clipped.add(len(texts))
        texts.append(text)
        kept.append(index)
    return PreparedText(texts, problems, np.asarray(kept, dtype=np.int64), clipped)


def token_budget_batches(lengths: Sequence[int], token_budget: int, max_sentences: int) -> list[np.ndarray]:
    """Index arrays into `lengths`, longest sentences first; each batch pads to its first (longest) sentence and
    holds at most `token_budget` padded tokens and `max_sentences` sentences (always at least one sentence)."""
    if token_budget < 1 or max_sentences < 1:
        raise ValueError(f"token budget and batch size must be positive, got {token_budget} and {max_sentences}")
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    batches, start = [], 0
    while start < len(order):
        size = max(1, min(max_sentences, token_budget // max(1, int(lengths[order[start]]))))
        batches.append(order[start : start + size])
        start += size
    return batches


def padded(ids: list[list[int]], pad_id: int, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded token ids [B, width] (width: the longest row by default) and their 0/1 attention mask."""
    width = width or max(map(len, ids))
    input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for row, tokens in enumerate(ids):
        input_ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return input_ids, mask


def split_on_out_of_memory(forward, ids: list[list[int]], shrink) -> np.ndarray:
    """`forward(ids)` -> one row per sentence; a batch that runs out of GPU memory is split in halves and retried,
    never dropped, and `shrink(padded tokens)` hears what failed, so that later batches can be cut to fit."""
    import torch

    try:
        return forward(ids)
    except torch.cuda.OutOfMemoryError:
        if len(ids) == 1:
            raise
        torch.cuda.empty_cache()
        shrink(len(ids) * max(map(len, ids)))
        half = len(ids) // 2
        return np.concatenate([split_on_out_of_memory(forward, ids[:half], shrink),
                               split_on_out_of_memory(forward, ids[half:], shrink)])


@dataclass
class EncodedSentences:
    """What `encode_valid` returns: vectors for the sentences that could be embedded, and why others could not."""

    vectors: np.ndarray  # [len(kept), dim]
    kept: np.ndarray  # input index of each row
    problems: dict[int, str]  # input index -> reason


class SentenceEncoder:
    """`encode` and `encode_valid` for an encoder that defines `max_seq_length`, `token_budget` and
    `_embed(texts, clipped, show_progress, progress) -> float32 [len(texts), dim]`, and optionally
    `_finish(vectors, language)` (language removal). Validation, clipping and reporting live here once."""

    max_seq_length: int
    stats: Counter

    def encode(self, sentences: Sequence[str], *, language: str | None = None, show_progress: bool = False,
               progress=None, dtype: str | np.dtype = np.float32) -> np.ndarray:
        """Unit vectors [len(sentences), dim] in input order (`dtype="binary"`: packed codes, encoders.binary).
        Sentences that cannot be embedded (empty, invalid UTF-8, not text) raise BadSentenceError naming every one
        of them before any work is done. `language` is needed only with PCR; `progress(n)` is called as sentences
        finish (for a caller's bar)."""
        prepared = prepare_texts(sentences, self.max_seq_length * CHARS_PER_TOKEN_CAP)
        if prepared.problems:
            raise BadSentenceError(prepared.problems)
        return self._vectors(prepared, language, show_progress, progress, dtype)

    def encode_valid(self, sentences: Sequence, *, language: str | None = None, show_progress: bool = False,
                     progress=None, dtype: str | np.dtype = np.float32) -> EncodedSentences:
        """Like `encode`, but a bad sentence is left out (and reported) while every other one is embedded."""
        prepared = prepare_texts(sentences, self.max_seq_length * CHARS_PER_TOKEN_CAP)
        self.stats["skipped"] += len(prepared.problems)
        for index, reason in list(prepared.problems.items())[:5]:
            log.warning("skipping sentence %d: %s", index, reason)
        return EncodedSentences(self._vectors(prepared, language, show_progress, progress, dtype), prepared.kept,
                                prepared.problems)

    def _vectors(self, prepared: PreparedText, language, show_progress: bool, progress, dtype) -> np.ndarray:
        vectors = self._embed(prepared.texts, prepared.clipped, show_progress, progress)
        return as_dtype(self._finished(vectors, language, prepared), dtype)

    def _finished(self, vectors: np.ndarray, language, prepared: PreparedText) -> np.ndarray:
        """_finish with one language for all rows, or, for a list of one per input sentence, each language's rows
        with theirs (the rows left out as bad have none)."""
        languages = each_language(language, len(prepared.texts) + len(prepared.problems))
        if languages is None:
            return self._finish(vectors, language)
        if type(self)._finish is SentenceEncoder._finish:  # nothing to do per language
            return vectors
        row_languages = np.asarray(languages, dtype=object)[prepared.kept]
        out = np.empty_like(vectors)
        for name in dict.fromkeys(row_languages):
            rows = np.flatnonzero(row_languages == name)
            out[rows] = self._finish(vectors[rows], name)
        return out

    def _embed(self, texts: list[str], clipped: set[int], show_progress: bool, progress) -> np.ndarray:
        raise NotImplementedError

    def _shrink_budget(self, failed_tokens: int) -> None:
        """After a batch of `failed_tokens` padded tokens ran out of GPU memory, later calls' batches hold at most
        half as many: a GPU too small for the default budget pays for the error once, not on every batch."""
        self.token_budget = min(self.token_budget, max(1, failed_tokens // 2))
        log.warning("GPU out of memory on a batch of %d padded tokens: splitting it; batches from now on hold at "
                    "most %d tokens", failed_tokens, self.token_budget)

    def _finish(self, vectors: np.ndarray, language: str | None) -> np.ndarray:
        return vectors
