"""en-pairs (training/en_pairs.py): every bad line counted by reason and logged with file:line, the held-out split
chosen by the English side alone, multi-sentence pairs split into sentence pairs where both sides split alike."""

import gzip
import logging

import pytest

from training.en_pairs import MIN_PAIRS, heldout_half, read_en_pairs, sentence_pairs


def write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


def good_pairs(n, prefix="Datei"):
    return [f"{prefix} {i} öffnen\tOpen file number {i}" for i in range(n)]


def test_bad_lines_are_counted_by_reason_and_logged_with_file_and_line(tmp_path, caplog):
    bad = ["no tab here", "\tEmpty source", "   \t   ", "Firefox\tFirefox", "ok\tOK",
           "Ein sehr, sehr langer deutscher Satz ohne Ende\tYes", "Datei 0 öffnen\tOpen file number 0"]
    write(tmp_path / "ui" / "deu_Latn-eng_Latn.tsv.gz", good_pairs(MIN_PAIRS) + bad)
    write(tmp_path / "help" / "deu_Latn-eng_Latn.tsv.gz", ["Datei 1 öffnen\tOpen file number 1"])  # a duplicate
    write(tmp_path / "ui" / "xx-eng_Latn.tsv.gz", good_pairs(MIN_PAIRS))  # not a code with a script
    write(tmp_path / "ui" / "deu_Latm-eng_Latn.tsv.gz", good_pairs(MIN_PAIRS))  # well formed, not registered
    write(tmp_path / "ui" / "fra_Latn-eng_Latn.tsv.gz", good_pairs(MIN_PAIRS - 1, "Ouvrir"))
    with caplog.at_level(logging.WARNING, logger="training.en_pairs"):
        result = read_en_pairs(tmp_path)
    assert result.skips == {"no-tab": 1, "empty-side": 2, "same-as-english": 2, "length-ratio": 1,
                            "duplicate": 2, "unknown-language": 2, "too-few-pairs": MIN_PAIRS - 1}
    german = tmp_path / "ui" / "deu_Latn-eng_Latn.tsv.gz"
    assert f"{german}:{MIN_PAIRS + 1}: no-tab" in caplog.text
    assert f"{german}:{MIN_PAIRS + 4}: same-as-english" in caplog.text
    assert f"{german}:2: duplicate" in caplog.text  # help/ is read first: its copy of line 2 is kept
    assert f"{german}:{MIN_PAIRS + 7}: duplicate" in caplog.text
    assert "xx-eng_Latn.tsv.gz: unknown-language" in caplog.text and "fra_Latn: too-few-pairs" in caplog.text
    assert "deu_Latm-eng_Latn.tsv.gz: unknown-language" in caplog.text
    kept = result.train["deu_Latn"] + [p for half in result.heldout["deu_Latn"].values() for p in half]
    assert sorted(kept) == sorted(tuple(line.split("\t")) for line in good_pairs(MIN_PAIRS))
    assert "fra_Latn" not in result.train and result.sources["ui"]["deu_Latn"] == MIN_PAIRS - 1


def test_the_heldout_split_follows_the_english_side(tmp_path):
    english = [f"Sentence number {i} of the test" for i in range(3000)]
    write(tmp_path / "a" / "deu_Latn-eng_Latn.tsv.gz", [f"Satz Nummer {i} des Tests\t{e}" for i, e in enumerate(english)])
    write(tmp_path / "a" / "ell_Grek-eng_Latn.tsv.gz", [f"Πρόταση αριθμός {i} του τεστ\t{e}" for i, e in enumerate(english)])
    result = read_en_pairs(tmp_path)
    for half in ("tune", "test"):
        german = {en for _, en in result.heldout["deu_Latn"][half]}
        assert german == {en for _, en in result.heldout["ell_Grek"][half]}  # the same English in every language
        assert german and all(heldout_half(en) == half for en in german)
    trained = {en for _, en in result.train["deu_Latn"]}
    assert not trained & result.heldout_english()
    assert 100 < len(result.heldout_english()) < 300  # 6% of 3,000


def test_heldout_sets_keep_one_pair_per_english_sentence(tmp_path):
    held = next(e for e in (f"Cancel {i}" for i in range(10000)) if heldout_half(e))
    write(tmp_path / "a" / "deu_Latn-eng_Latn.tsv.gz", good_pairs(MIN_PAIRS) + [f"Abbrechen\t{held}"])
    write(tmp_path / "b" / "deu_Latn-eng_Latn.tsv.gz", [f"Beenden\t{held}"])
    halves = read_en_pairs(tmp_path).heldout["deu_Latn"]
    assert [p for p in halves[heldout_half(held)] if p[1] == held] == [("Abbrechen", held)]



@pytest.mark.parametrize("pair, expected", [
    (("Η άμυνα ήταν καλή. Κέρδισαν το παιχνίδι; Ναι, κέρδισαν!", "The defence was good. Did they win the game? "
      "Yes, they did!"),
     [("Η άμυνα ήταν καλή.", "The defence was good."), ("Κέρδισαν το παιχνίδι;", "Did they win the game?"),
      ("Ναι, κέρδισαν!", "Yes, they did!")]),
    (("委员会批准了预算。会议在周二举行。", "The committee approved the budget. The meeting was on Tuesday."),
     [("委员会批准了预算。", "The committee approved the budget."), ("会议在周二举行。", "The meeting was on Tuesday.")]),
    (("यह पहला वाक्य है। यह दूसरा है।", "This is the first sentence. This is the second."),
     [("यह पहला वाक्य है।", "This is the first sentence."), ("यह दूसरा है।", "This is the second.")]),
    (("Der Dr. Müller kam. Er ging dann.", "Dr. Mueller came. He then left."), []),  # an abbreviation's cut
    (("Er kam und ging.", "He came. He left."), []),  # counts differ: the paragraph stays whole only
    (("Eine Zeile.", "One line only."), []),
])
def test_multi_sentence_pairs_give_their_sentences_paired_in_order(pair, expected):
    assert sentence_pairs(pair) == expected


def test_only_training_pairs_are_split_and_no_sentence_is_added_twice(tmp_path):
    paragraph = "Öffne die Datei. Speichere sie dann.\tOpen the file. Then save it."
    held = next(f"Absatz {i}. Noch ein Satz.\tParagraph {i}. One more sentence." for i in range(10_000)
                if heldout_half(f"Paragraph {i}. One more sentence."))
    write(tmp_path / "help" / "deu_Latn-eng_Latn.tsv.gz",
          good_pairs(MIN_PAIRS) + [paragraph, paragraph.replace("Öffne", "Oeffne"), held])
    write(tmp_path / "ui" / "deu_Latn-eng_Latn.tsv.gz", ["Öffne die Datei.\tOpen the file."])  # a pair already
    result = read_en_pairs(tmp_path)
    assert result.split["deu_Latn"] == [("Speichere sie dann.", "Then save it."),
                                        ("Oeffne die Datei.", "Open the file.")]
    assert ("Öffne die Datei. Speichere sie dann.", "Open the file. Then save it.") in result.train["deu_Latn"]
