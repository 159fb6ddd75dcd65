"""Reading crawl files: good records always come out, and every bad one is a counted skip with its reason."""

from __future__ import annotations

import gzip
import random
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from miner.io import InputFormatError
from pipelines.text.records import Tally
from pipelines.text.warc import _BODY_MEMBERS, ReadLimits, read_pages
from tests.warc_files import (
    GERMAN,
    WarcBuilder,
    gzip_bomb,
    html_page,
    http_response,
    page_record,
    record,
    text_record,
    warc_header,
)

RUSSIAN = ("Москва является столицей России и крупнейшим городом страны. Здесь расположены многие музеи, "
           "театры и университеты, а также Кремль и Красная площадь.")


def good(builder: WarcBuilder, n: int) -> str:
    url = f"http://good.example/{n}"
    builder.response(url, html_page(f"Good page {n}", f"{GERMAN} Nummer {n}.").encode())
    return url


def read(path, limits: ReadLimits | None = None):
    tally = Tally(log_skips=False)
    return list(read_pages(str(path), tally, limits or ReadLimits())), tally.of("read")


def skips(counts: dict) -> dict:
    return {what.split(":", 1)[1]: n for what, n in counts.items() if what.startswith("skipped:")}


@pytest.mark.parametrize("gzipped", [True, False], ids=["gzip", "plain"])
def test_good_records_survive_the_bad_ones_around_them(tmp_path, gzipped):
    with WarcBuilder(tmp_path / ("mixed.warc.gz" if gzipped else "mixed.warc"), gzipped) as b:
        urls = [good(b, 0)]
        b.raw(b"WARX/9.9 this is no record header\r\nfoo: bar\r\n\r\nsome bytes\r\n\r\n")
        urls.append(good(b, 1))
        b.raw(warc_header("http://bad-length.example/", "twelve") + b"HTTP/1.1 200 OK\r\n\r\n<p>x</p>\r\n\r\n")
        urls.append(good(b, 2))
        b.response("http://pdf.example/a.pdf", b"%PDF-1.4 binary", content_type="application/pdf")
        b.response("http://missing.example/", html_page("Not found", "Gone.").encode(), status="404 Not Found")
        urls.append(good(b, 3))
        b.response("http://huge.example/", b"<html><body>" + b"<p>big page text</p>" * (30 * 2**20 // 20) + b"</body>")
        urls.append(good(b, 4))
        b.response("http://empty.example/", b"")
        b.response("http://blank.example/", b"  \r\n\t ")
        b.response("http://binary.example/", bytes(range(256)) * 40, content_type="text/html")
        b.raw(warc_header("http://bad-http.example/", 20) + b"garbage not http\r\n\r\n\r\n\r\n")
        urls.append(good(b, 5))
    pages, counts = read(b.path)
    assert [p.url for p in pages] == urls
    assert skips(counts) == {"malformed": 3, "not-html": 1, "not-200": 1, "too-large": 1, "empty": 2,
                             "undecodable": 1}
    assert all(GERMAN in p.content and p.charset == "utf_8" and p.content_type == "html" for p in pages)
    # positions count every record, the warcinfo and the bad ones included
    assert [p.position for p in pages] == [1, 3, 5, 8, 10, 15]
    assert counts["bytes"] < 2**20, "the 30 MB block must be skipped, not read"


def test_gzip_bombs_are_skipped_without_inflating_them(tmp_path):
    limits = ReadLimits(max_payload_bytes=256 * 2**10)
    with WarcBuilder(tmp_path / "bombs.warc.gz") as b:
        first = good(b, 0)
        # a record declaring 32 MiB of zeros, and one declaring 10 bytes followed by 32 MiB of zeros in its member
        b.raw_member(gzip_bomb("http://bomb.example/declared", 32 * 2**20, 32 * 2**20))
        second = good(b, 1)
        b.raw_member(gzip_bomb("http://bomb.example/hidden", 10, 32 * 2**20, record_type="metadata"))
        third = good(b, 2)
        # an HTTP body with Content-Encoding: gzip that inflates to 32 MiB
        body = zlib.compressobj(1, zlib.DEFLATED, 31)
        bomb_body = body.compress(bytes(32 * 2**20)) + body.flush()
        b.response("http://bomb.example/encoded", bomb_body, headers=(("Content-Encoding", "gzip"),))
        fourth = good(b, 3)
    pages, counts = read(b.path, limits)
    assert [p.url for p in pages] == [first, second, third, fourth]
    assert skips(counts) == {"too-large": 2, "malformed": 1}
    assert counts["bytes"] < 2**20, f"inflated {counts['bytes']} bytes for 4 small pages"


def test_truncated_gzip_keeps_every_record_before_the_break(tmp_path):
    with WarcBuilder(tmp_path / "whole.warc.gz") as b:
        urls = [good(b, n) for n in range(4)]
    data = b.path.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[:-300])        # inside the last record's member
    pages, counts = read(cut)
    assert [p.url for p in pages] == urls[:3]
    assert skips(counts) == {"truncated": 1}


def test_truncated_plain_record_is_one_skip(tmp_path):
    with WarcBuilder(tmp_path / "whole.warc", gzipped=False) as b:
        urls = [good(b, n) for n in range(3)]
    cut = tmp_path / "cut.warc"
    cut.write_bytes(b.path.read_bytes()[:-200])
    pages, counts = read(cut)
    assert [p.url for p in pages] == urls[:2]
    assert skips(counts) == {"truncated": 1}


def test_corrupt_gzip_member_is_skipped_and_reading_goes_on(tmp_path):
    with WarcBuilder(tmp_path / "corrupt.warc.gz") as b:
        first = good(b, 0)
        member = bytearray(gzip.compress(warc_header("http://corrupt.example/", 5000) + b"x" * 5000))
        member[40:60] = bytes(20)        # the deflate data, not the header
        b.raw_member(bytes(member))
        second = good(b, 1)
    pages, counts = read(b.path)
    assert [p.url for p in pages] == [first, second]
    assert set(skips(counts)) <= {"bad-gzip", "malformed"} and sum(skips(counts).values()) == 1


def test_charsets_declared_wrong_missing_or_broken(tmp_path):
    with WarcBuilder(tmp_path / "charsets.warc.gz") as b:
        # windows-1252 bytes declared as UTF-8
        b.response("http://cp1252.example/", html_page("Straße", GERMAN, charset="utf-8").encode("cp1252"))
        # windows-1251 Russian, declared nowhere
        b.response("http://cp1251.example/", html_page("Москва", RUSSIAN, charset=None).encode("cp1251"),
                   content_type="text/html")
        # UTF-8 with a few invalid bytes
        broken = html_page("Grüße", GERMAN * 3).encode().replace("Brücke".encode(), b"Br\xfccke", 1)
        b.response("http://broken.example/", broken)
        # declared in <meta> only, and a label Python does not know in the header
        b.response("http://meta.example/", html_page("Straße", GERMAN, charset="iso-8859-1").encode("cp1252"),
                   content_type="text/html; charset=windows-125")
    pages, counts = read(b.path)
    by_url = {p.url: p for p in pages}
    assert len(pages) == 4 and not skips(counts)
    assert GERMAN in by_url["http://cp1252.example/"].content
    assert by_url["http://cp1252.example/"].charset == "cp1252"
    assert RUSSIAN in by_url["http://cp1251.example/"].content
    assert by_url["http://cp1251.example/"].charset == "cp1251"
    assert "Br\ufffdcke" in by_url["http://broken.example/"].content and GERMAN in by_url["http://broken.example/"].content
    assert GERMAN in by_url["http://meta.example/"].content
    assert counts["charset:declared-wrong"] == 1
    assert counts["charset:detected"] == 2
    assert counts["charset:utf-8-repaired"] == 1
    assert counts["charset:declared"] == 1


def test_http_transfer_and_content_encodings(tmp_path):
    html = html_page("Encoded", GERMAN).encode()
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (html[:50], html[50:])) + b"0\r\n\r\n"
    with WarcBuilder(tmp_path / "encodings.warc.gz") as b:
        b.response("http://gzip.example/", gzip.compress(html), headers=(("Content-Encoding", "gzip"),))
        b.response("http://deflate.example/", zlib.compress(html), headers=(("Content-Encoding", "deflate"),))
        b.response("http://chunked.example/", chunked, headers=(("Transfer-Encoding", "chunked"),))
        b.response("http://brotli.example/", b"\x8b\x03\x80abc\x03", headers=(("Content-Encoding", "br"),))
        b.response("http://sniffed.example/", html, content_type=None)
    pages, counts = read(b.path)
    assert [p.url for p in pages] == ["http://gzip.example/", "http://deflate.example/", "http://chunked.example/",
                                      "http://sniffed.example/"]
    assert all(GERMAN in p.content for p in pages)
    assert skips(counts) == {"content-encoding": 1}


def test_wet_conversion_records_are_text_pages(tmp_path):
    with WarcBuilder(tmp_path / "sample.warc.wet.gz") as b:
        b.conversion("http://wet.example/de", f"{GERMAN}\n{GERMAN}")
        b.conversion("http://wet.example/empty", "")
        b.conversion("http://wet.example/ru", RUSSIAN)
    pages, counts = read(b.path)
    assert [(p.url, p.content_type) for p in pages] == [("http://wet.example/de", "text"), ("http://wet.example/ru", "text")]
    assert pages[1].content == RUSSIAN
    assert skips(counts) == {"empty": 1}
    assert counts["records:conversion"] == 3


def test_page_fields_come_from_the_warc_headers(tmp_path):
    with WarcBuilder(tmp_path / "fields.warc.gz") as b:
        url = good(b, 7)
    [page], _ = read(b.path)
    with gzip.open(b.path, "rb") as handle:
        record = next(r for r in ArchiveIterator(handle) if r.rec_type == "response")
    assert (page.url, page.record_id, page.date) == (url, record.rec_headers.get_header("WARC-Record-ID"),
                                                     record.rec_headers.get_header("WARC-Date"))
    assert page.source == str(b.path) and page.where == f"{b.path}#1"


@pytest.mark.parametrize("name, data", [
    ("notes.txt", b"just some text\n"),
    ("photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01" + bytes(range(256)) * 64 + b"\xff\xd9"),
    ("page.html", html_page("A page", GERMAN).encode()),
    ("page.html.gz", gzip.compress(html_page("A page", GERMAN).encode())),
    ("noise.bin", b"\x1f" + bytes(range(255, 0, -1)) * 8),
], ids=["text", "jpeg", "html", "gzipped-html", "gzip-like-noise"])
def test_a_file_that_is_not_warc_is_one_counted_skip(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    tally = Tally(log_skips=False)
    assert list(read_pages(str(path), tally)) == []
    assert skips(tally.of("read")) == {"not-warc": 1}


def test_a_file_that_cannot_be_opened_is_an_error(tmp_path):
    with pytest.raises(InputFormatError, match="cannot open"):
        read(tmp_path / "absent.warc.gz")


@pytest.mark.parametrize("name, data, detail", [
    ("empty.warc.gz", b"", "the file is empty (0 bytes)"),
    ("empty.warc", b"", "the file is empty (0 bytes)"),
    ("inflates-to-nothing.warc.gz", gzip.compress(b""), "the gzip data inflates to nothing"),
    ("three-empty-members.warc.gz", gzip.compress(b"") * 3, "the gzip data inflates to nothing"),
    ("blank.warc", b"\r\n\r\n\n", "no record in the file: 5 bytes of blank lines"),
    ("blank.warc.gz", gzip.compress(b"\r\n\r\n"), "no record in the file: 4 bytes of blank lines"),
], ids=["zero-bytes-gz", "zero-bytes", "empty-gzip", "empty-gzip-members", "blank-lines", "blank-lines-gzip"])
def test_an_empty_file_is_one_counted_skip(tmp_path, caplog, name, data, detail):
    """Every input file leaves a count: an empty one is no silent success."""
    path = tmp_path / name
    path.write_bytes(data)
    tally = Tally()
    with caplog.at_level("WARNING", logger="pipelines.text"):
        assert list(read_pages(str(path), tally)) == []
    assert skips(tally.of("read")) == {"empty-file": 1}
    assert f"{path}: read skipped (empty-file): {detail}" in caplog.messages


@pytest.mark.parametrize("name, data, shown", [
    ("escape.txt", b"\x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\n" * 50, "b'\\x1b]0;pwned\\x07\\x1b[2J\\x1b['"),
    ("photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01" + bytes(range(256)) * 64,
     "b'\\xff\\xd8\\xff\\xe0\\x00\\x10JFIF\\x00\\x01\\x00\\x01\\x02\\x03'"),
    ("page.html.gz", gzip.compress(b"<html>\x1b[2J" + b"<p>x</p>" * 1000 + b"</html>", mtime=0),
     "{gzip_head}, which inflate to b'<html>\\x1b[2J<p>x</'"),      # the raw head: bytes that vary with zlib
], ids=["terminal-escapes", "jpeg", "gzipped-html"])
def test_a_not_warc_skip_shows_the_first_bytes_escaped(tmp_path, caplog, name, data, shown):
    """The log line names the file and shows its first 16 bytes as a bytes literal: no raw byte reaches a terminal
    (an escape sequence in a crawled file must not retitle or clear it), and the line stays short."""
    path = tmp_path / name
    path.write_bytes(data)
    with caplog.at_level("WARNING", logger="pipelines.text"):
        assert list(read_pages(str(path), Tally())) == []
    [line] = [m for m in caplog.messages if "not-warc" in m]
    assert line.startswith(f"{path}: read skipped (not-warc): no WARC record in the file (")
    assert line.endswith("it starts with " + shown.format(gzip_head=repr(data[:16])))
    assert line.isprintable() and len(line) < len(str(path)) + 200


def test_skip_details_never_carry_control_characters(tmp_path, caplog):
    """A junk header line inside a WARC file is quoted in its `malformed` skip, escaped."""
    path = tmp_path / "junk.warc"
    path.write_bytes(page_record("http://a.example/", page_html(0)) + b"\x1b[2J\x07junk line\r\nfoo: bar\r\n\r\n"
                     + page_record("http://b.example/", page_html(1)))
    with caplog.at_level("WARNING", logger="pipelines.text"):
        pages = list(read_pages(str(path), Tally()))
    assert [p.url for p in pages] == ["http://a.example/", "http://b.example/"]
    [line] = [m for m in caplog.messages if "malformed" in m]
    assert line.isprintable() and "\\x1b[2J\\x07junk line" in line


# --- records whose length is wrong, files of two formats -------------------------------------------------------

def page_html(n: int) -> bytes:
    return html_page(f"Good page {n}", f"{GERMAN} Nummer {n}.").encode()


def write_records(path, records: list[bytes], layout: str):
    """The records as a file: `plain`, `gzip` (a member each, as crawlers write them) or `one-member` (all in one
    gzip member, as `gzip file.warc` makes it)."""
    with WarcBuilder(path, gzipped=layout != "plain") as b:
        if layout == "one-member":
            b.raw(b"".join(records))
        else:
            for data in records:
                b.raw(data)
    return b.path


LAYOUTS = ["plain", "gzip", "one-member"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("error", [500, -500, 5, -3, 2**62], ids=["long", "short", "long-5", "short-3", "2^62"])
def test_a_wrong_content_length_costs_only_its_record(tmp_path, layout, error):
    """Too long, the record would absorb the next one's bytes; too short, its cut text would be mined; 2^62 made
    a plain file's seek fail. Each is one skip, and reading resumes at the next record header."""
    urls = [f"http://good.example/{n}" for n in range(4)]
    bad = page_record("http://bad-length.example/", html_page("Cut", GERMAN * 20).encode(), length_error=error)
    records = [page_record(urls[0], page_html(0)), bad] + [page_record(url, page_html(n)) for n, url in
                                                           enumerate(urls[1:], 1)]
    pages, counts = read(write_records(tmp_path / f"length.warc{'' if layout == 'plain' else '.gz'}", records, layout))
    assert [p.url for p in pages] == urls
    assert sum(skips(counts).values()) == 1 and set(skips(counts)) <= {"malformed", "too-large"}
    assert counts["records"] == 5       # the warcinfo and the four good ones


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("error", [200, -200])
def test_wet_records_with_a_wrong_length_cost_only_their_record(tmp_path, layout, error):
    texts = [f"{GERMAN} Nummer {n}." for n in range(4)]
    records = [text_record("http://wet.example/0", texts[0]),
               text_record("http://wet.example/bad", RUSSIAN * 4, length_error=error)]
    records += [text_record(f"http://wet.example/{n}", texts[n]) for n in range(1, 4)]
    pages, counts = read(write_records(tmp_path / f"x.warc.wet{'' if layout == 'plain' else '.gz'}", records, layout))
    assert [p.content for p in pages] == texts
    assert skips(counts) == {"malformed": 1}


def test_a_block_that_ends_at_the_file_end_is_a_record(tmp_path):
    """The last record needs no separator after it; blank lines between records are fine."""
    path = tmp_path / "loose.warc"
    path.write_bytes(page_record("http://a.example/", page_html(0)) + b"\r\n\r\n"
                     + page_record("http://b.example/", page_html(1))[:-4])
    pages, counts = read(path)
    assert [p.url for p in pages] == ["http://a.example/", "http://b.example/"] and not skips(counts)


TOO_LARGE_LIMITS = ReadLimits(max_payload_bytes=64 * 2**10)
BIG_BLOCKS = {  # over 64 KiB: an HTML page (compresses some 10 times) and incompressible bytes (a video, served)
    "page": http_response(html_page("Big", *(f"{GERMAN} Absatz {n}." for n in range(3000))).encode()),
    "binary": http_response(random.Random(7).randbytes(300 * 2**10), content_type="video/mp4"),
}


@pytest.mark.parametrize("block", sorted(BIG_BLOCKS))
@pytest.mark.parametrize("layout", ["member-each", "shared", "first-in-member", "one-member"])
def test_a_too_large_record_in_a_gzip_member_keeps_the_records_around_it(tmp_path, layout, block):
    """A record over max_payload_bytes between good ones, gzipped a member per record (as crawlers write), in a member
    with records before and after it, first in a member of several, or all in one member (`gzip file.warc`)."""
    urls = [f"http://good.example/{n}" for n in range(4)]
    good_records = [page_record(url, page_html(n)) for n, url in enumerate(urls)]
    big = record("http://big.example/", BIG_BLOCKS[block])
    members = {"member-each": [[r] for r in good_records[:2] + [big] + good_records[2:]],
               "shared": [good_records[:1], [good_records[1], big, good_records[2]], good_records[3:]],
               "first-in-member": [good_records[:2], [big] + good_records[2:]],
               "one-member": [good_records[:2] + [big] + good_records[2:]]}[layout]
    with WarcBuilder(tmp_path / "big.warc.gz") as b:      # a warcinfo record, then the members
        for member in members:
            b.raw(b"".join(member))
    pages, counts = read(b.path, TOO_LARGE_LIMITS)
    assert [p.url for p in pages] == urls
    assert skips(counts) == {"too-large": 1} and counts["records"] == 5     # the warcinfo and the four good ones
    assert [p.position for p in pages] == [1, 2, 4, 5]
    assert counts["bytes"] < len(BIG_BLOCKS[block]) + 2**17, "the block is inflated once, and dropped"


@pytest.mark.parametrize("layout", ["shared", "one-member"])
@pytest.mark.parametrize("error", [-50000, 5000, 2**62], ids=["short", "long", "2^62"])
def test_a_too_large_record_with_a_wrong_length_in_a_gzip_member_costs_only_itself(tmp_path, layout, error):
    """Its block, dropped by inflating, ends at the next record boundary (a length too long) or is followed by the
    rest of its bytes (too short): reading resumes at the next record either way."""
    urls = [f"http://good.example/{n}" for n in range(4)]
    good_records = [page_record(url, page_html(n)) for n, url in enumerate(urls)]
    block = BIG_BLOCKS["binary"]
    big = record("http://big.example/", block, len(block) + error if error < 2**40 else error)
    members = {"shared": [good_records[:1], [good_records[1], big, good_records[2]], good_records[3:]],
               "one-member": [good_records[:2] + [big] + good_records[2:]]}[layout]
    with WarcBuilder(tmp_path / "big.warc.gz") as b:
        for member in members:
            b.raw(b"".join(member))
    pages, counts = read(b.path, TOO_LARGE_LIMITS)
    assert [p.url for p in pages] == urls and skips(counts) == {"too-large": 1}


@pytest.mark.parametrize("member_after", [True, False], ids=["a-member-after", "the-last-member"])
def test_a_gzip_bomb_sharing_a_member_is_not_inflated_on(tmp_path, member_after):
    """A record declaring 32 MiB of zeros in a member with others: it inflates ~1000 times its compressed size, so
    it is no record worth inflating to reach the ones after it in the member; the next member is read. Where no
    member follows (`gzip file.warc` makes one), the records after the bomb are lost, and the file says so
    (`rest-unread`, with the bytes given up on) rather than ending quietly."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    member = packer.compress(page_record("http://good.example/0", page_html(0)))
    member += packer.compress(warc_header("http://bomb.example/", 32 * 2**20)) + packer.compress(bytes(32 * 2**20))
    member += packer.compress(b"\r\n\r\n" + page_record("http://lost.example/", page_html(1))) + packer.flush()
    with WarcBuilder(tmp_path / "bomb.warc.gz") as b:
        b.raw_member(member)
        last = [good(b, 2)] if member_after else []
    pages, counts = read(b.path, TOO_LARGE_LIMITS)
    assert [p.url for p in pages] == ["http://good.example/0", *last]
    assert skips(counts) == ({"too-large": 1} if member_after else {"too-large": 1, "rest-unread": 1})
    assert counts["bytes"] < 2**20, f"inflated {counts['bytes']} bytes of a bomb"


def test_damage_inside_a_one_member_file_is_counted_to_its_end(tmp_path):
    """Bytes flipped in the middle of a whole-file gzip: what inflates after them is garbage, then zlib stops;
    every record read as garbage is a skip and what follows is said to be lost."""
    urls = [f"http://good.example/{n}" for n in range(12)]
    noise = random.Random(3)  # pages that do not compress to nothing: the damage lands among the records
    pages = [page_html(n) + b"<!-- " + noise.randbytes(40000).hex().encode() + b" -->" for n in range(12)]
    data = bytearray(gzip.compress(b"".join(page_record(url, page) for url, page in zip(urls, pages)), mtime=0))
    middle = 2 * len(data) // 3
    data[middle:middle + 16] = bytes(byte ^ 0xFF for byte in data[middle:middle + 16])
    path = tmp_path / "damaged.warc.gz"
    path.write_bytes(bytes(data))
    pages, counts = read(path)
    read_urls = [p.url for p in pages]
    # the records before the damage whole, in order; after it, garbage, a record zlib's output happens to rebuild
    # (where it lands moves with the records' random ids), then nothing: the end is said to be lost
    assert read_urls[:6] == urls[:6] and read_urls == sorted(read_urls, key=urls.index)
    assert urls[-1] not in read_urls and skips(counts).get("rest-unread") == 1


@pytest.mark.parametrize("order", ["plain-then-gzip", "gzip-then-plain", "alternating"])
def test_plain_and_gzipped_warc_data_concatenated(tmp_path, order):
    urls = [f"http://good.example/{n}" for n in range(6)]
    plain = [page_record(url, page_html(n)) for n, url in enumerate(urls)]
    gzipped = [gzip.compress(data) for data in plain]
    parts = {"plain-then-gzip": plain[:3] + gzipped[3:], "gzip-then-plain": gzipped[:3] + plain[3:],
             "alternating": [gzipped[n] if n % 2 else plain[n] for n in range(6)]}[order]
    path = tmp_path / "mixed.warc"
    path.write_bytes(b"".join(parts))
    pages, counts = read(path)
    assert [p.url for p in pages] == urls and not skips(counts)


def test_damage_before_the_format_changes_is_one_skip(tmp_path):
    urls = [f"http://good.example/{n}" for n in range(4)]
    data = page_record(urls[0], page_html(0)) + page_record("http://bad.example/", page_html(9), length_error=99)
    data += b"".join(gzip.compress(page_record(url, page_html(n))) for n, url in enumerate(urls[1:], 1))
    path = tmp_path / "mixed.warc"
    path.write_bytes(data)
    pages, counts = read(path)
    assert [p.url for p in pages] == urls and skips(counts) == {"malformed": 1}


@pytest.mark.parametrize("cut", [10, 20, 60])
def test_a_record_cut_inside_its_header_does_not_take_the_next_one(tmp_path, cut):
    """Found by the splice property (tests/test_warc_fuzz.py): `WARC/1.0\r\nWARC-Type:` and then a whole record
    parsed as one header, whose WARC-Type was the next record's version line: the good record was lost."""
    path = tmp_path / "cut-header.warc"
    path.write_bytes(page_record("http://bad.example/", page_html(9))[:cut] + page_record("http://good.example/",
                                                                                          page_html(0)))
    pages, counts = read(path)
    assert [p.url for p in pages] == ["http://good.example/"] and skips(counts) == {"malformed": 1}


@pytest.mark.parametrize("after", [b"", b"next"], ids=["at-the-end", "before-another"])
def test_a_block_that_swallows_the_next_record_whole(tmp_path, after):
    """Found by the splice property: a Content-Length too long by exactly the next record ends on that record's
    separator, which looked like the end of the block."""
    swallowed = page_record("http://good.example/1", page_html(1))
    records = [page_record("http://good.example/0", page_html(0)),
               page_record("http://bad.example/", page_html(9), length_error=len(swallowed) - 4), swallowed]
    if after:
        records.append(page_record("http://good.example/2", page_html(2)))
    path = tmp_path / "swallow.warc"
    path.write_bytes(b"".join(records))
    pages, counts = read(path)
    assert [p.url for p in pages] == [f"http://good.example/{n}" for n in range(3 if after else 2)]
    assert skips(counts) == {"malformed": 1}


# --- records that are no page, said so --------------------------------------------------------------------------

def test_records_without_type_or_usable_target_are_counted_skips(tmp_path):
    html = http_response(page_html(9))
    with WarcBuilder(tmp_path / "targets.warc.gz") as b:
        urls = [good(b, 0)]
        b.raw(record("http://untyped.example/", html, record_type=None))
        b.raw(record(None, html))
        b.raw(record("javascript:alert(1)", html))
        b.raw(text_record("javascript:void(0)", GERMAN))
        urls.append(good(b, 1))
    pages, counts = read(b.path)
    assert [p.url for p in pages] == urls
    assert skips(counts) == {"no-type": 1, "no-url": 1, "url-scheme": 2}


# --- bodies ----------------------------------------------------------------------------------------------------

def test_a_gzip_body_of_two_members_decodes_whole(tmp_path):
    html = html_page("Zwei Teile", GERMAN, RUSSIAN).encode()
    half = len(html) // 2
    with WarcBuilder(tmp_path / "members.warc.gz") as b:
        b.response("http://two.example/", gzip.compress(html[:half]) + gzip.compress(html[half:]),
                   headers=(("Content-Encoding", "gzip"),))
        b.response("http://junk.example/", gzip.compress(html) + b"\x00junk after the member",
                   headers=(("Content-Encoding", "gzip"),))
    pages, counts = read(b.path)
    assert [p.content for p in pages] == [html.decode(), html.decode()] and not skips(counts)


def test_gzip_bodies_of_many_members_stay_bounded(tmp_path):
    member = gzip.compress(b"<p>" + b"x" * 60000 + b"</p>")
    with WarcBuilder(tmp_path / "many.warc.gz") as b:
        b.response("http://many.example/", member * 100, headers=(("Content-Encoding", "gzip"),))
        url = good(b, 0)
    pages, counts = read(b.path, ReadLimits(max_payload_bytes=2**20))
    assert [p.url for p in pages] == [url] and skips(counts) == {"too-large": 1}


def test_a_gzip_body_of_too_many_members_is_skipped_and_reading_goes_on(tmp_path):
    """Each member used to hand zlib the rest of the body: 260k empty members in 13 KB of WARC cost 47 s."""
    html = html_page("Viele Teile", GERMAN).encode()
    with WarcBuilder(tmp_path / "members.warc.gz") as b:
        b.response("http://many.example/", gzip.compress(html) + gzip.compress(b"") * _BODY_MEMBERS,
                   headers=(("Content-Encoding", "gzip"),))
        b.response("http://enough.example/", gzip.compress(html) + gzip.compress(b"") * (_BODY_MEMBERS - 1),
                   headers=(("Content-Encoding", "gzip"),))
        url = good(b, 0)
    pages, counts = read(b.path)
    assert [p.url for p in pages] == ["http://enough.example/", url]
    assert skips(counts) == {"content-encoding": 1}


@pytest.mark.parametrize("where", ["http", "meta", "both"])
@pytest.mark.parametrize("label", ["base64", "hex", "zlib", "bz2", "uu", "quopri", "rot13", "idna", "punycode",
                                   "unicode_escape", "raw_unicode_escape", "undefined", "utf-7"])
def test_a_charset_label_naming_a_non_text_codec_is_an_unknown_label(tmp_path, label, where):
    meta = label if where != "http" else None
    http = f"text/html; charset={label}" if where != "meta" else "text/html"
    html = html_page("Straße", GERMAN, charset=meta) + "<p>\\u0041\\x42 stays as written</p>"
    with WarcBuilder(tmp_path / "codecs.warc.gz") as b:
        b.response("http://codec.example/", html.encode("utf-8"), content_type=http)
        b.response("http://codec.example/latin", html.encode("cp1252"), content_type=http)
        url = good(b, 0)
    pages, counts = read(b.path)
    assert [p.url for p in pages] == ["http://codec.example/", "http://codec.example/latin", url]
    assert not skips(counts)
    assert all(GERMAN in p.content and "\\u0041\\x42 stays" in p.content for p in pages[:2])


def test_one_bad_byte_in_a_declared_utf8_page_is_replaced_not_reguessed(tmp_path):
    text = "Die Straße führt über die Brücke. " + "Viele Menschen gehen hier jeden Tag spazieren. " * 4
    html = html_page("Grüße", text).encode()
    with WarcBuilder(tmp_path / "onebyte.warc.gz") as b:
        b.response("http://one.example/", html.replace(b"spazieren", b"spaz\xffieren", 1))
        b.response("http://ascii.example/", html_page("Hello", "Plain words only " * 20).encode()
                   .replace(b"only", b"o\x9enly", 1))
        b.response("http://nul.example/", html_page("NUL", "erstes\x00zweites Wort").encode())
    one, ascii_page, nul = read(b.path)[0]
    assert one.charset == "utf_8" and "Die Straße führt über die Brücke." in one.content
    assert one.content.count("\ufffd") == 1 and "spaz\ufffdieren" in one.content
    assert ascii_page.charset == "utf_8" and "o\ufffdnly" in ascii_page.content
    assert "erstes zweites Wort" in nul.content and "\x00" not in nul.content


def test_utf16le_declared_in_the_http_header_only(tmp_path):
    html = html_page("Москва", RUSSIAN, charset=None)
    with WarcBuilder(tmp_path / "utf16.warc.gz") as b:
        b.response("http://utf16.example/", html.encode("utf-16-le"), content_type="text/html; charset=utf-16le")
        b.response("http://utf16-plain.example/", html.encode("utf-16-le"), content_type="text/html; charset=UTF-16")
        b.response("http://wrong.example/", html.encode("utf-8"), content_type="text/html; charset=utf-16")
    pages, counts = read(b.path)
    assert [p.charset for p in pages] == ["utf_16_le", "utf_16_le", "utf_8"]
    assert all(RUSSIAN in p.content for p in pages) and not skips(counts)


# --- the shared real files --------------------------------------------------------------------------------------

def test_clipped_warc_counts_the_clip(shared_data):
    pages, counts = read(shared_data / "web/warc/resiliparse/clipped.warc.gz")
    assert pages == []      # its one record is cut off in the middle of its payload
    assert skips(counts) == {"truncated": 1}


def test_common_crawl_excerpt_yields_its_html_pages(shared_data):
    path = shared_data / "web/warc/resiliparse/warcfile.warc.gz"
    pages, counts = read(path)
    with gzip.open(path, "rb") as handle:
        responses = [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(handle)
                     if r.rec_type == "response" and r.http_headers.get_statuscode() == "200"]
    assert [p.url for p in pages] == responses and len(pages) == 16
    assert counts["records"] == 50 and not skips(counts)
    russian = next(p for p in pages if "01spb.ru" in p.url)
    assert russian.charset == "cp1251" and "О компании" in russian.content


@pytest.mark.parametrize("name", ["warcio/example.warc.gz", "warcio/example-iana.org-chunked.warc",
                                  "warcio/example-resource.warc.gz", "dolma/sample-0000.warc.gz",
                                  "dolma/sample-0001.warc.gz", "resiliparse/clueweb-quirk.warc.gz"])
def test_shared_warc_files_read_every_record(shared_data, name):
    path = shared_data / "web/warc" / name
    pages, counts = read(path)
    with open(path, "rb") as handle:
        records = list(ArchiveIterator(handle))
    assert counts["records"] == len(records) and not skips(counts)
    assert pages and all(p.content.strip() for p in pages)


# --- any cut, any damage --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def six_records(tmp_path_factory) -> tuple[bytes, list[int], list[str]]:
    """A gzipped WARC of a warcinfo and 5 pages: its bytes, where each gzip member ends, the page URLs."""
    folder = tmp_path_factory.mktemp("six")
    ends = []
    with WarcBuilder(folder / "six.warc.gz") as b:
        ends.append(b.handle.tell())
        urls = []
        for n in range(5):
            urls.append(good(b, n))
            ends.append(b.handle.tell())
    return b.path.read_bytes(), ends, urls


@given(cut=st.integers(min_value=0, max_value=10**6))
def test_a_cut_anywhere_keeps_every_complete_record(tmp_path_factory, six_records, cut):
    data, ends, urls = six_records
    cut %= len(data) + 1
    path = tmp_path_factory.mktemp("cut") / "cut.warc.gz"
    path.write_bytes(data[:cut])
    pages, counts = read(path)
    complete = sum(end <= cut for end in ends[1:])
    assert [p.url for p in pages] == urls[:complete]
    assert skips(counts) == ({"empty-file": 1} if cut == 0 else {} if cut in ends else {"truncated": 1})


@given(at=st.integers(min_value=0, max_value=10**6), byte=st.integers(min_value=0, max_value=255))
def test_a_damaged_byte_costs_at_most_its_own_record(tmp_path_factory, six_records, at, byte):
    data, ends, urls = six_records
    at %= len(data)
    damaged = bytearray(data)
    damaged[at] = byte
    path = tmp_path_factory.mktemp("damaged") / "damaged.warc.gz"
    path.write_bytes(bytes(damaged))
    pages, counts = read(path)
    hit = next(i for i, end in enumerate(ends) if at < end)     # the member holding the damaged byte
    lost = {urls[hit - 1]} if hit else set()
    assert set(urls) - lost <= {p.url for p in pages}
    assert {p.url for p in pages} <= set(urls)
    assert len(pages) == len(urls) or skips(counts), "a lost page is a counted skip"


@pytest.mark.parametrize("member", range(6))
def test_a_gzip_header_flag_that_eats_the_file_costs_one_record(tmp_path, six_records, member):
    """FLG = 0x1f asks zlib for an extra field, a name and a comment: it reads on through the later members, which
    are found again by rescanning the damaged member's own bytes (found by hypothesis: it lost every later page)."""
    data, ends, urls = six_records
    damaged = bytearray(data)
    damaged[([0] + ends)[member] + 3] = 0x1F
    path = tmp_path / "flags.warc.gz"
    path.write_bytes(bytes(damaged))
    pages, counts = read(path)
    lost = {urls[member - 1]} if member else set()
    assert {p.url for p in pages} == set(urls) - lost
    assert skips(counts)
