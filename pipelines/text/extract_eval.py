"""How well and how fast the extraction stage works: trafilatura's evaluation set, and pages per second.

Quality. trafilatura's evaluation set (`evaldata.json` with pages under `cache/` or `eval/`, gzipped or not)
gives for each page snippets an extractor must keep (`with`) and must drop (`without`). Scored as trafilatura's
own evaluation does (tests/eval_common.py there): whitespace-normalised substring search in the output; a `with`
snippet found is a true positive, missed a false negative; a `without` snippet found is a false positive, absent
a true negative. Reported per system: share of `with` kept, share of `without` dropped, precision, recall,
accuracy, F1 and pages per second, for trafilatura's defaults (`trafilatura.extract(html_bytes)`) and our stage
(decoding by charset.py, trafilatura with our settings in the time-limited child, paragraphs) in the same run,
and the stage with its boilerplate filter switched the other way.

Speed. `throughput` times reading + extraction over crawl files against warcio + `trafilatura.extract` alone
(the loop a user would write), and our stage with and without its child process: for bench/.

    python -m pipelines.text.extract_eval --eval-dir ../shared/data/web/trafilatura-eval [--report out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import re
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from miner.io import InputFormatError
from pipelines.text.charset import UndecodableError, decode_html
from pipelines.text.extract import Extractor, ExtractSettings, add_settings_argument, settings_from_overrides
from pipelines.text.records import Page, Tally


def eval_pages(eval_dir: str | Path, every: int = 1) -> tuple[list[tuple[dict, bytes]], list[str]]:
    """(annotation, html bytes) for every `every`-th annotated page, and the files that are missing."""
    eval_dir = Path(eval_dir)
    if every < 1:  # 0 divided by zero, -1 took every page
        raise ValueError(f"--every must be 1 or more (every N-th page), got {every}")
    index_file = eval_dir / "evaldata.json"
    try:
        data = json.loads(index_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFormatError(f"{eval_dir}: no evaldata.json (give the trafilatura evaluation folder)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputFormatError(f"{index_file}: not JSON ({err})") from None
    if not isinstance(data, dict):
        raise InputFormatError(f"{index_file}: expected an object of url -> annotation")
    pages, missing = [], []
    for index, (url, item) in enumerate(data.items()):
        if index % every:
            continue
        if not isinstance(item, dict) or not isinstance(item.get("file"), str):
            raise InputFormatError(f"{index_file}: the entry for {url!r} names no page file ('file')")
        html = _read_page(eval_dir, item["file"])
        if html is None:
            missing.append(item["file"])
        else:
            pages.append(({**item, "url": url}, html))
    return pages, missing


def _read_page(eval_dir: Path, name: str) -> bytes | None:
    for folder in ("cache", "eval"):
        for candidate in (eval_dir / folder / f"{name}.gz", eval_dir / folder / name):
            if candidate.is_file():
                raw = candidate.read_bytes()
                try:
                    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
                except (EOFError, OSError, zlib.error) as err:
                    raise InputFormatError(f"{candidate}: damaged gzip ({err})") from None
    return None


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def score(item: dict, output: str | None) -> tuple[int, int, int, int]:
    """(tp, fp, fn, tn) of one page's output against its `with` and `without` snippets."""
    text = _norm(output or "")
    tp = sum(_norm(s) in text for s in item["with"]) if text else 0
    fp = sum(_norm(s) in text for s in item["without"]) if text else 0
    return tp, fp, len(item["with"]) - tp, len(item["without"]) - fp


def summary(tp: int, fp: int, fn: int, tn: int) -> dict:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {"with_kept": recall, "without_dropped": tn / (tn + fp) if tn + fp else 0.0,
            "precision": precision, "recall": recall,
            "accuracy": (tp + tn) / (tp + fp + fn + tn) if tp + fp + fn + tn else 0.0,
            "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
            "tp": tp, "fp": fp, "fn": fn, "tn": tn}


def page_of(html: bytes, url: str, position: int = 0) -> Page | None:
    """An evaluation page as the reading stage would give it (decoded by charset.py); None if undecodable."""
    try:
        decoded = decode_html(html)
    except UndecodableError:
        return None
    return Page(url=url, record_id=url, date="", content=decoded.text, content_type="html", source="evaldata",
                position=position, charset=decoded.charset)


def _library_defaults() -> Callable[[bytes, str], str | None]:
    import trafilatura

    return lambda html, url: trafilatura.extract(html)


def _stage(extractor: Extractor, tally: Tally) -> Callable[[bytes, str], str | None]:
    def run(html: bytes, url: str) -> str | None:
        page = page_of(html, url)
        if page is None:  # scored as no output, as the stage would give none; counted, so a report says why
            tally.count("extract", "skipped:undecodable")
        document = extractor.extract(page, tally) if page is not None else None
        return "\n".join(document.paragraphs) if document is not None else None
    return run


def evaluate(eval_dir: str | Path, settings: ExtractSettings = ExtractSettings(), every: int = 1) -> dict:
    """Scores and speed of trafilatura's defaults and our stage (both filter settings) on the same pages."""
    pages, missing = eval_pages(eval_dir, every)
    if not pages:
        raise InputFormatError(f"{eval_dir}: no evaluation page found under cache/ or eval/")
    other = dataclasses.replace(settings, boilerplate_filter=not settings.boilerplate_filter)
    names = ["trafilatura.extract defaults", "stage",
             f"stage, boilerplate filter {'on' if other.boilerplate_filter else 'off'}"]
    tallies = {name: Tally(log_skips=False) for name in names}
    with Extractor(settings) as ours, Extractor(other) as variant:
        systems = dict(zip(names, [_library_defaults(), _stage(ours, tallies[names[1]]),
                                   _stage(variant, tallies[names[2]])]))
        counts = {name: [0, 0, 0, 0] for name in names}
        seconds = dict.fromkeys(names, 0.0)
        for item, html in pages:
            for name, system in systems.items():
                start = time.perf_counter()
                output = system(html, item["url"])
                seconds[name] += time.perf_counter() - start
                counts[name] = [a + b for a, b in zip(counts[name], score(item, output))]
    return {"eval_dir": str(eval_dir), "pages": len(pages), "missing": missing, "every": every,
            "settings": dataclasses.asdict(settings),
            "systems": {name: {**summary(*counts[name]), "seconds": seconds[name],
                               "pages_per_s": len(pages) / seconds[name] if seconds[name] else 0.0,
                               "tally": tallies[name].of("extract")} for name in names}}


def format_report(report: dict) -> str:
    lines = [f"{report['pages']} pages ({len(report['missing'])} missing), every {report['every']}",
             "| system | with kept | without dropped | precision | recall | F1 | pages/s |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, s in report["systems"].items():
        lines.append(f"| {name} | {s['with_kept']:.3f} | {s['without_dropped']:.3f} | {s['precision']:.3f} | "
                     f"{s['recall']:.3f} | {s['f1']:.3f} | {s['pages_per_s']:.1f} |")
    return "\n".join(lines)


# --- speed ------------------------------------------------------------------------------------------------------

def throughput(paths: list[str], settings: ExtractSettings = ExtractSettings(), rounds: int = 1) -> dict:
    """Pages per second over crawl files: our reading + extraction (with and without the child process) against
    warcio + `trafilatura.extract` on the raw bodies. Each system reads the files itself; the systems take turns
    for `rounds` rounds after one untimed warm-up pass each, and each keeps its fastest round."""
    in_process = dataclasses.replace(settings, time_limit_s=0)
    with Extractor(settings) as child, Extractor(in_process) as inline:
        systems = {"warcio + trafilatura.extract": lambda: _peer_documents(paths),
                   "stage (child process)": lambda: _stage_documents(paths, child),
                   "stage (in process)": lambda: _stage_documents(paths, inline)}
        for run in systems.values():
            _time(run)
        results: dict = {}
        for _ in range(rounds):
            for name, run in systems.items():
                timing = _time(run)
                if name not in results or timing["seconds"] < results[name]["seconds"]:
                    results[name] = timing
    return results


def _time(run: Callable[[], Iterator[object]]) -> dict:
    start = time.perf_counter()
    pages = documents = 0
    for document in run():
        pages += 1
        documents += document is not None
    seconds = time.perf_counter() - start
    return {"pages": pages, "documents": documents, "seconds": seconds,
            "pages_per_s": pages / seconds if seconds else 0.0}


def _stage_documents(paths: list[str], extractor: Extractor) -> Iterator[object]:
    from pipelines.text.warc import read_pages

    tally = Tally(log_skips=False)
    for path in paths:
        for page in read_pages(path, tally):
            yield extractor.extract(page, tally)


def _peer_documents(paths: list[str]) -> Iterator[object]:
    import trafilatura
    from warcio.archiveiterator import ArchiveIterator

    for path in paths:
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                content_type = record.http_headers.get_header("Content-Type") or ""
                if record.http_headers.get_statuscode() != "200" or "html" not in content_type:
                    continue
                yield trafilatura.extract(record.content_stream().read())


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    parser = argparse.ArgumentParser(prog="python -m pipelines.text.extract_eval", description=__doc__.split("\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="also log debug lines")
    parser.add_argument("--eval-dir", required=True, help="folder with evaldata.json and cache/ or eval/")
    parser.add_argument("--report", help="write the figures to this JSON file")
    parser.add_argument("--every", type=int, default=1, help="evaluate every N-th page only (quick runs)")
    add_settings_argument(parser)
    args = parser.parse_args(argv)
    setup_logging(args.verbose)

    def command() -> None:
        report = evaluate(args.eval_dir, settings_from_overrides(args.set), every=args.every)
        print(format_report(report))
        if args.report:
            from miner.io import write_json

            write_json(args.report, report)

    return exit_status(command)


if __name__ == "__main__":
    raise SystemExit(main())
