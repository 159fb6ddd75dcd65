"""Language names the project uses everywhere: ISO 639-3 plus ISO 15924 script, as FLORES-200 writes them
(`deu_Latn`, `zho_Hans`). Sources name languages in other ways; `language_code` brings them to this scheme.

* macrolanguages become the individual language FLORES-200 uses for them (msa -> zsm, fas -> pes, swa -> swh ...),
  so a model trained on NTREX's `msa` is evaluated on FLORES' `zsm_Latn`;
* region suffixes are dropped (`fra-CA` -> fra); the script comes from the name when it has one (`srp-Cyrl`,
  `srp_cyrl`), else from the text itself (`dominant_script`); Chinese is `Hans` or `Hant` by its characters
  (`han_script`), and `cmn` is named `zho` as FLORES-200 names it.
"""

from __future__ import annotations

import functools
import unicodedata
from collections import Counter

import regex

# ISO 639-1 (WMT's and Wikipedia's two-letter names) -> ISO 639-3 (macrolanguages stay macro here: INDIVIDUAL
# below picks FLORES-200's individual language)
TWO_TO_THREE = {
    "aa": "aar", "ab": "abk", "ae": "ave", "af": "afr", "ak": "aka", "am": "amh", "an": "arg", "ar": "ara",
    "as": "asm", "av": "ava", "ay": "aym", "az": "aze", "ba": "bak", "be": "bel", "bg": "bul", "bi": "bis",
    "bm": "bam", "bn": "ben", "bo": "bod", "br": "bre", "bs": "bos", "ca": "cat", "ce": "che", "ch": "cha",
    "co": "cos", "cr": "cre", "cs": "ces", "cu": "chu", "cv": "chv", "cy": "cym", "da": "dan", "de": "deu",
    "dv": "div", "dz": "dzo", "ee": "ewe", "el": "ell", "en": "eng", "eo": "epo", "es": "spa", "et": "est",
    "eu": "eus", "fa": "fas", "ff": "ful", "fi": "fin", "fj": "fij", "fo": "fao", "fr": "fra", "fy": "fry",
    "ga": "gle", "gd": "gla", "gl": "glg", "gn": "grn", "gu": "guj", "gv": "glv", "ha": "hau", "he": "heb",
    "hi": "hin", "ho": "hmo", "hr": "hrv", "ht": "hat", "hu": "hun", "hy": "hye", "hz": "her", "ia": "ina",
    "id": "ind", "ie": "ile", "ig": "ibo", "ii": "iii", "ik": "ipk", "io": "ido", "is": "isl", "it": "ita",
    "iu": "iku", "ja": "jpn", "jv": "jav", "ka": "kat", "kg": "kon", "ki": "kik", "kj": "kua", "kk": "kaz",
    "kl": "kal", "km": "khm", "kn": "kan", "ko": "kor", "kr": "kau", "ks": "kas", "ku": "kur", "kv": "kom",
    "kw": "cor", "ky": "kir", "la": "lat", "lb": "ltz", "lg": "lug", "li": "lim", "ln": "lin", "lo": "lao",
    "lt": "lit", "lu": "lub", "lv": "lav", "mg": "mlg", "mh": "mah", "mi": "mri", "mk": "mkd", "ml": "mal",
    "mn": "mon", "mr": "mar", "ms": "msa", "mt": "mlt", "my": "mya", "na": "nau", "nb": "nob", "nd": "nde",
    "ne": "nep", "ng": "ndo", "nl": "nld", "nn": "nno", "no": "nor", "nr": "nbl", "nv": "nav", "ny": "nya",
    "oc": "oci", "oj": "oji", "om": "orm", "or": "ori", "os": "oss", "pa": "pan", "pi": "pli", "pl": "pol",
    "ps": "pus", "pt": "por", "qu": "que", "rm": "roh", "rn": "run", "ro": "ron", "ru": "rus", "rw": "kin",
    "sa": "san", "sc": "srd", "sd": "snd", "se": "sme", "sg": "sag", "sh": "hbs", "si": "sin", "sk": "slk",
    "sl": "slv", "sm": "smo", "sn": "sna", "so": "som", "sq": "sqi", "sr": "srp", "ss": "ssw", "st": "sot",
    "su": "sun", "sv": "swe", "sw": "swa", "ta": "tam", "te": "tel", "tg": "tgk", "th": "tha", "ti": "tir",
    "tk": "tuk", "tl": "tgl", "tn": "tsn", "to": "ton", "tr": "tur", "ts": "tso", "tt": "tat", "tw": "twi",
    "ty": "tah", "ug": "uig", "uk": "ukr", "ur": "urd", "uz": "uzb", "ve": "ven", "vi": "vie", "vo": "vol",
    "wa": "wln", "wo": "wol", "xh": "xho", "yi": "yid", "yo": "yor", "za": "zha", "zh": "zho", "zu": "zul",
}
# macrolanguage (or older name) -> the individual language FLORES-200 uses
INDIVIDUAL = {
    "ara": "arb", "aze": "azj", "fas": "pes", "fil": "tgl", "kur": "kmr", "lav": "lvs",
    "mlg": "plt", "mon": "khk", "msa": "zsm", "nep": "npi", "orm": "gaz", "pus": "pbt", "sqi": "als",
    "swa": "swh", "uzb": "uzn", "kau": "knc", "pob": "por",
    "cmn": "zho", "ekk": "est", "nor": "nob", "alb": "als", "ori": "ory", "yid": "ydd", "que": "quy", "aym": "ayr",
    "gug": "grn", "ful": "fuv", "din": "dik",
}
# languages whose script a text sample cannot settle (Han is shared by zho and jpn); Chinese itself is told Hans or
# Hant by its characters (`han_script`)
FIXED_SCRIPT = {"jpn": "Jpan", "kor": "Hang", "yue": "Hant"}
# scripts other sources name these languages' writing with (GlotLID's yue_Hani, BCP 47's ko-Kore, ja-Hira) -> the
# script FLORES-200 names: a name in such a form would find no ensemble shares and no threshold offset
SCRIPT_ALIASES = {("jpn", "Hani"): "Jpan", ("jpn", "Hira"): "Jpan", ("jpn", "Kana"): "Jpan",
                  ("jpn", "Hrkt"): "Jpan", ("kor", "Kore"): "Hang", ("yue", "Hani"): "Hant"}
REGION_SCRIPT = {("zho", "CN"): "Hans", ("zho", "SG"): "Hans", ("zho", "TW"): "Hant", ("zho", "HK"): "Hant",
                 ("zho", "MO"): "Hant"}
# ISO 639-1 codes withdrawn in 1989-2008 that software still writes (Java's Locale and CLD2 write `iw`, `in`, `ji`;
# Google Translate `jw`) -> the codes that replaced them
WITHDRAWN_TWO_LETTER = {"iw": "he", "in": "id", "ji": "yi", "jw": "jv", "mo": "ro"}

# Common characters written differently in Simplified and Traditional Chinese, pair by pair (simplified[i] is
# traditional[i]); each is checked to be (almost) absent from the other variant in NTREX-128 zho-CN/zho-TW and UD
# Chinese PUD. Counting them tells Hans from Hant in 99-100% of FLORES-200 sentences.
SIMPLIFIED_ONLY = (
    "万与专业东两个为丽举义乐乡书买乱争亚产亲亿仅从们价众优会传伤体党关写军农办务动区医华协单卖卢卫厂厅历压县参双发变"
    "叶号叹吗听启吴员响哟团园围国图圣场坏块坚坛垒墙壮声处备够头夹夺奋奖妆妇妈孙学宁宝实宽宾对寻导将尔尘尧尽层属岁岗岛"
    "峡巩币帅师帐带帮广庆庐库应庙庞废开异弃张弯弹强归当录彻径忆忧怀态怜总恋恳恶悬惊惧惨惩惯愤戏战执扩扫扬扰抚抢护报担"
    "拟拥择挡挤挥损捡换据掷揽搀携摄摆撑敌敛数断无旧时旷昼显晋晓暂术机杀杂权条来杨极构枣枪标栋树样档桥桩梦检楼欢欧毁毕"
    "毙气汇汉汤沟没沪泪泽洁浅浆浊测济浓涛涡涨渐渔湾溃滚滞满灭灯灵灾炉点炼烂烛烟烧热爱爷牵状犹独狮猎环现电画畅疗监盖盘"
    "矿码础确礼祸离种积称稳穷竞笔筑签简类粮紧红约级纪纯纲纳纵纸线练组细织终绍经结绕绘给络统继续维综绿缓编缘缩网罗罚职"
    "联肃胜脑脚脸节苏药获营虑虽补装见观规视览觉触誉计订认讨让训议讯记讲许论设访证评识诉词译试诗诚话诞询该详语误说请诸"
    "读课谁调谈谋谓谢贝负贡财责败货质购贯贴贵贷贸费贺资赋赏赔赛赞赶趋跃践车轨转轮软轻载较辅辆辈边达过运还这进远连迟适"
    "选递逻遗邓邮邻郑释针钟钢钱铁银链销锁错键镇长门闭问间闻阅队阳阴阵际陆陈险隐难雾顶项顺须预领频题颜风飞饭饮馆马驱验"
    "骑鱼鲜鸟鸡齐龄龙"
)
TRADITIONAL_ONLY = (
    "萬與專業東兩個為麗舉義樂鄉書買亂爭亞產親億僅從們價眾優會傳傷體黨關寫軍農辦務動區醫華協單賣盧衛廠廳歷壓縣參雙發變"
    "葉號嘆嗎聽啟吳員響喲團園圍國圖聖場壞塊堅壇壘牆壯聲處備夠頭夾奪奮獎妝婦媽孫學寧寶實寬賓對尋導將爾塵堯盡層屬歲崗島"
    "峽鞏幣帥師帳帶幫廣慶廬庫應廟龐廢開異棄張彎彈強歸當錄徹徑憶憂懷態憐總戀懇惡懸驚懼慘懲慣憤戲戰執擴掃揚擾撫搶護報擔"
    "擬擁擇擋擠揮損撿換據擲攬攙攜攝擺撐敵斂數斷無舊時曠晝顯晉曉暫術機殺雜權條來楊極構棗槍標棟樹樣檔橋樁夢檢樓歡歐毀畢"
    "斃氣匯漢湯溝沒滬淚澤潔淺漿濁測濟濃濤渦漲漸漁灣潰滾滯滿滅燈靈災爐點煉爛燭煙燒熱愛爺牽狀猶獨獅獵環現電畫暢療監蓋盤"
    "礦碼礎確禮禍離種積稱穩窮競筆築簽簡類糧緊紅約級紀純綱納縱紙線練組細織終紹經結繞繪給絡統繼續維綜綠緩編緣縮網羅罰職"
    "聯肅勝腦腳臉節蘇藥獲營慮雖補裝見觀規視覽覺觸譽計訂認討讓訓議訊記講許論設訪證評識訴詞譯試詩誠話誕詢該詳語誤說請諸"
    "讀課誰調談謀謂謝貝負貢財責敗貨質購貫貼貴貸貿費賀資賦賞賠賽贊趕趨躍踐車軌轉輪軟輕載較輔輛輩邊達過運還這進遠連遲適"
    "選遞邏遺鄧郵鄰鄭釋針鐘鋼錢鐵銀鏈銷鎖錯鍵鎮長門閉問間聞閱隊陽陰陣際陸陳險隱難霧頂項順須預領頻題顏風飛飯飲館馬驅驗"
    "騎魚鮮鳥雞齊齡龍"
)

# first word of a character's Unicode name -> ISO 15924
SCRIPT_OF_NAME = {
    "LATIN": "Latn", "CYRILLIC": "Cyrl", "GREEK": "Grek", "ARABIC": "Arab", "HEBREW": "Hebr", "DEVANAGARI": "Deva",
    "BENGALI": "Beng", "GURMUKHI": "Guru", "GUJARATI": "Gujr", "ORIYA": "Orya", "TAMIL": "Taml", "TELUGU": "Telu",
    "KANNADA": "Knda", "MALAYALAM": "Mlym", "SINHALA": "Sinh", "THAI": "Thai", "LAO": "Laoo", "TIBETAN": "Tibt",
    "MYANMAR": "Mymr", "GEORGIAN": "Geor", "HANGUL": "Hang", "ETHIOPIC": "Ethi", "KHMER": "Khmr",
    "ARMENIAN": "Armn", "THAANA": "Thaa", "CJK": "Hani", "HIRAGANA": "Jpan", "KATAKANA": "Jpan",
    "TIFINAGH": "Tfng", "SYRIAC": "Syrc", "CHEROKEE": "Cher", "COPTIC": "Copt", "CANADIAN": "Cans",
    "OL": "Olck", "NKO": "Nkoo", "MONGOLIAN": "Mong", "JAVANESE": "Java", "BALINESE": "Bali",
    "YI": "Yiii", "VAI": "Vaii", "TAGALOG": "Tglg", "ADLAM": "Adlm", "BAMUM": "Bamu", "BUGINESE": "Bugi",
}


_SIMPLIFIED, _TRADITIONAL = frozenset(SIMPLIFIED_ONLY), frozenset(TRADITIONAL_ONLY)


@functools.lru_cache(maxsize=1 << 16)  # per character, called on every letter of every sentence: the name lookup
def char_script(char: str) -> str | None:   # is the cost, and texts reuse a few hundred characters
    if not char.isalpha():
        return None
    name = unicodedata.name(char, "")
    return SCRIPT_OF_NAME.get(name.split(" ", 1)[0]) if name else None


# what a label's script needs among a text's letters (char_script's names); a script char_script cannot name is
# not judged. Chinese is written without kana, Japanese with kana or Han alone, Korean with Hangul.
_SCRIPT_EVIDENCE = {"Jpan": frozenset({"Hani", "Jpan"}), "Hans": frozenset({"Hani"}), "Hant": frozenset({"Hani"}),
                    "Hani": frozenset({"Hani"}), "Kore": frozenset({"Hang"})}
_NAMED_SCRIPTS = frozenset(SCRIPT_OF_NAME.values())


def script_fits(language: str, text: str) -> bool:
    """Whether `text` holds a letter of the script `language` is written in (`deu_Latn`: a Latin letter; `jpn_Jpan`:
    kana or Han; `zho_Hans`: Han and no kana). A language identifier's answer in another script than any letter of
    the text is impossible: a Japanese fragment read as Chinese, Thai read as Cantonese. A script char_script
    cannot name fits a text with a letter it cannot name; undetermined answers fit any text."""
    script = script_of(language)
    if script in ("Zyyy", "Zzzz", ""):
        return True
    needed = _SCRIPT_EVIDENCE.get(script) or (frozenset({script}) if script in _NAMED_SCRIPTS else None)
    if needed is None:  # a script char_script cannot name (Tai Le, Sylheti): any letter it cannot name might be one
        return any(char.isalpha() and char_script(char) is None for char in text)
    chinese, found = script in ("Hans", "Hant", "Hani"), False
    for char in text:
        named = char_script(char)
        if named in needed:
            if not chinese:
                return True
            found = True
        elif chinese and named == "Jpan":
            return False
    return found


def han_script(texts: list[str], undecided: str | None = "Hans") -> str | None:
    """`Hant` when the texts hold more traditional-only than simplified-only characters, `Hans` when fewer, and
    `undecided` on a tie (by default Hans: most Chinese on the web is simplified; a fragment of a few characters
    often holds none of either)."""
    simplified = traditional = 0
    for text in texts:
        simplified += sum(char in _SIMPLIFIED for char in text)
        traditional += sum(char in _TRADITIONAL for char in text)
    return "Hant" if traditional > simplified else "Hans" if simplified > traditional else undecided


def dominant_script(texts: list[str], sample_chars: int = 20000) -> str | None:
    """The most frequent script among the letters of `texts` (up to `sample_chars` letters looked at)."""
    counts: Counter = Counter()
    seen = 0
    for text in texts:
        for char in text:
            script = char_script(char)
            if script:
                counts[script] += 1
                seen += 1
        if seen >= sample_chars:
            break
    return counts.most_common(1)[0][0] if counts else None


def language_base(code: str) -> str:
    """A language code without script or region, in any of the forms sources write (`de`, `deu`, `ger`: ISO 639-2's
    bibliographic code, `iw`: a withdrawn ISO 639-1 code, `msa`: a macrolanguage), as the project names it (`deu`,
    `heb`, `zsm`: ISO 639-3, FLORES-200's individual language). A code no register knows comes back lower-cased."""
    base = code.lower()
    base = TWO_TO_THREE.get(WITHDRAWN_TWO_LETTER.get(base, base), base)
    if len(base) == 3 and base not in registered_codes()[0]:
        import pycountry

        entry = pycountry.languages.get(bibliographic=base)
        base = entry.alpha_3 if entry is not None else base
    return INDIVIDUAL.get(base, base)


def language_parts(name: str) -> tuple[str, str | None, str | None]:
    """(base, script, region) of a name as BCP 47 and FLORES write them, `_` or `-` between subtags: `zh-Hant-HK` ->
    (zho, Hant, HK), `deu_Latn` -> (deu, Latn, None), `iw` -> (heb, None, None); the base as `language_base` gives
    it, a four-letter subtag the script, a two-letter one the region."""
    name = _GRANDFATHERED.get(name.replace("_", "-").lower(), name)
    base, *subtags = name.replace("_", "-").split("-")
    if subtags and _is_extlang(base, subtags[0]):  # zh-yue is yue (Cantonese), ar-arz arz: the extlang names it
        base, subtags = subtags[0], subtags[1:]
    script = next((tag.title() for tag in subtags if len(tag) == 4 and tag.isalpha()), None)
    region = next((tag.upper() for tag in subtags if len(tag) == 2), None)
    return language_base(base), script, region


def _is_extlang(base: str, subtag: str) -> bool:
    """Whether `subtag` is BCP 47's extended language subtag after `base`: a registered language code after a
    macrolanguage's (`zh-yue`, `ar-arz`, `ms-zsm`). Only after a macrolanguage: `deu-eng` is no language."""
    if len(subtag) != 3 or not subtag.isalpha() or subtag.lower() not in registered_codes()[0]:
        return False
    import pycountry

    macro = TWO_TO_THREE.get(base.lower(), base.lower())
    if macro == "zho":  # IANA's registry: only these follow zh (zh-min is no Minangkabau)
        return subtag.lower() in _CHINESE_EXTLANGS
    entry = pycountry.languages.get(alpha_3=macro) if len(macro) == 3 else None
    return entry is not None and getattr(entry, "scope", None) == "M"


# BCP 47's extended language subtags registered with the prefix zh, and its grandfathered Chinese tags
# (Wikipedia writes Min Nan zh-min-nan) with the language each stands for
_CHINESE_EXTLANGS = frozenset("cdo cjy cmn cnp csp czh czo gan hak hsn lzh mnp nan wuu yue".split())
_GRANDFATHERED = {"zh-min-nan": "nan", "zh-guoyu": "cmn", "zh-hakka": "hak", "zh-xiang": "hsn"}


def _named_script(base: str, script: str | None, region: str | None) -> str | None:
    """The script a name settles for its language (language_parts' base, script and region), None where the texts
    must tell it: Chinese named by the Han script alone, or a language without a script of its own."""
    script = SCRIPT_ALIASES.get((base, script), script)
    if base == "zho" and script == "Hani":
        script = None
    return script or REGION_SCRIPT.get((base, region)) or FIXED_SCRIPT.get(base)


def language_code(name: str, texts: list[str] | None = None) -> str:
    """`deu`, `de`, `ger`, `fra-CA`, `srp-Cyrl`, `zho-TW`, `zh-Hant-HK`, `msa`, `zh-yue` ... -> `deu_Latn`,
    `fra_Latn`, `srp_Cyrl`, `zho_Hant`, `zsm_Latn`, `yue_Hant` (`language_parts`; a region may settle Chinese's
    script). Chinese named by the Han script alone (GlotLID's `cmn_Hani`) is Hans or Hant by the texts' characters
    (`han_script`), as unscripted Chinese is; `kor_Kore` is kor_Hang, `jpn_Hira` jpn_Jpan (SCRIPT_ALIASES)."""
    base, script, region = language_parts(name)
    script = _named_script(base, script, region)
    if script is None and base == "zho":
        script = han_script(texts or [])
    if script is None:
        found = dominant_script(texts or [])
        if found is None:
            raise ValueError(f"cannot tell the script of {name!r} without text")
        script = found
    return f"{base}_{script}"


_CODE = regex.compile(r"[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*")


def yaml_bool_hint(value) -> str:
    """Why a language setting holds true or false, for its error: YAML 1.1 reads a bare `no` (Norwegian), `off`,
    `yes`, `on` as booleans."""
    if not isinstance(value, bool):
        return ""
    return (f": YAML read a bare {'no or off' if value is False else 'yes or on'} as {str(value).lower()}; quote "
            f"it ({'no' if value is False else 'yes'!r})")


def check_code(code: str, what: str = "language code") -> str:
    """A language code that becomes part of file names (`deu_Latn`, `de`, `zho_Hant`): letters and digits joined by
    underscores, at most 32 characters. Anything else (`../x`, `a/b`, `de-en`) is an error naming it; true or false
    names the YAML reading that made it (yaml_bool_hint)."""
    if isinstance(code, bool):
        raise ValueError(f"{what} {code!r} is not a language code{yaml_bool_hint(code)}")
    if not isinstance(code, str) or len(code) > 32 or not _CODE.fullmatch(code):
        raise ValueError(f"{what} {code!r} is not a language code (letters and digits joined by '_', such as "
                         f"deu_Latn or de): it names output files")
    return code


# ISO 639's codes for text in no one language: uncoded (mis), several (mul), undetermined (und), no linguistic
# content (zxx). Third-party identifiers answer with them (GlotLID: zxx_Latn for mojibake and OCR noise, und_Xsux for a
# script it never saw): nothing to mine.
NO_LANGUAGE = frozenset({"mis", "mul", "und", "zxx"})


def is_no_language(name: str) -> bool:
    """Whether `name` (`zxx_Latn`, `und_Xsux`, `mul`) names text in no one language."""
    return name.partition("_")[0] in NO_LANGUAGE


LANGUAGE_NAME = regex.compile(r"[a-z]{3}_[A-Z][a-z]{3}")  # what language_code gives: deu_Latn, zho_Hant


# ISO 639-3 codes retired since FLORES-200 and the train pool's sources named languages with them (South Levantine
# Arabic, Emilian ...): the project's identifier names them, so they stay nameable. tests/test_languages.py checks
# that every language the shipped identifier names is nameable.
RETIRED_CODES = frozenset({"ajp", "auv", "blu", "btb", "ccx", "eml", "flm", "fri", "hsf", "hva", "lnc", "prv",
                           "tzc"})


@functools.cache
def registered_codes() -> tuple[frozenset, frozenset]:
    """(language codes, script codes) the project can name: ISO 639-3's individual languages and macrolanguages,
    ISO 639-5's families (`son`, Songhai), RETIRED_CODES; ISO 15924's scripts. From the iso-codes tables that
    pycountry ships (kept current with the registration authorities), not a copy of our own that would age."""
    import pycountry

    languages = {entry.alpha_3 for entry in pycountry.languages}
    languages |= {entry.alpha_3 for entry in pycountry.language_families}
    return frozenset(languages | RETIRED_CODES), frozenset(entry.alpha_4 for entry in pycountry.scripts)


def is_language_name(name: str) -> bool:
    """Whether `name` is a language as the project names them: an ISO 639-3 code and an ISO 15924 script, both
    registered (`deu_Latn`; not `deu_Latm`, `ger_Latn` or `qqq_Latn`, which would be languages of their own)."""
    if not isinstance(name, str) or LANGUAGE_NAME.fullmatch(name) is None:
        return False
    base, script = name.split("_")
    languages, scripts = registered_codes()
    return base in languages and script in scripts


def is_flores_name(name) -> bool:
    """Whether `name` is a language name (is_language_name) in the form language_code gives it, the one sentences
    are labelled and shares and offsets looked up by: not `cmn_Hans`, `nor_Latn`, `ara_Arab`, `msa_Latn` (registered
    codes, but zho_Hans, nob_Latn, arb_Arab, zsm_Latn here), `kor_Kore` or `zho_Hani`."""
    return is_language_name(name) and language_code(name) == name


def flores_names(name: str) -> list[str]:
    """FLORES-200's name of the language a `lang_Script` name writes another way, as language_code gives it
    (`cmn_Hans` -> zho_Hans, `nor_Latn` -> nob_Latn); Chinese by the Han script alone either of its (`zho_Hani` ->
    zho_Hans, zho_Hant), which its texts decide."""
    base, script, region = language_parts(name)
    settled = _named_script(base, script, region)
    return [f"{base}_{settled}"] if settled else [f"{base}_Hans", f"{base}_Hant"] if base == "zho" else []


def names_like(code: str, names) -> list[str]:
    """The names among `names` (lang_Script) of the language `code` writes in another form: `de`, `deu`, `ger`
    (ISO 639-2's bibliographic code), `deu-Latn`, `deu_Latm`, `msa` (a macrolanguage: FLORES' individual one) ->
    deu_Latn, zsm_Latn ...; none where the base is no language. Where the code settles the script and `names`
    hold that name, it alone (`zh-TW`, `zh-Hant` -> zho_Hant, `sr-Latn` -> srp_Latn, `cmn_Hans` -> zho_Hans); where
    it does not, each of its language's (`zh`, `zho_Hani` -> zho_Hans, zho_Hant)."""
    if not isinstance(code, str):
        return []
    base, script, region = language_parts(code.strip())
    like = sorted(name for name in names if name.partition("_")[0] == base)
    settled = _named_script(base, script, region)
    return [f"{base}_{settled}"] if f"{base}_{settled}" in like else like


TRAINING_CODE = regex.compile(r"([a-z]{2,3})(?:_([A-Z][a-z]{3}))?")  # deu_Latn, deu, de_Latn, de


def is_language_code(code: str) -> bool:
    """Whether a training file may name its language `code`, as `SRC-TGT` file names write them: a registered ISO
    639-3 code or an ISO 639-1 code, with a registered ISO 15924 script or without one (`deu_Latn`, `deu`, `de`)."""
    match = TRAINING_CODE.fullmatch(code) if isinstance(code, str) else None
    if match is None:
        return False
    base, script = match.groups()
    languages, scripts = registered_codes()
    return (base in TWO_TO_THREE if len(base) == 2 else base in languages) and (script is None or script in scripts)


# a language's script -> the Unicode scripts its letters may be in (Chinese and Japanese mix Han with kana, Korean
# mixes Hangul with Han); any other script is itself. ISO 15924 codes, which is how `regex` names Unicode scripts.
SCRIPT_FAMILY = {"Hans": ("Hani",), "Hant": ("Hani",), "Jpan": ("Hani", "Hira", "Kana"), "Hang": ("Hang", "Hani"),
                 "Kore": ("Hang", "Hani")}


def script_of(language: str) -> str:
    return language.rpartition("_")[2]


@functools.cache
def outside_script(script: str) -> regex.Pattern:
    """Characters outside `script` and its family, by Unicode's Script_Extensions (so the long-vowel mark "ー", used
    by hiragana and katakana alike, is Japanese)."""
    classes = "".join(rf"\p{{scx={name}}}" for name in SCRIPT_FAMILY.get(script, (script,)))
    try:
        return regex.compile(f"[^{classes}]+")
    except regex.error:  # a script code Unicode does not know: no letter is in it
        return regex.compile(".+", regex.DOTALL)
