"""Check that a file is a whole fastText model before fastText reads it.

fastText's loader trusts the file: a model cut short inside its dictionary (an interrupted download or copy) makes
it read one word forever, growing its memory until the machine gives out, and one cut inside a matrix loads with
garbage weights. This walks the layout fastText writes (src/fasttext.cc, args.cc, dictionary.cc, densematrix.cc,
quantmatrix.cc, productquantizer.cc; format version 12) through a memory map, reading only the sizes and the
dictionary's word ends: a few milliseconds for a quantised model, about a second for a dictionary of millions of
words.

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

from miner.io import InputFormatError

MAGIC = 793712314
VERSION = 12
SETTINGS_BYTES = 12 * 4 + 8
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
    reader.skip(SETTINGS_BYTES, "the settings")
    size, nwords, nlabels, _, pruned = reader.take("<iiiqq", "the dictionary's header")
    if min(size, nwords, nlabels) < 0 or nwords + nlabels != size or pruned < -1:
        raise InputFormatError(f"{reader.path}: not a fastText model (a dictionary header that does not add up)")
    for word in range(size):
        end = reader.data.find(b"\0", reader.at)
        if end < 0:
            reader.need(len(reader.data), f"word {word:,} of the dictionary's {size:,}")
        reader.at = end + 1
        reader.skip(9, f"word {word:,} of the dictionary's {size:,}")  # its count (int64) and type (int8)
    reader.skip(8 * max(pruned, 0), "the dictionary's pruned index")
    (quantised,) = reader.take("<?", "the input matrix")
    _matrix(reader, quantised, "the input matrix")
    (quantised_output,) = reader.take("<?", "the output matrix")
    _matrix(reader, quantised and quantised_output, "the output matrix")  # fastText reads qout so


def _matrix(reader: _Reader, quantised: bool, where: str) -> None:
    if not quantised:
        rows, columns = reader.take("<qq", where)
        reader.skip(4 * rows * columns, where)
        return
    normalised, rows, _, code_bytes = reader.take("<?qqi", where)
    reader.skip(code_bytes, where)
    _quantiser(reader, where)
    if normalised:
        reader.skip(rows, where)
        _quantiser(reader, where)


def _quantiser(reader: _Reader, where: str) -> None:
    dim, *_ = reader.take("<iiii", where)
    reader.skip(4 * dim * CENTROIDS, where)
