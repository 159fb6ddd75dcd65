"""Tatoeba in LASER's layout (miner.tatoeba) and `miner.evaluate suite --tatoeba`: files written here, never the
real sets."""

import gzip
import json

import pytest

from miner.evaluate import main
from miner.io import InputFormatError
from miner.tatoeba import XTREME_36, tatoeba_sets

ENGLISH = ["Open the door.", "I like green tea very much.", "Where is the station?", "She reads a book every night.",
           "We will travel to the mountains tomorrow."]


def write(folder, code, lines, english=ENGLISH, gz=False):
    folder.mkdir(exist_ok=True)
    suffix = ".gz" if gz else ""
    for name, texts in ((f"tatoeba.{code}-eng.{code}{suffix}", lines), (f"tatoeba.{code}-eng.eng{suffix}", english)):
        data = "".join(f"{t}\n" for t in texts)
        if gz:
            with gzip.open(folder / name, "wt", encoding="utf-8") as handle:
                handle.write(data)
        else:
            (folder / name).write_text(data, encoding="utf-8")


@pytest.fixture
def tatoeba(tmp_path):
    """German that copies its English but for one sentence (a lexical encoder finds the copies), Mandarin in
    simplified characters, and a language XTREME does not report (Breton), gzipped."""
    folder = tmp_path / "tatoeba"
    write(folder, "deu", ENGLISH[:4] + ["Morgen fahren wir in die Berge."])
    write(folder, "cmn", ["开门。", "我很喜欢绿茶。", "车站在哪里？", "她每天晚上看书。", "明天我们去山里旅行。"])
    write(folder, "bre", ENGLISH, gz=True)
    return folder


def test_sets_are_named_as_everywhere_else(tatoeba):
    sets = tatoeba_sets(tatoeba)
    assert [(s.code, s.language, s.in_xtreme) for s in sets] == [
        ("bre", "bre_Latn", False), ("deu", "deu_Latn", True), ("cmn", "zho_Hans", True)]
    assert [s.language for s in tatoeba_sets(tatoeba, ["zho_Hans", "bre"])] == ["bre_Latn", "zho_Hans"]
    assert len(XTREME_36) == 36


def test_suite_reports_each_language_and_both_means(tatoeba, tmp_path, capsys):
    assert main(["suite", "--encoder", "char-ngram", "--tatoeba", str(tatoeba),
                 "--report", str(tmp_path / "suite.json")]) == 0
    out = capsys.readouterr().out
    assert "| deu_Latn | deu (XTREME) | 5 |" in out and "| bre_Latn | bre | 5 |" in out
    report = json.loads((tmp_path / "suite.json").read_text())["tatoeba"]
    german, breton = report["languages"]["deu_Latn"], report["languages"]["bre_Latn"]
    assert breton["accuracy"] == 1.0  # copies of the English
    assert german["xx->eng"] == pytest.approx(0.8, abs=0.2) and german["accuracy"] < 1.0  # one real translation
    assert report["means"]["all"]["languages"] == 3 and report["means"]["xtreme"]["languages"] == 2
    assert report["means"]["xtreme"]["accuracy"] == pytest.approx(
        (german["accuracy"] + report["languages"]["zho_Hans"]["accuracy"]) / 2)
    assert "mean, XTREME's 36 (2 found)" in out and "mean, all 3" in out


def test_side_by_side_has_tatoeba_rows(tatoeba, capsys):
    assert main(["suite", "--encoder", "char-ngram", "--compare", "char-ngram:64", "--tatoeba", str(tatoeba),
                 "--tatoeba-languages", "deu"]) == 0
    out = capsys.readouterr().out
    assert "| Tatoeba accuracy deu_Latn (%) |" in out and "zho_Hans" not in out
    assert "| **Tatoeba accuracy, mean, XTREME's 36 (1 found) (%)** |" in out


def test_bad_folders_name_the_file(tmp_path, capsys):
    folder = tmp_path / "tatoeba"
    write(folder, "deu", ENGLISH)
    (folder / "tatoeba.fra-eng.fra").write_text("Ouvre la porte.\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"tatoeba\.fra-eng\.fra: its English side tatoeba\.fra-eng\.eng"):
        tatoeba_sets(folder)
    (folder / "tatoeba.fra-eng.eng").write_text("Open the door.\nOne line too many.\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"tatoeba\.fra-eng\.fra has 1 lines and .*tatoeba\.fra-eng\.eng 2"):
        tatoeba_sets(folder)
    (folder / "tatoeba.fra-eng.eng").write_text("Open the door.\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="no Tatoeba files for ita"):
        tatoeba_sets(folder, ["deu", "ita"])
    with pytest.raises(InputFormatError, match="no tatoeba.<xxx>-eng.<xxx> files"):
        tatoeba_sets(tmp_path)
    assert main(["suite", "--encoder", "char-ngram", "--tatoeba", str(tmp_path / "missing")]) == 2
    assert "not a folder of Tatoeba files" in capsys.readouterr().err


def test_strict_counts_only_the_aligned_row(tmp_path):
    """Tatoeba repeats short sentences: a retrieved copy of the reference's text counts as correct unless --strict
    (LASER's and XTREME's protocol)."""
    folder = tmp_path / "tatoeba"
    english = ["Open the door.", "Where is the station?", "I like green tea very much.", "Open the door."]
    write(folder, "deu", english, english=english)
    reports = {}
    for flag in ([], ["--strict"]):
        assert main(["suite", "--encoder", "char-ngram", "--tatoeba", str(folder), *flag,
                     "--report", str(tmp_path / "r.json")]) == 0
        reports[bool(flag)] = json.loads((tmp_path / "r.json").read_text())["tatoeba"]
    assert reports[False]["languages"]["deu_Latn"]["accuracy"] == 1.0
    assert reports[True]["languages"]["deu_Latn"]["accuracy"] == 0.75   # one of the two copies finds the other
    assert "only the aligned row" in reports[True]["scoring"]
