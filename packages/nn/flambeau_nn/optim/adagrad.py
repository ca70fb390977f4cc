"""Adagrad with PyTorch's update rule, one fused core op per param group."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core._C import _fused_adagrad_

from flambeau_nn.optim._unfused import adagrad_one, step_unfused
from flambeau_nn.optim.optimizer import Optimizer, check_fused_options, check_lr, run_closure

__all__ = ["Adagrad", "adagrad"]


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
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_lr(self, lr)  # a float, or a 1-element tensor as in PyTorch
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
        check_fused_options(self, differentiable=differentiable)
        defaults = dict(
            lr=lr,
            lr_decay=lr_decay,
            eps=eps,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = fc.zeros((), dtype=fc.float32)
                state["sum"] = fc.full(tuple(p.shape), float(group["initial_accumulator_value"]), dtype=p.dtype)

    def _build(self, group: dict[str, Any], params: list[Tensor]) -> tuple[list, list]:
        sums, steps = [], []
        for p in params:
            state = self.state[p]
            if "sum" not in state:  # a param added after construction (add_param_group)
                state["step"] = fc.zeros((), dtype=fc.float32)
                state["sum"] = fc.full(tuple(p.shape), float(group["initial_accumulator_value"]), dtype=p.dtype)
            sums.append(state["sum"])
            steps.append(state["step"])
        return sums, steps

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; returns ``closure()`` if given.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.Adagrad([p], lr=0.1)
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
            params, grads, (sums, steps) = gathered
            with fa.no_grad():
                adagrad(
                    params,
                    grads,
                    sums,
                    steps,
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
    """One Adagrad step over all ``params`` in one fused call (Note [Optimizer step structure])."""

    def one(i: int) -> None:  # Note [Unfused optimizer steps]
        adagrad_one(
            params[i],
            grads[i],
            state_sums[i],
            state_steps[i],
            lr=float(lr),
            lr_decay=float(lr_decay),
            weight_decay=float(weight_decay),
            eps=float(eps),
            maximize=bool(maximize),
        )

    fused = step_unfused(one, params, grads, [state_sums], state_steps)
    if fused is None:
        return
    params, grads, (state_sums,), state_steps = fused
    _fused_adagrad_(
        params,
        grads,
        state_sums,
        state_steps,
        lr=float(lr),
        lr_decay=float(lr_decay),
        weight_decay=float(weight_decay),
        eps=float(eps),
        maximize=bool(maximize),
    )
