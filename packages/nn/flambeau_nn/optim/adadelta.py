"""Adadelta (Zeiler, 2012) with PyTorch's update rule."""

from __future__ import annotations

from collections.abc import Iterable

from flambeau_core import Tensor

from flambeau_nn.optim.optimizer import (
    ComposedOptimizer,
    check_lr,
    check_not_differentiable,
    check_value,
    grad_of,
    scalar,
)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(ComposedOptimizer):
    r"""Adadelta, PyTorch's formulation.

    For each parameter with gradient ``g``::

        g = -g if maximize;  g = g + weight_decay * p
        v = rho * v + (1 - rho) * g * g                       (square_avg)
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta                (acc_delta)
        p = p - lr * delta

    State per parameter: ``step`` (0-d float32), ``square_avg``, ``acc_delta``.
    ``foreach`` and ``capturable`` are accepted (the math is the same).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> p = nn.Parameter(fc.tensor([1.0, -2.0]))
        >>> opt = nn.optim.Adadelta([p], lr=1.0)
        >>> (p * p).sum().backward()
        >>> opt.step()
        >>> sorted(opt.state[p])
        ['acc_delta', 'square_avg', 'step']
    """

    state_names = ("square_avg", "acc_delta", "step")

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_lr(self, lr)
        check_value(self, 0.0 <= rho <= 1.0, "rho value", rho)
        check_value(self, 0.0 <= eps, "epsilon value", eps)
        check_value(self, 0.0 <= weight_decay, "weight_decay value", weight_decay)
        check_not_differentiable(self, differentiable)
        defaults = dict(
            lr=lr,
            rho=rho,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            capturable=capturable,
            foreach=foreach,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def update(self, group, params, grads, square_avgs, acc_deltas, steps) -> None:
        """One Adadelta step over ``params`` (the group's parameters that have a gradient), in place.

        ``step()`` calls it under ``no_grad`` with the per-parameter state lists, one per entry of
        ``state_names``; call ``step()`` rather than this.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0])
            >>> opt = fb.optim.Adadelta([p], lr=1.0)
            >>> group = opt.param_groups[0]
            >>> state = opt.init_state(group, p)
            >>> with fb.no_grad():
            ...     opt.update(group, [p], [fb.tensor([0.5, -0.5])], *[[state.get(n)] for n in opt.state_names])
            >>> p
            tensor([0.9968, 2.0032])
        """
        adadelta(
            params,
            grads,
            square_avgs,
            acc_deltas,
            steps,
            lr=scalar(group["lr"]),
            rho=group["rho"],
            eps=group["eps"],
            weight_decay=group["weight_decay"],
            maximize=group["maximize"],
        )


def adadelta(
    params: list[Tensor],
    grads: list[Tensor],
    square_avgs: list[Tensor],
    acc_deltas: list[Tensor],
    state_steps: list[Tensor],
    *,
    lr: float,
    rho: float,
    eps: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """One Adadelta step over ``params``, updating the state in place (call under ``no_grad``)."""
    for p, g, square_avg, acc_delta, step in zip(params, grads, square_avgs, acc_deltas, state_steps, strict=True):
        step.add_(1)
        g = grad_of(p, g, maximize=maximize, weight_decay=weight_decay)
        square_avg.mul_(rho).add_(g.mul(1 - rho).mul_(g))
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_().div_(std).mul_(g)
        acc_delta.mul_(rho).add_(delta.mul(1 - rho).mul_(delta))
        p.add_(delta, alpha=-lr)
