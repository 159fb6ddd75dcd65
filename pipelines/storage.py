"""Files through Beam's FileSystems, so a local folder and gs://bucket/prefix are the same code.

Every output is written under a temporary name beside its final one and renamed into place when complete, so a
killed run leaves finished files or none, never a partial one; a rerun overwrites with identical bytes.
"""

from __future__ import annotations

import atexit
import io
import json
import logging
import os
import posixpath
import shutil
import tempfile
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

log = logging.getLogger("pipelines.storage")
RAW = CompressionTypes.UNCOMPRESSED  # never let FileSystems guess: .gz outputs are gzipped by us, inputs by warcio
TEMPORARY_MARK = ".tmp-"


def is_remote(path: str) -> bool:
    return "://" in path


# where each cloud scheme's client connects, unless an emulator or a proxy stands between (then nothing is checked)
SERVICE_ENDPOINTS = {"gs": ("storage.googleapis.com", 443, "STORAGE_EMULATOR_HOST")}
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def warn_if_unreachable(paths: list[str | None], timeout: float = 3.0) -> list[str]:
    """A warning at once for each cloud service among `paths` that this machine cannot connect to (no network, no
    DNS): the service's client retries for about two minutes before its error, and a run would sit silent until
    then. Only a warning: the client may still get through where this cannot tell (a proxy it is configured for).
    Returns the warnings given."""
    import socket

    warned = []
    schemes = sorted({path.partition("://")[0] for path in paths if path and is_remote(path)})
    for scheme in schemes:
        host, port, emulator = SERVICE_ENDPOINTS.get(scheme, (None, None, None))
        if host is None or os.environ.get(emulator) or any(os.environ.get(name) for name in PROXY_VARIABLES):
            continue
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as err:
            warned.append(f"cannot connect to {host}:{port} for the {scheme}:// paths ({err}); the storage client "
                          f"retries for about two minutes before it fails: check the network, or stop the run")
            log.warning("%s", warned[-1])
    return warned


def cloud_storage_problem(err: BaseException, path: str | None = None) -> str | None:
    """What a cloud storage error says, in a line (a bucket that does not exist or refuses, no network, no
    credentials after the client's retries), for an `error:` instead of a page of traceback; Beam's FileSystems
    wrap the client's error with the path it concerned. None for any other error."""
    from apache_beam.io.filesystem import BeamIOError

    if isinstance(err, BeamIOError):
        for where, inner in (err.exception_details or {}).items():
            problem = cloud_storage_problem(inner, where if isinstance(where, str) else path)
            if problem:
                return problem
        return None
    try:
        from google.api_core import exceptions
        from google.auth.exceptions import GoogleAuthError
    except ImportError:  # no Google Cloud client installed: no such error can have happened
        return None
    if not isinstance(err, exceptions.GoogleAPIError | GoogleAuthError):
        return None
    reason = " ".join(str(err).split())
    reason = f"{reason[:300]} ..." if len(reason) > 300 else reason
    hint = ""
    if isinstance(err, exceptions.Unauthorized | exceptions.Forbidden) and not _beam_reads_credentials():
        hint = "; Beam connects anonymously without its GCP extra: pip install -e '.[gcp]'"
    return f"cloud storage{f' ({path})' if path else ''}: {reason} ({type(err).__name__}){hint}"


def _beam_reads_credentials() -> bool:
    """Whether Beam's GCS client can use Google credentials: it needs google_auth_httplib2, which apache-beam[gcp]
    installs, and otherwise connects anonymously (apache_beam/internal/gcp/auth.py)."""
    import importlib.util

    return importlib.util.find_spec("google_auth_httplib2") is not None


def join(base: str, *parts: str) -> str:
    return FileSystems.join(base, *parts) if is_remote(base) else os.path.join(base, *parts)


def match(pattern: str, allow_empty: bool = False) -> list[str]:
    """Paths matching a glob, sorted (a rerun sees the same order); an empty match is an error naming it, unless
    `allow_empty`."""
    paths = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    if not paths and not allow_empty:
        raise FileNotFoundError(f"{pattern}: no files match")
    return paths


def exists(path: str) -> bool:
    return FileSystems.exists(path)


def read_bytes(path: str) -> bytes:
    with FileSystems.open(path, compression_type=RAW) as handle:
        return handle.read()


def write_bytes(path: str, data: bytes) -> None:
    """Write `data` to `path` atomically: a temporary sibling, then a rename."""
    if not is_remote(path):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temporary = f"{path}{TEMPORARY_MARK}{uuid.uuid4().hex}"
    with FileSystems.create(temporary, compression_type=RAW) as handle:
        handle.write(data)
    FileSystems.rename([temporary], [path])  # replaces an older file: os.rename locally, copy + delete on GCS


def read_json(path: str) -> dict:
    return json.loads(read_bytes(path).decode("utf-8"))


def write_json(path: str, data: dict) -> None:
    write_bytes(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))


def table_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def write_parquet(path: str, table: pa.Table) -> None:
    write_bytes(path, table_bytes(table))


def write_npy(path: str, matrix: np.ndarray) -> None:
    """An array as .npy (data only, never a pickle), written atomically."""
    buffer = io.BytesIO()
    np.save(buffer, matrix, allow_pickle=False)
    write_bytes(path, buffer.getvalue())


def read_npy(path: str) -> np.ndarray:
    return np.load(io.BytesIO(read_bytes(path)), allow_pickle=False)


def read_parquet(path: str, columns: list[str] | None = None) -> pa.Table:
    # one file: ParquetFile, not read_table, whose dataset layer (and its import) costs more than a shard's read
    return pq.ParquetFile(io.BytesIO(read_bytes(path))).read(columns=columns)


def delete_tree(path: str) -> None:
    """Remove a folder (or gs:// prefix) and everything under it; nothing there is fine."""
    if is_remote(path):  # object stores have no folders: delete what the prefix holds
        found = [m.path for m in FileSystems.match([path.rstrip("/") + "/**"])[0].metadata_list]
        if found:
            FileSystems.delete(found)
    elif os.path.exists(path):
        shutil.rmtree(path)


def delete_path(path: str) -> None:
    """Remove one file, link (never what it points to) or folder."""
    if is_remote(path):
        FileSystems.delete([path])
    elif os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def list_files(folder: str) -> list[str]:
    """Every file under a folder (or gs:// prefix), sorted; none there: []."""
    if not is_remote(folder):
        return sorted(os.path.join(root, name) for root, _, names in os.walk(folder) for name in names)
    return sorted(m.path for m in FileSystems.match([folder.rstrip("/") + "/**"])[0].metadata_list)


def list_finished(folder: str) -> list[str]:
    """`list_files` less the writes not finished (a temporary name: a run stopped as it wrote them)."""
    return [path for path in list_files(folder) if TEMPORARY_MARK not in path.rsplit("/", 1)[-1]]


def size(path: str) -> int | None:
    """A file's size in bytes; None when there is no such file."""
    if not is_remote(path):
        return os.path.getsize(path) if os.path.isfile(path) else None
    found = FileSystems.match([path])[0].metadata_list
    return found[0].size_in_bytes if found else None


def open_file(path: str):
    """A binary, seekable reader (local or gs://), for reading a file's header or footer only."""
    return FileSystems.open(path, compression_type=RAW)


def stage_folder(local: str, remote: str) -> str:
    """Copy a local folder (a model) to `remote` so workers that cannot see this machine's disk can read it."""
    for root, _, files in os.walk(local):
        for name in sorted(files):
            source = os.path.join(root, name)
            target = join(remote, os.path.relpath(source, local).replace(os.sep, "/"))
            with open(source, "rb") as handle:
                write_bytes(target, handle.read())
    log.info("staged %s to %s", local, remote)
    return remote


def _download_folder() -> str:
    """A temporary folder for a process's downloads, removed when the process exits (they are its cache, and a
    worker or test session that made many would otherwise leave them all in the temporary directory)."""
    folder = tempfile.mkdtemp(prefix="cmlm-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def local_folder(path: str, cache: dict[str, str] = {}) -> str:  # noqa: B006 - one cache per process on purpose
    """A local folder holding the files under `path`: the path itself when local, else a download (once per
    process) into a temporary folder, for libraries that only read local files (faiss, fastText, transformers)."""
    if not is_remote(path):
        return path
    if path not in cache:
        folder = _download_folder()
        prefix = path.rstrip("/") + "/"
        for remote in match(prefix + "**"):
            target = os.path.join(folder, posixpath.relpath(remote, prefix))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(read_bytes(remote))
        cache[path] = folder
    return cache[path]


def local_file(path: str, cache: dict[str, str] = {}) -> str:  # noqa: B006
    """`local_folder` for one file."""
    if not is_remote(path):
        return path
    if path not in cache:
        folder = _download_folder()
        target = os.path.join(folder, posixpath.basename(path))
        with open(target, "wb") as handle:
            handle.write(read_bytes(path))
        cache[path] = target
    return cache[path]
