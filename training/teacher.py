"""Teacher vectors for distillation (METHODS §9): each distinct sentence embedded once, cached, resumable, checked.

    vectors = teacher_vectors("use-multilingual", texts, cache="data/train/teacher")   # float32 [len(texts), dim]

The cache is a folder per teacher holding chunks of `CHUNK` sentences in a fixed order (sorted distinct texts):
`chunk-00012.npy` (float16 vectors) beside `chunk-00012.json` (row count, dimension and the SHA-256 of the chunk's
texts) and `chunk-00012.keys.npy` (a 128-bit hash of each row's text). An interrupted run keeps every chunk it
finished; the next run embeds only the rest. A chunk whose texts changed (other training data) is rebuilt, and only
its new sentences are embedded: a row whose text's hash is in any chunk on disk keeps that vector (adding sentences
shifts every later chunk's boundaries, so without the keys a few new sentences re-embedded the whole tail). A chunk
file that is damaged (truncated, wrong shape, NaN, not an array) is an error naming it before training starts: a
model trained on it would be silently wrong (a damaged chunk is never a source of reused rows either).
Nothing here unpickles: arrays are read with `allow_pickle=False`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from miner.io import file_sha256

log = logging.getLogger("training.teacher")

CHUNK = 20000  # sentences per cache file: the work lost to an interruption, at most
KEY_DTYPE = np.dtype("V16")  # a row's text hash
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class TeacherError(ValueError):
    """The teacher cannot be loaded, or its cache or a sentence cannot be used; the message names which."""


def load_teacher(spec: str):
    """The teacher encoder; an unknown spec or a missing extra is a TeacherError that says what to do."""
    from encoders import CheckpointError, load_encoder

    try:
        return load_encoder(spec)
    except ImportError as err:  # the `use` extra (encoders.use_multilingual.ExtraMissingError)
        raise TeacherError(f"distill.teacher {spec!r}: {err}") from None
    except (CheckpointError, ValueError) as err:
        raise TeacherError(f"distill.teacher {spec!r} cannot be loaded: {err}") from None


def teacher_vectors(spec: str, texts: Sequence[str], cache: str | Path, show_progress: bool = False) -> np.ndarray:
    """Vectors [len(texts), dim] of distinct `texts` (any order), from the cache or embedded now and cached."""
    order = sorted(range(len(texts)), key=texts.__getitem__)
    ordered = [texts[i] for i in order]
    if len(set(ordered)) != len(ordered):
        raise ValueError("teacher_vectors: texts must be distinct (embed each sentence once)")
    folder = Path(cache) / SAFE_NAME.sub("_", spec).strip("._")
    folder.mkdir(parents=True, exist_ok=True)
    chunks = [ordered[start:start + CHUNK] for start in range(0, len(ordered), CHUNK)]
    digests = [_digest(chunk) for chunk in chunks]
    missing = [i for i, digest in enumerate(digests) if not _cached(folder, i, digest)]
    for i in sorted(set(range(len(chunks))) - set(missing)):  # caches written before the keys existed gain them
        if "keys" not in json.loads(_paths(folder, i)[1].read_text(encoding="utf-8")):
            _write_chunk(folder, i, digests[i], _read_chunk(folder, i, digests[i], len(chunks[i])), _keys(chunks[i]))
    if missing:
        _embed_missing(spec, folder, chunks, digests, missing, show_progress)
    parts = [_read_chunk(folder, i, digest, len(chunk)) for i, (chunk, digest) in enumerate(zip(chunks, digests))]
    dims = {part.shape[1] for part in parts}
    if len(dims) > 1:
        raise TeacherError(f"{folder}: cached chunks disagree on the vector size ({sorted(dims)}); delete the "
                           f"folder to embed again")
    result = np.empty((len(texts), dims.pop() if dims else 0), dtype=np.float32)
    result[order] = np.concatenate(parts) if parts else result[:0]
    return result


def _embed_missing(spec: str, folder: Path, chunks: list[list[str]], digests: list[str], missing: list[int],
                   show_progress: bool) -> None:
    """Write the missing chunks, their rows taken from the cache where a chunk on disk holds the same text."""
    keys = {i: _keys(chunks[i]) for i in missing}
    known = _known_rows(folder, np.concatenate(list(keys.values())))  # read before any chunk is overwritten
    new = {i: [row for row, key in enumerate(keys[i]) if key.tobytes() not in known] for i in missing}
    todo = sum(len(rows) for rows in new.values())
    log.info("teacher %s: rebuilding %d of %d chunks in %s: %d sentences embedded, %d taken from the cache", spec,
             len(missing), len(chunks), folder, todo, sum(len(chunks[i]) for i in missing) - todo)
    teacher = load_teacher(spec) if todo else None
    if teacher is not None:
        _check_tokens(teacher, [chunks[i][row] for i in missing for row in new[i]])
    for number, i in enumerate(missing, start=1):
        fresh = teacher.encode([chunks[i][row] for row in new[i]], show_progress=show_progress) if new[i] else None
        dim = fresh.shape[1] if fresh is not None else next(iter(known.values())).shape[0]
        vectors = np.empty((len(chunks[i]), dim), dtype=np.float32)
        if fresh is not None:
            vectors[new[i]] = fresh
        reused = np.setdiff1d(np.arange(len(chunks[i])), new[i])
        if len(reused):
            vectors[reused] = np.stack([known[keys[i][row].tobytes()] for row in reused])
        _write_chunk(folder, i, digests[i], vectors, keys[i])
        log.info("teacher %s: chunk %d/%d written (%d of %d chunks to do)", spec, i + 1, len(chunks), number,
                 len(missing))


def _known_rows(folder: Path, wanted: np.ndarray) -> dict[bytes, np.ndarray]:
    """Cached vectors of the texts whose keys are `wanted`, from every chunk on disk whose record vouches for its
    keys and vectors; anything damaged, half-written or unvouched is skipped (its rows are embedded again)."""
    wanted_set = {key.tobytes() for key in wanted}
    known: dict[bytes, np.ndarray] = {}
    for meta_path in sorted(folder.glob("chunk-*.json")):
        array_path, _, keys_path = _paths(folder, int(meta_path.stem.split("-")[1]))
        try:
            record = json.loads(meta_path.read_text(encoding="utf-8"))
            if record.get("keys") != file_sha256(keys_path) or record.get("vectors") != file_sha256(array_path):
                continue
            keys = np.load(keys_path, allow_pickle=False)
            vectors = np.load(array_path, allow_pickle=False)
        except (OSError, ValueError, EOFError, IndexError):
            continue
        if keys.dtype != KEY_DTYPE or vectors.shape != (len(keys), record.get("dim")) \
                or not np.isfinite(vectors).all():
            continue
        for row, key in enumerate(keys):
            if key.tobytes() in wanted_set:
                known[key.tobytes()] = vectors[row]
    return known


def _keys(texts: list[str]) -> np.ndarray:
    """A 128-bit BLAKE2 hash of each text (collisions among 10^9 sentences: about 10^-21)."""
    return np.array([hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
                     for text in texts], dtype=KEY_DTYPE)


def _check_tokens(teacher, texts: list[str]) -> None:
    """A sentence the teacher's tokenizer maps to nothing but its own markers (or only to unknown pieces) gives no
    target worth learning: name them before any embedding."""
    unreadable = getattr(teacher, "unreadable", None)
    if unreadable is None:
        return
    empty = [f"{texts[row][:60]!r}" for row in unreadable(texts)]
    if empty:
        shown = "; ".join(empty[:5]) + (f" (and {len(empty) - 5} more)" if len(empty) > 5 else "")
        raise TeacherError(f"{len(empty)} sentence(s) the teacher's tokenizer maps to nothing but unknown or "
                           f"marker tokens: {shown}; remove them from the bitext")


def _digest(texts: list[str]) -> str:
    hasher = hashlib.sha256()
    for text in texts:
        hasher.update(text.encode("utf-8", "surrogatepass"))
        hasher.update(b"\n")
    return hasher.hexdigest()


def _paths(folder: Path, index: int) -> tuple[Path, Path, Path]:
    return folder / f"chunk-{index:05d}.npy", folder / f"chunk-{index:05d}.json", folder / f"chunk-{index:05d}.keys.npy"


def _cached(folder: Path, index: int, digest: str) -> bool:
    """The chunk exists for these texts (its content is checked when read)."""
    array, meta, _ = _paths(folder, index)
    if not (array.exists() and meta.exists()):
        return False
    try:
        return json.loads(meta.read_text(encoding="utf-8")).get("sha256") == digest
    except (OSError, ValueError):
        raise TeacherError(f"{meta}: damaged teacher cache record (not JSON); delete it to embed again") from None


def _write_chunk(folder: Path, index: int, digest: str, vectors: np.ndarray, keys: np.ndarray) -> None:
    """Vectors, keys, then the record that vouches for both (with both files' hashes): the old record goes first,
    so a run killed in between leaves a chunk that reads as missing and lends no rows."""
    array, meta, keys_path = _paths(folder, index)
    meta.unlink(missing_ok=True)
    _write_atomic(array, lambda h: np.save(h, vectors.astype(np.float16), allow_pickle=False))
    _write_atomic(keys_path, lambda h: np.save(h, keys, allow_pickle=False))
    record = {"rows": int(vectors.shape[0]), "dim": int(vectors.shape[1]), "sha256": digest,
              "keys": file_sha256(keys_path), "vectors": file_sha256(array)}
    _write_atomic(meta, lambda h: h.write(json.dumps(record).encode()))


def _write_atomic(path: Path, write) -> None:
    tmp = path.with_name(f".tmp-{path.name}")
    with open(tmp, "wb") as handle:
        write(handle)
    os.replace(tmp, path)  # atomic: a killed run leaves a whole file or none


def _read_chunk(folder: Path, index: int, digest: str, rows: int) -> np.ndarray:
    array, meta, _ = _paths(folder, index)
    try:
        vectors = np.load(array, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise TeacherError(f"{array}: damaged teacher cache file ({type(err).__name__}: {err}); delete it to embed "
                           f"again") from None
    expected = json.loads(meta.read_text(encoding="utf-8"))
    if vectors.ndim != 2 or vectors.shape != (rows, expected.get("dim")) or expected.get("sha256") != digest:
        raise TeacherError(f"{array}: teacher cache file has shape {vectors.shape}, expected ({rows}, "
                           f"{expected.get('dim')}); delete it to embed again")
    if not np.issubdtype(vectors.dtype, np.floating) or not np.isfinite(vectors).all():
        raise TeacherError(f"{array}: teacher cache file holds non-finite or non-float values; delete it to embed "
                           f"again")
    if "vectors" in expected and expected["vectors"] != file_sha256(array):
        raise TeacherError(f"{array}: teacher cache file is not the one its record {meta.name} vouches for (changed "
                           f"since it was written); delete it to embed again")
    return vectors.astype(np.float32)
