"""Crawl files -> `Page`s: HTTP 200 HTML responses from WARC files, text conversions from WET files.

    pages = read_pages("gs://bucket/CC-MAIN-...warc.gz", tally)     # any path Beam's FileSystems opens

Files are gzipped (member by member, as crawlers write them) or plain. warcio parses the record and HTTP
headers; the reading around them is ours, because warcio's reader inflates each 16 KiB of compressed input in one
go (16 MB out of a bomb) and reads every record to its end to reach the next one, so a gzip bomb or a 2 GB record
costs what it declares. Here:

- a record's block (WARC Content-Length) over `max_payload_bytes` is skipped (`too-large`) without inflating
  it: in a gzip file we jump to the next gzip member that inflates to `WARC/`; in a plain file we seek past it;
- headers are read under a budget (`max_header_bytes`), and nothing is inflated beyond what a record may hold;
- an HTTP body with Content-Encoding gzip/deflate is inflated to at most `max_payload_bytes`, or skipped;
- a broken record (bad header, bad Content-Length, corrupt gzip data) is skipped (`malformed`, `bad-gzip`) and
  reading goes on at the next record; a file cut off inside a record (truncated gzip or plain) ends with one
  `truncated` skip, after every record before the break.

Kept: `response` records with status 200 and an HTML media type (text/html, application/xhtml+xml; from the
HTTP Content-Type, else WARC-Identified-Payload-Type, else the first bytes), `resource` records with an HTML
Content-Type, and WET `conversion` records (as text). Bodies are decoded by `charset.decode_html`. A record's
`position` is its index in the file, counting every record (bad ones included).

Counts reported to the tally under stage "read": records, records:<WARC-Type>, pages, pages:html|text,
charset:<method>, charset:declared-wrong, truncated-by-crawler, bytes (decompressed bytes read: what reading
cost, skipped blocks not included), and skipped:<reason> with reasons
malformed, bad-gzip, truncated, too-large, not-200, not-html, content-encoding, empty, undecodable.

Limitation: a gzip file that holds many records in one member (against the WARC standard's advice) loses the
records after a too-large one in the same member, since finding them would mean inflating it.
"""

from __future__ import annotations

import functools
import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import BinaryIO

from miner.io import InputFormatError
from pipelines.text.charset import UndecodableError, charset_from_content_type, decode_html
from pipelines.text.records import Page, Tally

STAGE = "read"
HTML_TYPES = ("text/html", "application/xhtml+xml")
GZIP_MAGIC = b"\x1f\x8b\x08"
CHUNK = 1 << 16
_VERIFY_WINDOW = 4096       # compressed bytes inflated to check that a gzip member starts a WARC record
_MEMBER_KEEP = 4 << 20      # compressed bytes of the current gzip member kept to rescan after damage inside it
_SNIFF = 1024               # bytes looked at for "<html" when no media type is given


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on what one record may cost; a record over a bound is skipped with its reason."""

    max_payload_bytes: int = 5 * 2**20      # a record's block and its decoded HTTP body (Common Crawl cuts at 5 MiB)
    max_header_bytes: int = 2**16           # WARC and HTTP headers, and blank lines between records


class _Skip(Exception):
    """A record left out: its reason and detail, and whether reading must look for the next record start."""

    def __init__(self, reason: str, detail: str = "", resync: bool = False):
        super().__init__(detail)
        self.reason, self.detail, self.resync = reason, detail, resync


class _Truncated(Exception):
    """The file ends inside a record."""


class _OverBudget(Exception):
    """A record's headers (or blank lines) are longer than allowed."""


def read_pages(path: str, tally: Tally, limits: ReadLimits = ReadLimits()) -> Iterator[Page]:
    """Pages of one WARC or WET file (gzipped or plain), local or remote; bad records are counted skips."""
    from apache_beam.io.filesystem import CompressionTypes  # Beam's I/O library, not a pipeline: gs:// and local alike
    from apache_beam.io.filesystems import FileSystems

    try:
        raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    except Exception as err:  # Beam wraps every backend's error in its own types
        raise InputFormatError(f"{path}: cannot open ({err})") from None
    with raw:
        yield from iter_pages(raw, path, tally, limits)


def iter_pages(raw: BinaryIO, source: str, tally: Tally, limits: ReadLimits = ReadLimits()) -> Iterator[Page]:
    """Pages from an open binary file of WARC records; `source` names it in pages and skips."""
    stream = _open_stream(raw, source)
    try:
        yield from _pages(stream, source, tally, limits)
    finally:  # also when the caller stops early
        tally.count(STAGE, "bytes", stream.produced)


def _pages(stream: _Stream, source: str, tally: Tally, limits: ReadLimits) -> Iterator[Page]:
    position = 0
    while True:
        stream.start_record(limits.max_header_bytes)
        where = f"{source}#{position}"
        try:
            record = _next_record(stream, limits)
            if record is None:
                return
            page = _page(record, source, position, tally, limits)
        except _Skip as skip:
            tally.skip(STAGE, skip.reason, where, skip.detail)
            if skip.resync and not stream.resync():
                return
        except _Truncated as err:
            # Usually the file was cut; but damage can also make a reader run to the end (a gzip header flag that
            # asks for a file name eats the members after it), so look for a record start after this one.
            tally.skip(STAGE, "truncated", where, str(err))
            if not stream.resync():
                return
        else:
            if page is not None:
                tally.count(STAGE, "pages")
                tally.count(STAGE, f"pages:{page.content_type}")
                yield page
        position += 1


# --- one record -------------------------------------------------------------------------------------------------

@dataclass
class _Record:
    headers: object          # warcio StatusAndHeaders of the WARC record
    block: bytes             # the record's content block, complete


def _next_record(stream: _Stream, limits: ReadLimits) -> _Record | None:
    """The next complete record, None at the end of the file; `_Skip` for a record that cannot be read."""
    from warcio.exceptions import ArchiveLoadFailed
    from warcio.statusandheaders import StatusAndHeadersParserException

    try:
        first = stream.first_line()
        if first is None:
            return None
        headers = _parsers().record.parse_record_stream(
            stream, statusline=first, known_format="warc", no_record_parse=True).rec_headers
    except (ArchiveLoadFailed, StatusAndHeadersParserException, EOFError) as err:
        raise _Skip("malformed", f"WARC header: {_short(err)}", resync=True) from None
    except _OverBudget:
        raise _Skip("malformed", f"WARC header over {limits.max_header_bytes} bytes", resync=True) from None
    except zlib.error as err:
        raise _Skip("bad-gzip", str(err), resync=True) from None
    length = _content_length(headers)
    if length > limits.max_payload_bytes:
        stream.skip_block(length)
        raise _Skip("too-large", f"{_describe(headers)}: {length} bytes > {limits.max_payload_bytes}")
    stream.grant(length)
    try:
        block = stream.read_exactly(length)
        if len(block) < length:
            raise _Truncated(f"{_describe(headers)}: {len(block)} of {length} bytes")
        stream.end_record()
    except zlib.error as err:
        raise _Skip("bad-gzip", f"{_describe(headers)}: {err}", resync=True) from None
    return _Record(headers, block)


def _content_length(headers) -> int:
    value = headers.get_header("Content-Length")
    try:
        length = int(value)
    except (TypeError, ValueError):
        raise _Skip("malformed", f"{_describe(headers)}: Content-Length {value!r}", resync=True) from None
    if length < 0:
        raise _Skip("malformed", f"{_describe(headers)}: Content-Length {length}", resync=True)
    return length


def _page(record: _Record, source: str, position: int, tally: Tally, limits: ReadLimits) -> Page | None:
    """The record as a Page, None when it is not a page (request, metadata, warcinfo...); `_Skip` when bad."""
    headers = record.headers
    kind = (headers.get_header("WARC-Type") or "").strip().lower() or "untyped"
    tally.count(STAGE, "records")
    tally.count(STAGE, f"records:{kind}")
    url = (headers.get_header("WARC-Target-URI") or "").strip().strip("<>")
    if kind == "conversion":
        return _text_page(record, url, source, position, tally)
    if not url.lower().startswith(("http:", "https:")):
        return None
    if kind == "response":
        body, content_type = _http_body(record, limits)
    elif kind == "resource" and _media_type(headers.get_header("Content-Type")) in HTML_TYPES:
        body, content_type = record.block, headers.get_header("Content-Type")
    else:
        return None
    if headers.get_header("WARC-Truncated"):
        tally.count(STAGE, "truncated-by-crawler")
    text, charset = _decoded(body, charset_from_content_type(content_type), url, tally)
    return _make_page(headers, url, text, "html", source, position, charset)


def _text_page(record: _Record, url: str, source: str, position: int, tally: Tally) -> Page:
    """A WET conversion record: UTF-8 text by convention, decoded like any body in case it is not."""
    charset = charset_from_content_type(record.headers.get_header("Content-Type"))
    text, charset = _decoded(record.block, charset, url, tally)
    return _make_page(record.headers, url, text, "text", source, position, charset)


def _make_page(headers, url, text, content_type, source, position, charset) -> Page:
    record_id = (headers.get_header("WARC-Record-ID") or "").strip()
    if not record_id:
        raise _Skip("malformed", f"{url}: no WARC-Record-ID")
    return Page(url=url, record_id=record_id, date=(headers.get_header("WARC-Date") or "").strip(), content=text,
                content_type=content_type, source=source, position=position, charset=charset)


def _decoded(body: bytes, declared: str | None, url: str, tally: Tally) -> tuple[str, str]:
    if not body.strip():
        raise _Skip("empty", url)
    try:
        decoded = decode_html(body, declared)
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
        inflater = zlib.decompressobj(bits)
        try:
            out = inflater.decompress(body, limits.max_payload_bytes + 1)
        except zlib.error:
            continue
        if len(out) > limits.max_payload_bytes:
            raise _Skip("too-large", f"{url}: inflates past {limits.max_payload_bytes} bytes")
        return out
    if _sniffed_type(body) or body.lstrip()[:1] == b"<":    # already inflated by the crawler, header left behind
        return body
    raise _Skip("content-encoding", f"{url}: {encoding} body does not inflate")


# --- the byte stream under the records --------------------------------------------------------------------------

def _open_stream(raw: BinaryIO, source: str) -> _Stream:
    head = raw.read(len(GZIP_MAGIC))
    if head[:1] == GZIP_MAGIC[:1] or head[1:] == GZIP_MAGIC[1:]:   # gzip, or gzip with a damaged first byte
        return _GzipStream(raw, head)
    if not b"WARC/".startswith(head.lstrip()):
        raise InputFormatError(f"{source}: not a WARC file (starts with {head!r})")
    return _PlainStream(raw, head)


class _Stream:
    """Decompressed bytes of a crawl file, read under a budget: never produces more than a record may hold.

    The buffer keeps the current record's bytes from its start (`start_record`), so that after a broken record
    reading can resume right after the broken record's first line.
    """

    def __init__(self, raw: BinaryIO):
        self.raw = raw
        self.buffer = bytearray()
        self.pos = 0            # read position in the buffer
        self.line_start = 0     # buffer position of the current record's first line
        self.budget = 0
        self.produced = 0       # bytes read out of the file after decompression: what reading cost

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
            line = self.readline()
            if not line:
                return None
            if line.strip():
                self.line_start = self.pos - len(line)
                return line

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

    def end_record(self) -> None:
        """Consume the blank lines that end a record (WARC puts two CRLFs after each block)."""
        self._fill(4)
        self._consume_line_ends()

    def _consume_line_ends(self) -> None:
        head = self.buffer[self.pos:self.pos + 4]
        self.pos += len(head) - len(head.lstrip(b"\r\n"))

    def _produce(self, max_bytes: int) -> bytes:
        raise NotImplementedError

    def skip_block(self, n: int) -> None:
        """Leave a record's block of n bytes unread."""
        raise NotImplementedError

    def resync(self) -> bool:
        """Move to the next record start after the current record's first line; False if there is none."""
        raise NotImplementedError


class _PlainStream(_Stream):
    def __init__(self, raw: BinaryIO, head: bytes):
        super().__init__(raw)
        self.buffer += head
        self.produced = len(head)

    def _produce(self, max_bytes: int) -> bytes:
        return self.raw.read(min(max_bytes, CHUNK))

    def skip_block(self, n: int) -> None:
        buffered = min(n, self.available)
        self.pos += buffered
        n -= buffered
        if n and _seekable(self.raw):
            self.raw.seek(n, io.SEEK_CUR)
            return
        while n > 0:
            data = self.raw.read(min(n, CHUNK))
            if not data:
                return
            n -= len(data)

    def resync(self) -> bool:
        """Find the next line that starts a WARC record (plain files cost no inflation to scan)."""
        data, start = self.buffer, self.line_start + 1
        while True:
            found = data.find(b"\nWARC/", start)
            if found >= 0:
                self.buffer, self.pos = data[found + 1:], 0
                return True
            data, start = data[-6:], 0
            more = self.raw.read(CHUNK)
            if not more:
                self.buffer, self.pos = bytearray(), 0
                return False
            data += more


class _GzipStream(_Stream):
    """Gzip members inflated in turn, as one stream (records may share or span members), `max_length`-bounded.

    To resume after a broken record at the first gzip member that starts after its first line, the compressed
    bytes since the first member started during the current record are kept (`replay`), with where each member
    starts (offsets in the file, compressed and decompressed). The current member's own compressed bytes are kept
    too (`member`, up to _MEMBER_KEEP): damage can make zlib read past the member's end (a bogus header flag asks
    for a file name, a changed block runs on), and the next member's start is then among the bytes it consumed.
    """

    def __init__(self, raw: BinaryIO, head: bytes):
        super().__init__(raw)
        self.compressed = head      # input not yet given to the inflater
        self.at = 0                 # file offset of compressed[0]
        self.member_at = 0          # file offset of the current member
        self.inflater = zlib.decompressobj(31)
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
        if not self.compressed:
            self.compressed = self._read_raw()
            if not self.compressed:
                raise _Truncated("the gzip data ends inside a member")
        given = len(self.compressed)
        out = self.inflater.decompress(self.compressed, max_bytes)
        self.compressed = self.inflater.unused_data if self.inflater.eof else self.inflater.unconsumed_tail
        self.at += given - len(self.compressed)
        return out

    def end_record(self) -> None:
        """When the record ends its gzip member, inflate to the member's end, so that zlib checks its CRC (and
        its presence) before the record is used: a cut or damaged member costs its record, not a wrong page."""
        while self.available < 4 and not self.inflater.eof and not self.finished:   # within this member only
            self._keep(self._inflate(4 - self.available))
        self._consume_line_ends()
        while not self.available and not self.inflater.eof and not self.finished:
            self._keep(self._inflate(1))

    def _keep(self, data: bytes) -> None:
        self.produced += len(data)
        self.buffer += data

    def _next_member(self) -> bool:
        while len(self.compressed) < len(GZIP_MAGIC):
            more = self._read_raw()
            if not more:
                break
            self.compressed += more
        if not self.compressed:
            return False
        if GZIP_MAGIC.startswith(self.compressed):     # the file ends inside the next member's first bytes
            raise _Truncated("the gzip data ends inside a member header")
        if not self.compressed.startswith(GZIP_MAGIC):
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

    def skip_block(self, n: int) -> None:
        # Jump to the next member that starts a record rather than inflate n bytes (a gzip bomb declares plenty).
        self.resync()

    def resync(self) -> bool:
        """Drop what is buffered and find the next gzip member that inflates to `WARC/` and starts after the
        current record's first line (and after the member it is in), scanning compressed bytes only."""
        line_at = self.produced - len(self.buffer) + self.line_start
        later = [at for offset, at in self.members if offset > line_at]
        if later:
            data, data_at, start = self.replay[later[0] - self.replay_at:], later[0], 0
        elif self.member is not None:       # rescan the current member's bytes, some of which zlib may have eaten
            data, data_at, start = bytearray(self.member), self.member_at, 1
        else:
            data, data_at = bytearray(self.compressed), self.at
            start = max(0, self.member_at + 1 - data_at)
        self.buffer, self.pos, self.line_start = bytearray(), 0, 0
        self.replay, self.members = None, []
        while True:
            found = data.find(GZIP_MAGIC, start)
            if found < 0:
                data_at += max(len(data) - 2, 0)
                data, start = data[-2:], 0
                if not self._more(data):
                    return self._end()
                continue
            if len(data) - found < _VERIFY_WINDOW and self._more(data):
                continue
            if _starts_record(bytes(data[found:found + _VERIFY_WINDOW])):
                self._start_member(data[found:], data_at + found)
                return True
            start = found + 1

    def _more(self, data: bytearray) -> bool:
        more = self._read_raw()
        data += more
        return bool(more)

    def _end(self) -> bool:
        self.compressed = b""
        self.finished = True
        return False


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
    text = str(err).replace("\r", "\\r").replace("\n", "\\n")
    return text if len(text) <= width else text[:width] + "..."
