"""Rprop (resilient backpropagation, Riedmiller & Braun) with PyTorch's update rule."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.optim.optimizer import ComposedOptimizer, check_lr, check_not_differentiable, grad_of, scalar

__all__ = ["Rprop", "rprop"]


class Rprop(ComposedOptimizer):
    r"""Rprop, PyTorch's formulation: a per-element step size that grows while the gradient keeps its sign.

    For each parameter::

        g = -g if maximize
        s = sign(g * prev)
        step_size *= etaplus where s > 0, etaminus where s < 0;  clamp to step_sizes
        g = 0 where s < 0                         (no move right after a sign change)
        p = p - sign(g) * step_size;   prev = g

    State per parameter: ``step`` (0-d float32), ``prev``, ``step_size``
    (starts at ``lr``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> p = nn.Parameter(fc.tensor([1.0, -2.0]))
        >>> opt = nn.optim.Rprop([p], lr=0.1)
        >>> (p * p).sum().backward()
        >>> opt.step()
        >>> [round(v, 4) for v in p.tolist()]
        [0.9, -1.9]
    """

    state_names = ("prev", "step_size", "step")

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_lr(self, lr)
        if not isinstance(etas, (tuple, list)) or len(etas) != 2:
            raise FlambeauError(f"[Rprop] etas must be a pair (etaminus, etaplus), got {etas!r}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise FlambeauError(f"[Rprop] Invalid eta values: {etas[0]}, {etas[1]}")
        if not isinstance(step_sizes, (tuple, list)) or len(step_sizes) != 2:
            raise FlambeauError(f"[Rprop] step_sizes must be a pair (min, max), got {step_sizes!r}")
        check_not_differentiable(self, differentiable)
        defaults = dict(
            lr=lr,
            etas=tuple(etas),
            step_sizes=tuple(step_sizes),
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def init_state(self, group: dict[str, Any], p: Tensor) -> dict[str, Any]:
        """The fresh state of parameter ``p`` in ``group``: ``step`` (a 0-d float32 zero), ``prev`` (the previous
        gradient, zeros) and ``step_size`` (the lr, like ``p``).

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0])
            >>> opt = fb.optim.Rprop([p], lr=0.1)
            >>> sorted(opt.init_state(opt.param_groups[0], p))
            ['prev', 'step', 'step_size']
        """
        return {
            "step": fc.zeros((), dtype=fc.float32),
            "prev": fc.zeros_like(p),
            "step_size": fc.full_like(p, scalar(group["lr"])),
        }

    def update(self, group, params, grads, prevs, step_sizes, steps) -> None:
        """One Rprop step over ``params`` (the group's parameters that have a gradient), in place.

        ``step()`` calls it under ``no_grad`` with the per-parameter state lists, one per entry of
        ``state_names``; call ``step()`` rather than this.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0])
            >>> opt = fb.optim.Rprop([p], lr=0.1)
            >>> group = opt.param_groups[0]
            >>> state = opt.init_state(group, p)
            >>> with fb.no_grad():
            ...     opt.update(group, [p], [fb.tensor([0.5, -0.5])], *[[state.get(n)] for n in opt.state_names])
            >>> p
            tensor([0.9000, 2.1000])
        """
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        rprop(
            params,
            grads,
            prevs,
            step_sizes,
            steps,
            step_size_min=step_size_min,
            step_size_max=step_size_max,
            etaminus=etaminus,
            etaplus=etaplus,
            maximize=group["maximize"],
        )


def rprop(
    params: list[Tensor],
    grads: list[Tensor],
    prevs: list[Tensor],
    step_sizes: list[Tensor],
    state_steps: list[Tensor],
    *,
    step_size_min: float,
    step_size_max: float,
    etaminus: float,
    etaplus: float,
    maximize: bool,
) -> None:
    """One Rprop step over ``params``, updating the state in place (call under ``no_grad``)."""
    for p, g, prev, step_size, step in zip(params, grads, prevs, step_sizes, state_steps, strict=True):
        step.add_(1)
        g = grad_of(p, g, maximize=maximize)
        sign = g.mul(prev).sign_()
        flipped = sign.lt(0)
        factor = sign.masked_fill_(sign.gt(0), etaplus).masked_fill_(flipped, etaminus).masked_fill_(sign.eq(0), 1)
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        g = g.masked_fill(flipped, 0)
        p.sub_(g.sign().mul_(step_size))
        prev.copy_(g)
