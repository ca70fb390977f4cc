"""Adamax (Adam with the infinity norm, Kingma & Ba) with PyTorch's update rule."""

from __future__ import annotations

from collections.abc import Iterable

import flambeau_core as fc
from flambeau_core import Tensor

from flambeau_nn.optim.optimizer import (
    ComposedOptimizer,
    check_adam_hyperparameters,
    check_not_differentiable,
    grad_of,
    scalar,
)

__all__ = ["Adamax", "adamax"]


class Adamax(ComposedOptimizer):
    r"""Adamax, PyTorch's formulation.

    For each parameter at step ``t``::

        g = -g if maximize;  g = g + weight_decay * p
        m = beta1 * m + (1 - beta1) * g                  (exp_avg)
        u = max(beta2 * u, |g| + eps)                    (exp_inf)
        p = p - lr / (1 - beta1**t) * m / u

    State per parameter: ``step`` (0-d float32), ``exp_avg``, ``exp_inf``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> p = nn.Parameter(fc.tensor([1.0, -2.0]))
        >>> opt = nn.optim.Adamax([p], lr=0.1)
        >>> (p * p).sum().backward()
        >>> opt.step()
        >>> [round(v, 4) for v in p.tolist()]
        [0.9, -1.9]
    """

    state_names = ("exp_avg", "exp_inf", "step")

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        betas = check_adam_hyperparameters(self, lr, betas, eps, weight_decay)
        check_not_differentiable(self, differentiable)
        defaults = dict(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def update(self, group, params, grads, exp_avgs, exp_infs, steps) -> None:
        """One Adamax step over ``params`` (the group's parameters that have a gradient), in place.

        ``step()`` calls it under ``no_grad`` with the per-parameter state lists, one per entry of
        ``state_names``; call ``step()`` rather than this.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0])
            >>> opt = fb.optim.Adamax([p], lr=0.1)
            >>> group = opt.param_groups[0]
            >>> state = opt.init_state(group, p)
            >>> with fb.no_grad():
            ...     opt.update(group, [p], [fb.tensor([0.5, -0.5])], *[[state.get(n)] for n in opt.state_names])
            >>> p
            tensor([0.9000, 2.1000])
        """
        beta1, beta2 = group["betas"]
        adamax(
            params,
            grads,
            exp_avgs,
            exp_infs,
            steps,
            eps=group["eps"],
            beta1=beta1,
            beta2=beta2,
            lr=scalar(group["lr"]),
            weight_decay=group["weight_decay"],
            maximize=group["maximize"],
        )


def adamax(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_infs: list[Tensor],
    state_steps: list[Tensor],
    *,
    eps: float,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """One Adamax step over ``params``, updating the state in place (call under ``no_grad``)."""
    for p, g, exp_avg, exp_inf, step in zip(params, grads, exp_avgs, exp_infs, state_steps, strict=True):
        step.add_(1)
        g = grad_of(p, g, maximize=maximize, weight_decay=weight_decay)
        exp_avg.lerp_(g, 1 - beta1)
        exp_inf.copy_(fc.maximum(exp_inf.mul_(beta2), g.abs().add_(eps)))
        clr = lr / (1 - beta1 ** step.item())
        p.add_(exp_avg.mul(-clr).div_(exp_inf))
