"""The bundled example is exactly what sample/build_bucc_sample.py writes (no hand edits drift in)."""

import importlib.util

from miner import bucc
from tests.conftest import REPO


def test_committed_files_match_the_generator():
    spec = importlib.util.spec_from_file_location("build_bucc_sample", REPO / "sample" / "build_bucc_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, text in module.build().items():
        assert (REPO / "sample" / "bucc" / name).read_text(encoding="utf-8") == text, name


def test_both_splits_parse_with_their_gold():
    for split in ("training", "test"):
        corpus = bucc.load_corpus(REPO / "sample" / "bucc", "de-en", split)
        assert len(corpus.gold) == 21
        assert bucc.unify(corpus.src).n_ambiguous == 1
