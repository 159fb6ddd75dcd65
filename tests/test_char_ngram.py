"""The lexical baseline encoder."""

import numpy as np
import pytest

from encoders import load_encoder


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
    with pytest.raises(ValueError, match="sentence 1 is empty"):
        load_encoder("char-ngram").encode(["ok", "   "])
    with pytest.raises(ValueError, match="unknown encoder"):
        load_encoder("laser2")
    with pytest.raises(ValueError, match="vector size"):
        load_encoder("char-ngram:big")
