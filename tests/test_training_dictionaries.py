"""The word dictionaries (training/dictionaries.py): every bad line counted by reason and logged with file:line,
held-out sentences kept out in any case, files without English or with an unknown language skipped by reason."""

import gzip
import logging

from training.dictionaries import read_dictionaries


def write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


def test_word_pairs_are_checked_line_by_line(tmp_path, caplog):
    finnish = tmp_path / "en-fi.dic.gz"
    write(finnish, ["en\tfi", "quality\tlaatu", "no tab", "tai\ttai", "quality\tlaatu", "cancel\tperuuta",
                    "irrigation\tkastelu", "\t-", "a\tpitkä pitkä pitkä pitkä pitkä sana", "0\t٠",
                    "ස\tsana"])
    write(tmp_path / "kk-ru.dic.gz", ["kk\tru", "алма\tяблоко"])     # no English side
    write(tmp_path / "en-qq.dic.gz", ["en\tqq", "word\t!!!"])        # a code whose script cannot be told
    write(tmp_path / "en-qqq.dic.gz", ["en\tqqq", "word\twort"])      # a code ISO 639-3 does not register
    with caplog.at_level(logging.WARNING, logger="training.dictionaries"):
        result = read_dictionaries(tmp_path, heldout={"Cancel"})
    assert result.pairs == {"fin_Latn": [("laatu", "quality"), ("kastelu", "irrigation")]}
    assert result.skips == {"no-tab": 1, "same-as-english": 1, "duplicate": 1, "held-out": 1, "empty-side": 1,
                            "length-ratio": 1, "no-letter": 1, "english-script": 1, "no-english": 1,
                            "unknown-language": 2}
    assert f"{finnish}:3: no-tab" in caplog.text and f"{finnish}:6: held-out" in caplog.text
    assert "kk-ru.dic.gz: no-english" in caplog.text and "en-qq.dic.gz: unknown-language" in caplog.text
    assert "en-qqq.dic.gz: unknown-language" in caplog.text


def test_the_script_comes_from_the_words(tmp_path):
    write(tmp_path / "en-ar.dic.gz", ["en\tar", "creation\tالخلق", "raw\tالخام"])
    assert list(read_dictionaries(tmp_path, heldout=set()).pairs) == ["arb_Arab"]
