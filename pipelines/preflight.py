"""What a run needs, checked before its first stage: a typo, a missing file or a bad value is an error naming it in
seconds, not after the extract and embed stages have run for an hour.

Each stage that will run has its settings checked by the code that will use them (each stage's `check`, so the
checks cannot drift from the stages; the file checks below are shared): the input glob must match files, the LID
model must exist, the encoder must be loadable as a spec (a built-in name, a checkpoint folder whose layout reads, a
cloud path or a hub id), and the embed, mining, knn and pair filter sections must parse with the types they need.
"""

from __future__ import annotations

import os

from pipelines import storage


def check_input(pattern: str | None) -> None:
    if not pattern:
        raise ValueError("no input: give --input or set `input` in the config")
    try:
        storage.match(pattern)
    except FileNotFoundError:
        raise ValueError(f"input {pattern!r}: no file matches it") from None
    except OSError as err:  # a bucket that does not exist, no permission ...
        raise ValueError(f"input {pattern!r}: cannot be listed ({err})") from None


def check_lid_model(path: str | None) -> None:
    if path and not storage.is_remote(path) and not os.path.isfile(path):
        raise ValueError(f"lid.model {path!r}: no such file")


def check_encoder(spec: str | None) -> None:
    from encoders import check_spec

    if not spec:
        raise ValueError("no encoder: set `encoder` in the config or give --encoder")
    if not storage.is_remote(spec):  # a cloud folder is read by the workers; nothing to look at from here
        check_spec(spec)
