"""The optimizers' steps for the tensors their fused core ops do not take.

Note [Unfused optimizer steps]: SGD, Adam/AdamW, RMSprop and Adagrad step a param group with one fused core
op (Note [Optimizer step structure]), which takes float32 and float64 parameters whose gradients and state
have the parameter's dtype. A model cast to bfloat16 or float16, or a leaf whose ``grad_dtype`` differs from
its dtype, has other tensors: those are stepped here, one tensor at a time, by PyTorch's single-tensor
algorithm (its CPU default), op for op, so every intermediate rounds to the tensors' dtype as PyTorch's do.
The rest of the group still goes through the fused op.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn as nn
    >>> p = fc.tensor([1.0, 2.0], dtype=fc.bfloat16, requires_grad=True)
    >>> opt = nn.optim.SGD([p], lr=0.1, momentum=0.9)
    >>> p.grad = fc.tensor([0.5, -0.5], dtype=fc.bfloat16)
    >>> opt.step()
    >>> p.detach().float().tolist()
    [0.94921875, 2.046875]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flambeau_core as fc
from flambeau_core import Tensor

_FUSED_DTYPES = (fc.float32, fc.float64)


def unfused(params: Sequence[Tensor], grads: Sequence[Tensor], *states: Sequence[Tensor | None]) -> list[int]:
    """Indices of the parameters the fused op cannot step: a dtype other than float32/float64, or a gradient or
    state tensor of another dtype than the parameter's (an empty state list is a state the step does not use)."""
    out = []
    for i, p in enumerate(params):
        if (
            p.dtype not in _FUSED_DTYPES
            or grads[i].dtype != p.dtype
            or any(s and s[i] is not None and s[i].dtype != p.dtype for s in states)
        ):
            out.append(i)
    return out


def pick(items: list[Any], indices: Sequence[int]) -> list[Any]:
    """``items`` at ``indices``; an empty list (a state the step does not use) stays empty."""
    return [items[i] for i in indices] if items else items


def others(n: int, indices: Sequence[int]) -> list[int]:
    """The indices below ``n`` not in ``indices``."""
    skip = set(indices)
    return [i for i in range(n) if i not in skip]


def step_unfused(
    step_one: Callable[[int], None],
    params: list[Tensor],
    grads: list[Tensor],
    states: list[list[Tensor]],
    steps: list[Tensor],
) -> tuple[list[Tensor], list[Tensor], list[list[Tensor]], list[Tensor]] | None:
    """Steps the parameters the fused op cannot take, ``step_one(i)`` each; returns what the fused op still has
    to step, ``(params, grads, states, steps)`` at the other indices, or None when nothing is left. ``states``:
    the step's state lists, one tensor per parameter, or empty where the step does not use that state."""
    rest = unfused(params, grads, *states)
    if not rest:
        return params, grads, states, steps
    for i in rest:
        step_one(i)
    keep = others(len(params), rest)
    if not keep:
        return None
    return pick(params, keep), pick(grads, keep), [pick(s, keep) for s in states], pick(steps, keep)


def sgd_one(
    p: Tensor,
    grad: Tensor,
    buf: Tensor | None,
    *,
    lr: float,
    momentum: float,
    dampening: float,
    weight_decay: float,
    nesterov: bool,
    maximize: bool,
) -> Tensor | None:
    """One parameter's SGD step; returns its momentum buffer (made from the gradient on the first step)."""
    if maximize:
        grad = fc.neg(grad)
    if weight_decay != 0:
        grad = fc.add(grad, p, alpha=weight_decay)
    if momentum != 0:
        if buf is None:
            buf = fc.clone(grad)
        else:
            buf.mul_(momentum).add_(grad, alpha=1 - dampening)
        grad = fc.add(grad, buf, alpha=momentum) if nesterov else buf
    p.add_(grad, alpha=-lr)
    return buf


def adam_one(
    p: Tensor,
    grad: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    max_exp_avg_sq: Tensor | None,
    step_t: Tensor,
    *,
    beta1: float,
    beta2: float,
    lr: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
    decoupled_weight_decay: bool,
) -> None:
    """One parameter's Adam (AdamW with ``decoupled_weight_decay``) step; the state changes in place."""
    if maximize:
        grad = fc.neg(grad)
    step_t.add_(1)
    if weight_decay != 0:
        if decoupled_weight_decay:
            p.mul_(1 - lr * weight_decay)
        else:
            grad = fc.add(grad, p, alpha=weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    step = float(step_t)
    step_size = lr / (1 - beta1**step)
    bias_correction2_sqrt = (1 - beta2**step) ** 0.5
    if max_exp_avg_sq is not None:
        fc.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        denom = fc.div(fc.sqrt(max_exp_avg_sq), bias_correction2_sqrt).add_(eps)
    else:
        denom = fc.div(fc.sqrt(exp_avg_sq), bias_correction2_sqrt).add_(eps)
    p.addcdiv_(exp_avg, denom, value=-step_size)


def rmsprop_one(
    p: Tensor,
    grad: Tensor,
    square_avg: Tensor,
    grad_avg: Tensor | None,
    buf: Tensor | None,
    step_t: Tensor,
    *,
    lr: float,
    alpha: float,
    eps: float,
    weight_decay: float,
    momentum: float,
    maximize: bool,
) -> None:
    """One parameter's RMSprop step (centered when ``grad_avg`` is given); the state changes in place."""
    if maximize:
        grad = fc.neg(grad)
    step_t.add_(1)
    if weight_decay != 0:
        grad = fc.add(grad, p, alpha=weight_decay)
    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    if grad_avg is not None:
        grad_avg.lerp_(grad, 1 - alpha)
        avg = fc.addcmul(square_avg, grad_avg, grad_avg, value=-1).sqrt_()
    else:
        avg = fc.sqrt(square_avg)
    avg = avg.add_(eps)
    if buf is not None:
        buf.mul_(momentum).addcdiv_(grad, avg)
        p.add_(buf, alpha=-lr)
    else:
        p.addcdiv_(grad, avg, value=-lr)


def adagrad_one(
    p: Tensor,
    grad: Tensor,
    state_sum: Tensor,
    step_t: Tensor,
    *,
    lr: float,
    lr_decay: float,
    weight_decay: float,
    eps: float,
    maximize: bool,
) -> None:
    """One parameter's Adagrad step; the state changes in place."""
    step_t.add_(1)
    step = float(step_t)
    if maximize:
        grad = fc.neg(grad)
    if weight_decay != 0:
        grad = fc.add(grad, p, alpha=weight_decay)
    clr = lr / (1 + (step - 1) * lr_decay)
    state_sum.addcmul_(grad, grad, value=1)
    std = fc.sqrt(state_sum).add_(eps)
    p.addcdiv_(grad, std, value=-clr)
