"""ASGD (averaged stochastic gradient descent, Polyak & Juditsky) with PyTorch's update rule."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import flambeau_core as fc
from flambeau_core import Tensor

from flambeau_nn.optim.optimizer import (
    ComposedOptimizer,
    check_lr,
    check_not_differentiable,
    check_value,
    grad_of,
    scalar,
)

__all__ = ["ASGD", "asgd"]


class ASGD(ComposedOptimizer):
    r"""Averaged SGD, PyTorch's formulation.

    For each parameter at step ``t``::

        g = -g if maximize;  g = g + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = ax + mu * (p - ax)          (ax = p while mu == 1)
        eta = lr / (1 + lambd * lr * t) ** alpha;   mu = 1 / max(1, t - t0)

    State per parameter: ``step``, ``eta``, ``mu`` (0-d float32) and ``ax``
    (the running average of the parameter, the point ASGD converges to).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> p = nn.Parameter(fc.tensor([1.0]))
        >>> opt = nn.optim.ASGD([p], lr=0.1, t0=0)
        >>> (p * p).sum().backward()
        >>> opt.step()
        >>> sorted(opt.state[p])
        ['ax', 'eta', 'mu', 'step']
    """

    state_names = ("ax", "eta", "mu", "step")

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0.0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_lr(self, lr)
        check_value(self, 0.0 <= weight_decay, "weight_decay value", weight_decay)
        check_not_differentiable(self, differentiable)
        defaults = dict(
            lr=lr,
            lambd=lambd,
            alpha=alpha,
            t0=t0,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def init_state(self, group: dict[str, Any], p: Tensor) -> dict[str, Any]:
        """The fresh state of parameter ``p`` in ``group``: ``step`` (0), ``eta`` (the lr), ``mu`` (1), all 0-d float32,
        and ``ax`` (the running average of ``p``, zeros).

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0])
            >>> opt = fb.optim.ASGD([p], lr=0.1)
            >>> sorted(opt.init_state(opt.param_groups[0], p))
            ['ax', 'eta', 'mu', 'step']
        """
        return {
            "step": fc.zeros((), dtype=fc.float32),
            "eta": fc.full((), scalar(group["lr"]), dtype=fc.float32),
            "mu": fc.ones((), dtype=fc.float32),
            "ax": fc.zeros_like(p),
        }

    def update(self, group, params, grads, axs, etas, mus, steps) -> None:
        """One ASGD step over ``params`` (the group's parameters that have a gradient), in place.

        ``step()`` calls it under ``no_grad`` with the per-parameter state lists, one per entry of
        ``state_names``; call ``step()`` rather than this.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0])
            >>> opt = fb.optim.ASGD([p], lr=0.1)
            >>> group = opt.param_groups[0]
            >>> state = opt.init_state(group, p)
            >>> with fb.no_grad():
            ...     opt.update(group, [p], [fb.tensor([0.5, -0.5])], *[[state.get(n)] for n in opt.state_names])
            >>> p
            tensor([0.9500, 2.0500])
        """
        asgd(
            params,
            grads,
            axs,
            mus,
            etas,
            steps,
            lambd=group["lambd"],
            lr=scalar(group["lr"]),
            t0=group["t0"],
            alpha=group["alpha"],
            weight_decay=group["weight_decay"],
            maximize=group["maximize"],
        )


def asgd(
    params: list[Tensor],
    grads: list[Tensor],
    axs: list[Tensor],
    mus: list[Tensor],
    etas: list[Tensor],
    state_steps: list[Tensor],
    *,
    lambd: float,
    lr: float,
    t0: float,
    alpha: float,
    weight_decay: float,
    maximize: bool,
) -> None:
    """One ASGD step over ``params``, updating the state in place (call under ``no_grad``)."""
    for p, g, ax, mu, eta, step_t in zip(params, grads, axs, mus, etas, state_steps, strict=True):
        step_t.add_(1)
        g = grad_of(p, g, maximize=maximize, weight_decay=weight_decay)
        eta_value = eta.item()
        p.mul_(1 - lambd * eta_value)
        p.add_(g, alpha=-eta_value)
        mu_value = mu.item()
        if mu_value != 1:
            ax.add_(p.sub(ax).mul_(mu_value))
        else:
            ax.copy_(p)
        step = step_t.item()
        # PyTorch makes the new values float32 tensors before copying them in, whatever the state's dtype.
        eta.fill_(_round_to_float32(lr / (1 + lambd * lr * step) ** alpha))
        mu.fill_(_round_to_float32(1 / max(1, step - t0)))


def _round_to_float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]
