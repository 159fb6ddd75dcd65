"""Distillation (METHODS §9): the loss, the teacher's cache and its failures, and a tiny student that learns."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from training.config import load_recipe
from training.losses import bank_contrast_loss, distillation_loss
from training.teacher import TeacherError, teacher_vectors
from training.train import prepare_run
from training.trainer import Trainer

DISTILL = ["stages=[{name: d, objectives: [distill], steps: 30}]", "model.output_dim=64",
           "distill.teacher=char-ngram:64", "distill.batch_size=16", "run.log_every=5"]


def recipe(inputs, tmp_path, *overrides):
    return load_recipe(inputs / "recipe.yaml", [f"output={tmp_path / 'run'}", f"distill.cache={tmp_path / 'cache'}",
                                                *overrides])


def test_loss_is_zero_on_the_teacher_and_sums_squared_distances():
    teacher = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
    loss, cosine = distillation_loss(teacher, teacher, teacher)
    assert float(loss) == 0 and float(cosine) == pytest.approx(1)
    loss, _ = distillation_loss(teacher + 0.5, teacher, teacher)
    assert float(loss) == pytest.approx(8 * 0.25)  # ||0.5||^2 over 8 dimensions, source side only


def test_student_moves_towards_the_teacher_and_exports_its_dense_layer(training_inputs, tmp_path):
    from encoders import load_encoder

    config = recipe(training_inputs, tmp_path, *DISTILL)
    tokenizer, data, model = prepare_run(config)
    trainer = Trainer(config, data, tokenizer, model)
    folder = trainer.run(fit_output=True)
    cosines = [line["teacher_cosine"] for line in trainer.history]
    assert cosines[-1] > cosines[0] + 0.1
    modules = json.loads((folder / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == ["Transformer", "Pooling", "Dense", "Normalize"]
    vectors = load_encoder(str(folder)).encode(["Das Haus ist rot.", "The house is red."])
    assert vectors.shape == (2, 64)


def test_a_student_checkpoint_gives_the_same_vectors_in_sentence_transformers(training_inputs, tmp_path):
    from sentence_transformers import SentenceTransformer

    from encoders import load_encoder

    config = recipe(training_inputs, tmp_path, *DISTILL, "stages.0.steps=3")
    tokenizer, data, model = prepare_run(config)
    folder = Trainer(config, data, tokenizer, model).run(fit_output=True)
    sentences = ["Das Haus ist rot.", "The house is red.", "Ein ziemlich langer Satz mit vielen Wörtern."]
    ours = load_encoder(str(folder), precision="fp32").encode(sentences)
    theirs = SentenceTransformer(str(folder), device="cpu").encode(sentences, normalize_embeddings=True)
    np.testing.assert_allclose(ours, theirs, atol=2e-5)


def test_training_further_from_a_student_keeps_its_output_layer(training_inputs, tmp_path):
    from training.model import output_layer

    config = recipe(training_inputs, tmp_path, *DISTILL, "stages.0.steps=2")
    tokenizer, data, model = prepare_run(config)
    folder = Trainer(config, data, tokenizer, model).run(fit_output=True)
    again = recipe(training_inputs, tmp_path / "again", *DISTILL, f"model.init={folder}")
    layer, new = output_layer(again.model, 64, again.model.init, seed=0)
    assert not new
    np.testing.assert_allclose(layer.weight.detach().numpy(), model.output.weight.detach().numpy(), atol=1e-3)
    with pytest.raises(ValueError, match="Dense layer gives 64 dimensions, but model.output_dim is 32"):
        output_layer(recipe(training_inputs, tmp_path / "x", *DISTILL, f"model.init={folder}",
                            "model.output_dim=32").model, 64, str(folder), seed=0)


def test_a_longer_max_seq_length_grows_the_positions_of_the_encoder_it_starts_from(training_inputs, tmp_path):
    """A student trained with 80 positions continued at 128: its learned positions stay, the new ones start as
    copies of the second half, and the exported encoder reads the longer sentences without cutting them."""
    from encoders import load_encoder
    from training.model import load_encoder_for_training

    config = recipe(training_inputs, tmp_path, *DISTILL, "stages.0.steps=2")
    tokenizer, data, model = prepare_run(config)
    folder = Trainer(config, data, tokenizer, model).run(fit_output=True)
    before = load_encoder_for_training(str(folder), config.model).embeddings.position_embeddings.weight.detach()
    longer = recipe(training_inputs, tmp_path / "longer", *DISTILL, f"model.init={folder}",
                    f"model.max_seq_length={len(before) + 20}", "model.projection_vectors=0")
    grown = load_encoder_for_training(str(folder), longer.model)
    table = grown.embeddings.position_embeddings.weight.detach()
    known, half = len(before), len(before) // 2
    assert len(table) == -(-(known + 20) // 8) * 8 and grown.config.max_position_embeddings == len(table)
    torch.testing.assert_close(table[:known], before)
    torch.testing.assert_close(table[known:known + half], before[known - half:known][:len(table) - known])
    ids = torch.arange(len(table)).remainder(50).add(5).unsqueeze(0)  # a sentence as long as the new table
    assert grown(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state.shape[1] == len(table)
    tokenizer, data, model = prepare_run(longer)
    exported = Trainer(longer, data, tokenizer, model).run(fit_output=True)
    assert load_encoder(str(exported)).max_seq_length == known + 20


def counting_encodes(monkeypatch, teacher) -> list[list[str]]:
    """What the teacher is asked to embed, call by call."""
    calls: list[list[str]] = []
    real = teacher.load_teacher

    def counting(spec):
        encoder = real(spec)
        original = encoder.encode
        encoder.encode = lambda texts, **kw: calls.append(list(texts)) or original(texts, **kw)
        return encoder

    monkeypatch.setattr(teacher, "load_teacher", counting)
    return calls


def test_the_cache_is_reused_and_only_missing_chunks_are_embedded(tmp_path, monkeypatch):
    import training.teacher as teacher

    monkeypatch.setattr(teacher, "CHUNK", 4)
    texts = [f"sentence number {i}" for i in range(10)]
    first = teacher_vectors("char-ngram:32", texts, tmp_path)
    chunks = sorted((tmp_path / "char-ngram_32").glob("chunk-?????.npy"))
    assert len(chunks) == 3 and first.shape == (10, 32)
    chunks[1].unlink()
    calls = counting_encodes(monkeypatch, teacher)
    again = teacher_vectors("char-ngram:32", texts[::-1], tmp_path)  # any order: rows follow the texts
    assert [len(call) for call in calls] == [4]
    np.testing.assert_allclose(again[::-1], first, atol=1e-3)  # float16 storage


def test_new_sentences_are_embedded_alone_though_they_shift_every_chunk(tmp_path, monkeypatch):
    import training.teacher as teacher

    monkeypatch.setattr(teacher, "CHUNK", 4)
    texts = [f"sentence number {i:02d}" for i in range(0, 20, 2)]
    first = teacher_vectors("char-ngram:32", texts, tmp_path)
    added = ["a sentence before all others", "sentence number 05", "sentence number 13"]
    calls = counting_encodes(monkeypatch, teacher)
    grown = teacher_vectors("char-ngram:32", texts + added, tmp_path)  # every chunk's boundaries move
    assert sorted(t for call in calls for t in call) == sorted(added)
    np.testing.assert_array_equal(grown[:len(texts)], first)  # reused rows are the cached float16 values
    np.testing.assert_allclose(grown[len(texts):], teacher_vectors("char-ngram:32", added, tmp_path / "fresh"),
                               atol=1e-6)


def test_a_half_written_chunk_lends_no_rows(tmp_path, monkeypatch):
    import training.teacher as teacher

    monkeypatch.setattr(teacher, "CHUNK", 4)
    texts = [f"sentence number {i}" for i in range(8)]
    teacher_vectors("char-ngram:32", texts, tmp_path)
    folder = tmp_path / "char-ngram_32"
    # a run killed after writing chunk 0's vectors for other texts, before its keys and record: the keys on disk no
    # longer describe the rows beside them, and the record that vouched for them must not be believed
    np.save(folder / "chunk-00000.npy", np.ones((4, 32), dtype=np.float16))
    calls = counting_encodes(monkeypatch, teacher)
    again = teacher_vectors("char-ngram:32", texts + ["one more"], tmp_path)
    assert not (again == 1).all(axis=1).any()
    assert "one more" in [t for call in calls for t in call]


@pytest.mark.parametrize("damage", ["truncate", "nan", "shape", "swapped"])
def test_a_damaged_cache_file_is_named_before_training(tmp_path, damage):
    texts = [f"sentence number {i}" for i in range(6)]
    teacher_vectors("char-ngram:32", texts, tmp_path)
    chunk = tmp_path / "char-ngram_32" / "chunk-00000.npy"
    if damage == "truncate":
        chunk.write_bytes(chunk.read_bytes()[:100])
    else:
        array = np.load(chunk)
        np.save(chunk, np.full_like(array, np.nan) if damage == "nan" else array[:3] if damage == "shape"
                else array[::-1])  # swapped: the right shape and finite, other rows
    with pytest.raises(TeacherError, match="chunk-00000.npy"):
        teacher_vectors("char-ngram:32", texts, tmp_path)


def test_a_teacher_that_does_not_exist_fails_before_the_first_step(training_inputs, tmp_path):
    config = recipe(training_inputs, tmp_path, *DISTILL, "distill.teacher=no-such-teacher")
    with pytest.raises(TeacherError, match="no-such-teacher"):
        prepare_run(config)


def test_sentences_the_teacher_cannot_read_are_named(tmp_path):
    with pytest.raises(TeacherError, match="1 sentence.*𓀀𓀁𓀂"):
        teacher_vectors("use-multilingual", ["A fine sentence.", "𓀀𓀁𓀂"], tmp_path)


def test_distillation_needs_bitext_and_known_settings(training_inputs, tmp_path):
    from miner.config import ConfigError

    with pytest.raises(ConfigError, match="distill.teacher_side must be target or source"):
        recipe(training_inputs, tmp_path, *DISTILL, "distill.teacher_side=left")
    with pytest.raises(ConfigError, match="trains distill but data.bitext is empty"):
        recipe(training_inputs, tmp_path, *DISTILL, "data.bitext=[]")


def test_distill_and_br_share_one_batch(training_inputs, tmp_path):
    config = recipe(training_inputs, tmp_path, *DISTILL, "stages.0.objectives=[distill, br]", "br.batch_size=16",
                    "stages.0.steps=5")
    tokenizer, data, model = prepare_run(config)
    trainer = Trainer(config, data, tokenizer, model)
    calls = []
    original = model.pair_vectors
    model.pair_vectors = lambda batch: calls.append(1) or original(batch)
    trainer.run(fit_output=True)
    assert len(calls) == 5  # one forward pass per step for both losses
    assert {"distill_loss", "br_loss", "teacher_cosine"} <= set(trainer.history[-1])


def test_a_br_stage_beside_a_distillation_stage_draws_its_own_batches(training_inputs, tmp_path):
    config = recipe(training_inputs, tmp_path, *DISTILL, "br.batch_size=16",
                    "stages=[{name: b, objectives: [br], steps: 2}, {name: d, objectives: [distill, br], steps: 2}]")
    tokenizer, data, model = prepare_run(config)
    trainer = Trainer(config, data, tokenizer, model)
    trainer.run(fit_output=True)
    assert {"br_loss", "distill_loss"} <= set(trainer.history[-1]) and "br_loss" in trainer.history[0]


def test_monolingual_distillation_gives_listed_sources_their_own_teacher_vector(training_inputs, tmp_path):
    """distill.monolingual: a German source learns the teacher's vector of the German sentence itself, the
    English side its own; a language not listed keeps the English target on both sides."""
    from training.batches import step_rng

    config = recipe(training_inputs, tmp_path, *DISTILL, "distill.monolingual=[de]", "stages.0.steps=4")
    tokenizer, data, model = prepare_run(config)
    (pairs,) = data.bitext
    assert pairs.source_rows is not None and not np.array_equal(pairs.source_rows, pairs.teacher_rows)
    assert data.summary()["monolingual_distillation"] == ["deu_Latn-eng_Latn"]
    trainer = Trainer(config, data, tokenizer, model)
    sampler = trainer.samplers["distill"]
    picks = sampler.draw(step_rng(1, 0, 0, 0), 8)
    batch = sampler.collate(picks)
    np.testing.assert_array_equal(batch["teacher_src"].numpy(), data.teacher[[pairs.source_rows[i] for _, i in picks]])
    np.testing.assert_array_equal(batch["teacher"].numpy(), data.teacher[[pairs.teacher_rows[i] for _, i in picks]])
    trainer.run(fit_output=True)
    assert all(np.isfinite(line["loss"]) for line in trainer.history)

    config = recipe(training_inputs, tmp_path / "other", *DISTILL, "distill.monolingual=[fr]")
    tokenizer, data, model = prepare_run(config)
    assert data.bitext[0].source_rows is None
    assert "teacher_src" not in Trainer(config, data, tokenizer, model).samplers["distill"].batch(step_rng(1, 0, 0, 0), 4)


def test_the_source_target_replaces_the_english_one_on_the_source_side_only():
    teacher, own = (torch.nn.functional.normalize(torch.randn(4, 8), dim=-1) for _ in range(2))
    loss, cosine = distillation_loss(own, teacher, teacher, own)
    assert float(loss) == 0 and float(cosine) == pytest.approx(1)
    loss, _ = distillation_loss(teacher, teacher, teacher, own)
    assert float(loss) == pytest.approx(float(((teacher - own) ** 2).sum(-1).mean()))


def test_the_bank_contrast_is_infonce_over_the_target_and_the_negatives_it_may_use():
    student = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    target = torch.tensor([[1.0, 0.0], [0.6, 0.8]])
    bank = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.8, 0.6]])
    same_text = torch.tensor([[False, True, False], [False, False, False]])  # row 0's own target is in the bank
    loss, accuracy = bank_contrast_loss(student, target, bank, same_text, scale=2.0)
    # row 0: logits 2*[1 | 0, (masked), 0.8]; row 1 (unit student [0, 1]): 2*[0.8 | 1, 0, 0.6]
    expected = (-math.log(math.exp(2) / (math.exp(2) + math.exp(0) + math.exp(1.6)))
                - math.log(math.exp(1.6) / (math.exp(1.6) + math.exp(2) + math.exp(0) + math.exp(1.2)))) / 2
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    assert float(accuracy) == pytest.approx(0.5)  # row 1's bank holds a nearer vector than its target


def test_the_contrast_draws_a_bank_that_never_counts_a_pairs_own_sentences_as_negatives(training_inputs, tmp_path):
    from training.batches import step_rng

    config = recipe(training_inputs, tmp_path, *DISTILL, "distill.monolingual=[de]", "stages.0.steps=4",
                    "distill.contrast_weight=0.5", "distill.contrast_bank=64")
    tokenizer, data, model = prepare_run(config)
    trainer = Trainer(config, data, tokenizer, model)
    sampler = trainer.samplers["distill"]
    picks = sampler.draw(step_rng(1, 0, 0, 0), 8)
    rows = np.concatenate([[data.bitext[0].teacher_rows[picks[0][1]], data.bitext[0].source_rows[picks[0][1]]],
                           np.arange(len(data.teacher))[:62]])
    own = np.array([[data.bitext[0].teacher_rows[i], data.bitext[0].source_rows[i]] for _, i in picks])
    bank = sampler.bank_of(own, rows)
    assert bank["bank"].shape == (64, 64) and bank["bank_same_text"].shape == (8, 64)
    assert bank["bank_same_text"][0, 0] and bank["bank_same_text"][0, 1]  # its target and its own source
    expected = np.array([[row in pair for row in rows] for pair in
                         [(data.bitext[0].teacher_rows[i], data.bitext[0].source_rows[i]) for _, i in picks]])
    np.testing.assert_array_equal(bank["bank_same_text"].numpy(), expected)
    trainer.run(fit_output=True)
    assert {"contrast_loss", "contrast_accuracy", "distill_loss"} <= set(trainer.history[-1])
    assert all(np.isfinite(line["loss"]) for line in trainer.history)

    plain = recipe(training_inputs, tmp_path / "plain", *DISTILL)
    tokenizer, data, model = prepare_run(plain)
    assert "bank" not in Trainer(plain, data, tokenizer, model).samplers["distill"].batch(step_rng(1, 0, 0, 0), 4)


def test_hard_negatives_are_each_targets_nearest_teacher_vectors_and_near_copies_are_not_negatives(
        training_inputs, tmp_path):
    from training.batches import step_rng
    from training.hard_negatives import teacher_neighbours

    teacher = torch.nn.functional.normalize(torch.randn(300, 16, generator=torch.Generator().manual_seed(0)),
                                            dim=-1).numpy()
    neighbours = teacher_neighbours(teacher, 5)
    sims = teacher @ teacher.T
    np.fill_diagonal(sims, -np.inf)
    np.testing.assert_array_equal(neighbours, np.argsort(-sims, axis=1, kind="stable")[:, :5])
    with pytest.raises(ValueError, match="the cache holds 5"):
        teacher_neighbours(teacher[:5], 5)
    # the exact search a CUDA device runs (no faiss on the lent GPU machines) finds the same rows, chunk by chunk
    from training.hard_negatives import _exact_neighbours

    exact = _exact_neighbours(teacher, 6, torch.device("cpu"), chunk=64)
    np.testing.assert_array_equal(exact[:, 0], np.arange(len(teacher)))
    np.testing.assert_array_equal(exact[:, 1:], neighbours)

    config = recipe(training_inputs, tmp_path, *DISTILL, "stages.0.steps=3", "distill.contrast_weight=0.5",
                    "distill.contrast_bank=32", "distill.contrast_hard=2", "distill.contrast_same=0.9")
    tokenizer, data, model = prepare_run(config)
    trainer = Trainer(config, data, tokenizer, model)
    sampler = trainer.samplers["distill"]
    batch = sampler.batch(step_rng(1, 0, 0, 0), 4)
    picks = sampler.draw(step_rng(1, 0, 0, 0), 4)
    hard = sampler.neighbours[[data.bitext[0].teacher_rows[i] for _, i in picks]].reshape(-1)
    np.testing.assert_array_equal(batch["bank"][:8].numpy(), data.teacher[hard])  # then 24 random rows
    near = torch.from_numpy(data.teacher[[data.bitext[0].teacher_rows[i] for _, i in picks]]) @ batch["bank"].T
    assert torch.equal(batch["bank_same_text"] | (near < 0.9), torch.ones_like(near, dtype=torch.bool))
    trainer.run(fit_output=True)
    assert np.isfinite(trainer.history[-1]["contrast_loss"])


@pytest.mark.parametrize("override, message", [
    (["distill.contrast_weight=-1"], "distill.contrast_weight must be >= 0"),
    (["distill.contrast_same=0"], r"distill.contrast_same in \(0, 1\]"),
    (["distill.contrast_bank=0"], "contrast_bank and contrast_scale positive"),
    (["distill.monolingual=[de]", "distill.teacher_side=source"], "needs distill.teacher_side: target"),
    (["distill.monolingual=[../x]"], "is not a language code")])
def test_monolingual_and_contrast_settings_are_checked(training_inputs, tmp_path, override, message):
    from miner.config import ConfigError

    with pytest.raises(ConfigError, match=message):
        recipe(training_inputs, tmp_path, *DISTILL, *override)


def test_stacking_grows_a_trained_student_with_near_identity_layers_on_top(training_inputs, tmp_path):
    """model.stack_to: the trained layers stay, the new ones on top copy trained layer i mod n with zero output
    projections and the top layer's output LayerNorm, so the deeper encoder computes nearly what the shallow one
    did; they then train, and the exported encoder has the new depth."""
    from encoders import load_encoder
    from training.model import load_encoder_for_training

    config = recipe(training_inputs, tmp_path, *DISTILL, "stages.0.steps=2")
    tokenizer, data, model = prepare_run(config)
    folder = Trainer(config, data, tokenizer, model).run(fit_output=True)
    deeper = recipe(training_inputs, tmp_path / "deeper", *DISTILL, f"model.init={folder}", "model.stack_to=5",
                    "stages.0.steps=3")
    shallow = load_encoder_for_training(str(folder), config.model).eval()
    grown = load_encoder_for_training(str(folder), deeper.model).eval()
    assert len(grown.encoder.layer) == 5 and grown.config.num_hidden_layers == 5 and grown.stacked_from == 2
    top_norm = shallow.encoder.layer[1].output.LayerNorm
    for i, layer in enumerate(grown.encoder.layer[2:]):
        torch.testing.assert_close(layer.attention.self.query.weight, shallow.encoder.layer[i % 2].attention.self.query.weight)
        assert not layer.output.dense.weight.any() and not layer.attention.output.dense.weight.any()
        torch.testing.assert_close(layer.attention.output.LayerNorm.weight, top_norm.weight)
    ids = torch.tensor([[2, 40, 41, 42, 3]])
    with torch.no_grad():
        before, after = (m(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state for m in (shallow, grown))
    assert torch.nn.functional.cosine_similarity(before, after, dim=-1).min() > 0.99
    tokenizer, data, model = prepare_run(deeper)
    assert model.output_is_new  # refitted to the teacher before the first step
    exported = Trainer(deeper, data, tokenizer, model).run(fit_output=True)
    assert json.loads((exported / "config.json").read_text())["num_hidden_layers"] == 5
    assert load_encoder(str(exported)).encode(["Das Haus ist rot."]).shape == (1, 64)
    with pytest.raises(ValueError, match="fewer than the 2 layers"):
        load_encoder_for_training(str(folder), recipe(training_inputs, tmp_path / "x", *DISTILL,
                                                      f"model.init={folder}", "model.stack_to=1").model)


def test_widening_keeps_what_a_trained_student_computes_and_trains_the_new_units(training_inputs, tmp_path):
    """model.widen_ffn_to: every feed-forward block gets new units whose output weights start at zero, so the wider
    encoder computes exactly what the narrow one did; a step then moves the new units' output weights, and the
    exported encoder has the new width."""
    from encoders import load_encoder
    from training.model import load_encoder_for_training

    config = recipe(training_inputs, tmp_path, *DISTILL, "stages.0.steps=2")
    tokenizer, data, model = prepare_run(config)
    folder = Trainer(config, data, tokenizer, model).run(fit_output=True)
    narrow_units = json.loads((folder / "config.json").read_text())["intermediate_size"]
    wider = recipe(training_inputs, tmp_path / "wider", *DISTILL, f"model.init={folder}",
                   f"model.widen_ffn_to={2 * narrow_units}", "stages.0.steps=2")
    narrow = load_encoder_for_training(str(folder), config.model).eval()
    grown = load_encoder_for_training(str(folder), wider.model).eval()
    assert grown.config.intermediate_size == 2 * narrow_units
    for old, new in zip(narrow.encoder.layer, grown.encoder.layer):
        torch.testing.assert_close(new.intermediate.dense.weight[:narrow_units], old.intermediate.dense.weight)
        assert new.intermediate.dense.weight[narrow_units:].std() > 0  # new units see the input ...
        assert not new.output.dense.weight[:, narrow_units:].any()  # ... and add nothing yet
    ids = torch.tensor([[2, 40, 41, 42, 3]])
    with torch.no_grad():
        before, after = (m(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
                         for m in (narrow, grown))
    torch.testing.assert_close(after, before)
    tokenizer, data, model = prepare_run(wider)
    assert not model.output_is_new  # the pooled vectors did not move: the output layer is kept as trained
    exported = Trainer(wider, data, tokenizer, model).run(fit_output=True)
    assert json.loads((exported / "config.json").read_text())["intermediate_size"] == 2 * narrow_units
    trained = load_encoder_for_training(str(exported), wider.model)
    assert trained.encoder.layer[0].output.dense.weight[:, narrow_units:].any()
    assert load_encoder(str(exported)).encode(["Das Haus ist rot."]).shape == (1, 64)
    with pytest.raises(ValueError, match="fewer than model.init's"):
        load_encoder_for_training(str(folder), recipe(training_inputs, tmp_path / "x", *DISTILL,
                                                      f"model.init={folder}", "model.widen_ffn_to=8").model)
