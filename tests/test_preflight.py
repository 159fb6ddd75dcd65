"""`python -m pipelines.mine` refuses bad settings and missing inputs before its first stage, naming them."""

import shutil

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.mine import main
from pipelines.options import MineOptions
from tests.conftest import REPO


@pytest.mark.parametrize("argv", [
    ["--runner", "DaskRunner", "--dask_client_address", "tcp://127.0.0.1:1", "--dask_npartitions", "2",
     "--dask_workers", "2", "--dask_shuffle_partitions", "4"],  # Beam's DaskOptions and ours
    ["--runner", "PortableRunner", "--job_endpoint", "embed", "--environment_type", "LOOPBACK"],
    ["--runner", "FlinkRunner", "--flink_master", "localhost:8081"],  # registered by the runner's module
    ["--direct_num_workers", "1", "--temp_location", "/tmp", "--setup_file", "./setup.py"],
])
def test_the_runners_own_options_are_known(tmp_path, capsys, argv):
    pytest.importorskip("dask.distributed", reason="the dask extra is not installed (pip install -e '.[dask]')")
    assert main(["--output", str(tmp_path / "out"), "--plan", *argv]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--input", "/nonexistent/crawl/*.warc.gz"], "input '/nonexistent/crawl/*.warc.gz': no file matches it"),
    (["--input", "/nonexistent/one.warc.gz"], "input '/nonexistent/one.warc.gz': no file matches it"),
    (["--set", "mining.threshold=abc"], "mining.threshold must be a number, got 'abc'"),
    (["--set", "mining.treshold=1.1"], "unknown mining setting(s) treshold"),
    (["--set", "pair_filter.lenght_ratio=2"], "unknown pair_filter setting(s) lenght_ratio"),
    (["--encoder", "no/such/folder/here"], "encoder 'no/such/folder/here': no such folder"),
    (["--set", "lid.model=/nonexistent/lid.bin"], "lid.model '/nonexistent/lid.bin': no such file"),
    (["--direct_num_workers", "2", "--direct_running_mode", "multi_processing"],
     "multi-process DirectRunner loses part of a stage's output"),
    (["--stages", "extrakt"], "--stages: unknown stage(s) extrakt; choose from extract, embed, pairs"),
    # each of these ran: a ZeroDivisionError inside Beam after extraction, every record skipped as too large
    (["--set", "shards.sentences=0"], "shards.sentences must be a whole number 1 or more, got 0"),
    (["--set", "read.max_payload_bytes=0"], "read.max_payload_bytes must be a whole number 1 or more, got 0"),
    (["--set", "extract.time_limit_s=-1"], "extract.time_limit_s must be a number 0 or more, got -1"),
    (["--set", "extract.max_html_chars=1.5"], "extract.max_html_chars must be a whole number 1 or more, got 1.5"),
    # and these failed only once the embed stage loaded the encoder, after the extract stage had run
    (["--set", "encoder_options.token_budget=0"], "encoder_options.token_budget must be a whole number 1 or more"),
    (["--set", "encoder_options.precision=bf17"], "encoder_options.precision must be one of auto, fp32, bf16"),
    (["--set", "encoder_options.max_seq_length=64"], "does not take max_seq_length (it takes device, precision"),
    (["--set", "encoder_options.pooler=mean"], "encoder_options: unknown option(s) pooler"),
    # languages that make no pair: the run mined nothing, without a word
    (["--set", "languages=[deu_Latn, fra_Latn]"], "pairs: pivot, but the pivot eng_Latn is not among languages"),
    (["--set", "languages=[eng_Latn]"], "languages [eng_Latn] make no pair to mine"),
    (["--set", "languages=[deu_Latn]", "--set", "pairs=all"], "languages [deu_Latn] make no pair to mine"),
    (["--stages", " , "], "--stages: no stage given"),  # it ran nothing and wrote a report of nothing
    (["--input", ""], "--input is empty"),  # `--input "$CRAWL"` with CRAWL unset mined the config's input
    (["--set", "output="], "--set output=: output is empty"),  # a TypeError; `output=''` planned a run into the cwd
    # the plan said the extract stage would run; the run then stopped at the stage's construction
    (["--set", "lid.short_words=-1"], "lid.short_words: a whole number of words >= 0"),
    (["--set", "split={method: foo}"], "unknown sentence splitting method 'foo'"),
    (["--set", "lid.foo=1"], "lid: unknown setting(s) ['foo']"),
    # each of these was a traceback: a TypeError from the splitter, torch's device parser after extraction, and a
    # gold file read only once every stage had run
    (["--runner", "DirectRuner"], "--runner DirectRuner: no such runner (did you mean DirectRunner?)"),
    (["--runner", "DaskRunner", "--dask_workers", "0"], "--dask_workers must be 1 or more"),  # waited for workers
    (["--set", "split.bogus=1"], "split: unknown setting(s) ['bogus']"),
    (["--set", "split.max_chars=abc"], "split.max_chars: a whole number, not 'abc'"),
    (["--set", "encoder_options.device=tpu"], "encoder_options.device must be auto, cpu, cuda"),
    (["--set", "gold=/nonexistent/gold.tsv"], "gold /nonexistent/gold.tsv: cannot be read"),
    # Beam logged and dropped a flag it did not know: the run went to ./output, or ran on one worker
    (["--ouput", "elsewhere"], "unknown option(s): --ouput (did you mean --output?)"),
    (["--direct_num_worker", "2"], "--direct_num_worker (did you mean --direct_num_workers?)"),
    (["crawl.warc.gz"], "unexpected argument(s) 'crawl.warc.gz': every input is given by a flag"),
])
def test_bad_settings_fail_before_any_stage(tmp_path, capsys, argv, message):
    assert main(["--output", str(tmp_path / "out"), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing ran
    assert main(["--output", str(tmp_path / "out"), "--plan", *argv]) == 2  # the plan refuses what the run would
    assert message in capsys.readouterr().err


def test_a_lid_model_file_that_fasttext_cannot_read_fails_before_any_stage(tmp_path, capsys):
    # a file of another format (here the model's sidecar, JSON) failed in the extract stage's first worker. (A cut
    # copy of a model is caught here only mostly: fastText reads past a file's end without checking, and what it
    # then finds decides whether it fails, so no test is built on one.)
    from pipelines.text.langid import SHIPPED_MODEL

    foreign = tmp_path / "lid.ftz"
    foreign.write_bytes(SHIPPED_MODEL.with_name(SHIPPED_MODEL.name + ".json").read_bytes())
    assert main(["--output", str(tmp_path / "out"), "--set", f"lid.model={foreign}"]) == 2
    assert f"lid.model '{foreign}': {foreign}: not a fastText model" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_config_written_from_nothing_is_told_what_to_give(tmp_path, capsys):
    (tmp_path / "mine.yaml").write_text("")
    argv = ["--config", str(tmp_path / "mine.yaml"), "--output", str(tmp_path / "out"), "--plan"]
    assert main(argv) == 2
    assert "lid.model: a language identifier is needed: combined+experts" in capsys.readouterr().err
    assert main([*argv, "--set", "lid.model=combined+experts"]) == 2
    assert "no input: give --input" in capsys.readouterr().err
    sample = str(REPO / "sample" / "web" / "sample.warc.gz")
    assert main([*argv, "--set", "lid.model=combined+experts", "--input", sample]) == 2
    assert "no encoder: set `encoder` in the config or give --encoder" in capsys.readouterr().err


def test_an_input_that_is_a_folder_is_named_with_a_glob_to_give(tmp_path, capsys):
    # the extract stage opened it on its first worker and failed there, after the job had started
    (tmp_path / "crawl").mkdir()
    (tmp_path / "crawl" / "a.warc.gz").write_bytes(b"")
    assert main(["--output", str(tmp_path / "out"), "--input", str(tmp_path / "crawl")]) == 2
    crawl = tmp_path / "crawl"
    assert f"{crawl} is a folder; give a glob of the crawl files in it, such as '{crawl}/*.warc.gz'" in \
        capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_what_a_glob_names_but_beam_leaves_out_is_an_error_not_a_silent_loss(tmp_path, capsys):
    """Beam's match drops a link to nothing and a folder among the files a glob names: their pages were missing
    from the bitext with no word in the log."""
    crawl = tmp_path / "crawl"
    crawl.mkdir()
    shutil.copy(REPO / "sample" / "web" / "sample.warc.gz", crawl / "1.warc.gz")
    (crawl / "2.warc.gz").symlink_to(tmp_path / "gone.warc.gz")
    assert main(["--output", str(tmp_path / "out"), "--input", str(crawl / "*.warc.gz"), "--plan"]) == 2
    assert f"{crawl / '2.warc.gz'}: a link to {tmp_path / 'gone.warc.gz'}, which does not exist" in \
        capsys.readouterr().err
    (crawl / "2.warc.gz").unlink()
    (crawl / "sub").mkdir()
    assert main(["--output", str(tmp_path / "out"), "--input", str(crawl / "*"), "--plan"]) == 2
    assert f"{crawl / 'sub'} is a folder" in capsys.readouterr().err


def test_an_output_folder_nothing_can_be_written_in_is_named_before_any_stage(tmp_path, capsys):
    assert main(["--output", "/proc/cmlm-miner-out"]) == 2
    assert "--output /proc/cmlm-miner-out: nothing can be written in /proc" in capsys.readouterr().err


def test_a_folder_that_is_no_checkpoint_is_named(tmp_path, capsys):
    (tmp_path / "model").mkdir()
    assert main(["--output", str(tmp_path / "out"), "--encoder", str(tmp_path / "model")]) == 2
    assert "config.json" in capsys.readouterr().err


def test_the_configs_gold_file_applies_only_to_the_configs_input(tmp_path):
    own = MineOptions(["--input", str(tmp_path / "*.warc.gz")]).settings()
    assert "gold" not in own
    assert MineOptions([]).settings()["gold"].endswith("pairs.tsv")
    named = MineOptions(["--input", str(tmp_path / "*.warc.gz"), "--set", f"gold={tmp_path / 'g.tsv'}"]).settings()
    assert named["gold"].endswith("g.tsv")


def test_a_language_in_another_form_is_refused_with_the_name_it_likely_means(tmp_path, capsys):
    assert main(["--output", str(tmp_path / "out"), "--set", "languages=[ger_Latn, eng_Latn]"]) == 2
    assert "languages: 'ger_Latn' is not a language as sentences are labelled" in (err := capsys.readouterr().err)
    assert "did you mean deu_Latn?" in err


def test_language_settings_that_name_files_are_checked(tmp_path, capsys):
    assert main(["--output", str(tmp_path / "out"), "--set", "languages=[deu_Latn, ../etc]"]) == 2
    assert "languages: '../etc' is not a language code" in capsys.readouterr().err


@pytest.mark.parametrize("setting, named", [("languages=[deu_Latn, de]", "languages: 'de'"),
                                            ("languages=[xx_Yyyy]", "languages: 'xx_Yyyy'"),
                                            ("languages=[DEU_Latn]", "languages: 'DEU_Latn'"),
                                            ("languages=[deu_Latm]", "languages: 'deu_Latm'"),
                                            ("pivot=eng", "pivot 'eng'")])
def test_languages_in_another_form_than_the_identifiers_labels_are_errors(tmp_path, capsys, setting, named):
    # a run that lists `de` would find no sentence labelled so and mine nothing in it, without a word
    assert main(["--output", str(tmp_path / "out"), "--set", setting]) == 2
    assert f"{named} is not a language as sentences are labelled" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("setting, meant", [("languages=[de-DE, eng_Latn]", "deu_Latn"),
                                           ("languages=[zh-Hant, eng_Latn]", "zho_Hant"),
                                           ("languages=[zh-TW, eng_Latn]", "zho_Hant"),
                                           ("languages=[pt-BR, eng_Latn]", "por_Latn"),
                                           ("languages=[sr-Latn, eng_Latn]", "srp_Latn"),
                                           ("languages=[deu-Latn, eng_Latn]", "deu_Latn"),
                                           ("pivot=en-US", "eng_Latn")])
def test_bcp_47_forms_are_refused_with_the_name_sentences_are_labelled_with(tmp_path, capsys, setting, meant):
    # check_code's "such as deu_Latn or de" sent the user to `de`, which is refused in turn
    assert main(["--output", str(tmp_path / "out"), "--set", setting]) == 2
    err = capsys.readouterr().err
    assert "is not a language as sentences are labelled" in err and f"did you mean {meant}?" in err
    assert "or de" not in err


@pytest.mark.parametrize("code, meant", [("cmn_Hans", "zho_Hans"), ("nor_Latn", "nob_Latn"), ("ara_Arab", "arb_Arab"),
                                         ("msa_Latn", "zsm_Latn"), ("fas_Arab", "pes_Arab"), ("ekk_Latn", "est_Latn"),
                                         ("lav_Latn", "lvs_Latn"), ("swa_Latn", "swh_Latn"),
                                         ("zho_Hani", "zho_Hans or zho_Hant")])
def test_registered_codes_the_identifier_never_labels_with_are_refused_before_the_run(tmp_path, capsys, code,
                                                                                      meant):
    # --plan looked normal, and the run mined nothing in the language (rc 0): "no sentences in cmn_Hans"
    for setting in (f"languages=[{code}, eng_Latn]", f"pivot={code}"):
        assert main(["--output", str(tmp_path / "out"), "--set", setting, "--plan"]) == 2
        err = capsys.readouterr().err
        assert f"{code!r} is not a language as sentences are labelled" in err and f"did you mean {meant}?" in err
    assert not (tmp_path / "out").exists()


def test_every_language_the_shipped_identifier_labels_with_is_accepted():
    from pipelines.settings import check_language_name
    from pipelines.text.langid import load_identifier

    for code in load_identifier("combined+experts").languages:
        if not code.endswith("_*"):
            assert check_language_name(code, "languages:") == code


@pytest.mark.parametrize("setting, message", [
    ("languages=[no, eng_Latn]", "languages: False is not a language: YAML read a bare no or off as false; quote it "
                                 "('no'): Norwegian is nob_Latn"),
    ("pivot=no", "pivot must be a str, got False: YAML read a bare no or off as false; quote it ('no')"),
    ("languages=no", "languages must be a list, got False: YAML read a bare no or off as false; quote it ('no')"),
    ("lid.languages=[no, eng_Latn]", "lid.languages: False is not a language code: YAML read a bare no or off as "
                                     "false; quote it ('no')"),
])
def test_a_language_yaml_read_as_false_is_named_so(tmp_path, capsys, setting, message):
    # "languages: False is not a language code": Norwegian's `no`, read by YAML, named nowhere
    assert main(["--output", str(tmp_path / "out"), "--set", setting, "--plan"]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("stage", ["extract", "embed", "pairs"])
def test_each_stage_command_prints_its_own_help(capsys, stage):
    import importlib

    assert importlib.import_module(f"pipelines.{stage}").main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m pipelines.{stage}") and f"The {stage} stage" in out


def _pickled(path) -> None:
    import pickle

    path.write_bytes(pickle.dumps({"weight": [0.0]}))  # what torch.save writes: a pickle, never opened by the check


@pytest.mark.parametrize("model, replaced, pickled", [
    ("tiny", "model.safetensors", "pytorch_model.bin"),  # the transformer's weights
    ("tiny", "model.safetensors", "model.pt"),
    ("distilled", "2_Dense/model.safetensors", "2_Dense/pytorch_model.bin"),  # a Dense module's
])
def test_an_encoder_folder_with_pickled_weights_is_refused_naming_the_file(tmp_path, capsys, tiny_encoder_dir, model,
                                                                          replaced, pickled):
    from tests.conftest import REPO

    folder = tmp_path / "encoder"
    shutil.copytree(tiny_encoder_dir if model == "tiny" else REPO / "models" / "cmlm-distilled", folder)
    (folder / replaced).unlink()
    _pickled(folder / pickled)
    assert main(["--output", str(tmp_path / "out"), "--encoder", str(folder), "--stages", "embed"]) == 2
    err = capsys.readouterr().err
    assert f"{folder / pickled}: pickled weights" in err and "never unpickles" in err
    assert not (tmp_path / "out").exists()  # nothing ran


@pytest.mark.parametrize("model, replaced, pickled", [
    ("tiny", "model.safetensors", "pytorch_model.bin"),
    ("distilled", "2_Dense/model.safetensors", "2_Dense/pytorch_model.bin"),
])
def test_pickled_weights_beside_a_safetensors_file_no_loader_reads_are_refused(tmp_path, tiny_encoder_dir, model,
                                                                               replaced, pickled):
    """Any *.safetensors beside a pickle let the pickle through; loaders read model.safetensors, then the pickle."""
    from pipelines import preflight
    from tests.conftest import REPO

    folder = tmp_path / "encoder"
    shutil.copytree(tiny_encoder_dir if model == "tiny" else REPO / "models" / "cmlm-distilled", folder)
    (folder / replaced).rename(folder / replaced.replace("model.safetensors", "unrelated.safetensors"))
    _pickled(folder / pickled)
    with pytest.raises(ValueError, match=f"{folder / pickled}: pickled weights"):
        preflight.check_no_pickled_weights(str(folder))


def test_pickles_beside_safetensors_weights_are_left_alone(tmp_path, tiny_encoder_dir):
    from pipelines import preflight

    folder = tmp_path / "encoder"
    shutil.copytree(tiny_encoder_dir, folder)
    _pickled(folder / "training_args.bin")  # e.g. what transformers' Trainer saves: never loaded, safetensors are
    preflight.check_encoder(str(folder))


@pytest.mark.parametrize("setting, message", [
    ("embed.batch_size=0", "embed.batch_size must be a positive whole number of sentences, got 0"),
    ("embed.batch_size=2.5", "embed.batch_size must be a positive whole number of sentences, got 2.5"),
    ("embed.batch_size=true", "embed.batch_size must be a positive whole number of sentences, got True"),
    ("embed.share_model=maybe", "embed.share_model must be auto, true or false, got 'maybe'"),
    ("embed.dtype=int8", "embed.dtype must be float16, float32 or binary, got 'int8'")])
def test_bad_embed_settings_are_errors_before_any_stage(tmp_path, capsys, setting, message):
    # a batch of 0 rows used to end the embed stage inside Beam, after the extract stage had run
    assert main(["--output", str(tmp_path / "out"), "--set", setting]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_dask_runner_without_dask_is_an_error_naming_the_extra(tmp_path, capsys, monkeypatch):
    # a base install has no dask: the command says which extra to install, with exit status 2 and no traceback
    import sys

    for module in ("dask", "dask.distributed", "distributed", "apache_beam.runners.dask.dask_runner"):
        monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError
    assert main(["--output", str(tmp_path / "out"), "--runner", "DaskRunner"]) == 2
    err = capsys.readouterr().err
    assert "error: --runner DaskRunner needs dask's distributed scheduler: pip install -e '.[dask]'" in err
    assert "Traceback" not in err


def test_the_dataflow_runner_without_beams_gcp_extra_is_named_at_once(tmp_path, capsys, monkeypatch):
    # without it the job listed its gs:// input anonymously, retrying for two minutes where there is no network
    import sys

    monkeypatch.setitem(sys.modules, "apache_beam.runners.dataflow.internal.apiclient", None)
    assert main(["--output", "gs://b/out", "--input", "gs://b/crawl/*.warc.gz", "--runner", "DataflowRunner",
                 "--project", "p", "--region", "r", "--temp_location", "gs://b/tmp"]) == 2
    assert "error: --runner DataflowRunner needs Beam's GCP extra" in capsys.readouterr().err


@pytest.mark.parametrize("setting, asked", [("encoder_options.device=cuda", "encoder_options.device: cuda"),
                                            ("knn.gpu=true", "knn.gpu: true")])
def test_a_gpu_asked_for_where_the_local_workers_have_none_is_named_before_any_stage(tmp_path, capsys, setting,
                                                                                     asked):
    # the embed or pairs stage stopped there, after the stages before it had run
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the setting is valid here")
    assert main(["--output", str(tmp_path / "out"), "--set", setting]) == 2
    assert f"{asked}, but torch sees no GPU on this machine" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    from pipelines.options import check_local_devices

    section, key = setting.split("=")[0].split(".")
    value = "cuda" if key == "device" else True
    for runner in ("DaskRunner", "DataflowRunner"):  # a cluster's workers have their own devices
        check_local_devices({section: {key: value}}, PipelineOptions([f"--runner={runner}"]))


def test_one_language_is_enough_for_a_command_that_mines_no_pair(tmp_path, capsys):
    # the extract stage alone may keep one language: only a run of the pairs stage needs two
    from pipelines.extract import main as extract

    assert extract(["--output", str(tmp_path / "out"), "--set", "languages=[deu_Latn]", "--quiet"]) == 0
    assert (tmp_path / "out" / "sentences" / "deu_Latn").is_dir()


def test_a_runner_named_in_another_case_is_the_runner_it_names(tmp_path, capsys):
    """Beam reads `directrunner` and `Direct` as the DirectRunner; this project's checks compared names and took
    them for a remote runner, refusing the local input."""
    for runner in ("directrunner", "Direct"):
        assert main(["--output", str(tmp_path / "out"), "--runner", runner, "--plan"]) == 0, capsys.readouterr().err
