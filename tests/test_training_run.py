"""End-to-end training of a tiny model on the bundled example's translations: it learns, it resumes exactly,
and what it exports is an encoder the rest of the project loads."""

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from training.config import load_recipe
from training.train import main, prepare_run
from training.trainer import Trainer


def recipe(inputs, tmp_path, *overrides):
    return load_recipe(inputs / "recipe.yaml", [f"output={tmp_path / 'run'}", *overrides])


def train(config, resume=None):
    tokenizer, data, model = prepare_run(config)
    trainer = Trainer(config, data, tokenizer, model)
    return trainer, trainer.run(resume)


def test_br_loss_falls_and_xsim_improves(training_inputs, tmp_path):
    config = recipe(training_inputs, tmp_path, "stages=[{name: br, objectives: [br], steps: 40}]",
                    "run.log_every=5")
    tokenizer, data, model = prepare_run(config)
    trainer = Trainer(config, data, tokenizer, model)
    before = trainer.evaluate()["xsim_error/mean"]
    trainer.run()
    after = trainer.evaluate()["xsim_error/mean"]
    losses = [line["br_loss"] for line in trainer.history if "br_loss" in line]
    assert losses[-1] < 0.5 * losses[0]
    assert after < before - 0.3  # 42 pairs: from mostly wrong to mostly right
    assert trainer.history[-1]["br_accuracy"] > 0.8


def test_cmlm_loss_falls(training_inputs, tmp_path):
    trainer, _ = train(recipe(training_inputs, tmp_path, "stages=[{name: c, objectives: [cmlm], steps: 30}]",
                              "run.log_every=5"))
    losses = [line["cmlm_loss"] for line in trainer.history]
    assert losses[-1] < losses[0] - 0.3  # from uniform over the vocabulary (ln 600) towards its word statistics


def test_interrupted_and_resumed_run_ends_with_the_same_weights(training_inputs, tmp_path, monkeypatch):
    straight = recipe(training_inputs, tmp_path / "a")
    train(straight)

    interrupted = recipe(training_inputs, tmp_path / "b")
    original = Trainer._after_step

    def crash_after_step_21(self, position, *args):
        original(self, position, *args)
        if position.global_step == 21:
            raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "_after_step", crash_after_step_21)
    with pytest.raises(KeyboardInterrupt):
        train(interrupted)
    monkeypatch.setattr(Trainer, "_after_step", original)
    from training import checkpoints

    newest = checkpoints.latest(tmp_path / "b" / "run")
    assert newest.name == "step-00000014"  # stage 2, step 8: checkpoint_every 8
    train(interrupted, resume=newest)

    a = load_file(str(tmp_path / "a" / "run" / "encoder" / "model.safetensors"))
    b = load_file(str(tmp_path / "b" / "run" / "encoder" / "model.safetensors"))
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_a_time_limited_run_stops_exports_and_resumes_to_the_same_weights(training_inputs, tmp_path):
    from training import checkpoints

    straight = recipe(training_inputs, tmp_path / "a")
    train(straight)
    limited = recipe(training_inputs, tmp_path / "b", "run.time_limit_minutes=1e-9")   # out of time after a step
    trainer, folder = train(limited)
    assert trainer.stopped_early and (folder / "model.safetensors").exists()
    newest = checkpoints.latest(tmp_path / "b" / "run")
    assert checkpoints.read_state(newest)[0].global_step == 1
    train(recipe(training_inputs, tmp_path / "b"), resume=newest)

    a = load_file(str(tmp_path / "a" / "run" / "encoder" / "model.safetensors"))
    b = load_file(str(tmp_path / "b" / "run" / "encoder" / "model.safetensors"))
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    # the log holds each step once: the resumed run's lines follow the checkpoint's step, as the straight run's do
    logged = [[json.loads(line)["global_step"] for line in open(tmp_path / run / "run" / "train_log.jsonl")]
              for run in ("a", "b")]
    assert logged[1] == logged[0]


def test_a_fresh_run_starts_its_log_anew_and_a_resumed_one_after_its_checkpoint(training_inputs, tmp_path):
    """A run killed after its last checkpoint had logged steps the resumed run logs again; a run killed before
    any checkpoint left lines a fresh run appended to."""
    config = recipe(training_inputs, tmp_path)
    log = Path(config.output) / "train_log.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text('{"global_step": 400, "loss": 1.0}\n{"global_st')  # a dead run's, the last line half written
    train(config)
    steps = [json.loads(line)["global_step"] for line in log.read_text().splitlines()]
    assert steps == sorted(steps) and 400 not in steps


def test_exported_encoder_loads_and_embeds(training_inputs, tmp_path):
    from encoders import load_encoder

    _, folder = train(recipe(training_inputs, tmp_path, "stages.1.steps=4"))
    encoder = load_encoder(str(folder))
    vectors = encoder.encode(["Das Haus ist rot.", "The house is red."])
    assert vectors.shape == (2, 64)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    record = json.loads((folder / "training.json").read_text())
    assert record["data"]["bitext"] == {"deu_Latn-eng_Latn": 41} and record["recipe"]["seed"] == 1


def test_hard_negatives_and_lamb(training_inputs, tmp_path):
    trainer, folder = train(recipe(training_inputs, tmp_path, "br.hard_negatives=2", "br.hard_negative_pool=30",
                                   "br.hard_negative_refresh=5", "optimizer.name=lamb",
                                   "stages=[{name: br, objectives: [br], steps: 10}]", "run.log_every=5"))
    assert folder.exists()
    assert trainer.hard_negatives.negatives.shape[1] == 2
    batch = trainer.hard_negatives.batch(np.random.default_rng(0), 8)
    assert batch["tgt_ids"].shape[0] == 8 + 16 and batch["src_ids"].shape[0] == 8


def test_nli_stage(training_inputs, tmp_path):
    pairs = (training_inputs / "de-en.tsv").read_text().splitlines()
    lines = [f"{p.split(chr(9))[0]}\t{p.split(chr(9))[1]}\t{'entailment' if i % 2 else 'contradiction'}"
             for i, p in enumerate(pairs)]
    (training_inputs / "nli.tsv").write_text("\n".join(lines + ["kaputt"]) + "\n")
    trainer, _ = train(recipe(training_inputs, tmp_path, f"data.nli={training_inputs / 'nli.tsv'}",
                              "stages=[{name: nli, objectives: [nli], steps: 6}]", "run.log_every=3"))
    assert "nli_loss" in trainer.history[-1]


def test_cli_check_reports_data_and_refuses_a_second_run_into_the_same_output(training_inputs, tmp_path, capsys):
    args = ["--config", str(training_inputs / "recipe.yaml"), "--set", f"output={tmp_path / 'run'}"]
    assert main([*args, "--check"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bitext"] == {"deu_Latn-eng_Latn": 41} and report["steps"] == 30
    assert main([*args, "--set", "stages.1.steps=2"]) == 0
    assert main([*args, "--set", "stages.1.steps=2"]) == 2
    assert "pass --resume" in capsys.readouterr().err
    assert main([*args, "--set", "optimizer.lr=0.1", "--resume"]) == 2
    assert "the recipe changed" in capsys.readouterr().err
    assert main([*args, "--set", "model.layers=two"]) == 2
    assert "expected int" in capsys.readouterr().err


def test_export_writes_the_encoder_of_the_newest_checkpoint(training_inputs, tmp_path):
    import shutil

    from training.train import export_newest_checkpoint

    config = recipe(training_inputs, tmp_path, "stages.1.steps=4", "run.eval_every=2")
    _, folder = train(config)
    exported_at_end = load_file(str(folder / "model.safetensors"))
    evaluated_at_end = json.loads((folder / "training.json").read_text())["final"]
    shutil.rmtree(folder)
    assert main(["--config", str(training_inputs / "recipe.yaml"), "--set", f"output={tmp_path / 'run'}",
                 "--set", "stages.1.steps=4", "--set", "run.eval_every=2", "--export"]) == 0
    again = load_file(str(folder / "model.safetensors"))
    assert again.keys() == exported_at_end.keys()
    for name in again:
        np.testing.assert_array_equal(again[name], exported_at_end[name], err_msg=name)
    evaluated = json.loads((folder / "training.json").read_text())["final"]  # the logged held-out figures come along
    assert evaluated["exported_from"] == "step-00000010"
    assert "xsim_error/mean" in evaluated_at_end
    assert {k: v for k, v in evaluated.items() if k.startswith("xsim_error/")} == {
        k: v for k, v in evaluated_at_end.items() if k.startswith("xsim_error/")}
    with pytest.raises(ValueError, match="no checkpoint to export"):
        export_newest_checkpoint(recipe(training_inputs, tmp_path / "empty"))
    # another recipe would have recorded its data and seed beside these weights (or failed loading them)
    assert main(["--config", str(training_inputs / "recipe.yaml"), "--set", f"output={tmp_path / 'run'}",
                 "--set", "stages.1.steps=4", "--set", "seed=7", "--export"]) == 2


def test_a_non_finite_loss_stops_the_run_before_any_checkpoint_holds_it(training_inputs, tmp_path):
    """Losses stay on the device between log lines (no per-step wait for the GPU); a non-finite one is caught at the
    next log line or checkpoint, whichever comes first, naming the steps, and no checkpoint is written from it."""
    config = recipe(training_inputs, tmp_path, "stages=[{name: br, objectives: [br], steps: 12}]",
                    "run.log_every=10", "run.checkpoint_every=4")
    tokenizer, data, model = prepare_run(config)
    trainer = Trainer(config, data, tokenizer, model)
    forward, calls = model.forward, []

    def poisoned(*args, **kwargs):
        out = forward(*args, **kwargs)
        calls.append(1)
        return {**out, "loss": out["loss"] * float("nan")} if len(calls) == 6 else out

    model.forward = poisoned
    # step 6's loss is NaN (and so every loss after it): found at the step-8 checkpoint, in the window since the
    # last log line
    with pytest.raises(FloatingPointError, match=r"stage br steps 1-8: non-finite loss \(br_loss: 2 steps, loss: 3"):
        trainer.run()
    saved = sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir())
    assert saved == ["step-00000004"]


def test_ctrl_c_stops_after_the_step_under_way_with_a_checkpoint_and_the_encoder(training_inputs, tmp_path):
    """Ctrl-C used to end the run with a traceback and lose the steps since the last checkpoint."""
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO
    from training import checkpoints

    out = tmp_path / "run"
    run = subprocess.Popen([sys.executable, "-m", "training.train", "--config", str(training_inputs / "recipe.yaml"),
                            "--set", f"output={out}", "--set", "stages.1.steps=100000"], cwd=REPO,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    started = time.monotonic()
    while not (out / "train_log.jsonl").exists() and run.poll() is None and time.monotonic() - started < 300:
        time.sleep(0.1)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=300)
    assert run.returncode == 130, err[-2000:]
    assert f"interrupted: stopped after the step Ctrl-C came in: checkpoint saved, encoder exported to {out}" in err
    assert "Traceback" not in err
    position, _ = checkpoints.read_state(checkpoints.latest(out))
    assert 0 < position.global_step < 6 + 100000 and (out / "encoder" / "training.json").exists()


def test_a_starting_model_that_is_not_there_is_named_with_what_to_do(tmp_path, capsys):
    """A recipe starting from a model another recipe writes failed with transformers' hub-id complaint ("Repo id
    must be in the form ...") when that model was not trained yet."""
    recipe = tmp_path / "r.yaml"
    recipe.write_text("base: " + str(Path(__file__).resolve().parent.parent / "configs" / "train_nli.yaml") + "\n"
                      "model: {init: ../no-such-model/encoder}\n", encoding="utf-8")
    assert main(["--config", str(recipe), "--check"]) == 2
    err = capsys.readouterr().err
    assert "model.init" in err and "no-such-model/encoder: no such folder" in err and "Repo id" not in err
