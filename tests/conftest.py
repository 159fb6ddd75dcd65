"""Shared test settings: where ../shared lives, and deterministic hypothesis runs."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CMLM_SHARED", REPO.parent / "shared"))

# derandomize: the same examples on every run, so CI results are reproducible.
settings.register_profile("repo", deadline=None, derandomize=True, max_examples=60)
settings.load_profile("repo")


@pytest.fixture
def shared_data() -> Path:
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"{path} is absent: tests on the shared real data need ../shared beside the checkout "
                    "(or CMLM_SHARED pointing at it)")
    return path


def sample_sentences() -> dict[str, list[str]]:
    """German and English sentences of the bundled example (written by the project), by language."""
    texts = {}
    for lang in ("de", "en"):
        lines = (REPO / "sample" / "bucc" / f"de-en.training.{lang}").read_text(encoding="utf-8").splitlines()
        texts[lang] = [line.split("\t", 1)[1] for line in lines]
    return texts


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory):
    """A WordPiece vocabulary trained on the bundled example: small, real, and built in seconds."""
    from encoders.tokenizer import smoothed_corpus, train_wordpiece

    tokenizer = train_wordpiece(smoothed_corpus(sample_sentences(), 2000, 0.3, seed=0), vocab_size=600)
    folder = tmp_path_factory.mktemp("tokenizer")
    tokenizer.save_pretrained(folder)
    return tokenizer


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory, tiny_tokenizer) -> Path:
    """One of our checkpoints: a 2-layer, 64-wide BERT with random weights, saved as a real folder."""
    from encoders.model import bert_config, new_encoder_model, save_encoder

    model = new_encoder_model(bert_config(len(tiny_tokenizer), hidden=64, layers=2, max_positions=64), seed=3)
    return save_encoder(model, tiny_tokenizer, tmp_path_factory.mktemp("encoder") / "tiny", max_seq_length=32)
