"""Fuzz the WARC reader: any bytes in, pages and counted skips out; an exception is a finding.

    pip install -e .[fuzz]                                # atheris: coverage-guided, libFuzzer's engine
    python -m tests.fuzz_warc -max_total_time=300         # libFuzzer options; corpus output/fuzz-warc/, seeded here
    python -m tests.fuzz_warc crash-1234...               # replay files (a finding): the traceback, then exit 1

`check(data)` is the property (tests/test_warc_fuzz.py runs it over the findings and hypothesis' inputs in the
suite): reading never raises, every page has the fields the next stages read, and the work stays bounded:
bytes inflated are at most what each record read or skipped may cost, plus SKIP_RATIO per byte of the file where
a too-large block was skipped (in a gzip member it is inflated and dropped to reach the records after it, while it
inflates to at most SKIP_RATIO times its compressed size).
Seeds are written with the test builders (tests/warc_files.py): gzipped, plain, WET and one-member files with
the broken records the tests use. A finding goes into tests/test_warc_fuzz.py as a regression input.
"""

from __future__ import annotations

import gzip
import io
import sys
import tempfile
from pathlib import Path

from pipelines.text.records import Tally
from pipelines.text.warc import CHUNK, SKIP_RATIO, ReadLimits, iter_pages

LIMITS = ReadLimits(max_payload_bytes=1 << 15, max_header_bytes=1 << 11)    # small: bounds are reached quickly
CORPUS = Path("output/fuzz-warc")    # git ignores output/


def check(data: bytes) -> None:
    """Read `data` as a crawl file; AssertionError (or the reader's own exception) when the property fails."""
    tally = Tally(log_skips=False)
    pages = list(iter_pages(io.BytesIO(data), "fuzz", tally, LIMITS))
    counts = tally.of("read")
    for page in pages:
        assert isinstance(page.content, str) and page.content.strip() and "\x00" not in page.content
        assert page.url.lower().startswith(("http:", "https:")) and page.record_id
    records = sum(n for what, n in counts.items() if what == "records" or what.startswith("skipped:")) + 1
    per_record = 2 * (LIMITS.max_payload_bytes + LIMITS.max_header_bytes + CHUNK)
    dropped = len(data) * SKIP_RATIO if counts.get("skipped:too-large") else 0     # too-large blocks inflated
    assert counts["bytes"] <= len(data) + dropped + records * per_record, f"inflated {counts['bytes']} bytes, {counts}"


def seeds() -> dict[str, bytes]:
    """Small files of every kind the reader meets, good and broken."""
    from tests.warc_files import WarcBuilder, html_page, page_record, text_record, warc_header

    html = html_page("Seite", "Die Straße führt über die Brücke zum Marktplatz.").encode()
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, gzipped in (("crawl.warc.gz", True), ("crawl.warc", False)):
            with WarcBuilder(Path(folder) / name, gzipped) as b:
                b.response("http://a.example/", html)
                b.response("http://b.example/", gzip.compress(html), headers=(("Content-Encoding", "gzip"),))
                b.response("http://c.example/", html.decode().encode("cp1251", "replace"),
                           content_type="text/html; charset=windows-1251")
                b.raw(warc_header("http://bad.example/", 7) + b"HTTP/1.1 200 OK\r\n\r\n<p>cut</p>\r\n\r\n")
                b.conversion("http://wet.example/", "Ein Satz. Noch ein Satz.")
            out[name] = b.path.read_bytes()
    records = [page_record("http://d.example/", html), text_record("http://e.example/", "Text."),
               page_record("http://f.example/", html, length_error=-9)]
    out["one-member.warc.gz"] = gzip.compress(b"".join(records))
    out["mixed.warc"] = records[0] + gzip.compress(records[1]) + records[2]
    return out


def main(argv: list[str]) -> int:
    files = [arg for arg in argv[1:] if not arg.startswith("-") and Path(arg).is_file()]
    if files:       # replay findings without atheris
        for name in files:
            check(Path(name).read_bytes())
            print(f"{name}: ok")
        return 0
    try:
        import atheris
    except ImportError:
        print("fuzzing needs atheris: pip install -e .[fuzz] (Linux x86_64 wheels)", file=sys.stderr)
        return 2
    if not any(not arg.startswith("-") for arg in argv[1:]):    # no corpus folder given: ours, seeded
        CORPUS.mkdir(parents=True, exist_ok=True)
        for name, data in seeds().items():
            (CORPUS / name).write_bytes(data)
        argv = [*argv, str(CORPUS)]
    atheris.instrument_all()
    atheris.Setup(argv, check)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
