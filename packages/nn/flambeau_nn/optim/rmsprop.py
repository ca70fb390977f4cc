"""RMSprop with PyTorch's update rule, one fused core op per param group."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core._C import _fused_rmsprop_

from flambeau_nn.optim._unfused import rmsprop_one, step_unfused
from flambeau_nn.optim.optimizer import Optimizer, check_fused_options, check_lr, run_closure

__all__ = ["RMSprop", "rmsprop"]


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
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_lr(self, lr)  # a float, or a 1-element tensor as in PyTorch
        if not 0.0 <= eps:
            raise FlambeauError(f"[{type(self).__name__}] Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise FlambeauError(f"[{type(self).__name__}] Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise FlambeauError(f"[{type(self).__name__}] Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise FlambeauError(f"[{type(self).__name__}] Invalid alpha value: {alpha}")
        check_fused_options(self, differentiable=differentiable, capturable=capturable)
        defaults = dict(
            lr=lr,
            momentum=momentum,
            alpha=alpha,
            eps=eps,
            centered=centered,
            weight_decay=weight_decay,
            capturable=capturable,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def _build(self, group: dict[str, Any], params: list[Tensor]) -> tuple[list, list, list, list]:
        square_avgs, grad_avgs, bufs, steps = [], [], [], []
        momentum, centered = group["momentum"], group["centered"]
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = fc.zeros((), dtype=fc.float32)
                state["square_avg"] = fc.zeros_like(p)
                if momentum > 0:
                    state["momentum_buffer"] = fc.zeros_like(p)
                if centered:
                    state["grad_avg"] = fc.zeros_like(p)
            if momentum > 0 and "momentum_buffer" not in state:
                state["momentum_buffer"] = fc.zeros_like(p)
            if centered and "grad_avg" not in state:
                state["grad_avg"] = fc.zeros_like(p)
            square_avgs.append(state["square_avg"])
            steps.append(state["step"])
            if centered:
                grad_avgs.append(state["grad_avg"])
            if momentum > 0:
                bufs.append(state["momentum_buffer"])
        return square_avgs, grad_avgs, bufs, steps

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; returns ``closure()`` if given.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.RMSprop([p], lr=0.01)
            >>> p.grad = fb.tensor([0.5, -0.5])
            >>> opt.step()
            >>> p.detach()
            tensor([0.9000, 2.1000])
        """
        loss = run_closure(closure)
        for gi, group in enumerate(self.param_groups):
            gathered = self._gather(gi, group, lambda ps, group=group: self._build(group, ps))
            if gathered is None:
                continue
            params, grads, (square_avgs, grad_avgs, bufs, steps) = gathered
            with fa.no_grad():
                rmsprop(
                    params,
                    grads,
                    square_avgs,
                    grad_avgs,
                    bufs,
                    steps,
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
    grad_avgs: list[Tensor],
    momentum_buffers: list[Tensor],
    state_steps: list[Tensor],
    *,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float,
    momentum: float,
    centered: bool,
    maximize: bool,
) -> None:
    """One RMSprop step over all ``params`` in one fused call (Note [Optimizer step structure])."""

    def one(i: int) -> None:  # Note [Unfused optimizer steps]
        rmsprop_one(
            params[i],
            grads[i],
            square_avgs[i],
            grad_avgs[i] if centered else None,
            momentum_buffers[i] if momentum > 0 else None,
            state_steps[i],
            lr=float(lr),
            alpha=float(alpha),
            eps=float(eps),
            weight_decay=float(weight_decay),
            momentum=float(momentum),
            maximize=bool(maximize),
        )

    states = [square_avgs, grad_avgs if centered else [], momentum_buffers if momentum > 0 else []]
    fused = step_unfused(one, params, grads, states, state_steps)
    if fused is None:
        return
    params, grads, (square_avgs, grad_avgs, momentum_buffers), state_steps = fused
    _fused_rmsprop_(
        params,
        grads,
        square_avgs,
        grad_avgs if centered else [],
        momentum_buffers if momentum > 0 else [],
        state_steps,
        lr=float(lr),
        alpha=float(alpha),
        eps=float(eps),
        weight_decay=float(weight_decay),
        momentum=float(momentum),
        centered=bool(centered),
        maximize=bool(maximize),
    )
