"""WARC files for the tests, written with warcio's WARCWriter, with hand-made broken records between good ones."""

from __future__ import annotations

import gzip
import io
import uuid
import zlib
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

GERMAN = "Die Straße führt über die Brücke zum Marktplatz, wo Bürger ihre Waren anbieten."  # a page's text


def html_page(title: str, *paragraphs: str, charset: str | None = "utf-8") -> str:
    meta = f'<meta charset="{charset}">' if charset else ""
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"<!DOCTYPE html><html><head>{meta}<title>{title}</title></head><body><article><h1>{title}</h1>" \
           f"{body}</article></body></html>"


class WarcBuilder:
    """Records appended in order: `response`/`conversion` through WARCWriter, `raw` bytes as they are (gzipped as
    one member when the file is gzipped)."""

    def __init__(self, path: Path, gzipped: bool = True):
        self.path, self.gzipped = path, gzipped
        self.handle = open(path, "wb")
        self.writer = WARCWriter(self.handle, gzip=gzipped)
        self.writer.write_record(self.writer.create_warcinfo_record(path.name, {"software": "cmlm-miner tests"}))

    def response(self, url: str, body: bytes, status: str = "200 OK",
                 content_type: str | None = "text/html; charset=utf-8", headers: tuple = ()) -> None:
        http = [("Content-Type", content_type)] if content_type else []
        http += list(headers)
        record = self.writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                http_headers=StatusAndHeaders(status, http, protocol="HTTP/1.1"))
        self.writer.write_record(record)

    def conversion(self, url: str, text: str) -> None:
        record = self.writer.create_warc_record(url, "conversion", payload=io.BytesIO(text.encode("utf-8")),
                                                warc_content_type="text/plain")
        self.writer.write_record(record)

    def raw(self, data: bytes) -> None:
        self.handle.write(gzip.compress(data) if self.gzipped else data)

    def raw_member(self, compressed: bytes) -> None:
        self.handle.write(compressed)

    def close(self) -> Path:
        self.handle.close()
        return self.path

    def __enter__(self) -> WarcBuilder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def warc_header(url: str | None, length: int | str, record_type: str | None = "response", extra: str = "",
                content_type: str = "application/http; msgtype=response") -> bytes:
    """A WARC record header; `record_type` or `url` None leaves that field out."""
    kind = f"WARC-Type: {record_type}\r\n" if record_type is not None else ""
    target = f"WARC-Target-URI: {url}\r\n" if url is not None else ""
    return (f"WARC/1.0\r\n{kind}WARC-Record-ID: <urn:uuid:{uuid.uuid4()}>\r\n"
            f"WARC-Date: 2024-01-01T00:00:00Z\r\n{target}"
            f"Content-Type: {content_type}\r\n{extra}Content-Length: {length}\r\n\r\n").encode()


def http_response(body: bytes, content_type: str | None = "text/html; charset=utf-8", headers: tuple = (),
                  status: str = "200 OK") -> bytes:
    """An HTTP response as a WARC `response` record's block."""
    lines = [f"HTTP/1.1 {status}"] + ([f"Content-Type: {content_type}"] if content_type else [])
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def record(url: str | None, block: bytes, length: int | None = None, record_type: str | None = "response",
           content_type: str = "application/http; msgtype=response") -> bytes:
    """A whole record, separator included, with its true Content-Length or the `length` given (a wrong one)."""
    header = warc_header(url, len(block) if length is None else length, record_type, content_type=content_type)
    return header + block + b"\r\n\r\n"


def page_record(url: str, html: bytes, length_error: int = 0, **http) -> bytes:
    """A `response` record of an HTML page, its Content-Length off by `length_error` bytes."""
    block = http_response(html, **http)
    return record(url, block, len(block) + length_error)


def text_record(url: str, text: str, length_error: int = 0) -> bytes:
    """A WET `conversion` record, its Content-Length off by `length_error` bytes."""
    block = text.encode("utf-8")
    return record(url, block, len(block) + length_error, "conversion", "text/plain")


def gzip_bomb(url: str, declared: int, zeros: int, record_type: str = "response") -> bytes:
    """One gzip member: a record header declaring `declared` bytes, followed by `zeros` zero bytes."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts = [packer.compress(warc_header(url, declared, record_type))]
    block = bytes(1 << 20)
    for _ in range(zeros >> 20):
        parts.append(packer.compress(block))
    parts.append(packer.flush())
    return b"".join(parts)
