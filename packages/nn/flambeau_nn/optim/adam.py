"""Adam and AdamW with PyTorch's update rules (bias-corrected moments), one fused core op per param group."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core._C import _fused_adam_

from flambeau_nn.optim._unfused import adam_one, step_unfused
from flambeau_nn.optim.optimizer import Optimizer, check_adam_hyperparameters, check_fused_options, run_closure

_FOREACH_TENSOR = "{} as a Tensor is not supported for capturable=False and foreach=True"

__all__ = ["Adam", "AdamW", "adam"]


class Adam(Optimizer):
    r"""Adam (Kingma & Ba), PyTorch's formulation.

    For each parameter at step ``t``::

        g = -g if maximize
        g = g + weight_decay * p          (decoupled_weight_decay / AdamW: p *= 1 - lr * weight_decay)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)             (amsgrad; v_max replaces v below)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

    State per parameter: ``step`` (a 0-d float32 tensor), ``exp_avg``,
    ``exp_avg_sq`` (and ``max_exp_avg_sq`` with ``amsgrad``). Each param group
    is stepped by one fused core op (Note [Optimizer step structure]).

    ``lr`` and ``betas`` may be 1-element tensors, as in PyTorch (an LR scheduler then
    updates the lr tensor in place); as in PyTorch, not with ``foreach=True``, and
    the two betas are both floats or both tensors.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> model = nn.Linear(2, 1)
        >>> opt = nn.optim.Adam(model.parameters(), lr=1e-2)
        >>> model(fc.ones(4, 2)).sum().backward()
        >>> opt.step()
        >>> sorted(opt.state[model.weight])
        ['exp_avg', 'exp_avg_sq', 'step']
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise FlambeauError(f"[{type(self).__name__}] " + _FOREACH_TENSOR.format("lr"))
        betas = check_adam_hyperparameters(self, lr, betas, eps, weight_decay)
        if not (all(isinstance(b, float) for b in betas) or all(isinstance(b, Tensor) for b in betas)):
            raise FlambeauError(f"[{type(self).__name__}] betas must be either both floats or both Tensors")
        for i, b in enumerate(betas):
            if isinstance(b, Tensor) and foreach and not capturable:
                raise FlambeauError(f"[{type(self).__name__}] " + _FOREACH_TENSOR.format(f"betas[{i}]"))
            if isinstance(b, Tensor) and b.numel() != 1:
                raise FlambeauError(f"[{type(self).__name__}] Tensor betas[{i}] must be 1-element")
        check_fused_options(self, differentiable=differentiable, capturable=capturable)
        defaults = dict(
            lr=lr,
            betas=tuple(betas),
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )
        super().__init__(params, defaults)

    def _build(self, group: dict[str, Any], params: list[Tensor]) -> tuple[list, list, list, list]:
        exp_avgs, exp_avg_sqs, max_sqs, steps = [], [], [], []
        amsgrad = group["amsgrad"]
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = fc.zeros((), dtype=fc.float32)
                state["exp_avg"] = fc.zeros_like(p)
                state["exp_avg_sq"] = fc.zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = fc.zeros_like(p)
            elif amsgrad and "max_exp_avg_sq" not in state:
                state["max_exp_avg_sq"] = fc.zeros_like(p)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if amsgrad:
                max_sqs.append(state["max_exp_avg_sq"])
            steps.append(state["step"])
        return exp_avgs, exp_avg_sqs, max_sqs, steps

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Updates every parameter that has a gradient; returns ``closure()`` if given.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
            >>> opt = fb.optim.Adam([p], lr=0.1)
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
            params, grads, (exp_avgs, exp_avg_sqs, max_sqs, steps) = gathered
            if group["foreach"] and isinstance(group["lr"], Tensor):  # set after construction, as PyTorch checks
                raise FlambeauError(f"[{type(self).__name__}.step] " + _FOREACH_TENSOR.format("lr"))
            beta1, beta2 = group["betas"]
            with fa.no_grad():
                adam(
                    params,
                    grads,
                    exp_avgs,
                    exp_avg_sqs,
                    max_sqs,
                    steps,
                    amsgrad=group["amsgrad"],
                    beta1=beta1,
                    beta2=beta2,
                    lr=group["lr"],
                    weight_decay=group["weight_decay"],
                    eps=group["eps"],
                    maximize=group["maximize"],
                    decoupled_weight_decay=group.get("decoupled_weight_decay", False),
                )
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay`` each step.

    Example:
        >>> import flambeau as fb
        >>> p = fb.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = fb.optim.AdamW([p], lr=0.1, weight_decay=0.1)
        >>> p.grad = fb.tensor([0.5, -0.5])
        >>> opt.step()
        >>> p.detach()
        tensor([0.8900, 2.0800])
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )


def adam(
    params: list[Tensor],
    grads: list[Tensor],
    exp_avgs: list[Tensor],
    exp_avg_sqs: list[Tensor],
    max_exp_avg_sqs: list[Tensor],
    state_steps: list[Tensor],
    *,
    amsgrad: bool,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
    decoupled_weight_decay: bool = False,
) -> None:
    """One Adam step over all ``params`` in one fused call; updates the state (and the steps) in place."""

    def one(i: int) -> None:  # Note [Unfused optimizer steps]
        adam_one(
            params[i],
            grads[i],
            exp_avgs[i],
            exp_avg_sqs[i],
            max_exp_avg_sqs[i] if amsgrad else None,
            state_steps[i],
            beta1=float(beta1),
            beta2=float(beta2),
            lr=float(lr),
            weight_decay=float(weight_decay),
            eps=float(eps),
            maximize=bool(maximize),
            decoupled_weight_decay=bool(decoupled_weight_decay),
        )

    fused = step_unfused(one, params, grads, [exp_avgs, exp_avg_sqs, max_exp_avg_sqs if amsgrad else []], state_steps)
    if fused is None:
        return
    params, grads, (exp_avgs, exp_avg_sqs, max_exp_avg_sqs), state_steps = fused
    _fused_adam_(
        params,
        grads,
        exp_avgs,
        exp_avg_sqs,
        max_exp_avg_sqs if amsgrad else [],
        state_steps,
        lr=float(lr),
        beta1=float(beta1),
        beta2=float(beta2),
        weight_decay=float(weight_decay),
        eps=float(eps),
        amsgrad=bool(amsgrad),
        maximize=bool(maximize),
        decoupled_weight_decay=bool(decoupled_weight_decay),
    )
