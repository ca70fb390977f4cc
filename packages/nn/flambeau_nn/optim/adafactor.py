"""Adafactor (Shazeer & Stern, 2018) with PyTorch's formulation: factored second moments for matrices."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.optim.optimizer import ComposedOptimizer, check_lr, grad_of, scalar

__all__ = ["Adafactor", "adafactor"]


class Adafactor(ComposedOptimizer):
    r"""Adafactor, PyTorch's formulation (``torch.optim.Adafactor``).

    For a parameter with two or more dimensions the second moment is kept
    factored: a row mean ``row_var`` (last dim reduced) and a column mean
    ``col_var`` (second-to-last dim reduced), so the state is O(rows + cols).
    At step ``t``, with ``beta2_t = 1 - t ** beta2_decay``::

        rho = min(lr, 1 / sqrt(t));   alpha = max(eps2, RMS(p)) * rho
        p = p * (1 - lr * weight_decay)
        R = lerp(R, mean(g * g, -1), 1 - beta2_t);  C = lerp(C, mean(g * g, -2), 1 - beta2_t)
        V = R C / max(mean(R, -2), eps1)               (vectors: V = lerp(V, g * g, 1 - beta2_t))
        U = g / max(sqrt(V), eps1);   p = p - alpha * U / max(1, RMS(U) / d)

    ``eps=(eps1, eps2)``; ``eps1=None`` means the machine epsilon of the
    parameters' dtype. State per parameter: ``step`` (0-d float32) and
    ``row_var``/``col_var`` or ``variance``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> model = nn.Linear(4, 3)
        >>> opt = nn.optim.Adafactor(model.parameters())
        >>> model(fc.ones(2, 4)).sum().backward()
        >>> opt.step()
        >>> tuple(opt.state[model.weight]["row_var"].shape), tuple(opt.state[model.weight]["col_var"].shape)
        ((3, 1), (1, 4))
    """

    state_names = ("row_var", "col_var", "variance", "step")

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        check_lr(self, lr)
        if not 0.0 >= beta2_decay:
            raise FlambeauError(f"[Adafactor] beta2_decay should be <= 0 but is: {beta2_decay}")
        if not isinstance(eps, (tuple, list)) or len(eps) != 2:
            raise FlambeauError(f"[Adafactor] eps must be a pair (eps1 or None, eps2), got {eps!r}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise FlambeauError(f"[Adafactor] epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise FlambeauError(f"[Adafactor] epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise FlambeauError(f"[Adafactor] Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise FlambeauError(f"[Adafactor] weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(
            lr=lr,
            beta2_decay=beta2_decay,
            eps=tuple(eps),
            d=d,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.is_complex():
                    raise FlambeauError("[Adafactor] Adafactor does not support complex parameters")

    def init_state(self, group: dict[str, Any], p: Tensor) -> dict[str, Any]:
        """The fresh state of parameter ``p`` in ``group``: ``step`` (a 0-d float32 zero), and for a matrix
        (``p.dim() > 1``) the factored ``row_var`` (``(..., R, 1)``) and ``col_var`` (``(..., 1, C)``), else the
        full ``variance`` (zeros like ``p``).

        Example:
            >>> import flambeau as fb
            >>> opt = fb.optim.Adafactor([fb.zeros(3, 4)])
            >>> state = opt.init_state(opt.param_groups[0], fb.zeros(3, 4))
            >>> sorted(state), tuple(state["row_var"].shape), tuple(state["col_var"].shape)
            (['col_var', 'row_var', 'step'], (3, 1), (1, 4))
        """
        state: dict[str, Any] = {"step": fc.zeros((), dtype=fc.float32)}
        if p.dim() > 1:
            shape = tuple(p.shape)
            state["row_var"] = fc.zeros((*shape[:-1], 1), dtype=p.dtype)
            state["col_var"] = fc.zeros((*shape[:-2], 1, shape[-1]), dtype=p.dtype)
        else:
            state["variance"] = fc.zeros_like(p)
        return state

    def update(self, group, params, grads, row_vars, col_vars, variances, steps) -> None:
        """One Adafactor step over ``params`` (the group's parameters that have a gradient), in place.

        ``step()`` calls it under ``no_grad`` with the per-parameter state lists, one per entry of
        ``state_names`` (``None`` for an entry the parameter does not keep); call ``step()`` rather than this.

        Example:
            >>> import flambeau as fb
            >>> p = fb.tensor([1.0, 2.0])
            >>> opt = fb.optim.Adafactor([p], lr=0.1)
            >>> group = opt.param_groups[0]
            >>> state = opt.init_state(group, p)
            >>> with fb.no_grad():
            ...     opt.update(group, [p], [fb.tensor([0.5, -0.5])], *[[state.get(n)] for n in opt.state_names])
            >>> p
            tensor([0.8419, 2.1581])
        """
        eps1, eps2 = group["eps"]
        adafactor(
            params,
            grads,
            row_vars,
            col_vars,
            variances,
            steps,
            d=group["d"],
            lr=scalar(group["lr"]),
            beta2_decay=group["beta2_decay"],
            weight_decay=group["weight_decay"],
            eps1=eps1,
            eps2=eps2,
            maximize=group["maximize"],
        )


def adafactor(
    params: list[Tensor],
    grads: list[Tensor],
    row_vars: list[Tensor | None],
    col_vars: list[Tensor | None],
    variances: list[Tensor | None],
    state_steps: list[Tensor],
    *,
    d: float,
    lr: float,
    beta2_decay: float,
    weight_decay: float,
    eps1: float | None,
    eps2: float,
    maximize: bool,
) -> None:
    """One Adafactor step over ``params``, updating the state in place (call under ``no_grad``)."""
    for p, g, row_var, col_var, variance, step_t in zip(
        params, grads, row_vars, col_vars, variances, state_steps, strict=True
    ):
        g = grad_of(p, g, maximize=maximize)
        if eps1 is None:  # PyTorch takes it from the first parameter's dtype, for the whole group
            eps1 = fc.finfo(p.dtype).eps
        step_t.add_(1)
        step = step_t.item()
        one_minus_beta2 = step**beta2_decay
        rho = min(lr, 1 / step**0.5)
        alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho
        if weight_decay != 0:
            p.mul_(1 - lr * weight_decay)
        if g.dim() > 1:
            row_var.lerp_(g.norm(2, dim=-1, keepdim=True).square_().div_(g.shape[-1]), one_minus_beta2)
            col_var.lerp_(g.norm(2, dim=-2, keepdim=True).square_().div_(g.shape[-2]), one_minus_beta2)
            var_estimate = (row_var @ col_var).div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            variance.lerp_(g * g, one_minus_beta2)
            var_estimate = variance.clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(g)
        denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * d))
        p.add_(update, alpha=-alpha / denom)
