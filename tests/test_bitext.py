"""`miner.mine_texts`: two lists of sentences in, scored pairs out."""

import pytest

from encoders import load_encoder
from miner import MinedPair, MiningConfig, mine_texts
from miner.bitext import DEFAULT_ENCODER, DEFAULT_SETTINGS, default_config
from miner.config import load_config

GERMAN = ["Der Hund schläft im Garten.", "", "Ich trinke gerne grünen Tee.", "Der Hund schläft im Garten.",
          "Wo ist der Bahnhof?"]
# a lexical encoder pairs texts that share letters: these English lines copy the German ones
ENGLISH = ["Wo ist der Bahnhof?", "Ganz etwas anderes hier", "Der Hund schläft im Garten.",
           "Ich trinke gerne grünen Tee."]


class Recording:
    """An encoder that records what it is asked to embed."""

    def __init__(self):
        self.inner, self.calls = load_encoder("char-ngram"), []

    def encode(self, sentences, *, language=None, show_progress=False):
        self.calls.append((list(sentences), language))
        return self.inner.encode(sentences, language=language)


def test_pairs_come_best_first_with_the_rows_of_first_occurrences():
    encoder = Recording()
    pairs = mine_texts(GERMAN, ENGLISH, "deu_Latn", "eng_Latn", encoder=encoder, config=MiningConfig(k=2))
    assert all(isinstance(p, MinedPair) for p in pairs)
    assert [p.score for p in pairs] == sorted((p.score for p in pairs), reverse=True)
    found = {(p.source_row, p.target_row) for p in pairs}
    assert {(0, 2), (2, 3), (4, 0)} <= found  # "Der Hund ..." is row 0, not its copy at row 3
    garden = next(p for p in pairs if p.source_row == 0)
    assert garden.source == garden.target == "Der Hund schläft im Garten." and garden.cosine == pytest.approx(1)
    # each distinct non-blank text embedded once, with its side's language
    assert encoder.calls[0] == (["Der Hund schläft im Garten.", "Ich trinke gerne grünen Tee.",
                                 "Wo ist der Bahnhof?"], "deu_Latn")
    assert encoder.calls[1] == (ENGLISH, "eng_Latn")


def test_a_threshold_keeps_the_pairs_above_it():
    everything = mine_texts(GERMAN, ENGLISH, encoder="char-ngram", config=MiningConfig(k=2))
    assert len(everything) == 3  # one pair for each distinct German text (max selection: one-to-one)
    cut = (everything[0].score + everything[-1].score) / 2
    kept = mine_texts(GERMAN, ENGLISH, encoder="char-ngram", config=MiningConfig(k=2, threshold=cut))
    assert kept == [p for p in everything if p.score >= cut] and 0 < len(kept) < len(everything)


def test_the_default_encoder_mines_with_the_pipelines_tuned_settings(monkeypatch):
    pipeline = MiningConfig.from_dict(load_config(DEFAULT_SETTINGS)["mining"])
    assert default_config() == pipeline and pipeline.threshold is not None and pipeline.min_cosine is not None
    used = []
    monkeypatch.setattr("miner.bitext.mine", lambda src, tgt, config: used.append(config) or _no_pairs())
    monkeypatch.setattr("encoders.load_encoder", lambda spec: load_encoder("char-ngram"))
    for encoder in (None, DEFAULT_ENCODER, str(DEFAULT_ENCODER), "char-ngram"):
        mine_texts(GERMAN, ENGLISH, encoder=encoder)
    assert used == [pipeline] * 3 + [MiningConfig()]   # the default, however named; another encoder: no threshold


def _no_pairs():
    import numpy as np

    from miner.selection import Pairs

    return Pairs(*(np.empty(0, dtype) for dtype in (np.int64, np.int64, np.float32, np.float32)))


def test_bad_and_empty_input():
    with pytest.raises(TypeError, match="target text 1 is a NoneType"):
        mine_texts(GERMAN, ["Hallo", None], encoder="char-ngram")
    assert mine_texts(["", "  "], ENGLISH, encoder="char-ngram") == []
    # one sentence alone, not in a list, would have been mined character by character
    with pytest.raises(TypeError, match="target texts: a list of sentences, not one str"):
        mine_texts(GERMAN, ENGLISH[0], encoder="char-ngram")
    with pytest.raises(TypeError, match="source texts: a list of sentences, not one bytes"):
        mine_texts(GERMAN[0].encode(), ENGLISH, encoder="char-ngram")


@pytest.mark.parametrize("spec", ["char-ngram", "models/cmlm-distilled", "models/cmlm-ensemble"])
def test_encode_takes_a_list_not_one_sentence(spec):
    # a str is a sequence too: every encoder would have embedded it a character a row
    from tests.conftest import REPO

    encoder = load_encoder(spec if spec == "char-ngram" else str(REPO / spec))
    for alone in (ENGLISH[0], ENGLISH[0].encode()):
        with pytest.raises(TypeError, match="encode takes a list of sentences, not one"):
            encoder.encode(alone)
    assert encoder.encode([ENGLISH[0]]).shape[0] == 1
