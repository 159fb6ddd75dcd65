"""What the pairs stage keeps of a stopped run (pipelines.job resumes it where the next run is run on the same inputs
and settings): each language's quantizer, written as it is trained (`index/<lang>/centroids.npy`, an output of the
stage), and each shard's rows' lists in a quantizer, saved as they are assigned (layout.list_assignment). These are
the join's costly steps before its groupings, and they grow with the lists where the comparisons do not: a run
that resumes a stage stopped at its comparisons costs 0.27 of a whole run at 10^6 sentences a language
(bench/bench_pairs_resume.py, docs/benchmarks.md). A saved file is used only where it is whole and holds what
the step would make (its shape, type and values); else the step is done again."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
from apache_beam.metrics import Metrics

from miner.knn_join import assign
from pipelines import layout, storage

log = logging.getLogger("pipelines.pairs")

# A quantizer of fewer lists has its assignments made again, not saved: assigning a row costs its lists times its
# width, writing its lists nprobe x 4 bytes, and below ~256 lists the write (a few requests and the upload, on cloud
# storage) costs about what it saves. 50,000 rows on this 2-core machine, one thread: at 64 lists 75 ms (256-d) and
# 141 ms (1,024-d) to assign, at 256 lists 149 and 304 ms, at 4,096 lists 971 and 2,953 ms, against 5-20 ms to
# write locally (a throwaway script; docs/benchmarks.md). A crawl's English rows probe every language's quantizer:
# saving small ones would write English's lists once a small language for nothing.
SAVED_FROM_LISTS = 256


def _read_saved(path: str, what: str, instead: str) -> np.ndarray | None:
    """The array a stopped run saved at `path`; None where there is none, or (logged) it is not an array."""
    try:
        return storage.read_npy(path) if storage.exists(path) else None
    except (ValueError, OSError, EOFError) as err:
        log.warning("%s: not %s (%s): %s", path, what, err, instead)
        return None


def saved_quantizer(path: str, nlist: int, dim: int) -> np.ndarray | None:
    """The centroids [nlist, dim] a stopped run wrote at `path`, or None where there are none, or they are not
    whole (another shape or type, a value that is not finite, a file that is not an array)."""
    centroids = _read_saved(path, "a saved quantizer", "training it again")
    if centroids is None:
        return None
    if centroids.dtype != np.float32 or centroids.shape != (nlist, dim) or not np.isfinite(centroids).all():
        log.warning("%s: %s %s, not the float32 [%d, %d] quantizer this run trains: training it again", path,
                    centroids.dtype, centroids.shape, nlist, dim)
        return None
    return centroids


class ListAssignments:
    """The lists of a quantizer that a shard's rows fall in (miner.knn_join.assign), saved as they are assigned,
    and with `resume` read back where a stopped run saved them whole (layout.list_assignment); the counter
    `pairs/resumed_rows_assigned` counts the rows whose lists were read back. A quantizer of fewer than
    SAVED_FROM_LISTS lists (exact search's one among them) assigns nothing worth saving."""

    def __init__(self, output: str, resume: bool = False):
        self.output, self.resume = output, resume
        self.resumed = Metrics.counter("pairs", "resumed_rows_assigned")

    def lists(self, language: str, shard: int, quantizer: str, centroids: np.ndarray, nprobe: int,
              unit: Callable[[], np.ndarray], rows: int, name: str) -> np.ndarray:
        """assign(unit(), centroids, nprobe, name, unit=True) for the `rows` rows of `language`'s shard `shard`
        in `quantizer`'s quantizer (`centroids`)."""
        nlist = len(centroids)
        if nlist < SAVED_FROM_LISTS:
            return assign(unit(), centroids, nprobe, name, unit=True)
        path = layout.list_assignment(self.output, language, shard, quantizer)
        if self.resume:
            saved = self._saved(path, rows, min(nprobe, nlist), nlist)
            if saved is not None:
                self.resumed.inc(rows)
                return saved
        lists = assign(unit(), centroids, nprobe, name, unit=True)
        storage.write_npy(path, lists.astype(np.int32))  # list numbers fit 32 bits: half the bytes of assign's
        return lists

    @staticmethod
    def _saved(path: str, rows: int, probes: int, nlist: int) -> np.ndarray | None:
        lists = _read_saved(path, "saved list assignments", "assigning again")
        if lists is None:
            return None
        if (lists.dtype != np.int32 or lists.shape != (rows, probes)
                or (len(lists) and (lists.min() < 0 or lists.max() >= nlist))):
            log.warning("%s: %s %s, not the lists of %d rows in %d of %d lists: assigning again", path, lists.dtype,
                        lists.shape, rows, probes, nlist)
            return None
        return lists.astype(np.int64)
