"""What every command of the project shares, below all its packages (it imports none of them but miner's own
error types): logging set up from --quiet / --verbose, exit statuses, and progress lines with rates.

    def main(argv=None) -> int:
        args = parser.parse_args(argv)
        setup_logging(args.verbose, args.quiet)
        return exit_status(lambda: run(args))
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

from miner.io import InputFormatError
from miner.vectors import EmbeddingError

PROJECT_LOGGERS = ("miner", "encoders", "training", "pipelines")
INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C, as a shell gives it (128 + SIGINT)
PROGRESS_EVERY_S = 10.0  # seconds between two progress lines of one counter


class ExtraMissingError(ImportError, ValueError):
    """An optional part of the project is not installed; the message says which extra installs it (a ValueError
    too, so exit_status reports it as a bad setting, without a traceback)."""


def setup_logging(verbose: bool = False, quiet: bool = False) -> None:
    """Our packages log at INFO: stage starts and ends, progress (DEBUG with --verbose, WARNING with --quiet),
    other libraries at WARNING (INFO with --verbose). `force`: importing Apache Beam installs a WARNING handler on
    the root logger, which would otherwise keep this call from doing anything and swallow every INFO line of ours."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_not_an_interruption)
    ours = logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO
    for name in PROJECT_LOGGERS:
        logging.getLogger(name).setLevel(ours)


def _not_an_interruption(record: logging.LogRecord) -> bool:
    """Ctrl-C is said once, by exit_status: a library that logs the KeyboardInterrupt it caught, with its
    traceback (Beam's worker does, as an ERROR naming the transform it stopped), is not shown."""
    caught = record.exc_info[1] if record.exc_info else None
    return not (isinstance(caught, KeyboardInterrupt) or str(record.msg).startswith("KeyboardInterrupt")
                or str(caught or "").startswith("KeyboardInterrupt"))


def comma_list(text: str, flag: str) -> list[str]:
    """A comma-separated list given on the command line (`--languages 'deu_Latn, eng_Latn'`): the spaces around
    each name and empty entries dropped; a list that names nothing is an error naming the flag."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ValueError(f"{flag} {text!r} names nothing: give names separated by commas")
    return names


def exit_status(command: Callable[[], None]) -> int:
    """Run a command's body: bad input (files, vectors, settings) ends it with `error: ...` on stderr and exit
    status 2, no traceback; Ctrl-C with `interrupted` and 130; anything else is a bug and keeps its traceback."""
    try:
        command()
    except (InputFormatError, EmbeddingError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # the machine's answer (a folder where a file goes, no permission, a full disk)
        print(f"error: {err.strerror or err}{f': {err.filename}' if err.filename else ''}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:  # Ctrl-C: what was written is whole (outputs are renamed into place)
        print(f"interrupted{f': {stop}' if str(stop) else ''}", file=sys.stderr)
        return INTERRUPTED
    return 0


class Progress:
    """A counter of long work that logs `what: n units (rate units/s)` at most every `every_s` seconds, and once
    more at `done()`: bounded output however fast the counter moves.

        progress = Progress(log, "embed", "sentences")
        for batch in batches:
            ...
            progress.add(len(batch))
        progress.done()
    """

    def __init__(self, logger: logging.Logger, what: str, unit: str, total: int | None = None,
                 every_s: float = PROGRESS_EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.logger, self.what, self.unit, self.total = logger, what, unit, total
        self.every_s, self.clock = every_s, clock
        self.count = 0
        self.started = self.last = clock()

    def add(self, n: int = 1) -> None:
        self.count += n
        now = self.clock()
        if now - self.last >= self.every_s:
            self.last = now
            self.logger.info("%s", self.line(now))

    def done(self) -> None:
        self.logger.info("%s, done", self.line(self.clock()))

    def line(self, now: float) -> str:
        seconds = max(now - self.started, 1e-9)
        of = f" of {self.total:,}" if self.total is not None else ""
        rate = self.count / seconds
        return f"{self.what}: {self.count:,}{of} {self.unit} in {seconds:.0f} s ({rate:,.1f} {self.unit}/s)"


def plural(n: int, noun: str) -> str:
    """`noun` as a count of `n` says it: 1 sentence, 2 sentences (nouns whose plural takes an s)."""
    return noun if n == 1 else noun + "s"


def wide_table(header: list[str], rows: list[list[str]], columns: int) -> str:
    """A Markdown table with `columns` records side by side in each line (long per-language lists stay short);
    the last line is padded with empty cells."""
    cells = [" | ".join(row) for row in rows]
    blank = " | ".join([""] * len(header))
    lines = [" | ".join(cells[i:i + columns] + [blank] * (columns - len(cells[i:i + columns])))
             for i in range(0, len(cells), columns)]
    return "\n".join([f"| {' | '.join([' | '.join(header)] * columns)} |", "|---" * len(header) * columns + "|",
                      *(f"| {line} |" for line in lines)])

