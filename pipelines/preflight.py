"""What a run needs, checked before its first stage: a typo, a missing file or a bad value is an error naming it in
seconds, not after the extract and embed stages have run for an hour.

Each stage that will run has its settings checked by the code that will use them (each stage's `check`, so the
checks cannot drift from the stages; the file checks below are shared): the input glob must match files, the LID
model must exist, the encoder must be loadable as a spec (a built-in name, a checkpoint folder whose layout reads, a
cloud path or a hub id; never pickled weights), and the embed, mining, knn and pair filter sections must parse with
the types they need.

The output folder is checked too, before any stage deletes anything in it (pipelines/job.py): the folders of a stage
that will run are real folders (a stage clears its folders first, and never deletes through a link), and every file
a finished stage's manifest lists, which later stages will read, is there and whole (a zero-byte or cut vector
shard, vectors of another width or dtype, a sentence shard that is not Parquet, a bitext TSV.gz not of the size
recorded): an error naming the file, not a traceback from inside a Beam transform after the later stage's earlier
output is gone.
"""

from __future__ import annotations

import glob
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from miner.config import bundled_hint
from miner.io import InputFormatError
from miner.io import check_output_folder as check_local_output
from pipelines import layout, manifests, storage
from pipelines.options import STAGES

# Weight files in pickle format (torch.save and its relatives): loading one can run code, so none is ever opened.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
VECTOR_DTYPES = (np.float16, np.float32)  # what the embed stage writes (embed.dtype)


def check_input(pattern: str | None) -> None:
    if not pattern:
        raise ValueError("no input: give --input or set `input` in the config")
    try:
        paths = storage.match(pattern)
    except FileNotFoundError:
        raise ValueError(f"input {pattern!r}: no file matches it") from None
    except OSError as err:  # a bucket that does not exist, no permission ...
        raise ValueError(f"input {pattern!r}: cannot be listed ({storage.cloud_storage_problem(err) or err})") \
            from None
    if not storage.is_remote(pattern):  # Beam's match leaves out what it cannot read: see all that the glob names
        paths = sorted(set(paths) | set(glob.glob(os.path.expanduser(pattern))))
    folder = next((path for path in paths if not storage.is_remote(path) and os.path.isdir(path)), None)
    if folder:  # the extract stage reads files: a folder would fail on the first worker that opens it
        raise ValueError(f"input {pattern!r}: {folder} is a folder; give a glob of the crawl files in it, such as "
                         f"'{os.path.join(folder, '*.warc.gz')}'")
    unreadable = next((path for path in paths if not storage.is_remote(path) and not os.access(path, os.R_OK)), None)
    if unreadable:  # a link to nothing, no permission: its pages would be missing from the bitext without a word
        why = f"a link to {os.readlink(unreadable)}, which does not exist" if os.path.islink(unreadable) \
            and not os.path.exists(unreadable) else "it cannot be read"
        raise ValueError(f"input {pattern!r}: {unreadable}: {why}; remove it or give a glob without it")


def check_lid_model(spec: str | None) -> None:
    """Each model of `lid.model` is a file, or a built-in whose file is installed; a fastText model given by local
    path is also parsed, so a file of another format fails here, not in the extract stage's first worker (a cut
    copy mostly does too: fastText reads past a file's end unchecked, and what it finds there decides). The
    built-ins are checked by hash where they load."""
    from pipelines.text.langid import BUILTIN_MODELS, is_expert_set, lid_parts, load_fasttext, model_file

    for part in lid_parts(spec) if spec else []:
        try:
            path = model_file(part)
        except InputFormatError as err:
            raise ValueError(f"lid.model {part!r}: {err}") from None
        if storage.is_remote(path):
            continue
        if not os.path.isfile(path):
            raise ValueError(f"lid.model {part!r}: no such file{bundled_hint(path)}")
        if part not in BUILTIN_MODELS and not is_expert_set(part):
            try:
                load_fasttext(Path(path))
            except InputFormatError as err:
                raise ValueError(f"lid.model {part!r}: {err}") from None


def check_lid_languages(lid: dict) -> None:
    """`lid.languages`, when set, names languages the model knows: checked here, not on the first worker."""
    from pipelines.text.langid import lid_parts

    languages, spec = lid.get("languages"), lid.get("model")
    if not languages or not spec or any(storage.is_remote(part) for part in lid_parts(spec)):
        return
    from pipelines.text.identifier import RestrictedIdentifier
    from pipelines.text.langid import load_identifier

    RestrictedIdentifier(load_identifier(spec), languages)


def check_encoder(spec: str | None) -> None:
    from encoders import check_spec

    if not spec:
        raise ValueError("no encoder: set `encoder` in the config or give --encoder")
    if not storage.is_remote(spec):  # a cloud folder is read by the workers; nothing to look at from here
        check_no_pickled_weights(spec)
        check_spec(spec)


def check_no_pickled_weights(spec: str) -> None:
    """An encoder folder whose weights would be read from a pickle is refused, naming the file: the folders weights
    are read from (the folder itself, the modules its modules.json lists, an ensemble's members) must each hold
    model.safetensors (or its index) wherever they hold a pickle-format file (`*.bin`, `*.pt`, ...). cmlm-miner
    never unpickles; left alone, torch would refuse the file only in the embed stage, advising
    `weights_only=False`. A pickle beside model.safetensors (transformers' training_args.bin) is never loaded and
    is left alone; a safetensors file of another name is not what loaders read, and does not count."""
    from encoders.ensemble import is_ensemble, read_ensemble

    folder = Path(spec)
    if not folder.is_dir():
        return
    if is_ensemble(folder):
        for member in read_ensemble(folder)["members"]:
            check_no_pickled_weights(member)
        return
    for weights in [folder, *_module_folders(folder)]:
        # the names loaders read before a pickle: any other .safetensors beside one is never loaded
        if any((weights / name).is_file() for name in ("model.safetensors", "model.safetensors.index.json")):
            continue
        pickled = sorted(p for p in weights.iterdir() if p.suffix in PICKLE_SUFFIXES and p.is_file())
        if pickled:
            raise ValueError(f"{pickled[0]}: pickled weights (a {pickled[0].suffix} file and no model.safetensors "
                             "beside it); cmlm-miner never unpickles model files (loading a pickle can run code): "
                             "convert the weights to safetensors (safetensors.torch.save_file) or use a folder that "
                             "has them")


def _module_folders(folder: Path) -> list[Path]:
    """The sentence-transformers module folders modules.json lists (a bad modules.json is check_spec's to name)."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    paths = [m.get("path") for m in modules if isinstance(m, dict)] if isinstance(modules, list) else []
    return [folder / p for p in paths if isinstance(p, str) and p and (folder / p).is_dir()]


# -- the output folder, before any stage deletes anything in it --------------------------------------------------

def check_output_folder(output: str) -> None:
    """The output is a folder or can become one: a file at its path, or at the path of a folder above it, is an
    error naming it (where the first stage would otherwise fail creating its folders, with a traceback)."""
    if not storage.is_remote(output):
        check_local_output(output)


def check_stage_folders(output: str, stage: str) -> None:
    """A stage that runs deletes its folders first: each must be a real folder or absent. A folder that is a link
    is refused, not emptied through it (it may point anywhere) nor replaced (the link says where its files should
    go); a file in a folder's place is refused too."""
    for folder in layout.stage_folders(output, stage):
        if storage.is_remote(folder):
            continue
        if os.path.islink(folder):
            raise ValueError(f"{folder} is a symbolic link (to {os.readlink(folder)}): the {stage} stage clears its "
                             "folders before it runs and will not delete through a link; make it a folder (move "
                             "what it points to into its place) or give another --output")
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise ValueError(f"{folder} is a file, not a folder: the {stage} stage writes a folder there; move or "
                             "remove the file")


def check_no_deletion_through_links(output: str, stage: str, paths: list[str]) -> None:
    """Stray files of a reused stage are removed, but never through a linked folder."""
    for path in paths:
        link = manifests.linked_part(path, output)
        if link:
            raise ValueError(f"{path}: not listed in the {stage} stage's manifest, and it lies in {link}, a symbolic "
                             "link the pipeline will not delete through: remove it by hand, or make the link a "
                             "folder")


def check_finished_stage(output: str, stage: str, manifest: dict) -> None:
    """Every file a finished stage's manifest lists is there and whole, before a later stage reads it: sentence
    shards read as Parquet with the rows listed, vector shards as .npy headers of the listed rows, width and a
    float dtype with every byte of their data, bitext TSV.gz files of the size listed (headers, footers and sizes
    only: cheap, and done in parallel for gs://)."""
    problems = finished_problems(output, stage, manifest)
    if problems:
        later = ",".join(STAGES[STAGES.index(stage):])
        raise ValueError(f"{problems[0]}; the {stage} stage's output in {output} is damaged"
                         f"{f' ({len(problems) - 1} more files)' if len(problems) > 1 else ''}: run it again "
                         f"(--stages {later} --rerun)")


def finished_problems(output: str, stage: str, manifest: dict) -> list[str]:
    """What check_finished_stage finds wrong with the files a finished stage's manifest lists, a line a file."""
    checks = []
    for language, entry in (manifest.get("languages") or {}).items():
        for shard in entry.get("shards", []):
            if stage == "extract":
                checks.append((parquet_problem, shard["path"], shard["rows"]))
            elif "embeddings" in shard:
                checks.append((_check_vectors, shard["embeddings"], shard["rows"], entry.get("dim"),
                               entry.get("binary")))
                if "rotated" in shard:  # embed.binary_refine's float rows beside the codes
                    checks.append((_check_vectors, shard["rotated"], shard["rows"], entry.get("dim"), None))
    for entry in manifest.get("pairs") or []:
        for part in layout.bitext_parts(entry):
            checks += [(parquet_problem, part["parquet"], part.get("pairs")),
                       (_check_size, part["tsv"], part.get("tsv_bytes"))]
    checks += [(_check_present, path) for path in (manifest.get("quantizers") or {}).values()]
    with ThreadPoolExecutor(16 if storage.is_remote(output) else 1) as pool:
        return [p for p in pool.map(lambda check: check[0](*check[1:]), checks) if p]


def _check_present(path: str) -> str | None:
    return _check_size(path, None)


def _check_size(path: str, expected: int | None) -> str | None:
    """A file there and not empty, and where the manifest records its size (a bitext TSV.gz, written once) of that
    size; one size request (a round trip on gs://)."""
    size = storage.size(path)
    if size is None:
        return f"{path}: missing"
    if size == 0:
        return f"{path}: empty file (0 bytes)"
    if expected is None or size == expected:
        return None
    return f"{path}: {size} bytes, the manifest lists {expected} (cut or rewritten)"


def parquet_problem(path: str, rows: int | None) -> str | None:
    import pyarrow.parquet as pq

    problem = _check_present(path)
    if problem:
        return problem
    try:
        with storage.open_file(path) as handle:
            found = pq.read_metadata(handle).num_rows
    except Exception as err:  # pyarrow raises its own error types for a file that is not Parquet
        return f"{path}: not a readable Parquet file ({type(err).__name__}: {err})"
    if rows is not None and found != rows:
        return f"{path}: {found} rows, the manifest lists {rows}"
    return None


def _check_vectors(path: str, rows: int, dim: int | None, code: str | None = None) -> str | None:
    """The .npy header (never the data: a header that asks for pickles is refused) against the manifest, and the
    file's size against the header: a cut file is found without reading it. `code`: packed binary vectors
    (uint8, dim / 8 bytes a row)."""
    return _vectors(path, rows, dim, code)[0]


def whole_vectors_dim(path: str, rows: int, code: str | None = None) -> int | None:
    """The vector width of a whole shard of `rows` vectors at `path` (the checks of _check_vectors, any width;
    a binary code's in bits), None where there is none or it is not whole."""
    problem, width = _vectors(path, rows, None, code)
    return None if problem else width * (8 if code else 1)


def _vectors(path: str, rows: int, dim: int | None, code: str | None) -> tuple[str | None, int | None]:
    """(the problem with the shard, or None; its row width in stored columns)."""
    problem = _check_present(path)
    if problem:
        return problem, None
    try:
        with storage.open_file(path) as handle:
            version = np.lib.format.read_magic(handle)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                           (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read_header is None:
                return f"{path}: a .npy file of format {version}, which the embed stage does not write", None
            shape, fortran, dtype = read_header(handle)
            offset = handle.tell()
    except (ValueError, EOFError, OSError) as err:
        return f"{path}: not a .npy file of vectors ({err})", None
    expected_dtypes = (np.uint8,) if code else VECTOR_DTYPES
    if dtype.hasobject or dtype not in expected_dtypes:
        wanted = "uint8 (packed binary vectors)" if code else "float16 or float32"
        return f"{path}: dtype {dtype}, not {wanted}" + (" (an array of Python objects: a pickle)"
                                                         if dtype.hasobject else ""), None
    if len(shape) != 2 or fortran:
        return f"{path}: an array of shape {shape}{' in Fortran order' if fortran else ''}, not rows of vectors", None
    if shape[0] != rows:
        return f"{path}: {shape[0]} rows, the manifest lists {rows}", None
    if code and dim is not None and 8 * shape[1] != dim:
        return f"{path}: binary vectors of {8 * shape[1]} bits, expected {dim}", None
    if not code and dim is not None and shape[1] != dim:
        return f"{path}: vectors have {shape[1]} dimensions, expected {dim}", None
    data, expected = storage.size(path) - offset, rows * shape[1] * dtype.itemsize
    if data != expected:
        return (f"{path}: holds {data} bytes of vectors, {expected} expected ({rows} x {shape[1]} {dtype}): cut "
                "short"), None
    return None, int(shape[1])
