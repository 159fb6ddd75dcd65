"""One run at a time in a local output folder.

Two runs into one folder (the same command started again in a second terminal, a cron job that overtakes the last
one) would clear and write the same stage folders at once: each file stays whole (writes are atomic), but the
manifests could end up describing another run's files. `output_lock` holds an exclusive `flock` on
`<output>/.run.lock` for the whole run, so a second run stops at once with an error naming the first (the file
holds the holder's process id, host and start time). The kernel releases the lock when its process ends, however
it ends, so a killed run leaves no stale lock: at most the file, which the next run takes over. A run that ends
removes the file while it still holds the lock, and the folder too where the run made it and left it empty (a run
refused by its checks). A run that opened the file a moment before then locks a file no longer at the path, while
a third run may lock a new one there: so a lock counts only where the file locked is the one at the path (the
same inode, after the lock is taken), and otherwise the path is opened and locked again.

Cloud storage has no such lock through Beam's FileSystems (a gs:// output is not locked: one run at a time there is
the user's to keep); neither has a platform without `fcntl`.
"""

from __future__ import annotations

import os
import socket
import time
from contextlib import contextmanager, suppress

from pipelines.storage import is_remote

try:
    import fcntl
except ImportError:  # not POSIX: no lock
    fcntl = None

LOCK_NAME = ".run.lock"


class OutputBusyError(ValueError):
    """Another run holds the output folder's lock."""


@contextmanager
def output_lock(output: str):
    """Hold `output`'s lock inside; OutputBusyError at once where another process holds it."""
    if is_remote(output) or fcntl is None:
        yield
        return
    made = not os.path.isdir(output)
    path = os.path.join(output, LOCK_NAME)
    with _locked(output, path) as handle:  # closing it releases the lock
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}, since "
                     f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n")
        handle.flush()
        try:
            yield
        finally:
            with suppress(FileNotFoundError):  # a run may have cleared the folder: its own error is the one to see
                os.unlink(path)
                if made and not os.listdir(output):
                    os.rmdir(output)


def _locked(output: str, path: str):
    """The lock file at `path`, open and locked: OutputBusyError where another process holds it. A file removed or
    replaced between the open and the lock (its holder ended) is not the lock: the path is opened again."""
    while True:
        os.makedirs(output, exist_ok=True)  # again: an ending run removes the folder it made and left empty
        try:
            handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - returned open, closed by the caller
        except FileNotFoundError:  # the folder went between the two
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "a process that has not written its id yet"
            handle.close()
            raise OutputBusyError(f"{output}: another run is writing to it ({holder}); wait for it to end, or give "
                                  f"another --output") from None
        if _is_at(handle, path):
            return handle
        handle.close()


def _is_at(handle, path: str) -> bool:
    """Whether the open file `handle` is the file now at `path`."""
    try:
        here, there = os.fstat(handle.fileno()), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)
