"""The training losses (METHODS §4-6), each a few lines of tensor algebra with its formula beside it."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from training.batches import IGNORE


def bitext_retrieval_loss(src: torch.Tensor, tgt: torch.Tensor, margin: float, scale: torch.Tensor | float,
                          src_keys: torch.Tensor | None = None, tgt_keys: torch.Tensor | None = None):
    """Additive-margin softmax over in-batch negatives, both directions (METHODS §5).

        phi(x, y) = scale * cos(x, y)
        L_s = -1/B sum_i log( e^{phi(s_i,t_i) - scale*m} / (e^{phi(s_i,t_i) - scale*m} + sum_{j!=i} e^{phi(s_i,t_j)}) )
        L_t = the same with sources and targets swapped;   L = L_s + L_t

    `src` [B, d] and `tgt` [B + E, d] are unit rows; the E extra targets are hard negatives (seed 004) and only
    enlarge the source->target softmax. A negative whose text equals the positive's (same key) is left out: a
    repeated sentence is not a wrong answer. Returns (loss, in-batch accuracy over both directions).
    """
    batch = src.shape[0]
    gold = torch.arange(batch, device=src.device)
    sims = src @ tgt.T  # [B, B + E]
    forward = scale * (sims - margin * F.one_hot(gold, sims.shape[1]).to(sims.dtype))
    backward = scale * (sims[:, :batch].T - margin * torch.eye(batch, device=src.device, dtype=sims.dtype))
    if tgt_keys is not None:
        forward = forward.masked_fill(_copies_of_positive(tgt_keys, batch), float("-inf"))
    if src_keys is not None:
        backward = backward.masked_fill(_copies_of_positive(src_keys, batch), float("-inf"))
    loss = F.cross_entropy(forward, gold) + F.cross_entropy(backward, gold)
    with torch.no_grad():
        accuracy = ((forward.argmax(1) == gold).float().mean() + (backward.argmax(1) == gold).float().mean()) / 2
    return loss, accuracy


def max_hinge_loss(src: torch.Tensor, tgt: torch.Tensor, margin: float, src_keys: torch.Tensor | None = None,
                   tgt_keys: torch.Tensor | None = None):
    """VSE++'s ranker (Faghri et al. 2017), seed 001's translation ranker: the hardest in-batch negative of each
    pair, in both directions, must score `margin` below the pair.

        L = 1/B sum_i ( max_{j!=i} [m - s(x_i, y_i) + s(x_i, y_j)]_+ + max_{j!=i} [m - s(x_i, y_i) + s(x_j, y_i)]_+ )

    `src` [B, d] and `tgt` [B + E, d] are unit rows (E hard negatives enlarge the first term); same-text negatives
    are left out as in `bitext_retrieval_loss`. Returns (loss, in-batch accuracy over both directions)."""
    batch = src.shape[0]
    sims = src @ tgt.T  # [B, B + E]
    positive = sims[:, :batch].diagonal()
    own = torch.eye(batch, sims.shape[1], dtype=torch.bool, device=src.device)
    forward = sims.masked_fill(own, float("-inf"))
    backward = sims[:, :batch].T.masked_fill(own[:, :batch], float("-inf"))
    if tgt_keys is not None:
        forward = forward.masked_fill(_copies_of_positive(tgt_keys, batch), float("-inf"))
    if src_keys is not None:
        backward = backward.masked_fill(_copies_of_positive(src_keys, batch), float("-inf"))
    hardest = forward.max(dim=1).values, backward.max(dim=1).values
    loss = sum((margin - positive + h).clamp(min=0).mean() for h in hardest)
    with torch.no_grad():
        accuracy = ((positive > hardest[0]).float().mean() + (positive > hardest[1]).float().mean()) / 2
    return loss, accuracy


def _copies_of_positive(keys: torch.Tensor, batch: int) -> torch.Tensor:
    """[batch, len(keys)]: True where column j holds the same text as row i's positive (column i), j != i."""
    same = keys[:batch, None] == keys[None, :]
    return same.fill_diagonal_(False)


def distillation_loss(student_src: torch.Tensor, student_tgt: torch.Tensor, teacher: torch.Tensor,
                      teacher_src: torch.Tensor | None = None):
    """Multilingual knowledge distillation (METHODS §9, Reimers & Gurevych 2020): both sides of a translation pair
    land on the teacher's vector of the side it knows.

        L = 1/B sum_i ( ||S(s_i) - T'(s_i)||^2 + ||S(t_i) - T(t_i)||^2 ),   T'(s_i) = T(t_i) unless given

    `teacher` [B, d] holds T of each pair's teacher side (the English pivot). `teacher_src`, when given, is the
    source side's own target: T(s_i) itself where the teacher knows the source's language (monolingual
    distillation, S(x) ~ T(x): the student copies the teacher where the teacher is good, which the ensemble needs
    so that a share given to the student never loses to the teacher) and T(t_i) elsewhere.
    Summed over dimensions rather than averaged: the same objective times d, which puts it on the scale of the BR
    loss beside it (the teacher's rows are unit vectors, so a per-dimension MSE is ~1/d). Returns (loss, the mean
    cosine of the student's vectors to their targets, both sides: the progress to watch).
    """
    teacher = teacher.to(student_src.dtype)
    source_target = teacher if teacher_src is None else teacher_src.to(student_src.dtype)
    loss = ((student_src - source_target) ** 2).sum(-1).mean() + ((student_tgt - teacher) ** 2).sum(-1).mean()
    with torch.no_grad():
        cosine = (F.cosine_similarity(student_src, source_target, dim=-1).mean()
                  + F.cosine_similarity(student_tgt, teacher, dim=-1).mean()) / 2
    return loss, cosine


def bank_contrast_loss(student: torch.Tensor, target: torch.Tensor, bank: torch.Tensor, same_text: torch.Tensor,
                       scale: float):
    """InfoNCE of each student vector against its teacher target among a bank of teacher vectors (issue 20):

        L = -1/B sum_i log( e^{s cos(S_i, T_i)} / (e^{s cos(S_i, T_i)} + sum_j e^{s cos(S_i, N_j)}) )

    `student` [B, d], `target` [B, d] and `bank` [N, d] (the teacher's rows are unit vectors); `same_text` [B, N]
    marks bank rows that hold the pair's own sentences (its target, its translation), which are not negatives.
    Returns (loss, the share of rows whose target beats every negative)."""
    unit = F.normalize(student, dim=-1)
    positive = (unit * target.to(unit.dtype)).sum(-1, keepdim=True)
    negatives = (unit @ bank.to(unit.dtype).T).masked_fill(same_text, float("-inf"))
    logits = scale * torch.cat([positive, negatives], dim=1)
    first = torch.zeros(len(logits), dtype=torch.long, device=logits.device)
    loss = F.cross_entropy(logits, first)
    with torch.no_grad():
        accuracy = (logits.argmax(1) == 0).float().mean()
    return loss, accuracy


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor):
    """Cross-entropy over the masked positions only; (loss, accuracy). `logits` [M, V] for the M masked labels."""
    loss = F.cross_entropy(logits.float(), labels)
    with torch.no_grad():
        accuracy = (logits.argmax(-1) == labels).float().mean()
    return loss, accuracy


def masked_positions(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat indices of the scored positions and their labels: the vocabulary projection runs on these alone."""
    flat = labels.reshape(-1)
    where = (flat != IGNORE).nonzero(as_tuple=True)[0]
    return where, flat[where]


def nli_features(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """[u, v, |u - v|, u * v]: the classifier input of METHODS §6."""
    return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)
