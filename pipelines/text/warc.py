"""Crawl files -> `Page`s: HTTP 200 HTML responses from WARC files, text conversions from WET files.

    pages = read_pages("gs://bucket/CC-MAIN-...warc.gz", tally)     # any path Beam's FileSystems opens

Files are gzipped (member by member, as crawlers write them, or as one member), plain, or both in turn (a plain
file with gzipped records appended, or the reverse). warcio parses the record and HTTP headers; the reading around
them is ours, because warcio's reader inflates each 16 KiB of compressed input in one go (16 MB out of a bomb) and
reads every record to its end to reach the next one, so a gzip bomb or a 2 GB record costs what it declares. Here:

- a record's block (WARC Content-Length) over `max_payload_bytes` is skipped (`too-large`) without keeping it: in
  a plain file we seek past it; in a gzip file we inflate it and drop it, to reach the records after it in its
  member (records sharing a member, a file gzipped whole), unless it inflates to more than SKIP_RATIO times its
  compressed size (a bomb) or does not end in its member: then we jump to the next gzip member that inflates to
  `WARC/`;
- headers are read under a budget (`max_header_bytes`), and nothing is inflated beyond what a record may hold but
  a too-large block being dropped, as above (in pieces: memory stays bounded);
- an HTTP body with Content-Encoding gzip/deflate is inflated to at most `max_payload_bytes` (every gzip member
  of it, up to 1000 members), or skipped;
- a block must be followed by the record separator (two line ends) and then the next record or the end of the
  data: a Content-Length too short (the text would be cut) or too long (the record would absorb the next one)
  or past the end of the file is `malformed`;
- a broken record (bad header, wrong Content-Length, corrupt gzip data) is skipped (`malformed`, `bad-gzip`) and
  reading resumes at the next WARC version line (`WARC/1.0`) or gzip member starting a record; a file cut off inside
  a record (truncated gzip or plain) ends with one `truncated` skip, after every record before the break;
- a file in which no WARC record header is found (a JPEG, an HTML page) is one `not-warc` skip, named by its path
  and shown by its first bytes, escaped (as in every skip's detail: no raw byte of a file reaches a terminal); a
  file with no record at all (0 bytes, a gzip inflating to nothing, blank lines) is one `empty-file` skip.

Kept: `response` records with status 200 and an HTML media type (text/html, application/xhtml+xml; from the
HTTP Content-Type, else WARC-Identified-Payload-Type, else the first bytes), `resource` records with an HTML
Content-Type, and WET `conversion` records (as text), with an http(s) WARC-Target-URI. Bodies are decoded by
`charset.decode_html`. A record's `position` is its index in the file, counting every record (bad ones included).

Counts reported to the tally under stage "read": records, records:<WARC-Type>, pages, pages:html|text,
charset:<method>, charset:declared-wrong, truncated-by-crawler, bytes (decompressed bytes read: what reading
cost, too-large blocks inflated to be dropped included), and skipped:<reason> with reasons not-warc, empty-file,
malformed, bad-gzip, truncated, too-large, no-type (no WARC-Type), no-url, url-scheme (not http(s): javascript:,
dns:...), not-200, not-html, content-encoding, empty, undecodable. docs/pipeline.md lists the bad inputs and what
each one costs.

Limitation: in a gzip member holding several records, a too-large record that inflates to more than SKIP_RATIO
times its compressed size (a gzip bomb, or a page of one repeated line) costs the records after it in its member.
"""

from __future__ import annotations

import functools
import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import BinaryIO

from miner.config import check_number
from miner.io import InputFormatError
from pipelines.text.charset import Judge, UndecodableError, charset_from_content_type, decode_html
from pipelines.text.records import Page, Tally

STAGE = "read"
# skips that cost a whole input file, and what each says about it (the run's summary names them)
FILE_SKIPS = {"not-warc": "not WARC", "empty-file": "empty"}
HTML_TYPES = ("text/html", "application/xhtml+xml")
GZIP_MAGIC = b"\x1f\x8b\x08"
CHUNK = 1 << 16
_VERIFY_WINDOW = 4096       # compressed bytes inflated to check that a gzip member starts a WARC record
_MEMBER_KEEP = 4 << 20      # compressed bytes of the current gzip member kept to rescan after damage inside it
_SNIFF = 1024               # bytes looked at for "<html" when no media type is given
_END_PEEK = 64              # bytes looked at after a block: the separator and the next record's first bytes
_LOOK_AHEAD = 16            # bytes looked at after a gzip member: the next member's header, or plain WARC data
# The version line that starts a record, where reading resumes after damage; anywhere, not only after a line end:
# junk before a record (a cut record, stray bytes) often ends without one.
_RECORD_LINE = re.compile(rb"WARC/[0-9]{1,2}\.[0-9]{1,2}\r?\n")
_BOUNDARY = b"\r\n\r\nWARC/"  # a record's end and the next one's start: in a block, the block absorbed a record
_LINE_TAIL = 16             # bytes kept between scanned chunks, so that a version line across two chunks is found
_BODY_MEMBERS = 1000        # gzip members an HTTP body may hold (`cat a.gz b.gz`); more is a skip, not work
_HEAD = 16                  # a file's first bytes, shown (escaped) when it is not a WARC file
# A too-large block in a gzip member is inflated and dropped, to reach the records after it in the member, only
# while it inflates to at most this many times its compressed size: HTML compresses 4-20 times, a gzip bomb ~1000
# times. Reading a file so costs at most this many bytes inflated per byte of it, and a bomb is not inflated on.
SKIP_RATIO = 100


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on what one record may cost; a record over a bound is skipped with its reason."""

    max_payload_bytes: int = 5 * 2**20      # a record's block and its decoded HTTP body (Common Crawl cuts at 5 MiB)
    max_header_bytes: int = 2**16           # WARC and HTTP headers, and blank lines between records

    def __post_init__(self):
        for name in ("max_payload_bytes", "max_header_bytes"):  # 0 would skip every record as too large
            check_number(f"read.{name}", getattr(self, name), 1, whole=True)


class _Skip(Exception):
    """A record left out: its reason and detail, and whether reading must look for the next record start."""

    def __init__(self, reason: str, detail: str = "", resync: bool = False):
        super().__init__(detail)
        self.reason, self.detail, self.resync = reason, detail, resync


class _Switch(Exception):
    """The file goes on in the other format (a plain WARC then a gzipped one, or the reverse): read on with `stream`;
    `mid_record` when the record being read runs into it (it is lost)."""

    def __init__(self, stream: _Stream, mid_record: bool):
        super().__init__("format change")
        self.stream, self.mid_record = stream, mid_record


class _Truncated(Exception):
    """The file ends inside a record."""


class _OverBudget(Exception):
    """A record's headers (or blank lines) are longer than allowed."""


def read_pages(path: str, tally: Tally, limits: ReadLimits = ReadLimits(), judge: Judge | None = None
               ) -> Iterator[Page]:
    """Pages of one WARC or WET file (gzipped or plain), local or remote; bad records are counted skips. `judge`:
    charset.decode_html's, for pages that declare no charset that fits."""
    from apache_beam.io.filesystem import CompressionTypes  # Beam's I/O library, not a pipeline: gs:// and local alike
    from apache_beam.io.filesystems import FileSystems

    try:
        raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    except Exception as err:  # Beam wraps every backend's error in its own types
        raise InputFormatError(f"{path}: cannot open ({err})") from None
    with raw:
        yield from iter_pages(raw, path, tally, limits, judge)


def iter_pages(raw: BinaryIO, source: str, tally: Tally, limits: ReadLimits = ReadLimits(),
               judge: Judge | None = None) -> Iterator[Page]:
    """Pages from an open binary file of WARC records; `source` names it in pages and skips."""
    reader = _Reader(raw, source, tally, limits, judge)
    try:
        yield from reader.pages()
    finally:  # also when the caller stops early
        tally.count(STAGE, "bytes", reader.stream.produced)


class _Reader:
    """One file's records in turn: skips counted, resynchronised after a broken record, the stream replaced where
    the file goes on in the other format."""

    def __init__(self, raw: BinaryIO, source: str, tally: Tally, limits: ReadLimits, judge: Judge | None = None):
        self.stream, self.head = _open_stream(raw)
        self.source, self.tally, self.limits, self.judge = source, tally, limits, judge
        self.scan_limit = limits.max_payload_bytes + limits.max_header_bytes    # what a record may hold
        self.headers_seen = False       # a WARC header was read: the file is a WARC file, however damaged
        self.inflated_head: bytes | None = None     # a gzip file's first inflated bytes, when it is not a WARC file

    def pages(self) -> Iterator[Page]:
        position = 0
        while True:
            self.stream.start_record(self.limits.max_header_bytes)
            where = f"{self.source}#{position}"
            try:
                record = self._next_record()
                if record is None:
                    if position == 0:       # not one record, not even a broken one: every file leaves a count
                        self.tally.skip(STAGE, "empty-file", self.source, self._emptiness())
                    return
                page = _page(record, self.source, position, self.tally, self.limits, self.judge)
            except _Switch as switch:
                self.stream = switch.stream
                if not switch.mid_record:
                    continue
                self.tally.skip(STAGE, "malformed", where, "the record runs into data of another format")
            except _Skip as skip:
                if not self._skipped(skip, where):
                    return
            except _Truncated as err:
                # Usually the file was cut; but damage can also make a reader run to the end (a gzip header flag that
                # asks for a file name eats the members after it), so look for a record start after this one.
                if not self._skipped(_Skip("truncated", str(err), resync=True), where):
                    return
            else:
                if page is not None:
                    self.tally.count(STAGE, "pages")
                    self.tally.count(STAGE, f"pages:{page.content_type}")
                    yield page
            position += 1

    def _skipped(self, skip: _Skip, where: str) -> bool:
        """Count the skip and move to the next record start when needed; False when the file has no more records."""
        if not self.headers_seen and self.inflated_head is None and self.stream.inflates:
            self.inflated_head = bytes(self.stream.buffer[:_HEAD])
        following = self.stream.resync(self.scan_limit) if skip.resync else self.stream
        if following is None and not self.headers_seen and skip.reason in ("malformed", "bad-gzip"):
            self.tally.skip(STAGE, "not-warc", self.source, self._not_warc(skip.reason))
            return False
        self.tally.skip(STAGE, skip.reason, where, _printable(skip.detail))
        if following is None:
            # damage that runs on (a whole-file gzip cannot be inflated past it): what lay after it is lost, and
            # said so; a file cut short (truncated) has nothing after its last record
            if skip.resync and skip.reason != "truncated" and self.stream.unread:
                self.tally.skip(STAGE, "rest-unread", self.source, f"reading stopped at {where}: no record starts in "
                                f"the {self.stream.unread:,} stored bytes from the damaged gzip member (or the "
                                "damage) to the end of the file; any record in them is lost with the damaged one")
            return False
        self.stream = following
        return True

    def _not_warc(self, reason: str) -> str:
        """Why a file is not taken for a WARC file, with its first bytes escaped (never raw bytes to a terminal)."""
        detail = f"no WARC record in the file ({reason}); it starts with {self.head!r}"
        if self.inflated_head:
            detail += f", which inflate to {self.inflated_head!r}"
        return detail

    def _emptiness(self) -> str:
        if not self.head:
            return "the file is empty (0 bytes)"
        if self.stream.produced == 0:
            return "the gzip data inflates to nothing"
        return f"no record in the file: {self.stream.produced} bytes of blank lines"

    def _next_record(self) -> _Record | None:
        """The next complete record, None at the end of the file; `_Skip` for a record that cannot be read."""
        stream, limits = self.stream, self.limits
        headers = _read_headers(stream, limits)
        if headers is None:
            return None
        self.headers_seen = True
        length = _content_length(headers)
        if length > limits.max_payload_bytes:
            detail = f"{_describe(headers)}: {length} bytes > {limits.max_payload_bytes}"
            if stream.skip_block(length):   # seeked past, or (gzip) inflated and dropped: reading goes on after it
                raise _Skip("too-large", detail)
            if stream.inflates:     # a bomb, or the block does not end in its member: look for a record start
                raise _Skip("too-large", detail, resync=True)
            raise _Skip("malformed", f"{_describe(headers)}: Content-Length {length} runs past the file "
                                     "or the next record", resync=True)
        stream.grant(length)
        try:
            block = stream.read_exactly(length)
            if len(block) < length:
                raise _Truncated(f"{_describe(headers)}: {len(block)} of {length} bytes")
            if not stream.end_record() or _absorbs_a_record(block, stream.next_unsure):
                raise _Skip("malformed", f"{_describe(headers)}: Content-Length {length} does not end the record "
                                         "(no record separator and next record after it)", resync=True)
        except zlib.error as err:
            raise _Skip("bad-gzip", f"{_describe(headers)}: {err}", resync=True) from None
        return _Record(headers, block)


# --- one record -------------------------------------------------------------------------------------------------

@dataclass
class _Record:
    headers: object          # warcio StatusAndHeaders of the WARC record
    block: bytes             # the record's content block, complete


def _read_headers(stream: _Stream, limits: ReadLimits):
    """The next record's WARC headers (warcio StatusAndHeaders), None at the end of the file."""
    from warcio.exceptions import ArchiveLoadFailed
    from warcio.statusandheaders import StatusAndHeadersParserException

    try:
        first = stream.first_line()
        if first is None:
            return None
        headers = _parsers().record.parse_record_stream(
            stream, statusline=first, known_format="warc", no_record_parse=True).rec_headers
        if _RECORD_LINE.search(stream.buffer, stream.line_start + len(first), stream.pos):
            # a record cut inside its header runs into the next record's: that one starts at the second line
            raise _Skip("malformed", "WARC header: a second WARC version line in it", resync=True)
        return headers
    except (ArchiveLoadFailed, StatusAndHeadersParserException, EOFError) as err:
        raise _Skip("malformed", f"WARC header: {_short(err)}", resync=True) from None
    except _OverBudget:
        raise _Skip("malformed", f"WARC header over {limits.max_header_bytes} bytes", resync=True) from None
    except zlib.error as err:
        raise _Skip("bad-gzip", str(err), resync=True) from None


def _content_length(headers) -> int:
    value = headers.get_header("Content-Length")
    try:
        length = int(value)
    except (TypeError, ValueError):
        raise _Skip("malformed", f"{_describe(headers)}: Content-Length {value!r}", resync=True) from None
    if length < 0:
        raise _Skip("malformed", f"{_describe(headers)}: Content-Length {length}", resync=True)
    return length


def _page(record: _Record, source: str, position: int, tally: Tally, limits: ReadLimits,
          judge: Judge | None = None) -> Page | None:
    """The record as a Page, None when it is not a page (request, metadata, warcinfo...); `_Skip` when bad."""
    headers = record.headers
    kind = (headers.get_header("WARC-Type") or "").strip().lower() or "untyped"
    tally.count(STAGE, "records")
    tally.count(STAGE, f"records:{kind}")
    if kind == "untyped":
        raise _Skip("no-type", _describe(headers))
    html_resource = kind == "resource" and _media_type(headers.get_header("Content-Type")) in HTML_TYPES
    if kind not in ("response", "conversion") and not html_resource:
        return None
    url = (headers.get_header("WARC-Target-URI") or "").strip().strip("<>")
    if not url:
        raise _Skip("no-url", f"{kind} record {_describe(headers)}")
    if not url.lower().startswith(("http:", "https:")):     # javascript:, dns: (Heritrix's DNS lookups), ...
        raise _Skip("url-scheme", f"{kind} record {_short(url, 80)}")
    if kind == "conversion":
        return _text_page(record, url, source, position, tally, judge)
    if kind == "response":
        body, content_type = _http_body(record, limits)
    else:
        body, content_type = record.block, headers.get_header("Content-Type")
    if headers.get_header("WARC-Truncated"):
        tally.count(STAGE, "truncated-by-crawler")
    text, charset = _decoded(body, charset_from_content_type(content_type), url, tally, judge)
    return _make_page(headers, url, text, "html", source, position, charset)


def _text_page(record: _Record, url: str, source: str, position: int, tally: Tally,
               judge: Judge | None = None) -> Page:
    """A WET conversion record: UTF-8 text by convention, decoded like any body in case it is not."""
    charset = charset_from_content_type(record.headers.get_header("Content-Type"))
    text, charset = _decoded(record.block, charset, url, tally, judge)
    return _make_page(record.headers, url, text, "text", source, position, charset)


def _make_page(headers, url, text, content_type, source, position, charset) -> Page:
    record_id = (headers.get_header("WARC-Record-ID") or "").strip()
    if not record_id:
        raise _Skip("malformed", f"{url}: no WARC-Record-ID")
    return Page(url=url, record_id=record_id, date=(headers.get_header("WARC-Date") or "").strip(), content=text,
                content_type=content_type, source=source, position=position, charset=charset)


def _decoded(body: bytes, declared: str | None, url: str, tally: Tally, judge: Judge | None = None
             ) -> tuple[str, str]:
    if not body.strip():
        raise _Skip("empty", url)
    try:
        decoded = decode_html(body, declared, judge)
    except UndecodableError as err:
        raise _Skip("undecodable", f"{url}: {err}") from None
    if not decoded.text.strip():
        raise _Skip("empty", url)
    tally.count(STAGE, f"charset:{decoded.method}")
    if decoded.declared_wrong:
        tally.count(STAGE, "charset:declared-wrong")
    return decoded.text, decoded.charset


# --- HTTP ------------------------------------------------------------------------------------------------------

@functools.cache
def _parsers() -> SimpleNamespace:
    """warcio's WARC record loader, and an HTTP status-line parser that also accepts HTTP/2 and HTTP/3."""
    from warcio.recordloader import ArcWarcRecordLoader
    from warcio.statusandheaders import StatusAndHeadersParser

    return SimpleNamespace(record=ArcWarcRecordLoader(),
                           http=StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/2", "HTTP/3"]))


def _http_body(record: _Record, limits: ReadLimits) -> tuple[bytes, str | None]:
    """The body of a 200 HTML response, de-chunked and inflated (bounded); `_Skip` for anything else."""
    from warcio.statusandheaders import StatusAndHeadersParserException

    url = record.headers.get_header("WARC-Target-URI")
    stream = io.BytesIO(record.block)
    try:
        http = _parsers().http.parse(stream)
    except (StatusAndHeadersParserException, EOFError) as err:
        raise _Skip("malformed", f"{url}: HTTP header: {_short(err)}") from None
    status = http.get_statuscode()
    if status != "200":
        raise _Skip("not-200", f"{url}: status {status}")
    content_type = http.get_header("Content-Type")
    body = stream.read()
    media = _media_type(content_type) or _media_type(record.headers.get_header("WARC-Identified-Payload-Type"))
    if (media or _sniffed_type(body)) not in HTML_TYPES:
        raise _Skip("not-html", f"{url}: {media or 'no media type'}")
    if (http.get_header("Transfer-Encoding") or "").strip().lower() == "chunked":
        body = _dechunked(body)
    return _inflated(body, http.get_header("Content-Encoding"), url, limits), content_type


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _sniffed_type(body: bytes) -> str:
    head = body[:_SNIFF].lstrip().lower()
    return "text/html" if head.startswith((b"<!doctype html", b"<html")) else ""


def _dechunked(body: bytes) -> bytes:
    """HTTP chunked transfer coding removed; warcio falls back to the raw bytes when they are not chunked."""
    from warcio.bufferedreaders import ChunkedDataReader

    return ChunkedDataReader(io.BytesIO(body)).read()


def _inflated(body: bytes, encoding: str | None, url: str, limits: ReadLimits) -> bytes:
    """The body with its Content-Encoding undone, never inflating more than `max_payload_bytes`."""
    encoding = (encoding or "identity").strip().lower()
    if encoding in ("identity", "none", ""):
        return body
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise _Skip("content-encoding", f"{url}: {encoding}")
    wbits = [31] if "gzip" in encoding else [15, -15]      # deflate: zlib-wrapped, or raw as some servers send
    for bits in wbits:
        try:
            out = _inflate_members(body, bits, limits.max_payload_bytes + 1)
        except zlib.error:
            continue
        if out is None:
            raise _Skip("content-encoding", f"{url}: {encoding} body of more than {_BODY_MEMBERS} gzip members")
        if len(out) > limits.max_payload_bytes:
            raise _Skip("too-large", f"{url}: inflates past {limits.max_payload_bytes} bytes")
        return out
    if _sniffed_type(body) or body.lstrip()[:1] == b"<":    # already inflated by the crawler, header left behind
        return body
    raise _Skip("content-encoding", f"{url}: {encoding} body does not inflate")


def _inflate_members(body: bytes, wbits: int, limit: int) -> bytes | None:
    """At most `limit` bytes inflated from `body`, every gzip member of it in turn (a body may be several, as
    `cat a.gz b.gz` makes them); zlib.error if the first does not inflate, None past _BODY_MEMBERS members. Damage
    in a later member ends the body there. The body is walked by offset, fed in windows: zlib copies what follows
    a member's end (unused_data), so handing it the rest of the body at each member cost the square of the body's
    size in tiny members."""
    view, at, parts, total = memoryview(body), 0, [], 0
    for _ in range(_BODY_MEMBERS):
        inflater = zlib.decompressobj(wbits)
        try:
            part, at = _inflate_member(inflater, view, at, limit - total)
        except zlib.error:
            if not parts:
                raise
            break
        parts.append(part)
        total += len(part)
        if total >= limit or not inflater.eof or wbits != 31 or view[at:at + 2] != GZIP_MAGIC[:2]:
            break
    else:
        return None
    return b"".join(parts)


def _inflate_member(inflater, view: memoryview, at: int, limit: int) -> tuple[bytes, int]:
    """One member inflated from view[at:], at most `limit` bytes (> 0), and the offset after what it consumed."""
    parts = []
    while not inflater.eof and limit > 0:
        window = view[at:at + CHUNK]
        if not window:      # the body ends inside the member
            break
        part = inflater.decompress(window, limit)
        parts.append(part)
        limit -= len(part)
        at += len(window) - len(inflater.unused_data if inflater.eof else inflater.unconsumed_tail)
    return b"".join(parts), at


# --- the byte stream under the records --------------------------------------------------------------------------

def _open_stream(raw: BinaryIO) -> tuple[_Stream, bytes]:
    """The stream for the file, and its first bytes (at most _HEAD)."""
    head = raw.read(_HEAD)
    if head[:1] == GZIP_MAGIC[:1] or head[1:3] == GZIP_MAGIC[1:]:   # gzip, or gzip with a damaged first byte
        return _GzipStream(raw, head), head
    return _PlainStream(raw, head), head    # not a WARC file at all: its first record is malformed, nothing follows


class _Stream:
    """Decompressed bytes of a crawl file, read under a budget: never produces more than a record may hold.

    The buffer keeps the current record's bytes from its start (`start_record`), so that after a broken record
    reading can resume right after the broken record's first line.
    """

    inflates = False            # a gzip stream: skipping a block would mean inflating it

    def __init__(self, raw: BinaryIO, produced: int = 0):
        self.raw = raw
        self.buffer = bytearray()
        self.pos = 0            # read position in the buffer
        self.line_start = 0     # buffer position of the current record's first line
        self.budget = 0
        self.produced = produced    # bytes read out of the file after decompression: what reading cost
        self.next_unsure = False    # the last separator was followed by something other than a record start
        self.unread = 0             # stored bytes a failed resync gave up on (no record start in them)

    @property
    def available(self) -> int:
        return len(self.buffer) - self.pos

    def start_record(self, header_budget: int) -> None:
        del self.buffer[:self.pos]
        self.pos = self.line_start = 0
        self.budget = header_budget

    def grant(self, n: int) -> None:
        self.budget += n

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = self.budget
        self._fill(min(n, self.budget + 1))
        if n > self.budget and self.available > self.budget:
            raise _OverBudget()
        out = bytes(self.buffer[self.pos:self.pos + n])
        self.pos += len(out)
        self.budget -= len(out)
        return out

    def readline(self, limit: int = -1) -> bytes:
        limit = self.budget + 1 if limit is None or limit < 0 else min(limit, self.budget + 1)
        scanned = self.pos
        while True:
            end = self.buffer.find(b"\n", scanned)
            if end >= 0 or self.available >= limit:
                n = min(end + 1 - self.pos if end >= 0 else limit, limit)
                if n > self.budget:
                    raise _OverBudget()
                return self.read(n)
            scanned = len(self.buffer)
            if not self._fill_once(min(CHUNK, limit - self.available)):    # the file ends without a line end
                return self.read(self.available)

    def read_exactly(self, n: int) -> bytes:
        parts, left = [], n
        while left > 0:
            part = self.read(min(left, CHUNK))
            if not part:
                break
            parts.append(part)
            left -= len(part)
        return b"".join(parts)

    def first_line(self) -> bytes | None:
        """The first non-blank line of the next record, None at the end of the file."""
        while True:
            self._check_format()
            line = self.readline()
            if not line:
                return None
            if line.strip():
                self.line_start = self.pos - len(line)
                return line

    def _check_format(self) -> None:
        """Raise `_Switch` when the next record is in the other format."""

    def _fill(self, n: int) -> bool:
        """Buffer at least n unread bytes if the file has them; False when it ends first."""
        while self.available < n:
            if not self._fill_once(n - self.available):
                return False
        return True

    def _fill_once(self, max_bytes: int) -> bool:
        """Buffer one step of at most max_bytes, from the current gzip member only: reading ahead for a line
        must not run into the next member, whose damage belongs to the next record."""
        data = self._produce(max(max_bytes, 1))
        self.produced += len(data)
        self.buffer += data
        return bool(data)

    def end_record(self) -> bool:
        """After a block: consume the separator that ends a record (WARC puts two CRLFs after each block); False
        when the block is not followed by one and then the next record or the end (its Content-Length is wrong)."""
        self._fill(_END_PEEK)
        return self._take_separator()

    def _take_separator(self) -> bool:
        after = bytes(self.buffer[self.pos:self.pos + _END_PEEK])
        found = _separator(after, at_end=len(after) < _END_PEEK)
        if found is None:
            return False
        self.pos += found[0]
        self.next_unsure = not found[1]
        return True

    def _produce(self, max_bytes: int) -> bytes:
        raise NotImplementedError

    def skip_block(self, n: int) -> bool:
        """Pass a too-large record's block of n bytes (read up to its header) without keeping it, and the separator
        after it; True when reading goes on at the next record, False when `resync` must find it."""
        raise NotImplementedError

    def _read_raw(self) -> bytes:
        """The file's next bytes as stored (compressed, in a gzip stream); empty at its end."""
        raise NotImplementedError

    def _more(self, data: bytearray) -> bool:
        """Append the file's next stored bytes to `data`; False at the end of the file."""
        more = self._read_raw()
        data += more
        return bool(more)

    def resync(self, scan_limit: int) -> _Stream | None:
        """The stream to read on from, at the next record start after the current record's first line (this one,
        or one for the other format); None if there is none. `scan_limit`: decompressed bytes a gzip stream may
        inflate looking for it."""
        raise NotImplementedError

    def _scan(self, data: bytearray, start: int) -> tuple[str | None, bytearray, int, int]:
        """The first record start in data[start:] and the file after it (extended by `_more`, compressed or
        plain bytes alike): a WARC version line ("plain") or a gzip member inflating to `WARC/`
        ("gzip"). Returns (kind or None at the end, the data left, the start's index in it, bytes dropped before
        the data left)."""
        dropped = 0
        while True:
            line = _RECORD_LINE.search(data, start)
            member = data.find(GZIP_MAGIC, start, line.start() if line else len(data))
            if member >= 0:
                if len(data) - member < _VERIFY_WINDOW and self._more(data):
                    continue                    # more bytes to check the member with
                if _starts_record(bytes(data[member:member + _VERIFY_WINDOW])):
                    return "gzip", data, member, dropped
                start = member + 1
                continue
            if line:
                return "plain", data, line.start(), dropped
            keep_from = min(max(start, len(data) - _LINE_TAIL), len(data))
            dropped += keep_from
            del data[:keep_from]
            start = 0
            if not self._more(data):
                return None, data, 0, dropped


class _PlainStream(_Stream):
    def __init__(self, raw: BinaryIO, head: bytes, produced: int = 0):
        super().__init__(raw, produced + len(head))
        self.buffer += head

    def _produce(self, max_bytes: int) -> bytes:
        return self.raw.read(min(max_bytes, CHUNK))

    def _check_format(self) -> None:
        self._fill(len(GZIP_MAGIC))
        if self.buffer.startswith(GZIP_MAGIC, self.pos):   # gzip members follow (the buffer holds raw bytes)
            rest = bytes(self.buffer[self.pos:])
            raise _Switch(_GzipStream(self.raw, rest, self.produced - len(rest)), mid_record=False)

    def skip_block(self, n: int) -> bool:
        """Leave a record's block of n bytes unread and consume the separator after it; False (and nothing moved)
        when the block runs past the end of the file or is not followed by a separator and a record start."""
        if n <= self.available:
            self.pos += n
            return self.end_record()
        rest = n - self.available
        if not _seekable(self.raw):
            while rest > 0:
                data = self.raw.read(min(rest, CHUNK))
                if not data:
                    break
                rest -= len(data)
            self.buffer, self.pos, self.line_start = bytearray(), 0, 0
            return rest == 0 and self.end_record()
        here = self.raw.tell()
        saved = self.buffer, self.pos
        try:
            size = self.raw.seek(0, io.SEEK_END)
            if here + rest <= size:
                self.raw.seek(here + rest)
                self.buffer, self.pos = bytearray(), 0
                if self.end_record():
                    return True
        except (OSError, ValueError, OverflowError):
            pass
        self.raw.seek(here)
        self.buffer, self.pos = saved
        return False

    def resync(self, scan_limit: int) -> _Stream | None:
        """Find the next record start (plain files cost no inflation to scan)."""
        kind, data, index, dropped = self._scan(self.buffer, self.line_start + 1)
        if kind == "gzip":
            return _GzipStream(self.raw, bytes(data[index:]), self.produced)
        self.buffer, self.pos, self.line_start = (data[index:] if kind else bytearray()), 0, 0
        self.unread = 0 if kind else dropped + len(data)
        return self if kind else None

    def _read_raw(self) -> bytes:
        return self.raw.read(CHUNK)


class _GzipStream(_Stream):
    """Gzip members inflated in turn, as one stream (records may share or span members), `max_length`-bounded.

    After a broken record, reading resumes at the next line that starts a WARC record in the inflated data, when
    the data still inflates and such a line is within what a record may hold (records sharing a member); else at
    the first gzip member that starts after the broken record's first line and inflates to `WARC/`. For that, the
    compressed bytes since the first member started during the current record are kept (`replay`), with where
    each member starts (offsets in the file, compressed and decompressed). The current member's own compressed
    bytes are kept too (`member`, up to _MEMBER_KEEP): damage can make zlib read past the member's end (a bogus
    header flag asks for a file name, a changed block runs on), and the next member's start is then among the
    bytes it consumed.
    """

    inflates = True

    def __init__(self, raw: BinaryIO, head: bytes, produced: int = 0):
        super().__init__(raw, produced)
        self.compressed = head      # input not yet given to the inflater
        self.at = 0                 # file offset of compressed[0] (relative to where this stream began)
        self.member_at = 0          # file offset of the current member
        self.inflater = zlib.decompressobj(31)
        self.broken = False         # the inflater failed: the data after it cannot be read by inflating on
        self.raw_done = False
        self.finished = False       # no record start left to resync to
        self.replay: bytearray | None = None
        self.replay_at = 0
        self.members: list[tuple[int, int]] = []    # (decompressed offset, file offset) of member starts
        self.member: bytearray | None = bytearray(head)    # compressed bytes from member_at, while bounded

    def start_record(self, header_budget: int) -> None:
        super().start_record(header_budget)
        here = self.produced - self.available
        self.members = [(offset, at) for offset, at in self.members if offset > here]
        if not self.members:
            self.replay = None
        elif self.members[0][1] > self.replay_at:
            del self.replay[:self.members[0][1] - self.replay_at]
            self.replay_at = self.members[0][1]

    def _offset(self, index: int) -> int:
        """The decompressed offset of buffer[index]."""
        return self.produced - len(self.buffer) + index

    def _read_raw(self) -> bytes:
        data = b"" if self.raw_done else self.raw.read(CHUNK)
        self.raw_done = not data
        if self.replay is not None:
            self.replay += data
        if self.member is not None:
            if len(self.member) + len(data) <= _MEMBER_KEEP:
                self.member += data
            else:
                self.member = None
        return data

    def _produce(self, max_bytes: int) -> bytes:
        while not self.finished:
            if self.inflater.eof and not self._next_member():
                return b""
            out = self._inflate(max_bytes)
            if out:
                return out
        return b""

    def _inflate(self, max_bytes: int) -> bytes:
        """One step inside the current member."""
        try:
            if not self.compressed:
                self.compressed = self._read_raw()
                if not self.compressed:
                    raise _Truncated("the gzip data ends inside a member")
            given = len(self.compressed)
            out = self.inflater.decompress(self.compressed, max_bytes)
        except (zlib.error, _Truncated):
            self.broken = True
            raise
        self.compressed = self.inflater.unused_data if self.inflater.eof else self.inflater.unconsumed_tail
        self.at += given - len(self.compressed)
        return out

    def end_record(self) -> bool:
        """Look for the separator within the record's gzip member only; when the record ends its member, inflate to
        the member's end, so that zlib checks its CRC (and its presence) before the record is used: a cut or damaged
        member costs its record, not a wrong page. A member's end is a record's end: the next member is checked
        when its record is read, so that its damage is its own record's."""
        while self.available < _END_PEEK and not self.inflater.eof and not self.finished:
            self._keep(self._inflate(_END_PEEK - self.available))
        if not self._take_separator():
            return False
        while not self.available and not self.inflater.eof and not self.finished:
            self._keep(self._inflate(1))
        return True

    def _keep(self, data: bytes) -> None:
        self.produced += len(data)
        self.buffer += data

    def skip_block(self, n: int) -> bool:
        """Inflate the block and drop it, within its gzip member, to reach the records after it in the member
        (records sharing a member; a file gzipped as one member). A record boundary inside the block ends it there
        (its Content-Length is too long), as for a block read (`_absorbs_a_record`). False, the stream left for
        `resync` after what was dropped, when the member (or its data) ends inside the block, when no separator
        follows it, or when it inflates to more than SKIP_RATIO times its compressed size: a bomb, not inflated
        on (`broken`: resync jumps to the next member)."""
        line_at = self._offset(self.line_start)
        if self.finished or any(offset > line_at for offset, _ in self.members):
            return False        # a header across members (rare): the compressed bytes kept for resync stay bounded
        self.members, self.replay = [], None    # no member starts after the record's first line: none to replay
        piece = bytes(self.buffer[self.pos:])   # the block's first bytes, inflated with the header
        self.buffer, self.pos, self.line_start = bytearray(), 0, 0
        rest, tail, inflated, start_at = n, b"", 0, self.at
        while True:
            take = piece[:rest]
            scan = tail + take
            cut = scan.find(_BOUNDARY)
            if cut >= 0:        # the next record starts inside the block
                self.buffer, self.pos = bytearray(scan[cut + 4:] + piece[len(take):]), 0
                return True
            rest -= len(take)
            tail = scan[-(len(_BOUNDARY) - 1):]
            self.buffer, self.pos = bytearray(tail + piece[len(take):]), len(tail)
            if rest == 0:
                break
            if inflated > SKIP_RATIO * (self.at - start_at) + CHUNK:
                self.broken = True
                return False
            if self.inflater.eof:
                return False
            try:
                piece = self._inflate(min(CHUNK, rest))
            except (zlib.error, _Truncated):
                return False
            self.produced += len(piece)
            inflated += len(piece)
        try:
            return self.end_record()
        except (zlib.error, _Truncated):
            return False

    def _next_member(self) -> bool:
        while len(self.compressed) < _LOOK_AHEAD:
            more = self._read_raw()
            if not more:
                break
            self.compressed += more
        if not self.compressed:
            return False
        if GZIP_MAGIC.startswith(self.compressed):     # the file ends inside the next member's first bytes
            self.broken = True
            raise _Truncated("the gzip data ends inside a member header")
        if not self.compressed.startswith(GZIP_MAGIC):
            if self.compressed.lstrip(b"\r\n").startswith(b"WARC/"):     # a plain WARC follows
                raise _Switch(_PlainStream(self.raw, self.compressed, self.produced), bool(self.buffer.strip()))
            self.broken = True
            raise zlib.error("data after a gzip member is not gzip")
        if self.replay is None:
            self.replay, self.replay_at = bytearray(self.compressed), self.at
        self.members.append((self.produced, self.at))
        self._start_member(self.compressed, self.at)
        return True

    def _start_member(self, compressed: bytes, at: int) -> None:
        self.compressed, self.at, self.member_at = bytes(compressed), at, at
        self.member = bytearray(compressed[:_MEMBER_KEEP]) if len(compressed) <= _MEMBER_KEEP else None
        self.inflater = zlib.decompressobj(31)
        self.broken = False

    def resync(self, scan_limit: int) -> _Stream | None:
        # A bomb (a too-large block inflating far past its size) is `broken` too: jumped over rather than inflated.
        if not self.broken:
            following = self._next_line(scan_limit)
            if following is not None:
                return following
        return self._jump()

    def _next_line(self, scan_limit: int) -> _Stream | None:
        """The next line starting a record, inflating at most `scan_limit` bytes after the broken record's first
        line (and never past damage); None if there is none."""
        start, stop = self.line_start + 1, self.line_start + scan_limit
        while True:
            line = _RECORD_LINE.search(self.buffer, start)
            if line:
                self.buffer, self.pos, self.line_start = self.buffer[line.start():], 0, 0
                return self
            if len(self.buffer) >= stop:
                return None
            start = max(start, len(self.buffer) - _LINE_TAIL)
            try:
                if not self._fill_once(min(CHUNK, stop - len(self.buffer))):
                    return None
            except _Switch as switch:       # a plain WARC after the member: it starts with a record
                return switch.stream
            except (zlib.error, _Truncated):
                return None

    def _jump(self) -> _Stream | None:
        """Drop what is buffered and find the next gzip member that inflates to `WARC/` (or plain WARC data) and
        starts after the current record's first line (and after the member it is in), scanning compressed bytes."""
        line_at = self._offset(self.line_start)
        later = [at for offset, at in self.members if offset > line_at]
        if later:
            data, data_at, start = self.replay[later[0] - self.replay_at:], later[0], 0
        elif self.member is not None:       # rescan the current member's bytes, some of which zlib may have eaten
            data, data_at, start = bytearray(self.member), self.member_at, 1
        else:
            data, data_at = bytearray(self.compressed), self.at
            start = max(0, self.member_at + 1 - data_at)
        self.buffer, self.pos, self.line_start = bytearray(), 0, 0
        self.replay, self.members, self.member = None, [], None
        kind, data, index, dropped = self._scan(data, start)
        if kind == "plain":
            self.finished = True
            return _PlainStream(self.raw, bytes(data[index:]), self.produced)
        if kind is None:
            self.compressed, self.finished, self.unread = b"", True, dropped + len(data)
            return None
        self._start_member(data[index:], data_at + dropped + index)
        return self


def _separator(after: bytes, at_end: bool) -> tuple[int, bool] | None:
    """The record separator at the start of `after` (bytes after a block, `at_end` when the data stops within
    them): its length, and whether a record start or the end follows it; None when there is none (the block's
    Content-Length is wrong).

    A separator is two line ends or more (CRLF CRLF, or LF LF), or line ends up to the end of the data. Two line
    ends then bytes that start no record also pass, unless the block holds a WARC version line (checked by the
    caller): then the block absorbed the next record and ends by chance on a blank line in it. Otherwise those
    bytes are a malformed record of their own, skipped without costing the good record before them.
    """
    rest = after.lstrip(b"\r\n")
    run = len(after) - len(rest)
    if not rest:
        return (run, True) if at_end else None
    if after.count(b"\n", 0, run) < 2:
        return None
    return run, rest.startswith((b"WARC/", GZIP_MAGIC))


def _absorbs_a_record(block: bytes, next_unsure: bool) -> bool:
    """Whether a block holds another record's start: a record boundary as WARC writers write it, or, when the
    block is not followed by a record start, any WARC version line (the block then ends on a blank line by chance).
    A page quoting a WARC record is read as records from the quote on: rare, and not a page worth the risk."""
    return _BOUNDARY in block or (next_unsure and _RECORD_LINE.search(block) is not None)


def _starts_record(compressed: bytes) -> bool:
    try:
        return zlib.decompressobj(31).decompress(compressed, 5) == b"WARC/"
    except zlib.error:
        return False


def _seekable(raw: BinaryIO) -> bool:
    try:
        return bool(raw.seekable())
    except (AttributeError, OSError):
        return False


def _describe(headers) -> str:
    return headers.get_header("WARC-Target-URI") or headers.get_header("WARC-Record-ID") or "record"


def _short(err: BaseException, width: int = 160) -> str:
    text = str(err)
    return _printable(text if len(text) <= width else text[:width] + "...")


def _printable(text: str) -> str:
    """Text from a file made safe to log: control characters (an escape sequence, a bell, a line end) escaped."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
