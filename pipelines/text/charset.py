"""Bytes of a crawled page -> text: the declared charset when it fits the bytes, detection when it does not.

Order, first fit wins (each step is checked against the whole body, strictly, unless it says "repaired"):

1. a byte-order mark (UTF-8, UTF-32, UTF-16: longest first, since the UTF-32 LE mark begins with the UTF-16 LE one);
2. UTF-16/32 declared in the HTTP header, when the body is not UTF-8 or holds NUL bytes (as browsers do; the same
   labels in `<meta>` are ignored, since a page that can be read as ASCII to find them is not UTF-16);
3. a declared 7-bit stateful encoding (ISO-2022-*, HZ) when the body has its escape sequences: these bytes are
   also valid UTF-8, so they must come before the UTF-8 test;
4. strict UTF-8. A page that is valid UTF-8 is UTF-8 whatever it declares: legacy text almost never forms valid
   multi-byte sequences, while pages declaring ISO-8859-1 and serving UTF-8 are common;
5. UTF-8 with a few broken bytes, decoded with U+FFFD for them ("utf-8-repaired") rather than read as mojibake in
   a single-byte charset: when at least 10 valid multi-byte characters stand for each broken sequence; or,
   whatever is declared, when at most 1% of the characters are broken and as many valid multi-byte characters
   stand for them; or, UTF-8 being the declared charset, when either holds: a declaration the bytes mostly bear
   out is not re-guessed;
6. the declared charset: HTTP Content-Type first, then `<meta charset>` / `http-equiv` in the first 16 KiB. Labels
   are mapped as browsers do (WHATWG Encoding Standard): ISO-8859-1 and ASCII mean windows-1252, GB2312 means
   GB18030, Shift_JIS means windows-31j, EUC-KR means windows-949;
7. detection with charset_normalizer on the first 64 KiB; among equally good guesses, the charset more common on
   the web wins (charset_normalizer alone reads short windows-1251 Russian as Mac Cyrillic); given a `judge` (the
   text stage passes its language identifier), the one of its first guesses whose text reads best ("judged"):
   byte statistics do not tell a few accented letters of windows-1252 from 1250 or 1257;
8. the declared or detected charset with replacement characters, when under 1% of the characters are replaced.

Otherwise the body is undecodable (`UndecodableError`): binary data served as text/html, mostly. Only text
encodings count as charsets: a label naming one of Python's other codecs (base64, zlib, rot13, unicode_escape,
idna, punycode...) is an unknown label, never applied to the bytes. NUL characters in the text become spaces
(HTML parsers drop them, which glues the words on either side together).
"""

from __future__ import annotations

import codecs
import dataclasses
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from miner.languages import dominant_script

META_WINDOW = 16384          # bytes searched for <meta charset>
DETECT_WINDOW = 65536        # bytes given to charset detection
REPAIR_RATIO = 10            # valid multi-byte characters per broken sequence for a UTF-8 repair
MAX_REPLACED_SHARE = 0.01    # replacement characters allowed in a last-resort decode

# WHATWG label mapping where Python's codec of the same name decodes differently from browsers.
_BROWSER_CODECS = {
    "latin_1": "cp1252", "ascii": "cp1252", "iso8859_9": "cp1254", "iso8859_11": "cp874", "tis_620": "cp874",
    "gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932", "euc_kr": "cp949", "big5": "big5hkscs",
}
# The WHATWG Encoding Standard's labels that Python's codec registry does not know, mapped to the decoder browsers
# use for them (a label it knows goes through codecs.lookup, then _BROWSER_CODECS)
_EXTRA_LABELS = {
    "x-sjis": "cp932", "windows-31j": "cp932", "x-gbk": "gb18030", "x-euc-jp": "euc_jp",
    **dict.fromkeys(("gb_2312", "gb_2312-80", "csgb2312"), "gb18030"),
    **dict.fromkeys(("cn-big5", "x-x-big5"), "big5hkscs"),
    **dict.fromkeys(("windows-949", "ks_c_5601-1987", "ks_c_5601-1989", "ksc_5601", "csksc56011987", "iso-ir-149",
                     "cseuckr"), "cp949"),
    **dict.fromkeys(("windows-874", "dos-874"), "cp874"),
    **{f"x-cp{page}": f"cp{page}" for page in range(1250, 1259)},
    **dict.fromkeys(("koi", "koi8"), "koi8_r"), "koi8-ru": "koi8_u",
    **dict.fromkeys(("x-mac-roman", "csmacintosh", "mac"), "mac_roman"),
    **dict.fromkeys(("x-mac-cyrillic", "x-mac-ukrainian"), "mac_cyrillic"),
    **dict.fromkeys(("iso-8859-8-i", "csiso88598i", "logical", "visual", "csiso88598e"), "iso8859_8"),
    **dict.fromkeys(("unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"), "utf_8"),
}
# Python codecs that convert str <-> bytes but are no web charset: escapes, domain-name codings, a codec that
# always fails, and UTF-7 (which the WHATWG standard leaves out). Non-text codecs (base64, zlib...) are refused
# by `_is_text_encoding`.
_NOT_CHARSETS = {"unicode_escape", "raw_unicode_escape", "idna", "punycode", "undefined", "charmap", "utf_7"}
_STATEFUL = ("iso2022_jp", "iso2022_jp_2", "iso2022_kr", "hz")
_UNICODE_WIDE = ("utf_16", "utf_16_le", "utf_16_be", "utf_32", "utf_32_le", "utf_32_be")
# A wide label without a byte-order mark: "utf-16" means little-endian on the web (WHATWG), whatever the machine.
_WIDE_DEFAULT = {name: name if name[-3:] in ("_le", "_be") else name + "_le" for name in _UNICODE_WIDE}

# Web usage order (W3Techs): a tie-break between guesses that decode the sample equally well.
_WEB_PRIOR = ["utf_8", "cp1252", "cp1251", "cp932", "shift_jis", "euc_jp", "gb18030", "gbk", "gb2312", "cp949",
              "euc_kr", "cp1250", "iso8859_2", "big5", "big5hkscs", "cp1256", "cp1254", "iso8859_15", "cp874",
              "cp1253", "iso8859_7", "cp1255", "cp1257", "koi8_r", "koi8_u", "iso8859_5", "cp1258", "windows_1258"]

# Longest first: the UTF-32 LE mark FF FE 00 00 begins with the UTF-16 LE mark FF FE.
_BOMS = ((codecs.BOM_UTF8, "utf_8_sig"), (codecs.BOM_UTF32_LE, "utf_32"), (codecs.BOM_UTF32_BE, "utf_32"),
         (codecs.BOM_UTF16_LE, "utf_16"), (codecs.BOM_UTF16_BE, "utf_16"))
_META = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]{1,40})""", re.IGNORECASE)
_CHARSET_PARAM = re.compile(r"""charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]{1,40})""", re.IGNORECASE)


class UndecodableError(ValueError):
    """No charset reads the bytes as text."""


@dataclass(frozen=True)
class Decoded:
    text: str
    charset: str            # Python codec name the text was decoded with
    # bom | bom-repaired | stateful | utf-8 | utf-8-repaired | declared | judged | detected | repaired
    method: str
    declared_wrong: bool    # a charset was declared and the bytes are not in it


@functools.lru_cache(maxsize=4096)     # a crawl repeats a few dozen labels; codecs.lookup is the cost
def codec_name(label: str | None) -> str | None:
    """A charset label (HTTP or HTML) as a Python codec name, mapped as browsers map it; None if unknown."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in _EXTRA_LABELS:
        return _EXTRA_LABELS[label]
    try:
        info = codecs.lookup(label)
    except LookupError:
        return None
    name = info.name.replace("-", "_")
    if not info._is_text_encoding or name in _NOT_CHARSETS:   # the flag the str.encode/bytes.decode methods check
        return None
    name = {"iso8859_1": "latin_1", "us_ascii": "ascii", "mbcs": None}.get(name, name)
    return _BROWSER_CODECS.get(name, name) if name else None


def charset_from_content_type(value: str | None) -> str | None:
    """The `charset=` parameter of a Content-Type header value, as given."""
    match = _CHARSET_PARAM.search(value or "")
    return match.group(1) if match else None


def meta_charset(body: bytes) -> str | None:
    """The charset label of `<meta charset=...>` or `<meta http-equiv=content-type content="...; charset=...">`."""
    match = _META.search(body[:META_WINDOW])
    return match.group(1).decode("ascii") if match else None


# A judge of candidate decodings: their texts in, a score each out (the language identifier's probability of its
# first answer, from the text stage); the best-read text wins among detection's first guesses.
Judge = Callable[[list[str]], list[float]]
JUDGED_GUESSES = 6          # detection's first guesses a judge reads (distinct texts only)
JUDGED_CHARS = 2000         # of each candidate's visible text, tags removed: what the judge reads
# How the judge may overrule detection's first decoding: with another decoding in the same script (mojibake in
# another script reads as that script's language at full confidence: Russian cp1251 read as Thai cp874, Arabic as
# Greek) and surer of its language by more than this log-odds margin (near-equal decodings, such as cp1251 and
# mac_cyrillic apart in one letter, were picked among by noise). Chosen on the train pool: bench/charset_detection.py
JUDGE_SAME_SCRIPT = True
JUDGE_MARGIN = 0.5
_TAG = re.compile(r"<[^>]*>")
_C1 = re.compile("[\x80-\x9f]")  # C1 controls: no web text holds them; a decoding that makes them is wrong


def decode_html(body: bytes, http_charset: str | None = None, judge: Judge | None = None) -> Decoded:
    """Decode a page body (HTML or text) following the order in the module docstring; `judge` picks among the
    detected charsets of a page that declares none that fits (`judged`)."""
    decoded = _decode(body, http_charset, judge)
    if "\x00" in decoded.text:
        return dataclasses.replace(decoded, text=decoded.text.replace("\x00", " "))
    return decoded


def _decode(body: bytes, http_charset: str | None, judge: Judge | None = None) -> Decoded:
    declared = _declared_codecs(body, http_charset)
    found = _bom_decoded(body)
    if found is not None:
        by_bom, mark = found
        if by_bom.method == "bom" or by_bom.charset != "utf_8_sig":  # UTF-16's bytes read as 8-bit are no text
            return by_bom
        # a UTF-8 mark before Latin-1 bytes (an editor's, then a legacy save): every accented letter became
        # U+FFFD; the bytes after the mark, read as the other steps read a page, may fit their own charset
        after = _decode(body[mark:], http_charset, judge)
        if after.text.count("\ufffd") < by_bom.text.count("\ufffd"):
            return dataclasses.replace(after, declared_wrong=True)
        return by_bom
    wide = _WIDE_DEFAULT.get(codec_name(http_charset))
    if wide and (b"\x00" in body or _strict(body, "utf_8") is None):
        text = _mostly_decoded(body, wide)
        if text is not None:
            return Decoded(text, wide, "declared", False)
    for name in declared:
        if name in _STATEFUL and (b"\x1b" in body or b"~{" in body):
            decoded = _strict(body, name)
            if decoded is not None:
                return Decoded(decoded, name, "stateful", False)
    wrong = bool(declared) and declared[0] not in ("utf_8", "utf_8_sig")
    text = _strict(body, "utf_8")
    if text is not None:
        return Decoded(text, "utf_8", "utf-8", wrong and not body.isascii())
    repaired = _repaired_utf8(body, declared[:1] == ["utf_8"])
    if repaired is not None:
        return Decoded(repaired, "utf_8", "utf-8-repaired", wrong)
    return _decode_legacy(body, declared, judge)


def _bom_decoded(body: bytes) -> tuple[Decoded, int] | None:
    """Step 1: the body decoded by its byte-order mark, and the mark's length; None without one. Where the bytes
    after the mark do not all fit its encoding, the method says so (bom-repaired): `_decode` then weighs the
    rest of the steps against it."""
    for bom, name in _BOMS:
        if not body.startswith(bom):
            continue
        strict = _strict(body, name)
        if strict is not None:
            return Decoded(strict, name, "bom", False), len(bom)
        # A UTF-16 LE page whose first character is U+0000 also starts FF FE 00 00; read as UTF-32 its code units
        # pair into values past U+10FFFF, so a UTF-32 mark must be borne out by the bytes after it.
        text = _mostly_decoded(body, name) if name == "utf_32" else body.decode(name, "replace")
        if text is not None:
            return Decoded(text, name, "bom-repaired", False), len(bom)
    return None


def _mostly_decoded(body: bytes, name: str) -> str | None:
    """`body` decoded with U+FFFD for bad bytes, when at most MAX_REPLACED_SHARE of the text is replacements."""
    text = body.decode(name, "replace")
    return text if text.count("\ufffd") <= MAX_REPLACED_SHARE * len(text) else None


def _decode_legacy(body: bytes, declared: list[str], judge: Judge | None = None) -> Decoded:
    """Steps 5-7: a body that is not UTF-8."""
    for name in declared:
        text = _strict(body, name)
        if text is not None:
            return Decoded(text, name, "declared", False)
    guesses = _detected_codecs(body)
    if judge is not None:
        chosen = judged(body, guesses, judge)
        if chosen is not None:
            return Decoded(chosen[1], chosen[0], "judged", bool(declared))
    for name in guesses:
        text = _strict(body, name)
        if text is not None:
            return Decoded(text, name, "detected", bool(declared))
    for name in dict.fromkeys(declared + guesses[:1]):
        text = _mostly_decoded(body, name)
        if text is not None:
            return Decoded(text, name, "repaired", name not in declared and bool(declared))
    raise UndecodableError(f"no charset fits (declared: {', '.join(declared) or 'none'}; "
                           f"detected: {', '.join(guesses[:3]) or 'none'})")


def judged(body: bytes, guesses: list[str], judge: Judge) -> tuple[str, str] | None:
    """(charset, text) among detection's first guesses that decode `body` whole, the one whose visible text the
    judge scores highest, if it is in the script of detection's first decoding and scored above it by more than
    JUDGE_MARGIN (log-odds), else detection's first; decodings that make C1 control characters left out where
    others do not; None where the guesses give one text or none. A few accented letters do not tell windows-1252
    from 1250, 1257 or 1258 by their byte statistics (Catalan "però" read as 1258's "peṛ"), but the language
    identifier mostly reads the right one as its language more surely (bench/charset_detection.py, the text stage's
    identifier: pages of one sentence read right 74.5 -> 86.5%, of five 80.6 -> 92.4%, on the train pool)."""
    candidates, seen = [], set()
    for name in guesses[:JUDGED_GUESSES]:
        text = _strict(body, name)
        if text is not None and text not in seen:
            seen.add(text)
            candidates.append((name, text))
    if len(candidates) < 2:  # one text, or none: nothing to judge (detection's order decides)
        return None
    candidates = [(name, text) for name, text in candidates if not _C1.search(text)] or candidates
    visible = [" ".join(_TAG.sub(" ", text[:4 * JUDGED_CHARS]).split())[:JUDGED_CHARS] for _, text in candidates]
    if JUDGE_SAME_SCRIPT:
        script = dominant_script(visible[:1])
        keep = [i for i, text in enumerate(visible) if i == 0 or dominant_script([text]) == script]
        candidates, visible = [candidates[i] for i in keep], [visible[i] for i in keep]
        if len(candidates) < 2:
            return None
    scores = [_log_odds(p) for p in judge(visible)]
    best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
    return candidates[best if scores[best] > scores[0] + JUDGE_MARGIN else 0]


def _log_odds(probability: float) -> float:
    p = min(max(probability, 1e-9), 1 - 1e-9)
    return math.log(p) - math.log1p(-p)


def _declared_codecs(body: bytes, http_charset: str | None) -> list[str]:
    names = [codec_name(http_charset), codec_name(meta_charset(body))]
    # UTF-16/32 without a byte-order mark: browsers ignore such labels in <meta>, and a wrong one garbles everything
    # (an HTTP one that fits was taken before the UTF-8 steps)
    return list(dict.fromkeys(n for n in names if n and n not in _UNICODE_WIDE))


def _strict(body: bytes, name: str) -> str | None:
    try:
        return body.decode(name)
    except (UnicodeDecodeError, LookupError):
        return None


def _repaired_utf8(body: bytes, declared: bool) -> str | None:
    """UTF-8 with U+FFFD for broken sequences, when the page is mostly valid UTF-8 (step 5 of the module docstring);
    `declared`: UTF-8 is the declared charset, and one of the two tests is enough."""
    text = body.decode("utf_8", "replace")
    broken = text.count("\ufffd") - body.count("\ufffd".encode())
    valid = len(text) - len(text.encode("ascii", "ignore")) - text.count("\ufffd")
    if broken <= 0:
        return None
    few_broken = broken <= MAX_REPLACED_SHARE * len(text)
    # Each non-ASCII character of a single-byte legacy page is a broken UTF-8 byte, save where two of them happen
    # to form a valid pair (a capital accented letter or ß followed by a symbol or quote: "ß“" is DF 93), a small
    # minority of them. A page with as many valid multi-byte characters as broken bytes is UTF-8 with stray
    # bytes; a legacy page with one umlaut among ASCII (1 broken, 0 valid) stays legacy, however short its share.
    borne_out = valid >= broken
    if valid >= REPAIR_RATIO * broken or (few_broken and borne_out):
        return text
    return text if declared and (few_broken or borne_out) else None


def _detected_codecs(body: bytes) -> list[str]:
    """charset_normalizer's guesses, best first; ties broken by how common the charset is on the web."""
    try:
        from charset_normalizer import from_bytes
    except ImportError as err:  # a dependency of requests, which trafilatura needs; named in setup.py
        raise ImportError("charset detection needs charset_normalizer: pip install charset-normalizer") from err
    matches = from_bytes(body[:DETECT_WINDOW])
    ranked = sorted(matches, key=lambda m: (round(m.chaos, 2), -round(m.coherence, 2), _prior(m)))
    names = []
    for match in ranked:
        names.extend(sorted(match.could_be_from_charset, key=_rank))
    return list(dict.fromkeys(_BROWSER_CODECS.get(n, n) for n in names if n not in _UNICODE_WIDE))


_WEB_RANK = {name: rank for rank, name in enumerate(_WEB_PRIOR)}


def _rank(name: str) -> int:
    return _WEB_RANK.get(name, len(_WEB_RANK))


def _prior(match) -> int:
    return min(map(_rank, match.could_be_from_charset))
