"""Hard negatives for the BR loss (seed 004): for each pair, the targets nearest its source that do not translate it.

Every `br.hard_negative_refresh` steps a pool of `br.hard_negative_pool` pairs is drawn (with the language
smoothing), embedded with the current model, and for each source the `br.hard_negatives` most similar targets of
the same language pair (its own translation and copies of it left out) are recorded. BR batches are then drawn
from the pool, and their hard negatives join the softmax as extra target columns. Refreshing keeps the negatives
hard for the model as it is now, not as it was.

`teacher_neighbours` finds hard negatives for distillation's contrast (distill.contrast_hard) in the teacher's
space instead: fixed vectors, so found once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

log = logging.getLogger("training")


@dataclass
class HardNegativePool:
    sampler: object  # training.batches.BitextSampler
    picks: list[tuple[int, int]]
    negatives: np.ndarray  # [len(picks), n] indices into picks

    @classmethod
    def build(cls, trainer, rng: np.random.Generator) -> HardNegativePool:
        sampler, n = trainer.samplers["br"], trainer.config.br.hard_negatives
        picks = sorted(set(sampler.draw(rng, trainer.config.br.hard_negative_pool)))
        src = trainer.embed([sampler.bitext[g].src[i] for g, i in picks])
        tgt = trainer.embed([sampler.bitext[g].tgt[i] for g, i in picks])
        groups = np.array([g for g, _ in picks])
        keys = np.array([sampler.bitext[g].tgt_keys[i] for g, i in picks])
        negatives = np.zeros((len(picks), n), dtype=np.int64)
        for group in np.unique(groups):
            rows = np.flatnonzero(groups == group)
            sims = src[rows] @ tgt[rows].T
            sims[keys[rows][:, None] == keys[rows][None, :]] = -np.inf  # the translation and its copies
            if len(rows) <= n:  # too few pairs of this language pair: fall back to any other target
                negatives[rows] = rng.choice(np.flatnonzero(groups != group), size=(len(rows), n))
                continue
            nearest = np.argpartition(-sims, n - 1, axis=1)[:, :n]
            negatives[rows] = rows[nearest]
        log.info("hard negatives: %d pairs, %d negatives each", len(picks), n)
        return cls(sampler, picks, negatives)

    def batch(self, rng: np.random.Generator, size: int) -> dict:
        rows = rng.choice(len(self.picks), size=min(size, len(self.picks)), replace=False)
        extra = [self.picks[j] for j in self.negatives[rows].reshape(-1)]
        return self.sampler.collate([self.picks[r] for r in rows], extra)


def teacher_neighbours(teacher: np.ndarray, count: int, device=None) -> np.ndarray:
    """[rows, count]: for every cached teacher vector, the rows of its `count` nearest other vectors by cosine.
    On a CUDA device, exact (chunked matrix products: seconds for 658k vectors, and the lent GPU machines have no
    faiss); elsewhere miner.neighbours.knn: exact below its IVF size, an IVF index above, searched at nprobe 16 (a near
    neighbour is as hard a negative as the nearest; the default nprobe took ~8 minutes over 658k vectors on 2 cores)."""
    if len(teacher) <= count:
        raise ValueError(f"distill.contrast_hard = {count} needs more cached teacher vectors than that, "
                         f"the cache holds {len(teacher)}")
    if device is not None and getattr(device, "type", str(device)) == "cuda":
        ids = _exact_neighbours(teacher, count + 1, device)
    else:
        from miner.index import KnnConfig
        from miner.neighbours import knn

        _, ids = knn(teacher, teacher, count + 1, KnnConfig(nprobe=16), names=("teacher vectors", "teacher vectors"))
    others = ids != np.arange(len(teacher))[:, None]
    others[others.sum(1) > count, count] = False  # the row itself was not among them: drop the last instead
    log.info("contrast: the %d nearest teacher vectors of each of %d found", count, len(teacher))
    return ids[others].reshape(len(teacher), count)


def _exact_neighbours(vectors: np.ndarray, k: int, device, chunk: int = 2048) -> np.ndarray:
    """[rows, k]: each row's k largest inner products over all rows (itself included), exact, on `device`, `chunk`
    rows at a time (2,048 x 658k similarities: 5.4 GB)."""
    import torch

    table = torch.from_numpy(np.ascontiguousarray(vectors, dtype=np.float32)).to(device)
    ids = [torch.topk(table[start:start + chunk] @ table.T, k, dim=1).indices.cpu()
           for start in range(0, len(table), chunk)]
    return torch.cat(ids).numpy().astype(np.int64)
