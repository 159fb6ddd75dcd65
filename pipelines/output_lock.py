"""One run at a time in a local output folder.

Two runs into one folder (the same command started again in a second terminal, a cron job that overtakes the last
one) would clear and write the same stage folders at once: each file stays whole (writes are atomic), but the
manifests could end up describing another run's files. `output_lock` holds an exclusive `flock` on
`<output>/.run.lock` for the whole run, so a second run stops at once with an error naming the first (the file
holds the holder's process id, host and start time). The kernel releases the lock when its process ends, however
it ends, so a killed run leaves no stale lock: at most the file, which the next run takes over. A run that ends
removes the file while it still holds the lock (a run that opened it a moment before then fails to lock it, as
it would have), and the folder too where the run made it and left it empty (a run refused by its checks).

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
    os.makedirs(output, exist_ok=True)
    path = os.path.join(output, LOCK_NAME)
    with open(path, "a+", encoding="utf-8") as handle:  # closing it releases the lock
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "a process that has not written its id yet"
            raise OutputBusyError(f"{output}: another run is writing to it ({holder}); wait for it to end, or give "
                                  f"another --output") from None
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
