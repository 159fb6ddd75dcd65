"""Batches drawn from the training data: CMLM sentence pairs with masking, BR translation pairs, NLI triples.

Every batch is a pure function of (seed, rank, stage, step): `step_rng` seeds a fresh generator from those numbers.
That makes the data position of a run its step counter, so a resumed run draws exactly the batches the
uninterrupted run would have, on any number of ranks, with no sampler state to save.
Groups (languages for CMLM, language pairs for BR) are drawn with the smoothing of METHODS §4: p_l ∝ (n_l/N)^alpha.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from training.data import BitextSet, DocumentSet, Ragged

IGNORE = -100  # label of positions the MLM loss does not score (torch's cross-entropy default)


def step_rng(seed: int, rank: int, stage: int, step: int, micro: int = 0) -> np.random.Generator:
    return np.random.default_rng([seed, rank, stage, step, micro])


def smoothed_probabilities(sizes: list[int], alpha: float) -> np.ndarray:
    sizes = np.asarray(sizes, dtype=np.float64)
    weights = (sizes / sizes.sum()) ** alpha
    return weights / weights.sum()


@dataclass(frozen=True)
class SpecialTokens:
    pad: int
    cls: int
    sep: int
    mask: int
    vocab_size: int
    first_regular: int  # random replacements are drawn from [first_regular, vocab_size)

    @classmethod
    def of(cls, tokenizer) -> SpecialTokens:
        special = set(tokenizer.all_special_ids)
        return cls(tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id,
                   len(tokenizer), max(special) + 1 if max(special) < 1000 else 0)


def pad(sequences: list[np.ndarray], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ids [B, L] and attention mask [B, L]."""
    width = max(len(s) for s in sequences)
    ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(sequences), width), dtype=np.int64)
    for row, sequence in enumerate(sequences):
        ids[row, :len(sequence)] = sequence
        mask[row, :len(sequence)] = 1
    return torch.from_numpy(ids), torch.from_numpy(mask)


def mask_tokens(ids: torch.Tensor, attention: torch.Tensor, rate: float, special: SpecialTokens,
                rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking: round(rate * real tokens) positions per row (at least one), 80% [MASK], 10% random, 10% kept.

    Returns (masked ids, labels) with labels IGNORE everywhere but the chosen positions.
    """
    ids_np, labels = ids.numpy().copy(), np.full(ids.shape, IGNORE, dtype=np.int64)
    maskable = (attention.numpy() == 1) & ~np.isin(ids_np, [special.cls, special.sep, special.pad])
    for row in range(ids_np.shape[0]):
        positions = np.flatnonzero(maskable[row])
        if not len(positions):
            continue
        chosen = rng.choice(positions, size=max(1, round(rate * len(positions))), replace=False)
        labels[row, chosen] = ids_np[row, chosen]
        action = rng.random(len(chosen))
        ids_np[row, chosen[action < 0.8]] = special.mask
        randomised = chosen[(action >= 0.8) & (action < 0.9)]
        ids_np[row, randomised] = rng.integers(special.first_regular, special.vocab_size, size=len(randomised))
    return torch.from_numpy(ids_np), torch.from_numpy(labels)


class CmlmSampler:
    """(s1, s2) consecutive sentences of one document, swapped at `swap_rate`; s2 masked for prediction."""

    def __init__(self, documents: list[DocumentSet], alpha: float, special: SpecialTokens, mask_rate: float,
                 swap_rate: float = 0.5):
        self.documents, self.special = documents, special
        self.mask_rate, self.swap_rate = mask_rate, swap_rate
        self.probabilities = smoothed_probabilities([len(d.pair_starts) for d in documents], alpha)

    def batch(self, rng: np.random.Generator, size: int) -> dict[str, torch.Tensor]:
        groups = rng.choice(len(self.documents), size=size, p=self.probabilities)
        first, second = [], []
        for group in groups:
            document = self.documents[group]
            start = document.pair_starts[rng.integers(len(document.pair_starts))]
            a, b = document.sentences[start], document.sentences[start + 1]
            if rng.random() < self.swap_rate:
                a, b = b, a
            first.append(a)
            second.append(b)
        s1_ids, s1_mask = pad(first, self.special.pad)
        s2_ids, s2_mask = pad(second, self.special.pad)
        s2_ids, labels = mask_tokens(s2_ids, s2_mask, self.mask_rate, self.special, rng)
        return {"s1_ids": s1_ids, "s1_mask": s1_mask, "s2_ids": s2_ids, "s2_mask": s2_mask, "mlm_labels": labels}


class BitextSampler:
    """Translation pairs from language pairs drawn with smoothing; keys mark identical texts across the batch."""

    def __init__(self, bitext: list[BitextSet], alpha: float, special: SpecialTokens):
        self.bitext, self.special = bitext, special
        self.probabilities = smoothed_probabilities([b.mass for b in bitext], alpha)
        # weighted sets: a row is found by where a uniform draw falls in the running sum of the weights
        self.cumulative = [None if b.weights is None else np.cumsum(b.weights) for b in bitext]

    def draw(self, rng: np.random.Generator, size: int) -> list[tuple[int, int]]:
        groups = rng.choice(len(self.bitext), size=size, p=self.probabilities)
        return [(int(g), self._row(rng, int(g))) for g in groups]

    def _row(self, rng: np.random.Generator, group: int) -> int:
        cumulative = self.cumulative[group]
        if cumulative is None:
            return int(rng.integers(len(self.bitext[group].src)))
        row = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
        return min(row, len(cumulative) - 1)  # a draw rounded up to the total

    def batch(self, rng: np.random.Generator, size: int) -> dict:
        return self.collate(self.draw(rng, size))

    def collate(self, picks: list[tuple[int, int]], extra_targets: list[tuple[int, int]] = ()) -> dict:
        """Pairs (set, row) as tensors; `extra_targets` are hard negatives: target columns with no source."""
        src_ids, src_mask = pad([self.bitext[g].src[i] for g, i in picks], self.special.pad)
        targets = [*picks, *extra_targets]
        tgt_ids, tgt_mask = pad([self.bitext[g].tgt[i] for g, i in targets], self.special.pad)
        return {
            "src_ids": src_ids, "src_mask": src_mask, "tgt_ids": tgt_ids, "tgt_mask": tgt_mask,
            "src_keys": torch.tensor([int(self.bitext[g].src_keys[i]) for g, i in picks]),
            "tgt_keys": torch.tensor([int(self.bitext[g].tgt_keys[i]) for g, i in targets]),
        }


class DistillSampler(BitextSampler):
    """Translation pairs as BitextSampler draws them, with the teacher's vector of each pair's teacher side."""

    def __init__(self, bitext: list[BitextSet], alpha: float, special: SpecialTokens, teacher: np.ndarray,
                 bank: int = 0, neighbours: np.ndarray | None = None, same: float = 0.9):
        super().__init__(bitext, alpha, special)
        self.teacher = teacher
        self.bank = bank  # distill.contrast_bank when the contrast is trained, else 0
        self.neighbours = neighbours  # [teacher rows, contrast_hard]: each target's nearest teacher vectors
        self.same = same  # distill.contrast_same
        self.monolingual = any(b.source_rows is not None for b in bitext)  # distill.monolingual lists a language

    def batch(self, rng: np.random.Generator, size: int) -> dict:
        picks = self.draw(rng, size)
        batch = self.collate(picks)
        if self.bank:
            own = np.stack([self._rows(picks), self._rows(picks, source=True)], axis=1)
            hard = np.empty(0, dtype=np.int64) if self.neighbours is None else \
                self.neighbours[own[:, 0]].reshape(-1)[:self.bank]
            random = rng.integers(len(self.teacher), size=self.bank - len(hard))
            batch.update(self.bank_of(own, np.concatenate([hard, random])))
        return batch

    def collate(self, picks: list[tuple[int, int]], extra_targets: list[tuple[int, int]] = ()) -> dict:
        batch = super().collate(picks, extra_targets)
        batch["teacher"] = torch.from_numpy(self.teacher[self._rows(picks)])
        if self.monolingual:  # monolingual distillation: a listed language's source has its own vector
            batch["teacher_src"] = torch.from_numpy(self.teacher[self._rows(picks, source=True)])
        return batch

    def bank_of(self, own: np.ndarray, rows: np.ndarray) -> dict:
        """Teacher vectors of cached sentences (`rows`) as negatives, and which of them are a pair's own sentences
        (`own` [pairs, 2]: its target's row and its source's, the target's again without monolingual distillation;
        any vector as near its target as `same`): those are not negatives."""
        bank = self.teacher[rows]
        same_text = np.zeros((len(own), len(rows)), dtype=bool)
        for own_rows in own.T:  # a column at a time: one [pairs, bank, 2] comparison took 290 ms at 1,024 x 8,192
            same_text |= rows[None, :] == own_rows[:, None]
        same_text |= self.teacher[own[:, 0]] @ bank.T >= self.same  # another wording of the target
        return {"bank": torch.from_numpy(bank), "bank_same_text": torch.from_numpy(same_text)}

    def _rows(self, picks: list[tuple[int, int]], source: bool = False) -> np.ndarray:
        """Each pick's row of the teacher's vectors: its target's, or with `source` its source's own where
        monolingual distillation gave it one (its target's elsewhere)."""
        def rows_of(pairs: BitextSet) -> np.ndarray:
            return pairs.source_rows if source and pairs.source_rows is not None else pairs.teacher_rows
        return np.fromiter((rows_of(self.bitext[g])[i] for g, i in picks), dtype=np.int64, count=len(picks))


class NliSampler:
    def __init__(self, premises: Ragged, hypotheses: Ragged, labels: np.ndarray, special: SpecialTokens):
        self.premises, self.hypotheses, self.labels, self.special = premises, hypotheses, labels, special

    def batch(self, rng: np.random.Generator, size: int) -> dict[str, torch.Tensor]:
        rows = rng.integers(len(self.labels), size=size)
        premise_ids, premise_mask = pad([self.premises[r] for r in rows], self.special.pad)
        hypothesis_ids, hypothesis_mask = pad([self.hypotheses[r] for r in rows], self.special.pad)
        return {"premise_ids": premise_ids, "premise_mask": premise_mask, "hypothesis_ids": hypothesis_ids,
                "hypothesis_mask": hypothesis_mask, "nli_labels": torch.from_numpy(self.labels[rows])}


def batch_tokens(batch: dict[str, torch.Tensor]) -> int:
    """Real (unpadded) tokens in a batch: the numerator of tokens/s."""
    return int(sum(value.sum() for name, value in batch.items() if name.endswith("_mask")))
