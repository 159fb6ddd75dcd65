"""Local file helpers: strict UTF-8 line reading with file:line errors, and atomic writes.

(Beam jobs read and write through Beam's FileSystems in pipelines/; these serve the library's own commands.)
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

# mkstemp creates files readable by the owner only; outputs get the permissions an ordinary open() would give.
_UMASK = os.umask(0)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK  # what open() would give a new file here
DIR_MODE = 0o777 & ~_UMASK  # what mkdir() would give a new folder here


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks (model files run to hundreds of MB)."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class InputFormatError(ValueError):
    """A malformed input file; the message names the file and line."""


def read_lines(path: str | Path) -> list[str]:
    """Lines of a UTF-8 text file (gzipped when the name ends in .gz), without line terminators or a leading
    byte-order mark.

    Invalid UTF-8 is an error naming the line: a mis-decoded sentence would be mined as a different sentence.
    """
    return list(iter_lines(path))


MAX_LINE_BYTES = 1 << 20  # a "sentence" longer than 1 MiB is a broken file (no newlines), not text to hold in memory


def path_argument(text: str) -> Path:
    """A command line's path (argparse `type=`): an empty one, a script's unset variable (`--output "$OUT"`), is
    refused, where Path("") is the working folder and a command wrote its outputs there."""
    import argparse

    if not text.strip():
        raise argparse.ArgumentTypeError("empty: give a path")
    return Path(text)


def iter_lines(path: str | Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[str]:
    """`read_lines`, one line at a time: for files larger than memory. A line longer than `max_line_bytes` is an
    error naming it, found after reading at most that much of it (a file with no newline never fills memory)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            yield from decoded_lines(handle, str(path), max_line_bytes)
    except FileNotFoundError:
        raise InputFormatError(f"{path}: file not found") from None
    except (OSError, EOFError) as err:  # truncated or corrupt gzip
        raise InputFormatError(f"{path}: cannot read ({err})") from None


def decoded_lines(handle: IO[bytes], name: str, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The lines of a binary stream (a file, or stdin's buffer) as iter_lines gives them, errors naming `name`
    and the line."""
    for number, raw in enumerate(iter(lambda: handle.readline(max_line_bytes + 2), b""), start=1):
        if len(raw.rstrip(b"\r\n")) > max_line_bytes:  # +2: the terminator is not part of the limit
            raise InputFormatError(f"{name}:{number}: line longer than {max_line_bytes} bytes (is this a "
                                   f"text file with one sentence per line?)")
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as err:
            raise InputFormatError(f"{name}:{number}: invalid UTF-8 ({err.reason})") from None
        # a byte-order mark (Notepad's UTF-8 files, some of the train pool's) is not part of the first line
        yield line.removeprefix("\ufeff") if number == 1 else line


def read_pair_lines(path: str | Path, limit: int | None = None) -> tuple[list[str], list[str]]:
    """The first `limit` lines of a `source<TAB>target` file as (sources, targets); a line without exactly one tab
    is an error naming it."""
    sources, targets = [], []
    for number, line in enumerate(iter_lines(path), start=1):
        if limit is not None and number > limit:
            break
        fields = line.split("\t")
        if len(fields) != 2:
            raise InputFormatError(f"{path}:{number}: not source<TAB>target")
        sources.append(fields[0])
        targets.append(fields[1])
    return sources, targets


# A tab ends a TSV field and each of these a line (for Python's splitlines and so for readers built on it): in a
# text written as one field of a TSV line each becomes a space, so a record is always one line of three fields.
_TSV_BREAKS = str.maketrans({c: " " for c in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def read_json(path: str | Path, *keys: str) -> dict:
    """A JSON object a command wrote (a report, an index), with `keys` it must hold; a missing file, a folder,
    bad JSON or a missing key is an InputFormatError naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFormatError(f"{path}: not found") from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputFormatError(f"{path}: cannot be read ({getattr(err, 'strerror', None) or err})") from None
    except json.JSONDecodeError as err:
        raise InputFormatError(f"{path}: not JSON ({err})") from None
    missing = [key for key in keys if not isinstance(data, dict) or key not in data]
    if not isinstance(data, dict) or missing:
        raise InputFormatError(f"{path}: expected a JSON object with {', '.join(keys) or 'fields'}; "
                               f"{'missing ' + ', '.join(missing) if missing else 'got ' + type(data).__name__}")
    return data


def tsv_field(text: str) -> str:
    return text.translate(_TSV_BREAKS)


class OutputPathError(ValueError):
    """An output path that cannot be made; the message names the file in the way."""


def nearest_existing(folder: str | Path) -> str:
    """`folder`, or the nearest folder above it that exists (the root at the last)."""
    path = os.path.abspath(folder)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def file_in_the_way(folder: str | Path) -> str | None:
    """The file at `folder`'s path or at the path of a folder above it (the nearest that exists), which keeps
    `folder` from being made; None where it is a folder or can become one."""
    path = nearest_existing(folder)
    return None if os.path.isdir(path) else path


def check_output_folder(output: str | Path) -> None:
    """An `--output` folder that cannot be made (a file at its path or above it, a read-only or virtual file
    system, no permission) is an error naming it, before a command does any work; its first write would otherwise
    fail, with a traceback. Writing is tried with a nameless temporary file where the folder is or would be made."""
    blocked = file_in_the_way(output)
    if blocked:
        raise OutputPathError(f"--output {output}: {blocked} is a file, not a folder; give a folder (or a path where "
                              "one can be made)")
    where = nearest_existing(output)
    try:
        with tempfile.TemporaryFile(dir=where):
            pass
    except OSError as err:
        raise OutputPathError(f"--output {output}: nothing can be written in {where} ({err.strerror or err}); give "
                              "a folder you can write to") from None


@contextlib.contextmanager
def atomic_output(path: str | Path, mode: str = "wb") -> Iterator[IO]:
    """Write `path` through a temporary file in the same folder, renamed into place only on success.

    A crash leaves either the previous file or none, never a truncated one.
    """
    path = Path(path)
    blocked = file_in_the_way(path.parent)
    if blocked:
        raise OutputPathError(f"{path}: cannot be written: {blocked} is a file, not a folder")
    if path.is_dir():  # the rename at the end would fail, after all the work
        raise OutputPathError(f"{path}: is a folder; give a file's path")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: str | Path, data: dict) -> None:
    with atomic_output(path, "w") as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False, sort_keys=False)
        handle.write("\n")


def folder_files(folder: str | Path) -> list[list]:
    """[relative path, size, modification time] of every file under `folder`: what identifies a model folder
    without reading it (a retrained model changes them)."""
    files = []
    for root, _, names in os.walk(folder):
        for name in sorted(names):
            path = os.path.join(root, name)
            stat = os.stat(path)
            files.append([os.path.relpath(path, folder), stat.st_size, round(stat.st_mtime, 3)])
    return sorted(files)
