"""The lexical baseline encoder."""

import numpy as np
import pytest

from encoders import BadSentenceError, load_encoder


def test_unit_vectors_deterministic_in_input_order():
    encoder = load_encoder("char-ngram:256")
    sentences = ["Der Zug nach München.", "The train to Munich.", "Ein ganz anderer Satz."]
    vectors = encoder.encode(sentences)
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(1, abs=1e-6)
    assert (encoder.encode(sentences[::-1])[::-1] == vectors).all()


def test_shared_names_and_numbers_bring_translations_closer():
    encoder = load_encoder("char-ngram")
    de, en, other = encoder.encode(["Siemens meldete 2,1 Milliarden Euro Gewinn.",
                                    "Siemens reported a profit of 2.1 billion euros.",
                                    "Die Kinder spielen im Garten."])
    assert de @ en > de @ other


def test_empty_sentence_and_bad_specs():
    with pytest.raises(BadSentenceError, match="sentence 1: empty"):
        load_encoder("char-ngram").encode(["ok", "   "])
    with pytest.raises(ValueError, match="unknown encoder"):
        load_encoder("laser2")
    with pytest.raises(ValueError, match="vector size"):
        load_encoder("char-ngram:big")


def test_the_baseline_keeps_the_encode_contract_of_every_encoder():
    """Bad sentences named together (not text, empty), a generator read once, bytes decoded, a list of languages
    checked for its length, and only float (or binary) output types."""
    encoder = load_encoder("char-ngram")
    with pytest.raises(BadSentenceError) as caught:
        encoder.encode(["ok", None, "", b"\xff"])
    assert set(caught.value.problems) == {1, 2, 3}
    assert encoder.encode(s for s in ["a b", "caf\u00e9"]).shape == (2, 1024)
    np.testing.assert_array_equal(encoder.encode([b"caf\xc3\xa9"]), encoder.encode(["caf\u00e9"]))
    with pytest.raises(ValueError, match="one name per sentence"):
        encoder.encode(["a", "b"], language=["deu_Latn"])
    with pytest.raises(ValueError, match="float16, float32"):
        encoder.encode(["a"], dtype="int8")
