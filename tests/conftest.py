"""Shared test settings: where ../shared lives, and deterministic hypothesis runs."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CMLM_SHARED", REPO.parent / "shared"))

# derandomize: the same examples on every run, so CI results are reproducible.
settings.register_profile("repo", deadline=None, derandomize=True, max_examples=60)
# A longer random search, for the property tests of readers: pytest --hypothesis-profile long tests/test_warc_fuzz.py
settings.register_profile("long", deadline=None, max_examples=5000)
settings.load_profile("repo")


@pytest.fixture
def shared_data() -> Path:
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"{path} is absent: tests on the shared real data need ../shared beside the checkout "
                    "(or CMLM_SHARED pointing at it)")
    return path


def sample_sentences() -> dict[str, list[str]]:
    """German and English sentences of the bundled example (written by the project), by language."""
    texts = {}
    for lang in ("de", "en"):
        lines = (REPO / "sample" / "bucc" / f"de-en.training.{lang}").read_text(encoding="utf-8").splitlines()
        texts[lang] = [line.split("\t", 1)[1] for line in lines]
    return texts


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory):
    """A WordPiece vocabulary trained on the bundled example: small, real, and built in seconds."""
    from encoders.tokenizer import smoothed_corpus, train_wordpiece

    tokenizer = train_wordpiece(smoothed_corpus(sample_sentences(), 2000, 0.3, seed=0), vocab_size=600)
    folder = tmp_path_factory.mktemp("tokenizer")
    tokenizer.save_pretrained(folder)
    return tokenizer


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory, tiny_tokenizer) -> Path:
    """One of our checkpoints: a 2-layer, 64-wide BERT with random weights, saved as a real folder."""
    from encoders.model import bert_config, new_encoder_model, save_encoder

    model = new_encoder_model(bert_config(len(tiny_tokenizer), hidden=64, layers=2, max_positions=64), seed=3)
    return save_encoder(model, tiny_tokenizer, tmp_path_factory.mktemp("encoder") / "tiny", max_seq_length=32)


def encoded_on_one_and_on_several_threads(encoder, sentences):
    """(vectors on one torch thread, vectors on two or more): a Dask worker runs one thread, the DirectRunner's
    process as many as cores, and a job's bytes must not follow its runner."""
    import torch

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = encoder.encode(sentences)
        torch.set_num_threads(max(2, threads))
        return one, encoder.encode(sentences)
    finally:
        torch.set_num_threads(threads)


def sample_gold_pairs(split: str = "training") -> list[tuple[str, str]]:
    """The bundled example's known German-English translations (its gold), as text pairs."""
    def rows(lang):
        lines = (REPO / "sample" / "bucc" / f"de-en.{split}.{lang}").read_text(encoding="utf-8").splitlines()
        return dict(line.split("\t", 1) for line in lines)

    de, en = rows("de"), rows("en")
    gold = (REPO / "sample" / "bucc" / f"de-en.{split}.gold").read_text(encoding="utf-8").split()
    return [(de[a], en[b]) for a, b in zip(gold[0::2], gold[1::2])]


@pytest.fixture
def training_inputs(tmp_path, tiny_tokenizer) -> Path:
    """A tiny training set in the formats training/ reads: documents (3 sentences each), bitext, a recipe."""
    tiny_tokenizer.save_pretrained(tmp_path / "tokenizer")
    for lang, lines in sample_sentences().items():
        docs = ["\n".join(lines[i:i + 3]) for i in range(0, len(lines), 3)]
        (tmp_path / f"{lang}.txt").write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    pairs = sample_gold_pairs("training") + sample_gold_pairs("test")
    (tmp_path / "de-en.tsv").write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
    (tmp_path / "recipe.yaml").write_text(TINY_RECIPE, encoding="utf-8")
    return tmp_path


TINY_RECIPE = """\
output: run
seed: 1
model: {tokenizer: tokenizer, hidden: 64, layers: 2, heads: 2, intermediate: 128, max_seq_length: 32,
        projection_vectors: 4, dropout: 0.0}
data:
  documents: [de.txt, en.txt]
  bitext: [de-en.tsv]
  heldout: [de-en.tsv]
cmlm: {batch_size: 8}
br: {batch_size: 16}
optimizer: {lr: 2e-3, warmup_steps: 5}
stages:
  - {name: cmlm, objectives: [cmlm], steps: 6}
  - {name: cmlm+br, objectives: [cmlm, br], steps: 24}
run: {log_every: 3, eval_every: 0, checkpoint_every: 8, precision: fp32, save_dtype: float32}
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def gcs_emulator():
    """A real GCS server (gcp-storage-emulator) on loopback, for the session; yields its URL.

    google-cloud-storage, which Beam's gs:// filesystem uses, talks to it when STORAGE_EMULATOR_HOST is set.
    """
    import shutil
    import subprocess
    import sys
    import time
    import urllib.request

    executable = shutil.which("gcp-storage-emulator") or str(Path(sys.executable).parent / "gcp-storage-emulator")
    if not Path(executable).exists():
        pytest.fail("gcp-storage-emulator is not installed: pip install -e '.[test]'")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([executable, "start", "--host=127.0.0.1", f"--port={port}", "--in-memory"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/storage/v1/b", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail(f"gcp-storage-emulator did not answer on {url}")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def gcs_bucket(gcs_emulator, monkeypatch):
    """A fresh bucket on the emulator; yields gs://<bucket>."""
    import uuid

    from google.cloud import storage

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator)
    client = storage.Client.create_anonymous_client()
    client.project = "cmlm-test"
    bucket = client.create_bucket(f"cmlm-{uuid.uuid4().hex[:12]}")
    yield f"gs://{bucket.name}"


@pytest.fixture
def dask_clusters_closed():
    """Each Dask test starts its own LocalCluster and closes it after: idle workers would otherwise heartbeat
    through the rest of the suite on CI's two cores, and a cluster one test left damaged would reach the next."""
    pytest.importorskip("dask.distributed", reason="the dask extra is not installed (pip install -e '.[dask]')")
    from pipelines.dask_runner import close_clients

    close_clients()
    yield
    close_clients()


@pytest.fixture
def unrun_pipeline():
    """`beam.Pipeline(...)` for a test that builds a pipeline and inspects it without running it: Beam makes a
    temporary folder for each pipeline and removes it only in `run`."""
    import shutil

    import apache_beam as beam

    made = []

    def make(*args, **kwargs):
        made.append(beam.Pipeline(*args, **kwargs))
        return made[-1]

    yield make
    for pipeline in made:
        shutil.rmtree(pipeline.local_tempdir, ignore_errors=True)
