"""The training losses, masking, projection and optimiser against values worked out by hand."""

import math

import numpy as np
import pytest
import torch

from training.batches import IGNORE, SpecialTokens, mask_tokens, smoothed_probabilities
from training.losses import bitext_retrieval_loss, masked_lm_loss, masked_positions, max_hinge_loss, nli_features
from training.model import ProjectionMLP
from training.optim import Lamb, build_schedule, warmup_linear


def softplus(x: float) -> float:  # -log(e^a / (e^a + e^b)) = log(1 + e^(b - a))
    return math.log1p(math.exp(x))


def test_br_loss_matches_the_formula_worked_by_hand():
    src = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    tgt = torch.tensor([[1.0, 0.0], [0.6, 0.8]])
    # cos = [[1, .6], [0, .8]]; scale 10, margin .3: forward logits [[7, 6], [0, 5]], backward [[7, 0], [6, 5]]
    forward = (softplus(6 - 7) + softplus(0 - 5)) / 2
    backward = (softplus(0 - 7) + softplus(6 - 5)) / 2
    loss, accuracy = bitext_retrieval_loss(src, tgt, margin=0.3, scale=10.0)
    assert loss.item() == pytest.approx(forward + backward, rel=1e-6)
    assert accuracy.item() == pytest.approx(0.75)  # backward row 1 prefers source 0 (6 > 5)


def test_br_margin_makes_the_loss_larger():
    torch.manual_seed(0)
    src = torch.nn.functional.normalize(torch.randn(6, 8), dim=-1)
    tgt = torch.nn.functional.normalize(src + 0.3 * torch.randn(6, 8), dim=-1)
    without, _ = bitext_retrieval_loss(src, tgt, margin=0.0, scale=20.0)
    with_margin, _ = bitext_retrieval_loss(src, tgt, margin=0.3, scale=20.0)
    assert with_margin > without


def test_br_loss_does_not_count_a_copy_of_the_target_as_a_negative():
    src = torch.tensor([[1.0, 0.0], [0.8, 0.6]])
    tgt = torch.tensor([[0.8, 0.6], [0.8, 0.6]])  # both targets are the same sentence
    keys = torch.tensor([7, 7])
    masked, _ = bitext_retrieval_loss(src, tgt, 0.0, 1.0, src_keys=torch.tensor([1, 2]), tgt_keys=keys)
    unmasked, _ = bitext_retrieval_loss(src, tgt, 0.0, 1.0, src_keys=torch.tensor([1, 2]))
    # with the copy masked, the forward softmax has one column per row: its loss is zero
    backward_only, _ = bitext_retrieval_loss(src, tgt, 0.0, 1.0)
    assert masked.item() < unmasked.item() == pytest.approx(backward_only.item())
    sims = src @ tgt.T
    backward = -torch.log_softmax(sims.T, dim=1).diagonal().mean()
    assert masked.item() == pytest.approx(backward.item(), rel=1e-6)


def test_br_hard_negatives_are_extra_columns_of_the_forward_softmax():
    src = torch.tensor([[1.0, 0.0]])
    tgt = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # one positive, one hard negative
    loss, _ = bitext_retrieval_loss(src, tgt, margin=0.0, scale=1.0)
    assert loss.item() == pytest.approx(softplus(0 - 1) + 0.0, rel=1e-6)  # backward: a single column


def test_masked_lm_loss_and_accuracy():
    logits = torch.tensor([[0.0, math.log(3.0)], [2.0, 0.0]])
    loss, accuracy = masked_lm_loss(logits, torch.tensor([1, 1]))
    assert loss.item() == pytest.approx((-math.log(3 / 4) - math.log(1 / (1 + math.e ** 2))) / 2, rel=1e-6)
    assert accuracy.item() == 0.5
    where, labels = masked_positions(torch.tensor([[IGNORE, 5], [6, IGNORE]]))
    assert where.tolist() == [1, 2] and labels.tolist() == [5, 6]


def test_masking_rate_split_and_specials():
    special = SpecialTokens(pad=0, cls=2, sep=3, mask=4, vocab_size=100, first_regular=5)
    rows, length = 400, 26
    ids = torch.cat([torch.full((rows, 1), 2), torch.randint(5, 100, (rows, length)), torch.full((rows, 1), 3),
                     torch.zeros(rows, 4, dtype=torch.long)], dim=1)
    attention = (ids != 0).long()
    masked, labels = mask_tokens(ids, attention, 80 / 256, special, np.random.default_rng(0))
    chosen = labels != IGNORE
    assert (chosen.sum(1) == round(80 / 256 * length)).all()  # 8 of 26 real tokens per row
    assert not chosen[:, 0].any() and not chosen[:, length + 1:].any()  # never [CLS], [SEP] or padding
    assert (labels[chosen] == ids[chosen]).all()
    as_mask = (masked[chosen] == 4).float().mean().item()
    kept = (masked[chosen] == ids[chosen]).float().mean().item()
    assert 0.77 < as_mask < 0.83 and 0.08 < kept < 0.13  # 80% [MASK], 10% kept (+ random hits), 10% random
    assert (masked[~chosen] == ids[~chosen]).all()


def test_projection_makes_n_vectors_through_three_layers():
    projection = ProjectionMLP(hidden=8, vectors=15)
    linear = [m for m in projection.layers if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linear] == [(8, 16), (16, 16), (16, 8 * 15)]
    assert projection(torch.randn(3, 8)).shape == (3, 15, 8)


def test_nli_features():
    u, v = torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0, 1.0]])
    assert nli_features(u, v).tolist() == [[1.0, -2.0, 3.0, 1.0, 2.0, 3.0, 3.0, -2.0]]


def test_language_smoothing():
    p = smoothed_probabilities([900, 100], alpha=0.3)
    expected = np.array([0.9 ** 0.3, 0.1 ** 0.3])
    assert p == pytest.approx(expected / expected.sum())
    assert smoothed_probabilities([900, 100], alpha=1.0) == pytest.approx([0.9, 0.1])


def test_warmup_then_linear_decay():
    factor = warmup_linear(warmup_steps=4, total_steps=10)
    assert [factor(s) for s in range(11)] == pytest.approx([.25, .5, .75, 1, 1, 5 / 6, 4 / 6, .5, 2 / 6, 1 / 6, 0])


def test_lamb_first_step_by_hand():
    weight = torch.nn.Parameter(torch.tensor([3.0, 4.0]))  # norm 5
    weight.grad = torch.tensor([1.0, -2.0])
    Lamb([weight], lr=0.1, eps=0.0, weight_decay=0.0).step()
    # step 1: m_hat = g, v_hat = g^2, update = sign(g) = [1, -1] (norm sqrt 2); trust = 5 / sqrt 2
    expected = torch.tensor([3.0, 4.0]) - 0.1 * (5 / math.sqrt(2)) * torch.tensor([1.0, -1.0])
    assert torch.allclose(weight.detach(), expected, atol=1e-6)


def test_lamb_minimises_a_quadratic():
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(10))
    optimizer = Lamb([weight], lr=0.05)
    # the trust ratio makes each step ~lr * ||w|| long: LAMB settles only as the rate decays, as in training
    schedule = build_schedule(optimizer, warmup_steps=10, total_steps=300)
    for _ in range(300):
        optimizer.zero_grad()
        ((weight - 1.0) ** 2).sum().backward()
        optimizer.step()
        schedule.step()
    assert torch.allclose(weight.detach(), torch.ones(10), atol=0.01)


def test_max_hinge_loss_is_the_hardest_negatives_hinge_both_ways():
    """VSE++ by hand: sims [[0.6, 1.0], [0.8, 0.0]], positives 0.6 and 0.0, margin 0.2:
    forward hinges (0.2 - 0.6 + 1.0, 0.2 - 0.0 + 0.8), backward (0.2 - 0.6 + 0.8, 0.2 - 0.0 + 1.0)."""
    src = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    tgt = torch.tensor([[0.6, 0.8], [1.0, 0.0]])
    loss, accuracy = max_hinge_loss(src, tgt, 0.2)
    assert float(loss) == pytest.approx((0.6 + 1.0) / 2 + (0.4 + 1.2) / 2)
    assert float(accuracy) == 0.0
    aligned, accuracy = max_hinge_loss(torch.eye(3), torch.eye(3), 0.2)
    assert float(aligned) == 0.0 and float(accuracy) == 1.0
