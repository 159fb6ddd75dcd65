"""Hard negatives for the BR loss (seed 004): for each pair, the targets nearest its source that do not translate it.

Every `br.hard_negative_refresh` steps a pool of `br.hard_negative_pool` pairs is drawn (with the language
smoothing), embedded with the current model, and for each source the `br.hard_negatives` most similar targets of
the same language pair (its own translation and copies of it left out) are recorded. BR batches are then drawn
from the pool, and their hard negatives join the softmax as extra target columns. Refreshing keeps the negatives
hard for the model as it is now, not as it was.
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
