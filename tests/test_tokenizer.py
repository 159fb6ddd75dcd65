"""WordPiece training with language smoothing, and the coverage report (encoders.tokenizer)."""

import json

import pytest
from transformers import AutoTokenizer

from encoders.tokenizer import coverage, main, smoothed_corpus, smoothed_sample_sizes
from tests.conftest import sample_sentences


def test_smoothing_exponent_matches_the_formula():
    counts = {"en": 900, "de": 90, "sw": 10}
    sizes = smoothed_sample_sizes(counts, total=10000, alpha=0.3)
    shares = {lang: (n / 1000) ** 0.3 for lang, n in counts.items()}
    for lang in counts:
        assert sizes[lang] == round(10000 * shares[lang] / sum(shares.values()))
    assert sizes["sw"] / sizes["en"] == pytest.approx((10 / 900) ** 0.3, rel=1e-3)  # 0.26, not 0.011
    assert smoothed_sample_sizes(counts, 1000, alpha=1.0) == counts  # alpha 1: proportional


def test_small_languages_are_repeated_not_dropped():
    corpus = smoothed_corpus({"big": [f"b{i}" for i in range(1000)], "small": ["s0", "s1"]}, 500, 0.3, seed=0)
    small = [line for line in corpus if line.startswith("s")]
    assert len(small) > 2 and set(small) == {"s0", "s1"}
    assert corpus == smoothed_corpus({"big": [f"b{i}" for i in range(1000)], "small": ["s0", "s1"]}, 500, 0.3, 0)


def test_build_and_coverage_commands(tmp_path, capsys):
    texts = sample_sentences()
    for lang, lines in texts.items():
        (tmp_path / f"{lang}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "ru.txt").write_text("Доброе утро, как дела?\n", encoding="utf-8")
    assert main(["build", "--input", f"deu_Latn={tmp_path}/de.txt", "--input", f"eng_Latn={tmp_path}/e*.txt",
                 "--vocab-size", "500", "--output", str(tmp_path / "tok")]) == 0
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "tok"))
    ids = tokenizer("Die Apotheke")["input_ids"]
    assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
    assert tokenizer.tokenize("Köln")[0].startswith("K")  # cased, accents kept
    train = json.loads((tmp_path / "tok" / "coverage_train.json").read_text())
    assert set(train["languages"]) == {"deu_Latn", "eng_Latn"} and train["alpha"] == 0.3

    capsys.readouterr()
    assert main(["coverage", "--tokenizer", str(tmp_path / "tok"), "--input", f"rus_Cyrl={tmp_path}/ru.txt",
                 "--input", f"deu_Latn={tmp_path}/de.txt", "--report", str(tmp_path / "cov.json")]) == 0
    assert "rus_Cyrl" in capsys.readouterr().out
    report = json.loads((tmp_path / "cov.json").read_text())["languages"]
    assert report["rus_Cyrl"]["unk_rate"] > 0.5  # Cyrillic was never seen
    assert report["deu_Latn"]["unk_rate"] < 0.01

    (tmp_path / "empty.txt").write_text("\n  \n", encoding="utf-8")  # its 0% went into the mean
    assert main(["coverage", "--tokenizer", str(tmp_path / "tok"), "--input", f"deu_Latn={tmp_path}/de.txt",
                 "--input", f"fra_Latn={tmp_path}/empty.txt"]) == 2
    assert "no non-empty lines for fra_Latn" in capsys.readouterr().err


def test_coverage_counts_unknown_tokens(tiny_tokenizer):
    report = coverage(tiny_tokenizer, {"x": ["☃☃ ☃", "Die"]})["x"]
    assert report["sentences"] == 2 and report["sentences_with_unk"] == 0.5
    assert report["unk_rate"] == pytest.approx(2 / report["tokens"])  # "☃☃" and "☃" are one [UNK] each


def test_bad_inputs_are_clear_errors(tmp_path, capsys):
    assert main(["build", "--input", "deu_Latn", "--output", str(tmp_path / "t")]) == 2
    assert "LANGUAGE=FILE_OR_GLOB" in capsys.readouterr().err
    assert main(["build", "--input", f"deu_Latn={tmp_path}/none*.txt", "--output", str(tmp_path / "t")]) == 2
    assert "no file matches" in capsys.readouterr().err
    (tmp_path / "de.txt").write_text("Ein Satz.\n", encoding="utf-8")
    assert main(["build", "--input", f"deu_Latn={tmp_path}/de.txt", "--output", str(tmp_path / "t"),
                 "--vocab-size", "-5"]) == 2  # an OverflowError from the trainer
    assert "--vocab-size must be 10 or more" in capsys.readouterr().err
    assert main(["coverage", "--tokenizer", str(tmp_path / "none"), "--input", f"deu_Latn={tmp_path}/de.txt"]) == 2
    assert "no tokenizer.json there" in capsys.readouterr().err  # was taken for a hub id: an OSError


def test_a_vocabulary_is_numbered_in_one_order_whatever_order_the_trainer_found_it_in():
    from encoders.tokenizer import SPECIAL_TOKENS, train_wordpiece

    corpus = [f"{word} {other}ing the {word}s of {other}" for word in ("house", "tree", "Haus", "Baum", "дом", "лес")
              for other in ("walk", "talk", "lauf", "bег", "sing", "geh")] * 3
    tokenizer = train_wordpiece(corpus, 120)
    numbered = [token for token, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])]
    # the trainer numbers tokens of equal count in a hash order that changes between runs; WordPiece reads only
    # the set, so the specials come first and the rest sorted: the same set is the same file
    assert numbered == [*SPECIAL_TOKENS, *sorted(set(numbered) - set(SPECIAL_TOKENS))]
    ids = tokenizer.encode("Baums singing", add_special_tokens=False)
    assert tokenizer.unk_token_id not in ids and tokenizer.decode(ids) == "Baums singing"
