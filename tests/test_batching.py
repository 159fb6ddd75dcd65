"""Token-budget batching and sentence validation (encoders.batching): pure functions, no model."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from encoders.batching import BadSentenceError, prepare_texts, sentence_problem, token_budget_batches


@given(st.lists(st.integers(1, 300), min_size=1, max_size=200), st.integers(1, 2000), st.integers(1, 64))
def test_batches_cover_every_sentence_once_within_budget(lengths, budget, max_sentences):
    batches = token_budget_batches(lengths, budget, max_sentences)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(lengths)))
    for batch in batches:
        padded = len(batch) * max(lengths[i] for i in batch)
        assert len(batch) <= max_sentences
        assert padded <= budget or len(batch) == 1  # a sentence longer than the budget travels alone
    # longest first, so batch padding widths never increase
    widths = [max(lengths[i] for i in batch) for batch in batches]
    assert widths == sorted(widths, reverse=True)


def test_short_sentences_share_big_batches_and_long_ones_small():
    lengths = [10] * 100 + [100] * 10
    batches = token_budget_batches(lengths, token_budget=1000, max_sentences=64)
    assert [len(b) for b in batches] == [10, 64, 36]


def test_bad_budget_is_an_error():
    with pytest.raises(ValueError, match="positive"):
        token_budget_batches([3], 0, 8)


@pytest.mark.parametrize("sentence, reason", [
    ("", "empty"), ("  \t ", "empty"), (None, "not text"), (b"\xff\xfe", "invalid UTF-8"),
    ("bad \udcff", "lone surrogate"),
])
def test_sentence_problems_are_named(sentence, reason):
    assert reason in sentence_problem(sentence)


def test_prepare_keeps_good_sentences_and_clips_long_ones():
    prepared = prepare_texts(["ok", "", b"caf\xc3\xa9", "x" * 50], max_chars=10)
    assert prepared.texts == ["ok", "café", "x" * 10]
    assert prepared.kept.tolist() == [0, 2, 3]
    assert list(prepared.problems) == [1] and prepared.clipped == {2}
    error = BadSentenceError(prepared.problems)
    assert "sentence 1: empty" in str(error)
