"""Adam and AdamW with PyTorch's update rules (bias-corrected moments)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.optim.optimizer import Optimizer, run_closure

__all__ = ["Adam", "AdamW", "adam"]


class Adam(Optimizer):
    r"""Adam (Kingma & Ba), PyTorch's formulation.

    For each parameter at step ``t``::

        g = g + weight_decay * p          (AdamW instead decays p: p *= 1 - lr * weight_decay)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    State per parameter: ``step`` (a 0-d float32 tensor), ``exp_avg``,
    ``exp_avg_sq`` (and ``max_exp_avg_sq`` with ``amsgrad``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> model = nn.Linear(2, 1)
        >>> opt = nn.optim.Adam(model.parameters(), lr=1e-2)
        >>> model(fc.ones(4, 2)).sum().backward()
        >>> opt.step()
        >>> sorted(opt.state[model.weight])
        ['exp_avg', 'exp_avg_sq', 'step']
    """

    _decoupled_weight_decay = False

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        if not 0.0 <= lr:
            raise FlambeauError(f"[{type(self).__name__}] Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise FlambeauError(f"[{type(self).__name__}] Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise FlambeauError(f"[{type(self).__name__}] Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise FlambeauError(f"[{type(self).__name__}] Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise FlambeauError(f"[{type(self).__name__}] Invalid weight_decay value: {weight_decay}")
        defaults = dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize
        )
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; returns ``closure()`` if given."""
        loss = run_closure(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps = [], [], [], []
            for p in params:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = fc.zeros((), dtype=fc.float32)
                    state["exp_avg"] = fc.zeros_like(p)
                    state["exp_avg_sq"] = fc.zeros_like(p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = fc.zeros_like(p)
                exp_avgs.append(state["exp_avg"])
                exp_avg_sqs.append(state["exp_avg_sq"])
                max_exp_avg_sqs.append(state.get("max_exp_avg_sq"))
                steps.append(state["step"])
            beta1, beta2 = group["betas"]
            with fa.no_grad():
                adam(
                    params,
                    [p.grad for p in params],
                    exp_avgs,
                    exp_avg_sqs,
                    max_exp_avg_sqs,
                    steps,
                    amsgrad=group["amsgrad"],
                    beta1=beta1,
                    beta2=beta2,
                    lr=group["lr"],
                    weight_decay=group["weight_decay"],
                    eps=group["eps"],
                    maximize=group["maximize"],
                    decoupled_weight_decay=self._decoupled_weight_decay,
                )
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay`` each step."""

    _decoupled_weight_decay = True

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)


def adam(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    max_exp_avg_sqs: list[Tensor | None],
    state_steps: list[Tensor],
    *,
    amsgrad: bool,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
    decoupled_weight_decay: bool = False,
) -> None:
    """One Adam step over all ``params`` (Note [Optimizer step structure]); updates the state in place."""
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]
        step_t.add_(1)
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad + param * weight_decay
        exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
        step = step_t.item()
        bias_correction1 = 1 - beta1**step
        bias_correction2_sqrt = math.sqrt(1 - beta2**step)
        if amsgrad:
            max_sq = max_exp_avg_sqs[i]
            max_sq.copy_(fc.maximum(max_sq, exp_avg_sq))
            denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.add_(exp_avg / denom, alpha=-(lr / bias_correction1))
