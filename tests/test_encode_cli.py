"""`python -m encoders.encode`: .npy files aligned line by line with their text."""

import numpy as np

from encoders.encode import main
from tests.conftest import REPO

SAMPLE = REPO / "sample" / "bucc"


def test_column_of_bucc_files_into_a_folder(tmp_path):
    inputs = [SAMPLE / "de-en.test.de", SAMPLE / "de-en.test.en"]
    assert main(["--encoder", "char-ngram", "--column", "2", "--dtype", "float16", "--output-dir",
                 str(tmp_path), *map(str, inputs)]) == 0
    de = np.load(tmp_path / "de-en.test.de.npy")
    assert de.shape == (33, 1024) and de.dtype == np.float16


def test_missing_column_names_file_and_line(tmp_path, capsys):
    (tmp_path / "x.txt").write_text("a\tb\nonly-one-field\n")
    assert main(["--encoder", "char-ngram", "--column", "2", "--input", str(tmp_path / "x.txt"),
                 "--output", str(tmp_path / "x.npy")]) == 2
    assert "x.txt:2: no tab-separated field 2" in capsys.readouterr().err
    assert not (tmp_path / "x.npy").exists()


def test_empty_line_is_named(tmp_path, capsys):
    (tmp_path / "x.txt").write_text("Hallo\n\nWelt\n")
    assert main(["--encoder", "char-ngram", "--input", str(tmp_path / "x.txt"),
                 "--output", str(tmp_path / "x.npy")]) == 2
    assert "x.txt: sentence 1 is empty" in capsys.readouterr().err


def test_unknown_encoder_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "x.txt").write_text("Hallo\n")
    assert main(["--encoder", "laser9", "--input", str(tmp_path / "x.txt"), "--output", str(tmp_path / "x.npy")]) == 2
    assert "unknown encoder 'laser9'" in capsys.readouterr().err
