"""A fastText model file is checked whole before fastText reads it: fastText's loader reads a dictionary cut
short forever, growing its memory, so a truncated download would hang the extract stage instead of failing."""

import struct
from pathlib import Path

import pytest

from miner.io import InputFormatError
from pipelines.text.fasttext_format import check_model_file
from pipelines.text.langid import LanguageIdentifier
from tests.test_langid import ENGLISH, GERMAN, tiny_model

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "models" / "lid" / "cmlm-lid.ftz"


@pytest.fixture(scope="module")
def dense_model(tmp_path_factory):
    return tiny_model(tmp_path_factory.mktemp("dense"), {"eng_Latn": ENGLISH, "deu_Latn": GERMAN})


def test_whole_models_pass_dense_and_quantised(dense_model):
    check_model_file(dense_model)
    check_model_file(SHIPPED)


@pytest.mark.parametrize("model", ["dense", "quantised"])
def test_a_model_cut_anywhere_is_a_clear_error_naming_the_file(model, dense_model, tmp_path):
    whole = (dense_model if model == "dense" else SHIPPED).read_bytes()
    inside_a_word = 8 + 56 + 28 + 2  # header, settings, the dictionary's sizes, then its first word
    for length in (4, 30, 80, inside_a_word, len(whole) // 2, len(whole) - 1):
        cut = tmp_path / f"cut-{length}.bin"
        cut.write_bytes(whole[:length])
        with pytest.raises(InputFormatError, match=f"{cut.name}: not a "):
            check_model_file(cut)
    with pytest.raises(InputFormatError, match="inside word"):
        check_model_file(tmp_path / f"cut-{inside_a_word}.bin")


def test_the_identifier_refuses_a_cut_model_before_fasttext_reads_it(tmp_path):
    """Without the check this call does not return (fastText reads the last word until memory runs out)."""
    cut = tmp_path / "cut.ftz"
    cut.write_bytes(SHIPPED.read_bytes()[:100_000])
    with pytest.raises(InputFormatError, match="cut.ftz: not a whole fastText model.*dictionary"):
        LanguageIdentifier.load(cut)


def test_other_files_are_not_models(tmp_path):
    for name, content in (("text.ftz", b"__label__en hello\n" * 10), ("tiny.ftz", b"ab")):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(InputFormatError, match=f"{name}: not a fastText model"):
            check_model_file(tmp_path / name)


SETTING_AT = {"dim": 8, "loss": 32, "model": 36, "bucket": 40, "maxn": 48}  # int32 byte offsets in the file


@pytest.mark.parametrize("model", ["dense", "quantised"])
@pytest.mark.parametrize("setting, value", [("dim", 7), ("dim", 0), ("bucket", 0), ("bucket", -1),
                                            ("bucket", 2**31 - 1), ("bucket", 1), ("loss", 9), ("model", 0),
                                            ("maxn", -1)])
def test_settings_that_do_not_fit_the_matrices_are_refused_naming_the_file(model, setting, value, dense_model,
                                                                          tmp_path):
    """fastText trusts them: dim 7 over 128 columns aborts it (munmap_chunk), bucket 0 divides by zero, -1 or past
    the input matrix indexes outside it."""
    data = bytearray((dense_model if model == "dense" else SHIPPED).read_bytes())
    struct.pack_into("<i", data, SETTING_AT[setting], value)
    crafted = tmp_path / f"{setting}-{value}.ftz"
    crafted.write_bytes(data)
    with pytest.raises(InputFormatError, match=f"{crafted.name}: not a fastText model"):
        check_model_file(crafted)


def test_the_identifier_refuses_a_model_whose_dim_is_not_its_matrices(tmp_path):
    data = bytearray(SHIPPED.read_bytes())
    struct.pack_into("<i", data, SETTING_AT["dim"], 7)
    crafted = tmp_path / "dim.ftz"
    crafted.write_bytes(data)
    with pytest.raises(InputFormatError, match="dim.ftz: not a fastText model.*dim 7"):
        LanguageIdentifier.load(crafted)
