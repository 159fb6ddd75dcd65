"""`python -m miner.evaluate` on the bundled example: the threshold protocols, JSON report and plot."""

import json

import numpy as np
import pytest

from miner.evaluate import main
from tests.conftest import REPO

SAMPLE = REPO / "sample" / "bucc"


def evaluate(*argv):
    return main(["bucc", "--corpus", str(SAMPLE), "--pair", "de-en", "--encoder", "char-ngram", *argv])


def test_tuned_on_training_applied_to_test(tmp_path, capsys):
    assert evaluate("--split", "test", "--tune-split", "training", "--report", str(tmp_path / "r.json"),
                    "--plot", str(tmp_path / "f1.png")) == 0
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["settings"]["threshold_protocol"] == "tuned on de-en training, applied to test"
    assert {"k": 4, "margin": "ratio", "selection": "max"}.items() <= report["settings"].items()
    assert report["oracle"]["label"] == "oracle: tuned and measured on test"
    assert report["counts"]["gold_pairs_with_ambiguous_text"] == 1  # the boilerplate pair
    assert report["result"]["threshold"] == pytest.approx(1.154, abs=1e-3)  # the lexical baseline's, on training
    assert "tuned on de-en training" in out and "oracle" in out
    assert (tmp_path / "f1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fixed_and_two_fold_protocols(tmp_path, capsys):
    assert evaluate("--split", "test", "--threshold", "1.2", "--report", str(tmp_path / "fixed.json")) == 0
    assert evaluate("--split", "test", "--report", str(tmp_path / "folds.json")) == 0
    fixed = json.loads((tmp_path / "fixed.json").read_text())
    folds = json.loads((tmp_path / "folds.json").read_text())
    assert fixed["result"]["threshold"] == 1.2
    assert folds["settings"]["threshold_protocol"].startswith("2-fold")
    assert len(folds["result"]["threshold"]) == 2
    # the oracle is an upper bound of any threshold applied to the same candidates
    assert folds["oracle"]["f1"] >= max(fixed["result"]["f1"], folds["result"]["f1"])


def test_settings_reach_the_miner(tmp_path):
    assert evaluate("--split", "test", "--k", "2", "--selection", "intersect", "--set", "mining.margin=distance",
                    "--report", str(tmp_path / "r.json")) == 0
    settings = json.loads((tmp_path / "r.json").read_text())["settings"]
    assert (settings["k"], settings["selection"], settings["margin"]) == (2, "intersect", "distance")


def test_xsim_command(tmp_path, capsys):
    (tmp_path / "de.txt").write_text("Der Zug nach München.\nSiemens meldet 2,1 Milliarden Euro.\n")
    (tmp_path / "en.txt").write_text("The train to Munich.\nSiemens reports 2.1 billion euros.\n")
    assert main(["xsim", "--src-text", str(tmp_path / "de.txt"), "--tgt-text", str(tmp_path / "en.txt"),
                 "--encoder", "char-ngram", "--report", str(tmp_path / "x.json")]) == 0
    report = json.loads((tmp_path / "x.json").read_text())
    assert report["src->tgt"]["accuracy"] == 1.0 and report["tgt->src"]["accuracy"] == 1.0
    assert "src->tgt accuracy 100.00" in capsys.readouterr().out


@pytest.mark.parametrize("lines, message", [(("a\nb\n", "x\n"), "has 2 lines"), (("", ""), "have no lines")])
def test_xsim_files_that_cannot_be_compared_are_named(tmp_path, capsys, lines, message):
    (tmp_path / "de.txt").write_text(lines[0])
    (tmp_path / "en.txt").write_text(lines[1])
    assert main(["xsim", "--src-text", str(tmp_path / "de.txt"), "--tgt-text", str(tmp_path / "en.txt"),
                 "--encoder", "char-ngram"]) != 0
    err = capsys.readouterr().err
    assert message in err and str(tmp_path / "de.txt") in err


def test_no_language_gives_the_encoder_none(tmp_path, capsys):
    """An ensemble whose default member does not exist: with the languages given, only the German and English
    shares' member runs; with --no-language the default shares need the missing one."""
    folder = tmp_path / "ensemble"
    folder.mkdir()
    (folder / "ensemble.json").write_text(json.dumps({
        "format": "cmlm-ensemble/1", "members": ["char-ngram:64", "no-such-member"], "dims": [64, 8],
        "default": [0.0, 1.0], "languages": {"deu_Latn": [1.0, 0.0], "eng_Latn": [1.0, 0.0]}}))
    (tmp_path / "deu_Latn.txt").write_text("Der Zug nach München.\nSiemens meldet 2,1 Milliarden Euro.\n")
    (tmp_path / "eng_Latn.txt").write_text("The train to Munich.\nSiemens reports 2.1 billion euros.\n")
    run = ["xsim", "--src-text", str(tmp_path / "deu_Latn.txt"), "--tgt-text", str(tmp_path / "eng_Latn.txt"),
           "--encoder", str(folder)]
    assert main(run) == 0
    assert main([*run, "--no-language"]) != 0
    assert "no-such-member" in capsys.readouterr().err


def test_missing_vectors_and_bad_embeddings_are_clear_errors(tmp_path, capsys):
    assert main(["bucc", "--corpus", str(SAMPLE), "--pair", "de-en", "--split", "test"]) == 2
    assert "give either precomputed embeddings" in capsys.readouterr().err
    np.save(tmp_path / "de-en.test.de.npy", np.full((33, 8), np.nan, np.float32))
    np.save(tmp_path / "de-en.test.en.npy", np.ones((44, 8), np.float32))
    assert main(["bucc", "--corpus", str(SAMPLE), "--pair", "de-en", "--split", "test",
                 "--embeddings", str(tmp_path)]) == 2
    assert "de-en.test.de.npy: row 0 (line 1 of" in capsys.readouterr().err


def test_a_bad_precomputed_vector_is_named_by_its_row_in_the_file_not_among_unique_sentences(tmp_path, capsys):
    """The sample's English test side repeats a sentence, so its unique sentences are numbered apart from its
    lines: the error must name the `.npy` row the user wrote."""
    texts = [line.split("\t", 1)[1] for line in (SAMPLE / "de-en.test.en").read_text(encoding="utf-8").splitlines()]
    assert len(set(texts)) < len(texts)
    last = len(texts) - 1
    np.save(tmp_path / "de-en.test.de.npy", np.ones((33, 8), np.float32))
    english = np.ones((len(texts), 8), np.float32)
    english[last] = 0
    np.save(tmp_path / "de-en.test.en.npy", english)
    assert main(["bucc", "--corpus", str(SAMPLE), "--pair", "de-en", "--split", "test",
                 "--embeddings", str(tmp_path)]) == 2
    assert f"de-en.test.en.npy: row {last} (line {last + 1} of" in capsys.readouterr().err


def test_the_suite_finds_every_file_before_it_embeds_any(tmp_path, capsys):
    """A language missing from the FLORES folder is an error before the languages before it are embedded (a
    long suite would lose them all), and a suite with nothing to measure is an error, not an empty report."""
    flores = tmp_path / "flores"
    flores.mkdir()
    for language in ("eng_Latn", "deu_Latn"):
        (flores / f"{language}.devtest").write_text("Ein Satz.\nNoch einer.\n", encoding="utf-8")
    report = tmp_path / "suite.json"
    argv = ["suite", "--flores", str(flores), "--encoder", "char-ngram", "--report", str(report)]
    assert main([*argv, "--languages", "deu_Latn,rus_Cyrl"]) == 2
    assert "no FLORES file for rus_Cyrl" in capsys.readouterr().err and not report.exists()
    assert main([*argv, "--languages", "eng_Latn"]) == 2
    assert "nothing to measure" in capsys.readouterr().err


def test_a_checkpoint_folder_as_encoder_with_pcr(tmp_path, tiny_encoder_dir):
    """--encoder takes a checkpoint (embed, then score); the pair's languages reach PCR."""
    import shutil

    from encoders.fit_pcr import main as language_removal

    model = shutil.copytree(tiny_encoder_dir, tmp_path / "model")
    for lang in ("de", "en"):
        lines = (SAMPLE / f"de-en.training.{lang}").read_text(encoding="utf-8").splitlines()
        (tmp_path / f"{lang}.txt").write_text("\n".join(x.split("\t")[1] for x in lines) + "\n", encoding="utf-8")
    assert language_removal(["fit-pcr", "--encoder", str(model), "--input", f"de={tmp_path}/de.txt",
                             "--input", f"en={tmp_path}/en.txt"]) == 0
    argv = ["bucc", "--corpus", str(SAMPLE), "--pair", "de-en", "--split", "test", "--encoder", str(model),
            "--precision", "fp32", "--language-removal", "pcr", "--report", str(tmp_path / "r.json")]
    assert main(argv) == 0
    settings = json.loads((tmp_path / "r.json").read_text())["settings"]
    assert settings["encoder"] == str(model) and settings["language_removal"] == "pcr"
    (tmp_path / "en.head.txt").write_text("".join((tmp_path / "en.txt").open().readlines()[:33]))
    assert main(["xsim", "--src-text", str(tmp_path / "de.txt"), "--tgt-text", str(tmp_path / "en.head.txt"),
                 "--encoder", str(model), "--language-removal", "pcr"]) == 0  # labels from file names: de, en


def flores_like(tmp_path):
    """The example's German-English training pairs as two aligned FLORES-style files."""
    import gzip

    from tests.conftest import sample_gold_pairs

    flores = tmp_path / "flores"
    flores.mkdir()
    pairs = sample_gold_pairs("training")
    for name, side in (("deu_Latn", 0), ("eng_Latn", 1)):
        with gzip.open(flores / f"{name}.devtest.gz", "wt", encoding="utf-8") as handle:
            handle.write("".join(p[side] + "\n" for p in pairs))
    return flores


def test_a_suite_with_nothing_to_measure_says_so(capsys):
    # it printed an empty line and exited 0
    assert main(["suite", "--encoder", "char-ngram"]) == 2
    assert "suite: nothing to measure: give --flores, --bucc, --short or --tatoeba" in capsys.readouterr().err


def test_suite_tables_xsim_per_language_and_bucc_per_pair(tmp_path, capsys):
    flores = flores_like(tmp_path)
    markdown = tmp_path / "suite.md"
    assert main(["suite", "--encoder", "char-ngram", "--flores", str(flores), "--languages", "deu_Latn",
                 "--bucc", str(SAMPLE), "--pairs", "de-en", "--split", "training", "--markdown", str(markdown),
                 "--report", str(tmp_path / "suite.json")]) == 0
    report = json.loads((tmp_path / "suite.json").read_text())
    assert set(report["xsim"]) == {"deu_Latn"} and 0 <= report["xsim"]["deu_Latn"]["xx->pivot"] < 0.5
    assert report["bucc"]["de-en"]["f1"] > 0.5 and "2-fold" in report["bucc"]["de-en"]["protocol"]
    table = markdown.read_text()
    assert "| deu_Latn |" in table and "| de-en |" in table and "mean of 1" in table
    capsys.readouterr()
    assert main(["suite", "--encoder", "char-ngram", "--flores", str(flores), "--languages", "deu"]) == 2
    assert "no FLORES file for deu (its files are named by code and script: deu_Latn)" in capsys.readouterr().err


@pytest.mark.parametrize("flags, missing, meant", [
    (["--languages", "de"], "de", "deu_Latn"), (["--languages", "ger"], "ger", "deu_Latn"),
    (["--languages", "DEU_latn"], "DEU_latn", "deu_Latn"), (["--languages", "zh"], "zh", "zho_Hans, zho_Hant"),
    (["--languages", "zh-TW"], "zh-TW", "zho_Hant"), (["--languages", "nor_Latn"], "nor_Latn", "nob_Latn"),
    (["--languages", "ara_Arab"], "ara_Arab", "arb_Arab"), (["--languages", "deu_Latn", "--pivot", "en"], "en",
                                                            "eng_Latn"),
])
def test_a_flores_language_in_another_form_is_named_with_its_files_name(tmp_path, capsys, flags, missing, meant):
    # de, zh, --pivot en said "no FLORES file for de" with no hint; nor_Latn, ara_Arab were told yor_Latn, arz_Arab
    flores = tmp_path / "flores"
    flores.mkdir()
    for name in ("deu_Latn", "eng_Latn", "zho_Hans", "zho_Hant", "nob_Latn", "yor_Latn", "arb_Arab", "arz_Arab"):
        (flores / f"{name}.devtest").write_text("Ein Satz.\n", encoding="utf-8")
    assert main(["suite", "--encoder", "char-ngram", "--flores", str(flores), *flags]) == 2
    assert (f"no FLORES file for {missing} (its files are named by code and script: {meant})"
            in capsys.readouterr().err)


def test_suite_scores_xsim_by_margin_as_the_xsim_command_does(tmp_path, capsys):
    """`--xsim-margin ratio`: LASER's xsim tool's way (ratio margin over k = 4 both ways), labelled in the table."""
    flores = flores_like(tmp_path)
    assert main(["suite", "--encoder", "char-ngram", "--flores", str(flores), "--languages", "deu_Latn",
                 "--xsim-margin", "ratio", "--report", str(tmp_path / "suite.json")]) == 0
    assert "xsim error by ratio margin (k = 4) xx->eng_Latn" in capsys.readouterr().out
    report = json.loads((tmp_path / "suite.json").read_text())
    assert report["settings"]["xsim_margin"] == "ratio"
    assert main(["xsim", "--src-text", str(flores / "deu_Latn.devtest.gz"), "--tgt-text",
                 str(flores / "eng_Latn.devtest.gz"), "--encoder", "char-ngram", "--xsim-margin", "ratio",
                 "--report", str(tmp_path / "xsim.json")]) == 0
    alone = json.loads((tmp_path / "xsim.json").read_text())
    assert report["xsim"]["deu_Latn"]["xx->pivot"] == alone["src->tgt"]["error_rate"]
    assert report["xsim"]["deu_Latn"]["pivot->xx"] == alone["tgt->src"]["error_rate"]
    assert main(["suite", "--encoder", "char-ngram", "--flores", str(flores), "--languages", "deu_Latn",
                 "--report", str(tmp_path / "cosine.json")]) == 0
    cosine = json.loads((tmp_path / "cosine.json").read_text())
    assert cosine["settings"]["xsim_margin"] == "absolute" and "margin (k" not in capsys.readouterr().out


def test_suite_reports_the_lowest_gold_pair_similarity_the_cosine_floor_may_not_pass(tmp_path, capsys):
    from encoders import load_encoder
    from tests.conftest import sample_gold_pairs

    assert main(["suite", "--encoder", "char-ngram", "--bucc", str(SAMPLE), "--pairs", "de-en", "--split",
                 "training", "--report", str(tmp_path / "suite.json")]) == 0
    lowest = json.loads((tmp_path / "suite.json").read_text())["bucc"]["de-en"]["lowest_gold_similarity"]
    pairs = sample_gold_pairs("training")
    encoder = load_encoder("char-ngram")
    src, tgt = (encoder.encode([p[side] for p in pairs]) for side in (0, 1))
    assert lowest == pytest.approx(float(np.einsum("ij,ij->i", src, tgt).min()), abs=1e-6)


def test_suite_compares_encoders_side_by_side(tmp_path, capsys):
    flores = flores_like(tmp_path)
    assert main(["suite", "--encoder", "char-ngram", "--compare", "char-ngram:64", "--flores", str(flores),
                 "--languages", "deu_Latn", "--bucc", str(SAMPLE), "--pairs", "de-en", "--split", "training",
                 "--report", str(tmp_path / "suite.json")]) == 0
    out = capsys.readouterr().out
    assert "| | char-ngram | char-ngram:64 |" in out
    assert "| xsim error deu_Latn<->eng_Latn (%) |" in out and "| BUCC de-en F1, 2-fold |" in out
    assert "| BUCC de-en lowest gold-pair similarity |" in out
    reports = json.loads((tmp_path / "suite.json").read_text())["encoders"]
    assert [r["encoder"]["encoder"] for r in reports] == ["char-ngram", "char-ngram:64"]


def short_like(tmp_path):
    """Short pairs as training.prepare writes heldout-short/test: German copies of their English (a lexical encoder
    finds them) in three length bands, and one pair whose German is unrelated."""
    import gzip

    folder = tmp_path / "short"
    folder.mkdir()
    english = ["Open", "Save file", "Close the window now", "Print all pages of this long document for me please",
               "Delete the selected message"]
    pairs = [(e, e) for e in english] + [("Völlig anders", "Quit")]
    with gzip.open(folder / "deu_Latn-eng_Latn.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.write("".join(f"{a}\t{b}\n" for a, b in pairs))
    return folder


def test_suite_short_sentences_by_length_band(tmp_path, capsys):
    short = short_like(tmp_path)
    assert main(["suite", "--encoder", "char-ngram", "--compare", "char-ngram:64", "--short", str(short),
                 "--report", str(tmp_path / "suite.json")]) == 0
    out = capsys.readouterr().out
    assert "| short-sentence accuracy deu_Latn (%) |" in out and "| short-sentence accuracy, 9+ words (%) |" in out
    report = json.loads((tmp_path / "suite.json").read_text())["encoders"][0]["short"]["deu_Latn"]
    assert report["n"] == 6 and report["bands"]["9+"] == 1.0 and report["bands"]["4-8"] == 1.0
    assert report["bands"]["1-3"] < 1.0  # "Quit" and its unrelated German find each other only by chance
    assert main(["suite", "--encoder", "char-ngram", "--short", str(short), "--short-languages", "fra_Latn"]) == 2
    assert "no <lang>-eng_Latn.tsv.gz file of the languages asked for: fra_Latn" in capsys.readouterr().err
    # one name that matches no file, beside one that does, was dropped without a word
    assert main(["suite", "--encoder", "char-ngram", "--short", str(short), "--short-languages", "de,deu_Latn"]) == 2
    assert ("no <lang>-eng_Latn.tsv.gz file of the languages asked for: de (its files are named by code and "
            "script: de is deu_Latn)") in capsys.readouterr().err
    import gzip

    with gzip.open(short / "fra_Latn-eng_Latn.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.write("Ouvrir\tOpen\nno tab on this line\n")
    assert main(["suite", "--encoder", "char-ngram", "--short", str(short)]) == 2
    assert f"{short / 'fra_Latn-eng_Latn.tsv.gz'}:2: not source<TAB>target" in capsys.readouterr().err


def test_bucc_searches_exactly_unless_told_and_tunes_on_another_corpus(tmp_path):
    import shutil

    other = tmp_path / "other"
    shutil.copytree(SAMPLE, other)
    assert evaluate("--split", "test", "--tune-corpus", str(other), "--tune-split", "training",
                    "--report", str(tmp_path / "r.json")) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["settings"]["index"] == "Flat"
    assert report["settings"]["threshold_protocol"] == f"tuned on de-en training of {other}, applied to test"
    assert report["result"]["threshold"] == pytest.approx(1.154, abs=1e-3)  # the same data: the same threshold
    assert evaluate("--split", "test", "--tune-corpus", str(other), "--threshold", "1.1") == 2


def test_a_plot_that_cannot_be_drawn_keeps_the_report(tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert evaluate("--split", "test", "--report", str(tmp_path / "r.json"), "--plot", str(tmp_path / "p.png")) == 2
    assert "plots need matplotlib" in capsys.readouterr().err
    assert json.loads((tmp_path / "r.json").read_text())["pair"] == "de-en"


def test_suite_measures_the_binary_vectors_beside_the_float_ones(tmp_path, capsys):
    flores = flores_like(tmp_path)
    assert main(["suite", "--encoder", "char-ngram", "--also-binary", "language,none", "--flores", str(flores),
                 "--languages", "deu_Latn", "--bucc", str(SAMPLE), "--pairs", "de-en", "--split", "training",
                 "--report", str(tmp_path / "suite.json")]) == 0
    assert ("| | char-ngram | char-ngram (binary (sign code, less the language's mean)) | char-ngram (binary (sign "
            "code)) |") in capsys.readouterr().out
    floats, centred, codes = json.loads((tmp_path / "suite.json").read_text())["encoders"]
    assert codes["encoder"]["vectors"] == "binary (sign code)"
    assert codes["bucc"]["de-en"]["f1"] > 0.2 and codes["bucc"]["de-en"]["f1"] != floats["bucc"]["de-en"]["f1"]
    assert centred["bucc"]["de-en"]["f1"] > 0.2 and centred["bucc"]["de-en"] != codes["bucc"]["de-en"]


def test_suite_rescores_binary_short_lists_with_the_float_vectors_beside_the_codes(tmp_path, capsys):
    flores = flores_like(tmp_path)
    common = ["--flores", str(flores), "--languages", "deu_Latn", "--bucc", str(SAMPLE), "--pairs", "de-en",
              "--split", "training"]
    # a short list longer than every corpus holds all rows: the float vectors' own figures, reached from codes
    assert main(["suite", "--encoder", "char-ngram", "--also-binary", "language", "--rescore", "100000", *common,
                 "--report", str(tmp_path / "suite.json")]) == 0
    assert ("char-ngram (binary (sign code, less the language's mean)), float similarities of the 100000 nearest "
            "by the code |") in capsys.readouterr().out
    floats, codes, rescored = json.loads((tmp_path / "suite.json").read_text())["encoders"]
    assert "rescored" not in codes["encoder"] and rescored["encoder"]["vectors"] == codes["encoder"]["vectors"]
    assert rescored["bucc"]["de-en"]["f1"] == floats["bucc"]["de-en"]["f1"] != codes["bucc"]["de-en"]["f1"]
    lowest = [r["bucc"]["de-en"]["lowest_gold_similarity"] for r in (floats, codes, rescored)]
    assert lowest[0] is not None and lowest[1] is None and lowest[2] == pytest.approx(lowest[0], abs=1e-6)
    assert rescored["xsim"] == floats["xsim"]
    assert main(["suite", "--encoder", "char-ngram", "--rescore", "16", *common]) == 2
    assert "give --also-binary too" in capsys.readouterr().err
    assert main(["bucc", "--corpus", str(SAMPLE), "--pair", "de-en", "--split", "test", "--encoder", "char-ngram",
                 "--rescore", "16"]) == 2
    assert "--rescore K|pairs needs --binary" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bucc", "--corpus", str(SAMPLE), "--pair", "de-en", "--split", "test", "--encoder", "char-ngram",
              "--binary", "--rescore", "pair"])
    assert "a number of candidates or 'pairs', not 'pair'" in capsys.readouterr().err


def test_suite_refines_the_pairs_the_codes_select(tmp_path, capsys):
    common = ["--bucc", str(SAMPLE), "--pairs", "de-en", "--split", "training"]
    assert main(["suite", "--encoder", "char-ngram", "--also-binary", "language", "--rescore", "pairs", *common,
                 "--report", str(tmp_path / "suite.json")]) == 0
    assert "the selected pairs' similarities, each side's float vector against the other's code |" in (
        capsys.readouterr().out)
    floats, codes, refined = json.loads((tmp_path / "suite.json").read_text())["encoders"]
    assert refined["encoder"]["vectors"] == codes["encoder"]["vectors"]
    # the codes' candidates scored again: the F1 moves (and the float vectors' xsim is not what is measured)
    assert refined["bucc"]["de-en"]["f1"] != codes["bucc"]["de-en"]["f1"] and refined["bucc"]["de-en"]["f1"] > 0.2
    assert refined["bucc"]["de-en"]["lowest_gold_similarity"] is None


def test_binary_sources_code_the_float_vectors_they_share_instead_of_encoding_again():
    from encoders import binary
    from miner.bucc import Sentences
    from miner.cli import VectorSource

    source = VectorSource(encoder_spec="char-ngram")
    centred, plain = source.as_binary("language"), source.as_binary("none")
    texts = ["ein Haus am See", "the house by the lake", "eine kleine Katze", "a small cat"]
    rows, sentences = np.arange(4), Sentences("/tmp/texts.txt", [str(i) for i in range(4)], texts)
    floats = source.vectors(sentences, rows, "deu_Latn")
    encoder = source._load_encoder()
    encoder.encode = None  # any further encoding would fail
    np.testing.assert_array_equal(plain.vectors(sentences, rows, "deu_Latn"),
                                  binary.unit_rows(binary.pack(binary.sign_bits(floats)), "sign"))
    np.testing.assert_array_equal(centred.vectors(sentences, rows, "deu_Latn"),
                                  binary.unit_rows(binary.pack(binary.sign_bits(floats, binary.language_mean(floats))), "sign"))


def test_binary_needs_an_encoder(tmp_path, capsys):
    assert main(["xsim", "--src-text", str(tmp_path / "a.txt"), "--tgt-text", str(tmp_path / "b.txt"),
                 "--embeddings", str(tmp_path), "--binary"]) != 0
    assert "--binary needs --encoder" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    # faiss parsed these and failed inside training or adding: tracebacks
    (["bucc", "--corpus", str(SAMPLE), "--pair", "de-en", "--split", "test", "--index", "PQ16"],
     "index 'PQ16' cannot be trained on 43 vectors: Number of training points (43) should be at least"),
    (["bucc", "--corpus", str(SAMPLE), "--pair", "de-en", "--split", "test", "--index", "IDMap,Flat"],
     "index 'IDMap,Flat' cannot take vectors as the miner adds them: add does not make sense"),
    # read and ignored: xsim retrieves by --xsim-margin
    (["xsim", "--src-text", str(SAMPLE / "de-en.test.de"), "--tgt-text", str(SAMPLE / "de-en.test.de"),
      "--margin", "ratio"], "--margin and --selection are mining's"),
])
def test_settings_faiss_or_the_task_cannot_use_are_one_line_errors(capsys, argv, message):
    assert main([*argv, "--encoder", "char-ngram"]) == 2
    assert message in capsys.readouterr().err
