"""Close-language experts (pipelines/text/langid_experts.py): the mass they share out, when they are asked, how
their weights are chosen on held-out text, and the checks on an expert set read from disk."""

import json
from pathlib import Path

import pytest

from miner.io import InputFormatError
from pipelines.text.identifier import Identifier
from pipelines.text.langid import OURS, LanguageIdentifier, lid_parts, load_identifier
from pipelines.text.langid_data import Pool
from pipelines.text.langid_experts import ExpertGroup, ExpertIdentifier, redistribute
from pipelines.text.langid_experts import load_experts as load_with
from pipelines.text.langid_experts_train import ExpertSettings, HeldOut, read_config, train_experts
from tests.test_langid import GERMAN, SERBIAN

# Croatian for these tests, written here: the Serbian sentences of tests/test_langid.py as a Croatian speaker
# writes them (ijekavian, Croatian words), the pair the expert must tell apart.
CROATIAN = ["vrijeme je danas vrlo lijepo", "idemo jutros na tržnicu", "ona uvijek uvečer čita knjigu",
            "djeca igraju nogomet u parku", "moj brat je liječnik u bolnici", "ova kuća ima tri sobe i vrt",
            "putovat će u planine sljedeći tjedan", "molim te zatvori prozor kada budeš odlazio"]
GROUP = ("hrv_Latn", "srp_Latn")
SETTINGS = ExpertSettings(dim=8, epoch=40, bucket=20_000, cutoff=5_000, balance_to=200)


def load_experts(path, main):
    return load_with(path, main, LanguageIdentifier.load)


class FixedMain(Identifier):
    """A main identifier whose answers are given per text (others: German), counting the texts it is asked."""

    path = "fixed"

    def __init__(self, answers: dict[str, list[tuple[str, float]]]):
        self.answers, self.asked = answers, 0

    @property
    def languages(self):
        return ["deu_Latn", "hrv_Latn", "srp_Latn"]

    def covers(self, code):
        return code in self.languages

    def predict(self, texts, k=1, document=None):
        self.asked += len(texts)
        return [list(self.answers.get(text, [("deu_Latn", 0.9), ("hrv_Latn", 0.1)]))[:k] for text in texts]


def croatian_for_everything() -> FixedMain:
    """Every Serbian and Croatian text read as Croatian, Serbian second: the confusion experts are for."""
    return FixedMain({text: [("hrv_Latn", 0.6), ("srp_Latn", 0.3), ("deu_Latn", 0.1)]
                      for text in SERBIAN + CROATIAN})


def test_redistribute_shares_out_the_groups_mass_and_leaves_the_rest():
    answer = [("hrv_Latn", 0.5), ("deu_Latn", 0.3), ("srp_Latn", 0.2)]
    opinion = [("srp_Latn", 0.9), ("hrv_Latn", 0.1)]
    fully = dict(redistribute(answer, opinion, GROUP, 1.0))
    assert fully["srp_Latn"] == pytest.approx(0.63) and fully["hrv_Latn"] == pytest.approx(0.07)
    assert fully["deu_Latn"] == 0.3 and sum(fully.values()) == pytest.approx(1.0)
    half = redistribute(answer, opinion, GROUP, 0.5)
    assert [code for code, _ in half] == ["srp_Latn", "deu_Latn", "hrv_Latn"]
    assert dict(half)["srp_Latn"] == pytest.approx(0.5 * 0.2 + 0.5 * 0.63)
    assert redistribute(answer, [], GROUP, 1.0) == answer            # no opinion: the answer stands


def test_an_expert_is_asked_only_for_texts_answered_in_its_group():
    main = croatian_for_everything()
    expert = FixedMain({SERBIAN[0]: [("srp_Latn", 0.95), ("hrv_Latn", 0.05)]})
    identifier = ExpertIdentifier(main, [ExpertGroup(GROUP, expert, 1.0)])
    answers = identifier.predict([GERMAN[0], SERBIAN[0], GERMAN[1]], k=2)
    assert expert.asked == 1                                          # the two German texts never reach it
    assert [a[0][0] for a in answers] == ["deu_Latn", "srp_Latn", "deu_Latn"] and all(len(a) == 2 for a in answers)
    sure = ExpertIdentifier(main, [ExpertGroup(GROUP, expert, 1.0)], ask_below=0.6)   # the main answer is 0.6
    assert sure.predict([SERBIAN[0]])[0][0][0] == "hrv_Latn" and expert.asked == 1    # not asked again
    with pytest.raises(ValueError, match="does not name bos_Latn"):
        ExpertIdentifier(main, [ExpertGroup(("bos_Latn", "hrv_Latn"), expert, 1.0)])
    with pytest.raises(ValueError, match="hrv_Latn is in two expert groups"):
        ExpertIdentifier(main, [ExpertGroup(GROUP, expert, 1.0), ExpertGroup(("hrv_Latn", "deu_Latn"), expert, 1.0)])


def write_set(folder: Path, main: Identifier, held_out: dict, min_gain: float = 2.0) -> dict:
    pool = Pool()
    pool.add("hrv_Latn", CROATIAN, "test")
    pool.add("srp_Latn", SERBIAN, "test")
    return train_experts(pool, [GROUP], main, HeldOut.of(main, held_out), folder, SETTINGS, [0.5, 1.0], min_gain,
                         OURS, thresholds=[0.5, 0.9])


def test_an_expert_set_is_trained_weighed_on_held_out_text_and_loaded(tmp_path):
    main = croatian_for_everything()
    index = write_set(tmp_path / "experts", main, {"short": {"hrv_Latn": CROATIAN[:4], "srp_Latn": SERBIAN[:4]}})
    (entry,) = index["groups"]
    assert entry["used"] and entry["weight"] == 0.5                   # both weights fix Serbian: the smaller kept
    assert entry["gains"]["1.0"]["short"] == pytest.approx(100.0)    # Serbian 0 -> 100%, Croatian stays 100%
    assert entry["examples"] == {"hrv_Latn": 32, "srp_Latn": 32}       # 8 lines, repeated 4 times at most
    assert index["chosen_on"].endswith("short") and (tmp_path / "experts" / entry["model"]).is_file()
    # main answers at 0.6: below 0.5 nothing is asked (no gain), below 0.9 all are (the whole gain, fewest asked)
    sweep = index["ask_below_sweep"]
    assert index["ask_below"] == 0.9 and sweep["0.5"]["asked"] == 0 and sweep["0.5"]["mean"] == 0
    assert sweep["0.9"]["asked"] == sweep["1.0"]["asked"] == 8 and sweep["0.9"]["mean"] == sweep["1.0"]["mean"] > 0
    identifier = load_experts(tmp_path / "experts" / "experts.json", main)
    assert [a[0][0] for a in identifier.predict(SERBIAN[4:] + CROATIAN[4:])] == ["srp_Latn"] * 4 + ["hrv_Latn"] * 4


def test_a_rerun_keeps_the_groups_it_already_holds_and_trains_what_changed(tmp_path, caplog):
    import logging

    main, folder = croatian_for_everything(), tmp_path / "experts"
    held_out = {"short": {"hrv_Latn": CROATIAN[:4], "srp_Latn": SERBIAN[:4]}}
    first = write_set(folder, main, held_out)
    model = folder / first["groups"][0]["model"]
    model.touch()
    stamp = model.stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger="pipelines.text.langid_experts_train"):
        again = write_set(folder, main, held_out)
    assert "kept from the earlier index" in caplog.text and model.stat().st_mtime_ns == stamp   # not trained
    assert again["groups"] == first["groups"] and again["ask_below"] == first["ask_below"]
    assert load_experts(folder / "experts.json", main).predict([SERBIAN[5]])[0][0][0] == "srp_Latn"
    pool = Pool()                     # other examples (one Croatian line fewer): trained again
    pool.add("hrv_Latn", CROATIAN[:-1], "test")
    pool.add("srp_Latn", SERBIAN, "test")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pipelines.text.langid_experts_train"):
        changed = train_experts(pool, [GROUP], main, HeldOut.of(main, held_out), folder, SETTINGS, [0.5, 1.0], 2.0,
                                OURS, thresholds=[0.5, 0.9])
    assert "kept" not in caplog.text and changed["groups"][0]["examples"]["hrv_Latn"] == 28
    model.write_bytes(b"not the model the index names")   # a model that does not match its record: trained again
    train_experts(pool, [GROUP], main, HeldOut.of(main, held_out), folder, SETTINGS, [0.5, 1.0], 2.0, OURS,
                  thresholds=[0.5, 0.9])
    assert load_experts(folder / "experts.json", main).groups[0].languages == GROUP
    stamp = model.stat().st_mtime_ns
    train_experts(pool, [GROUP], main, HeldOut.of(main, held_out), folder, SETTINGS, [0.5, 1.0], 2.0, OURS,
                  thresholds=[0.5, 0.9], retrain=True)
    assert model.stat().st_mtime_ns != stamp


def test_a_rerun_with_another_rule_decides_the_groups_it_holds_again(tmp_path, caplog):
    """A higher min_gain leaves out a group it kept, on the gains it recorded (no training; its model removed); a
    lower one that keeps it again must train it (its model is gone)."""
    import logging

    main, folder = croatian_for_everything(), tmp_path / "experts"
    held_out = {"short": {"hrv_Latn": CROATIAN[:4], "srp_Latn": SERBIAN[:4]}}
    first = write_set(folder, main, held_out)
    gain = first["groups"][0]["gains"]["0.5"]["mean"]
    with caplog.at_level(logging.INFO, logger="pipelines.text.langid_experts_train"):
        stricter = write_set(folder, main, held_out, min_gain=gain + 1)
    (entry,) = stricter["groups"]
    assert "kept from the earlier index" in caplog.text and not entry["used"] and entry["model"] is None
    assert entry["gains"] == first["groups"][0]["gains"] and sorted(p.name for p in folder.iterdir()) == [
        "experts.json"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="pipelines.text.langid_experts_train"):
        again = write_set(folder, main, held_out)
    assert "kept" not in caplog.text and again["groups"][0]["used"] and (folder / again["groups"][0]["model"]).is_file()


def test_the_byte_budget_keeps_the_groups_that_gain_most():
    from pipelines.text.langid_experts_train import over_budget

    def entry(gain, size, used=True):
        return {"used": used, "weight": 0.5 if used else 0.0, "model_bytes": size if used else 0,
                "gains": {"0.5": {"mean": gain}}}

    entries = [entry(4.0, 600), entry(9.0, 500), entry(1.0, 0, used=False), entry(6.0, 300), entry(3.0, 200)]
    assert over_budget(entries, None) == set()
    assert over_budget(entries, 1_000) == {0}          # 9 and 6 fit (800), 4 does not (1,400), 3 still does (1,000)
    assert over_budget(entries, 1_600) == set() and over_budget(entries, 100) == {0, 1, 3, 4}


def test_a_group_over_the_byte_budget_is_left_out_and_its_model_removed(tmp_path):
    main, folder = croatian_for_everything(), tmp_path / "experts"
    held_out = {"short": {"hrv_Latn": CROATIAN[:4], "srp_Latn": SERBIAN[:4]}}
    pool = Pool()
    pool.add("hrv_Latn", CROATIAN, "test")
    pool.add("srp_Latn", SERBIAN, "test")
    index = train_experts(pool, [GROUP], main, HeldOut.of(main, held_out), folder, SETTINGS, [0.5, 1.0], 2.0, OURS,
                          thresholds=[0.5, 0.9], max_bytes=1_000)    # an expert is tens of kilobytes
    (entry,) = index["groups"]
    assert not entry["used"] and entry["model"] is None and "fill max_bytes (1,000)" in entry["reason"]
    assert entry["gains"]["1.0"]["short"] == pytest.approx(100.0) and index["max_bytes"] == 1_000
    assert sorted(p.name for p in folder.iterdir()) == ["experts.json"]
    assert index["ask_below_sweep"]["1.0"]["asked"] == 0                  # no expert left to ask
    assert load_experts(folder / "experts.json", main).groups == []
    again = write_set(folder, main, held_out)                               # no budget: trained and kept
    assert again["groups"][0]["used"] and (folder / again["groups"][0]["model"]).is_file()


def test_a_rerun_leaves_a_group_over_the_byte_budget_out_without_training_it(tmp_path, monkeypatch, caplog):
    """The budget left a group out: a rerun weighs it against the budget again on the size and gains it recorded,
    leaving it out untrained while it does not fit, and trains it once it does (here: the budget raised)."""
    import logging

    from pipelines.text import langid_experts_train

    main, folder = croatian_for_everything(), tmp_path / "experts"
    held = HeldOut.of(main, {"short": {"hrv_Latn": CROATIAN[:4], "srp_Latn": SERBIAN[:4]}})
    pool = Pool()
    pool.add("hrv_Latn", CROATIAN, "test")
    pool.add("srp_Latn", SERBIAN, "test")

    def run(max_bytes):
        return train_experts(pool, [GROUP], main, held, folder, SETTINGS, [0.5, 1.0], 2.0, OURS,
                             thresholds=[0.5, 0.9], max_bytes=max_bytes)

    (first,) = run(1_000)["groups"]
    assert not first["used"] and first["budget"]["weight"] == 0.5 and first["budget"]["model_bytes"] > 1_000
    trained = []
    real_train_group = langid_experts_train.train_group
    monkeypatch.setattr(langid_experts_train, "train_group", lambda *args: trained.append(args) or
                        real_train_group(*args))
    with caplog.at_level(logging.INFO, logger="pipelines.text.langid_experts_train"):
        (again,) = run(2_000)["groups"]                   # still too small: left out, not trained
    assert trained == [] and "left out again for max_bytes, not trained" in caplog.text
    assert again == {**first, "reason": again["reason"]} and "fill max_bytes (2,000)" in again["reason"]
    assert sorted(p.name for p in folder.iterdir()) == ["experts.json"]
    (kept,) = run(first["budget"]["model_bytes"] * 2)["groups"]   # room now: trained and kept
    assert len(trained) == 1 and kept["used"] and "budget" not in kept and (folder / kept["model"]).is_file()


def test_fragments_add_cut_copies_and_leave_the_examples_alone_when_off():
    from dataclasses import replace

    from pipelines.text.langid_experts_train import group_examples

    pool = Pool()
    pool.add("hrv_Latn", CROATIAN, "test")
    pool.add("srp_Latn", SERBIAN, "test")
    plain = group_examples(pool, GROUP, SETTINGS)
    assert group_examples(pool, GROUP, replace(SETTINGS, fragments=0.0)) == plain
    cut = group_examples(pool, GROUP, replace(SETTINGS, fragments=1.0))
    extra = sorted(set(cut) - set(plain))
    assert len(cut) == len(plain) + 16 and extra  # every line once more, cut to its first 2-6 words
    assert all(2 <= len(line.split()) <= 6 and any(full.startswith(line) for full in CROATIAN + SERBIAN)
               for _, line in extra)


def test_a_group_that_gains_nothing_is_left_out(tmp_path):
    """... and a rerun into the folder of an earlier set leaves none of the earlier index's models behind."""
    folder = tmp_path / "experts"
    folder.mkdir()
    for name in ("deu-gsw.ftz", "deu-gsw.ftz.json"):
        (folder / name).write_text("an earlier run's")
    (folder / "experts.json").write_text(json.dumps({"format": "cmlm-lid-experts/1", "groups": [
        {"languages": ["deu_Latn", "gsw_Latn"], "weight": 1.0, "model": "deu-gsw.ftz"}]}))
    (folder / "notes.txt").write_text("not an index's: kept")
    right = FixedMain({**{t: [("hrv_Latn", 0.9)] for t in CROATIAN}, **{t: [("srp_Latn", 0.9)] for t in SERBIAN}})
    index = write_set(tmp_path / "experts", right, {"short": {"hrv_Latn": CROATIAN, "srp_Latn": SERBIAN}})
    (entry,) = index["groups"]
    assert not entry["used"] and "< 2.0" in entry["reason"] and entry["model"] is None
    assert sorted(p.name for p in (tmp_path / "experts").iterdir()) == ["experts.json", "notes.txt"]
    assert load_experts(tmp_path / "experts" / "experts.json", right).groups == []


def test_an_expert_set_that_does_not_match_its_files_is_refused(tmp_path):
    main = croatian_for_everything()
    folder = tmp_path / "experts"
    index = write_set(folder, main, {"short": {"hrv_Latn": CROATIAN[:4], "srp_Latn": SERBIAN[:4]}})
    path, model = folder / "experts.json", folder / index["groups"][0]["model"]

    def rewritten(**changes):
        entry = {**index["groups"][0], **changes}
        path.write_text(json.dumps({**index, "groups": [entry]}))

    rewritten(languages=["bos_Latn", "srp_Latn"])
    with pytest.raises(InputFormatError, match="names hrv_Latn, srp_Latn, but .*experts.json lists"):
        load_experts(path, FixedMain({}))
    path.write_text(json.dumps({**index, "ask_below": 0}))
    with pytest.raises(InputFormatError, match=r"ask_below 0.0 is not in \(0, 1\]"):
        load_experts(path, main)
    rewritten(weight=1.5)
    with pytest.raises(InputFormatError, match="group 1: weight 1.5"):
        load_experts(path, main)
    rewritten(model="missing.ftz")
    with pytest.raises(InputFormatError, match="missing.ftz not found"):
        load_experts(path, main)
    rewritten()
    model.write_bytes(model.read_bytes() + b"\0")
    with pytest.raises(InputFormatError, match="hrv-srp.ftz: not the model .*sha256"):
        load_experts(path, main)
    path.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(InputFormatError, match="not an expert set's index"):
        load_experts(path, main)
    with pytest.raises(InputFormatError, match="expert set not found"):
        load_experts(tmp_path / "nowhere.json", main)


def test_expert_specs_come_last_and_resolve_like_models(tmp_path):
    from pipelines.settings import _resolve_lid

    assert lid_parts("combined+experts") == ["cmlm-lid", "lid.176", "experts"]
    assert _resolve_lid("combined+experts", tmp_path) == "combined+experts"
    assert _resolve_lid("combined+../x/experts.json", tmp_path / "configs") == f"combined+{tmp_path}/x/experts.json"
    with pytest.raises(ValueError, match="an expert set comes last"):
        load_identifier("experts+combined")
    with pytest.raises(ValueError, match="an expert set comes last"):
        load_identifier("experts")


def test_the_shipped_expert_set_serves_the_default_is_recorded_and_staged(tmp_path):
    from pipelines.dependencies import lid_files
    from pipelines.job import stage_lid_model

    identifier = load_identifier("combined+experts")
    assert identifier.languages == load_identifier("combined").languages and identifier.groups
    assert all(group.weight > 0 for group in identifier.groups)
    assert [Path(row[0]).name for row in lid_files("combined+experts")[1:]] == [
        "cmlm-lid.ftz", "lid.176.ftz", "experts.json"]
    staged = stage_lid_model("combined+experts", str(tmp_path / "staging"))
    assert staged == f"{tmp_path}/staging/cmlm-lid.ftz+lid.176+{tmp_path}/staging/experts/experts.json"
    assert len(load_identifier(staged).groups) == len(identifier.groups)   # the index found its models there


def test_the_experts_config_is_checked(tmp_path):
    config = tmp_path / "experts.yaml"
    for text, message in (("groups: [[hrv_Latn]]", "two languages or more"),
                          ("groups: [[hrv_Latn, ../x]]", "group 1: '../x' is not a language code"),
                          ("groups: [[hrv_Latn, srp_Latn]]\nweights: [0, 1]", "weights must lie in"),
                          ("groups: [[hrv_Latn, srp_Latn]]\nsettings: {depth: 3}", "unknown setting"),
                          ("groups: [[hrv_Latn, srp_Latn]]\nask_below: [1.5]", "ask_below thresholds"),
                          ("groups: [[hrv_Latn, srp_Latn]]\nmax_bytes: 1.5", "max_bytes must be a positive"),
                          ("groups: [[hrv_Latn, srp_Latn], [bos_Latn, srp_Latn]]", "srp_Latn is in group 1 and group 2"),
                          ("groups: [[hrv_Latn, srp_Latn]]\nmax_bytes: -3", "max_bytes must be a positive"),
                          ("groupz: []", "unknown key"),
                          # each found late, or a traceback, or SIGFPE from fastText
                          ("groups: [[eng_Latn, qqq_Latn]]", "'qqq_Latn' names no registered language"),
                          ("groups: [[hrv_Latn, srp_Latn]]\nsettings: {bucket: 0}", "settings.bucket must be"),
                          ("groups: [[hrv_Latn, srp_Latn]]\nsettings: {dim: abc}", "settings.dim must be"),
                          ("groups: [[hrv_Latn, srp_Latn]]\nmin_gain: abc", "min_gain must be numbers"),
                          ("groups: [[hrv_Latn, srp_Latn]]\nweights: [abc]", "weights must be numbers")):
        config.write_text(text)
        with pytest.raises(ValueError, match=message):
            read_config(config)
    shipped = read_config(Path(__file__).resolve().parents[1] / "configs" / "lid_experts.yaml")
    assert shipped["main"] == "combined" and ("bos_Latn", "hrv_Latn", "srp_Latn") in shipped["groups"]
