"""NAdam (Adam with Nesterov momentum, Dozat 2016) with PyTorch's update rule."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import flambeau_core as fc
from flambeau_core import Tensor

from flambeau_nn.optim.optimizer import (
    ComposedOptimizer,
    adam_moments_,
    check_adam_hyperparameters,
    check_not_differentiable,
    check_value,
    grad_of,
    scalar,
)

__all__ = ["NAdam", "nadam"]


class NAdam(ComposedOptimizer):
    r"""NAdam, PyTorch's formulation (momentum schedule ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))``).

    For each parameter at step ``t``::

        g = -g if maximize
        p = p * (1 - lr * weight_decay)  if decoupled_weight_decay  else  g = g + weight_decay * p
        mu_product = mu_product * mu_t
        m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g * g
        denom = sqrt(v / (1 - beta2**t)) + eps
        p = p - lr * (1 - mu_t) / (1 - mu_product) * g / denom
              - lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom

    State per parameter: ``step`` and ``mu_product`` (0-d float32), ``exp_avg``, ``exp_avg_sq``.

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.NAdam(nn.Linear(2, 1).parameters(), decoupled_weight_decay=True, weight_decay=0.01)
        >>> opt.param_groups[0]["momentum_decay"]
        0.004
    """

    state_names = ("exp_avg", "exp_avg_sq", "mu_product", "step")

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        betas = check_adam_hyperparameters(self, lr, betas, eps, weight_decay)
        check_value(self, 0.0 <= momentum_decay, "momentum_decay value", momentum_decay)
        check_not_differentiable(self, differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def init_state(self, group: dict[str, Any], p: Tensor) -> dict[str, Any]:
        """The fresh state of parameter ``p`` in ``group``: ``step`` (0) and ``mu_product`` (1), 0-d float32,
        and the moments ``exp_avg`` and ``exp_avg_sq`` (zeros like ``p``).

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0])
            >>> opt = fb.optim.NAdam([p], lr=0.1)
            >>> sorted(opt.init_state(opt.param_groups[0], p))
            ['exp_avg', 'exp_avg_sq', 'mu_product', 'step']
        """
        state = super().init_state(group, p)
        state["mu_product"] = fc.ones((), dtype=fc.float32)
        return state

    def update(self, group, params, grads, exp_avgs, exp_avg_sqs, mu_products, steps) -> None:
        """One NAdam step over ``params`` (the group's parameters that have a gradient), in place.

        ``step()`` calls it under ``no_grad`` with the per-parameter state lists, one per entry of
        ``state_names``; call ``step()`` rather than this.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0])
            >>> opt = fb.optim.NAdam([p], lr=0.1)
            >>> group = opt.param_groups[0]
            >>> state = opt.init_state(group, p)
            >>> with fb.no_grad():
            ...     opt.update(group, [p], [fb.tensor([0.5, -0.5])], *[[state.get(n)] for n in opt.state_names])
            >>> p
            tensor([0.8944, 2.1056])
        """
        beta1, beta2 = group["betas"]
        nadam(
            params,
            grads,
            exp_avgs,
            exp_avg_sqs,
            mu_products,
            steps,
            beta1=beta1,
            beta2=beta2,
            lr=scalar(group["lr"]),
            weight_decay=group["weight_decay"],
            momentum_decay=group["momentum_decay"],
            eps=group["eps"],
            decoupled_weight_decay=group.get("decoupled_weight_decay", False),
            maximize=group["maximize"],
        )


def nadam(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    mu_products: list[Tensor],
    state_steps: list[Tensor],
    *,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
    momentum_decay: float,
    eps: float,
    decoupled_weight_decay: bool = False,
    maximize: bool = False,
) -> None:
    """One NAdam step over ``params``, updating the state in place (call under ``no_grad``)."""
    decoupled_lr = lr if decoupled_weight_decay else None
    for p, g, exp_avg, exp_avg_sq, mu_product, step_t in zip(
        params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, strict=True
    ):
        step_t.add_(1)
        step = step_t.item()
        g = grad_of(p, g, maximize=maximize, weight_decay=weight_decay, decoupled_lr=decoupled_lr)
        bias_correction2 = 1 - beta2**step
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_product.mul_(mu)
        mu_prod = mu_product.item()
        adam_moments_(exp_avg, exp_avg_sq, g, beta1, beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt_().add_(eps)
        p.add_(g.mul(-lr * (1.0 - mu) / (1.0 - mu_prod)).div_(denom))
        p.add_(exp_avg.mul(-lr * mu_next / (1.0 - mu_prod * mu_next)).div_(denom))
