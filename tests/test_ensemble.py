"""The ensemble encoder (encoders.ensemble) and how its shares are chosen (training.ensemble), on real encoders that
need no model: hashed character n-grams of two sizes."""

import gzip
import json
import re

import numpy as np
import pytest

from encoders import BadSentenceError, CheckpointError, check_spec, load_encoder
from encoders.ensemble import EnsembleError
from training.ensemble import blend, choose_shares, fit, mining_f1, never_below_a_member, sign_test_p

SENTENCES = ["Guten Morgen, wie geht es dir?", "Das Haus ist alt.", "Zwei Katzen schlafen."]


def write_ensemble(folder, **fields):
    spec = {"format": "cmlm-ensemble/1", "members": ["char-ngram:64", "char-ngram:32"], "dims": [64, 32],
            "default": [0.25, 0.75], "languages": {"deu_Latn": [1.0, 0.0], "hin_Deva": [0.0, 1.0]}, **fields}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ensemble.json").write_text(json.dumps(spec))
    return folder


def test_vectors_are_the_members_scaled_by_the_square_roots_of_their_shares(tmp_path):
    encoder = load_encoder(str(write_ensemble(tmp_path / "e")))
    first, second = load_encoder("char-ngram:64").encode(SENTENCES), load_encoder("char-ngram:32").encode(SENTENCES)
    mixed = encoder.encode(SENTENCES)  # no language: the default shares
    assert mixed.shape == (3, 96) and encoder.dim == 96 and mixed.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(mixed, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(mixed, np.hstack([0.5 * first, np.sqrt(0.75) * second]), rtol=1e-6)
    german = encoder.encode(SENTENCES, language="deu_Latn")
    np.testing.assert_array_equal(german[:, :64], first)
    assert not german[:, 64:].any()
    # the dot product is the shares-weighted sum of the members' cosines
    np.testing.assert_allclose(mixed @ german.T, 0.5 * first @ first.T, rtol=1e-6)


@pytest.mark.parametrize("language, expected", [
    ("de", [1.0, 0.0]), ("deu", [1.0, 0.0]), ("ger", [1.0, 0.0]), ("de-AT", [1.0, 0.0]), ("deu_Latn", [1.0, 0.0]),
    ("hi", [0.0, 1.0]), ("fra_Latn", [0.25, 0.75]), (None, [0.25, 0.75]), ("xyz", [0.25, 0.75]),
])
def test_languages_are_read_in_any_of_the_projects_names(tmp_path, language, expected):
    encoder = load_encoder(str(write_ensemble(tmp_path / "e")))
    texts = ["नमस्ते दुनिया"] if language == "hi" else SENTENCES
    assert encoder.shares(language, texts).tolist() == expected


def test_a_name_of_no_registered_language_is_warned_of_once(tmp_path, caplog):
    encoder = load_encoder(str(write_ensemble(tmp_path / "e")))
    with caplog.at_level("INFO", logger="encoders.ensemble"):
        for language in ("xyz", "xyz", "fra_Latn"):
            encoder.shares(language, SENTENCES)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and "'xyz' names no registered language" in warned[0]
    assert any("no shares for language 'fra_Latn'" in r.getMessage() for r in caplog.records
               if r.levelname == "INFO")  # a real language the shares were not fitted for is routine


def test_a_member_without_a_share_is_never_loaded(tmp_path):
    folder = write_ensemble(tmp_path / "e", members=["char-ngram:64", "no-such-folder"])
    encoder = load_encoder(str(folder))
    assert encoder.encode(SENTENCES, language="deu_Latn").shape == (3, 96)
    # the error names the file the member is written in, not only the member
    where = f"{folder / 'ensemble.json'}: member 'no-such-folder'"
    with pytest.raises(CheckpointError, match=re.escape(where)):
        encoder.encode(SENTENCES, language="hin_Deva")
    with pytest.raises(CheckpointError, match=re.escape(where)):
        check_spec(str(folder))  # checked up front by the commands, before any work


def test_bad_sentences_are_named_as_by_any_encoder(tmp_path):
    encoder = load_encoder(str(write_ensemble(tmp_path / "e")))
    with pytest.raises(BadSentenceError, match="sentence 1") as caught:
        encoder.encode(["fine", 3, ""], language="hin_Deva")
    assert set(caught.value.problems) == {1, 2}


@pytest.mark.parametrize("fields, message", [
    ({"format": "other"}, "format"),
    ({"members": ["char-ngram:64"]}, "two or more"),
    ({"dims": [64]}, "dims"),
    ({"default": [0.5, 0.6]}, "default must be 2 shares"),
    ({"languages": {"deu_Latn": [1.5, -0.5]}}, "languages.deu_Latn"),
    ({"languages": {"deu_Latn": [float("nan"), 1.0]}}, "languages.deu_Latn"),
    ({"languages": {"Deutsch": [1.0, 0.0]}}, "keys must be codes such as deu_Latn.*'Deutsch'"),
    ({"languages": {"de": [1.0, 0.0]}}, "keys must be codes"),
    ({"languages": {"qqq_Latn": [1.0, 0.0]}}, "keys must be codes.*'qqq_Latn'"),  # well formed, not registered
    # registered, but sentences' languages are looked up by FLORES-200's names: these shares were never used
    ({"languages": {"cmn_Hans": [1.0, 0.0]}}, "keys must be FLORES-200's names.*'cmn_Hans' is zho_Hans"),
    ({"languages": {"nor_Latn": [1.0, 0.0]}}, "'nor_Latn' is nob_Latn"),
    ({"languages": {"ara_Arab": [1.0, 0.0]}}, "'ara_Arab' is arb_Arab"),
])
def test_a_bad_ensemble_file_is_an_error_naming_it(tmp_path, fields, message):
    folder = write_ensemble(tmp_path / "e", **fields)
    with pytest.raises(EnsembleError, match=message) as caught:
        load_encoder(str(folder))
    assert str(folder / "ensemble.json") in str(caught.value)


def test_sentences_may_come_as_a_generator_as_every_member_takes_them(tmp_path):
    encoder = load_encoder(str(write_ensemble(tmp_path / "e")))
    np.testing.assert_array_equal(encoder.encode(s for s in SENTENCES), encoder.encode(SENTENCES))


def test_an_ensemble_as_a_member_is_refused(tmp_path):
    """A member encodes without the call's language: an inner ensemble would take its default shares always."""
    inner = write_ensemble(tmp_path / "inner")
    outer = write_ensemble(tmp_path / "outer", members=["../inner", "char-ngram:32"], dims=[96, 32])
    assert inner.exists()
    with pytest.raises(EnsembleError, match="member '../inner' is an ensemble itself"):
        load_encoder(str(outer))


def test_a_member_of_another_size_than_the_file_says_is_an_error(tmp_path):
    encoder = load_encoder(str(write_ensemble(tmp_path / "e", dims=[64, 48])))
    with pytest.raises(EnsembleError, match="32-d vectors, the file says 48"):
        encoder.encode(SENTENCES)


def test_transformer_only_options_are_refused(tmp_path):
    with pytest.raises(ValueError, match="pooling"):
        load_encoder(str(write_ensemble(tmp_path / "e")), pooling="cls")


def unit(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("criterion", ["mining", "xsim"])
def test_each_language_gets_the_member_that_finds_its_translations(criterion):
    """Member A sees language 'aaa' clearly and 'bbb' not at all; member B the other way round. The first 100
    rows of each side are translations, the last 40 distractors."""
    rng = np.random.default_rng(0)
    n, gold = 140, 100
    texts = {lang: [f"{lang}{i}" for i in range(n)] for lang in ("eng_Latn", "aaa", "bbb")}

    def member(clear: str) -> dict:
        english = unit(rng.normal(size=(n, 16)))
        seen = english.copy()
        seen[:gold] += 0.1 * rng.normal(size=(gold, 16))
        seen[gold:] = rng.normal(size=(n - gold, 16))  # distractors
        blind = rng.normal(size=(n, 16))  # unrelated to English
        return {"eng_Latn": english, clear: unit(seen), ({"aaa", "bbb"} - {clear}).pop(): unit(blind)}

    chosen = choose_shares([member("aaa"), member("bbb")], texts, gold, [0.0, 0.25, 0.5, 0.75, 1.0], 1.0, criterion)
    shares = chosen["languages"]
    assert shares["aaa"] >= 0.75 and shares["bbb"] <= 0.25  # equal scores go to the share nearer the default
    assert chosen["scores"]["aaa"][shares["aaa"]] > 95 and chosen["scores"]["bbb"][shares["bbb"]] > 95
    assert chosen["scores"]["aaa"][0.0] < 20  # the other member alone is lost


GRID = [0.0, 0.25, 0.5, 0.75, 1.0]


def test_a_share_that_retrieves_the_long_set_clearly_worse_is_ruled_out():
    """Mining F1 among distractors was flat from 0.25 to 0.75 in languages the teacher does not know and chose
    the teacher-heavy share by a point or two of noise, where retrieving the same sentences fell 10 points (Somali
    at 0.9: 58 against the student's 68). The veto rules out shares clearly below the better member alone in
    retrieval; a loss of two queries is noise and rules out nothing."""
    mining = dict(zip(GRID, (47.8, 50.4, 51.1, 52.7, 37.9)))
    rows = {a: np.ones(200, dtype=bool) for a in GRID}
    rows[0.25][:2] = False
    rows[0.75][:30] = False
    rows[1.0][:80] = False
    assert never_below_a_member([mining], GRID, 0.5, 1.0) == (0.75, "its own share")
    share, reason = never_below_a_member([mining], GRID, 0.5, 1.0, veto_rows=rows, veto_alpha=0.05)
    assert share == 0.5 and reason == "the default; long-set retrieval ruled out 0.75, 1.0"


def scores(*values):
    return dict(zip(GRID, values))


@pytest.mark.parametrize("sets, default, expected", [
    # a blend better than both members on both sets
    ([scores(50, 60, 70, 60, 55), scores(80, 82, 85, 83, 81)], 0.5, (0.5, "the default")),
    # the default loses to the first member on short sentences, by less than min_gain: it may not be kept
    ([scores(40, 50, 60, 62, 60.5), scores(30, 50, 60, 65, 60.2)], 0.5, (0.75, "its own share")),
    ([scores(40, 50, 60, 60, 60.5), scores(30, 50, 60, 60, 60.2)], 0.5, (1.0, "its own share")),
    # one member better on long sentences, the other on short, no blend reaches both: the smaller worst loss
    ([scores(90, 80, 70, 60, 50), scores(40, 60, 70, 80, 95)], 0.5, (1.0, "a member alone (no share matches both "
                                                                       "members)")),
])
def test_a_share_never_scores_below_the_better_member_on_any_set(sets, default, expected):
    assert never_below_a_member(sets, GRID, default, min_gain=1.0) == expected


@pytest.mark.parametrize("sets, expected", [
    # a blend that gains less than min_gain over the better member does not replace it, even as the default
    ([scores(80, 80.5, 80.8, 60, 50), scores(85, 85.5, 85.6, 70, 60)], (0.0, "the better member alone")),
    ([scores(80, 82, 81.8, 60, 50), scores(85, 86, 86.6, 70, 60)], (0.5, "the default")),
])
def test_preferring_members_keeps_a_member_a_blend_only_ties(sets, expected):
    assert never_below_a_member(sets, GRID, 0.5, min_gain=1.0, prefer_members=True) == expected
    if expected[1] == "the better member alone":  # without the preference a blend takes it
        assert never_below_a_member(sets, GRID, 0.5, min_gain=1.0)[0] not in (0.0, 1.0)


def test_mining_f1_counts_only_gold_pairs_found():
    rng = np.random.default_rng(1)
    src = unit(rng.normal(size=(30, 8)))
    assert mining_f1(src, src.copy(), 30) == 100.0
    tgt = src.copy()
    tgt[10:] = unit(rng.normal(size=(20, 8)))  # 20 rows whose translation is missing: a threshold cuts them off
    assert mining_f1(src, tgt, 10) == 100.0
    swapped = tgt.copy()
    swapped[[0, 1]] = swapped[[1, 0]]  # two gold pairs mined crossed, as confidently as the right ones
    assert mining_f1(src, swapped, 10) == pytest.approx(100 * 2 * 8 / (10 + 10))
    np.testing.assert_allclose(np.linalg.norm(blend([src, src], 0.3), axis=1), 1.0, rtol=1e-6)


def write_ntrex(root, languages: dict[str, list[str]], english: list[str], documents: list[str]):
    folder = root / "ntrex-128" / "NTREX-128"
    folder.mkdir(parents=True)
    (root / "ntrex-128" / "DOCUMENT_IDS.tsv").write_text("\n".join(documents) + "\n")
    for name, lines in {"src.eng": english, **{f"ref.{k}": v for k, v in languages.items()}}.items():
        with gzip.open(folder / f"newstest2019-{name}.txt.gz", "wt", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


def test_fit_writes_an_ensemble_that_loads(tmp_path):
    """End to end on an NTREX-shaped pool: German is a copy of English here (a lexical member retrieves it), and
    only the held-out documents (the last 12) are read."""
    english = [f"Sentence number {i} talks about {w}." for i, w in enumerate(["cats", "dogs", "rain"] * 20)]
    documents = [f"doc{i // 3}" for i in range(len(english))]
    write_ntrex(tmp_path / "pool", {"deu": english, "fra": [f"Phrase {i} ici." for i in range(len(english))]},
                english, documents)
    settings = {"step": 0.25, "min_gain": 1.0, "source_distractors": 6, "target_distractors": 12}
    summary = fit(["char-ngram:64", "char-ngram:32"], tmp_path / "ens", tmp_path / "cache", tmp_path / "pool",
                  **settings)
    spec = json.loads((tmp_path / "ens" / "ensemble.json").read_text())
    heldout = json.loads((tmp_path / "ens" / "heldout.json").read_text())
    assert spec["members"] == ["char-ngram:64", "char-ngram:32"] and spec["dims"] == [64, 32]
    assert set(spec["languages"]) == {"eng_Latn", "deu_Latn", "fra_Latn"} and summary["languages"] == 2
    assert len(heldout["scores"]["deu_Latn"]) == 5 and heldout["scores"]["deu_Latn"]["1.0"] == 100.0
    vectors = load_encoder(str(tmp_path / "ens")).encode(english[:4], language="deu_Latn")
    assert vectors.shape == (4, 96)
    cached = sorted(p.name for p in (tmp_path / "cache").rglob("*.npy"))
    assert cached == sorted(["deu_Latn.npy", "eng_Latn.npy", "fra_Latn.npy"] * 2)
    again = fit(["char-ngram:64", "char-ngram:32"], tmp_path / "ens2", tmp_path / "cache", tmp_path / "pool",
                **settings)
    assert again == summary
    assert (tmp_path / "ens2" / "ensemble.json").read_text() == (tmp_path / "ens" / "ensemble.json").read_text()
    fit(["char-ngram:64", "char-ngram:32"], tmp_path / "ens3", tmp_path / "cache", tmp_path / "pool",
        **settings, retrieval_veto=0.05)
    vetoed = json.loads((tmp_path / "ens3" / "heldout.json").read_text())
    assert vetoed["retrieval_veto"] == 0.05 and vetoed["long_retrieval_scores"]["deu_Latn"]["1.0"] == 100.0
    assert "retrieves the long set" in json.loads((tmp_path / "ens3" / "ensemble.json").read_text())["chosen_on"]


def write_short(folder, pairs):
    folder.mkdir(parents=True)
    with gzip.open(folder / "deu_Latn-eng_Latn.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.write("".join(f"{a}\t{b}\n" for a, b in pairs))


def test_fit_with_short_sentences_chooses_on_tune_and_reports_test(tmp_path, capsys):
    english = [f"Sentence number {i} talks about {w}." for i, w in enumerate(["cats", "dogs", "rain"] * 20)]
    write_ntrex(tmp_path / "pool", {"deu": english}, english, [f"doc{i // 3}" for i in range(len(english))])
    short = [(f"Datei {i} öffnen", f"Open file {i}") for i in range(40)]  # no n-gram member sees these
    write_short(tmp_path / "short" / "tune", short[:20])
    write_short(tmp_path / "short" / "test", short[20:])
    summary = fit(["char-ngram:64", "char-ngram:32"], tmp_path / "ens", tmp_path / "cache", tmp_path / "pool",
                  step=0.25, min_gain=1.0, source_distractors=6, target_distractors=12,
                  short_root=tmp_path / "short", short_min=10)
    heldout = json.loads((tmp_path / "ens" / "heldout.json").read_text())
    share = heldout["languages"]["deu_Latn"]
    tune = heldout["short_scores"]["deu_Latn"]
    assert set(tune) == {"0.0", "0.25", "0.5", "0.75", "1.0"} and len(heldout["scores"]["deu_Latn"]) == 5
    assert tune[str(share)] >= max(tune["0.0"], tune["1.0"])  # never below a member on the tune half
    assert heldout["short_test"]["deu_Latn"]["pairs"] == 20 and heldout["reasons"]["deu_Latn"]
    assert summary["short test"]["languages"] == 1
    assert 0.0 < heldout["short_test"]["deu_Latn"]["p_below"] <= 1.0  # the ensemble against the better member
    assert summary["short test"]["significantly below (sign test, p < 0.05)"] in (0, 1)
    assert "short held-out sentences" in json.loads((tmp_path / "ens" / "ensemble.json").read_text())["chosen_on"]
    from training.ensemble import main

    assert main(["--members", "char-ngram:64", "no-such-member", "--output", str(tmp_path / "other"),
                 "--train-pool", str(tmp_path / "pool"), "--short", "none"]) == 2  # before any embedding
    assert "unknown encoder 'no-such-member'" in capsys.readouterr().err
    assert main(["--table", str(tmp_path / "ens")]) == 0
    printed = capsys.readouterr().out
    result = heldout["short_test"]["deu_Latn"]
    assert "| deu_Latn | 20 | " in printed
    assert f"Mean of 1 language: char-ngram:64 {result['first member']:.1f}, char-ngram:32 " \
           f"{result['second member']:.1f}, ensemble {result['ensemble']:.1f}; the ensemble below" in printed
    assert "below the better member by a sign test (p < 0.05) in" in printed
    cached = sorted(p.name for p in (tmp_path / "cache").rglob("short-*.npy"))
    assert cached == sorted(["short-tune.deu_Latn.npy", "short-tune.deu_Latn.eng_Latn.npy",
                             "short-test.deu_Latn.npy", "short-test.deu_Latn.eng_Latn.npy"] * 2)


def test_the_pipelines_embed_stage_gives_each_chunk_its_language(tmp_path):
    from pipelines.embed import EncoderModelHandler

    handler = EncoderModelHandler(str(write_ensemble(tmp_path / "e")))
    model = handler.load_model()
    german, hindi = (r.inference for r in handler.run_inference([("deu_Latn", SENTENCES), ("hin_Deva", SENTENCES)],
                                                                 model))
    assert german[:, :64].any() and not german[:, 64:].any()
    assert hindi[:, 64:].any() and not hindi[:, :64].any()


def test_sentences_of_several_languages_in_one_call_each_take_their_own_shares(tmp_path):
    """A list of languages, one a sentence (the embed stage's packs of small chunks): each row as its language's
    call gives it (char-ngram members: a vector does not depend on its batch), a member running only over the rows
    it has weight for; one language for all is the call with its name."""
    encoder = load_encoder(str(write_ensemble(tmp_path / "e")))
    languages = ["deu_Latn", "hin_Deva", "fra_Latn"]
    mixed = encoder.encode(SENTENCES, language=languages)
    for row, language in enumerate(languages):
        np.testing.assert_array_equal(mixed[row], encoder.encode([SENTENCES[row]], language=language)[0])
    assert not mixed[0, 64:].any() and not mixed[1, :64].any() and mixed[2, :64].any() and mixed[2, 64:].any()
    np.testing.assert_array_equal(encoder.encode(SENTENCES, language=["hin_Deva"] * 3),
                                  encoder.encode(SENTENCES, language="hin_Deva"))
    with pytest.raises(ValueError, match=r"one name per sentence \(3\), got 2"):
        encoder.encode(SENTENCES, language=languages[:2])


def test_a_retrained_member_makes_the_pipelines_vectors_stale(tmp_path):
    """The embed stage's dependency record names each member, so a member folder rewritten is noticed even though
    the ensemble's own files did not change."""
    import os

    from pipelines.dependencies import encoder_identity

    member = tmp_path / "student"
    member.mkdir()
    (member / "weights.bin").write_bytes(b"one")
    folder = write_ensemble(tmp_path / "e", members=["char-ngram:64", "../student"])
    before = encoder_identity(str(folder))
    assert before["members"][0] == "char-ngram:64" and before["members"][1][0][:2] == ["weights.bin", 3]
    (member / "weights.bin").write_bytes(b"two!")
    os.utime(member / "weights.bin", (1, 1))
    assert encoder_identity(str(folder)) != before


def test_a_damaged_or_stale_cache_is_embedded_again(tmp_path):
    from training.ensemble import member_vectors

    texts = {"eng_Latn": ["one sentence", "another one"]}
    first = member_vectors("char-ngram:16", texts, tmp_path)
    (cached,) = tmp_path.rglob("eng_Latn.npy")
    cached.write_bytes(cached.read_bytes()[:40])  # truncated
    np.testing.assert_array_equal(member_vectors("char-ngram:16", texts, tmp_path)["eng_Latn"], first["eng_Latn"])
    changed = member_vectors("char-ngram:16", {"eng_Latn": ["other text", "and more"]}, tmp_path)
    assert not np.array_equal(changed["eng_Latn"], first["eng_Latn"])


def test_the_sign_test_counts_the_queries_where_two_shares_differ():
    assert sign_test_p(5, 0) == pytest.approx(1 / 32)
    assert sign_test_p(3, 3) == pytest.approx(42 / 64)  # P(X >= 3), X ~ Bin(6, 1/2)
    assert sign_test_p(0, 0) == 1.0


def rows(right: int, n: int = 200) -> np.ndarray:
    return np.arange(n) < right  # the first `right` queries retrieved; shares differ only on the last ones


@pytest.mark.parametrize("blend_right, expected", [
    (152, (0.0, "a member alone (no blend beats it significantly on short sentences or by min_gain on long)")),
    (170, (0.5, "the default")),  # 20 wins, no loss: p ~ 1e-6
])
def test_a_blend_must_beat_the_better_member_significantly(blend_right, expected):
    short_rows = {0.0: rows(150), 0.25: rows(140), 0.5: rows(blend_right), 0.75: rows(100), 1.0: rows(60)}
    short_scores = {a: 100.0 * r.mean() for a, r in short_rows.items()}
    assert never_below_a_member([short_scores], GRID, 0.5, min_gain=1.0)[0] == 0.5  # any gain, without the test
    assert never_below_a_member([short_scores], GRID, 0.5, 1.0, short_rows=short_rows, blend_alpha=0.05) == expected


def test_a_blend_that_gains_on_long_sentences_needs_no_test_on_short_ones():
    short_rows = {0.0: rows(150), 0.25: rows(140), 0.5: rows(151), 0.75: rows(100), 1.0: rows(60)}
    short_scores = {a: 100.0 * r.mean() for a, r in short_rows.items()}
    long_scores = scores(50, 52, 55, 40, 30)  # +5 points of mining F1 over the better member
    assert never_below_a_member([long_scores, short_scores], GRID, 0.5, 1.0, short_rows=short_rows, blend_alpha=0.05,
                                long_scores=long_scores) == (0.5, "the default")
    assert never_below_a_member([long_scores, short_scores], GRID, 0.5, 1.0, short_rows=short_rows,
                                blend_alpha=0.05)[0] == 0.0  # the long gain unknown: the short test decides


def test_the_members_cuts_are_counted_by_member_for_the_embed_stage(tmp_path, tiny_encoder_dir):
    from pipelines.embed import EncoderModelHandler, truncated_counts

    folder = write_ensemble(tmp_path / "e", members=[str(tiny_encoder_dir), "char-ngram:32"],
                            dims=[load_encoder(str(tiny_encoder_dir)).dim, 32])
    handler = EncoderModelHandler(str(folder))
    model = handler.load_model()
    long_sentence = " ".join(["Marktplatz"] * 200)  # far past the tiny model's 32 tokens
    handler.run_inference([("fra_Latn", [long_sentence, "Bonjour."])], model)
    assert truncated_counts(model) == {f"truncated:{tiny_encoder_dir.name}": 1}
    assert model.stats[f"sentences:{tiny_encoder_dir.name}"] == 2
    handler.run_inference([("hin_Deva", [long_sentence])], model)  # no share for the transformer: it never sees it
    assert truncated_counts(model) == {f"truncated:{tiny_encoder_dir.name}": 1}


def test_the_table_of_a_folder_without_its_figures_is_a_one_line_error(tmp_path, capsys):
    from training.ensemble import main

    assert main(["--table", str(tmp_path)]) == 2
    assert f"{tmp_path / 'heldout.json'}: not found" in capsys.readouterr().err
    (tmp_path / "heldout.json").write_text('{"members": []}')
    assert main(["--table", str(tmp_path)]) == 2
    assert "missing short_test" in capsys.readouterr().err
