"""Stochastic gradient descent with momentum, dampening, weight decay and Nesterov."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core._C import _fused_sgd_

from flambeau_nn.optim._unfused import others, pick, sgd_one, unfused
from flambeau_nn.optim.optimizer import Optimizer, check_fused_options, check_lr, run_closure

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    r"""SGD with PyTorch's update rule.

    For each parameter ``p`` with gradient ``g``::

        g = -g if maximize
        g = g + weight_decay * p
        buf = g                                  (first step)
        buf = momentum * buf + (1 - dampening) * g   (later steps)
        g = g + momentum * buf if nesterov else buf   (when momentum != 0)
        p = p - lr * g

    Each param group is stepped by one fused core op (Note [Optimizer step
    structure]). ``foreach`` and ``fused`` are accepted for compatibility (the
    step is always fused). ``lr`` may be a 1-element tensor, as in PyTorch: the
    step reads it each time, and an LR scheduler updates it in place.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> model = nn.Linear(2, 1)
        >>> opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> model(fc.ones(4, 2)).sum().backward()
        >>> opt.step(); opt.zero_grad()
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_lr(self, lr)  # a float, or a 1-element tensor as in PyTorch
        if momentum < 0.0:
            raise FlambeauError(f"[{type(self).__name__}] Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise FlambeauError(f"[{type(self).__name__}] Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise FlambeauError(f"[{type(self).__name__}] Nesterov momentum requires a momentum and zero dampening")
        check_fused_options(self, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; returns ``closure()`` if given.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SGD([p], lr=0.1, momentum=0.9)
            >>> p.grad = fb.tensor([0.5, -0.5])
            >>> opt.step()
            >>> p.detach()
            tensor([0.9500, 2.0500])
        """
        loss = run_closure(closure)
        state = self.state
        for gi, group in enumerate(self.param_groups):
            momentum = group["momentum"]
            gathered = self._gather(gi, group, lambda ps: [state[p].get("momentum_buffer") for p in ps])
            if gathered is None:
                continue
            params, grads, bufs = gathered
            fresh = momentum != 0 and any(b is None for b in bufs)
            with fa.no_grad():
                sgd(
                    params,
                    grads,
                    bufs,
                    lr=group["lr"],
                    momentum=momentum,
                    dampening=group["dampening"],
                    weight_decay=group["weight_decay"],
                    nesterov=group["nesterov"],
                    maximize=group["maximize"],
                )
            if fresh:
                # First step of some params: sgd() created their buffers (the list was filled in place).
                for p, buf in zip(params, bufs, strict=True):
                    state[p]["momentum_buffer"] = buf
        return loss


def sgd(
    params: list[Tensor],
    grads: list[Tensor],
    momentum_buffers: list[Tensor | None],
    *,
    lr: float,
    momentum: float,
    dampening: float,
    weight_decay: float,
    nesterov: bool,
    maximize: bool,
) -> None:
    """One SGD step over all ``params`` in one fused call (two when only some have a momentum buffer yet).

    Missing momentum buffers (None) are created and written into ``momentum_buffers``.
    """
    hyper = dict(
        weight_decay=float(weight_decay),
        momentum=float(momentum),
        lr=float(lr),
        dampening=float(dampening),
        nesterov=bool(nesterov),
        maximize=bool(maximize),
    )
    rest = unfused(params, grads, momentum_buffers if momentum != 0 else [])
    if rest:  # Note [Unfused optimizer steps]
        for i in rest:
            buf = momentum_buffers[i] if momentum != 0 else None
            buf = sgd_one(params[i], grads[i], buf, **hyper)
            if momentum != 0:
                momentum_buffers[i] = buf
        keep = others(len(params), rest)
        if not keep:
            return
        kept_bufs = pick(momentum_buffers, keep)
        sgd(pick(params, keep), pick(grads, keep), kept_bufs, **hyper)
        for i, buf in zip(keep, kept_bufs, strict=True):
            momentum_buffers[i] = buf
        return
    if momentum == 0:
        _fused_sgd_(params, grads, [], is_first_step=False, **hyper)
        return
    fresh = [i for i, b in enumerate(momentum_buffers) if b is None]
    if not fresh:
        _fused_sgd_(params, grads, momentum_buffers, is_first_step=False, **hyper)
        return
    for i in fresh:
        momentum_buffers[i] = fc.empty_like(params[i])
    if len(fresh) == len(params):
        _fused_sgd_(params, grads, momentum_buffers, is_first_step=True, **hyper)
        return
    old = [i for i in range(len(params)) if i not in set(fresh)]
    for idx, first in ((fresh, True), (old, False)):
        _fused_sgd_(
            [params[i] for i in idx],
            [grads[i] for i in idx],
            [momentum_buffers[i] for i in idx],
            is_first_step=first,
            **hyper,
        )
