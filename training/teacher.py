"""Teacher vectors for distillation (METHODS §9): each distinct sentence embedded once, cached, resumable, checked.

    vectors = teacher_vectors("use-multilingual", texts, cache="data/train/teacher")   # float32 [len(texts), dim]

The cache is a folder per teacher holding chunks of `CHUNK` sentences in a fixed order (sorted distinct texts):
`chunk-00012.npy` (float16 vectors) beside `chunk-00012.json` (row count, dimension and the SHA-256 of the chunk's
texts). An interrupted run keeps every chunk it finished; the next run embeds only the rest. A chunk whose texts
changed (other training data) is embedded again. A chunk file that is damaged (truncated, wrong shape, NaN, not an
array) is an error naming it before training starts: a model trained on it would be silently wrong.
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

log = logging.getLogger("training.teacher")

CHUNK = 20000  # sentences per cache file: the work lost to an interruption, at most
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
    if missing:
        log.info("teacher %s: embedding %d of %d chunks (%d sentences) into %s", spec, len(missing), len(chunks),
                 sum(len(chunks[i]) for i in missing), folder)
        teacher = load_teacher(spec)
        _check_tokens(teacher, [t for i in missing for t in chunks[i]])
        for number, i in enumerate(missing, start=1):
            vectors = teacher.encode(chunks[i], show_progress=show_progress)
            _write_chunk(folder, i, digests[i], vectors)
            log.info("teacher %s: chunk %d/%d written (%d of %d chunks to do)", spec, i + 1, len(chunks), number,
                     len(missing))
    parts = [_read_chunk(folder, i, digest, len(chunk)) for i, (chunk, digest) in enumerate(zip(chunks, digests))]
    dims = {part.shape[1] for part in parts}
    if len(dims) > 1:
        raise TeacherError(f"{folder}: cached chunks disagree on the vector size ({sorted(dims)}); delete the "
                           f"folder to embed again")
    result = np.empty((len(texts), dims.pop() if dims else 0), dtype=np.float32)
    result[order] = np.concatenate(parts) if parts else result[:0]
    return result


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


def _paths(folder: Path, index: int) -> tuple[Path, Path]:
    return folder / f"chunk-{index:05d}.npy", folder / f"chunk-{index:05d}.json"


def _cached(folder: Path, index: int, digest: str) -> bool:
    """The chunk exists for these texts (its content is checked when read)."""
    array, meta = _paths(folder, index)
    if not (array.exists() and meta.exists()):
        return False
    try:
        return json.loads(meta.read_text(encoding="utf-8")).get("sha256") == digest
    except (OSError, ValueError):
        raise TeacherError(f"{meta}: damaged teacher cache record (not JSON); delete it to embed again") from None


def _write_chunk(folder: Path, index: int, digest: str, vectors: np.ndarray) -> None:
    array, meta = _paths(folder, index)
    for path, write in ((array, lambda h: np.save(h, vectors.astype(np.float16), allow_pickle=False)),
                        (meta, lambda h: h.write(json.dumps({"rows": int(vectors.shape[0]),
                                                             "dim": int(vectors.shape[1]),
                                                             "sha256": digest}).encode()))):
        tmp = path.with_name(f".tmp-{path.name}")
        with open(tmp, "wb") as handle:
            write(handle)
        os.replace(tmp, path)  # atomic: a killed run leaves a whole chunk or none


def _read_chunk(folder: Path, index: int, digest: str, rows: int) -> np.ndarray:
    array, meta = _paths(folder, index)
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
    return vectors.astype(np.float32)
