"""`python -m encoders.encode`: .npy files aligned line by line with their text."""

import numpy as np

from encoders import load_encoder
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
    assert "x.txt:2: empty or whitespace only" in capsys.readouterr().err


def test_two_inputs_of_one_name_are_refused_for_one_output_folder(tmp_path, capsys):
    # DIR/<name>.npy: the second file's vectors replaced the first's without a word
    import pytest

    for folder, text in (("a", "Hallo\n"), ("b", "Welt\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.txt").write_text(text)
    with pytest.raises(SystemExit) as exit_:
        main(["--encoder", "char-ngram", "--output-dir", str(tmp_path / "out"), str(tmp_path / "a" / "x.txt"),
              str(tmp_path / "b" / "x.txt")])
    assert exit_.value.code == 2 and "two inputs are named x.txt" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_batch_options_below_one_are_errors_naming_them(tmp_path, capsys):
    # --token-budget 0 was read as "the default", --batch-size -3 failed only once encoding began
    (tmp_path / "x.txt").write_text("Hallo\n")
    for flag, value in (("--token-budget", "0"), ("--batch-size", "-3"), ("--max-seq-length", "0")):
        assert main(["--encoder", "char-ngram", flag, value, "--input", str(tmp_path / "x.txt"),
                     "--output", str(tmp_path / "x.npy")]) == 2
        assert f"{flag} must be a whole number 1 or more, got {value}" in capsys.readouterr().err
    assert not (tmp_path / "x.npy").exists()


def test_unknown_encoder_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "x.txt").write_text("Hallo\n")
    assert main(["--encoder", "laser9", "--input", str(tmp_path / "x.txt"), "--output", str(tmp_path / "x.npy")]) == 2
    assert "unknown encoder 'laser9'" in capsys.readouterr().err


def test_checkpoint_streamed_in_chunks_equals_one_call(tmp_path, tiny_encoder_dir):
    from encoders import load_encoder
    from tests.conftest import sample_sentences

    lines = sample_sentences()["de"]
    (tmp_path / "de.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["--encoder", str(tiny_encoder_dir), "--precision", "fp32", "--chunk-lines", "4",
                 "--input", str(tmp_path / "de.txt"), "--output", str(tmp_path / "de.npy"), "--dtype", "float16"]) == 0
    streamed = np.load(tmp_path / "de.npy", allow_pickle=False)
    assert streamed.dtype == np.float16 and streamed.shape == (len(lines), 64)
    whole = load_encoder(str(tiny_encoder_dir), precision="fp32").encode(lines)
    np.testing.assert_allclose(streamed.astype(np.float32), whole, atol=2e-3)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left behind


def test_bad_line_in_a_big_file_fails_before_any_work_and_writes_nothing(tmp_path, tiny_encoder_dir, capsys):
    (tmp_path / "x.txt").write_bytes(b"Hallo\nWelt\n   \nok\n\xff\xfe\n")
    assert main(["--encoder", str(tiny_encoder_dir), "--input", str(tmp_path / "x.txt"),
                 "--output", str(tmp_path / "x.npy")]) == 2
    assert "x.txt:5: invalid UTF-8" in capsys.readouterr().err
    (tmp_path / "x.txt").write_bytes(b"Hallo\nWelt\n   \nok\n")
    assert main(["--encoder", str(tiny_encoder_dir), "--input", str(tmp_path / "x.txt"),
                 "--output", str(tmp_path / "x.npy")]) == 2
    assert "x.txt:3: empty or whitespace only" in capsys.readouterr().err
    assert not (tmp_path / "x.npy").exists()


def test_binary_vectors_are_written_packed(tmp_path):
    from encoders import binary

    lines = ["Guten Morgen.", "Good morning.", "Bonjour."]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["--encoder", "char-ngram", "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "b.npy"),
                 "--dtype", "binary"]) == 0
    stored = np.load(tmp_path / "b.npy")
    assert stored.dtype == np.uint8 and stored.shape == (3, 128)
    np.testing.assert_array_equal(stored, binary.pack(binary.sign_bits(load_encoder("char-ngram").encode(lines))))


def test_settings_and_outputs_that_would_write_wrong_files_are_refused_before_any_work(tmp_path, capsys):
    """--chunk-lines 0 wrote a header and no rows (exit 0), --column 0 took the last field, an output folder
    failed after the work, an output equal to its input overwrote the text, and a bad line in the second of
    several files was found after the first had been written."""
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("Guten Morgen.\nDas Haus.\n", encoding="utf-8")
    bad.write_text("Hallo.\n\n", encoding="utf-8")
    (tmp_path / "folder.npy").mkdir()
    for argv, message in ((["--input", str(good), "--output", str(tmp_path / "o.npy"), "--chunk-lines", "0"],
                           "--chunk-lines must be 1 or more"),
                          (["--input", str(good), "--output", str(tmp_path / "o.npy"), "--column", "0"],
                           "--column is 1-based"),
                          (["--input", str(good), "--output", str(tmp_path / "folder.npy")], "is a folder"),
                          (["--input", str(good), "--output", str(good)], "would overwrite its own input"),
                          (["--output-dir", str(tmp_path / "out"), str(good), str(bad)], "bad.txt:2: empty")):
        try:
            assert main(["--encoder", "char-ngram", *argv]) == 2
        except SystemExit as stop:  # argparse's own refusal
            assert stop.code == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "o.npy").exists() and not (tmp_path / "out").exists()
    assert good.read_text(encoding="utf-8").startswith("Guten")
