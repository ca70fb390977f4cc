"""RMSprop and Adagrad with PyTorch's update rules."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.optim.optimizer import Optimizer, run_closure

__all__ = ["RMSprop", "Adagrad", "rmsprop", "adagrad"]


class RMSprop(Optimizer):
    r"""RMSprop (Hinton), PyTorch's formulation::

        v = alpha * v + (1 - alpha) * g * g
        avg = sqrt(v - mean_g ** 2) if centered else sqrt(v)      (mean_g: running mean of g)
        buf = momentum * buf + g / (avg + eps);  p -= lr * buf    (momentum > 0)
        p -= lr * g / (avg + eps)                                 (otherwise)

    Example:
        >>> import flambeau_nn as nn
        >>> opt = nn.optim.RMSprop(nn.Linear(2, 1).parameters(), lr=0.01, momentum=0.9)
        >>> opt.param_groups[0]["alpha"]
        0.99
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        *,
        maximize: bool = False,
    ) -> None:
        if not 0.0 <= lr:
            raise FlambeauError(f"[{type(self).__name__}] Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise FlambeauError(f"[{type(self).__name__}] Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise FlambeauError(f"[{type(self).__name__}] Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise FlambeauError(f"[{type(self).__name__}] Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise FlambeauError(f"[{type(self).__name__}] Invalid alpha value: {alpha}")
        defaults = dict(
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
            maximize=maximize,
        )
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; returns ``closure()`` if given."""
        loss = run_closure(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            square_avgs, grad_avgs, bufs = [], [], []
            for p in params:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = fc.zeros((), dtype=fc.float32)
                    state["square_avg"] = fc.zeros_like(p)
                    if group["momentum"] > 0:
                        state["momentum_buffer"] = fc.zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = fc.zeros_like(p)
                state["step"].add_(1)
                square_avgs.append(state["square_avg"])
                grad_avgs.append(state.get("grad_avg"))
                bufs.append(state.get("momentum_buffer"))
            with fa.no_grad():
                rmsprop(
                    params,
                    [p.grad for p in params],
                    square_avgs,
                    grad_avgs,
                    bufs,
                    lr=group["lr"],
                    alpha=group["alpha"],
                    eps=group["eps"],
                    weight_decay=group["weight_decay"],
                    momentum=group["momentum"],
                    centered=group["centered"],
                    maximize=group["maximize"],
                )
        return loss


def rmsprop(
    params: list[Tensor],
    grads: list[Tensor],
    square_avgs: list[Tensor],
    grad_avgs: list[Tensor | None],
    momentum_buffers: list[Tensor | None],
    *,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float,
    momentum: float,
    centered: bool,
    maximize: bool,
) -> None:
    """One RMSprop step over all ``params`` (Note [Optimizer step structure])."""
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        if weight_decay != 0:
            grad = grad + param * weight_decay
        square_avg = square_avgs[i]
        square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt()
        else:
            avg = square_avg.sqrt()
        avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffers[i]
            buf.mul_(momentum).add_(grad / avg)
            param.add_(buf, alpha=-lr)
        else:
            param.add_(grad / avg, alpha=-lr)


class Adagrad(Optimizer):
    r"""Adagrad (Duchi et al.), PyTorch's formulation::

        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p -= clr * g / (sqrt(s) + eps)

    State is created at construction (``step`` and ``sum`` filled with
    ``initial_accumulator_value``), as in PyTorch.

    Example:
        >>> import flambeau_nn as nn
        >>> model = nn.Linear(2, 1)
        >>> opt = nn.optim.Adagrad(model.parameters(), initial_accumulator_value=0.5)
        >>> opt.state[model.weight]["sum"].tolist()
        [[0.5, 0.5]]
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        *,
        maximize: bool = False,
    ) -> None:
        if not 0.0 <= lr:
            raise FlambeauError(f"[{type(self).__name__}] Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise FlambeauError(f"[{type(self).__name__}] Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise FlambeauError(f"[{type(self).__name__}] Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise FlambeauError(
                f"[{type(self).__name__}] Invalid initial_accumulator_value value: {initial_accumulator_value}"
            )
        if not 0.0 <= eps:
            raise FlambeauError(f"[{type(self).__name__}] Invalid epsilon value: {eps}")
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            maximize=maximize,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = fc.zeros((), dtype=fc.float32)
                state["sum"] = fc.full(tuple(p.shape), float(group["initial_accumulator_value"]), dtype=p.dtype)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; returns ``closure()`` if given."""
        loss = run_closure(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            states = [self.state[p] for p in params]
            with fa.no_grad():
                adagrad(
                    params,
                    [p.grad for p in params],
                    [s["sum"] for s in states],
                    [s["step"] for s in states],
                    lr=group["lr"],
                    lr_decay=group["lr_decay"],
                    weight_decay=group["weight_decay"],
                    eps=group["eps"],
                    maximize=group["maximize"],
                )
        return loss


def adagrad(
    params: list[Tensor],
    grads: list[Tensor],
    state_sums: list[Tensor],
    state_steps: list[Tensor],
    *,
    lr: float,
    lr_decay: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
) -> None:
    """One Adagrad step over all ``params`` (Note [Optimizer step structure])."""
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        step_t = state_steps[i]
        step_t.add_(1)
        if weight_decay != 0:
            grad = grad + param * weight_decay
        clr = lr / (1 + (step_t.item() - 1) * lr_decay)
        state_sums[i].add_(grad * grad)
        std = state_sums[i].sqrt().add_(eps)
        param.add_(grad / std, alpha=-clr)
