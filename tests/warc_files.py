"""WARC files for the tests, written with warcio's WARCWriter, with hand-made broken records between good ones."""

from __future__ import annotations

import gzip
import io
import uuid
import zlib
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter


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


def warc_header(url: str, length: int | str, record_type: str = "response", extra: str = "") -> bytes:
    return (f"WARC/1.0\r\nWARC-Type: {record_type}\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid4()}>\r\n"
            f"WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Target-URI: {url}\r\n"
            f"Content-Type: application/http; msgtype=response\r\n{extra}Content-Length: {length}\r\n\r\n").encode()


def gzip_bomb(url: str, declared: int, zeros: int, record_type: str = "response") -> bytes:
    """One gzip member: a record header declaring `declared` bytes, followed by `zeros` zero bytes."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts = [packer.compress(warc_header(url, declared, record_type))]
    block = bytes(1 << 20)
    for _ in range(zeros >> 20):
        parts.append(packer.compress(block))
    parts.append(packer.flush())
    return b"".join(parts)
