"""Write the bundled web sample, sample/web/{sample.warc.gz, pairs.tsv, sentences.tsv}.

The text lives in web_sample_content.py (written for this project): five stories, each one page per language on
its own made-up website under the reserved `.example` top-level domain. This script wraps every article in the
boilerplate of a real site (navigation, cookie notice, language switcher, sidebar, footer) and writes a crawl of
those pages as warcio writes it, one gzip member per record, together with the gold translation pairs (pairs.tsv)
and every article sentence with its place and pair id (sentences.tsv):

    python sample/build_web_sample.py

The crawl opens with a warcinfo record and pairs every response with its request record; besides the 30 HTML
pages it holds what a reader must skip: a robots.txt (text/plain), a redirect (301), an image (image/png) and a
missing page (404). Two pages are not UTF-8: the German library page (windows-1252, declared in the HTTP header and
the <meta>) and the Chinese recipe page (gb2312, declared only in its <meta>).

Rerunning rewrites identical files: dates and record ids are fixed (ids are uuid5 of the record type and url),
header order is fixed, and the per-record gzip members carry no timestamp (zlib's gzip wrapper writes mtime 0).
"""

from __future__ import annotations

import html
import importlib.util
import io
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from miner.io import atomic_output

HERE = Path(__file__).resolve().parent
OUT = HERE / "web"
WARC_NAME = "sample.warc.gz"
CRAWL_START = datetime(2024, 12, 2, 9, 0, 0, tzinfo=UTC)
SECONDS_BETWEEN_FETCHES = 5
USER_AGENT = "cmlm-sample-crawler/1.0 (+https://crawler.example/bot)"

# A 4x4 blue PNG, spelled out so the payload never depends on the zlib that runs this script.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d494844520000000400000004080200000026930929000000104944415478da63908b5a00470cc471"
    "00bf231181cdcc20740000000049454e44ae426082")


def _load_content():
    """web_sample_content.py beside this file, whether run as a script or loaded by path from a test."""
    spec = importlib.util.spec_from_file_location("web_sample_content", HERE / "web_sample_content.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


content = _load_content()


@dataclass(frozen=True)
class WebPage:
    """One article page: where it lives, how it is encoded, and its sentences by paragraph."""

    story: str
    language: str
    url: str
    charset: str                                   # the encoding of the served bytes
    title: str
    paragraphs: tuple[tuple[tuple[str, str], ...], ...]   # ((key, sentence), ...) per paragraph

    @property
    def sentences(self) -> list[tuple[str, str]]:
        return [pair for paragraph in self.paragraphs for pair in paragraph]


def story_url(story: dict, language: str) -> str:
    return f"https://{story['host']}{story['path'][language]}"


def web_pages() -> list[WebPage]:
    """Every article page, story by story, languages in content.LANGUAGES order."""
    return [
        WebPage(story=story["id"], language=lang, url=story_url(story, lang),
                charset=story["charset"].get(lang, "utf-8"), title=story["pages"][lang]["title"],
                paragraphs=tuple(tuple(p) for p in story["pages"][lang]["paragraphs"]))
        for story in content.STORIES for lang in content.LANGUAGES
    ]


# ---------------------------------------------------------------------------------------------------------------
# Gold pairs and the sentence list.

def gold_pairs() -> list[dict[str, str]]:
    """xx -> English translation pairs, language by language and story by story: the titles (kind "title"), then
    the article sentences sharing a key (kind "sentence")."""
    rows = []
    for lang in content.LANGUAGES:
        if lang == content.PIVOT:
            continue
        for story in content.STORIES:
            page, english = story["pages"][lang], story["pages"][content.PIVOT]
            pairs = [("title", "title", page["title"], english["title"])]
            english_by_key = dict(_keyed(english))
            keys = [key for key, _ in _keyed(page)]
            if len(set(keys)) != len(keys) or not set(keys) <= set(english_by_key):
                raise ValueError(f"{story['id']} {lang}: keys {keys} repeat or are not among the English page's")
            pairs += [("sentence", key, text, english_by_key[key]) for key, text in _keyed(page)]
            rows += [{"src_lang": lang, "src_text": src, "tgt_lang": content.PIVOT, "tgt_text": tgt,
                      "kind": kind, "pair_id": f"{story['id']}/{key}", "src_url": story_url(story, lang),
                      "tgt_url": story_url(story, content.PIVOT)} for kind, key, src, tgt in pairs]
    return rows


def _keyed(page: dict) -> list[tuple[str, str]]:
    return [(key, text) for paragraph in page["paragraphs"] for key, text in paragraph if key != content.OWN]


PAIR_COLUMNS = ("src_lang", "src_text", "tgt_lang", "tgt_text", "kind", "pair_id", "src_url", "tgt_url")


def pairs_tsv() -> str:
    return _tsv(PAIR_COLUMNS, [[row[c] for c in PAIR_COLUMNS] for row in gold_pairs()])


def sentences_tsv() -> str:
    """Every article sentence in page order; pair_id is empty for those no other page translates."""
    rows = [[page.language, page.url, str(p), str(s), f"{page.story}/{key}" if key != content.OWN else "", text]
            for page in web_pages()
            for p, paragraph in enumerate(page.paragraphs)
            for s, (key, text) in enumerate(paragraph)]
    return _tsv(("language", "url", "paragraph", "sentence", "pair_id", "text"), rows)


def _tsv(columns, rows) -> str:
    for row in rows:
        bad = [field for field in row if "\t" in field or "\n" in field]
        if bad:
            raise ValueError(f"tab or newline in a sample sentence: {bad[0]!r}")
    return "".join("\t".join(line) + "\n" for line in [list(columns), *rows])


# ---------------------------------------------------------------------------------------------------------------
# HTML.

def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _text(text: str) -> str:
    """Sentences go into the HTML verbatim (the gold must be findable as is), so they must need no escaping."""
    if html.escape(text, quote=False) != text:
        raise ValueError(f"a sample sentence needs HTML escaping: {text!r}")
    return text


def render_page(page: WebPage) -> str:
    story = next(s for s in content.STORIES if s["id"] == page.story)
    ui, lang = content.UI[page.language], page.language
    joiner = "" if lang == "zho_Hans" else " "
    paragraphs = "\n".join(f"<p>{joiner.join(_text(t) for _, t in paragraph)}</p>" for paragraph in page.paragraphs)
    article = (
        f'<article class="post">\n<h1>{_e(page.title)}</h1>\n'
        f'<p class="post-meta">{_e(ui["published"])} <time datetime="{story["date"]}">'
        f'{_e(content.format_date(lang, story["date"]))}</time></p>\n'
        f"{paragraphs}\n"
        f'<div class="share"><span>{_e(ui["share"])}:</span> <a href="#" class="share-mail">{_e(ui["email"])}</a>'
        f' <a href="#" class="share-print">{_e(ui["print"])}</a></div>\n'
        "</article>")
    return _layout(story, lang, page.url, page.title, article, page.charset, _sidebar(story, lang))


def _layout(story: dict, lang: str, url: str, title: str, main: str, charset: str, sidebar: str) -> str:
    ui, prefix, host = content.UI[lang], content.URL_PREFIX[lang], story["host"]
    site = story["site_name"][lang]
    mail = "info@" + host.removeprefix("www.")
    alternates = "\n".join(
        f'<link rel="alternate" hreflang="{content.HTML_LANG[other]}" href="{story_url(story, other)}">'
        for other in content.LANGUAGES)
    switcher = "".join(
        f'<li><a href="{story_url(story, other)}" hreflang="{content.HTML_LANG[other]}" '
        f'lang="{content.HTML_LANG[other]}">{content.LANGUAGE_NAME[other]}</a></li>' for other in content.LANGUAGES)
    nav = "".join(f'<li><a href="/{prefix}/{slug}">{_e(ui[key])}</a></li>' for key, slug in (
        ("home", ""), ("news", "news/"), ("events", "events/"), ("about", "about/"), ("contact", "contact/")))
    meta_charset = (f'<meta http-equiv="Content-Type" content="text/html; charset={charset}">'
                    if charset == "gb2312" else f'<meta charset="{charset}">')
    return f"""<!DOCTYPE html>
<html lang="{content.HTML_LANG[lang]}">
<head>
{meta_charset}
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)} | {_e(site)}</title>
<link rel="canonical" href="{url}">
{alternates}
<link rel="stylesheet" href="/static/css/site.css">
</head>
<body>
<a class="skip-link" href="#main">{_e(ui["skip"])}</a>
<div id="cookie-notice" class="cookie-notice" role="dialog">
<p>{_e(ui["cookie"])} <a href="/{prefix}/privacy/">{_e(ui["privacy"])}</a></p>
<button type="button" class="accept">{_e(ui["accept"])}</button>
<button type="button" class="reject">{_e(ui["necessary"])}</button>
</div>
<header class="site-header">
<a class="logo" href="/{prefix}/"><img src="/static/img/logo.svg" alt="{_e(site)}"> {_e(site)}</a>
<nav class="main-nav"><ul>{nav}</ul></nav>
<form class="search" action="/{prefix}/search" method="get"><input type="search" name="q" \
placeholder="{_e(ui["search"])}"><button type="submit">{_e(ui["search"])}</button></form>
<nav class="languages" aria-label="{_e(ui["languages"])}"><ul>{switcher}</ul></nav>
</header>
<nav class="breadcrumb"><a href="/{prefix}/">{_e(ui["home"])}</a> &rsaquo; \
<a href="/{prefix}/news/">{_e(ui["news"])}</a> &rsaquo; <span>{_e(title)}</span></nav>
<main id="main">
{main}
{sidebar}
</main>
<footer class="site-footer">
<ul class="footer-links"><li><a href="/{prefix}/imprint/">{_e(ui["imprint"])}</a></li>\
<li><a href="/{prefix}/privacy/">{_e(ui["privacy"])}</a></li>\
<li><a href="/{prefix}/accessibility/">{_e(ui["accessibility"])}</a></li>\
<li><a href="/{prefix}/sitemap/">{_e(ui["sitemap"])}</a></li></ul>
<p class="contact">{_e(ui["contact"])}: {_e(ui["email"])} <a href="mailto:{mail}">{mail}</a> \
&middot; {_e(ui["phone"])} +00 12 345 678</p>
<p class="copyright">&copy; 2024 {_e(site)}. {_e(ui["rights"])}</p>
<a class="back-to-top" href="#">{_e(ui["back_to_top"])}</a>
</footer>
</body>
</html>
"""


def _sidebar(story: dict, lang: str) -> str:
    """Links to the other stories in the same language (their titles are boilerplate here), and a newsletter box."""
    ui = content.UI[lang]
    links = "".join(f'<li><a href="{story_url(other, lang)}">{_e(other["pages"][lang]["title"])}</a></li>'
                    for other in content.STORIES if other is not story)
    return (f'<aside class="sidebar">\n<h2>{_e(ui["related"])}</h2>\n<ul>{links}</ul>\n'
            f'<div class="newsletter"><h2>{_e(ui["newsletter"])}</h2><p>{_e(ui["newsletter_text"])}</p>'
            f'<a class="button" href="/{content.URL_PREFIX[lang]}/newsletter/">{_e(ui["subscribe"])}</a></div>\n'
            "</aside>")


def encode_page(page: WebPage) -> bytes:
    """The served bytes. Article text must fit the page's charset; boilerplate that does not (the language
    switcher's names) becomes numeric character references, as publishing systems write it."""
    for text in [page.title, *(t for _, t in page.sentences)]:
        text.encode(page.charset)  # raises UnicodeEncodeError naming the sentence that does not fit
    return render_page(page).encode(page.charset, errors="xmlcharrefreplace")


def not_found_page(story: dict, url: str) -> bytes:
    main = ('<section class="error">\n<h1>Page not found</h1>\n<p>Sorry, the page you are looking for does not '
            'exist or has been moved.</p>\n</section>')
    return _layout(story, content.PIVOT, url, "Page not found", main, "utf-8", "").encode("utf-8")


# ---------------------------------------------------------------------------------------------------------------
# The crawl.

@dataclass(frozen=True)
class Fetch:
    """One HTTP exchange of the crawl: a request record and its response record."""

    url: str
    status: str                      # "200 OK", "404 Not Found", ...
    body: bytes
    content_type: str                # the response's Content-Type header
    ip: str
    extra_headers: tuple[tuple[str, str], ...] = ()


def fetches() -> list[Fetch]:
    """The crawl in order: the library site with its robots.txt, redirect, image and missing page, then the
    other sites, each site's pages in content.LANGUAGES order."""
    pages = web_pages()
    out: list[Fetch] = []
    for index, story in enumerate(content.STORIES):
        ip = f"192.0.2.{10 + index}"  # TEST-NET-1: addresses reserved for documentation
        host = story["host"]
        if index == 0:
            out.append(Fetch(f"https://{host}/robots.txt", "200 OK",
                             b"User-agent: *\nDisallow: /search\nDisallow: /static/css/\n\n"
                             b"Sitemap: https://" + host.encode() + b"/sitemap.xml\n",
                             "text/plain; charset=utf-8", ip))
            out.append(Fetch(f"http://{host.removeprefix('www.')}/", "301 Moved Permanently",
                             b"<html><head><title>301 Moved Permanently</title></head><body>"
                             b"<h1>Moved Permanently</h1></body></html>\n",
                             "text/html", ip, (("Location", f"https://{host}/en/"),)))
        for page in (p for p in pages if p.story == story["id"]):
            out.append(_page_fetch(page, story, ip))
        if index == 0:
            out.append(Fetch(f"https://{host}/static/img/reading-room.png", "200 OK", PNG, "image/png", ip))
            missing = f"https://{host}/en/news/2019/summer-reading-club"
            out.append(Fetch(missing, "404 Not Found", not_found_page(story, missing),
                             "text/html; charset=utf-8", ip))
    return out


def _page_fetch(page: WebPage, story: dict, ip: str) -> Fetch:
    # A charset declared only in <meta> leaves the HTTP header without one (as gb2312 pages often are served).
    content_type = "text/html" if page.charset == "gb2312" else f"text/html; charset={page.charset}"
    published = datetime.fromisoformat(story["date"]).replace(hour=8, minute=30, tzinfo=UTC)
    return Fetch(page.url, "200 OK", encode_page(page), content_type, ip,
                 (("Content-Language", content.HTML_LANG[page.language]),
                  ("Last-Modified", format_datetime(published, usegmt=True))))


def record_id(record_type: str, url: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{record_type} {url}')}>"


def warc_date(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def warc_bytes() -> bytes:
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True, warc_version="1.0")
    info_id = record_id("warcinfo", WARC_NAME)
    writer.write_record(_warcinfo(writer, info_id))
    for number, fetch in enumerate(fetches()):
        moment = CRAWL_START + timedelta(seconds=SECONDS_BETWEEN_FETCHES * number)
        response = _response(writer, fetch, moment, info_id)
        writer.write_record(_request(writer, fetch, moment, info_id, concurrent_to=record_id("response", fetch.url)))
        writer.write_record(response)
    return buffer.getvalue()


def _warc_headers(record_type: str, url: str, moment: datetime, content_type: str,
                  more: list[tuple[str, str]]) -> StatusAndHeaders:
    # Content-Length is a placeholder so that the writer's value lands in the usual place; warcio appends the
    # digests after these.
    headers = [("WARC-Type", record_type), ("WARC-Date", warc_date(moment)),
               ("WARC-Record-ID", record_id(record_type, url)), ("Content-Length", "0"),
               ("Content-Type", content_type), *more]
    return StatusAndHeaders("", headers, protocol="WARC/1.0")


def _warcinfo(writer: WARCWriter, info_id: str):
    fields = {"software": "cmlm-miner sample/build_web_sample.py (warcio)", "format": "WARC File Format 1.0",
              "isPartOf": "cmlm-miner-web-sample", "robots": "obey",
              "description": "Five stories in six languages on made-up sites, written for cmlm-miner's tests.",
              "http-header-user-agent": USER_AGENT}
    payload = "".join(f"{name}: {value}\r\n" for name, value in fields.items()).encode("utf-8")
    headers = StatusAndHeaders("", [("WARC-Type", "warcinfo"), ("WARC-Date", warc_date(CRAWL_START)),
                                    ("WARC-Record-ID", info_id), ("Content-Length", "0"),
                                    ("Content-Type", "application/warc-fields"), ("WARC-Filename", WARC_NAME)],
                               protocol="WARC/1.0")
    return writer.create_warc_record("", "warcinfo", payload=io.BytesIO(payload), length=len(payload),
                                     warc_headers=headers)


def _request(writer: WARCWriter, fetch: Fetch, moment: datetime, info_id: str, concurrent_to: str):
    rest = fetch.url.partition("://")[2]
    host, _, path = rest.partition("/")
    http = StatusAndHeaders(f"GET /{path} HTTP/1.1", [
        ("Host", host), ("User-Agent", USER_AGENT),
        ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        ("Accept-Language", "en-US,en;q=0.5"), ("Accept-Encoding", "identity"), ("Connection", "close")],
        is_http_request=True)
    headers = _warc_headers("request", fetch.url, moment, "application/http; msgtype=request",
                            [("WARC-Warcinfo-ID", info_id), ("WARC-Concurrent-To", concurrent_to),
                             ("WARC-IP-Address", fetch.ip), ("WARC-Target-URI", fetch.url)])
    return writer.create_warc_record(fetch.url, "request", payload=io.BytesIO(b""), length=0,
                                     warc_headers=headers, http_headers=http)


def _response(writer: WARCWriter, fetch: Fetch, moment: datetime, info_id: str):
    http = StatusAndHeaders(fetch.status, [
        ("Date", format_datetime(moment, usegmt=True)), ("Server", "nginx"),
        ("Content-Type", fetch.content_type), ("Content-Length", str(len(fetch.body))),
        *fetch.extra_headers, ("Cache-Control", "max-age=600"), ("Connection", "close")], protocol="HTTP/1.1")
    headers = _warc_headers("response", fetch.url, moment, "application/http; msgtype=response",
                            [("WARC-Warcinfo-ID", info_id), ("WARC-IP-Address", fetch.ip),
                             ("WARC-Target-URI", fetch.url)])
    return writer.create_warc_record(fetch.url, "response", payload=io.BytesIO(fetch.body), length=len(fetch.body),
                                     warc_headers=headers, http_headers=http)


# ---------------------------------------------------------------------------------------------------------------

def build(out_dir: str | Path = OUT) -> list[Path]:
    """Write the sample into `out_dir` (atomically, file by file); returns the paths written."""
    out_dir = Path(out_dir)
    files = {WARC_NAME: warc_bytes(), "pairs.tsv": pairs_tsv().encode("utf-8"),
             "sentences.tsv": sentences_tsv().encode("utf-8")}
    for name, data in files.items():
        with atomic_output(out_dir / name) as handle:
            handle.write(data)
    return [out_dir / name for name in files]


if __name__ == "__main__":
    for path in build():
        print(f"{path} ({path.stat().st_size} bytes)")
