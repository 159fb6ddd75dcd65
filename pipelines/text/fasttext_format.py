"""Check that a file is a whole fastText model before fastText reads it.

fastText's loader trusts the file: a model cut short inside its dictionary (an interrupted download or copy) makes
it read one word forever, growing its memory until the machine gives out, and one cut inside a matrix loads with
garbage weights; settings that do not fit the matrices (dim, bucket) make it write or read outside them (the
process aborts, or predicts from garbage). This walks the layout fastText writes (src/fasttext.cc, args.cc,
dictionary.cc, densematrix.cc, quantmatrix.cc, productquantizer.cc; format version 12) through a memory map,
reading only the settings, the sizes and the dictionary's word ends, and checks the settings against the
dictionary and the matrices: a few milliseconds for a quantised model, about a second for a dictionary of
millions of words.

    magic int32, version int32 | settings: 12 int32 and a double | dictionary: size, nwords, nlabels int32,
    ntokens, pruneidx_size int64, then `size` entries (word bytes, NUL, count int64, type int8), then pruneidx
    pairs (2 int32) | input matrix, output matrix: each after a flag byte (quantised; the output's counts only
    where the input's is set), dense (m, n int64, m*n float32) or quantised (qnorm byte, m, n int64, codesize
    int32, codes, a product quantiser, and with qnorm the norms' codes and their quantiser) | product
    quantiser: dim, nsubq, dsub, lastdsub int32, then dim * 256 float32 centroids
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path
from typing import NoReturn

from miner.io import InputFormatError

MAGIC = 793712314
VERSION = 12
# the settings' 12 int32 in order (then a double, t); models and losses by fastText's numbers
SETTINGS = ("dim", "ws", "epoch", "minCount", "neg", "wordNgrams", "loss", "model", "bucket", "minn", "maxn",
            "lrUpdateRate")
MODELS = {1: "cbow", 2: "skipgram", 3: "supervised"}
SUPERVISED = 3
LOSSES = {1: "hs", 2: "ns", 3: "softmax", 4: "ova"}
CENTROIDS = 256  # a product quantiser's centroids per sub-quantiser (fastText's ksub)


class _Reader:
    def __init__(self, data, path: Path):
        self.data, self.path, self.at = data, path, 0

    def need(self, size: int, where: str) -> None:
        if size < 0 or self.at + size > len(self.data):
            raise InputFormatError(f"{self.path}: not a whole fastText model: the file ends at byte "
                                   f"{len(self.data):,} inside {where} (cut short in a download or copy?)")

    def take(self, fmt: str, where: str) -> tuple:
        size = struct.calcsize(fmt)
        self.need(size, where)
        values = struct.unpack_from(fmt, self.data, self.at)
        self.at += size
        return values

    def skip(self, size: int, where: str) -> None:
        self.need(size, where)
        self.at += size


def check_model_file(path: str | Path) -> None:
    """Raise InputFormatError naming `path` unless it holds a whole fastText model of a version fastText reads."""
    path = Path(path)
    with open(path, "rb") as handle:
        if path.stat().st_size < 8:
            raise InputFormatError(f"{path}: not a fastText model (a file of {path.stat().st_size} bytes)")
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            _walk(_Reader(data, path))


def _walk(reader: _Reader) -> None:
    magic, version = reader.take("<ii", "the header")
    if magic != MAGIC or not 0 < version <= VERSION:
        raise InputFormatError(f"{reader.path}: not a fastText model (no fastText header)")
    settings = _settings(reader, version)
    size, nwords, nlabels, _, pruned = reader.take("<iiiqq", "the dictionary's header")
    if min(size, nwords, nlabels) < 0 or nwords + nlabels != size or pruned < -1:
        raise InputFormatError(f"{reader.path}: not a fastText model (a dictionary header that does not add up)")
    for word in range(size):
        end = reader.data.find(b"\0", reader.at)
        if end < 0:
            reader.need(len(reader.data), f"word {word:,} of the dictionary's {size:,}")
        reader.at = end + 1
        reader.skip(9, f"word {word:,} of the dictionary's {size:,}")  # its count (int64) and type (int8)
    hashed = _hashed_rows(reader, settings, pruned)
    (quantised,) = reader.take("<?", "the input matrix")
    rows = _matrix(reader, quantised, settings["dim"], "the input matrix")
    if rows != nwords + hashed:
        _refuse(reader, f"the input matrix has {rows:,} rows, not the {nwords:,} words and {hashed:,} hashed rows "
                        "the dictionary and settings call for")
    (quantised_output,) = reader.take("<?", "the output matrix")
    quantised_output = quantised and quantised_output   # fastText reads qout so
    rows = _matrix(reader, quantised_output, settings["dim"], "the output matrix")
    outputs = nlabels if settings["model"] == SUPERVISED else nwords
    if rows != outputs:
        _refuse(reader, f"the output matrix has {rows:,} rows, not {outputs:,}")


def _refuse(reader: _Reader, why: str) -> NoReturn:
    raise InputFormatError(f"{reader.path}: not a fastText model ({why})")


def _settings(reader: _Reader, version: int) -> dict[str, int]:
    """The settings fastText uses to read and predict, checked: it trusts them (a `dim` other than the matrices'
    writes past its vectors; a `bucket` of 0 divides by zero, a negative one or one past the input matrix indexes
    outside it: memory corrupted, the process aborted)."""
    *values, _ = reader.take("<12id", "the settings")
    settings = dict(zip(SETTINGS, values))
    if settings["dim"] < 1:
        _refuse(reader, f"dim {settings['dim']} in the settings")
    if settings["loss"] not in LOSSES or settings["model"] not in MODELS:
        _refuse(reader, f"loss {settings['loss']} or model {settings['model']} in the settings: not fastText's")
    if min(settings["bucket"], settings["minn"], settings["maxn"]) < 0:
        _refuse(reader, "a negative bucket, minn or maxn in the settings")
    if version == 11 and settings["model"] == SUPERVISED:
        settings["maxn"] = 0    # fastText reads old supervised models without character n-grams
    return settings


def _hashed_rows(reader: _Reader, settings: dict[str, int], pruned: int) -> int:
    """The input matrix's rows after the words: for n-grams, hashed modulo `bucket` (fastText reads a model whose
    pruned index is set up to its size; of 0, none)."""
    hashes = settings["maxn"] > 0 or settings["wordNgrams"] > 1
    if hashes and settings["bucket"] == 0:
        _refuse(reader, "bucket 0 in the settings, for a model hashing n-grams")
    if pruned < 0:
        return settings["bucket"]
    reader.need(8 * pruned, "the dictionary's pruned index")
    for _, row in struct.iter_unpack("<ii", reader.data[reader.at:reader.at + 8 * pruned]):
        if not 0 <= row < pruned:
            _refuse(reader, f"a pruned index row {row} outside its {pruned:,}")
    reader.at += 8 * pruned
    return pruned


def _matrix(reader: _Reader, quantised: bool, dim: int, where: str) -> int:
    """Skip a matrix of `dim` columns; its rows."""
    if not quantised:
        rows, columns = reader.take("<qq", where)
        if columns != dim or rows < 0:
            _refuse(reader, f"{where} is {rows:,} x {columns:,}, for dim {dim} in the settings")
        reader.skip(4 * rows * columns, where)
        return rows
    normalised, rows, columns, code_bytes = reader.take("<?qqi", where)
    if columns != dim or rows < 0:
        _refuse(reader, f"{where} is {rows:,} x {columns:,}, for dim {dim} in the settings")
    reader.skip(code_bytes, where)
    codes = _quantiser(reader, columns, where)
    if code_bytes != rows * codes:
        _refuse(reader, f"{where} has {code_bytes:,} bytes of codes, not {rows:,} x {codes}")
    if normalised:
        reader.skip(rows, where)
        _quantiser(reader, 1, where)
    return rows


def _quantiser(reader: _Reader, dim: int, where: str) -> int:
    """Skip a product quantiser of vectors of `dim`; its codes per vector (sub-quantisers). fastText indexes its
    centroids and the vectors by these sizes, unchecked."""
    size, parts, width, last = reader.take("<iiii", where)
    if size != dim or parts < 1 or not 1 <= last <= width or (parts - 1) * width + last != dim:
        _refuse(reader, f"a product quantiser of {where} that does not add up to dim {dim} ({size}, {parts} parts "
                        f"of {width}, the last {last})")
    reader.skip(4 * size * CENTROIDS, where)
    return parts
