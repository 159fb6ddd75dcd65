"""Main-content extraction: paragraphs in reading order, bounded work per record, and quality against trafilatura."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from pipelines.text.extract import Extractor, ExtractSettings, extract_document, is_furniture, main, paragraphs_of
from pipelines.text.extract_eval import main as evaluate_main
from pipelines.text.extract_eval import score, summary, throughput
from pipelines.text.records import Page, Tally
from tests.warc_files import WarcBuilder, html_page

ARTICLE = [
    "Die Brücke über den Fluss wurde im Jahr 1890 gebaut und verbindet seitdem die beiden Hälften der Stadt.",
    "Im Zweiten Weltkrieg wurde sie schwer beschädigt, aber schon 1949 wieder für den Verkehr freigegeben.",
    "Heute überqueren sie jeden Tag mehr als zwanzigtausend Fahrzeuge, Radfahrer und Fußgänger.",
    "Eine gründliche Sanierung ist für die kommenden Jahre geplant, die Kosten werden auf vierzig Millionen geschätzt.",
]

BOILERPLATE_PAGE = f"""<!DOCTYPE html><html lang="de"><head><meta charset="utf-8"><title>Die alte Brücke</title></head>
<body>
<header><nav><ul><li><a href="/">Startseite</a></li><li><a href="/politik">Politik</a></li>
<li><a href="/kultur">Kultur</a></li><li><a href="/sport">Sport</a></li></ul></nav></header>
<main><article>
<h1>Die alte Brücke</h1>
<p>{ARTICLE[0]}</p><p>{ARTICLE[1]}</p>
<p>Lesen Sie auch: Neue Radwege in der Innenstadt</p>
<p>{ARTICLE[2]}</p><p>{ARTICLE[3]}</p>
<p>Foto: Stadtarchiv</p>
</article>
<aside><h2>Meistgelesen</h2><ul><li><a href="/a">Wahl im Herbst</a></li><li><a href="/b">Neues Stadion</a></li></ul></aside>
</main>
<footer><p>© 2024 Stadtanzeiger. Alle Rechte vorbehalten.</p><p><a href="/impressum">Impressum</a> |
<a href="/datenschutz">Datenschutz</a></p>
<div class="cookie">Wir verwenden Cookies. Mit der Nutzung der Seite stimmen Sie zu. <a href="#">OK</a></div></footer>
</body></html>"""


def page(content: str, url: str = "http://example.de/bruecke", kind: str = "html", position: int = 0) -> Page:
    return Page(url=url, record_id=f"<urn:uuid:{position}>", date="2024-01-01T00:00:00Z", content=content,
                content_type=kind, source="test.warc.gz", position=position)


def slow_page() -> str:
    # 20,000 link blocks: trafilatura needs seconds for it (about 4 s on the development machine)
    return "<html><body>" + "".join(f'<div><a href="/x{i}">link {i}</a> text text</div>' for i in range(20000)) \
           + "</body></html>"


def skips(tally: Tally) -> dict:
    return {what.split(":", 1)[1]: n for what, n in tally.of("extract").items() if what.startswith("skipped:")}


@pytest.fixture(scope="module")
def extractor():
    with Extractor() as shared:
        yield shared


def test_article_paragraphs_in_order_without_page_furniture(extractor):
    tally = Tally(log_skips=False)
    document = extractor.extract(page(BOILERPLATE_PAGE), tally)
    assert document is not None
    assert document.paragraphs == ("Die alte Brücke", *ARTICLE)
    text = "\n".join(document.paragraphs)
    for furniture in ("Startseite", "Impressum", "Cookies", "Alle Rechte", "Meistgelesen", "Lesen Sie auch",
                      "Stadtarchiv"):
        assert furniture not in text
    assert (document.url, document.document_id, document.source, document.position) == \
           ("http://example.de/bruecke", "<urn:uuid:0>", "test.warc.gz", 0)
    assert tally.of("extract") == {"documents": 1, "paragraphs": len(document.paragraphs)}


def test_the_extraction_process_is_out_of_reach_of_the_terminals_ctrl_c(extractor):
    """Ctrl-C reached the extraction process too: it died mid-page, the page was counted as crashed and saved in
    a chunk, and the resumed run kept the loss (a Dask run lost seven Spanish pairs so)."""
    assert extractor.extract(page(BOILERPLATE_PAGE), Tally()) is not None
    child = extractor._child.process
    assert child is not None and os.getsid(child.pid) != os.getsid(0)


def test_what_a_browser_never_shows_stays_out_and_a_cells_pipe_is_a_pipe(extractor):
    """A <template>'s content is never rendered; trafilatura wrote a pipe inside a table cell as \\|."""
    hidden = "<template><p>Vorlage, die niemand sieht, weil Browser Vorlagen nie darstellen.</p></template>"
    document = extractor.extract(page(BOILERPLATE_PAGE.replace("<body>", "<body>" + hidden, 1)), Tally())
    assert document is not None and not any("Vorlage" in p for p in document.paragraphs)
    assert paragraphs_of("| Zelle \\| mit Strich | andere |") == ["Zelle | mit Strich", "andere"]


def test_decomposed_text_leaves_composed_and_counted(extractor):
    """Text written decomposed (a letter, then its combining marks) leaves in NFC: the encoders' tokenizers do
    not compose it, and it is the same text to a reader. trafilatura composes what it extracts; a WET record's
    text (and resiliparse's) came through as written."""
    import unicodedata

    lines = ["Tiếng Việt là ngôn ngữ chính thức của Việt Nam.", "Die alte Brücke über den Fluss wird erneuert."]
    tally = Tally(log_skips=False)
    document = extractor.extract(page(unicodedata.normalize("NFD", "\n".join(lines)), kind="text"), tally)
    assert document is not None and document.paragraphs == tuple(lines)
    assert tally.of("extract")["nfc"] == 2
    plain = Tally(log_skips=False)
    extractor.extract(page("\n".join(lines), kind="text"), plain)
    assert "nfc" not in plain.of("extract")
    html = extractor.extract(page(unicodedata.normalize("NFD", BOILERPLATE_PAGE)), Tally(log_skips=False))
    assert all(unicodedata.is_normalized("NFC", p) for p in html.paragraphs)


def test_zero_width_joiners_are_kept_as_written(extractor):
    """trafilatura drops what str.isprintable refuses, ZWNJ and ZWJ among them: Persian "می‌خواهم" came out as the
    misspelt "میخواهم", and an emoji family fell apart. As characters or as references, they stay."""
    persian = "من می\u200cخواهم این کتاب\u200cها را امروز بخوانم و با خانواده\u200cام درباره\u200cی آن حرف بزنم."
    written = persian.replace("کتاب\u200cها", "کتاب&zwnj;ها").replace("خانواده\u200cام", "خانواده&#8204;ام")
    body = "".join(f"<p>{written} ({i}) 👨\u200d👩\u200d👧</p>" for i in range(4))
    document = extractor.extract(page(f"<html><body><article>{body}</article></body></html>"), Tally())
    assert document is not None and document.paragraphs[0] == f"{persian} (0) 👨\u200d👩\u200d👧"
    # references as a parser reads them: &#8204 without its semicolon is ZWNJ; &ZWNJ; is no reference (its page was
    # dropped whole on a KeyError) and stays text, as a browser shows it
    loose = body.replace("&zwnj;", "&#8204").replace("\u200d", "&ZWNJ;", 1)
    document = extractor.extract(page(f"<html><body><article>{loose}</article></body></html>"), Tally())
    assert document is not None and document.paragraphs[0] == f"{persian} (0) 👨&ZWNJ;👩\u200d👧"
    arrows = "\U0001f8b0 " + body  # a page that writes the placeholder itself keeps trafilatura's way, unmixed
    kept = extractor.extract(page(f"<html><body><article>{arrows}</article></body></html>"), Tally())
    assert kept is not None and "\u200c" not in "".join(kept.paragraphs)


@pytest.mark.parametrize("time_limit_s", [10.0, 0.0])
def test_resiliparse_extracts_the_article_too(time_limit_s):
    """extract.extractor: resiliparse, in the extraction process or in this one: the article's paragraphs in order,
    the navigation, the aside and the footer left out (its heuristics keep the furniture lines the line filter
    drops)."""
    with Extractor(ExtractSettings(extractor="resiliparse", time_limit_s=time_limit_s)) as resiliparse:
        tally = Tally(log_skips=False)
        document = resiliparse.extract(page(BOILERPLATE_PAGE), tally)
    assert document.paragraphs == ("Die alte Brücke", *ARTICLE)
    assert tally.of("extract") == {"documents": 1, "paragraphs": len(ARTICLE) + 1}


def test_an_unknown_or_missing_extractor_is_named_before_any_page(monkeypatch):
    with pytest.raises(ValueError, match="extract.extractor: 'boilerpipe'; choose from trafilatura, resiliparse"):
        ExtractSettings(extractor="boilerpipe")
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "resiliparse" else real(name, *a))
    with pytest.raises(ValueError, match=r"pip install -e '\.\[resiliparse\]'"):
        ExtractSettings(extractor="resiliparse")


def wrapped(text: str, width: int = 40) -> str:
    """`text` hard-wrapped at `width` columns with indented continuation lines, as editors write HTML source."""
    import textwrap

    return "\n    ".join(textwrap.wrap(text, width))


def test_line_breaks_in_the_source_text_become_spaces_but_pre_and_textarea_keep_theirs():
    from pipelines.text.extract import collapse_source_line_breaks

    html = ("<div>\n  <p>\n    one two\r\n    three <b>four\n five</b>\n six\n  </p><p>seven<br>\neight</p>"
            "<PRE class=x>a\n b<pre>c\nd</pre>e\nf</pre>g\nh</pre>i\nj<prefix>k\nl</prefix><textarea>m\nn")
    assert collapse_source_line_breaks(html) == (
        "<div> <p> one two three <b>four five</b> six </p><p>seven<br> eight</p>"   # <br> is a tag: it stays
        "<PRE class=x>a\n b<pre>c\nd</pre>e\nf</pre>g h</pre>i j<prefix>k l</prefix><textarea>m\nn")


def test_line_breaks_in_the_source_are_spaces_as_a_browser_shows_them(extractor):
    # Paragraphs wrapped in the page's source read as one paragraph each; <br> and <pre> still break lines, as
    # they do on screen (trafilatura's own path collapses the breaks; its fallbacks kept them: the next test)
    article = BOILERPLATE_PAGE
    for sentence in ARTICLE[:3]:
        article = article.replace(f"<p>{sentence}</p>", f"<p>\n    {wrapped(sentence)}\n</p>")
    article = article.replace(f"<p>{ARTICLE[3]}</p>", f"<p>{ARTICLE[3]}</p><p>Erste Zeile<br>\nzweite Zeile</p>"
                                                        "<pre>Zeile eins\nZeile zwei</pre>")
    assert article.count("\n    ") > 6
    document = extractor.extract(page(article), Tally(log_skips=False))
    assert document.paragraphs[:5] == ("Die alte Brücke", *ARTICLE)
    assert "Erste Zeile" in document.paragraphs and "zweite Zeile" in document.paragraphs
    assert "Zeile eins" in document.paragraphs and "Zeile zwei" in document.paragraphs


def test_a_page_wrapped_in_its_source_gives_whole_sentences(shared_data, extractor):
    # The web pool's joe.cat, whose paragraphs are wrapped at 80 columns in the HTML: trafilatura took it through
    # a fallback extractor that kept every line end, and each line was a paragraph, its sentences cut mid-way
    from pipelines.text.warc import read_pages

    tally = Tally(log_skips=False)
    pages = read_pages(str(shared_data / "web" / "warc" / "dolma" / "sample-0000.warc.gz"), tally)
    document = extractor.extract(next(p for p in pages if p.url == "https://joe.cat/"), tally)
    assert any(paragraph.startswith("I am a research scientist at AI2. Previously, I obtained a PhD degree from "
                                    "the Language Technologies Institute at CMU") for paragraph in document.paragraphs)
    assert not any(paragraph.endswith(" from") for paragraph in document.paragraphs)


def test_the_filter_removes_what_trafilatura_keeps(extractor):
    unfiltered = Extractor(ExtractSettings(boilerplate_filter=False, time_limit_s=0))
    with_furniture = unfiltered.extract(page(BOILERPLATE_PAGE), Tally(log_skips=False)).paragraphs
    assert "Lesen Sie auch: Neue Radwege in der Innenstadt" in with_furniture
    assert "Foto: Stadtarchiv" in with_furniture
    assert [p for p in with_furniture if not is_furniture(p)] == \
           list(extractor.extract(page(BOILERPLATE_PAGE), Tally(log_skips=False)).paragraphs)


def test_time_limit_kills_a_slow_extraction_in_a_worker_thread_and_the_next_page_extracts():
    settings = ExtractSettings(time_limit_s=0.5)
    tally = Tally(log_skips=False)
    results = {}

    def work():     # Beam calls DoFns from worker threads, where SIGALRM cannot reach
        results["slow"] = extract_document(page(slow_page(), "http://slow.example/"), tally, settings)
        results["next"] = extract_document(page(BOILERPLATE_PAGE, position=1), tally, settings)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(120)
    assert not thread.is_alive()
    assert results["slow"] is None and skips(tally) == {"timeout": 1}
    assert results["next"] is not None and ARTICLE[0] in results["next"].paragraphs


def test_a_dead_extraction_process_is_a_crashed_skip_and_is_replaced(extractor):
    tally = Tally(log_skips=False)
    assert extractor.extract(page(BOILERPLATE_PAGE), tally) is not None
    os.kill(extractor._child.process.pid, signal.SIGKILL)
    assert extractor.extract(page(BOILERPLATE_PAGE, position=1), tally) is None
    assert extractor.extract(page(BOILERPLATE_PAGE, position=2), tally) is not None
    assert skips(tally) == {"crashed": 1} and tally.of("extract")["documents"] == 2


def test_an_extraction_process_that_dies_as_it_starts_is_named_so_at_once(tmp_path, monkeypatch):
    # a library that fails to import in the child (a broken install): the parent said it "did not start within
    # 120 s", though the process had ended at once
    import time

    from pipelines.text.extract import _ChildExtractor

    (tmp_path / "resiliparse").mkdir()
    (tmp_path / "resiliparse" / "__init__.py").write_text("raise ImportError('a broken install')\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # the child finds the package as the parent does
    child = _ChildExtractor(ExtractSettings(extractor="resiliparse", start_timeout_s=60))
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"exited as it started \(exit code 1"):
        child._start()
    assert time.monotonic() - started < 30


def test_bounded_and_empty_pages_are_counted_skips(extractor):
    tally = Tally(log_skips=False)
    deep = "<html><body>" + "<div>" * 400 + f"<p>{ARTICLE[0]}</p>" + "</div>" * 400 + "</body></html>"
    no_text = '<html><body><img src="a.jpg"><script>var shown = 1;</script><div><img src="b.jpg"></div></body></html>'
    assert extractor.extract(page(deep), tally) is None
    assert extractor.extract(page("  \n "), tally) is None
    assert extractor.extract(page(no_text), tally) is None
    small = Extractor(ExtractSettings(max_html_chars=1000, max_elements=50, time_limit_s=0))
    assert small.extract(page(BOILERPLATE_PAGE), tally) is None
    assert small.extract(page("<p>x</p>" * 60), tally) is None
    assert extractor.extract(page(BOILERPLATE_PAGE), tally) is not None
    assert skips(tally) == {"too-deep": 1, "empty": 1, "no-content": 1, "too-large": 1, "too-many-elements": 1}


def test_wet_text_pages_are_split_into_lines_without_extraction(extractor):
    tally = Tally(log_skips=False)
    document = extractor.extract(page("\n".join(ARTICLE) + "\n\n© 2024 Stadtanzeiger\n", kind="text"), tally)
    assert document.paragraphs == tuple(ARTICLE)


def test_paragraphs_of_trafilatura_text():
    text = "Title\n- first item\n- second item\n| cell a | cell b | \n\n  Plain line.  \n"
    assert paragraphs_of(text) == ["Title", "first item", "second item", "cell a", "cell b", "Plain line."]


def test_a_wide_gap_in_a_line_separates_the_elements_it_joined():
    # the header cells of a real page's table (web pool, resiliparse#26), a title and its date, a footer's links
    text = ("von  bis  Liga  Team   Stagiaire\nHaving Trouble Keeping Up with Group Chat?  - Nov 5, 2018\n"
            "- Impressum  Datenschutz\nOne space between words. Two after a full stop.  The next sentence.\n")
    assert paragraphs_of(text) == [
        "von", "bis", "Liga", "Team", "Stagiaire", "Having Trouble Keeping Up with Group Chat?", "- Nov 5, 2018",
        "Impressum", "Datenschutz", "One space between words. Two after a full stop.", "The next sentence."]


@pytest.mark.parametrize("line", ["Read more: Looted colonial art", "© AFP / MARCO BERTORELLO", "Quelle: dpa",
                                  "Zum Newsletter anmelden", "Alle Rechte vorbehalten.", "Teilen | Twitter | Facebook",
                                  "Aktualisiert am 17.01.2021.", "3:59 PM", "Lea más: Juan propone legalizar"])
def test_furniture_lines(line):
    assert is_furniture(line)


@pytest.mark.parametrize("line", [*ARTICLE, (
    "Wer sich für den Newsletter der Stadt anmeldet, bekommt jede Woche eine Übersicht der Baustellen, der "
    "Veranstaltungen und der Sitzungen des Gemeinderats, und kann ihn jederzeit wieder abbestellen."),
    "Quellen und Flüsse der Region", "Read the full report in the appendix."])
def test_text_is_not_furniture(line):
    assert not is_furniture(line)


def test_show_command_prints_documents_and_the_tally(tmp_path, capsys):
    with WarcBuilder(tmp_path / "show.warc.gz") as b:
        b.response("http://example.de/bruecke", BOILERPLATE_PAGE.encode())
        b.response("http://example.de/gone", b"", status="404 Not Found")
        b.response("http://example.de/zwei", html_page("Zweite Seite", *ARTICLE[2:]).encode())
    assert main(["show", str(b.path), "--limit", "5"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("1\thttp://example.de/bruecke\t") and "paragraphs" in lines[0]
    assert lines[1].startswith("3\thttp://example.de/zwei\t")
    assert "read\tskipped:not-200\t1" in out and "extract\tdocuments\t2" in out


def test_commands_report_bad_input_as_errors(tmp_path, capsys):
    assert evaluate_main(["--eval-dir", str(tmp_path)]) == 2
    assert "no evaldata.json" in capsys.readouterr().err
    assert main(["show", str(tmp_path / "absent.warc.gz")]) == 2
    assert main(["show", str(tmp_path / "absent.warc.gz"), "--set", "no_such=1"]) == 2
    assert "unknown setting" in capsys.readouterr().err
    # each of these was a traceback (ZeroDivisionError, KeyError, EOFError) or an unnamed file
    for content, argv, message in (("{}", ["--every", "0"], "--every must be 1 or more"),
                                   ('{"http://a": {"with": []}}', [], "names no page file"),
                                   ("{bad", [], "evaldata.json: not JSON"),
                                   ('{"http://a": {"file": "p.html"}}', [], "p.html.gz: damaged gzip")):
        (tmp_path / "evaldata.json").write_text(content)
        (tmp_path / "cache").mkdir(exist_ok=True)
        (tmp_path / "cache" / "p.html.gz").write_bytes(b"\x1f\x8b\x08\x00 cut")
        assert evaluate_main(["--eval-dir", str(tmp_path), *argv]) == 2
        assert message in capsys.readouterr().err


def test_throughput_counts_the_same_pages_for_every_system(tmp_path):
    with WarcBuilder(tmp_path / "speed.warc.gz") as b:
        for n in range(3):
            b.response(f"http://example.de/{n}", BOILERPLATE_PAGE.encode())
    results = throughput([str(b.path)])
    assert set(results) == {"warcio + trafilatura.extract", "stage (child process)", "stage (in process)"}
    assert {r["pages"] for r in results.values()} == {3} and all(r["pages_per_s"] > 0 for r in results.values())


def test_stage_keeps_up_with_trafilatura_on_its_evaluation_set(shared_data, tmp_path):
    eval_dir = shared_data / "web/trafilatura-eval"
    report_path = tmp_path / "report.json"
    assert evaluate_main(["--eval-dir", str(eval_dir), "--every", "25", "--report", str(report_path)]) == 0
    report = json.loads(report_path.read_text())
    assert report["pages"] >= 39 and not report["missing"]
    library, stage = report["systems"]["trafilatura.extract defaults"], report["systems"]["stage"]
    assert stage["f1"] >= library["f1"] - 0.005
    assert stage["with_kept"] >= library["with_kept"] - 0.01
    assert stage["without_dropped"] >= library["without_dropped"]


def test_scoring_follows_trafilatura_evaluation():
    item = {"with": ["Die Brücke  wurde", "nicht da"], "without": ["Impressum", "Cookies"]}
    # whitespace-normalised substring search: tp, fp, fn, tn
    assert score(item, "Die Brücke\nwurde gebaut. Impressum") == (1, 1, 1, 1)
    assert score(item, None) == (0, 0, 2, 2)
    assert summary(1, 1, 1, 1)["f1"] == pytest.approx(0.5)
