"""Training sets from the train pool: held-out and loop-pool text never leaks into the training files."""

import gzip
import json

import pytest

from miner.io import InputFormatError
from miner.languages import dominant_script, language_code
from training.prepare import ntrex_language, ntrex_references, prepare


@pytest.mark.parametrize("name, texts, code", [
    ("deu", ["Haus"], "deu_Latn"), ("de", ["Haus"], "deu_Latn"), ("fra-CA", ["maison"], "fra_Latn"),
    ("srp-Cyrl", None, "srp_Cyrl"), ("zho-TW", None, "zho_Hant"), ("msa", ["rumah"], "zsm_Latn"),
    ("rus", ["дом"], "rus_Cyrl"), ("jpn", None, "jpn_Jpan"), ("ar", ["بيت"], "arb_Arab"),
])
def test_language_codes(name, texts, code):
    assert language_code(name, texts) == code


def test_dominant_script_ignores_digits_and_punctuation():
    assert dominant_script(["123, «Дом» 2020!"]) == "Cyrl"
    with pytest.raises(ValueError, match="script"):
        language_code("xyz", ["123 ..."])


def sotho_spelling(lines):
    """Per 1,000 words, Southern Sotho's "ho" + "hore" and Northern Sotho's "go" + "gore"; "š" per 1,000 letters
    (Northern Sotho's, which Southern Sotho does not write)."""
    import re

    words = re.findall(r"\w+", " ".join(lines).lower())
    letters = sum(char.isalpha() for line in lines for char in line)

    def per_thousand_words(*forms):
        return 1000 * sum(word in forms for word in words) / max(1, len(words))

    return (per_thousand_words("ho", "hore"), per_thousand_words("go", "gore"),
            1000 * sum(line.count("š") for line in lines) / letters)


def test_ntrex_northern_sotho_file_is_southern_sotho(shared_data):
    """NTREX-128's "nso" reference spells as the train pool's Southern Sotho texts do, not its Northern Sotho ones
    (UDHR and software strings), so it is read as sot_Latn by the encoders' data and the language identifier."""
    train = shared_data / "train"
    ntrex = read(train / "ntrex-128" / "NTREX-128" / "newstest2019-ref.nso.txt.gz")
    southern = sotho_spelling((train / "nltk" / "udhr2" / "sot.txt").read_text(encoding="utf-8").splitlines())
    northern = sotho_spelling((train / "nltk" / "udhr2" / "nso.txt").read_text(encoding="utf-8").splitlines())
    in_ntrex = sotho_spelling(ntrex)
    assert southern[0] > 20 and southern[1] < 1 and southern[2] < 0.1   # the markers tell the two apart ...
    assert northern[0] < 1 and northern[1] > 20 and northern[2] > 5
    assert in_ntrex[0] > 20 and in_ntrex[1] < 1 and in_ntrex[2] < 0.1   # ... and NTREX's "nso" is Southern
    assert ntrex_language("nso", ntrex) == "sot_Latn" and ntrex_language("tsn", ["Go na le"]) == "tsn_Latn"
    references = dict(ntrex_references(train)[4])
    assert references["sot_Latn"] == ntrex and "nso_Latn" not in references


def read(path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return handle.read().splitlines()


def test_prepare_from_the_train_pool(shared_data, tmp_path):
    manifest = prepare(shared_data / "train", tmp_path, vocab_size=3000, sample_lines=20000, seed=0)
    assert len(manifest["documents"]) > 100 and manifest["bitext"]["deu_Latn"] > 50000
    bitext_english = {line.split("\t")[1] for path in (tmp_path / "bitext").glob("*.tsv.gz") for line in read(path)}
    held = {line.split("\t")[1] for path in (tmp_path / "heldout").glob("*.tsv.gz") for line in read(path)}
    pool = {line for path in (tmp_path / "loop").glob("eng_Latn.*.txt.gz") for line in read(path)}
    assert held and pool and not held & bitext_english and not pool & bitext_english
    # every NTREX language's held-out documents (what ensemble shares are chosen on) are absent from training too
    _, english, held_rows, _, references = ntrex_references(shared_data / "train")
    assert len(references) > 100 and {" ".join(english[i].split()) for i in held_rows} == held
    news = sorted((tmp_path / "heldout-news").glob("*.tsv.gz"))  # the same documents in every NTREX language
    assert len(news) == len(references) and len(manifest["heldout_news"]) == len(references)
    assert {line.split("\t")[1] for line in read(news[0])} == held
    czech = dict(references)["ces_Latn"]
    czech_trained = {line.split("\t")[0] for line in read(tmp_path / "bitext" / "ces_Latn-eng_Latn.tsv.gz")}
    assert not {" ".join(czech[i].split()) for i in held_rows} & czech_trained
    documents = read(tmp_path / "documents" / "deu_Latn.txt.gz")
    assert "" in documents  # blank lines separate documents
    held_german = [line.split("\t")[0] for line in read(tmp_path / "heldout" / "deu_Latn-eng_Latn.tsv.gz")]
    assert sum(line in set(documents) for line in held_german) <= 2  # at most a repeated byline
    gold = read(tmp_path / "loop" / "deu_Latn.gold.tsv.gz")
    sources = set(read(tmp_path / "loop" / "deu_Latn.txt.gz"))
    assert gold and all(line.split("\t")[0] in sources for line in gold)
    assert (tmp_path / "tokenizer" / "tokenizer.json").exists()
    # en-pairs' held-out English (both halves) is in no training file, short or news
    short_english = {line.split("\t")[1] for path in (tmp_path / "bitext-short").glob("*.tsv.gz")
                     for line in read(path)}
    held_short = {line.split("\t")[1] for path in (tmp_path / "heldout-short").glob("*/*.tsv.gz") for line in read(path)}
    assert len(short_english) > 50000 and len(held_short) > 5000
    assert not held_short & short_english and not held_short & bitext_english
    assert manifest["en_pairs"]["heldout_short"]["test"]["ell_Grek"] > 1000
    # the word dictionaries: 14 languages with English, none of their words a held-out sentence in any case
    words = {path.name.split("-")[0]: read(path) for path in (tmp_path / "bitext-words").glob("*.tsv.gz")}
    assert len(words) == 14 and len(words["fin_Latn"]) > 30000
    assert manifest["dictionaries"]["skipped"]["no-english"] == 1  # kk-ru
    folded_held = {text.casefold() for text in held | held_short}
    assert not {line.split("\t")[1].casefold() for lines in words.values() for line in lines} & folded_held
    assert json.loads((tmp_path / "manifest.json").read_text())["loop"]["deu_Latn"]["gold_pairs"] == len(gold)


def test_prepare_refuses_the_dev_pool(shared_data, tmp_path):
    with pytest.raises(ValueError, match="never dev"):
        prepare(shared_data / "dev", tmp_path, vocab_size=3000, sample_lines=1000, seed=0)


def test_a_rerun_swaps_each_folder_in_whole_and_leaves_other_files(tmp_path):
    from training.prepare import swap_in

    output, staging = tmp_path / "train", tmp_path / "train" / ".prepare-staging"
    for path, text in ((output / "heldout-short" / "tune" / "old.tsv", "old"), (output / "bitext" / "x.tsv", "x"),
                       (output / "README.md", "notes"), (output / "manifest.json", "{}"),
                       (staging / "heldout-short" / "tune" / "new.tsv", "new"), (staging / "manifest.json", '{"n": 1}')):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    swap_in(staging, output)
    assert [p.name for p in (output / "heldout-short" / "tune").iterdir()] == ["new.tsv"]
    assert not (output / "bitext").exists()  # the rerun wrote no bitext: never a union with the old set
    assert (output / "README.md").read_text() == "notes" and json.loads((output / "manifest.json").read_text()) == {"n": 1}
    assert not staging.exists()


def test_an_interrupted_prepare_leaves_the_previous_set_whole(tmp_path):
    held = tmp_path / "train" / "heldout-short" / "test" / "ell_Grek-eng_Latn.tsv.gz"
    held.parent.mkdir(parents=True)
    held.write_bytes(b"previous")
    (tmp_path / "pool").mkdir()
    with pytest.raises(InputFormatError, match="DOCUMENT_IDS.tsv: file not found"):  # a pool without NTREX
        prepare(tmp_path / "pool", tmp_path / "train", vocab_size=3000, sample_lines=1000, seed=0)
    assert held.read_bytes() == b"previous"
