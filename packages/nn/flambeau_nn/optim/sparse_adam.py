"""SparseAdam: Adam that updates only the entries where the gradient is non-zero (PyTorch's masked rule)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.optim.optimizer import Optimizer, check_betas, check_lr, check_value, run_closure, scalar

__all__ = ["SparseAdam", "sparse_adam"]


class SparseAdam(Optimizer):
    r"""Lazy Adam for semantically sparse gradients (e.g. the rows of an embedding that a batch touched).

    PyTorch's SparseAdam takes gradients of sparse layout and updates the
    moments and the parameter only at their stored entries. A flambeau
    parameter's ``.grad`` is always dense (sparse COO tensors exist, sparse
    gradients do not): its non-zero entries are the ones updated, which is the
    rule PyTorch's documentation states (the mask of the non-zero gradient
    values). At those entries, with ``t`` the number of steps this parameter
    took::

        m = m + (1 - beta1) * (g - m);   v = v + (1 - beta2) * (g * g - v)
        p = p - lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m / (sqrt(v) + eps)

    Other entries of ``p``, ``m`` and ``v`` are left as they are. State per
    parameter: ``step`` (a Python int, as in PyTorch), ``exp_avg``, ``exp_avg_sq``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> p = nn.Parameter(fc.tensor([1.0, 1.0, 1.0]))
        >>> opt = nn.optim.SparseAdam([p], lr=0.5)
        >>> p.grad = fc.tensor([0.0, 2.0, 0.0])
        >>> opt.step()
        >>> [round(v, 4) for v in p.tolist()]
        [1.0, 0.5, 1.0]
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        check_lr(self, lr)
        check_value(self, 0.0 < scalar(lr), "learning rate", lr)
        check_value(self, 0.0 < eps, "epsilon value", eps)
        betas = check_betas(self, betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        complex_params = [
            [gi, pi]
            for gi, group in enumerate(self.param_groups)
            for pi, p in enumerate(group["params"])
            if p.is_complex()
        ]
        if complex_params:
            raise FlambeauError(
                f"[SparseAdam] Complex params at indices {complex_params}: "
                "SparseAdam does not support complex parameters"
            )

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates the entries of every parameter where its gradient is non-zero; returns ``closure()`` if given.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.SparseAdam([p], lr=0.1)
            >>> p.grad = fb.tensor([0.5, -0.5])
            >>> opt.step()
            >>> p.detach()
            tensor([0.9000, 2.1000])
        """
        loss = run_closure(closure)
        for group in self.param_groups:
            params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = fc.zeros_like(p)
                    state["exp_avg_sq"] = fc.zeros_like(p)
                state["step"] += 1
                params.append(p)
                grads.append(p.grad)
                exp_avgs.append(state["exp_avg"])
                exp_avg_sqs.append(state["exp_avg_sq"])
                steps.append(state["step"])
            beta1, beta2 = group["betas"]
            with fa.no_grad():
                sparse_adam(
                    params,
                    grads,
                    exp_avgs,
                    exp_avg_sqs,
                    steps,
                    eps=group["eps"],
                    beta1=beta1,
                    beta2=beta2,
                    lr=scalar(group["lr"]),
                    maximize=group.get("maximize", False),
                )
        return loss


def sparse_adam(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    state_steps: list[int],
    *,
    eps: float,
    beta1: float,
    beta2: float,
    lr: float,
    maximize: bool,
) -> None:
    """One SparseAdam step: updates ``params`` and the moments where the gradient is non-zero."""
    for p, g, exp_avg, exp_avg_sq, step in zip(params, grads, exp_avgs, exp_avg_sqs, state_steps, strict=True):
        if maximize:
            g = g.neg()
        touched = g.ne(0)
        exp_avg.add_(fc.where(touched, g.sub(exp_avg).mul_(1 - beta1), 0.0))
        exp_avg_sq.add_(fc.where(touched, g.mul(g).sub_(exp_avg_sq).mul_(1 - beta2), 0.0))
        step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
        denom = exp_avg_sq.sqrt().add_(eps)
        p.add_(fc.where(touched, exp_avg.div(denom).mul_(-step_size), 0.0))
