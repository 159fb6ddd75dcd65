"""BUCC 2018 protocol: parsing with file:line errors, ambiguous texts, threshold tuning, folds."""

import math

import numpy as np
import pytest

from miner import bucc
from miner.io import InputFormatError
from miner.selection import Pairs


def write(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def candidates(scored, gold):
    """scored: [(src_id, tgt_id, score)] best first."""
    return bucc.ScoredCandidates([(s, t) for s, t, _ in scored], np.array([x for *_, x in scored]),
                                 frozenset(gold))


# Hand-written gold: 4 gold pairs, one of which is never proposed.
#   rank  score  pair    correct  P      R     F1
#   1     2.0    a-A     yes      1      .25   .400
#   2     1.8    b-B     yes      1      .50   .667
#   3     1.5    c-X     no       .667   .50   .571
#   4     1.4    d-D     yes      .75    .75   .750   <- best: threshold = (1.4 + 1.2) / 2 = 1.3
#   5     1.2    e-Y     no       .60    .75   .667
#   6     1.0    f-Z     no       .50    .75   .600
GOLD = {("a", "A"), ("b", "B"), ("d", "D"), ("g", "G")}
SCORED = [("a", "A", 2.0), ("b", "B", 1.8), ("c", "X", 1.5), ("d", "D", 1.4), ("e", "Y", 1.2), ("f", "Z", 1.0)]


def test_sweep_and_threshold_by_hand():
    c = candidates(SCORED, GOLD)
    curve = bucc.sweep(c)
    assert curve["f1"] == pytest.approx([0.4, 2 / 3, 4 / 7, 0.75, 2 / 3, 0.6])
    assert bucc.tune_threshold(c) == pytest.approx(1.3)
    assert bucc.score_at(c, 1.3) == {"precision": 0.75, "recall": 0.75, "f1": 0.75, "correct": 3,
                                     "extracted": 4, "gold": 4}


def test_threshold_is_inclusive_and_edge_cases():
    c = candidates(SCORED, GOLD)
    assert bucc.score_at(c, 1.4)["extracted"] == 4  # score >= threshold
    only_best_last = candidates([("x", "Q", 3.0), ("a", "A", 2.0)], GOLD)
    assert bucc.tune_threshold(only_best_last) == 2.0  # best at the last candidate: its own score
    assert bucc.tune_threshold(candidates([("x", "Q", 3.0)], GOLD)) == math.inf
    assert bucc.score_at(candidates([("x", "Q", 3.0)], GOLD), math.inf)["f1"] == 0


def test_cross_fold_tunes_on_the_other_half():
    c = candidates(SCORED, GOLD)
    result, thresholds = bucc.cross_fold_score(c, 2)
    assert len(thresholds) == 2
    by_hand_correct = by_hand_extracted = 0
    for fold in range(2):
        rest = c.restrict(lambda s: bucc.source_fold(s) != fold)
        held = c.restrict(lambda s: bucc.source_fold(s) == fold)
        counts = bucc.score_at(held, bucc.tune_threshold(rest))
        by_hand_correct += counts["correct"]
        by_hand_extracted += counts["extracted"]
    assert (result["correct"], result["extracted"], result["gold"]) == (by_hand_correct, by_hand_extracted, 4)


def test_pooled_threshold_and_leave_one_pair_out():
    one = candidates(SCORED, GOLD)
    other = candidates([("a", "A", 1.9), ("q", "Q", 1.6), ("b", "B", 1.1)], {("a", "A"), ("b", "B")})
    pooled = bucc.pool({"x-en": one, "y-en": other})
    assert len(pooled.pairs) == 9 and len(pooled.gold) == 6
    assert pooled.scores.tolist() == sorted(pooled.scores.tolist(), reverse=True)
    assert ("x-en:a", "x-en:A") in pooled.gold and ("y-en:a", "y-en:A") in pooled.gold  # ids kept apart
    held_out = bucc.leave_one_pair_out({"x-en": one, "y-en": other})
    assert held_out["x-en"]["threshold"] == bucc.tune_threshold(other)
    assert held_out["y-en"] == {**bucc.score_at(other, bucc.tune_threshold(one)), "threshold": bucc.tune_threshold(one)}


def test_source_fold_is_stable():
    assert [bucc.source_fold(s) for s in ("de-000001", "de-000002", "de-000003")] == [
        bucc.source_fold(s) for s in ("de-000001", "de-000002", "de-000003")]
    assert {bucc.source_fold(f"de-{i:06d}") for i in range(20)} == {0, 1}


def test_ambiguous_texts_are_dropped_and_best_score_kept(tmp_path):
    src = bucc.read_sentences(write(tmp_path / "x.de", ["d1\tHallo", "d2\tWelt", "d3\tHallo"]))
    tgt = bucc.read_sentences(write(tmp_path / "x.en", ["e1\tHello", "e2\tWorld"]))
    su, tu = bucc.unify(src), bucc.unify(tgt)
    assert su.texts == ["Hallo", "Welt"] and su.ids == [None, "d2"] and su.rows.tolist() == [0, 1]
    pairs = Pairs(np.array([0, 1, 1]), np.array([0, 1, 1]), np.array([1.5, 1.2, 1.3], np.float32),
                  np.zeros(3, np.float32))
    c = bucc.candidates_to_ids(pairs, su, tu, {("d2", "e2")})
    assert c.pairs == [("d2", "e2")] and c.scores == pytest.approx([1.3])


@pytest.mark.parametrize("lines, message", [
    (["d1 Hallo"], r"x.de:1: expected 'id<TAB>sentence'"),
    (["d1\tHallo", "\tWelt"], r"x.de:2: expected"),
    (["d1\tHallo", "d2\t  "], r"x.de:2: sentence 'd2' is empty"),
    (["d1\tHallo", "d1\tWelt"], r"x.de:2: id 'd1' already used on line 1"),
    ([], r"x.de: no sentences"),
])
def test_malformed_sentence_files(tmp_path, lines, message):
    with pytest.raises(InputFormatError, match=message):
        bucc.read_sentences(write(tmp_path / "x.de", lines))


def test_invalid_utf8_names_the_line(tmp_path):
    (tmp_path / "x.de").write_bytes(b"d1\tgut\nd2\tschl\xe9cht\n")
    with pytest.raises(InputFormatError, match=r"x.de:2: invalid UTF-8"):
        bucc.read_sentences(tmp_path / "x.de")


@pytest.mark.parametrize("lines, message", [
    (["d1\te9"], r"x.gold:1: id 'e9' is not in .*x.en"),
    (["d1\te1", "d7\te1"], r"x.gold:2: id 'd7' is not in .*x.de"),
    (["d1 e1"], r"x.gold:1: expected 'source-id<TAB>target-id'"),
])
def test_gold_ids_must_exist(tmp_path, lines, message):
    src = bucc.read_sentences(write(tmp_path / "x.de", ["d1\tHallo"]))
    tgt = bucc.read_sentences(write(tmp_path / "x.en", ["e1\tHello"]))
    with pytest.raises(InputFormatError, match=message):
        bucc.read_gold(write(tmp_path / "x.gold", lines), src, tgt)


def test_layout_and_missing_gold(tmp_path):
    write(tmp_path / "de-en.dev.de", ["d1\tHallo"])
    write(tmp_path / "de-en.dev.en", ["e1\tHello"])
    assert bucc.load_corpus(tmp_path, "de-en", "dev", require_gold=False).gold is None
    with pytest.raises(InputFormatError, match="de-en.dev.gold: gold file not found"):
        bucc.load_corpus(tmp_path, "de-en", "dev")
    with pytest.raises(ValueError, match="must look like de-en"):
        bucc.split_pair("deen")
