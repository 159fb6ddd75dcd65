"""The bundled web sample (sample/web/) is exactly what sample/build_web_sample.py writes, and holds what it says."""

import csv
import importlib.util
import re
import sys
import zlib
from collections import Counter

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.conftest import REPO

WEB = REPO / "sample" / "web"
OTHERS = ("deu_Latn", "fra_Latn", "spa_Latn", "rus_Cyrl", "zho_Hans")
HTML_LANG = {"en": "eng_Latn", "de": "deu_Latn", "fr": "fra_Latn", "es": "spa_Latn", "ru": "rus_Cyrl",
             "zh-CN": "zho_Hans"}
GOLD_SENTENCE_PAIRS = {"deu_Latn": 33, "fra_Latn": 33, "spa_Latn": 32, "rus_Cyrl": 33, "zho_Hans": 33}
STORIES = 5


@pytest.fixture(scope="module")
def builder():
    spec = importlib.util.spec_from_file_location("build_web_sample", REPO / "sample" / "build_web_sample.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look up their module while the file runs
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def gzip_members(data: bytes) -> list[tuple[bytes, bytes]]:
    """(compressed, decompressed) per gzip member."""
    members = []
    while data:
        inflate = zlib.decompressobj(wbits=31)
        payload = inflate.decompress(data)
        assert inflate.eof, "truncated gzip member"
        used = len(data) - len(inflate.unused_data)
        members.append((data[:used], payload))
        data = inflate.unused_data
    return members


def test_committed_files_match_the_generator(builder, tmp_path):
    builder.build(tmp_path)
    for name in ("pairs.tsv", "sentences.tsv"):
        assert (tmp_path / name).read_bytes() == (WEB / name).read_bytes(), name
    # Records compared after inflating: the deflate stream itself may differ under another zlib build.
    rebuilt = [payload for _, payload in gzip_members((tmp_path / "sample.warc.gz").read_bytes())]
    committed = [payload for _, payload in gzip_members((WEB / "sample.warc.gz").read_bytes())]
    assert rebuilt == committed


def test_rebuilds_are_byte_identical_with_one_gzip_member_per_record(builder, tmp_path):
    first, second = builder.build(tmp_path / "a"), builder.build(tmp_path / "b")
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name
    members = gzip_members((tmp_path / "a" / "sample.warc.gz").read_bytes())
    assert len(members) == 1 + 2 * 34
    for compressed, payload in members:
        assert compressed[4:8] == b"\0\0\0\0"  # gzip MTIME unset
        assert payload.startswith(b"WARC/1.0\r\n")


def read_warc():
    with open(WEB / "sample.warc.gz", "rb") as handle:
        for record in ArchiveIterator(handle, check_digests="raise"):
            yield record, record.content_stream().read()


def decoded_html(record, body: bytes) -> str:
    """The page as a browser decodes it: charset from the HTTP header, else from the page's <meta>."""
    declared = re.search(r"charset=([\w-]+)", record.http_headers.get_header("Content-Type"))
    if declared is None:
        declared = re.search(rb"<meta[^>]*charset=[\"']?([\w-]+)", body)
        return body.decode(declared.group(1).decode("ascii"))
    return body.decode(declared.group(1))


@pytest.fixture(scope="module")
def articles() -> dict[str, tuple[str, str]]:
    """url -> (language from <html lang>, the <article> element's HTML) for the HTML pages served with 200."""
    pages = {}
    for record, body in read_warc():
        if record.rec_type != "response" or record.http_headers.get_statuscode() != "200":
            continue
        if not record.http_headers.get_header("Content-Type").startswith("text/html"):
            continue
        text = decoded_html(record, body)
        lang = HTML_LANG[re.search(r'<html lang="([\w-]+)">', text).group(1)]
        article = re.search(r"<article[ >].*?</article>", text, re.DOTALL)
        pages[record.rec_headers.get_header("WARC-Target-URI")] = (lang, article.group(0))
    return pages


def test_the_crawl_holds_the_pages_and_the_records_a_reader_must_skip():
    records = list(read_warc())
    assert records[0][0].rec_type == "warcinfo"
    assert Counter(r.rec_type for r, _ in records) == {"warcinfo": 1, "request": 34, "response": 34}
    responses = {r.rec_headers.get_header("WARC-Record-ID"): r for r, _ in records if r.rec_type == "response"}
    for record, _ in records:
        if record.rec_type == "request":
            response = responses[record.rec_headers.get_header("WARC-Concurrent-To")]
            assert response.rec_headers.get_header("WARC-Target-URI") == record.rec_headers.get_header(
                "WARC-Target-URI")
    kinds = Counter((r.http_headers.get_statuscode(), r.http_headers.get_header("Content-Type").split(";")[0])
                    for r in responses.values())
    assert kinds == {("200", "text/html"): 30, ("200", "text/plain"): 1, ("200", "image/png"): 1,
                     ("301", "text/html"): 1, ("404", "text/html"): 1}


def test_five_pages_per_language_two_of_them_not_utf8(articles):
    assert Counter(lang for lang, _ in articles.values()) == {lang: STORIES for lang in HTML_LANG.values()}
    charsets = Counter()
    for record, body in read_warc():
        if record.rec_headers.get_header("WARC-Target-URI") in articles and record.rec_type == "response":
            charsets[re.search(rb"<meta[^>]*charset=[\"']?([\w-]+)", body).group(1).decode()] += 1
    assert charsets == {"utf-8": 28, "windows-1252": 1, "gb2312": 1}


def read_tsv(name: str) -> list[dict[str, str]]:
    with open(WEB / name, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_every_gold_pair_is_in_the_articles_of_its_two_pages(articles):
    pairs = read_tsv("pairs.tsv")
    assert {row["tgt_lang"] for row in pairs} == {"eng_Latn"}
    assert Counter((row["src_lang"], row["kind"]) for row in pairs) == {
        **{(lang, "sentence"): n for lang, n in GOLD_SENTENCE_PAIRS.items()},
        **{(lang, "title"): STORIES for lang in OTHERS}}
    for row in pairs:
        for side in ("src", "tgt"):
            lang, article = articles[row[f"{side}_url"]]
            assert lang == row[f"{side}_lang"]
            assert row[f"{side}_text"] in article, (row["pair_id"], row[f"{side}_text"])


def test_gold_texts_are_unambiguous():
    """No article sentence or title occurs twice in its language, so a mined pair matches at most one gold pair."""
    texts = Counter((row["language"], row["text"]) for row in read_tsv("sentences.tsv"))
    titles = {(row[f"{side}_lang"], row[f"{side}_text"]) for row in read_tsv("pairs.tsv") if row["kind"] == "title"
              for side in ("src", "tgt")}
    texts.update(titles)
    assert len(titles) == 6 * STORIES
    assert max(texts.values()) == 1


def test_every_page_has_sentences_without_a_translation(articles):
    """Mining must discriminate: English keeps two untranslated sentences per page, the others one to three."""
    sentences = read_tsv("sentences.tsv")
    gold = {(row["src_lang"], row["src_text"]) for row in read_tsv("pairs.tsv")}
    gold |= {("eng_Latn", row["tgt_text"]) for row in read_tsv("pairs.tsv")}
    untranslated = Counter()
    for row in sentences:
        assert row["text"] in articles[row["url"]][1]
        assert bool(row["pair_id"]) == ((row["language"], row["text"]) in gold)
        untranslated[row["url"]] += not row["pair_id"]
    for url, (lang, _) in articles.items():
        assert (untranslated[url] == 2) if lang == "eng_Latn" else (1 <= untranslated[url] <= 3), url
