"""Language-identification quality on FLORES-200 devtest (../shared/data/dev: measuring only, never training).

Sentence level: every devtest file of a language the model covers (files named `<lang_Script>.devtest[.gz]`, names
brought to our scheme by miner.languages.language_code: `cmn_Hans` -> `zho_Hans`; a file whose one line names
another file, like `ara.devtest` -> `arb_Arab.devtest`, is an alias and read once under its target). Accuracy over
all sentences, macro-F1 over the covered languages (precision counts every sentence predicted as the language),
and per language: n, accuracy, precision, recall, F1 and the most frequent wrong answers.

Documents (`--documents`): FLORES sentences come in articles (metadata_devtest.tsv.gz, the URL column, beside the
devtest folder; groups of 4 consecutive sentences without it). For each covered language every article becomes a
document in that language in which, with a fixed seed, some sentences are cut to a few words (`short`: headings,
captions, fragments) and half the documents of 3 sentences or more get one sentence of another language
(`foreign`: English half of the time, the quoted English sentence in a German page). Sentence accuracy is reported
alone, with the document's language as identified from its own sentences, and with the true document language (the
ceiling), per kind.

    python -m pipelines.text.langid_eval --model models/lid/cmlm-lid.ftz \\
        --flores ../shared/data/dev/flores200-devtest/devtest --documents --output lid-report.json
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import logging
import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from miner.io import InputFormatError, path_argument, read_lines
from miner.languages import language_code, script_of
from pipelines.text.filters import LengthFilter
from pipelines.text.langid import (
    DOCUMENT_WEIGHT,
    UNDETERMINED,
    Identifier,
    document_language,
    short_sentence_label,
)
from pipelines.text.langid_data import cut_words

log = logging.getLogger("pipelines.text.langid_eval")
ENGLISH = "eng_Latn"
SUFFIXES = (".devtest.gz", ".devtest", ".dev.gz", ".dev")


def read_flores(folder: Path, only: set[str] | None = None) -> dict[str, list[str]]:
    """Sentences per language (our names) of a FLORES-200 split folder; `only` these languages when given."""
    if not folder.is_dir():
        raise InputFormatError(f"{folder}: not a folder (expected FLORES-200's devtest/)")
    texts: dict[str, list[str]] = {}
    for path in sorted(folder.iterdir()):
        suffix = next((s for s in SUFFIXES if path.name.endswith(s)), None)
        if suffix is None or (only is not None and _named_code(path.name.removesuffix(suffix)) not in only):
            continue
        lines = read_lines(path)
        if len(lines) == 1 and lines[0].strip().endswith(suffix.removesuffix(".gz")) and " " not in lines[0].strip():
            log.info("%s: an alias of %s: read once, under its target", path, lines[0].strip())
            continue
        code = language_code(path.name.removesuffix(suffix), lines[:50])
        if code in texts:
            raise InputFormatError(f"{path}: a second file for {code}")
        texts[code] = lines
    if not texts:
        raise InputFormatError(f"{folder}: no <lang_Script>.devtest[.gz] files")
    return texts


def _named_code(name: str) -> str | None:
    """The code a file name gives without reading the file (None where the script must come from the text)."""
    try:
        return language_code(name)
    except ValueError:
        return None


def read_document_ids(folder: Path, count: int) -> list[str]:
    """One article id per sentence: the URL column of metadata_<split>.tsv.gz beside the folder, else groups of 4."""
    path = folder.parent / f"metadata_{folder.name}.tsv.gz"
    if path.is_file():
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            urls = [line.split("\t", 1)[0] for line in handle.read().splitlines()[1:]]
        if len(urls) == count:
            return urls
        log.warning("%s: %d rows for %d sentences: articles taken as groups of 4", path, len(urls), count)
    return [str(i // 4) for i in range(count)]


# -- sentences --------------------------------------------------------------------------------------------------

def scores(gold: list[str], predicted: list[str], languages: list[str]) -> dict:
    """Accuracy, macro-F1 over `languages`, and per-language figures with the most frequent confusions."""
    by_gold: dict[str, Counter] = defaultdict(Counter)
    predicted_count = Counter(predicted)
    for g, p in zip(gold, predicted):
        by_gold[g][p] += 1
    per_language = {}
    for language in languages:
        answers = by_gold[language]
        n, tp = sum(answers.values()), answers[language]
        precision = tp / predicted_count[language] if predicted_count[language] else 0.0
        recall = tp / n if n else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        confused = [[code, c] for code, c in answers.most_common() if code != language][:3]
        per_language[language] = {"n": n, "precision": round(precision, 4), "recall": round(recall, 4),
                                  "f1": round(f1, 4), "confused_with": confused}
    correct = sum(g == p for g, p in zip(gold, predicted))
    return {"sentences": len(gold), "accuracy": round(correct / len(gold), 4) if gold else 0.0,
            "macro_f1": round(sum(v["f1"] for v in per_language.values()) / len(languages), 4) if languages else 0.0,
            "per_language": per_language}


def evaluate_sentences(identifier: Identifier, flores: dict[str, list[str]]) -> dict:
    covered = sorted(code for code in flores if identifier.covers(code))
    gold = [code for code in covered for _ in flores[code]]
    texts = [text for code in covered for text in flores[code]]
    predicted = [p[0][0] for p in identifier.predict(texts, k=1)]
    report = scores(gold, predicted, covered)
    report["languages"] = len(covered)
    report["not_covered"] = sorted(code for code in flores if code not in covered)
    return report


# -- documents --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TestDocument:
    language: str
    sentences: tuple[str, ...]
    gold: tuple[str, ...]
    kinds: tuple[str, ...]     # native, short, foreign


def fragment(text: str, rng: random.Random) -> str:
    """The first 2-4 words, or 4-10 characters of a text written without spaces."""
    words = text.split()
    if len(words) >= 5:
        return " ".join(words[: rng.randint(2, 4)])
    return text[: rng.randint(4, 10)]


def build_documents(flores: dict[str, list[str]], doc_ids: list[str], languages: list[str], seed: int = 7,
                    short_share: float = 0.3, foreign_share: float = 0.5) -> list[TestDocument]:
    rng = random.Random(seed)
    articles: dict[str, list[int]] = defaultdict(list)
    for row, doc_id in enumerate(doc_ids):
        articles[doc_id].append(row)
    documents = []
    for language in languages:
        others = [code for code in languages if code != language]
        for rows in articles.values():
            sentences, gold, kinds = [], [], []
            for row in rows:
                short = rng.random() < short_share
                sentences.append(fragment(flores[language][row], rng) if short else flores[language][row])
                gold.append(language)
                kinds.append("short" if short else "native")
            if others and len(rows) >= 3 and rng.random() < foreign_share:  # a page with a quote, not a quote
                other = ENGLISH if ENGLISH in others and rng.random() < 0.5 else rng.choice(others)
                at = rng.randint(0, len(sentences))
                sentences.insert(at, flores[other][rng.randrange(len(flores[other]))])
                gold.insert(at, other)
                kinds.insert(at, "foreign")
            documents.append(TestDocument(language, tuple(sentences), tuple(gold), tuple(kinds)))
    return documents


def evaluate_documents(identifier: Identifier, flores: dict[str, list[str]], doc_ids: list[str],
                       weights: tuple[float, ...] = (DOCUMENT_WEIGHT,), seed: int = 7, k: int = 10) -> dict:
    languages = sorted(code for code in flores if identifier.covers(code))
    documents = build_documents(flores, doc_ids, languages, seed=seed)
    texts = [s for d in documents for s in d.sentences]
    predictions = iter(identifier.predict(texts, k=k))
    tallies: dict[str, Counter] = defaultdict(Counter)
    documents_right = 0
    for document in documents:
        own = [next(predictions) for _ in document.sentences]
        found = document_language(own, [len(s) for s in document.sentences])
        documents_right += found[0] == document.language
        # the stage's path: the sentences' answers seen while the document was identified, each predicted again
        # knowing the document's language where it is not that language (Identifier.identify_sentences)
        seen = dict(zip(document.sentences, own))
        informed = {w: identifier.identify_sentences(document.sentences, found[0], w, k=k, seen=seen)
                    for w in weights}
        truly = {w: identifier.identify_sentences(document.sentences, document.language, w, k=k, seen=seen)
                 for w in weights}
        for i, (text, prediction, gold, kind) in enumerate(zip(document.sentences, own, document.gold,
                                                                document.kinds)):
            answers = [("alone", prediction[0][0])]
            for w in weights:
                # and the pipeline's rule for sentences of 1-3 words (a dropped one counts as wrong)
                ruled = short_sentence_label(text, informed[w][i], found)
                answers += [(f"document_w{w:g}", informed[w][i][0]), (f"true_document_w{w:g}", truly[w][i][0]),
                            (f"document+short_w{w:g}", ruled[0] if ruled else None)]
            for name, label in answers:
                tallies[name][(kind, label == gold)] += 1
    kinds = ("native", "short", "foreign")
    result = {"documents": len(documents), "languages": len(languages), "seed": seed,
              "document_accuracy": round(documents_right / len(documents), 4) if documents else 0.0,
              "sentences": {kind: sum(tallies["alone"][(kind, ok)] for ok in (True, False)) for kind in kinds},
              "sentence_accuracy": {}}
    for name, tally in tallies.items():
        row = {kind: _share(tally, kind) for kind in kinds}
        row["all"] = round(sum(tally[(kind, True)] for kind in kinds) / sum(tally.values()), 4)
        result["sentence_accuracy"][name] = row
    return result


def _share(tally: Counter, kind: str) -> float:
    total = tally[(kind, True)] + tally[(kind, False)]
    return round(tally[(kind, True)] / total, 4) if total else 0.0


def evaluate(identifier: Identifier, flores_folder: Path, documents: bool = False,
             languages: list[str] | None = None, weights: tuple[float, ...] = (DOCUMENT_WEIGHT,)) -> dict:
    flores = read_flores(flores_folder, set(languages) if languages else None)
    if languages:
        unknown = sorted(set(languages) - set(flores))
        if unknown:
            raise ValueError(f"not in {flores_folder}: {', '.join(unknown)}")
        flores = {code: flores[code] for code in languages}
    report = {"model": identifier.path, "flores": str(flores_folder), "normalization": vars(identifier.normalization)}
    report["sentences"] = evaluate_sentences(identifier, flores)
    if documents:
        doc_ids = read_document_ids(flores_folder, len(next(iter(flores.values()))))
        report["documents"] = evaluate_documents(identifier, flores, doc_ids, weights)
    if UNDETERMINED in report["sentences"]["per_language"]:
        del report["sentences"]["per_language"][UNDETERMINED]
    return report


WEAKEST = 20   # languages listed by `summary`, lowest recall first


def summary(report: dict, weakest: int = WEAKEST) -> str:
    """The evaluation report as markdown tables: overall, the weakest languages with what they were read as (where
    a mean is lost, and to which neighbour), and the document figures."""
    sentences = report["sentences"]
    overall = (f"| {sentences['languages']} | {sentences['sentences']} | {sentences['accuracy']:.4f} | "
               f"{sentences['macro_f1']:.4f} |")
    rows = ["| languages | sentences | accuracy | macro-F1 |", "|---|---|---|---|", overall, ""]
    lowest = sorted(sentences["per_language"].items(), key=lambda item: (item[1]["recall"], item[0]))[:weakest]
    if lowest:
        rows += [f"the {len(lowest)} weakest languages:", "",
                 "| language | sentences | recall | precision | read as (sentences) |", "|---|---|---|---|---|"]
        rows += [f"| {code} | {row['n']} | {row['recall']:.4f} | {row['precision']:.4f} | "
                 f"{', '.join(f'{label} ({count})' for label, count in row['confused_with'])} |"
                 for code, row in lowest]
        rows.append("")
    documents = report.get("documents")
    if documents:
        rows += [f"documents: {documents['documents']}, document accuracy {documents['document_accuracy']:.4f}", "",
                 "| sentences | native | short | foreign | all |", "|---|---|---|---|---|"]
        for name, row in documents["sentence_accuracy"].items():
            rows.append(f"| {name} | {row['native']:.4f} | {row['short']:.4f} | {row['foreign']:.4f} | "
                        f"{row['all']:.4f} |")
    return "\n".join(rows)


# -- contenders side by side ------------------------------------------------------------------------------------

BANDS = (("1-3", 1, 3), ("4-8", 4, 8), ("9+", 9, 10**9))


def word_count(text: str, code: str) -> float:
    """Whitespace words; letters / 1.6 in scripts written without spaces (the length filter's count)."""
    return LengthFilter.tokens(text, script_of(code))


def band(words: float) -> str:
    return next(name for name, low, high in BANDS if round(words) <= high)


def cut_set(texts: dict[str, list[str]], seed: int = 7) -> dict[str, list[str]]:
    rng = random.Random(seed)
    return {code: [cut_words(text, code, rng) for text in lines] for code, lines in texts.items()}


def read_pairs(folder: Path, limit: int = 200, min_lines: int = 20) -> dict[str, list[str]]:
    """The non-English side of `<lang>-eng_Latn.tsv.gz` files (the train pool's heldout-short/tune or test):
    the first `limit` lines per language, languages with at least `min_lines`."""
    from miner.io import read_pair_lines

    texts = {}
    for path in sorted(folder.glob("*-eng_Latn.tsv*")):
        lines = read_pair_lines(path, limit)[0]
        if len(lines) >= min_lines:
            texts[language_code(path.name.split("-eng_Latn")[0])] = lines
    if not texts:
        raise InputFormatError(f"{folder}: no <lang_Script>-eng_Latn.tsv.gz files with {min_lines}+ lines")
    return texts


@dataclass
class Run:
    """One contender's answers on one set: gold and predicted codes, words per text, prediction time."""

    gold: list[str]
    predicted: list[str]
    words: list[float]
    seconds: float


def run_contender(identifier: Identifier, texts: dict[str, list[str]]) -> Run:
    import time

    covered = [code for code in texts if identifier.covers(code)]
    flat = [text for code in covered for text in texts[code]]
    started = time.perf_counter()
    predicted = [answer[0][0] for answer in identifier.predict(flat, k=1)]
    seconds = time.perf_counter() - started
    log.info("%s: %d texts in %d languages, %.1f s", identifier.path, len(flat), len(covered), seconds)
    gold = [code for code in covered for _ in texts[code]]
    return Run(gold, predicted, [word_count(text, code) for text, code in zip(flat, gold)], seconds)


def mean_accuracy(run: Run, languages: set[str], bands: tuple[str, ...] | None = None) -> float | None:
    """Mean over `languages` of each one's sentence accuracy (each language counts once); `bands` keeps only texts
    of those length bands."""
    right: Counter = Counter()
    total: Counter = Counter()
    for gold, predicted, words in zip(run.gold, run.predicted, run.words):
        if gold in languages and (bands is None or band(words) in bands):
            total[gold] += 1
            right[gold] += gold == predicted
    return round(100 * sum(right[c] / total[c] for c in total) / len(total), 1) if total else None


def compare(contenders: dict[str, object], sets: dict[str, dict[str, list[str]]]) -> dict:
    """Every contender on every set: mean accuracy on the languages all of them cover and on each one's own,
    macro-F1 on its own, accuracy per length band (common languages, all sets pooled), sentences per second."""
    runs = {name: {label: run_contender(identifier, texts) for label, texts in sets.items()}
            for name, identifier in contenders.items()}
    own = {name: {code for run in by_set.values() for code in run.gold} for name, by_set in runs.items()}
    # the languages every contender names in some set; per set, those of them the set holds
    common = set.intersection(*own.values()) if own else set()
    report = {"common_languages": sorted(common), "contenders": {},
              "common_per_set": {label: len(common & set(texts)) for label, texts in sets.items()}}
    for name, by_set in runs.items():
        row = {"languages": len(own[name])}
        for label, run in by_set.items():
            row[f"{label}:common"] = mean_accuracy(run, common)
            row[f"{label}:own"] = mean_accuracy(run, own[name])
            f1 = scores(run.gold, run.predicted, sorted(set(run.gold)))["macro_f1"]
            row[f"{label}:macro_f1"] = round(100 * f1, 1)
        pooled = Run(*[list(itertools.chain.from_iterable(getattr(run, field) for run in by_set.values()))
                       for field in ("gold", "predicted", "words")], 0.0)
        for band_name, _, _ in BANDS:
            row[f"band:{band_name}"] = mean_accuracy(pooled, common, (band_name,))
        texts = sum(len(run.gold) for run in by_set.values())
        row["sentences_per_s"] = round(texts / max(1e-9, sum(run.seconds for run in by_set.values())))
        row["per_language"] = {label: {code: mean_accuracy(run, {code}) for code in sorted(own[name])}
                               for label, run in by_set.items()}
        report["contenders"][name] = row
    return report


def compare_table(report: dict, sets: list[str]) -> str:
    n = len(report["common_languages"])
    head = ["contender", "languages"]
    for label in sets:
        head += [f"{label}: {report['common_per_set'][label]} common", f"{label}: own", f"{label}: macro-F1 own"]
    head += [f"{name} words ({n} common)" for name, _, _ in BANDS] + ["sentences/s"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in report["contenders"].items():
        cells = [name, str(row["languages"])]
        for label in sets:
            cells += [_cell(row[f"{label}:common"]), _cell(row[f"{label}:own"]), _cell(row[f"{label}:macro_f1"])]
        cells += [_cell(row[f"band:{b}"]) for b, _, _ in BANDS] + [f"{row['sentences_per_s']:,}"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def per_language_table(report: dict, sets: list[str]) -> str:
    """Accuracy per language, one column per set and contender (the --compare report's `per_language`); empty where
    a contender does not name the language."""
    contenders = report["contenders"]
    columns = [(label, name) for label in sets for name in contenders]
    languages = sorted({code for row in contenders.values() for label in sets
                        for code, value in row["per_language"].get(label, {}).items() if value is not None})
    rows = ["| language | " + " | ".join(f"{name} {label}" for label, name in columns) + " |",
            "|" + "---|" * (len(columns) + 1)]
    for code in languages:
        cells = [_cell(contenders[name]["per_language"].get(label, {}).get(code)) for label, name in columns]
        rows.append(f"| {code} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _cell(value) -> str:
    return "" if value is None else f"{value:.1f}"


def sweep_weights(first, second, texts: dict[str, list[str]], weights: list[float]) -> dict[float, float]:
    """The combined identifier's mean accuracy at each weight, both models predicting once."""
    from pipelines.text.langid_combined import DEPTH, CombinedIdentifier

    covered = [code for code in texts if first.covers(code)]
    flat = [text for code in covered for text in texts[code]]
    gold = [code for code in covered for _ in texts[code]]
    a, b = first.predict(flat, k=DEPTH), second.predict(flat, k=DEPTH)
    result = {}
    for weight in weights:
        combined = CombinedIdentifier(first, second, weight)
        predicted = [(x if combined.decided(x) else combined.combine(x, y))[0][0] for x, y in zip(a, b)]
        result[weight] = mean_accuracy(Run(gold, predicted, [0.0] * len(gold), 0.0), set(covered))
    return result


def news_heldout_sets(train_pool: Path) -> dict[str, dict[str, list[str]]]:
    """The train pool's held-out NTREX documents (news, in no identifier's training), as they are and cut."""
    from pipelines.text.langid_data import ntrex_heldout

    news = ntrex_heldout(train_pool)
    return {"news (held out)": news, "news cut": cut_set(news)}


def held_out_sets(args: argparse.Namespace) -> dict[str, dict[str, list[str]]]:
    """The train pool's held-out sets named on the command line (where choices are made), as they are and cut."""
    sets = {}
    if args.pairs:
        pairs = read_pairs(args.pairs)
        sets.update({"short pairs": pairs, "short pairs cut": cut_set(pairs)})
    if args.news_heldout:
        sets.update(news_heldout_sets(args.news_heldout))
    if not sets:
        raise ValueError("choices are made on the train pool's held-out sets: give --pairs and/or --news-heldout")
    return sets


def tune_prior(identifier, exponents: list[float], sets: dict[str, dict[str, list[str]]]) -> dict:
    """Mean accuracy on every set for each prior exponent of our model (the first of a combination)."""
    ours = getattr(identifier, "first", identifier)
    report = {}
    for exponent in exponents:
        ours.prior_exponent = exponent
        report[exponent] = {name: mean_accuracy(run_contender(identifier, texts), set(texts))
                            for name, texts in sets.items()}
        report[exponent]["mean"] = round(sum(report[exponent].values()) / len(sets), 2)
        print(f"exponent {exponent:g}: " + ", ".join(f"{k} {v}" for k, v in report[exponent].items()), flush=True)
    return report


def load_contender(name: str):
    """A built-in identifier, a model path or a peer; `NAME@PEER` answers among the peer's languages only
    (identifier.RestrictedIdentifier: `combined@lingua` chooses from the languages lingua knows, as lingua does)."""
    from pipelines.text.identifier import RestrictedIdentifier
    from pipelines.text.langid import load_identifier
    from pipelines.text.langid_peers import PEERS

    name, _, among = name.partition("@")
    identifier = PEERS[name]() if name in PEERS else load_identifier(name)
    if not among:
        return identifier
    if among not in PEERS:
        raise ValueError(f"{name}@{among}: after @ name a peer whose languages to answer among ({', '.join(PEERS)})")
    peer = PEERS[among]()
    restricted = RestrictedIdentifier(identifier, [code for code in identifier.languages if peer.covers(code)])
    restricted.path = f"{name}@{among}"
    return restricted


DEFAULT_CONTENDERS = "cmlm-lid,lid.176,combined,combined+experts,lingua"


def evaluate_command(args: argparse.Namespace) -> dict:
    from miner.console import comma_list
    from miner.io import check_output_folder, write_json
    from pipelines.text.langid import load_identifier

    languages = comma_list(args.languages, "--languages") if args.languages else None
    if args.output is not None:  # before the evaluation, which takes minutes: it failed after it
        if args.output.is_dir():
            raise ValueError(f"--output {args.output} is a folder: give the report's file path")
        check_output_folder(args.output.parent)
    if args.tune_weights:
        first, second = (load_contender(part) for part in args.tune_parts.split("+"))
        weights = [float(w) for w in args.tune_weights.split(",")]
        sets = held_out_sets(args)
        report = {name: sweep_weights(first, second, texts, weights) for name, texts in sets.items()}
        print(f"| weight | {' | '.join(sets)} | mean |\n|---|{'---|' * (len(sets) + 1)}\n" + "\n".join(
            f"| {w:g} | {' | '.join(str(report[name][w]) for name in sets)} | "
            f"{sum(report[name][w] for name in sets) / len(sets):.2f} |" for w in weights))
    elif args.tune_prior:
        report = tune_prior(load_contender(args.model), [float(a) for a in args.tune_prior.split(",")],
                            held_out_sets(args))
    elif args.compare:
        sets = {}
        if args.flores:
            flores = read_flores(args.flores, set(languages) if languages else None)
            sets.update({"FLORES": flores, "FLORES cut to 2-6 words": cut_set(flores)})
        if args.pairs:
            sets["short pairs"] = read_pairs(args.pairs)
        if args.news_heldout:
            sets.update(news_heldout_sets(args.news_heldout))
        if not sets:
            raise ValueError("--compare needs --flores, --pairs and/or --news-heldout")
        contenders = {name: load_contender(name) for name in comma_list(args.compare, "--compare")}
        report = compare(contenders, sets)
        print(compare_table(report, list(sets)))
        if args.per_language:
            print("\n" + per_language_table(report, list(sets)))
    else:
        if args.flores is None:
            raise ValueError("--flores is needed (or --compare with --pairs, or --tune-weights)")
        identifier = load_identifier(args.model)
        weights = tuple(float(w) for w in args.document_weights.split(","))
        report = evaluate(identifier, args.flores, documents=args.documents, languages=languages, weights=weights)
        print(summary(report))
    if args.output:
        write_json(args.output, report)
    return report


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    parser = argparse.ArgumentParser(prog="python -m pipelines.text.langid_eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="also log debug lines")
    parser.add_argument("--model", default="cmlm-lid", help="a built-in name (cmlm-lid, lid.176, combined) or a path")
    parser.add_argument("--flores", type=path_argument, help="FLORES-200 devtest folder")
    parser.add_argument("--documents", action="store_true", help="also sentence accuracy with and without the "
                          "document's language, on documents built from FLORES articles")
    parser.add_argument("--document-weights", default=f"{DOCUMENT_WEIGHT:g}", help="comma-separated prior odds")
    parser.add_argument("--languages", help="comma-separated lang_Script subset")
    parser.add_argument("--compare", nargs="?", const=DEFAULT_CONTENDERS, help="contenders side by side "
                        f"(comma-separated; default {DEFAULT_CONTENDERS}; lingua-low is its low-accuracy mode; "
                        "NAME@PEER answers among the peer's languages only, e.g. combined@lingua)")
    parser.add_argument("--per-language", action="store_true", help="with --compare, also the accuracy per language")
    parser.add_argument("--pairs", type=path_argument,
                        help="held-out short pairs (data/train/heldout-short/tune or test)")
    parser.add_argument("--news-heldout", type=path_argument,
                        help="the train pool (../shared/data/train), whose held-out NTREX "
                        "documents (news, as FLORES is; in no identifier's training) are measured (--compare) or "
                        "tuned on (--tune-weights, --tune-prior)")
    parser.add_argument("--tune-prior", help="comma-separated prior exponents of --model (ours, or ours+X) to try on "
                        "--pairs and --news-heldout")
    parser.add_argument("--tune-weights", help="comma-separated weights of the combined identifier to try on --pairs "
                        "and --news-heldout")
    parser.add_argument("--tune-parts", default="cmlm-lid+lid.176", help="FIRST+SECOND: the two identifiers "
                        "combined (e.g. combined+lingua: lingua as a second opinion where the default is unsure)")
    parser.add_argument("--output", type=path_argument, help="write the full JSON report here")
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    return exit_status(lambda: evaluate_command(args))


if __name__ == "__main__":
    raise SystemExit(main())
