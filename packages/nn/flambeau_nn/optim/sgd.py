"""Stochastic gradient descent with momentum, dampening, weight decay and Nesterov."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import flambeau_autograd as fa
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.optim.optimizer import Optimizer, run_closure

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    r"""SGD with PyTorch's update rule.

    For each parameter ``p`` with gradient ``g``::

        g = g + weight_decay * p
        buf = g                                  (first step)
        buf = momentum * buf + (1 - dampening) * g   (later steps)
        g = g + momentum * buf if nesterov else buf   (when momentum != 0)
        p = p - lr * g

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
    ) -> None:
        if lr < 0.0:
            raise FlambeauError(f"[{type(self).__name__}] Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise FlambeauError(f"[{type(self).__name__}] Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise FlambeauError(f"[{type(self).__name__}] Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise FlambeauError(f"[{type(self).__name__}] Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; returns ``closure()`` if given."""
        loss = run_closure(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            grads = [p.grad for p in params]
            states = [self.state[p] for p in params]
            bufs = [s.get("momentum_buffer") for s in states]
            with fa.no_grad():
                sgd(
                    params,
                    grads,
                    bufs,
                    lr=group["lr"],
                    momentum=group["momentum"],
                    dampening=group["dampening"],
                    weight_decay=group["weight_decay"],
                    nesterov=group["nesterov"],
                    maximize=group["maximize"],
                )
            if group["momentum"] != 0:
                for s, buf in zip(states, bufs, strict=True):
                    s["momentum_buffer"] = buf
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
    """One SGD step over all ``params`` (Note [Optimizer step structure]); fills new momentum buffers in place."""
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        if weight_decay != 0:
            grad = grad + param * weight_decay
        if momentum != 0:
            buf = momentum_buffers[i]
            if buf is None:
                buf = momentum_buffers[i] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad + buf * momentum if nesterov else buf
        param.add_(grad, alpha=-lr)
