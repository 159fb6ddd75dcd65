"""Decoding crawled bodies: declared charsets when they fit, browsers' label mapping, detection when they do not."""

from __future__ import annotations

import codecs
import random

import pytest

from pipelines.text.charset import Decoded, UndecodableError, codec_name, decode_html, meta_charset

FRENCH = "Les élèves ont préparé un gâteau très spécial pour la fête de l'école, où êtes-vous ? " * 3
RUSSIAN = "Москва является столицей России и крупнейшим городом страны, здесь много музеев. " * 3
JAPANESE = "日本語のテキストです。東京は日本の首都であり、とても大きな都市です。" * 3


@pytest.mark.parametrize("label, name", [("ISO-8859-1", "cp1252"), ("us-ascii", "cp1252"), ("utf8", "utf_8"),
                                         ("Shift_JIS", "cp932"), ("gb2312", "gb18030"), ("EUC-KR", "cp949"),
                                         ("x-sjis", "cp932"), ("windows-1251", "cp1251"), ("windows-125", None),
                                         ("", None), (None, None),
                                         # WHATWG labels Python's registry lacks: each fell to detection
                                         ("windows-874", "cp874"), ("x-cp1254", "cp1254"), ("windows-949", "cp949"),
                                         ("ks_c_5601-1989", "cp949"), ("koi8-ru", "koi8_u"), ("gb_2312", "gb18030"),
                                         ("cn-big5", "big5hkscs"), ("x-mac-roman", "mac_roman"),
                                         ("iso-8859-8-i", "iso8859_8"), ("unicode-1-1-utf-8", "utf_8")])
def test_labels_map_as_browsers_map_them(label, name):
    assert codec_name(label) == name


def test_meta_charset_in_both_forms():
    assert meta_charset(b'<html><head><meta charset="windows-1251">') == "windows-1251"
    assert meta_charset(b'<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=Shift_JIS">') == "Shift_JIS"
    assert meta_charset(b"<html><head><title>none</title>") is None


def test_valid_utf8_wins_over_a_wrong_declaration():
    decoded = decode_html(FRENCH.encode("utf-8"), "iso-8859-1")
    assert (decoded.text, decoded.charset, decoded.method, decoded.declared_wrong) == \
           (FRENCH, "utf_8", "utf-8", True)


def test_declared_legacy_charsets_are_used():
    page = f'<meta charset="shift_jis"><p>{JAPANESE}</p>'
    decoded = decode_html(page.encode("shift_jis"))
    assert JAPANESE in decoded.text and decoded.method == "declared"
    assert decode_html(FRENCH.encode("cp1252"), "ISO-8859-1").text == FRENCH


@pytest.mark.parametrize("text, encoding", [(FRENCH, "cp1252"), (RUSSIAN, "cp1251"), (JAPANESE, "shift_jis"),
                                            (RUSSIAN, "koi8_r")])
def test_undeclared_legacy_charsets_are_detected(text, encoding):
    decoded = decode_html(f"<html><body><p>{text}</p></body></html>".encode(encoding))
    assert text in decoded.text and decoded.method == "detected"


def test_byte_order_marks_and_stateful_encodings():
    assert decode_html(codecs.BOM_UTF16_LE + RUSSIAN.encode("utf-16-le")).text == RUSSIAN
    decoded = decode_html(JAPANESE.encode("iso2022_jp"), "ISO-2022-JP")
    assert (decoded.text, decoded.method) == (JAPANESE, "stateful")


def test_a_mark_the_bytes_after_it_do_not_fit_gives_way_to_the_charset_they_do():
    """A UTF-8 mark before Latin-1 bytes (an editor's mark, then a legacy save): trusted, every accented letter
    became U+FFFD with the declared ISO-8859-1 fitting every byte; now read in it, and said to be a wrong mark."""
    body = codecs.BOM_UTF8 + f"<p>{FRENCH}</p>".encode("latin-1")
    decoded = decode_html(body, "iso-8859-1")
    assert decoded.text == f"<p>{FRENCH}</p>" and decoded.declared_wrong and decoded.charset == "cp1252"
    assert decode_html(codecs.BOM_UTF8 + FRENCH.encode("utf-8")).method == "bom"  # a mark that fits is the answer
    # one bad code unit in UTF-16 is repaired in place: its bytes read as an 8-bit charset would be no text at all
    wide = codecs.BOM_UTF16_LE + "München".encode("utf-16-le") + b"\x00\xd8" + "Ende".encode("utf-16-le")
    assert decode_html(wide) == Decoded("München\ufffdEnde", "utf_16", "bom-repaired", False)


def test_a_few_broken_bytes_in_utf8_are_replaced_not_misread():
    body = FRENCH.encode("utf-8").replace("élèves".encode(), b"\xe9l\xe8ves", 1)
    decoded = decode_html(body, "utf-8")
    assert decoded.method == "utf-8-repaired" and decoded.text.count("\ufffd") == 2
    assert decoded.text.endswith(FRENCH[-40:])


def test_binary_bodies_are_undecodable():
    noise = random.Random(5).randbytes(4000)
    with pytest.raises(UndecodableError, match="no charset fits"):
        decode_html(noise, "utf-8")


@pytest.mark.parametrize("label", ["base64", "hex", "zlib", "bz2", "uu", "quopri", "rot13", "rot_13", "idna",
                                   "punycode", "unicode_escape", "raw_unicode_escape", "undefined", "utf-7"])
def test_a_label_naming_no_web_charset_is_unknown(label):
    assert codec_name(label) is None
    body = f'<meta charset="{label}"><p>{FRENCH} \\u0041</p>'.encode("cp1252")
    decoded = decode_html(body, label)
    assert FRENCH in decoded.text and "\\u0041" in decoded.text and decoded.charset == "cp1252"


def test_declared_utf8_mostly_valid_is_replaced_not_reguessed():
    one_bad = ("Zürich " + "plain ascii words " * 40).encode() + b"\xe9"
    decoded = decode_html(one_bad, "utf-8")
    assert (decoded.charset, decoded.method) == ("utf_8", "utf-8-repaired") and decoded.text.startswith("Zürich")
    # mostly not UTF-8 (legacy bytes throughout): detection, as before
    assert decode_html(FRENCH.encode("cp1252"), "utf-8").charset == "cp1252"


def test_nul_characters_become_spaces():
    assert decode_html(b"<p>erstes\x00zweites</p>").text == "<p>erstes zweites</p>"
    assert decode_html("<p>un\x00deux é</p>".encode("utf-16-le"), "utf-16le").text == "<p>un deux é</p>"


@pytest.mark.parametrize("label", ["utf-16le", "UTF-16", "utf-16be"])
def test_utf16_declared_in_http_without_a_byte_order_mark(label):
    codec = "utf_16_be" if label.endswith("be") else "utf_16_le"
    decoded = decode_html(f"<html><p>{RUSSIAN}</p></html>".encode(codec), label)
    assert (decoded.text, decoded.charset, decoded.method) == (f"<html><p>{RUSSIAN}</p></html>", codec, "declared")
    # a page that is UTF-8 and says UTF-16 is UTF-8; a <meta> UTF-16 label is ignored
    assert decode_html(RUSSIAN.encode(), label).charset == "utf_8"
    assert decode_html(f'<meta charset="{label}"><p>{RUSSIAN}</p>'.encode()).charset == "utf_8"


@pytest.mark.parametrize("bom, codec", [(b"", "utf-32"), (codecs.BOM_UTF32_LE, "utf-32-le"),
                                        (codecs.BOM_UTF32_BE, "utf-32-be")])
@pytest.mark.parametrize("label", ["utf-32", None])
def test_utf32_with_a_byte_order_mark_is_not_read_as_utf16(bom, codec, label):
    page = f"<html><p>{RUSSIAN}</p></html>"
    decoded = decode_html(bom + page.encode(codec), label)     # "utf-32" writes its own mark
    assert (decoded.text, decoded.charset, decoded.method) == (page, "utf_32", "bom")


def test_utf16_with_a_byte_order_mark_is_still_utf16():
    page = f"<html><p>{RUSSIAN}</p></html>"
    assert decode_html(codecs.BOM_UTF16_BE + page.encode("utf-16-be")).text == page
    # a UTF-16 LE page whose first character is U+0000 starts with the UTF-32 LE mark, FF FE 00 00
    decoded = decode_html(codecs.BOM_UTF16_LE + ("\x00" + page).encode("utf-16-le"))
    assert (decoded.text, decoded.charset) == (" " + page, "utf_16")


GERMAN = "Die Bühne des Stadttheaters wird umgebaut, die Aufführungen finden im Sommer draußen statt. " * 3


def _german_page(meta: str | None) -> str:
    head = f'<meta charset="{meta}">' if meta else ""
    return f"<html><head>{head}<title>Theater</title></head><body><p>{GERMAN}</p></body></html>"


@pytest.mark.parametrize("http, meta", [("ISO-8859-1", "utf-8"), (None, None)])
def test_mostly_valid_utf8_with_one_bad_byte_beats_a_legacy_charset(http, meta):
    # one ü of the page in latin-1 (a hand edit in an older editor): the rest must not become "BÃ¼hne" or "BĂĽhne"
    body = _german_page(meta).encode().replace("Aufführungen".encode(), b"Auff\xfchrungen", 1)
    decoded = decode_html(body, http)
    assert (decoded.charset, decoded.method, decoded.declared_wrong) == ("utf_8", "utf-8-repaired", bool(http))
    assert decoded.text == _german_page(meta).replace("Aufführungen", "Auff\ufffdhrungen", 1)


ONE_UMLAUT = ("Die Bühne " + "plain ascii words " * 40).encode("cp1252")
# "ß“" happens to be a valid UTF-8 pair (DF 93); the page's other non-ASCII bytes are not
QUOTED = ("Er sagte: „Das ist groß“, und die Bühne war schön. " + "plain ascii words " * 60).encode("cp1252")


@pytest.mark.parametrize("body", [ONE_UMLAUT, QUOTED], ids=["one-umlaut", "quoted"])
@pytest.mark.parametrize("http, meta", [("ISO-8859-1", None), ("ISO-8859-1", "utf-8"), (None, None)])
def test_legacy_pages_with_few_non_ascii_bytes_stay_legacy(body, http, meta):
    # under 1% of these bytes are invalid UTF-8, but fewer valid UTF-8 sequences than invalid bytes speak for it
    page = (f'<meta charset="{meta}">'.encode() if meta else b"") + body
    decoded = decode_html(page, http)
    assert decoded.method in ("declared", "detected")
    if http or body is QUOTED:      # one umlaut alone is too little for detection to name cp1252
        assert (decoded.text, decoded.charset) == (page.decode("cp1252"), "cp1252")


def test_the_language_identifier_picks_among_the_detected_charsets():
    """A few accented letters do not tell windows-1252 from 1258 by byte statistics: detection alone read this
    Catalan as 1258's "peṛ"; the text stage's identifier reads the right decoding as Catalan more surely (not
    every page: bench/charset_detection.py measures how often)."""
    from pipelines.text.langid import load_identifier
    identifier = load_identifier("combined+experts")  # the stage's default

    def judge(texts):
        return [answers[0][1] if answers else 0.0 for answers in identifier.predict(texts)]

    catalan = "Així és la vida, però també és bonica per a tothom que hi viu."
    body = f"<html><body><p>{catalan}</p></body></html>".encode("cp1252")
    assert catalan not in decode_html(body).text
    decoded = decode_html(body, judge=judge)
    assert catalan in decoded.text and (decoded.charset, decoded.method) == ("cp1252", "judged")
    declared = decode_html(body, "windows-1252", judge=judge)  # a declaration that fits is never judged
    assert declared.method == "declared"


def test_the_judge_does_not_trade_detections_first_decoding_for_another_script_or_a_near_tie():
    """Mojibake in another script reads as that script's language at full confidence (this Russian in cp874 is
    "Thai" at 1.0 to the stage's identifier), and near-equal decodings (cp1251 and its Kazakh variants, which
    differ in letters this sentence lacks) were picked among by noise: detection's first decoding stays."""
    russian = "Он не пришёл домой."
    body = f"<html><body><p>{russian}</p></body></html>".encode("cp1251")
    scores = {"Cyrl": 0.98, "Thai": 1.0, "Grek": 0.99}

    def judge(texts):
        from miner.languages import dominant_script
        return [scores.get(dominant_script([text]), 0.5) + 0.001 * i for i, text in enumerate(texts)]

    decoded = decode_html(body, judge=judge)
    assert russian in decoded.text and decoded.charset == "cp1251"
