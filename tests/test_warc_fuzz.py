"""The reader under arbitrary input, in the suite: hypothesis' bytes and splices, and the fuzzer's findings.

The long coverage-guided run is a command (`python -m tests.fuzz_warc`, atheris); here the same property
(`fuzz_warc.check`: no exception, sane pages, bounded work) runs on hypothesis' inputs, and the splice test pins
the promise that matters most: a good record whose bytes are intact is kept, whatever broken bytes surround it.
"""

from __future__ import annotations

import gzip
import io

from hypothesis import given
from hypothesis import strategies as st

from pipelines.text.records import Tally
from pipelines.text.warc import iter_pages
from tests.fuzz_warc import check, seeds
from tests.warc_files import GERMAN, html_page, page_record, record

SEEDS = seeds()


@given(st.binary(max_size=4096))
def test_arbitrary_bytes(data):
    check(data)


@given(st.sampled_from(sorted(SEEDS)), st.lists(st.tuples(st.integers(0, 10**6), st.binary(max_size=24)),
                                                 min_size=1, max_size=6))
def test_seed_files_with_bytes_replaced(name, edits):
    data = bytearray(SEEDS[name])
    for at, new in edits:
        at %= len(data)
        data[at:at + len(new)] = new
    check(bytes(data))


# --- splices ----------------------------------------------------------------------------------------------------

def good_record(n: int) -> bytes:
    return page_record(f"http://good.example/{n}", html_page(f"Seite {n}", f"{GERMAN} Nummer {n}.").encode())


BAD_HTML = html_page("Kaputt", GERMAN * 6).encode()
BAD = st.one_of(
    st.tuples(st.just("junk"), st.binary(max_size=400)),
    st.tuples(st.just("length"), st.integers(-600, 600).filter(bool)),
    st.tuples(st.just("cut"), st.integers(1, 10**6)),
    st.tuples(st.just("header"), st.integers(0, 10**6), st.binary(min_size=1, max_size=30)),
    st.tuples(st.just("huge"), st.sampled_from([2**62, 2**31, 6 * 2**20])),
)


def bad_piece(kind: tuple, n: int) -> bytes:
    url = f"http://bad.example/{n}"
    if kind[0] == "junk":
        return kind[1]
    if kind[0] == "length":
        return page_record(url, BAD_HTML, length_error=kind[1])
    whole = page_record(url, BAD_HTML)
    if kind[0] == "cut":
        return whole[:kind[1] % len(whole)]
    if kind[0] == "header":
        header_end = whole.index(b"\r\n\r\n")
        at = kind[1] % header_end
        return whole[:at] + kind[2] + whole[at + len(kind[2]):]
    return record(url, BAD_HTML, kind[1])


@given(st.lists(st.tuples(st.one_of(st.none(), BAD), st.booleans()), min_size=1, max_size=8),
       st.sampled_from(["plain", "gzip", "mixed"]))
def test_every_intact_good_record_is_kept(pieces, layout):
    """Good records (None) and broken pieces in any order, each a gzip member or plain (as `layout` says)."""
    parts, good = [], []
    for n, (kind, gzipped) in enumerate(pieces):
        data = good_record(n) if kind is None else bad_piece(kind, n)
        if kind is None:
            good.append(f"http://good.example/{n}")
        if {"plain": False, "gzip": True}.get(layout, gzipped):
            if kind is not None and kind[0] == "cut":       # a gzip member cut short
                member = gzip.compress(page_record(f"http://bad.example/{n}", BAD_HTML))
                data = member[:kind[1] % len(member)]
            else:
                data = gzip.compress(data)
        parts.append(data)
    tally = Tally(log_skips=False)
    pages = list(iter_pages(io.BytesIO(b"".join(parts)), "splice", tally))
    assert [p.url for p in pages if p.url.startswith("http://good.")] == good
    assert len(pages) - len(good) <= sum(kind is not None for kind, _ in pieces)


def test_a_short_coverage_guided_run_finds_nothing(tmp_path):
    """A few thousand atheris inputs from our seeds (the long run is `python -m tests.fuzz_warc`)."""
    import os
    import subprocess
    import sys

    import pytest

    pytest.importorskip("atheris", reason="atheris has wheels for Linux x86_64 only (the test extra installs it there)")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, data in SEEDS.items():
        (corpus / name).write_bytes(data)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": repo}
    # libFuzzer's memory limit reads the process's peak RSS, which Linux carries from this process over fork and
    # exec: after the rest of the suite (2.2 GB in one run) the child would start "out of memory". Its own budget is
    # libFuzzer's default 2 GB on top of what it inherits.
    import resource

    inherited_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    run = subprocess.run([sys.executable, "-m", "tests.fuzz_warc", "-runs=3000", "-seed=1",
                          f"-rss_limit_mb={inherited_mb + 2048}", str(corpus)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Done 3000 runs" in run.stderr
