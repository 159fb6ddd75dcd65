"""Recipes and training inputs are checked before the first step; bad lines are counted skips, not crashes."""

import gzip
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from miner.config import ConfigError
from miner.io import InputFormatError
from training.config import load_recipe
from training.data import Skips, Tokenize, load_bitext, load_documents, read_tsv_bitext

REPO = Path(__file__).resolve().parent.parent


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_recipe_resolves_paths_against_its_folder(training_inputs):
    config = load_recipe(training_inputs / "recipe.yaml")
    assert config.model.tokenizer == str(training_inputs / "tokenizer")
    assert config.data.documents == [str(training_inputs / "de.txt"), str(training_inputs / "en.txt")]
    assert config.output == "run"  # relative to where you run, like miner.mine's output
    assert [s.objectives for s in config.stages] == [["cmlm"], ["cmlm", "br"]]


@pytest.mark.parametrize("recipe", sorted(p.name for p in (REPO / "configs").glob("train_*.yaml")))
def test_every_shipped_recipe_loads_and_passes_its_checks(recipe):
    """A recipe in configs/ that no longer loads (a renamed key, a broken base) fails here, not on a lent GPU."""
    # training.loop's recipes read only the pairs it mines and adds to data.bitext
    overrides = ['data.bitext=["mined.tsv"]'] if recipe.startswith("train_loop") else []
    config = load_recipe(REPO / "configs" / recipe, overrides)
    assert config.stages and all(stage.steps > 0 for stage in config.stages)


def test_recipe_overrides_base_and_stage_index(training_inputs):
    write(training_inputs / "br_only.yaml", "base: recipe.yaml\nstages:\n  - {name: br, objectives: [br], steps: 9}\n"
          "optimizer: {lr: 5e-4}\n")
    config = load_recipe(training_inputs / "br_only.yaml", ["stages.0.steps=4", "br.margin=0.2"])
    assert [(s.name, s.steps) for s in config.stages] == [("br", 4)]
    assert config.optimizer.lr == 5e-4 and config.optimizer.warmup_steps == 5  # merged with the base's section
    assert config.br.margin == 0.2
    assert config.model.tokenizer == str(training_inputs / "tokenizer")  # base paths relative to the base


@pytest.mark.parametrize("override, message", [
    ("optimizer.learning_rate=1e-3", "unknown key(s) learning_rate"),
    ("cmlm.mask_rate=1.5", "mask_rate"),
    ("model.hidden=65", "multiple of heads"),
    ("stages.0.objectives=[mlm]", "objectives must be"),
    ("optimizer.name=sgd", "adamw or lamb"),
    ("br.batch_size=big", "expected int"),
    ("stages.5.steps=3", "has 2 stage"),
    ("data.bitext=[]", "data.bitext is empty"),
    ("data.bitext_weights=[2,1]", "one positive weight per data.bitext entry (1)"),
    ("data.bitext_weights=[0]", "one positive weight per data.bitext entry"),
    ("data.join={shares: [0.1, 0.2]}", "data.join.shares: one share >= 0 per data.bitext entry (1)"),
    ("data.join={shares: [0.1], parts: [1, 3]}", "data.join.parts"),
    ("data.join={share: [0.1]}", "unknown key(s) share"),
    # numbers out of range: a ZeroDivisionError, a run that trained nothing, or one that diverged
    ("model.hidden=0", "model.hidden must be 1 or more, got 0"),
    ("br.batch_size=1", "br.batch_size must be 2 or more, got 1"),
    ("optimizer.lr=-1e-3", "optimizer.lr must be above 0, got -0.001"),
    ("run.log_every=0", "run.log_every must be 1 or more, got 0"),
    ("model.dropout=1.0", "model.dropout must be from 0 to 0.99, got 1.0"),
    ("stages.0.lr=0.0", "stages[0] (cmlm): lr must be above 0"),
    # passed the checks, then a traceback at step 2, after every file was read, or a CPU run where a GPU was meant
    ("optimizer.lr=.inf", "optimizer.lr must be a finite number, got inf"),
    ("seed=-1", "seed must be a whole number from 0 to 4,294,967,295"),
    ("seed=99999999999999999999", "seed must be a whole number from 0 to 4,294,967,295"),  # an overflow, unnamed
    ("run.device=gpu", "run.device must be auto, cpu, cuda or cuda:N, got 'gpu'"),
    ("output=' '", "output: a folder to write the run into, not an empty path"),
])
def test_bad_recipes_are_refused_naming_the_key(training_inputs, override, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        load_recipe(training_inputs / "recipe.yaml", [override])


def test_a_language_yaml_read_as_false_is_named_so_in_a_recipe(training_inputs):
    # distill.monolingual: [no] said "False is not a language code (letters and digits ...)"
    with pytest.raises(ConfigError, match=r"monolingual\[0\]: expected str, got False: YAML read a bare no or off "
                                          r"as false; quote it \('no'\)"):
        load_recipe(training_inputs / "recipe.yaml", ["stages=[{name: d, objectives: [distill], steps: 3}]",
                                                      "distill.teacher=char-ngram:64", "distill.monolingual=[no]"])


def test_a_recipe_that_is_a_folder_or_not_text_is_named(tmp_path):
    with pytest.raises(ConfigError, match="a folder, not a recipe"):
        load_recipe(tmp_path)
    (tmp_path / "latin1.yaml").write_bytes("output: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="latin1.yaml: not a YAML text file"):
        load_recipe(tmp_path / "latin1.yaml")


def test_documents_keep_order_and_skip_one_sentence_documents(tmp_path, tiny_tokenizer):
    write(tmp_path / "de.txt", "a eins\na zwei\na drei\n\nallein\n\n\nb eins\nb zwei\n")
    skips = Skips()
    [documents] = load_documents([str(tmp_path / "de.txt")], Tokenize(tiny_tokenizer, 16), skips)
    assert documents.language == "de"
    assert len(documents.sentences) == 5 and documents.pair_starts.tolist() == [0, 1, 3]
    assert skips.report() == {"document with one sentence (CMLM needs two in a row)": 1}


def test_parquet_sentences_are_ordered_by_paragraph_and_sentence_index(tmp_path, tiny_tokenizer):
    table = pa.table({"text": ["zwei", "eins", "drei", "solo"], "language": ["deu_Latn"] * 4,
                      "document_id": ["d1", "d1", "d1", "d2"], "paragraph_index": [0, 0, 1, 0],
                      "sentence_index": [1, 0, 0, 0]})
    pq.write_table(table, tmp_path / "sentences.parquet")
    tokenize, skips = Tokenize(tiny_tokenizer, 16), Skips()
    [documents] = load_documents([str(tmp_path / "*.parquet")], tokenize, skips)
    decoded = [tiny_tokenizer.decode(documents.sentences[i], skip_special_tokens=True) for i in range(3)]
    assert decoded == ["eins", "zwei", "drei"] and documents.language == "deu_Latn"
    assert sum(skips.report().values()) == 1  # d2 has one sentence


def test_bitext_bad_lines_are_counted_and_good_ones_kept(tmp_path, caplog):
    path = write(tmp_path / "de-en.tsv", "Haus\thouse\nnur eine Spalte\n\tempty source\nBaum\ttree\n"
                                         "a\tb\tc\tzu viele\nKatze\tcat\n")
    skips = Skips()
    pairs = read_tsv_bitext(path, skips, None, ("de", "en"))
    assert pairs == [("Haus", "house"), ("Baum", "tree"), ("Katze", "cat")]
    assert skips.report() == {"bitext line with 1 columns (expected 2)": 1,
                              "bitext line with 4 columns (expected 2)": 1, "bitext pair with an empty side": 1}
    assert f"{path}:2" in caplog.text  # the place of a skip is logged


def test_a_bad_first_line_costs_itself_not_the_file(tmp_path):
    """The layout came from the first line: one without a tab made every good line after it a skip."""
    path = write(tmp_path / "fr-en.tsv", "un titre sans tabulation\nMaison\thouse\nArbre\ttree\n")
    skips = Skips()
    assert read_tsv_bitext(path, skips, None, ("fr", "en")) == [("Maison", "house"), ("Arbre", "tree")]
    assert skips.report() == {"bitext line with 1 columns (expected 2 or 3)": 1}


def test_untranslated_and_repeated_pairs_are_counted_skips_across_files(tmp_path, tiny_tokenizer, caplog):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    write(tmp_path / "a" / "de-en.tsv", "Haus\thouse\nOK\tOK\nBaum\ttree\nHaus\thouse\n")
    write(tmp_path / "b" / "de-en.tsv", "Baum\ttree\nKatze\tcat\n")
    pq.write_table(pa.table({"score": [1.3, 1.3, 1.3], "src_text": ["Katze", "Hund", " "],
                             "tgt_text": ["cat", "dog", "x"], "src_lang": ["de"] * 3, "tgt_lang": ["en"] * 3}),
                   tmp_path / "mined.parquet")
    skips = Skips()
    [bitext] = load_bitext([str(tmp_path / "a" / "de-en.tsv"), str(tmp_path / "b" / "de-en.tsv"),
                            str(tmp_path / "mined.parquet")], Tokenize(tiny_tokenizer, 16), skips, None,
                           keep_texts=True)
    assert bitext.texts == (["Haus", "Baum", "Katze", "Hund"], ["house", "tree", "cat", "dog"])
    assert skips.report() == {"bitext pair whose two sides are the same text": 1,
                              "bitext pair read before for its language pair": 3, "bitext pair with an empty side": 1}
    for place in ("a/de-en.tsv:2", "a/de-en.tsv:4", "b/de-en.tsv:1", "mined.parquet: row 1", "mined.parquet: row 3"):
        assert place in caplog.text


def test_pairs_and_documents_in_a_language_the_project_cannot_name_are_counted_skips(tmp_path, tiny_tokenizer,
                                                                                      caplog):
    # a typo in the script, a bibliographic code and an unregistered one: each would train as a language of its own
    write(tmp_path / "deu_Latm-eng_Latn.tsv", "Haus\thouse\nBaum\ttree\n")
    write(tmp_path / "ger-eng.tsv", "Katze\tcat\n")
    write(tmp_path / "de-en.tsv", "Hund\tdog\n")
    pq.write_table(pa.table({"src_text": ["Maus", "Vogel"], "tgt_text": ["mouse", "bird"],
                             "src_lang": ["qqq_Latn", "deu_Latn"], "tgt_lang": ["eng_Latn"] * 2}),
                   tmp_path / "mined.parquet")
    skips = Skips()
    bitext = load_bitext([str(tmp_path / "*.tsv"), str(tmp_path / "mined.parquet")], Tokenize(tiny_tokenizer, 16),
                         skips, None, keep_texts=True)
    assert {(b.src_lang, b.tgt_lang): b.texts for b in bitext} == {("deu_Latn", "eng_Latn"): (["Hund", "Vogel"],
                                                                                            ["dog", "bird"])}
    reason = "bitext pair in a language the project cannot name (ISO 639-3 or 639-1, and an ISO 15924 script)"
    assert skips.report() == {reason: 4}
    for place in ("deu_Latm-eng_Latn.tsv:1 (deu_Latm-eng_Latn)", "ger-eng.tsv:1 (ger-eng)",
                  "mined.parquet: row 1 (qqq_Latn-eng_Latn)"):
        assert place in caplog.text
    write(tmp_path / "deu_Latm.txt", "eins\nzwei\n\ndrei\nvier\n")
    write(tmp_path / "deu_Latn.txt", "eins\nzwei\n")
    skips = Skips()
    [documents] = load_documents([str(tmp_path / "*.txt")], Tokenize(tiny_tokenizer, 16), skips)
    assert documents.language == "deu_Latn"
    assert skips.report() == {"document in a language the project cannot name (ISO 639-3 or 639-1, and an ISO 15924 "
                              "script)": 2}
    assert "deu_Latm.txt ('deu_Latm')" in caplog.text


def test_a_language_pair_with_few_pairs_is_trained_on_counted_and_named_with_its_files(tmp_path, tiny_tokenizer,
                                                                                       caplog):
    from training.data import warn_few_pairs

    write(tmp_path / "de-en.tsv", "Haus\thouse\nBaum\ttree\n")
    write(tmp_path / "fr-en.tsv", "".join(f"maison {i}\thouse {i}\n" for i in range(100)))
    bitext = load_bitext([str(tmp_path / "*.tsv")], Tokenize(tiny_tokenizer, 16), Skips(), None)
    assert warn_few_pairs(bitext) == {"deu_Latn-eng_Latn": 2}
    assert len(bitext[0].src) == 2 and "1 language pair has fewer than 100 translation pairs" in caplog.text
    assert f"deu_Latn-eng_Latn 2 ({tmp_path / 'de-en.tsv'})" in caplog.text and "fra_Latn" not in caplog.text


def test_scored_bitext_keeps_pairs_at_or_above_min_score(tmp_path):
    with gzip.open(tmp_path / "deu_Latn-eng_Latn.tsv.gz", "wt", encoding="utf-8") as f:
        f.write("1.20\tHaus\thouse\n1.01\tBaum\ttree\nhigh\tKatze\tcat\n1.05\tHund\tdog\n")
    skips = Skips()
    langs = ("deu_Latn", "eng_Latn")
    assert read_tsv_bitext(tmp_path / "deu_Latn-eng_Latn.tsv.gz", skips, 1.05, langs) == [("Haus", "house"),
                                                                                         ("Hund", "dog")]
    assert skips.report()["bitext score is not a number"] == 1


def test_mined_parquet_bitext_with_threshold(tmp_path, tiny_tokenizer):
    pq.write_table(pa.table({"score": [1.3, 1.0], "src_text": ["Haus", "Baum"], "tgt_text": ["house", "tree"],
                             "src_lang": ["de", "de"], "tgt_lang": ["en", "en"]}), tmp_path / "mined.parquet")
    skips = Skips()
    [bitext] = load_bitext([str(tmp_path / "mined.parquet")], Tokenize(tiny_tokenizer, 16), skips, 1.1)
    assert bitext.name == "deu_Latn-eng_Latn" and len(bitext.src) == 1
    assert skips.report() == {"bitext pair below data.min_score (by design, not logged)": 1}  # as TSV's are


def test_bitext_languages_come_from_the_name_or_a_label(tmp_path, tiny_tokenizer):
    write(tmp_path / "pairs.tsv", "Haus\thouse\n")
    with pytest.raises(InputFormatError, match="cannot tell the languages"):
        load_bitext([str(tmp_path / "pairs.tsv")], Tokenize(tiny_tokenizer, 16), Skips(), None)
    [bitext] = load_bitext([f"deu_Latn-eng_Latn={tmp_path / 'pairs.tsv'}"], Tokenize(tiny_tokenizer, 16), Skips(),
                           None)
    assert (bitext.src_lang, bitext.tgt_lang) == ("deu_Latn", "eng_Latn")


def test_iso_639_1_file_names_are_the_language_pair_flores_names_give(tmp_path, tiny_tokenizer, caplog):
    # de-en.tsv and deu_Latn-eng_Latn.tsv.gz were two language pairs, and a pair in both was drawn twice
    write(tmp_path / "de-en.tsv", "Haus\thouse\nBaum\ttree\n")
    with gzip.open(tmp_path / "deu_Latn-eng_Latn.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.write("1.3\tBaum\ttree\n1.3\tKatze\tcat\n")
    write(tmp_path / "zh-en.tsv", "我们的学校\tour school\n")
    write(tmp_path / "zh_Hant-en.tsv", "這個國家\tthis country\n")
    skips = Skips()
    bitext = load_bitext([str(tmp_path / "*.tsv*")], Tokenize(tiny_tokenizer, 16), skips, None, keep_texts=True)
    assert {b.name: b.texts[0] for b in bitext} == {"deu_Latn-eng_Latn": ["Haus", "Baum", "Katze"],
                                                    "zho_Hans-eng_Latn": ["我们的学校"],
                                                    "zho_Hant-eng_Latn": ["這個國家"]}
    assert skips.report() == {"bitext pair read before for its language pair": 1}
    assert "deu_Latn-eng_Latn.tsv.gz:1" in caplog.text
    # the script comes from the texts: traditional characters make zh-en.tsv zho_Hant
    write(tmp_path / "zh-en.tsv", "這個國家的學生\tthe students of this country\n")
    [chinese] = load_bitext([str(tmp_path / "zh-en.tsv")], Tokenize(tiny_tokenizer, 16), Skips(), None)
    assert chinese.name == "zho_Hant-eng_Latn"


def test_chinese_from_an_iso_639_1_file_name_is_joined_without_spaces(tmp_path, tiny_tokenizer):
    from training.config import JoinConfig

    write(tmp_path / "zh-en.tsv", "".join(f"我们的学校{i}\tour school {i} is here\n" for i in range(6)))
    [zh] = load_bitext([str(tmp_path / "zh-en.tsv")], Tokenize(tiny_tokenizer, 64), Skips(), None, keep_texts=True,
                       join=JoinConfig([0.5], [2, 2]))
    joined = zh.texts[0][6:]
    assert joined and all(" " not in text and text.count("我们") == 2 for text in joined)  # ("zh", "en"): a space


def test_monolingual_distillation_finds_a_language_in_any_form_in_pairs_of_any_file_name(tmp_path, tiny_tokenizer,
                                                                                         monkeypatch):
    from types import SimpleNamespace

    import numpy as np

    import training.teacher
    from training.data import attach_teacher

    monkeypatch.setattr(training.teacher, "teacher_vectors", lambda teacher, texts, cache, **_: np.zeros((len(texts), 4)))
    write(tmp_path / "de-en.tsv", "Haus\thouse\nBaum\ttree\n")
    write(tmp_path / "fr-en.tsv", "maison\thouse\n")
    for listed in (["deu_Latn"], ["de"], ["deu"]):
        de, fr = load_bitext([str(tmp_path / "*.tsv")], Tokenize(tiny_tokenizer, 16), Skips(), None, keep_texts=True)
        attach_teacher([de, fr], SimpleNamespace(teacher_side="target", monolingual=listed, teacher="t", cache=None))
        assert de.source_rows is not None and fr.source_rows is None, listed


def test_missing_inputs_are_errors(tmp_path, tiny_tokenizer):
    with pytest.raises(InputFormatError, match="no file matches"):
        load_documents([str(tmp_path / "nothing*.txt")], Tokenize(tiny_tokenizer, 16), Skips())


def test_long_sentences_are_cut_and_counted(tiny_tokenizer):
    tokenize = Tokenize(tiny_tokenizer, 8)
    ragged = tokenize(["kurz", " ".join(["Wochenende"] * 30)])
    assert ragged.lengths().max() == 8 and tokenize.truncated == 1


def test_identical_texts_share_keys_across_files(tmp_path, tiny_tokenizer):
    write(tmp_path / "de-en.tsv", "Haus\thouse\nBaum\ttree\n")
    write(tmp_path / "fr-en.tsv", "maison\thouse\n")
    de, fr = load_bitext([str(tmp_path / "*.tsv")], Tokenize(tiny_tokenizer, 16), Skips(), None)
    assert de.tgt_keys[0] == fr.tgt_keys[0] != de.tgt_keys[1]


def test_bitext_weights_draw_a_source_as_often_as_if_it_were_repeated(tmp_path, tiny_tokenizer):
    import numpy as np

    from training.batches import BitextSampler, SpecialTokens

    for folder in ("news", "short"):
        (tmp_path / folder).mkdir()
    write(tmp_path / "news" / "de-en.tsv", "Haus\thouse\n")
    write(tmp_path / "short" / "de-en.tsv", "Baum\ttree\nKatze\tcat\n")
    write(tmp_path / "short" / "fr-en.tsv", "maison\thouse\n")
    specs = [str(tmp_path / "news" / "*.tsv"), str(tmp_path / "short" / "*.tsv")]
    de, fr = load_bitext(specs, Tokenize(tiny_tokenizer, 16), Skips(), None, weights=[4.0, 1.0])
    assert de.weights.tolist() == [4.0, 1.0, 1.0] and de.mass == 6.0 and fr.mass == 1.0
    sampler = BitextSampler([de, fr], 1.0, SpecialTokens(pad=0, cls=1, sep=2, mask=3, vocab_size=10, first_regular=4))
    np.testing.assert_allclose(sampler.probabilities, [6 / 7, 1 / 7])
    picks = sampler.draw(np.random.default_rng(0), 20000)
    rows = np.bincount([row for group, row in picks if group == 0], minlength=3) / sum(g == 0 for g, _ in picks)
    np.testing.assert_allclose(rows, [4 / 6, 1 / 6, 1 / 6], atol=0.015)
    # equal weights draw as no weights do: the same batches as a recipe without them
    same = load_bitext(specs, Tokenize(tiny_tokenizer, 16), Skips(), None, weights=[2.0, 2.0])
    assert all(b.weights is None for b in same)


def test_joined_pairs_put_short_pairs_side_by_side_reproducibly(tmp_path, tiny_tokenizer):
    from training.config import JoinConfig
    from training.data import joined_pairs

    pairs = [(f"satz {i} hier", f"sentence number {i} is here") for i in range(40)] + [("Datei", "File")]
    rule = JoinConfig([0.5], [2, 3], min_words=4, max_chars=300)
    joined = joined_pairs(("deu_Latn", "eng_Latn"), pairs, 0.5, rule, seed=0)
    assert len(joined) == round(0.5 * len(pairs))
    assert joined == joined_pairs(("deu_Latn", "eng_Latn"), pairs, 0.5, rule, seed=0)  # a rerun draws the same
    assert joined != joined_pairs(("deu_Latn", "eng_Latn"), pairs, 0.5, rule, seed=1)
    by_target = dict((t, s) for s, t in pairs)
    for source, target in joined:
        parts = [f"sentence number {p}" for p in target.split("sentence number ")[1:]]
        assert 2 <= len(parts) <= 3 and "File" not in target  # a UI label is never a part
        # the source side holds the same pairs' sources in the same order
        assert source == " ".join(by_target[p.strip()] for p in parts)
    # Chinese sentences follow one another without a space; a side over max_chars loses parts from the end
    chinese = [("这是一句话。", "This is one sentence here.")] * 3
    [(zh, en)] = joined_pairs(("zho_Hans", "eng_Latn"), chinese, 0.34, JoinConfig([0.34], [3, 3], max_chars=60),
                              seed=0)
    assert zh == "这是一句话。这是一句话。" and en == "This is one sentence here. This is one sentence here."


def test_a_recipe_joins_the_entries_it_names_at_their_weight(tmp_path, tiny_tokenizer):
    for folder in ("news", "short"):
        (tmp_path / folder).mkdir()
    write(tmp_path / "news" / "de-en.tsv", "".join(f"Nachricht {i} heute\tnews story {i} today\n" for i in range(4)))
    write(tmp_path / "short" / "de-en.tsv", "".join(f"kurz {i} ja\tshort line {i} right here\n" for i in range(10)))
    specs = [str(tmp_path / "news" / "*.tsv"), str(tmp_path / "short" / "*.tsv")]
    from training.config import JoinConfig

    [de] = load_bitext(specs, Tokenize(tiny_tokenizer, 64), Skips(), None, keep_texts=True,
                       join=JoinConfig([0, 0.5], weight=3.0))
    sources = de.texts[0]
    assert len(sources) == 4 + 10 + 5 and all(s.startswith("kurz") for s in sources[14:])
    assert de.weights.tolist() == [1.0] * 14 + [3.0] * 5


def test_a_setting_added_since_a_checkpoint_and_left_empty_lets_its_run_resume():
    from training.checkpoints import recipe_differences

    saved = {"data": {"bitext": ["news"], "language_alpha": 0.7}, "run": {"threads": 1}}
    assert recipe_differences(saved, {"data": {"bitext": ["news"], "language_alpha": 0.7, "bitext_weights": []},
                                      "run": {"threads": 2}}) == []
    assert recipe_differences(saved, {"data": {"bitext": ["news"], "language_alpha": 0.7,
                                               "bitext_weights": [2.0]}}) == ["data"]
    assert recipe_differences(saved, {"data": {"bitext": ["news"], "language_alpha": 0.5}}) == ["data"]


@pytest.mark.parametrize("content, message", [
    ('{"stage": 0, "global_step": 3, "recipe": {}}', "step must be a whole number >= 0, got None"),
    ('{"stage": 0, "step": "3", "global_step": 3, "recipe": {}}', "step must be a whole number >= 0, got '3'"),
    ('{"stage": 0, "step": 3, "global_step": 3}', "no recipe"),
    ("[1, 2]", "expected a JSON object, got list"),
    ("{cut", "not valid JSON"),
])
def test_a_checkpoint_state_that_is_not_what_save_writes_is_a_one_line_error_naming_it(tmp_path, capsys, content,
                                                                                        message):
    """A state.json without "step" raised KeyError: 'step', a traceback that named neither the file nor the key's
    meaning."""
    from miner.console import exit_status
    from training.checkpoints import CheckpointFileError, read_state

    (tmp_path / "state.json").write_text(content)
    with pytest.raises(CheckpointFileError, match=f"state.json: {message}"):
        read_state(tmp_path)
    assert exit_status(lambda: read_state(tmp_path)) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'state.json'}: ")


@pytest.mark.parametrize("content, message", [
    (Path("a pickle of more than tensors"), "not a plain tensor file \\(UnpicklingError\\)"),
    ({"optimizer": {}}, "not an optimiser and schedule state"),
    ([1, 2], "not an optimiser and schedule state"),
    ("another optimiser", "does not fit this run's optimiser"),
])
def test_an_optimizer_file_that_is_not_what_save_writes_is_an_error_naming_it(tmp_path, capsys, content, message):
    """A pickle weights_only refuses raised UnpicklingError, uncaught: a traceback, not `error: <file>: ...`."""
    import torch

    from miner.console import exit_status
    from training.checkpoints import CheckpointFileError, load_optimizer

    def optimizer_and_schedule(*shapes):
        optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(shape)) for shape in shapes])
        return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)

    if content == "another optimiser":
        other, schedule = optimizer_and_schedule(2, 3)
        content = {"optimizer": other.state_dict(), "schedule": schedule.state_dict()}
    torch.save(content, tmp_path / "optimizer.pt")
    optimizer, schedule = optimizer_and_schedule(2)
    with pytest.raises(CheckpointFileError, match=f"optimizer.pt: {message}"):
        load_optimizer(tmp_path, optimizer, schedule)
    assert exit_status(lambda: load_optimizer(tmp_path, optimizer, schedule)) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'optimizer.pt'}: ")
