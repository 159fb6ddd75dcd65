"""Optimisers and the learning-rate schedule: AdamW (torch's) or LAMB, warm-up then linear decay.

torch ships no LAMB, and the CMLM paper trains with it (batch 2048), so it is written here, after You et al. 2019:
Adam's update direction, plus weight decay, rescaled per parameter tensor by the trust ratio ||w|| / ||update||.
Biases and LayerNorm weights get no weight decay in either optimiser, as in BERT.
"""

from __future__ import annotations

import torch
from torch import nn


class Lamb(torch.optim.Optimizer):
    """LAMB: r = m_hat / (sqrt(v_hat) + eps) + wd * w;  w -= lr * (||w|| / ||r||) * r  (ratio 1 if a norm is 0)."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-6, weight_decay: float = 0.0):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = torch.zeros((), dtype=torch.float32)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                step = state["step"].item()
                state["exp_avg"].mul_(beta1).add_(p.grad, alpha=1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                m_hat = state["exp_avg"] / (1 - beta1 ** step)
                v_hat = state["exp_avg_sq"] / (1 - beta2 ** step)
                update = m_hat / (v_hat.sqrt() + group["eps"])
                if group["weight_decay"]:
                    update.add_(p, alpha=group["weight_decay"])
                weight_norm, update_norm = p.norm(), update.norm()
                trust = torch.where((weight_norm > 0) & (update_norm > 0), weight_norm / update_norm,
                                    torch.ones_like(weight_norm))
                p.add_(update * trust, alpha=-group["lr"])
        return loss


def parameter_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        (no_decay if parameter.ndim < 2 or "LayerNorm" in name or "layer_norm" in name else decay).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model: nn.Module, config, lr: float) -> torch.optim.Optimizer:
    groups = parameter_groups(model, config.weight_decay)
    betas = (config.beta1, config.beta2)
    if config.name == "lamb":
        return Lamb(groups, lr=lr, betas=betas, eps=config.eps)
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=config.eps)


def warmup_linear(warmup_steps: int, total_steps: int):
    """Multiplier of the peak rate: linear from ~0 to 1 over the warm-up, then linear to 0 at `total_steps`."""
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))
    return factor


def build_schedule(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_linear(min(warmup_steps, total_steps), total_steps))
