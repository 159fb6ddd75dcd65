"""The transformer encoder (encoders.transformer): same vectors as sentence-transformers, whatever the batching,
precision or input order; bad sentences named; long ones truncated and counted."""

import numpy as np
import pytest
import torch

from encoders import BadSentenceError, load_encoder
from tests.conftest import sample_sentences

SENTENCES = sample_sentences()["de"][:12] + sample_sentences()["en"][:12] + ["Ja.", "Das Wetter ist schön, " * 30]


def cosines(a, b):
    return (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def fp32_encoder(tiny_encoder_dir):
    return load_encoder(str(tiny_encoder_dir), precision="fp32", device="cpu")


def test_our_checkpoint_gives_the_same_vectors_in_sentence_transformers(tiny_encoder_dir, fp32_encoder):
    from sentence_transformers import SentenceTransformer

    theirs = SentenceTransformer(str(tiny_encoder_dir), device="cpu").encode(SENTENCES, convert_to_numpy=True)
    ours = fp32_encoder.encode(SENTENCES)
    assert ours.shape == (len(SENTENCES), 64) and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)
    assert cosines(ours, theirs).min() > 0.99999


def test_sentence_transformers_folder_with_cls_pooling_and_dense(tiny_encoder_dir, tmp_path):
    """A LaBSE-shaped folder (CLS pooling, tanh Dense, Normalize) written by sentence-transformers itself."""
    from sentence_transformers import SentenceTransformer, models

    transformer = models.Transformer(str(tiny_encoder_dir), max_seq_length=24)
    torch.manual_seed(0)
    st_model = SentenceTransformer(modules=[transformer, models.Pooling(64, "cls"),
                                            models.Dense(64, 48, activation_function=torch.nn.Tanh()),
                                            models.Normalize()], device="cpu")
    st_model.save(str(tmp_path / "labse-like"))
    theirs = SentenceTransformer(str(tmp_path / "labse-like"), device="cpu").encode(SENTENCES)
    encoder = load_encoder(str(tmp_path / "labse-like"), precision="fp32")
    assert (encoder.layout.pooling, encoder.dim, encoder.max_seq_length) == ("cls", 48, 24)
    assert cosines(encoder.encode(SENTENCES), theirs).min() > 0.99999


def test_plain_transformers_folder_is_mean_pooled(tiny_encoder_dir, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(tiny_encoder_dir))
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    model.save_pretrained(tmp_path / "plain")
    tokenizer.save_pretrained(tmp_path / "plain")
    batch = tokenizer(SENTENCES[:3], padding=True, return_tensors="pt")
    with torch.no_grad():
        tokens = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    expected = ((tokens * mask).sum(1) / mask.sum(1)).numpy()
    got = load_encoder(str(tmp_path / "plain"), precision="fp32").encode(SENTENCES[:3])
    assert cosines(got, expected).min() > 0.99999


def test_pooler_head_for_plain_labse_style_folders(tiny_encoder_dir, tmp_path):
    """A plain transformers folder trained to use BERT's pooler (tanh(W h_CLS + b)), as LaBSE's PyTorch port is."""
    from transformers import AutoTokenizer, BertModel

    model = BertModel.from_pretrained(str(tiny_encoder_dir), add_pooling_layer=True).eval()
    torch.nn.init.normal_(model.pooler.dense.weight, std=0.2)
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_encoder_dir))
    model.save_pretrained(tmp_path / "labse-port")
    tokenizer.save_pretrained(tmp_path / "labse-port")
    with torch.no_grad():
        expected = model(**tokenizer(SENTENCES[:3], padding=True, return_tensors="pt")).pooler_output.numpy()
    pooled = load_encoder(str(tmp_path / "labse-port"), precision="fp32", pooling="pooler").encode(SENTENCES[:3])
    assert cosines(pooled, expected).min() > 0.99999
    mean = load_encoder(str(tmp_path / "labse-port"), precision="fp32").encode(SENTENCES[:3])
    assert cosines(pooled, mean).max() < 0.999  # a different vector: the pooler head is really applied


def test_batching_and_order_do_not_change_vectors(tiny_encoder_dir, fp32_encoder):
    small_batches = load_encoder(str(tiny_encoder_dir), precision="fp32", token_budget=40, batch_size=3)
    reference = fp32_encoder.encode(SENTENCES)
    np.testing.assert_allclose(small_batches.encode(SENTENCES), reference, atol=2e-5)
    np.testing.assert_allclose(fp32_encoder.encode(SENTENCES[::-1])[::-1], reference, atol=2e-5)


def test_several_replicas_share_the_batches(tiny_encoder_dir, fp32_encoder):
    """The multi-GPU path (one thread per device pulling batches), run with two CPU replicas."""
    two = load_encoder(str(tiny_encoder_dir), precision="fp32", device="cpu,cpu", token_budget=40, batch_size=2)
    assert len(two.replicas) == 2
    np.testing.assert_allclose(two.encode(SENTENCES), fp32_encoder.encode(SENTENCES), atol=2e-5)


def test_bf16_stays_faithful_and_float16_output(tiny_encoder_dir, fp32_encoder):
    bf16 = load_encoder(str(tiny_encoder_dir), precision="bf16").encode(SENTENCES, dtype=np.float16)
    assert bf16.dtype == np.float16
    assert cosines(bf16.astype(np.float32), fp32_encoder.encode(SENTENCES)).min() > 0.99


def test_a_batch_out_of_gpu_memory_is_split_and_later_batches_are_cut_to_fit(tiny_encoder_dir, fp32_encoder,
                                                                              monkeypatch, caplog):
    """A device that holds at most 3 sentences a batch (the OOM a GPU raises, raised here on the CPU): every vector
    comes back as without the limit, and once the budget has shrunk, later calls raise no more errors."""
    encoder = load_encoder(str(tiny_encoder_dir), precision="fp32", device="cpu", batch_size=16)
    forward, errors = encoder._forward, []

    def small_device(replica, ids, raw=False):
        if len(ids) > 3:
            errors.append(len(ids))
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return forward(replica, ids, raw)

    monkeypatch.setattr(encoder, "_forward", small_device)
    with caplog.at_level("WARNING", logger="encoders.batching"):
        vectors = encoder.encode(SENTENCES)
    np.testing.assert_allclose(vectors, fp32_encoder.encode(SENTENCES), atol=1e-5)
    assert errors and "splitting it; batches from now on hold at most" in caplog.text
    errors.clear()
    np.testing.assert_allclose(encoder.encode(SENTENCES[:12]), fp32_encoder.encode(SENTENCES[:12]), atol=1e-5)
    assert errors == []


def test_long_sentences_are_truncated_and_counted(fp32_encoder):
    long_sentence = " ".join(["Marktplatz"] * 200)  # far past 32 tokens
    before = fp32_encoder.stats["truncated"]
    vectors = fp32_encoder.encode([long_sentence, " ".join(["Marktplatz"] * 100)])
    assert fp32_encoder.stats["truncated"] - before == 2
    assert cosines(vectors[:1], vectors[1:])[0] > 0.99999  # both are the same first 32 tokens


def test_bad_sentences_are_named_and_never_lose_the_rest(fp32_encoder):
    batch = ["Guten Morgen.", "", "Good morning.", "kaputt \udcff", "Ja."]
    with pytest.raises(BadSentenceError, match="sentence 1: empty.*sentence 3: invalid UTF-8"):
        fp32_encoder.encode(batch)
    result = fp32_encoder.encode_valid(batch)
    assert result.kept.tolist() == [0, 2, 4] and set(result.problems) == {1, 3}
    np.testing.assert_allclose(result.vectors, fp32_encoder.encode(["Guten Morgen.", "Good morning.", "Ja."]),
                               atol=2e-5)


def test_describe_and_bad_options(tiny_encoder_dir):
    encoder = load_encoder(str(tiny_encoder_dir))
    assert encoder.describe()["pooling"] == "mean" and encoder.describe()["devices"] == ["cpu"]
    with pytest.raises(ValueError, match="precision 'int3'"):
        load_encoder(str(tiny_encoder_dir), precision="int3")
    with pytest.raises(ValueError, match="takes no options"):
        load_encoder("char-ngram", precision="fp32")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sees no GPU"):
            load_encoder(str(tiny_encoder_dir), device="cuda")


def test_deberta_runs_in_fp32_where_auto_would_mix_bf16_on_a_cpu(tmp_path, monkeypatch):
    """transformers' DeBERTa (v1) fills masked attention scores with the fp32 minimum, which overflows the bf16
    scores of bf16-mixed: on a CPU with native bf16 `auto` failed at the first batch. It runs in fp32 there."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import DebertaConfig, DebertaModel, PreTrainedTokenizerFast

    from encoders import precision

    torch.manual_seed(0)
    DebertaModel(DebertaConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=64)).save_pretrained(tmp_path)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                            sep_token="[SEP]", mask_token="[MASK]").save_pretrained(tmp_path)
    monkeypatch.setattr(precision, "cpu_has_native_bf16", lambda: True)  # where auto picks bf16-mixed
    encoder = load_encoder(str(tmp_path), device="cpu")
    assert encoder.precision == precision.PRECISIONS["fp32"]
    assert encoder.encode(["hello world", "hello"]).shape == (2, 32)
