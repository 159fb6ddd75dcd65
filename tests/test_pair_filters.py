"""The pair filter: each rule's verdict on pairs written for it, counting, and settings checks."""

from __future__ import annotations

import pytest

from miner.pair_filters import KEEP, PairFilter

TRANSLATION = ("Der Ausschuss billigte am 12. März 2024 einen Haushalt von 1.500 Euro.",
               "On 12 March 2024 the committee approved a budget of 1,500 euros.")


@pytest.fixture
def chain():
    return PairFilter.from_settings({})


def test_a_real_translation_passes(chain):
    assert chain.check(*TRANSLATION, "deu_Latn", "eng_Latn") is KEEP
    assert chain.check("委员会于2024年3月12日批准了预算。", "The committee approved the budget on 12 March 2024.",
                       "zho_Hans", "eng_Latn") is KEEP
    assert chain.report() == {"kept": 2, "dropped": {}}


@pytest.mark.parametrize(("src", "tgt", "reason"), [
    ("Home | Contact | Impressum", "home | contact | IMPRESSUM!", "identical"),
    ("The committee approved the budget on Tuesday.", "The committee approved the budgets on Tuesday", "identical"),
    ("Ja.", "The committee approved the budget on Tuesday after a long debate about schools and roads.",
     "length_ratio"),
    ("Der Haushalt beträgt 1.500 Euro.", "The budget is 2,700 euros.", "numbers"),
    ("Mehr unter www.example.org/de.", "More at www.example.com.", "urls"),
    ("Mehr auf unserer Seite.", "More at https://example.com/en today.", "urls"),
])
def test_each_rule_drops_what_it_is_for(chain, src, tgt, reason):
    assert chain.check(src, tgt, "deu_Latn", "eng_Latn") == (False, reason)
    assert chain.drops == {reason: 1}


def test_script_rule_uses_the_language_codes(chain):
    english_in_chinese_slot = ("This sentence is English, not Chinese at all.", "This is an English sentence here.")
    assert chain.check(*english_in_chinese_slot, "zho_Hans", "eng_Latn") == (False, "script")
    assert chain.check("Это предложение написано по-русски.", "This sentence is written in Russian.",
                       "rus_Cyrl", "eng_Latn") is KEEP
    # plain codes carry no script: not checked
    assert chain.check("This sentence is English, not Chinese at all.", "Dies ist ein deutscher Satz.", "zh", "de") \
        is KEEP


def test_numbers_spelt_out_on_one_side_are_kept(chain):
    assert chain.check("Drei Kinder spielten im Park.", "3 children played in the park.", "deu_Latn",
                       "eng_Latn") is KEEP
    assert chain.check("Am 3. Mai kamen drei Kinder.", "On 3 May 3 children came, 2 of them late.", "deu_Latn",
                       "eng_Latn") is KEEP  # {3} is within {2, 3}


@pytest.mark.parametrize(("src", "tgt"), [
    ("Elle présente 200 animaux venus de 6 000 mètres.", "It shows 200 animals from 6,000 metres."),
    ("此次翻修耗资1400万欧元。", "The renovation cost 14 million euros."),
    ("Plus de 3\u202f000 visiteurs.", "More than 3,000 visitors."),
])
def test_number_formats_and_scale_words_agree(chain, src, tgt):
    assert chain.check(src, tgt) is KEEP


def test_numbers_agree_across_separators_and_digit_scripts(chain):
    assert chain.check("Die Stadt hat ١٠٠٠ Einwohner und 2,5 km².", "The town has 1000 inhabitants and 2.5 km².",
                       "deu_Latn", "eng_Latn") is KEEP


def test_dense_scripts_are_weighted_in_the_length_ratio(chain):
    # 12 Han characters against 60 Latin letters is a normal Chinese-English length relation
    assert chain.check("我们明天在火车站见面吧好的", "Let us meet at the railway station tomorrow, all right then.",
                       "zho_Hans", "eng_Latn") is KEEP


def test_rules_can_be_turned_off_and_the_filter_disabled():
    assert PairFilter.from_settings(False) is None
    lenient = PairFilter.from_settings({"numbers": False, "length_ratio": None})
    assert lenient.check("Der Haushalt beträgt 1.500 Euro.", "The budget is 2,700 euros.") is KEEP
    assert lenient.check("Ja.", "The committee approved the budget on Tuesday after a long debate.") is KEEP


def test_bad_settings_name_the_key():
    with pytest.raises(ValueError, match="unknown pair_filter setting.*lenght_ratio"):
        PairFilter.from_settings({"lenght_ratio": 2})
    with pytest.raises(ValueError, match="length_ratio must be at least 1"):
        PairFilter.from_settings({"length_ratio": 0.5})
