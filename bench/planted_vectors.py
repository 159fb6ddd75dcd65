"""Synthetic sentence vectors with planted translations, shared by the k-NN benchmarks (no Beam needed)."""

from __future__ import annotations

import numpy as np

SPREAD, TRANSLATION_NOISE = 1.0, 0.35  # cos(x, topic) ~ 0.7; cos(x, its translation) ~ 0.94


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def synthetic(n: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
    """Source and target vectors (float32, unit) and the planted pairs {source row: target row}."""
    rng = np.random.default_rng(seed)
    centres = unit(rng.standard_normal((max(16, n // 200), dim)))

    def around_topics(count):
        noise = rng.standard_normal((count, dim)) * SPREAD / np.sqrt(dim)
        return unit(centres[rng.integers(0, len(centres), count)] + noise)

    src, tgt = around_topics(n), around_topics(n)
    planted = rng.choice(n, n // 2, replace=False)
    tgt[: len(planted)] = unit(src[planted] + rng.standard_normal((len(planted), dim)) * TRANSLATION_NOISE
                               / np.sqrt(dim))
    order = rng.permutation(n)  # targets in random order: row i of tgt is row order[i] of the draw
    tgt = tgt[order]
    where = np.empty(n, dtype=np.int64)
    where[order] = np.arange(n)
    return src.astype(np.float32), tgt.astype(np.float32), {int(s): int(where[i]) for i, s in enumerate(planted)}
